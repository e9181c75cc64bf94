//! Checking the running kernel's gfs2 tracepoint formats (`events/gfs2/*/format`)
//! against the variants the decoder knows (docs/kernel-formats.md §4).

/// The `print fmt:` string of a format file, between the first pair of quotes.
pub fn print_fmt(format_file: &str) -> Option<&str> {
    let line = format_file
        .lines()
        .find(|l| l.starts_with("print fmt: \""))?;
    let rest = &line["print fmt: \"".len()..];
    let end = rest.find("\", ")?;
    Some(&rest[..end])
}

/// Every TP_printk string of every kernel version the decoder handles, per event.
pub fn known_formats(event: &str) -> &'static [&'static str] {
    match event {
        "glock_state_change" => &["%u,%u glock %d:%lld state %s to %s tgt:%s dmt:%s flags:%s"],
        "glock_put" => &["%u,%u glock %d:%lld state %s => %s flags:%s"],
        "demote_rq" => &[
            "%u,%u glock %d:%lld demote %s to %s flags:%s %s",
            "%u,%u glock %d:%lld demote %s to %s flags:%s",
        ],
        "promote" => &["%u,%u glock %u:%llu promote %s", "%u,%u glock %u:%llu promote %s %s"],
        "glock_queue" => &["%u,%u glock %u:%llu %squeue %s"],
        "glock_lock_time" => &["%u,%u glock %d:%lld status:%d flags:%02x tdiff:%lld srtt:%lld/%lld srttb:%lld/%lld sirt:%lld/%lld dcnt:%lld qcnt:%lld"],
        "pin" => &["%u,%u log %s %llu/%lu inode %llu"],
        "log_flush" => &["%u,%u log flush %s %llu %llx", "%u,%u log flush %s %llu"],
        "log_blocks" => &["%u,%u log reserve %d %d", "%u,%u log reserve %d"],
        "ail_flush" => &["%u,%u ail flush %s %s %ld"],
        "bmap" => &["%u,%u bmap %llu map %llu/%lu to %llu flags:%08lx %s %d"],
        "iomap_start" => &["%u,%u bmap %llu iomap start %llu/%lu flags:%08x"],
        "iomap_end" => &[
            "%u,%u bmap %llu iomap end %llu/%lu to %llu ty:%d flags:%08x rc:%d",
            "%u,%u bmap %llu iomap end %llu/%lu ty:%d flags:%08x rc:%d",
        ],
        "block_alloc" => &[
            "%u,%u bmap %llu alloc %llu/%lu %s rg:%llu rf:%u rq:%u rr:%u",
            "%u,%u bmap %llu alloc %llu/%lu %s rg:%llu rf:%u rr:%lu",
        ],
        "rs" => &[
            "%u,%u bmap %llu resrv %llu rg:%llu rf:%u rq:%u rr:%u %s q:%u r:%u",
            "%u,%u bmap %llu resrv %llu rg:%llu rf:%lu rr:%lu %s f:%lu",
        ],
        _ => &[],
    }
}

/// Whether the decoder knows this event's print format (events without `gfs2_`).
pub fn is_known(event: &str, fmt: &str) -> bool {
    known_formats(event).contains(&fmt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_format_files_are_known() {
        let files = testdata::files("real/dlm2-6.1/n1", |n| n.starts_with("format.gfs2_"));
        assert_eq!(files.len(), 15);
        for f in files {
            let name = f.file_name().unwrap().to_str().unwrap();
            let event = name.trim_start_matches("format.gfs2_");
            let text = std::fs::read_to_string(&f).unwrap();
            let fmt = print_fmt(&text).unwrap();
            assert!(is_known(event, fmt), "{event}: {fmt}");
        }
        assert!(!is_known("pin", "%u,%u something new"));
    }

    /// The words each event prints for its `%s` conversions, in order (the states, the
    /// `de` of `dequeue`, `remote`...); the remaining ones of a shorter format are unused.
    fn strings(event: &str, fmt: &str) -> &'static [&'static str] {
        match event {
            // Before 5.16: `promote %s %s`, first/other then the state.
            "promote" if fmt.matches("%s").count() == 2 => &["first", "EX"],
            "glock_state_change" => &["EX", "NL", "NL", "EX", "lIob"],
            "glock_put" => &["EX", "IV", "lIob"],
            "demote_rq" => &["EX", "NL", "dIob", "remote"],
            "promote" => &["EX"],
            "glock_queue" => &["de", "EX"],
            "pin" => &["unpin"],
            "log_flush" => &["start"],
            "ail_flush" => &["start", "all"],
            "bmap" => &["create"],
            "block_alloc" => &["dinode"],
            "rs" => &["ins "],
            _ => &[],
        }
    }

    /// A line of `event` printed with `fmt`: every number 123 (hex 1f), every string the
    /// next of [`strings`], behind a real ftrace prefix.
    fn line_of(event: &str, fmt: &str) -> String {
        let mut body = String::new();
        let mut words = strings(event, fmt).iter();
        let mut rest = fmt;
        while let Some(i) = rest.find('%') {
            body.push_str(&rest[..i]);
            let spec = &rest[i + 1..];
            let len = spec
                .find(|c: char| c.is_ascii_alphabetic() && c != 'l')
                .unwrap()
                + 1;
            body.push_str(match &spec[len - 1..len] {
                "s" => words.next().expect("a word for every %s"),
                "x" => "1f",
                _ => "123",
            });
            rest = &spec[len..];
        }
        body.push_str(rest);
        format!("           mkdir-243     [000] ...1.    59.642391: gfs2_{event}: {body}")
    }

    #[test]
    fn a_line_made_from_every_known_format_decodes_as_its_event() {
        let mut formats = 0;
        for event in crate::event::GFS2_EVENTS {
            for fmt in known_formats(event) {
                formats += 1;
                let line = line_of(event, fmt);
                match crate::decode_line(line.as_bytes()) {
                    Ok(crate::Decoded::Gfs2 { event: e, dev, .. }) => {
                        assert_eq!(e.name(), event, "{line}");
                        assert_eq!((dev.major, dev.minor), (123, 123), "{line}");
                        if let Some(g) = e.glock() {
                            assert_eq!((g.gltype, g.number), (123, 123), "{line}");
                        }
                    }
                    other => panic!("{fmt}\n{line}\n{other:?}"),
                }
            }
        }
        assert_eq!(formats, 22);
    }
}
