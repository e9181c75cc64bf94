//! `line::parse` reads the usual layout at its places and every other line by the general
//! rules: it must give what `line::parse_general` gives for every line, on every line of
//! the real captures and on lines changed a byte at a time where the layout is decided.
//! The hand-written body decoder is held the same way to the `TP_printk` grammars.

use std::io::Read;

use traceparse::line::{parse, parse_general};

/// Every trace capture among the fixtures, decompressed.
fn captures() -> Vec<(String, Vec<u8>)> {
    let files = testdata::files("", |n| n.starts_with("trace_pipe"));
    assert!(files.len() >= 9, "{files:?}");
    files
        .into_iter()
        .map(|p| {
            let mut v = Vec::new();
            glockparse::input::open(&p)
                .unwrap()
                .read_to_end(&mut v)
                .unwrap();
            (p.display().to_string(), v)
        })
        .collect()
}

/// Lines of other layouts (older kernels' pid width and four flags, record-tgid,
/// noirq-info, nocontext-info, trace-cmd, counter clocks) and odd comms.
const VARIANTS: &[&str] = &[
    "              dd-4466  [002] ....  1234.567890: gfs2_promote: 253,3 glock 2:132069 promote first EX",
    "              dd-4466    (   4466) [002] .....  1234.567890: gfs2_log_blocks: 253,3 log reserve -5 8123",
    "              dd-4466    [002]  1234.567890: gfs2_pin: 253,3 log pin 524401/4096 inode 132069",
    "gfs2_pin: 253,3 log pin 524401/4096 inode 132069",
    "           mkdir-179   [001]    34.268977: gfs2_glock_queue:     254,0 glock 2:8498 queue PR",
    "          <idle>-0       [000] d.h1. 99: sched_waking: comm=x pid=1",
    "     my [odd]-na-77      [003] d..2.     5.000001: tracing_mark_write: hello [1] x",
    "    kworker/u4:1-25      [000] .....    40.694895: gfs2_log_flush: 254,0 log flush start 8192 100002",
    "  cpus=2-1               [000] .....    40.694895: print: x",
    "  CPU:1-1                [000] .....    40.694895: print: x",
    "               #-1       [000] .....    40.694895: print: x",
    "CPU:1 [LOST 5 EVENTS]",
    // System calls, which print no event name.
    "         python3-3964    [001] ..... 24366.080074: sys_openat(dfd: ffffff9c, filename: 7ffd)",
    "         python3-3964    [001] ..... 24366.080076: sys_getppid -> 0xf75",
    // A comm holding what reads as a task and a `[cpu]` field.
    "         a-1 [2]-77      [003] d..2.     5.000001: tracing_mark_write: x",
    // A pid filling its seven columns (a deleted space leaves none before `[`).
    "           mkdir-1234567 [001] ...1.    34.268977: gfs2_glock_queue: 254,0 glock 2:8498 queue PR",
    // noirq-info with a counter clock: the first token is the timestamp.
    "          <idle>-0       [000] 12: 34.000005: sched_waking: comm=x pid=1",
    "          <idle>-0       [000] 12:    34.000005: sched_waking: comm=x pid=1",
];

/// The bytes a changed line gets, at each place.
const BYTES: &[u8] = b" \t[]-:#cCv09x.()\n";

#[test]
fn every_capture_line_reads_as_the_general_reading_reads_it() {
    let mut lines = 0;
    for (name, text) in captures() {
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            assert_eq!(parse(line), parse_general(line), "{name}:{}", n + 1);
            lines += 1;
        }
    }
    assert!(lines > 600_000, "{lines}");
}

#[test]
fn lines_changed_a_byte_at_a_time_read_as_the_general_reading_reads_them() {
    let mut seeds: Vec<Vec<u8>> = VARIANTS.iter().map(|l| l.as_bytes().to_vec()).collect();
    for (_, text) in captures() {
        seeds.extend(
            text.split(|&b| b == b'\n')
                .step_by(997)
                .take(40)
                .map(<[u8]>::to_vec),
        );
    }
    let mut checked = 0;
    for seed in &seeds {
        for at in 0..seed.len().min(64) {
            let mut variants = vec![
                [&seed[..at], &seed[at + 1..]].concat(),
                [&seed[..at], b" ", &seed[at..]].concat(),
            ];
            for &b in BYTES {
                let mut v = seed.clone();
                v[at] = b;
                variants.push(v);
            }
            for v in variants {
                // A shorter line, too, for the reads that need bytes past a field.
                for end in [v.len(), v.len().min(at + 9)] {
                    let l = &v[..end];
                    assert_eq!(
                        parse(l),
                        parse_general(l),
                        "{:?}",
                        String::from_utf8_lossy(l)
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100_000, "{checked}");
}

/// Every gfs2 event body of every capture that the decoder reads is one its event's
/// `TP_printk` grammar reads (`grammar::printk` over the formats of every kernel the
/// decoder knows), with the same device and, for glock events, the same glock; and every
/// body such a grammar reads, the decoder reads.
#[test]
fn every_gfs2_body_reads_as_its_printk_grammar_reads_it() {
    use traceparse::grammar::{printk, Arg};
    let mut bodies = 0;
    for (name, text) in captures() {
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let Ok(traceparse::line::Line::Event(e)) = parse(line) else {
                continue;
            };
            let Some(event) = e.event.strip_prefix(b"gfs2_") else {
                continue;
            };
            let event = std::str::from_utf8(event).unwrap();
            let decoded = traceparse::event::decode(e.event, e.body);
            let read = traceparse::format::known_formats(event)
                .iter()
                .find_map(|f| printk(f, e.body));
            let at = format!("{name}:{}: {}", n + 1, String::from_utf8_lossy(line));
            assert_eq!(decoded.is_some(), read.is_some(), "{at}");
            let (Some((dev, ev)), Some(args)) = (decoded, read) else {
                continue;
            };
            let num = |i: usize| match args[i] {
                Arg::Unsigned(v) | Arg::Hex(v) => v as i64,
                Arg::Signed(v) => v,
                Arg::Text(_) => panic!("{at}: argument {i} is text"),
            };
            assert_eq!(
                (num(0), num(1)),
                (dev.major.into(), dev.minor.into()),
                "{at}"
            );
            if let Some(g) = ev.glock() {
                assert_eq!((num(2), num(3)), (g.gltype.into(), g.number as i64), "{at}");
            }
            bodies += 1;
        }
    }
    assert!(bodies > 300_000, "{bodies}");
}
