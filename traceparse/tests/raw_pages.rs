//! Raw ring-buffer pages of real gfs2 and dlm traces, held to the kernel's own text of the
//! same records: in the lab (`testdata/lab/trace-raw.sh`) one instance recorded the
//! events, its `trace` file was saved (the kernel's formatting, which leaves the buffer as
//! it is), then its pages were consumed from `per_cpu/cpuN/trace_pipe_raw`. Written by
//! `traceparse::raw`, the pages must give the kernel's lines, byte for byte: times,
//! irq-info columns, task names, and every body, the glock flags' letters included.

use std::collections::HashMap;
use std::path::Path;

use traceparse::raw::{self, EventFormat, Lines, PageLayout, PageTally, Release};

/// The events' table and the page layout saved in `dir`.
fn table(dir: &Path) -> (Lines, PageLayout) {
    let text = |name: &str| String::from_utf8(testdata::bytes(&dir.join(name))).unwrap();
    let header = text("header_page");
    let layout = PageLayout::from_header_page(&header).unwrap();
    let release = Release::parse(&text("osrelease")).unwrap();
    let mut lines = Lines::new(release, true, false);
    for f in testdata::files(
        dir.strip_prefix(testdata::root())
            .unwrap()
            .to_str()
            .unwrap(),
        |n| n.starts_with("format."),
    ) {
        let format = EventFormat::parse(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let system = match format.name.as_str() {
            "print" => "ftrace",
            n if n.starts_with("sys_enter_") || n.starts_with("sys_exit_") => "syscalls",
            n => n.split('_').next().unwrap(),
        };
        lines
            .add(system, &format, &traceparse::raw::gfs2_symbols)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    (lines, layout)
}

/// The pages' lines as traceparse writes them, and the kernel's.
fn both(dir: &Path) -> (Vec<String>, Vec<String>, PageTally) {
    let text = |name: &str| String::from_utf8(testdata::bytes(&dir.join(name))).unwrap();
    let (lines, layout) = table(dir);
    let page = layout.page_size;
    // `saved_cmdlines` as saved beside the pages.
    let mut comms: HashMap<i32, Vec<u8>> = raw::saved_cmdlines(text("saved_cmdlines").as_bytes())
        .map(|(pid, comm)| (pid, comm.to_vec()))
        .collect();
    let mut cpus: Vec<(u32, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let cpu = name.strip_prefix("cpu")?.split('.').next()?.parse().ok()?;
            Some((cpu, testdata::bytes(&e.path())))
        })
        .collect();
    cpus.sort_by_key(|(c, _)| *c);
    let pages: Vec<(u32, &[u8])> = cpus
        .iter()
        .flat_map(|(cpu, bytes)| bytes.chunks(page).map(move |p| (*cpu, p)))
        .collect();
    let mut out = Vec::new();
    let mut tally = PageTally::default();
    lines.write_pages(&pages, layout, &mut comms, &mut out, &mut tally);
    let ours = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let kernel = text("trace.txt.xz")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_string)
        .collect();
    (ours, kernel, tally)
}

/// Damaged pages (real ones with bytes changed) are read as far as they go: errors
/// counted, never a panic, and every line written is a whole line.
#[test]
fn damaged_pages_never_panic() {
    let dir = testdata::path("real/trace-raw-6.12/n1/pages");
    let pages = testdata::bytes(&dir.join("cpu0.raw.xz"));
    let (lines, layout) = table(&dir);
    let mut rng = testdata::Xorshift::new(0x9e37_79b9_7f4a_7c15);
    for page in pages.chunks(layout.page_size).take(40) {
        for _ in 0..50 {
            let mut p = page.to_vec();
            for _ in 0..rng.below(8) + 1 {
                let at = rng.below(p.len());
                p[at] = rng.next_u64() as u8;
            }
            let cut = rng.below(p.len() + 1);
            let mut out = Vec::new();
            let mut tally = PageTally::default();
            lines.write_pages(
                &[(0, &p[..cut])],
                layout,
                &mut HashMap::new(),
                &mut out,
                &mut tally,
            );
            assert!(out.is_empty() || out.ends_with(b"\n"));
        }
    }
}

/// The pages in `rel` give the kernel's lines, which hold at least `least` lines and
/// every one of `needles`.
fn check(rel: &str, least: usize, needles: &[&str]) {
    let dir = testdata::path(rel);
    let (ours, kernel, tally) = both(&dir);
    assert_eq!(tally.bad_pages, 0, "{rel}: {:?}", tally.first_bad);
    assert_eq!(tally.unknown_records, 0, "{rel}: ids {:?}", tally.unknown);
    assert!(kernel.len() >= least, "{rel}: {} lines", kernel.len());
    for needle in needles {
        assert!(
            kernel.iter().any(|l| l.contains(needle)),
            "{rel}: no {needle}"
        );
    }
    if let Some((i, (a, b))) = ours
        .iter()
        .zip(&kernel)
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!("{rel}: line {}:\nours   {a}\nkernel {b}", i + 1);
    }
    assert_eq!(ours.len(), kernel.len(), "{rel}");
}

/// What the gfs2 and dlm pages must hold.
const GFS2_DLM: &[&str] = &[
    "gfs2_glock_state_change",
    "gfs2_demote_rq",
    "dlm_lock_start",
    "flags:",
];

/// What the system call pages must hold: the kernel's own printing of both kinds.
const SYSCALLS: &[&str] = &[
    "sys_openat(dfd: ffffff9c",
    "sys_openat -> 0x",
    "sys_read(fd: ",
];

#[test]
fn pages_of_6_12_print_as_the_kernel_printed_them() {
    check("real/trace-raw-6.12/n1/pages", 1000, GFS2_DLM);
    check("real/trace-raw-6.12/n2/pages", 1000, GFS2_DLM);
    check("real/trace-raw-6.12/syscalls", 100, SYSCALLS);
}

/// What the gfs2 pages of a kernel without dlm tracepoints (before 5.16) must hold.
const GFS2: &[&str] = &["gfs2_glock_state_change", "gfs2_demote_rq", "flags:"];

#[test]
fn pages_of_5_10_print_as_the_kernel_printed_them() {
    check("real/trace-raw-5.10/n1/pages", 1000, GFS2);
    check("real/trace-raw-5.10/n2/pages", 1000, GFS2);
}

#[test]
fn pages_of_6_1_print_as_the_kernel_printed_them() {
    check("real/trace-raw-6.1/n1/pages", 1000, GFS2_DLM);
    check("real/trace-raw-6.1/n2/pages", 1000, GFS2_DLM);
    check("real/trace-raw-6.1/syscalls", 100, SYSCALLS);
}

/// A `glk trace` output: its events in order, name and body (the times, irq-info columns
/// and task names are each instance's own), with their times (ns); and the times of glk's
/// own start and end markers, which are left out of the events.
struct Traced {
    events: Vec<(u64, String, String)>,
    start: u64,
    end: u64,
}

impl Traced {
    fn read(path: &Path) -> Traced {
        let text = testdata::bytes(path);
        let (mut events, mut start, mut end) = (Vec::new(), None, None);
        for l in traceparse::reader::lines(&text) {
            let Ok(traceparse::Line::Event(t)) = traceparse::line::parse(l) else {
                continue;
            };
            let ts = t.ts_ns;
            let body = String::from_utf8_lossy(t.body).into_owned();
            match body.split_whitespace().take(2).collect::<Vec<_>>()[..] {
                ["glkmark", "start"] => start = Some(ts),
                ["glkmark", "end"] => end = Some(ts),
                ["glkmark", ..] => {}
                _ => events.push((ts, t.event_name().into_owned(), body)),
            }
        }
        Traced {
            events,
            start: start.unwrap(),
            end: end.unwrap(),
        }
    }

    /// The events (name and body) between `from` and `to`.
    fn between(&self, from: u64, to: u64) -> Vec<(&str, &str)> {
        self.events
            .iter()
            .filter(|(ts, _, _)| (from..=to).contains(ts))
            .map(|(_, e, b)| (e.as_str(), b.as_str()))
            .collect()
    }
}

/// On each node two `glk trace` ran at once on their own instances: `--reader raw` and
/// `--reader text`. While both ran (from the later start marker to the earlier end
/// marker) they kept the same events, in the same order, with the same bodies. The two
/// started a few milliseconds apart: outside that time, one may keep what the other
/// could not (5.10's n1: the text reader started 52 ms earlier and kept 16 more events).
#[test]
fn the_raw_and_text_readers_kept_the_same_events() {
    for node in [
        "6.12/n1", "6.12/n2", "6.1/n1", "6.1/n2", "5.10/n1", "5.10/n2",
    ] {
        let dir = testdata::path(&format!("real/trace-raw-{node}"));
        let raw = Traced::read(&dir.join("raw.txt.xz"));
        let text = Traced::read(&dir.join("text.txt.xz"));
        let (from, to) = (raw.start.max(text.start), raw.end.min(text.end));
        let both = raw.between(from, to);
        assert!(both.len() > 5000, "{node}: {} events", both.len());
        assert!(both
            .iter()
            .any(|(e, b)| *e == "gfs2_demote_rq" && b.contains("remote")));
        let other = text.between(from, to);
        if let Some((a, b)) = both.iter().zip(&other).find(|(a, b)| a != b) {
            panic!("{node}: raw {a:?}\ntext {b:?}");
        }
        assert_eq!(both.len(), other.len(), "{node}");
        // Outside that time, only the edges: at most 1% of the events.
        let edges = (raw.events.len() + text.events.len()) - 2 * both.len();
        assert!(
            edges * 100 <= both.len(),
            "{node}: {edges} events at the edges"
        );
    }
}
