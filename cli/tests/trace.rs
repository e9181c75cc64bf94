//! `glk trace` end to end: offline decoding of the real captures, and live tracing on this
//! machine's tracefs (root only) including a SIGINT in the middle.

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `glk trace -i INPUT [-o OUT]... ARGS...`: how it ended.
fn trace_file(input: &Path, outs: &[&Path], args: &[&str]) -> std::process::Output {
    let mut all = vec!["trace", "-i", input.to_str().unwrap()];
    for o in outs {
        all.extend(["-o", o.to_str().unwrap()]);
    }
    all.extend_from_slice(args);
    glk().args(all).output().unwrap()
}

fn glk() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glk"))
}

/// A scratch directory, removed when dropped (also when a test fails).
fn tmp(name: &str) -> tempfile::TempDir {
    common::scratch(&format!("trace-{name}"))
}

/// `glk trace -i REL -o DIR/events.jsonl`, checked to succeed with a JSON line for each
/// line of the trace: its stderr, the trace's text and the JSON lines.
fn jsonl_of(rel: &str, dir: &Path) -> (String, String, String) {
    let out = dir.join("events.jsonl");
    let o = trace_file(&testdata::path(rel), &[&out], &[]);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    let (text, json) = (testdata::text(rel), std::fs::read_to_string(&out).unwrap());
    assert_eq!(json.lines().count(), text.lines().count(), "{rel}");
    (stderr, text, json)
}

#[test]
fn offline_jsonl_matches_the_text_line_for_line() {
    let scratch = tmp("jsonl");
    let dir = scratch.path();
    for rel in [
        "real/nolock-6.1/trace_pipe.txt.xz",
        "real/dlm2-6.1/n1/trace_pipe.txt.xz",
        "real/dlm2-6.1/n2/trace_pipe.txt.xz",
    ] {
        let (stderr, text, json) = jsonl_of(rel, dir);
        assert!(!stderr.contains("warning"), "{stderr}");
        let mut want: BTreeMap<String, usize> = BTreeMap::new();
        for l in text.lines() {
            let name = l
                .split_whitespace()
                .find(|w| w.starts_with("gfs2_") && w.ends_with(':'))
                .unwrap();
            *want
                .entry(
                    name.trim_start_matches("gfs2_")
                        .trim_end_matches(':')
                        .to_string(),
                )
                .or_default() += 1;
        }
        let mut got: BTreeMap<String, usize> = BTreeMap::new();
        for (l, j) in text.lines().zip(json.lines()) {
            let v: serde_json::Value = serde_json::from_str(j).unwrap();
            *got.entry(v["event"].as_str().unwrap().to_string())
                .or_default() += 1;
            // Decimal trace ids become the glocks file's hex ids.
            if let Some(g) = v["glock"].as_str() {
                let id: glockparse::GlockId = testdata::trace_glock(l).parse().unwrap();
                assert_eq!(g, id.to_string());
            }
        }
        assert_eq!(got, want, "{rel}");
    }
}

/// dlm events in every output: JSON lines keep the kernel's name (`dlm_lock_start`) with
/// the resource's glock id and the lock ids as numbers; the text names the glock; the
/// summary counts them. Checked against the raw lines of 6.12 (with `dst`) and 6.1.
#[test]
fn offline_dlm_events_in_jsonl_text_and_summary() {
    let scratch = tmp("dlm");
    let dir = scratch.path();
    for rel in [
        "real/handoff-6.12/n2/trace_pipe.txt.xz",
        "real/handoff-6.1/n2/trace_pipe.txt.xz",
    ] {
        let (err, text, json) = jsonl_of(rel, dir);
        assert!(err.contains(" dlm, ") && !err.contains("warning"), "{err}");
        let input = testdata::path(rel);
        let mut dlm_lines = 0;
        for (l, j) in text.lines().zip(json.lines()) {
            let v: serde_json::Value = serde_json::from_str(j).unwrap();
            let Some(name) = l
                .split_whitespace()
                .find(|w| w.starts_with("dlm_") && w.ends_with(':'))
            else {
                continue;
            };
            dlm_lines += 1;
            assert_eq!(v["event"], name.trim_end_matches(':'), "{l}");
            let field = |k: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{k}=")))
                    .map(|x| x.trim_end_matches(',').to_string())
            };
            if let Some(lkb) = field("lkb_id") {
                assert_eq!(
                    v["lkb_id"].as_u64(),
                    u64::from_str_radix(&lkb, 16).ok(),
                    "{l}"
                );
                let res = field("res_name").unwrap();
                let bytes: Vec<u8> = (0..res.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&res[i..i + 2], 16).unwrap())
                    .collect();
                let name = String::from_utf8(bytes).unwrap();
                let g = format!("{}/{}", name[..8].trim(), name[8..].trim());
                assert_eq!(v["glock"], g.as_str(), "{l}");
            }
            if let Some(t) = field("m_type") {
                assert_eq!(v["msg_type"], t.as_str());
                let seq = field("h_seq").or(field("seq")).unwrap();
                assert_eq!(v["seq"].as_u64(), seq.parse().ok());
                assert_eq!(v["dst"].as_u64(), field("dst").and_then(|d| d.parse().ok()));
            }
        }
        assert!(dlm_lines > 3000, "{rel}");
        // Text: the glock id, not the hex name.
        let o = trace_file(&input, &[], &[]);
        let t = String::from_utf8_lossy(&o.stdout);
        let bast = t.lines().find(|l| l.contains("dlm_bast ")).unwrap();
        assert!(
            bast.contains(" 2/") && bast.contains("blocking a request for"),
            "{bast}"
        );
        // Summary: the dlm events by name and the blocking ASTs per glock.
        let o = trace_file(&input, &[], &["--summary"]);
        let s = String::from_utf8_lossy(&o.stdout);
        let basts = text.lines().filter(|l| l.contains(" dlm_bast: ")).count();
        assert!(
            s.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["dlm_bast", &basts.to_string()]),
            "{s}"
        );
        assert!(s.contains("BAST"));
    }
}

/// A trace of two alike filesystems, whose hot files are one glock number: `--summary`
/// counts each glock per filesystem, as the events name it: the gfs2 events' by device,
/// the dlm events' by lockspace. Checked against the raw lines, split by hand.
/// The two-filesystems fixture's trace (n1's), each line's counts by hand: (FS, glock) →
/// queue, dequeue, promote, state changes, DLM replies, blocking ASTs; FS as the events
/// name it (`254,1`, `ls_id=N`).
fn two_filesystems_counts() -> BTreeMap<(String, String), [u64; 6]> {
    let mut want: BTreeMap<(String, String), [u64; 6]> = BTreeMap::new();
    for l in testdata::text(TWO_FS_TRACE).lines() {
        let Some((_, body)) = l.split_once(": ").and_then(|(_, r)| r.split_once(": ")) else {
            continue;
        };
        let event = l.split(": ").nth(1).unwrap().rsplit(' ').next().unwrap();
        let (column, fs, glock) = match event {
            "dlm_bast" => {
                let ls = body.split(' ').next().unwrap().to_string();
                let hex = body.split("res_name=").nth(1).unwrap();
                let name: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                let name = String::from_utf8(name).unwrap();
                let w: Vec<&str> = name.split_whitespace().collect();
                (5, ls, format!("{}/{}", w[0], w[1]))
            }
            "gfs2_glock_queue"
            | "gfs2_promote"
            | "gfs2_glock_state_change"
            | "gfs2_glock_lock_time" => {
                let column = match event {
                    "gfs2_glock_queue" if body.contains(" dequeue ") => 1,
                    "gfs2_glock_queue" => 0,
                    "gfs2_promote" => 2,
                    "gfs2_glock_state_change" => 3,
                    _ => 4,
                };
                let dev = body.split(' ').next().unwrap().to_string();
                (column, dev, common::glock_of_gfs2(l))
            }
            _ => continue,
        };
        want.entry((fs, glock)).or_default()[column] += 1;
    }
    want
}

const TWO_FS_TRACE: &str = "real/two-filesystems-6.12/n1/lab_data/n1/trace_pipe.txt.xz";

/// `glk trace --summary`'s glock rows of a trace of several filesystems: (FS, glock) →
/// the counts [`two_filesystems_counts`] takes.
fn summary_rows(trace: &Path) -> BTreeMap<(String, String), [u64; 6]> {
    let o = trace_file(trace, &[], &["--summary"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Several filesystems"), "{text}");
    let mut got = BTreeMap::new();
    let rows = text
        .lines()
        .skip_while(|l| !l.starts_with("GLOCK "))
        .skip(1);
    for l in rows.take_while(|l| l.contains('/')) {
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(w.len(), 13, "{l}");
        let n = |i: usize| w[i].parse::<u64>().unwrap();
        let counts = [n(4), n(5), n(6), n(7), n(10), n(12)];
        got.insert((w[1].to_string(), w[0].to_string()), counts);
    }
    got
}

/// A trace read alone names its filesystems as its events do: each glock is counted per
/// device and per lockspace.
#[test]
fn summary_counts_a_glock_per_filesystem() {
    let scratch = tmp("two-fs-alone");
    let alone = scratch.path().join("trace_pipe.txt.xz");
    std::fs::copy(testdata::path(TWO_FS_TRACE), &alone).unwrap();
    let got = summary_rows(&alone);
    assert!(got.len() >= 6, "{got:?}");
    // The hot glock: once per device and once per lockspace.
    let hot = hot_filesystems(&got, &two_filesystems_counts());
    assert_eq!(hot.len(), 4, "{hot:?}");
    assert_eq!(hot.iter().filter(|fs| fs.starts_with("ls_id=")).count(), 2);
}

/// Checks that every row shown is its filesystem's glock, counted as the lines count it
/// in `want` (rows of glocks with other events only count none of these), and gives the
/// filesystems of the hot glock `2/1231`.
fn hot_filesystems(
    got: &BTreeMap<(String, String), [u64; 6]>,
    want: &BTreeMap<(String, String), [u64; 6]>,
) -> Vec<String> {
    for (k, counts) in got {
        assert_eq!(want.get(k).copied().unwrap_or_default(), *counts, "{k:?}");
    }
    got.keys()
        .filter(|(_, g)| g == "2/1231")
        .map(|k| k.0.clone())
        .collect()
}

/// A trace in its capture (`DIR/FS/NODE/`) names each filesystem by its lock table, as
/// the capture maps it: a glock's gfs2 events (by device) and dlm events (by lockspace)
/// are one row.
#[test]
fn summary_names_the_filesystems_of_the_capture() {
    let table_of = common::two_fs_tables("n1");
    let mut want: BTreeMap<(String, String), [u64; 6]> = BTreeMap::new();
    for ((fs, g), counts) in two_filesystems_counts() {
        let w = want.entry((table_of[&fs].clone(), g)).or_default();
        for (a, b) in w.iter_mut().zip(counts) {
            *a += b;
        }
    }
    let got = summary_rows(&testdata::path(TWO_FS_TRACE));
    assert!(got.len() >= 4, "{got:?}");
    assert_eq!(hot_filesystems(&got, &want), ["lab:data", "lab:gfs"]);
    assert_eq!(got[&("lab:gfs".to_string(), "2/1231".to_string())][5], 48);
}

#[test]
fn offline_txt_keeps_lines_as_read_and_bad_lines_are_reported() {
    let scratch = tmp("txt");
    let dir = scratch.path();
    let input = dir.join("mixed.txt");
    let good = testdata::text("real/dlm2-6.1/n2/trace_pipe.txt.xz");
    let mut lines: Vec<&str> = good.lines().take(1000).collect();
    lines.insert(10, "this is not a trace line");
    lines.insert(500, "CPU:0 [LOST 7 EVENTS]");
    // The kernel's words for a loss of unknown size (the `trace` file's reader overrun).
    lines.insert(700, "CPU:1 [LOST EVENTS]");
    // trace-cmd report's words for a counted loss.
    lines.insert(800, "CPU:1 [3 EVENTS DROPPED]");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = dir.join("copy.txt");
    let o = trace_file(&input, &[&out], &["--summary"]);
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!("{}:11: ", input.display())),
        "{stderr}"
    );
    assert!(stderr.contains(", at least 11 lost"), "{stderr}");
    let copy = std::fs::read_to_string(&out).unwrap();
    // Every line but the malformed one is kept exactly.
    let kept: Vec<&str> = lines
        .iter()
        .filter(|l| !l.starts_with("this is"))
        .copied()
        .collect();
    assert_eq!(copy.lines().collect::<Vec<_>>(), kept);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("gfs2_glock_queue"));
}

/// A large saved trace is decoded on every core for `--summary`; the counts, the errors and
/// their line numbers must be those of the one-thread reading (forced by `-o FILE.txt`).
#[test]
fn parallel_summary_matches_the_sequential_one() {
    let scratch = tmp("parallel");
    let dir = scratch.path();
    let text = testdata::text("real/nolock-6.1/trace_pipe.txt.xz");
    let lines: Vec<&str> = text.lines().collect();
    let mut big = String::new();
    let mut bad = Vec::new();
    let mut n = 0u64;
    // Over 8 MiB, with malformed lines spread over every chunk (and a long one).
    while big.len() < 20 << 20 {
        for (i, l) in lines.iter().enumerate() {
            n += 1;
            if i % 50_000 == 7 {
                let junk = if bad.len() % 3 == 0 {
                    "x".repeat(3 << 20)
                } else {
                    format!("junk {n}")
                };
                big.push_str(&junk);
                big.push('\n');
                bad.push(n);
                n += 1;
            }
            big.push_str(l);
            big.push('\n');
        }
    }
    let path = dir.join("big.txt");
    std::fs::write(&path, &big).unwrap();
    let run = |extra: &[&str]| {
        let o = glk()
            .args(["trace", "--summary", "--input", path.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    let (par_out, par_err) = run(&[]);
    let raw = dir.join("copy.txt");
    let (seq_out, seq_err) = run(&["-o", raw.to_str().unwrap()]);
    assert_eq!(par_out, seq_out);
    assert_eq!(par_err, seq_err);
    assert!(par_out.contains("gfs2_glock_queue"), "{par_out}");
    // The first errors, in order, with their true line numbers.
    let prefix = format!("{}:", path.display());
    let shown: Vec<u64> = par_err
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(&prefix))
        .map(|l| l.split(':').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(shown, bad[..5], "{par_err}");
    assert!(
        par_err.contains(&format!("{} malformed line(s)", bad.len())),
        "{par_err}"
    );
}

#[test]
fn unknown_output_format_is_refused() {
    let input = testdata::path("real/dlm2-6.1/n2/trace_pipe.txt.xz");
    let o = trace_file(&input, &[Path::new("/tmp/x.csv")], &[]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown output format"));
}

/// Waits until the instance `name` of the live `glk` records, and returns its directory:
/// `setting` (an event's `enable` or `filter` file, written after the instance was made
/// quiet), when given, is set, then `tracing_on` is 1. In that order: a new instance
/// records for a moment before glk turns it off. Where tracefs is not mounted, glk mounts
/// it itself: it is looked for only once glk runs. A glk that ends first is a failure.
fn instance_recording(glk: &mut std::process::Child, name: &str, setting: Option<&str>) -> PathBuf {
    let mut inst = PathBuf::new();
    wait_for("the instance to be recording", || {
        if let Some(status) = glk.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = glk.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("glk ended before it recorded ({status}): {err}");
        }
        let Some(t) = common::tracefs_dir() else {
            return false;
        };
        inst = t.join("instances").join(name);
        let set = |f: &str| {
            std::fs::read_to_string(inst.join(f))
                .is_ok_and(|s| !s.trim().is_empty() && s.trim() != "0" && s.trim() != "none")
        };
        setting.is_none_or(set)
            && std::fs::read_to_string(inst.join("tracing_on")).is_ok_and(|s| s.trim() == "1")
    });
    inst
}

/// Two glk started at once where tracefs was not mounted: one mounted it, the other used
/// that mount. The first to end (`first_err` is what it said) could not unmount it while
/// the other used it, and said so if it had mounted it; the last unmounted it. Where
/// tracefs was mounted, it still is.
fn two_at_once_leave_tracefs_as_found(before: Option<PathBuf>, first_err: &str) {
    assert_eq!(common::tracefs_dir(), before, "tracefs mount state changed");
    let said = first_err.contains("stays mounted while another glk uses it");
    assert!(!said || before.is_none(), "{first_err}");
    assert!(!first_err.contains("other than glk"), "{first_err}");
    if said {
        eprintln!("the glk that mounted tracefs left it to the other, which unmounted it");
    }
}

/// Thread `tid`'s system calls in a `glk trace` JSON lines file, from the first marker
/// call to the second, each as (event, body, command).
fn between_markers(path: &Path, tid: i32) -> Vec<(String, String, String)> {
    let all: Vec<_> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["pid"] == i64::from(tid))
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (s("event"), s("body"), s("comm"))
        })
        .collect();
    let at = |n: u64| {
        let call = format!("({MARKER:x}, {n:x},");
        all.iter()
            .position(|(ev, body, _)| ev == "sys_enter" && body.contains(&call))
            .unwrap_or_else(|| panic!("{}: marker call {n} not recorded", path.display()))
    };
    all[at(1)..=at(2)].to_vec()
}

/// The two readers' events are the same, in the same order; else the first difference
/// and the events whose counts differ are said, with `said` (what the readers said).
fn assert_same_in_order<T: Ord + std::fmt::Debug>(r: &[T], t: &[T], said: &str) {
    if r == t {
        return;
    }
    let at = r.iter().zip(t).position(|(a, b)| a != b);
    let mut count = std::collections::BTreeMap::<_, (usize, usize)>::new();
    r.iter().for_each(|e| count.entry(e).or_default().0 += 1);
    t.iter().for_each(|e| count.entry(e).or_default().1 += 1);
    count.retain(|_, (a, b)| a != b);
    panic!(
        "raw {} events, text {}, first different at {at:?}; (raw, text) counts that \
         differ: {count:?}\n{said}",
        r.len(),
        t.len()
    );
}

/// This thread bound to the CPU it runs on until dropped, when its CPU set is restored.
struct OnThisCpu(libc::cpu_set_t);

impl OnThisCpu {
    fn new() -> OnThisCpu {
        // SAFETY: cpu_set_t is plain data; all-zero is an empty set.
        let mut before: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `before` is a cpu_set_t of `size` bytes; 0 is this thread.
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut before) }, 0);
        // SAFETY: as above.
        let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        assert!(cpu >= 0);
        // SAFETY: `one` is a valid cpu_set_t and cpu is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(cpu as usize, &mut one) };
        // SAFETY: `one` is a cpu_set_t of `size` bytes.
        assert_eq!(unsafe { libc::sched_setaffinity(0, size, &one) }, 0);
        OnThisCpu(before)
    }
}

impl Drop for OnThisCpu {
    fn drop(&mut self) {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: self.0 is the cpu_set_t read in `new`.
        unsafe { libc::sched_setaffinity(0, size, &self.0) };
    }
}

/// The first argument of [`marker_call`]'s getppid(2), which ignores its arguments.
const MARKER: u64 = 0x00b1_e55e;

/// A getppid(2) call whose ignored arguments `MARKER, n` `raw_syscalls:sys_enter` prints:
/// a mark in this thread's system calls.
fn marker_call(n: u64) {
    // SAFETY: getppid takes no arguments and ignores what it is passed.
    unsafe { libc::syscall(libc::SYS_getppid, MARKER, n) };
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a child started with a piped stderr, checks that it succeeded and returns
/// what it said.
fn wait_ok(child: &mut std::process::Child) -> String {
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{err}");
    err
}

#[test]
fn live_markers_then_sigint_restores_everything() {
    live_markers_then_signal(libc::SIGINT);
}

#[test]
fn sigterm_restores_everything_too() {
    live_markers_then_signal(libc::SIGTERM);
}

#[test]
fn sighup_restores_everything_too() {
    live_markers_then_signal(libc::SIGHUP);
}

fn live_markers_then_signal(signal: i32) {
    let Some(_tracing) = common::live_tracing(&format!("live_markers_then_signal({signal})"))
    else {
        return;
    };
    let mounted_before = common::tracefs_dir();
    let scratch = tmp(&format!("live{signal}"));
    let dir = scratch.path();
    let out = dir.join("live.txt");
    let name = format!("glk-clitest-{}-{signal}", std::process::id());
    let mut child = glk()
        .args([
            "trace",
            "--events",
            "sched:sched_process_exec",
            "--instance",
            &name,
            "-o",
            out.to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut inst: Option<PathBuf> = None;
    wait_for("the instance to be tracing", || {
        inst = common::tracefs_dir().map(|t| t.join("instances").join(&name));
        inst.as_ref().is_some_and(|i| {
            std::fs::read_to_string(i.join("tracing_on")).is_ok_and(|s| s.trim() == "1")
                && std::fs::read_to_string(i.join("events/sched/sched_process_exec/enable"))
                    .is_ok_and(|s| s.trim() == "1")
        })
    });
    let inst = inst.unwrap();
    const N: usize = 2000;
    for i in 0..N {
        std::fs::write(inst.join("trace_marker"), format!("glk-cli-marker {i}")).unwrap();
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let err = wait_ok(&mut child);
    assert!(
        err.contains(&format!("stopped by signal {signal}")),
        "{err}"
    );
    assert!(!inst.exists(), "instance left behind");
    assert_eq!(
        common::tracefs_dir(),
        mounted_before,
        "tracefs mount state changed"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let markers: Vec<usize> = text
        .lines()
        .filter_map(|l| l.split("glk-cli-marker ").nth(1))
        .map(|n| n.trim().parse().unwrap())
        .collect();
    assert_eq!(markers, (0..N).collect::<Vec<_>>());
}

/// System call events print no `name:` (`sys_getppid()`, `sys_getppid -> 0x1f`): every one
/// is kept under its tracefs name, none reported malformed. This thread's own calls are
/// counted.
#[test]
fn live_system_calls_keep_their_names() {
    let Some(_tracing) = common::live_tracing("live_system_calls_keep_their_names") else {
        return;
    };
    let scratch = tmp("syscalls");
    let out = scratch.path().join("calls.jsonl");
    const CALLS: usize = 1000;
    let me: i64 = std::fs::read_link("/proc/thread-self")
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let events = "syscalls:sys_enter_getppid,syscalls:sys_exit_getppid";
    let child = glk()
        .args(["trace", "--events", events, "--duration", "1.5"])
        .args(["-o", out.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let parent = std::os::unix::process::parent_id();
    for _ in 0..CALLS {
        assert_eq!(std::os::unix::process::parent_id(), parent);
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("malformed") && !err.contains("no event name"),
        "{err}"
    );
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    for l in std::fs::read_to_string(&out).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["pid"] == me {
            *by_name
                .entry(v["event"].as_str().unwrap().to_string())
                .or_default() += 1;
            if v["event"] == "sys_exit_getppid" {
                let ret = format!("{:#x}", parent);
                assert_eq!(v["body"], ret, "{l}");
            }
        }
    }
    // The calls in the loop and the one before it.
    let want: BTreeMap<String, usize> = [
        ("sys_enter_getppid", CALLS + 1),
        ("sys_exit_getppid", CALLS + 1),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_string(), n))
    .collect();
    assert_eq!(by_name, want);
}

/// A damaged trace-cmd trace.dat (its header, then garbage) is not misread as text: glk
/// trace and glk analyze read it themselves and name the file and what is wrong; nothing
/// is printed as events.
#[test]
fn a_damaged_trace_dat_is_named_not_misread() {
    let scratch = tmp("dat");
    let dat = scratch.path().join("trace.dat");
    let mut bytes = b"\x17\x08\x44tracing6\0\0\0\x08\0\0\0".to_vec();
    bytes.extend_from_slice(b"\0\0CPU: 0\nentries: 5\noverrun: 0\n\0\x01\x02");
    std::fs::write(&dat, &bytes).unwrap();
    for args in [&["trace", "--summary", "-i"][..], &["analyze"][..]] {
        let o = glk().args(args).arg(&dat).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{}: a trace.dat, damaged", dat.display())),
            "{args:?}: {err}"
        );
        // Named once: the reader leaves that to whoever names every error of the input.
        let named = err.matches(&dat.display().to_string()).count();
        assert_eq!(named, 1, "{args:?}: {err}");
        assert!(
            o.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

#[test]
fn live_duration_filter_and_missing_gfs2() {
    let Some(_tracing) = common::live_tracing("live_duration_filter_and_missing_gfs2") else {
        return;
    };
    let scratch = tmp("filter");
    let dir = scratch.path();
    let out = dir.join("exec.jsonl");
    // Start a process with a known name while tracing exec events filtered to it.
    let o = {
        let child = glk()
            .args([
                "trace",
                "--events",
                "sched:sched_process_exec",
                "--filter",
                "filename ~ \"*/true\"",
                "--duration",
                "1.5",
                "-o",
                out.to_str().unwrap(),
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        Command::new("true").status().unwrap();
        Command::new("ls").arg(Path::new("/")).output().unwrap();
        child.wait_with_output().unwrap()
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let bodies: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The clock markers glk writes at start and end (not filtered: ftrace's own event),
    // each with its wall clock, and the bound read after the write, a little later.
    let (marks, events): (Vec<_>, Vec<_>) = bodies
        .iter()
        .partition(|b| b["event"] == "tracing_mark_write");
    let labels: Vec<&str> = marks
        .iter()
        .map(|m| m["body"].as_str().unwrap().split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(
        labels,
        ["start", "start.bound", "end", "end.bound"],
        "{text}"
    );
    let wall = |m: &serde_json::Value| -> f64 {
        let body = m["body"].as_str().unwrap();
        body.split(' ')
            .find_map(|w| w.strip_prefix("wall="))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(wall(marks[0]) <= wall(marks[1]) && wall(marks[1]) < wall(marks[2]));
    let span = (marks[2]["ts_ns"].as_u64().unwrap() - marks[0]["ts_ns"].as_u64().unwrap()) as f64;
    assert!(
        (wall(marks[2]) - wall(marks[0]) - span / 1e9).abs() < 0.1,
        "{text}"
    );
    assert!(marks[0]["body"].as_str().unwrap().contains(" clock="));
    assert!(!events.is_empty());
    assert!(
        events
            .iter()
            .all(|b| b["body"].as_str().unwrap().contains("/true")),
        "{text}"
    );
    // gfs2 events: available only where the gfs2 module is loaded.
    let has_gfs2 = common::tracefs_dir().is_some_and(|t| t.join("events/gfs2").is_dir());
    let o = glk().args(["trace", "--duration", "0.2"]).output().unwrap();
    if !has_gfs2 {
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("gfs2 events not available"));
    }
}

/// A `glk trace` killed with -9 cannot clean up: its private instance stays, recording. The
/// next `glk trace` removes it and says so.
#[test]
fn kill_9_then_the_next_run_removes_the_stale_instance() {
    let Some(_tracing) =
        common::live_tracing("kill_9_then_the_next_run_removes_the_stale_instance")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut child = glk()
        .args(["trace", "--events", "sched:sched_process_exec", "-o"])
        .arg(dir.path().join("killed.jsonl"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let name = format!("glk-{}", child.id());
    let inst = instance_recording(
        &mut child,
        &name,
        Some("events/sched/sched_process_exec/enable"),
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        inst.exists(),
        "a killed glk cannot have removed its instance"
    );
    // Its output never appeared under its name: only a hidden temporary file is left.
    assert!(!dir.path().join("killed.jsonl").exists());
    let o = glk()
        .args([
            "trace",
            "--events",
            "sched:sched_process_exec",
            "--duration",
            "0.3",
            "-o",
        ])
        .arg(dir.path().join("next.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("removed tracefs instance {name}")),
        "{err}"
    );
    assert!(!inst.exists(), "stale instance left behind");
}

/// ftrace's own events have no switch: asked for, they are recorded (trace_marker lines).
#[test]
fn ftrace_print_is_always_recorded() {
    let Some(_tracing) = common::live_tracing("ftrace_print_is_always_recorded") else {
        return;
    };
    let (_dir, out) = testdata::scratch_file("print.txt");
    let name = format!("glk-clitest-print-{}", std::process::id());
    let mut child = glk()
        .args([
            "trace",
            "--events",
            "ftrace:print",
            "--instance",
            &name,
            "--duration",
            "3",
            "-o",
        ])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let inst = instance_recording(&mut child, &name, None);
    std::fs::write(inst.join("trace_marker"), "glk-print-marker").unwrap();
    let err = wait_ok(&mut child);
    assert!(err.contains("ftrace:print always recorded"), "{err}");
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("glk-print-marker"));
}

/// A filter the kernel rejects is said once, with the kernel's caret line and without the
/// error log's timestamp, however many events it was set on.
#[test]
fn a_bad_filter_is_said_once() {
    let Some(_tracing) = common::live_tracing("a_bad_filter_is_said_once") else {
        return;
    };
    let o = glk()
        .args([
            "trace",
            "--events",
            "sched:*",
            "--filter",
            "nosuchfield == 1",
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.matches("rejected the filter").count(), 1, "{err}");
    assert!(err.contains("events)") && err.contains('^'), "{err}");
    assert!(!err.contains("] event filter"), "timestamp kept: {err}");
}

/// The two live readers keep the same events: one `glk trace --reader raw` (ring-buffer
/// pages, lines written by glk) and one `--reader text` (the kernel's `trace_pipe`), side
/// by side with their own instances, see this thread's system calls alike, with the same
/// bodies. The comparison runs between two marker calls made once both record, so what
/// one reader saw while the other started or stopped does not count.
#[test]
fn live_raw_and_text_readers_agree() {
    let Some(_tracing) = common::live_tracing("live_raw_and_text_readers_agree") else {
        return;
    };
    let scratch = tmp("readers");
    // SAFETY: gettid(2) has no preconditions.
    let me = unsafe { libc::gettid() };
    let filter = format!("common_pid == {me}");
    let mounted_before = common::tracefs_dir();
    let start = |reader: &str| {
        let out = scratch.path().join(format!("{reader}.jsonl"));
        let child = glk()
            .args([
                "trace",
                "--events",
                "raw_syscalls:sys_enter,raw_syscalls:sys_exit",
            ])
            .args(["--filter", &filter, "--reader", reader])
            // Stopped by SIGINT below; the duration only bounds a run this test left.
            .args(["--duration", "60", "-o", out.to_str().unwrap()])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        (child, out)
    };
    let (mut raw, raw_out) = start("raw");
    let (mut text, text_out) = start("text");
    for c in [&mut raw, &mut text] {
        let name = format!("glk-{}", c.id());
        instance_recording(c, &name, Some("events/raw_syscalls/sys_exit/filter"));
    }
    // On one CPU from the first marker to the readers' end: each reader orders the CPUs'
    // events by their clocks, which need not agree, so a thread that moved could have a
    // call after the last marker ordered before it.
    let pinned = OnThisCpu::new();
    marker_call(1);
    for i in 0..3000 {
        // SAFETY: getppid(2) has no preconditions.
        unsafe { libc::getppid() };
        if i % 100 == 0 {
            let _ = std::fs::metadata(format!("/nonexistent/{i}"));
        }
    }
    marker_call(2);
    // Text ends first, then raw.
    let stop = |c: &mut std::process::Child| {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        wait_ok(c)
    };
    let text_err = stop(&mut text);
    let raw_err = stop(&mut raw);
    drop(pinned);
    assert!(!raw_err.contains("warning"), "{raw_err}");
    two_at_once_leave_tracefs_as_found(mounted_before, &text_err);
    let (mut r, mut t) = (
        between_markers(&raw_out, me),
        between_markers(&text_out, me),
    );
    assert!(r.len() > 6000, "raw: {} events\n{raw_err}", r.len());
    // The raw reader names this live thread as it is named now; trace_pipe may print
    // `<...>` (or a reused pid's old name) until the kernel saves the name.
    let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
    assert!(
        r.iter().all(|(_, _, c)| c == comm.trim()),
        "{:?}",
        r.first()
    );
    for e in r.iter_mut().chain(t.iter_mut()) {
        e.2.clear();
    }
    assert_same_in_order(&r, &t, &format!("raw:\n{raw_err}\ntext:\n{text_err}"));
}

/// `--reader raw` on an instance glk did not make is refused.
#[test]
fn raw_reader_refuses_a_foreign_instance() {
    let Some(_tracing) = common::live_tracing("raw_reader_refuses_a_foreign_instance") else {
        return;
    };
    let o = glk()
        .args([
            "trace",
            "--events",
            "sched:sched_process_exec",
            "--reader",
            "raw",
        ])
        .args([
            "--instance",
            &format!("glk-clitest-raw-{}", std::process::id()),
        ])
        .args(["--duration", "0.1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--reader raw: --instance"), "{err}");
}
