//! Targets for the binary trace formats: trace-cmd's `trace.dat`, raw ring-buffer pages
//! (`trace_pipe_raw`), and the event formats that say how to print their records.

use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

use traceparse::raw::{self, EventFormat, Lines, PageLayout, PageTally, Release};

/// The directory of real 6.12 pages with the formats and layout they were recorded with.
const PAGES: &str = "real/trace-raw-6.12/n1/pages";

/// A trace.dat: opened and read to its end, or an error; what is written is whole lines.
pub(crate) fn trace_dat(bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("trace.dat");
    std::fs::write(&path, bytes).expect("writing the input");
    let Ok(mut d) = raw::datfile::DatLines::open(&path) else {
        return;
    };
    let mut out = Vec::new();
    let _ = d.read_to_end(&mut out);
    assert!(out.is_empty() || out.ends_with(b"\n"), "a line cut short");
}

/// Pages of one CPU, printed with the real table: whole lines, never a panic.
pub(crate) fn raw_pages(bytes: &[u8]) {
    let real = real();
    let pages: Vec<(u32, &[u8])> = bytes
        .chunks(real.layout.page_size)
        .map(|p| (0, p))
        .collect();
    whole_lines(&real.lines, &pages);
}

/// An event format, parsed and, when glk can print it, used on real pages (whose records
/// of that event it then describes).
pub(crate) fn event_format(bytes: &[u8]) {
    let Ok(format) = EventFormat::parse(&String::from_utf8_lossy(bytes)) else {
        return;
    };
    let mut lines = Lines::new(Release(6, 12), true, false);
    let system = format.name.split('_').next().unwrap_or("").to_string();
    if lines.add(&system, &format, &raw::gfs2_symbols).is_err() {
        return;
    }
    let real = real();
    let pages: Vec<(u32, &[u8])> = real
        .pages
        .chunks(real.layout.page_size)
        .take(8)
        .map(|p| (0, p))
        .collect();
    whole_lines(&lines, &pages);
}

/// Writes `pages` with `lines` and checks that what is written is whole lines.
fn whole_lines(lines: &Lines, pages: &[(u32, &[u8])]) {
    let real = real();
    let mut comms = real.comms.clone();
    let mut out = Vec::new();
    let mut tally = PageTally::default();
    lines.write_pages(pages, real.layout, &mut comms, &mut out, &mut tally);
    assert!(out.is_empty() || out.ends_with(b"\n"), "a line cut short");
}

/// Real pages of CPU 0 with what they were recorded with.
struct Real {
    /// Every event format's table.
    lines: Lines,
    layout: PageLayout,
    /// `saved_cmdlines`.
    comms: HashMap<i32, Vec<u8>>,
    pages: Vec<u8>,
}

/// The real pages and their table, read once.
fn real() -> &'static Real {
    static REAL: OnceLock<Real> = OnceLock::new();
    REAL.get_or_init(|| {
        let file = |name: &str| crate::fixture(&format!("{PAGES}/{name}"));
        let text = |name: &str| String::from_utf8(file(name)).expect("UTF-8");
        let layout = PageLayout::from_header_page(&text("header_page")).expect("a layout");
        let release = Release::parse(&text("osrelease")).expect("a release");
        let mut lines = Lines::new(release, true, false);
        for f in testdata::files(PAGES, |n| n.starts_with("format.")) {
            let format = EventFormat::parse(&std::fs::read_to_string(&f).expect("a format"))
                .expect("a real format");
            let system = match format.name.as_str() {
                "print" => "ftrace",
                n => n.split('_').next().unwrap_or(""),
            };
            lines
                .add(system, &format, &raw::gfs2_symbols)
                .expect("a real format glk prints");
        }
        let comms = raw::saved_cmdlines(&file("saved_cmdlines"))
            .map(|(pid, comm)| (pid, comm.to_vec()))
            .collect();
        Real {
            lines,
            layout,
            comms,
            pages: file("cpu0.raw.xz"),
        }
    })
}
