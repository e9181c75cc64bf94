//! Every line of the real trace captures decodes; the expected counts come from plain
//! whitespace splitting here, independent of the decoder.

use std::collections::BTreeMap;

use glockparse::GlockId;
use traceparse::{decode_line, Decoded, Gfs2Event};

fn text(rel: &str) -> String {
    testdata::text(rel)
}

/// Event name per line, found as the first word that starts with `gfs2_` and ends with `:`.
fn independent_counts(t: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in t.lines() {
        let name = l
            .split_whitespace()
            .find(|w| w.starts_with("gfs2_") && w.ends_with(':') && !w.contains('-'))
            .expect("every line is a gfs2 event");
        *m.entry(
            name.trim_end_matches(':')
                .trim_start_matches("gfs2_")
                .to_string(),
        )
        .or_default() += 1;
    }
    m
}

#[test]
fn real_traces_decode_completely() {
    for (rel, lines) in [
        ("real/nolock-6.1/trace_pipe.txt.xz", 345_384),
        ("real/dlm2-6.1/n1/trace_pipe.txt.xz", 0),
        ("real/dlm2-6.1/n2/trace_pipe.txt.xz", 0),
    ] {
        let t = text(rel);
        if lines > 0 {
            assert_eq!(t.lines().count(), lines);
        }
        let want = independent_counts(&t);
        let mut got: BTreeMap<String, usize> = BTreeMap::new();
        let mut last_ts = 0;
        for l in t.lines() {
            match decode_line(l.as_bytes()).unwrap_or_else(|e| panic!("{rel}: {e:?}: {l}")) {
                Decoded::Gfs2 { line, event, dev } => {
                    assert_eq!((dev.major, dev.minor), (254, 0));
                    assert!(line.ts_ns >= last_ts || line.cpu.is_some());
                    last_ts = line.ts_ns;
                    *got.entry(event.name().to_string()).or_default() += 1;
                }
                other => panic!("{rel}: not decoded: {other:?}: {l}"),
            }
        }
        assert_eq!(got, want, "{rel}");
    }
}

#[test]
fn remote_demotes_and_lock_times_match_the_text() {
    let t = text("real/dlm2-6.1/n1/trace_pipe.txt.xz");
    let remote_text = t
        .lines()
        .filter(|l| l.contains("gfs2_demote_rq:") && l.ends_with(" remote"))
        .count();
    let mut remote = 0;
    let mut tdiff_sum_text: i64 = 0;
    let mut tdiff_sum: i64 = 0;
    for l in t.lines() {
        if l.contains("gfs2_glock_lock_time:") {
            let v = l
                .split(" tdiff:")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            tdiff_sum_text += v.parse::<i64>().unwrap();
        }
        if let Ok(Decoded::Gfs2 { event, .. }) = decode_line(l.as_bytes()) {
            match event {
                Gfs2Event::DemoteRq {
                    remote: Some(true), ..
                } => remote += 1,
                Gfs2Event::GlockLockTime(lt) => tdiff_sum += lt.tdiff,
                _ => {}
            }
        }
    }
    assert!(remote_text > 100);
    assert_eq!(remote, remote_text);
    assert_eq!(tdiff_sum, tdiff_sum_text);
}

#[test]
fn decimal_trace_ids_are_the_glocks_file_ids() {
    // The flock n1 holds in phase 2 is 6/60af5 in glocks and 6:396021 in traces.
    let t = text("real/dlm2-6.1/n1/trace_pipe.txt.xz");
    let flock = GlockId::new(6, 0x60af5);
    let seen = t.lines().any(|l| {
        matches!(decode_line(l.as_bytes()), Ok(Decoded::Gfs2 { event, .. }) if event.glock() == Some(flock))
    });
    assert!(seen);
    assert_eq!("6:396021".parse::<GlockId>().unwrap(), flock);
}

/// Every dlm line of the captures with dlm events (6.12 with `dst`, 6.1 without, where the
/// message events print `seq=`) decodes; the counts per event and the resources that are
/// glocks are checked against plain text splitting.
#[test]
fn real_dlm_events_decode_completely() {
    for rel in [
        "real/dlmev612/n1/trace_pipe.txt.xz",
        "real/dlmev612/n2/trace_pipe.txt.xz",
        "real/handoff-6.1/n1/trace_pipe.txt.xz",
        "real/handoff-6.1/n2/trace_pipe.txt.xz",
        "real/handoff-6.12/n1/trace_pipe.txt.xz",
    ] {
        let t = text(rel);
        let mut want: BTreeMap<String, usize> = BTreeMap::new();
        let mut got: BTreeMap<String, usize> = BTreeMap::new();
        let (mut glocks_want, mut glocks_got) = (0, 0);
        for l in t.lines() {
            let Some(name) = l
                .split_whitespace()
                .find(|w| w.starts_with("dlm_") && w.ends_with(':'))
            else {
                continue;
            };
            *want.entry(name.trim_end_matches(':').into()).or_default() += 1;
            // A glock resource: 24 name bytes, the type right-aligned in the first 8.
            let res = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix("res_name="))
                .map(|r| r.trim_start_matches("0x"));
            if res.is_some_and(|r| r.len() == 48 && r.starts_with("20202020202020")) {
                glocks_want += 1;
            }
            match decode_line(l.as_bytes()) {
                Ok(Decoded::Dlm { event, .. }) => {
                    *got.entry(format!("dlm_{}", event.name())).or_default() += 1;
                    if res.is_some() && event.glock().is_some() {
                        glocks_got += 1;
                    }
                }
                other => panic!("{rel}: {l:?} decoded as {other:?}"),
            }
        }
        assert!(want.values().sum::<usize>() > 4_000, "{rel}");
        assert_eq!(got, want, "{rel}");
        assert_eq!(glocks_got, glocks_want, "{rel}");
        assert!(want.contains_key("dlm_send_message") && want.contains_key("dlm_bast"));
    }
}
