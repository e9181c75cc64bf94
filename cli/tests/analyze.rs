//! `glk analyze` on the real two-node capture and the public rename deadlock, checked
//! against answers computed here from the raw text (and the fixtures' README).

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{elements, glock_of_gfs2 as glock_of, str_of};

fn analyze(args: &[&str]) -> serde_json::Value {
    common::glk_json(&[&["analyze"], args, &["--json"]].concat())
}

fn trace(node: &str) -> String {
    common::fixture_text(&format!("real/dlm2-6.1/{node}/trace_pipe.txt.xz"))
}

fn ts(line: &str) -> u64 {
    let t = line
        .split("]")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .find(|w| w.ends_with(':'))
        .unwrap();
    (t.trim_end_matches(':').parse::<f64>().unwrap() * 1e6).round() as u64 * 1000
}

#[test]
fn dlm_capture_findings() {
    let v = analyze(&[
        testdata::path("real/dlm2-6.1").to_str().unwrap(),
        "--limit",
        "0",
    ]);
    let (t1, t2) = (trace("n1"), trace("n2"));
    phase1_contention(&v, &t1, &t2);
    phase2_flock_wait(&v);
    storms_and_slow_dlm(&v, &t1, &t2);
}

/// Phase 1: the shared directory, contended from both nodes, counted again from the
/// traces.
fn phase1_contention(v: &serde_json::Value, t1: &str, t2: &str) {
    // Remote demotes and state changes per glock, both nodes.
    let mut remote: BTreeMap<String, u64> = BTreeMap::new();
    let mut changes: BTreeMap<String, u64> = BTreeMap::new();
    let mut promotes: BTreeMap<String, u64> = BTreeMap::new();
    for l in t1.lines().chain(t2.lines()) {
        if l.contains("gfs2_demote_rq:") && l.ends_with(" remote") {
            *remote.entry(glock_of(l)).or_default() += 1;
        } else if l.contains("gfs2_glock_state_change:") {
            *changes.entry(glock_of(l)).or_default() += 1;
        } else if l.contains("gfs2_promote:") {
            *promotes.entry(glock_of(l)).or_default() += 1;
        }
    }
    let contended = v["contended"].as_array().unwrap();
    let top = remote
        .iter()
        .max_by_key(|(g, n)| (**n, std::cmp::Reverse((*g).clone())))
        .unwrap();
    assert_eq!(
        contended[0]["glock"],
        top.0.as_str(),
        "the most demoted glock ranks first"
    );
    // The phase-1 shared directory: a directory inode, contended from both nodes.
    assert_eq!(contended[0]["type"], "inode");
    assert_eq!(contended[0]["nodes"], serde_json::json!(["n1", "n2"]));
    assert!(contended[0]["object"].as_str().unwrap().starts_with("dir"));
    let mut last = u64::MAX;
    for c in contended {
        let g = c["glock"].as_str().unwrap();
        let r = c["remote_demotes"].as_u64().unwrap();
        assert_eq!(r, remote.get(g).copied().unwrap_or(0), "{g}");
        assert_eq!(
            c["state_changes"].as_u64().unwrap(),
            changes.get(g).copied().unwrap_or(0),
            "{g}"
        );
        assert!(r <= last);
        last = r;
        for k in ["max_waiters", "wait_ns_total"] {
            assert!(c.get(k).is_some());
        }
    }
    // Every promote of a queued holder is one wait.
    let hw = v["hold_wait"].as_array().unwrap();
    let dir = hw.iter().find(|h| h["glock"] == *top.0).unwrap();
    assert_eq!(dir["wait"]["count"].as_u64().unwrap(), promotes[top.0]);
}

/// Phase 2: n1 holds the flock, n2 waits; the pids come from the DLM dumps.
fn phase2_flock_wait(v: &serde_json::Value) {
    let cross = v["cross_node"].as_array().unwrap();
    assert_eq!(cross.len(), 1, "{cross:?}");
    let c = &cross[0];
    assert_eq!(c["glock"], "6/60af5");
    assert_eq!(
        (c["waiter_node"].as_str(), c["holder_node"].as_str()),
        (Some("n2"), Some("n1"))
    );
    let dump = std::fs::read_to_string(testdata::path("real/dlm2-6.1/n1/dlm_locks.4")).unwrap();
    let flock: Vec<Vec<&str>> = dump
        .lines()
        .filter(|l| l.ends_with("\"       6           60af5\""))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let granted = flock.iter().find(|f| f[7] == "2").unwrap();
    let waiting = flock.iter().find(|f| f[7] == "1").unwrap();
    assert_eq!(c["holder_pid"].as_i64().unwrap().to_string(), granted[3]);
    assert_eq!(c["waiter_pid"].as_i64().unwrap().to_string(), waiting[3]);
    // Both are GL_NOPID holders (`p:0 [(none)]`): the DLM dump is the source, and its
    // lines are cited (those of the first snapshot the wait was seen in, .3).
    assert_eq!(
        (c["waiter_source"].as_str(), c["holder_source"].as_str()),
        (Some("dlm"), Some("dlm"))
    );
    let dump3 = std::fs::read_to_string(testdata::path("real/dlm2-6.1/n1/dlm_locks.3")).unwrap();
    // The same lock (by its id, the first field) in snapshot 3.
    let line_of = |f: &Vec<&str>| {
        1 + dump3
            .lines()
            .position(|l| l.split_whitespace().next() == Some(f[0]))
            .unwrap()
    };
    let cites: Vec<&str> = elements(&c["cites"]).map(|x| x.as_str().unwrap()).collect();
    for f in [granted, waiting] {
        let cite = format!("n1/dlm_locks.3:{}", line_of(f));
        assert!(cites.contains(&cite.as_str()), "{cite} not in {cites:?}");
    }
    // Seen in the two phase-2 snapshots (.3 and .4).
    assert_eq!(c["seen_in_snapshots"], 2);
    assert_eq!(c["snapshots"], serde_json::json!([3, 4]));
    // The wait ended: slow, not stuck; part 7 names the waiter as part 5 does.
    let s = &v["stuck_and_leaks"];
    assert!(s["stuck"].as_array().unwrap().is_empty());
    let slow = elements(&s["progressed"])
        .find(|w| w["glock"] == "6/60af5" && w["node"] == "n2")
        .unwrap();
    assert_eq!(slow["pid"], c["waiter_pid"]);
    assert_eq!(slow["pid_source"], "dlm");
    assert!(v["cycles"].as_array().unwrap().is_empty());
}

/// Demote storms, counted again from the traces, and the slowest DLM round trip.
fn storms_and_slow_dlm(v: &serde_json::Value, t1: &str, t2: &str) {
    // Demote storms: any 1 s window with >= 5 remote demotes of one glock on one node.
    let mut per: BTreeMap<(String, &str), Vec<u64>> = BTreeMap::new();
    for (node, t) in [("n1", &t1), ("n2", &t2)] {
        for l in t
            .lines()
            .filter(|l| l.contains("gfs2_demote_rq:") && l.ends_with(" remote"))
        {
            per.entry((glock_of(l), node)).or_default().push(ts(l));
        }
    }
    let mut want: BTreeSet<(String, String)> = BTreeSet::new();
    for ((g, n), mut v) in per {
        v.sort_unstable();
        if (0..v.len()).any(|i| {
            v[i..]
                .iter()
                .take_while(|t| **t - v[i] < 1_000_000_000)
                .count()
                >= 5
        }) {
            want.insert((g, n.to_string()));
        }
    }
    let got: BTreeSet<(String, String)> = elements(&v["demote_storms"])
        .map(|s| (str_of(s, "glock"), str_of(s, "node")))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    for s in v["demote_storms"].as_array().unwrap() {
        for k in ["glock", "start_ns", "end_ns", "demotes", "nodes"] {
            assert!(s.get(k).is_some());
        }
        assert!(s["demotes"].as_u64().unwrap() >= 5);
    }
    // Slow DLM: the flock's 25 s wait is the slowest round trip of the capture.
    let slow = &v["slow_dlm"][0];
    assert_eq!(slow["glock"], "6/60af5");
    let max_tdiff = t1
        .lines()
        .chain(t2.lines())
        .filter(|l| l.contains("gfs2_glock_lock_time:"))
        .map(|l| {
            l.split("tdiff:")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .max()
        .unwrap();
    assert_eq!(slow["max_ns"].as_u64().unwrap(), max_tdiff);
    for k in ["glock", "count", "p50_ns", "p99_ns", "max_ns"] {
        assert!(slow.get(k).is_some());
    }
}

#[test]
fn rename_deadlock_cycle_is_found() {
    let d = testdata::path("public/cluster-devel-2019-rename-deadlock");
    let v = analyze(&[
        d.join("deadlock-host018.glocks").to_str().unwrap(),
        d.join("deadlock-host019.glocks").to_str().unwrap(),
    ]);
    let cycles = v["cycles"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let steps = cycles[0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    // The mail: host-018 holds root (2/3347) and waits for dir6 (2/3348); host-019 holds
    // dir6 and waits for root. Both processes are pid 6414.
    let by_node: BTreeMap<&str, &str> = steps
        .iter()
        .map(|s| {
            (
                s["node"].as_str().unwrap(),
                s["waits_for"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(by_node["deadlock-host018"], "2/3348");
    assert_eq!(by_node["deadlock-host019"], "2/3347");
    assert!(steps.iter().all(|s| s["pid"] == 6414));
    // Both pids come from the glocks files themselves.
    assert_eq!(cycles[0]["confidence"], "certain");
    assert!(steps
        .iter()
        .all(|s| !s["evidence"].as_array().unwrap().is_empty()));
    assert_eq!(v["cross_node"].as_array().unwrap().len(), 2);
}

/// Ground truth of a lab node, from its raw files: the flock glock of each file, the
/// process `/proc/locks` shows holding each flock, and the task `ps` shows waiting in
/// `gfs2_glock_wait` with its ancestors.
struct Truth {
    /// File name → flock glock id.
    glock: BTreeMap<String, String>,
    /// Flock glock → holder pid (from `locks.0`).
    flock_holder: BTreeMap<String, i64>,
    /// The waiting task and its ancestors, from `ps`.
    waiter: Option<(i64, Vec<i64>)>,
}

fn truth(fixture: &str, capture: &str, node: &str) -> Truth {
    let dir = testdata::path(&format!("real/{fixture}/{capture}/{node}"));
    let inodes = common::inodes(&testdata::path(&format!(
        "real/{fixture}/inodes-{node}.txt"
    )));
    let glock: BTreeMap<String, String> = ["A", "B"]
        .map(|file| (file.to_string(), format!("6/{:x}", inodes[file])))
        .into();
    let mut flock_holder = BTreeMap::new();
    for l in std::fs::read_to_string(dir.join("locks.0"))
        .unwrap()
        .lines()
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f[1] == "FLOCK" {
            let ino: u64 = f[5].rsplit(':').next().unwrap().parse().unwrap();
            flock_holder.insert(format!("6/{ino:x}"), f[4].parse().unwrap());
        }
    }
    // procs.0: tid tgid ppid ... state wchan comm.
    let procs = std::fs::read_to_string(dir.join("procs.0")).unwrap();
    let rows: Vec<Vec<&str>> = procs
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('\t'))
        .map(|l| l.split('\t').collect())
        .collect();
    let parent = |pid: i64| {
        rows.iter()
            .find(|r| r[0].parse::<i64>().unwrap() == pid)
            .map(|r| r[2].parse::<i64>().unwrap())
    };
    let waiter = rows
        .iter()
        .find(|r| r[5] == "D" && r[6] == "gfs2_glock_wait")
        .map(|r| {
            let pid: i64 = r[0].parse().unwrap();
            let mut anc = Vec::new();
            let mut at = parent(pid);
            while let Some(p) = at.filter(|p| *p > 1) {
                anc.push(p);
                at = parent(p);
            }
            (pid, anc)
        });
    Truth {
        glock,
        flock_holder,
        waiter,
    }
}

/// The flock fixtures, one per kernel.
const FLOCK_FIXTURES: [&str; 2] = ["flock-deadlock-6.12", "flock-deadlock-6.1"];

/// `glk analyze` of a flock fixture's `case` (`deadlock`, `wait`), and each node's truth.
fn flock_case(fixture: &str, case: &str) -> (serde_json::Value, Truth, Truth) {
    let cap = testdata::path(&format!("real/{fixture}/{case}"));
    let v = analyze(&[cap.to_str().unwrap()]);
    (v, truth(fixture, case, "n1"), truth(fixture, case, "n2"))
}

#[test]
fn flock_deadlock_across_nodes_is_found_between_owners() {
    FLOCK_FIXTURES.into_iter().for_each(flock_deadlock);
}

fn flock_deadlock(fixture: &str) {
    let (v, t1, t2) = flock_case(fixture, "deadlock");
    let (a, b) = (t1.glock["A"].clone(), t1.glock["B"].clone());
    let (w1, anc1) = t1.waiter.clone().expect("a waiter on n1");
    let (w2, anc2) = t2.waiter.clone().expect("a waiter on n2");
    // The raw files tell the story: n1's outer flock holds A, its grandchild waits; n2's
    // outer flock holds B, its grandchild waits.
    assert!(anc1.contains(&t1.flock_holder[&a]));
    assert!(anc2.contains(&t2.flock_holder[&b]));

    // Every cross-node row names the waiting grandchild and the holding outer flock.
    let cross = v["cross_node"].as_array().unwrap();
    assert_eq!(cross.len(), 2, "{cross:?}");
    for (glock, waiter_node, waiter, holder_node, holder) in [
        (&b, "n1", w1, "n2", t2.flock_holder[&b]),
        (&a, "n2", w2, "n1", t1.flock_holder[&a]),
    ] {
        let c = cross.iter().find(|c| c["glock"] == *glock).unwrap();
        assert_eq!(c["waiter_node"], waiter_node);
        assert_eq!(c["waiter_pid"], waiter, "{c}");
        assert_eq!(c["waiter_comm"], "flock");
        assert_eq!(c["holder_node"], holder_node);
        assert_eq!(c["holder_pid"], holder, "{c}");
        assert_eq!(c["holder_source"], "locks");
        assert_eq!(c["seen_in_snapshots"], 3);
        let cites = c["cites"].as_array().unwrap();
        assert!(
            cites
                .iter()
                .any(|x| x == &format!("{holder_node}/locks.0:1")),
            "{c}"
        );
    }

    // One cycle, between owners: each waiter together with the ancestor holding its lock.
    let cycles = v["cycles"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let c = &cycles[0];
    assert_eq!(c["confidence"], "likely");
    assert_eq!(c["snapshots"], serde_json::json!([0, 1, 2]));
    let steps: BTreeMap<&str, (&serde_json::Value, &str)> = elements(&c["steps"])
        .map(|s| {
            (
                s["node"].as_str().unwrap(),
                (&s["pid"], s["waits_for"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(steps["n1"], (&serde_json::json!(w1), b.as_str()));
    assert_eq!(steps["n2"], (&serde_json::json!(w2), a.as_str()));
    let owner = c["steps"][0]["owner"].as_str().unwrap();
    assert!(owner.contains("its ancestor, holds"), "{owner}");

    // Part 7 names the waiters still waiting at the end (stuck or not yet) as part 5 does.
    let s = &v["stuck_and_leaks"];
    let pids: BTreeSet<i64> = elements(&s["stuck"])
        .chain(elements(&s["waiting"]))
        .map(|w| w["pid"].as_i64().unwrap())
        .collect();
    assert_eq!(pids, BTreeSet::from([w1, w2]));
}

#[test]
fn a_plain_flock_wait_is_no_deadlock() {
    FLOCK_FIXTURES.into_iter().for_each(plain_wait);
}

fn plain_wait(fixture: &str) {
    let (v, t1, t2) = flock_case(fixture, "wait");
    let a = &t1.glock["A"];
    let (w2, _) = t2.waiter.clone().expect("a waiter on n2");
    assert!(
        v["cycles"].as_array().unwrap().is_empty(),
        "{}",
        v["cycles"]
    );
    let cross = v["cross_node"].as_array().unwrap();
    assert_eq!(cross.len(), 1, "{cross:?}");
    let c = &cross[0];
    assert_eq!(c["glock"], *a);
    assert_eq!(
        (&c["waiter_node"], &c["waiter_pid"]),
        (&serde_json::json!("n2"), &serde_json::json!(w2))
    );
    assert_eq!(
        (&c["holder_node"], &c["holder_pid"]),
        (
            &serde_json::json!("n1"),
            &serde_json::json!(t1.flock_holder[a])
        )
    );
}

/// The kernel's own tracing directory, given by mistake, is no capture: glk never reads
/// its `trace_pipe` as a saved trace (the read would wait for events forever, and take
/// them from whoever traces), and says at once that there is nothing to read; nor when
/// `trace_pipe` itself (or a CPU's) is given to `analyze`, to `stats --trace` or to
/// `trace --input`, which read saved traces too.
#[test]
fn the_live_tracing_directory_is_not_read_as_a_capture() {
    let test = "the_live_tracing_directory_is_not_read_as_a_capture";
    let Some(_tracing) = common::live_tracing(test) else {
        return;
    };
    // Mounted for the test where the machine has not mounted it (as root, which
    // live_tracing ensures).
    let held = common::hold_tracefs();
    let tracefs = held.dir.clone();
    let err = fails_at_once(&["analyze"], &tracefs);
    assert!(err.contains("no capture here"), "{err}");
    let raw = tracefs.join("per_cpu/cpu0/trace_pipe_raw");
    for (args, path) in [
        (&["analyze"][..], tracefs.join("trace_pipe")),
        (&["stats", "--trace"], tracefs.join("trace_pipe")),
        (&["trace", "--input"], tracefs.join("trace_pipe")),
        (&["trace", "--summary", "--input"], raw),
    ] {
        let err = fails_at_once(args, &path);
        assert!(err.contains("no saved trace"), "{args:?}: {err}");
    }
}

/// `/proc` and `/sys` (or a directory below them) given by mistake are the kernel's own
/// files: said at once, never searched (`/sys/kernel/slab/*/trace` would pass for traces,
/// `/proc/locks` for a capture's `locks`), by analyze and by top alike.
#[test]
fn the_kernel_s_own_directories_are_no_capture() {
    use bundle::live::KernelFs;
    for (dir, fs) in [("/proc", KernelFs::Proc), ("/sys/kernel", KernelFs::Sysfs)] {
        let dir = std::path::Path::new(dir);
        if KernelFs::of(dir) != Some(fs) {
            testdata::skip(
                "the_kernel_s_own_directories_are_no_capture",
                &format!("{} is not {} here", dir.display(), fs.name()),
            );
            continue;
        }
        for args in [&["analyze"][..], &["top", "--once"]] {
            let err = fails_at_once(args, dir);
            let said = format!("the kernel's own {} files, not a capture", fs.name());
            assert!(err.contains(&said), "{args:?} {}: {err}", dir.display());
        }
    }
}

/// `glk ARGS PATH`, which must fail within a minute: its standard error.
fn fails_at_once(args: &[&str], path: &std::path::Path) -> String {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(args)
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > until {
            child.kill().unwrap();
            panic!("glk {args:?} {} still reads after 60 s", path.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A capture whose files were compressed one by one before they were sent (`zstd` on
/// each, as `xz -r` or `gzip -r` would do): every command reads it as it was, its node
/// files (`dlm_controld.log`, which says the node id) as well as its dumps. Only the
/// cited file names differ, by their `.zst`.
#[test]
fn a_capture_compressed_file_by_file_reads_as_it_was() {
    let fixture = testdata::path("real/dlm2-6.1");
    let dir = tempfile::tempdir().unwrap();
    for node in ["n1", "n2"] {
        let to = dir.path().join(node);
        std::fs::create_dir(&to).unwrap();
        for e in std::fs::read_dir(fixture.join(node)).unwrap().flatten() {
            let name = e.file_name().into_string().unwrap();
            let data = std::fs::read(e.path()).unwrap();
            if name.ends_with(".xz") {
                std::fs::write(to.join(&name), data).unwrap();
            } else {
                let packed = zstd::encode_all(&data[..], 3).unwrap();
                std::fs::write(to.join(format!("{name}.zst")), packed).unwrap();
            }
        }
    }
    let out = |args: &[&str], dir: &std::path::Path, files: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_glk"));
        c.args(args);
        if files.is_empty() {
            c.arg(dir);
        }
        for f in files {
            let plain = dir.join(f);
            c.arg(if plain.exists() {
                plain
            } else {
                dir.join(format!("{f}.zst"))
            });
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        let text = text.replace(&dir.display().to_string(), "DIR");
        text.replace(".zst", "")
    };
    for args in [
        &["analyze", "--json"][..],
        &["doctor", "--json"],
        &["stats", "--json"],
    ] {
        let (was, is) = (out(args, &fixture, &[]), out(args, dir.path(), &[]));
        assert!(was.len() > 1000, "{args:?}: {was:.300}");
        assert!(is == was, "{args:?}: {is:.300}");
    }
    // Counter increases between two snapshots, over the time between them (time.N).
    let delta = ["n1/glstats.4", "n1/glstats.5"];
    let args = ["stats", "--json", "--delta"];
    let was = out(&args, &fixture, &delta);
    // time.5 - time.4 of n1: 1795323790.86 - 1795323778.20.
    assert!(was.contains("\"seconds\":12.66"), "{was:.300}");
    assert!(out(&args, dir.path(), &delta) == was, "stats --delta");
    // top (its glocks and summary; the time it was taken differs): the directory, and
    // each node's glocks file given by name, read with the files beside it, where n2's
    // DLM wait is joined with n1's dump by the node ids that dlm_controld.log says.
    let top = |dir: &std::path::Path, files: &[&str]| {
        let text = out(&["top", "--once", "--json", "--held"], dir, files);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        format!("{} {}", v["glocks"], v["summary"])
    };
    for files in [&[][..], &["n1/glocks.4", "n2/glocks.4"]] {
        let was = top(&fixture, files);
        assert!(was.len() > 1000, "{files:?}: {was:.300}");
        assert!(top(dir.path(), files) == was, "{files:?}");
    }
    let was = top(&fixture, &["n1/glocks.4", "n2/glocks.4"]);
    assert!(was.contains("\"held_elsewhere\""), "{was:.300}");
}

/// A trace that names no filesystem but holds the gfs2 events of two (a node with two
/// GFS2 filesystems, traced whole) is refused by every command that analyses it, naming
/// the node, the file and both devices: glock numbers repeat between filesystems (here
/// the two hot files are both glock 2/1231), so its glocks cannot be told apart. With the
/// node's capture, whose mount table names each filesystem's device, `--fs` reads one.
#[test]
fn a_trace_of_two_filesystems_alone_is_refused() {
    let dir = "real/two-filesystems-6.12";
    let trace = testdata::path(&format!("{dir}/n1/lab_data/n1/trace_pipe.txt.xz"));
    for cmd in [
        &["analyze"][..],
        &["doctor"],
        &["report", "-o", "/dev/null"],
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
            .args(cmd)
            .arg(&trace)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(o.stdout.is_empty(), "{cmd:?}");
        for want in [
            "n1: ",
            &trace.display().to_string(),
            "more than one GFS2 filesystem (devices 254,2 and 254,1, the first two it names)",
        ] {
            assert!(err.contains(want), "{cmd:?}: {want}: {err}");
        }
    }
    // Beside its capture, the trace is read for one filesystem: its events of the other
    // device are left out.
    let text = testdata::text(&format!("{dir}/n1/lab_data/n1/trace_pipe.txt.xz"));
    for (fs, dev) in [("gfs", "254,1"), ("data", "254,2")] {
        let v = common::analyze_fs(fs, &[format!("{dir}/n1")]);
        let replies = text
            .lines()
            .filter(|l| l.contains(&format!("gfs2_glock_lock_time: {dev} ")))
            .count() as u64;
        let counted: u64 = common::elements(&v["slow_dlm_types"])
            .map(|t| common::u64_of(t, "count"))
            .sum();
        assert_eq!(counted, replies, "{fs}");
    }
}

/// A capture without `dlm_tool ls` (it can hang with the cluster) still tells one
/// filesystem's dlm events from the other's: the lockspace id is derived from its name.
#[test]
fn a_lockspace_is_known_by_its_name_without_dlm_tool_ls() {
    let dir = testdata::path("real/two-filesystems-6.12/n1");
    let tmp = tempfile::tempdir().unwrap();
    let mut stripped = 0;
    for fs in ["lab_data", "lab_gfs"] {
        let to = tmp.path().join(fs).join("n1");
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(dir.join(fs).join("n1")).unwrap() {
            let p = e.unwrap().path();
            let mut bytes = std::fs::read(&p).unwrap();
            if p.ends_with("cluster.txt") {
                let text = std::str::from_utf8(&bytes).unwrap();
                let at = text.find("## dlm_tool ls").unwrap();
                bytes.truncate(at);
                stripped += 1;
            }
            std::fs::write(to.join(p.file_name().unwrap()), bytes).unwrap();
        }
    }
    assert_eq!(stripped, 2);
    for fs in ["gfs", "data"] {
        let json = |d: &std::path::Path| {
            let text = common::glk_text(&[
                "analyze".as_ref(),
                "--json".as_ref(),
                "--limit".as_ref(),
                "0".as_ref(),
                "--fs".as_ref(),
                fs.as_ref(),
                d.as_os_str(),
            ]);
            text.replace(&d.display().to_string(), "DIR")
        };
        let (with, without) = (json(&dir), json(tmp.path()));
        let v: serde_json::Value = serde_json::from_str(&with).unwrap();
        let basts: u64 = common::elements(&v["demote_causes"])
            .filter(|c| c["source"] == "dlm_bast")
            .map(|c| common::u64_of(c, "count"))
            .sum();
        assert!(basts > 40, "{fs}: {basts}");
        assert_eq!(with, without, "{fs}");
    }
}
