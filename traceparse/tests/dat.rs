//! trace-cmd's trace.dat read by glk itself (`traceparse::raw::datfile`), held to two
//! independent witnesses of the same recording (`real/trace-dat-6.12`, `-5.10`): `trace-cmd report`
//! run in the VM (every event's time, task, pid and CPU) and glk's own capture of the same
//! events through another tracefs instance (every event's body, the glock flags' letters
//! included, which trace-cmd prints in hex).

use std::io::Read;
use std::path::{Path, PathBuf};

use testdata::bytes;
use traceparse::raw::datfile::{DatError, DatLines};
use traceparse::TraceFlags;

fn text(path: &Path) -> String {
    String::from_utf8(bytes(path)).unwrap()
}

/// Each event line's fields: (task-pid, cpu, time, event name, body).
fn events(text: &str) -> Vec<(String, u32, u64, String, String)> {
    text.lines()
        .filter_map(|l| match traceparse::line::parse(l.as_bytes()) {
            Ok(traceparse::Line::Event(t)) => Some((
                format!("{}-{}", String::from_utf8_lossy(t.comm), t.pid),
                t.cpu.unwrap_or(0),
                t.ts_ns,
                t.event_name().into_owned(),
                String::from_utf8_lossy(t.body).into_owned(),
            )),
            _ => None,
        })
        .collect()
}

fn glk_reads(dat: &Path) -> String {
    let mut d = DatLines::open(dat).unwrap_or_else(|e| panic!("{}: {e}", dat.display()));
    let mut s = String::new();
    d.read_to_string(&mut s).unwrap();
    assert_eq!(d.tally.bad_pages, 0, "{:?}", d.tally.first_bad);
    assert_eq!(d.tally.unknown_records, 0, "{:?}", d.tally.unknown);
    s
}

#[test]
fn a_trace_dat_reads_as_trace_cmd_and_the_kernel_print_it() {
    // 5.10: gfs2 events only (no dlm tracepoints before 5.16), and ftrace's own formats
    // with array counts written as sums (`char func[30+1]`).
    for (kernel, node) in [("6.12", "n1"), ("6.12", "n2"), ("5.10", "n1")] {
        let dir = testdata::path(&format!("real/trace-dat-{kernel}/{node}"));
        let ours = events(&glk_reads(&dir.join("trace.dat")));
        assert!(ours.len() > 2000, "{node}: {} events", ours.len());
        // trace-cmd's report: the same events with the same time, task and CPU, in order.
        let report = events(&text(&dir.join("report.txt.xz")));
        assert_eq!(ours.len(), report.len(), "{node}");
        for (o, r) in ours.iter().zip(&report) {
            assert_eq!((&o.0, o.1, o.2, &o.3), (&r.0, r.1, r.2, &r.3), "{node}");
        }
        // glk's capture of the same events (another instance: other times): the bodies,
        // flags as the kernel's letters.
        let pipe = text(&dir.join(format!("capture/{node}/trace_pipe.txt.xz")));
        let mut theirs: Vec<(String, String)> = events(&pipe)
            .into_iter()
            .filter(|e| !e.4.starts_with("glkmark "))
            .map(|e| (e.3, e.4))
            .collect();
        let mut mine: Vec<(String, String)> = ours.into_iter().map(|e| (e.3, e.4)).collect();
        mine.sort();
        theirs.sort();
        assert!(
            mine.iter().any(|(_, b)| b.contains("flags:l")),
            "{node}: no glock flags"
        );
        assert_eq!(mine.len(), theirs.len(), "{node}");
        if let Some((a, b)) = mine.iter().zip(&theirs).find(|(a, b)| a != b) {
            panic!("{node}: glk {a:?}\nkernel {b:?}");
        }
    }
}

/// trace-cmd convert's options for a version 6 file (no sections, no compression).
const V6: [&str; 4] = ["--file-version", "6", "--compression", "none"];

/// Writes `dat` as `trace-cmd convert ARGS` makes it into `out`. False when trace-cmd is
/// not there: the test `test` then says it was skipped (fails under CI).
///
/// `trace-cmd convert` mounts tracefs where it is not mounted (libtracefs looks for it)
/// and leaves it mounted; as root it runs in a mount namespace of its own (`unshare`), so
/// this machine's mounts are left as found.
fn converted(test: &str, dat: &Path, args: [&str; 4], out: &Path) -> bool {
    if let Err(e) = std::process::Command::new("trace-cmd")
        .arg("--version")
        .output()
    {
        testdata::skip(test, &format!("trace-cmd convert makes the files: {e}"));
        return false;
    }
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    let mut convert = if root {
        let mut c = std::process::Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "trace-cmd"]);
        c
    } else {
        std::process::Command::new("trace-cmd")
    };
    let o = convert
        .args(["convert", "-i"])
        .arg(dat)
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "trace-cmd convert: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    true
}

/// A version 6 copy of the fixture `rel` (`trace-cmd convert`) and its bytes, to be
/// changed; None when trace-cmd is not there (the test `test` then says it was skipped).
fn v6_copy(test: &str, rel: &str) -> Option<(tempfile::TempDir, PathBuf, Vec<u8>)> {
    let (scratch, v6) = testdata::scratch_file("v6.dat");
    if !converted(test, &testdata::path(rel), V6, &v6) {
        return None;
    }
    let bytes = std::fs::read(&v6).unwrap();
    Some((scratch, v6, bytes))
}

/// Where the pages of the first `cpus` CPUs lie in a version 6 trace.dat (offset, size):
/// after `flyrecord\0`, a u64 offset and a u64 size per CPU.
fn cpu_pages(bytes: &[u8], cpus: usize) -> Vec<(usize, usize)> {
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let fly = bytes.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
    (0..cpus)
        .map(|cpu| (word(fly + 16 * cpu), word(fly + 16 * cpu + 8)))
        .collect()
}

/// The other layouts trace-cmd writes, made from the same file by `trace-cmd convert`:
/// version 6 (no sections, no compression) and version 7 uncompressed read to the same
/// lines.
#[test]
fn versions_6_and_7_uncompressed_read_alike() {
    let test = "versions_6_and_7_uncompressed_read_alike";
    let dat = testdata::path("real/trace-dat-6.12/n2/trace.dat");
    let scratch = tempfile::tempdir().unwrap();
    let mut made = Vec::new();
    for (name, args) in [
        ("v6.dat", V6),
        (
            "v7none.dat",
            ["--file-version", "7", "--compression", "none"],
        ),
    ] {
        let out = scratch.path().join(name);
        if !converted(test, &dat, args, &out) {
            return;
        }
        made.push(out);
    }
    let want = glk_reads(&dat);
    for f in &made {
        let head = std::fs::read(f).unwrap();
        assert_eq!(head[10], if f.ends_with("v6.dat") { b'6' } else { b'7' });
        assert_eq!(glk_reads(f), want, "{}", f.display());
    }
}

/// The small copies the fuzzer starts from (`small/`: the first 3,000 events by `trace-cmd
/// split`, kallsyms emptied, as version 6 and as version 7 uncompressed, the layouts that
/// RHEL's trace-cmd writes) read as the first 3,000 events of the whole file.
#[test]
fn the_small_copies_are_the_first_events_of_the_whole() {
    let dir = testdata::path("real/trace-dat-nolock-6.1");
    let whole = glk_reads(&dir.join("trace.dat"));
    let first: Vec<&str> = whole.lines().take(3000).collect();
    assert_eq!(first.len(), 3000);
    for name in ["v6.dat.xz", "v7-uncompressed.dat.xz"] {
        let (_scratch, dat) = testdata::scratch_file("small.dat");
        std::fs::write(&dat, bytes(&dir.join("small").join(name))).unwrap();
        let small = glk_reads(&dat);
        assert_eq!(small.lines().collect::<Vec<_>>(), first, "{name}");
    }
}

/// A format glk cannot read costs nothing when it is one of ftrace's own events, which a
/// gfs2 trace does not record: the file is read whole. One of a recorded system is
/// [`DatError::Unsupported`] (read through `trace-cmd report`), never "damaged". Both in a
/// version 6 copy (`trace-cmd convert`) with one format's text changed, length kept.
#[test]
fn an_unreadable_format_costs_only_what_it_describes() {
    let test = "an_unreadable_format_costs_only_what_it_describes";
    let rel = "real/trace-dat-6.12/n2/trace.dat";
    let Some((_scratch, v6, bytes)) = v6_copy(test, rel) else {
        return;
    };
    let whole = glk_reads(&v6);
    // The copy with `from` changed to `to` (as long) where it first stands after `after`.
    let changed = |after: &[u8], from: &[u8], to: &[u8]| -> Vec<u8> {
        assert_eq!(from.len(), to.len());
        let find = |hay: &[u8], n: &[u8]| hay.windows(n.len()).position(|w| w == n).unwrap();
        let at = find(&bytes, after);
        let at = at + find(&bytes[at..], from);
        let mut b = bytes.clone();
        b[at..at + to.len()].copy_from_slice(to);
        b
    };
    // ftrace's `branch`: a count glk cannot work out.
    let branch = changed(b"name: branch", b"func[31]", b"func[3+]");
    std::fs::write(&v6, branch).unwrap();
    assert_eq!(glk_reads(&v6), whole);
    // gfs2_glock_put's `glnum`: no offset.
    let put = changed(b"name: gfs2_glock_put", b"offset:16", b"offzet:16");
    std::fs::write(&v6, put).unwrap();
    match DatLines::open(&v6) {
        Err(DatError::Unsupported(why)) => assert!(why.contains("a gfs2 format"), "{why}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("read a format without an offset"),
    }
}

/// A trace.dat cut short or with bytes changed is an error or fewer lines, never a panic.
#[test]
fn damaged_trace_dats_never_panic() {
    let dat = std::fs::read(testdata::path("real/trace-dat-6.12/n1/trace.dat")).unwrap();
    let (_scratch, path) = testdata::scratch_file("trace.dat");
    let mut rng = testdata::Xorshift::new(0x2545_f491_4f6c_dd1d);
    for round in 0..60 {
        let mut bytes = dat.clone();
        if round % 2 == 0 {
            bytes.truncate(rng.below(dat.len()));
        } else {
            for _ in 0..rng.below(16) + 1 {
                let at = rng.below(bytes.len());
                bytes[at] = rng.next_u64() as u8;
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(mut d) = DatLines::open(&path) {
            let mut s = Vec::new();
            let _ = d.read_to_end(&mut s);
        }
    }
}

/// A trace.dat of two CPUs (6.1, lock_nolock): every event as trace-cmd reported it in the
/// VM, in its order, decoded alike (trace-cmd's hex glock flags and glk's letters are the
/// same flags).
#[test]
fn two_cpus_merged_as_trace_cmd_merges_them() {
    let dir = testdata::path("real/trace-dat-nolock-6.1");
    let ours = glk_reads(&dir.join("trace.dat"));
    let report = text(&dir.join("report.txt.xz"));
    // Flags compare with the bits every kernel names as letters (6.1 prints bit 2,
    // which its table lacks, as `0x4`; trace-cmd's hex reads it as `n`).
    let decoded = |t: &str| -> Vec<String> {
        t.lines()
            .filter_map(|l| match traceparse::decode_line(l.as_bytes()) {
                Ok(traceparse::Decoded::Gfs2 { line, dev, event }) => Some(format!(
                    "{}-{} {:?} {} {dev:?} {:?}",
                    String::from_utf8_lossy(line.comm),
                    line.pid,
                    line.cpu,
                    line.ts_ns,
                    event.map_flags(TraceFlags::lettered)
                )),
                _ => None,
            })
            .collect()
    };
    let (o, r) = (decoded(&ours), decoded(&report));
    assert_eq!(o.len(), 14_357);
    assert_eq!(o.len(), r.len());
    for cpu in ["Some(0)", "Some(1)"] {
        assert!(o.iter().any(|l| l.contains(cpu)), "no events of CPU {cpu}");
    }
    if let Some((a, b)) = o.iter().zip(&r).find(|(a, b)| a != b) {
        panic!("glk {a}\ntrace-cmd {b}");
    }
}

/// A page that cannot be read (its length damaged, in a version 6 file made by `trace-cmd
/// convert`) costs that page only: the other pages' lines come whole, then the end is an
/// error naming the file and the page.
#[test]
fn a_damaged_page_is_said_at_the_end() {
    let test = "a_damaged_page_is_said_at_the_end";
    let rel = "real/trace-dat-6.12/n2/trace.dat";
    let Some((_scratch, v6, mut bytes)) = v6_copy(test, rel) else {
        return;
    };
    // CPU 0's first page: its `commit` follows the page's u64 time stamp.
    let page = cpu_pages(&bytes, 1)[0].0;
    bytes[page + 8..page + 16].copy_from_slice(&0x7f_ffffu64.to_le_bytes());
    std::fs::write(&v6, &bytes).unwrap();
    let whole = glk_reads(&testdata::path(rel)).lines().count();
    let (got, err) = read_in_part(&v6);
    assert!(err.starts_with("a trace.dat read in part"), "{err}");
    assert!(
        err.contains("1 ring-buffer pages could not be read"),
        "{err}"
    );
    assert!(got.ends_with('\n'));
    let n = got.lines().count();
    assert!(n > 0 && n < whole, "{n} of {whole} lines");
}

/// Marks lost events in both CPUs' pages of a version 6 trace.dat, in the `commit` word:
/// bit 31 says events were lost before the page, bit 30 that their count is stored after
/// the data. Every third page with room for the count gets one, different on each page;
/// every sixth other page gets bit 31 alone (how many unknown, as when a page is full).
/// Returns the pages marked per CPU: (with a count, without).
fn mark_lost_events(bytes: &mut [u8]) -> Vec<(usize, usize)> {
    // The recording's page size (the reader holds it to the file's header_page) and a
    // page's header: a u64 time stamp and a u64 commit.
    const PAGE: usize = 4096;
    const HEADER: usize = 16;
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut marked = Vec::new();
    for (cpu, (offset, size)) in cpu_pages(bytes, 2).into_iter().enumerate() {
        let (mut counted, mut uncounted) = (0, 0);
        for page in 0..size / PAGE {
            let at = offset + page * PAGE;
            let commit = word(bytes, at + 8);
            let room = commit as usize + 8 <= PAGE - HEADER;
            if page % 3 == cpu && room {
                let count = 1000 * cpu as u64 + page as u64 + 1;
                bytes[at + 8..at + 16].copy_from_slice(&(commit | 3 << 30).to_le_bytes());
                let stored = at + HEADER + commit as usize;
                bytes[stored..stored + 8].copy_from_slice(&count.to_le_bytes());
                counted += 1;
            } else if page % 3 == 2 && page % 2 == cpu {
                bytes[at + 8..at + 16].copy_from_slice(&(commit | 1 << 31).to_le_bytes());
                uncounted += 1;
            }
        }
        marked.push((counted, uncounted));
    }
    marked
}

/// Damaged pages may say any number of lost events: two pages without records that each
/// say almost 2^64 add up to the most a count can say, not past it.
#[test]
fn lost_counts_of_damaged_pages_saturate() {
    let dir = testdata::path("real/trace-dat-nolock-6.1/small");
    let mut v6 = bytes(&dir.join("v6.dat.xz"));
    let (offset, _) = cpu_pages(&v6, 2)[1];
    for page in 0..2 {
        let at = offset + page * 4096;
        // No data (commit 0), events lost before the page, their count after the data.
        v6[at + 8..at + 16].copy_from_slice(&(3u64 << 30).to_le_bytes());
        v6[at + 16..at + 24].copy_from_slice(&(u64::MAX - 5).to_le_bytes());
    }
    let (_scratch, dat) = testdata::scratch_file("v6.dat");
    std::fs::write(&dat, &v6).unwrap();
    let text = glk_reads(&dat);
    let lost: Vec<&str> = text.lines().filter(|l| l.contains("LOST")).collect();
    assert_eq!(lost, [format!("CPU:1 [LOST {} EVENTS]", u64::MAX)]);
}

/// The lines glk reads of `dat` before the error that ends them, and the error.
fn read_in_part(dat: &Path) -> (String, String) {
    let mut d = DatLines::open(dat).unwrap_or_else(|e| panic!("{}: {e}", dat.display()));
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match d.read(&mut buf) {
            Ok(0) => panic!("{}: no error at the end", dat.display()),
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) => return (String::from_utf8(text).unwrap(), e.to_string()),
        }
    }
}

/// A CPU whose data is said to run to nearly 2^64 bytes (a damaged size) is read to where
/// the next CPU's data begins, or for the last CPU to the file's end, and that is said,
/// never a panic. CPU 0's pages are then every event the whole file's CPU 0 holds, and
/// no page of CPU 1 is read twice.
#[test]
fn a_cpu_size_past_the_file_is_said() {
    let dir = testdata::path("real/trace-dat-nolock-6.1/small");
    let v6 = bytes(&dir.join("v6.dat.xz"));
    let (_scratch, full) = testdata::scratch_file("v6.dat");
    std::fs::write(&full, &v6).unwrap();
    let whole = events(&glk_reads(&full));
    let fly = v6.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
    let size_of_cpu = |cpu: usize| fly + 16 * cpu + 8;
    for (cpu, said) in [
        (0, "a trace.dat read in part: CPU 0's data size, 18446744073709551610 bytes, runs into CPU 1's data: read to where that begins"),
        (1, "a trace.dat read in part: the file ends inside CPU 1's data"),
    ] {
        let mut damaged = v6.clone();
        damaged[size_of_cpu(cpu)..size_of_cpu(cpu) + 8]
            .copy_from_slice(&(u64::MAX - 5).to_le_bytes());
        let (_s, dat) = testdata::scratch_file("damaged.dat");
        std::fs::write(&dat, &damaged).unwrap();
        let (text, err) = read_in_part(&dat);
        assert!(err.starts_with(said), "CPU {cpu}: {err}");
        assert_eq!(events(&text), whole, "CPU {cpu}");
    }
}

/// A trace.dat cut short (copied while trace-cmd wrote it, a full disk), which `trace-cmd
/// report` refuses, gives the whole pages it holds: CPU 0's data, whole before the cut,
/// every event; CPU 1's, cut, the events of its first pages; and it says so.
#[test]
fn a_trace_dat_cut_short_gives_its_whole_pages() {
    let v6 = bytes(&testdata::path("real/trace-dat-nolock-6.1/small/v6.dat.xz"));
    let pages = cpu_pages(&v6, 2);
    let (cpu1, size1) = pages[1];
    assert!(pages[0].0 + pages[0].1 <= cpu1, "{pages:?}");
    let (_scratch, dat) = testdata::scratch_file("cut.dat");
    // Inside CPU 1's data, two thirds of a page after its eighth page.
    std::fs::write(&dat, &v6[..cpu1 + 8 * 4096 + 2730]).unwrap();
    let (text, err) = read_in_part(&dat);
    let of_cpu = |t: &str, cpu: u32| -> Vec<(String, u32, u64, String, String)> {
        events(t).into_iter().filter(|e| e.1 == cpu).collect()
    };
    let (_s, full) = testdata::scratch_file("v6.dat");
    std::fs::write(&full, &v6).unwrap();
    let whole = glk_reads(&full);
    assert_eq!(of_cpu(&text, 0), of_cpu(&whole, 0));
    let (got, all) = (of_cpu(&text, 1), of_cpu(&whole, 1));
    assert!(
        !got.is_empty() && got.len() < all.len(),
        "{} of {}",
        got.len(),
        all.len()
    );
    assert_eq!(got[..], all[..got.len()]);
    let pages1 = size1.div_ceil(4096);
    let said = format!(
        "a trace.dat read in part: the file ends inside CPU 1's data: 8 of its {pages1} pages read"
    );
    assert_eq!(err, said);
}

/// A line as the order of a merge sees it.
#[derive(Debug, PartialEq)]
enum Merged {
    /// An event of a CPU, at its time.
    Event(u32, u64),
    /// A CPU's lost events, how many when said: `CPU:N [LOST M EVENTS]` or `CPU:N [LOST
    /// EVENTS]` from glk, `CPU:N [M EVENTS DROPPED]` or `CPU:N [EVENTS DROPPED]` from
    /// trace-cmd, which glk reads alike.
    Lost(u32, Option<u64>),
}

fn merged(text: &str) -> Vec<Merged> {
    text.lines()
        .filter_map(|l| match traceparse::line::parse(l.as_bytes()) {
            Ok(traceparse::Line::Event(t)) => Some(Merged::Event(t.cpu?, t.ts_ns)),
            Ok(traceparse::Line::Lost { cpu, events }) => Some(Merged::Lost(cpu, events)),
            Ok(traceparse::Line::Header) => None,
            Err(e) => panic!("{l:?}: {e:?}"),
        })
        .collect()
}

/// Events a page says were lost come as `CPU:N [LOST M EVENTS]` where `trace-cmd report`
/// says `CPU:N [M EVENTS DROPPED]`, or `CPU:N [LOST EVENTS]` (the kernel's words) where it
/// says `CPU:N [EVENTS DROPPED]`: just before that CPU's next record, among the other
/// CPU's records (not when the page is read, which can be long before its time). Marked
/// in a version 6 copy of the two-CPU recording, on pages of both CPUs. glk reads
/// trace-cmd's report, drops included, to the same counts.
#[test]
fn lost_events_are_said_where_trace_cmd_says_them() {
    let test = "lost_events_are_said_where_trace_cmd_says_them";
    let Some((_scratch, v6, mut bytes)) = v6_copy(test, "real/trace-dat-nolock-6.1/trace.dat")
    else {
        return;
    };
    let marked = mark_lost_events(&mut bytes);
    assert!(
        marked.iter().all(|(c, u)| *c >= 10 && *u >= 5),
        "{marked:?}"
    );
    std::fs::write(&v6, &bytes).unwrap();
    let report = std::process::Command::new("trace-cmd")
        .args(["report", "-i"])
        .arg(&v6)
        .output()
        .unwrap();
    assert!(report.status.success());
    let theirs = merged(&String::from_utf8_lossy(&report.stdout));
    let ours = merged(&glk_reads(&v6));
    for (cpu, (counted, uncounted)) in marked.into_iter().enumerate() {
        let said = |counted: bool| {
            let lost = |l: &&Merged| matches!(l, Merged::Lost(c, n) if *c as usize == cpu && n.is_some() == counted);
            theirs.iter().filter(lost).count()
        };
        assert_eq!((said(true), said(false)), (counted, uncounted), "CPU {cpu}");
    }
    assert_eq!(ours.len(), theirs.len());
    if let Some(i) = (0..ours.len()).find(|&i| ours[i] != theirs[i]) {
        panic!(
            "line {i}: glk {:?}\ntrace-cmd {:?}",
            &ours[i.saturating_sub(2)..i + 2],
            &theirs[i.saturating_sub(2)..i + 2]
        );
    }
}
