//! What support collects, read as glk's own captures are (`real/support-6.12` and
//! `real/support-5.10`: one moment of a cross-node flock wait in each tool's layout, on
//! each kernel).

use std::path::Path;
use std::process::Command;

mod common;
use common::{doctor_with_findings, elements, i64_of, str_of};

const GLK: &str = env!("CARGO_BIN_EXE_glk");

/// The file of `dir` whose name ends with `suffix` (each fixture node holds one of a kind).
fn file_ending(dir: &Path, suffix: &str) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("no *{suffix} in {}", dir.display()))
}

/// Copies the files of `from` into `to` (made), but those `skip` says; directories below
/// it are left.
fn copy_dir(from: &Path, to: &Path, skip: impl Fn(&str) -> bool) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_file() && !skip(&e.file_name().to_string_lossy()) {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A copy of a support fixture's glk captures of both nodes (`NODE/capture/NODE`) as one
/// capture of two nodes, to change.
fn glk_captures(fixture: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for n in ["n1", "n2"] {
        let capture = fixture.join(n).join("capture").join(n);
        copy_dir(&capture, &dir.path().join(n), |_| false);
    }
    dir
}

/// The fixtures of one moment of a cross-node flock wait, by kernel.
const SUPPORT: [&str; 2] = ["real/support-6.12", "real/support-5.10"];

/// That wait as the lab's own tools saw it: the flock glock of `A` (its inode, `ls -i`),
/// the waiter on n2 (`waiter.pid`, the job's `$!`) and the holder on n1 (the one `flock`
/// in its `ps`).
struct Truth {
    glock: String,
    waiter: i64,
    holder: i64,
}

impl Truth {
    fn read(fixture: &Path) -> Truth {
        let text = |rel: &str| std::fs::read_to_string(fixture.join(rel)).unwrap();
        let first = |l: &str| -> i64 { l.split_whitespace().next().unwrap().parse().unwrap() };
        let inode = common::inodes(&fixture.join("n1/inodes.txt"))["A"];
        let holders: Vec<i64> = text("n1/ps.txt")
            .lines()
            .filter(|l| l.ends_with(" flock"))
            .map(first)
            .collect();
        assert_eq!(holders.len(), 1, "{}: {holders:?}", fixture.display());
        Truth {
            glock: format!("6/{inode:x}"),
            waiter: text("n2/waiter.pid").trim().parse().unwrap(),
            holder: holders[0],
        }
    }
}

/// `glk analyze --json PATHS`, which must succeed: its JSON and its standard error.
fn analyze_all<P: AsRef<std::ffi::OsStr>>(paths: &[P]) -> (serde_json::Value, String) {
    let o = Command::new(GLK)
        .args(["analyze", "--json"])
        .args(paths)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        serde_json::from_slice(&o.stdout).unwrap(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn analyze(dir: &Path) -> serde_json::Value {
    analyze_all(&[dir]).0
}

/// The nodes of an analysis: name, DLM node id and snapshots read.
fn nodes(v: &serde_json::Value) -> Vec<(String, i64, i64)> {
    elements(&v["nodes"])
        .map(|n| {
            (
                str_of(n, "node"),
                i64_of(n, "nodeid"),
                i64_of(n, "snapshots"),
            )
        })
        .collect()
}

/// The cross-node waits without their citations of DLM dump lines (the two layouts number
/// the same lock's line differently).
fn waits(v: &serde_json::Value) -> Vec<serde_json::Value> {
    elements(&v["cross_node"])
        .map(|w| {
            let mut w = w.clone();
            let cites: Vec<serde_json::Value> = elements(&w["cites"])
                .filter(|c| !c.as_str().unwrap().contains("/dlm_locks."))
                .cloned()
                .collect();
            w["cites"] = cites.into();
            w
        })
        .collect()
}

/// `dlm_tool lockdebug -svw` text in place of the debugfs DLM dumps of glk's own capture
/// (as sos reports and gfs2_lockcapture keep them; n1's has one of dlm_tool's complaints in
/// the middle of a lock line): the same cross-node wait, holder and waiter, and the same
/// DLM waits; its ages are lower bounds (the text has no "now").
#[test]
fn lockdebug_text_is_read_as_the_dlm_dump() {
    for fixture in SUPPORT.map(testdata::path) {
        lockdebug_text_is_read_as_the_dlm_dump_in(&fixture);
    }
}

/// [`lockdebug_text_is_read_as_the_dlm_dump`] on one fixture.
fn lockdebug_text_is_read_as_the_dlm_dump_in(fixture: &Path) {
    let truth = Truth::read(fixture);
    let dir = glk_captures(fixture);
    let debugfs = analyze(dir.path());
    for n in ["n1", "n2"] {
        for i in 0..2 {
            std::fs::copy(
                fixture.join(n).join("lockdebug-svw.txt"),
                dir.path().join(n).join(format!("dlm_locks.{i}")),
            )
            .unwrap();
        }
    }
    let lockdebug = analyze(dir.path());
    assert_eq!(lockdebug["errors"]["count"], 0);
    let w = waits(&lockdebug);
    assert_eq!(w, waits(&debugfs));
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(
        (&w[0]["glock"], &w[0]["holder_pid"], &w[0]["holder_node"]),
        (
            &truth.glock.as_str().into(),
            &truth.holder.into(),
            &"n1".into()
        )
    );
    let key = |v: &serde_json::Value| -> Vec<(String, String, i64, i64)> {
        let mut k: Vec<_> = elements(&v["stuck_and_leaks"]["dlm_waits"])
            .map(|d| {
                (
                    str_of(d, "node"),
                    str_of(d, "glock"),
                    i64_of(d, "pid"),
                    i64_of(d, "owner_nodeid"),
                )
            })
            .collect();
        k.sort();
        k
    };
    assert_eq!(key(&lockdebug), key(&debugfs));
    assert_eq!(key(&debugfs).len(), 2);
    // A lockdebug text given alone is recognised as a DLM dump.
    let o = Command::new(GLK)
        .args(["analyze", "--json"])
        .arg(fixture.join("n2/lockdebug-svw.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // As many locks as the debugfs dump of the same moment has rows below its header.
    let table = std::fs::read_to_string(fixture.join("n2/dlm_gfs_locks.txt")).unwrap();
    assert_eq!(v["input"]["dlm_lock_rows"], table.lines().count() - 1);
}

/// Two sos reports (Debian 12's sos 4.0, `-o gfs2,dlm,process` with both lock dump
/// options), given as the tarballs sos wrote: each is one node, named and numbered as the
/// cluster knows it, and the cross-node wait is found from their DLM dumps alone (the
/// waiter on n2, the holder on n1, the flock's glock); what they lack is said once per
/// report, naming the tarball and the option that would have collected it.
#[test]
fn sos_reports_are_nodes() {
    for fixture in SUPPORT.map(testdata::path) {
        let truth = Truth::read(&fixture);
        let tarball = |n: &str| file_ending(&fixture.join(n), ".tar.gz");
        let (t1, t2) = (tarball("n1"), tarball("n2"));
        let (v, err) = analyze_all(&[&t1, &t2]);
        assert_eq!(nodes(&v), [("n1".into(), 1, 1), ("n2".into(), 2, 1)]);
        let w = &v["cross_node"];
        assert_eq!(w.as_array().unwrap().len(), 1, "{w}");
        assert_eq!(
            (&w[0]["glock"], &w[0]["waiter_node"], &w[0]["holder_node"]),
            (&truth.glock.as_str().into(), &"n2".into(), &"n1".into())
        );
        assert_eq!(w[0]["waiter_pid"], truth.waiter);
        assert_eq!(w[0]["holder_pid"], truth.holder);
        for t in [&t1, &t2] {
            let lack = format!("(sos report {}): no GFS2 glocks dump", t.display());
            assert_eq!(err.matches(&lack).count(), 1, "{err}");
        }
        assert_eq!(err.matches("-k gfs2.lockdump=on").count(), 2, "{err}");
        assert!(!err.contains("no DLM lock dump"), "{err}");
    }
}

/// gfs2_lockcapture's tarballs (`.tar.bz2`, one run each): each node named and numbered
/// from its `hostinformation.txt`, its glocks and DLM dumps read as a snapshot, and the same
/// cross-node wait found, now with the call sites from the glocks dumps (6.12's flock
/// waits in `__do_sys_flock`, 5.10's in gfs2's `do_flock`).
#[test]
fn gfs2_lockcapture_tarballs_are_nodes() {
    let callers = ["__do_sys_flock+0x11c/0x1e0", "do_flock+0x1ac/0x200 [gfs2]"];
    for (fixture, caller) in SUPPORT.map(testdata::path).iter().zip(callers) {
        let truth = Truth::read(fixture);
        let tarball = |n: &str| file_ending(&fixture.join(n), ".tar.bz2");
        let (v, err) = analyze_all(&[tarball("n1"), tarball("n2")]);
        assert_eq!(nodes(&v), [("n1".into(), 1, 1), ("n2".into(), 2, 1)]);
        let w = &v["cross_node"];
        assert_eq!(w.as_array().unwrap().len(), 1, "{w}");
        assert_eq!(
            (&w[0]["glock"], &w[0]["waiter_pid"], &w[0]["holder_pid"]),
            (
                &truth.glock.as_str().into(),
                &truth.waiter.into(),
                &truth.holder.into()
            )
        );
        assert_eq!(w[0]["waiter_caller"], caller);
        for n in ["n1", "n2"] {
            let lack = format!(
                "{n} (gfs2_lockcapture {}): no gfs2 or dlm trace",
                tarball(n).display()
            );
            assert_eq!(err.matches(&lack).count(), 1, "{err}");
        }
    }
}

/// `glk trace --summary` of a trace.dat and of glk's own trace of the same moment
/// (`real/trace-dat-6.12`), by node: the same events, event by event.
fn summary(path: &Path) -> String {
    let o = Command::new(GLK)
        .args(["trace", "--summary", "-i"])
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// trace-cmd's trace.dat, read by glk itself (no trace-cmd needed), gives what glk's own
/// trace of the same moment gives: the same events, and in `glk analyze` the same contended
/// glocks, remote demotes, DLM round trips (blocking or not), cross-node waits and cycles.
#[test]
fn trace_dat_gives_what_glk_s_own_trace_gives() {
    let fixture = testdata::path("real/trace-dat-6.12");
    let dir = tempfile::tempdir().unwrap();
    for n in ["n1", "n2"] {
        let own = fixture.join(n).join("capture").join(n);
        let dat = fixture.join(n).join("trace.dat");
        let s = summary(&dat);
        assert!(s.contains("gfs2_glock_lock_time"), "{s}");
        // glk's own trace also holds its wall-clock markers (tracing_mark_write), written
        // into its instance only.
        let mine: String = summary(&own.join("trace_pipe.txt.xz"))
            .lines()
            .filter(|l| !l.starts_with("tracing_mark_write"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(s, mine, "{n}");
        // The capture with trace.dat in place of glk's trace.
        let to = dir.path().join(n);
        copy_dir(&own, &to, |f| f.starts_with("trace_pipe"));
        std::fs::copy(&dat, to.join("trace.dat")).unwrap();
    }
    let ours = analyze(glk_captures(&fixture).path());
    let theirs = analyze(dir.path());
    for k in [
        "slow_dlm",
        "slow_dlm_types",
        "cross_node",
        "cycles",
        "demote_causes",
    ] {
        assert_eq!(ours[k], theirs[k], "{k}");
    }
    let demotes = |v: &serde_json::Value| -> Vec<(String, i64)> {
        elements(&v["contended"])
            .map(|c| (str_of(c, "glock"), i64_of(c, "remote_demotes")))
            .collect()
    };
    assert_eq!(demotes(&ours), demotes(&theirs));
    assert_eq!(demotes(&ours)[0], ("2/21826".to_string(), 104));
}

/// Each node's trace given file by file as trace-cmd names it in every node's directory
/// (`n1/trace.dat n2/trace.dat`, and the `trace-cmd report` text of each): two nodes,
/// named by their directories, and the report text gives what its trace.dat gives (it
/// was read as a glocks dump, and both trace.dat files as one node named `trace`).
#[test]
fn each_node_s_trace_given_file_by_file_is_that_node() {
    let fixture = testdata::path("real/trace-dat-6.12");
    let of = |file: &str| ["n1", "n2"].map(|n| fixture.join(n).join(file));
    let (dat, _) = analyze_all(&of("trace.dat"));
    let (report, _) = analyze_all(&of("report.txt.xz"));
    let names = |v: &serde_json::Value| -> Vec<String> {
        elements(&v["nodes"]).map(|n| str_of(n, "node")).collect()
    };
    assert_eq!(names(&dat), ["n1", "n2"]);
    assert_eq!(names(&report), ["n1", "n2"]);
    for k in [
        "contended",
        "storms",
        "slow_dlm",
        "slow_dlm_types",
        "cross_node",
        "cycles",
        "demote_causes",
    ] {
        assert_eq!(dat[k], report[k], "{k}");
    }
    assert_eq!(
        str_of(elements(&dat["contended"]).next().unwrap(), "glock"),
        "2/21826"
    );
}

/// A folder holding each node's collections side by side (glk's capture, trace-cmd's
/// trace.dat and report, sos's and gfs2_lockcapture's tarballs): glk reads one collection
/// of each node and names every other one it passed over, on standard error and in the
/// JSON of analyze and doctor and the HTML report; a folder one level too high is an
/// error that names what lies below it.
#[test]
fn a_folder_of_every_tool_s_collections_names_what_was_passed_over() {
    let fixture = testdata::path("real/support-deadlock-6.12");
    let (v, err) = analyze_all(&[&fixture]);
    let names: Vec<String> = elements(&v["nodes"]).map(|n| str_of(n, "node")).collect();
    assert_eq!(names, ["n1", "n2"]);
    let passed: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(": passed over beside n1, n2: "))
        .collect();
    assert_eq!(passed.len(), 1, "{err}");
    // The same line in the JSON, and in doctor's and the HTML report's.
    let line = passed[0].strip_prefix("glk: ").unwrap();
    assert_eq!(v["input"]["passed_over"], serde_json::json!([line]));
    let doctor = Command::new(GLK)
        .args(["doctor", "--json"])
        .arg(&fixture)
        .output()
        .unwrap();
    let doctor: serde_json::Value = serde_json::from_slice(&doctor.stdout).unwrap();
    assert_eq!(doctor["passed_over"], serde_json::json!([line]));
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let o = Command::new(GLK)
        .args(["report", "-o"])
        .arg(&html)
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains(&format!("<p class=\"note\">{line}</p>")),
        "{line}"
    );
    for n in ["n1", "n2"] {
        let sos = file_ending(&fixture.join(n), ".tar.gz");
        let lockcapture = file_ending(&fixture.join(n), ".tar.bz2");
        for (path, what) in [
            (format!("{n}/capture"), "a capture"),
            (
                format!("{n}/{}", sos.file_name().unwrap().to_str().unwrap()),
                "a tarball",
            ),
            (
                format!("{n}/{}", lockcapture.file_name().unwrap().to_str().unwrap()),
                "a tarball",
            ),
        ] {
            assert!(
                passed[0].contains(&format!("{path} ({what})")),
                "{path}: {err}"
            );
        }
    }
    let o = Command::new(GLK)
        .arg("analyze")
        .arg(testdata::path("real/support-6.12"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no capture here"), "{err}");
    for below in [
        "n1/capture (a capture)",
        "n2/lockdebug-svw.txt (a DLM lock dump)",
    ] {
        assert!(err.contains(below), "{below}: {err}");
    }
}

/// `glk top` on gfs2_lockcapture's tarballs of both nodes: the waiting flock glock on n2 is
/// stuck by the DLM's queue age and waits for n1's pid 250, joined across the two nodes'
/// DLM dumps as for glk's own captures.
#[test]
fn top_reads_gfs2_lockcapture_tarballs() {
    for fixture in SUPPORT.map(testdata::path) {
        let truth = Truth::read(&fixture);
        let tarball = |n: &str| file_ending(&fixture.join(n), ".tar.bz2");
        let o = Command::new(GLK)
            .args(["top", "--once", "--json", "--stuck-after", "5"])
            .args([tarball("n1"), tarball("n2")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let g = &v["glocks"][0];
        assert_eq!(
            (&g["glock"], &g["stuck"], &g["wait_source"]),
            (&truth.glock.as_str().into(), &true.into(), &"dlm".into())
        );
        assert_eq!(g["waits_for"], format!("node 1 pid {} EX", truth.holder));
        assert_eq!(g["dlm"]["pid"], truth.waiter);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.matches("no gfs2 or dlm trace").count(), 2, "{err}");
    }
}

/// The flock glocks a node's `/proc/locks` (`proc-locks.txt`) shows held, with the pid
/// holding each.
fn flocks_held(node: &Path) -> Vec<(String, i64)> {
    std::fs::read_to_string(node.join("proc-locks.txt"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let inode: u64 = w.get(5)?.rsplit(':').next()?.parse().ok()?;
            (w.get(1) == Some(&"FLOCK")).then(|| (format!("6/{inode:x}"), w[4].parse().unwrap()))
        })
        .collect()
}

/// Each node's glk capture in a folder of its own, as support collects them, given to
/// `glk top` together: the holder each node's waiter waits for is found in the other
/// node's capture, as the other node's `/proc/locks` shows it. The folder that holds
/// them, given whole, is read as `glk analyze` reads it (its traces), and `top` and
/// `stats` name the captures passed over there.
#[test]
fn top_joins_each_node_s_capture_from_its_own_folder() {
    let fixture = testdata::path("real/support-deadlock-6.12");
    let v = common::glk_json(&[
        "top".as_ref(),
        "--once".as_ref(),
        "--json".as_ref(),
        fixture.join("n1/capture").as_os_str(),
        fixture.join("n2/capture").as_os_str(),
    ]);
    let mut seen = Vec::new();
    for g in elements(&v["glocks"]) {
        let Some(held) = g.get("held_elsewhere") else {
            continue;
        };
        for there in elements(held) {
            seen.push((
                str_of(there, "node"),
                str_of(g, "glock"),
                i64_of(there, "pid"),
            ));
        }
    }
    seen.sort();
    let mut truth = Vec::new();
    for n in ["n1", "n2"] {
        for (glock, pid) in flocks_held(&fixture.join(n)) {
            truth.push((n.to_string(), glock, pid));
        }
    }
    assert_eq!(truth.len(), 2);
    assert_eq!(seen, truth);
    for cmd in ["top", "stats"] {
        let o = Command::new(GLK).arg(cmd).arg(&fixture).output().unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        for said in [
            "passed over beside n1, n2: n1/capture (a capture)",
            "in these inputs (",
            "support-deadlock-6.12: nodes n1, n2)",
        ] {
            assert!(err.contains(said), "{cmd}: {said}: {err}");
        }
    }
}

/// `glk doctor --json` on `paths`: (code, pids, glocks) of each finding.
fn findings(paths: &[std::path::PathBuf]) -> Vec<(String, Vec<i64>, Vec<String>)> {
    let o = Command::new(GLK)
        .args(["doctor", "--json"])
        .args(paths)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    elements(&v["findings"])
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                elements(&f["pids"]).map(|p| p.as_i64().unwrap()).collect(),
                elements(&f["glocks"])
                    .map(|g| g.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

/// The pids of `flock` processes in D state in a node's `ps.txt`: the deadlocked waiters.
fn blocked_flocks(ps: &Path) -> Vec<i64> {
    std::fs::read_to_string(ps)
        .unwrap()
        .lines()
        .filter(|l| l.ends_with(" flock") && l.split_whitespace().nth(3) == Some("D"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// One moment of a two-node flock deadlock and an append storm (`real/support-deadlock-6.12`):
/// glk's capture, and the same capture with trace-cmd's trace.dat as its trace, give the
/// deadlock with the two blocked processes `ps` shows and the hot glock of the shared file;
/// gfs2_lockcapture's output alone (its process table, no /proc/locks) gives the same
/// deadlock, and the two processes' stuck DLM waits; sos's reports (DLM dumps and `ps`, no
/// glocks dump) give it through `ps`. A plain wait (`real/support-6.12`) is no cycle.
#[test]
fn every_source_gives_what_it_holds_of_a_deadlock_and_a_storm() {
    let fixture = testdata::path("real/support-deadlock-6.12");
    let mut blocked: Vec<i64> = ["n1", "n2"]
        .iter()
        .flat_map(|n| blocked_flocks(&fixture.join(n).join("ps.txt")))
        .collect();
    blocked.sort();
    assert_eq!(blocked.len(), 2);
    let deadlock = (
        "GLK-DEADLOCK".to_string(),
        blocked.clone(),
        vec!["6/223a".to_string(), "6/223b".to_string()],
    );
    let hot = (
        "GLK-HOT-GLOCK".to_string(),
        vec![],
        vec!["2/223c".to_string()],
    );
    let own: Vec<_> = ["n1", "n2"]
        .iter()
        .map(|n| fixture.join(n).join("capture").join(n))
        .collect();
    let f = findings(&own);
    assert!(f.contains(&deadlock) && f.contains(&hot), "{f:?}");

    let dir = tempfile::tempdir().unwrap();
    let mut with_dat = Vec::new();
    for (n, from) in ["n1", "n2"].iter().zip(&own) {
        let to = dir.path().join(n);
        copy_dir(from, &to, |f| f.starts_with("trace_pipe"));
        std::fs::copy(fixture.join(n).join("trace.dat"), to.join("trace.dat")).unwrap();
        with_dat.push(to);
    }
    let f = findings(&with_dat);
    assert!(f.contains(&deadlock) && f.contains(&hot), "{f:?}");

    // Each node's file of a kind (gfs2_lockcapture's `.tar.bz2`, sos's `.tar.gz`).
    let both = |fixture: &Path, suffix: &str| -> Vec<_> {
        ["n1", "n2"]
            .iter()
            .map(|n| file_ending(&fixture.join(n), suffix))
            .collect()
    };
    let f = findings(&both(&fixture, ".tar.bz2"));
    assert!(f.contains(&deadlock), "{f:?}");
    let mut stuck: Vec<i64> = f
        .into_iter()
        .filter(|f| f.0 == "GLK-STUCK-WAITER")
        .map(|f| f.1[0])
        .collect();
    stuck.sort();
    assert_eq!(stuck, blocked);
    dlm_ages_cite_the_dumps(&both(&fixture, ".tar.bz2"));
    // sos's reports: DLM dumps and `ps` only; `ps` links each waiter to its ancestor.
    let f = findings(&both(&fixture, ".tar.gz"));
    dlm_ages_cite_the_dumps(&both(&fixture, ".tar.gz"));
    assert!(f.contains(&deadlock), "{f:?}");
    let f = findings(&both(&testdata::path("real/support-6.12"), ".tar.bz2"));
    assert!(f.iter().all(|f| f.0 != "GLK-DEADLOCK"), "{f:?}");
}

/// The stuck waits that glk doctor finds by the DLM queue age in each node's tarball
/// (gfs2_lockcapture's or sos's, in a folder named for the node) cite the DLM dump they
/// were read from as it is named there (`NODE/gfs_locks`, the debugfs file gfs2_lockcapture
/// copies; `NODE/dlm_locks_gfs`, sos's `dlm_tool lockdebug`), at the line of the waiting
/// lock of the finding's process: a line of that file, read here from the tarball by hand.
fn dlm_ages_cite_the_dumps(tarballs: &[std::path::PathBuf]) {
    // lockdebug gives lower bounds of the ages (against the dump's newest lock): 23 s here.
    let o = Command::new(GLK)
        .args(["doctor", "--json", "--stuck-after", "10"])
        .args(tarballs)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut dumps = std::collections::BTreeMap::new();
    for t in tarballs {
        let node = t.parent().unwrap().file_name().unwrap().to_string_lossy();
        let mut tar = Vec::new();
        std::io::Read::read_to_end(&mut glockparse::input::open(t).unwrap(), &mut tar).unwrap();
        for (name, data) in tar_members(&tar) {
            for dump in ["/dlm/gfs/gfs_locks", "/sos_commands/dlm/dlm_locks_gfs"] {
                if name.ends_with(dump) {
                    let file = dump.rsplit('/').next().unwrap();
                    let text = String::from_utf8_lossy(&tar[data.clone()]);
                    let lines: Vec<String> = text.lines().map(str::to_string).collect();
                    dumps.insert(format!("{node}/{file}"), lines);
                }
            }
        }
    }
    let mut cited = 0;
    for f in elements(&v["findings"]).filter(|f| f["code"] == "GLK-STUCK-WAITER") {
        let pid = f["pids"][0].as_i64().unwrap().to_string();
        for e in elements(&f["evidence"]) {
            if !e["shows"].as_str().unwrap().starts_with("DLM lock waiting") {
                continue;
            }
            let source = e["source"].as_str().unwrap();
            let dump = dumps
                .get(source)
                .unwrap_or_else(|| panic!("{source}: no such dump"));
            let line = &dump[e["line"].as_u64().unwrap() as usize - 1];
            // The waiting lock of the process: `id nodeid remid pid ...` in debugfs's
            // layout, `... pid PID` at the end of lockdebug's.
            let words: Vec<&str> = line.split_whitespace().collect();
            let names_pid =
                words.get(3) == Some(&pid.as_str()) || words.ends_with(&["pid", pid.as_str()]);
            assert!(names_pid, "{line}");
            cited += 1;
        }
    }
    assert!(cited >= 2, "{cited} DLM ages cited");
}

/// gfs2_lockcapture saves every process's `/proc/PID/status` and `stack`: a process table.
/// On `real/support-deadlock-6.12`, the deadlock from its tarballs names each blocked
/// `flock` (`ps.txt`: state D) and, as its ancestor, the process that holds the flock it
/// inherited (`proc-locks.txt`, and the parent chain of `ps.txt`), citing the status files.
#[test]
fn gfs2_lockcapture_keeps_a_process_table() {
    let fixture = testdata::path("real/support-deadlock-6.12");
    let tarballs: Vec<_> = ["n1", "n2"]
        .map(|n| file_ending(&fixture.join(n), ".tar.bz2"))
        .into();
    let doc = doctor_with_findings(&tarballs);
    let deadlock = elements(&doc["findings"])
        .find(|f| f["code"] == "GLK-DEADLOCK")
        .expect("a deadlock");
    let title = str_of(deadlock, "title");
    let cited: Vec<String> = elements(&deadlock["evidence"])
        .map(|e| str_of(e, "source"))
        .collect();
    for n in ["n1", "n2"] {
        let ps = std::fs::read_to_string(fixture.join(n).join("ps.txt")).unwrap();
        let parent: std::collections::HashMap<i64, i64> = ps
            .lines()
            .skip(1)
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
            })
            .collect();
        let locks = std::fs::read_to_string(fixture.join(n).join("proc-locks.txt")).unwrap();
        let flock_holders: Vec<i64> = locks
            .lines()
            .filter(|l| l.contains(" FLOCK "))
            .filter_map(|l| l.split_whitespace().nth(4)?.parse().ok())
            .collect();
        let [waiter] = blocked_flocks(&fixture.join(n).join("ps.txt"))[..] else {
            panic!("one blocked flock on {n}");
        };
        let mut ancestors = Vec::new();
        let mut p = waiter;
        while let Some(&pp) = parent.get(&p).filter(|pp| **pp > 1) {
            ancestors.push(pp);
            p = pp;
        }
        let holder = *ancestors
            .iter()
            .find(|a| flock_holders.contains(a))
            .expect("an ancestor holds the flock");
        let said = format!("pid {waiter} [flock] (pid {holder} [flock], its ancestor, holds");
        assert!(title.contains(&said), "{n}: {title}");
        for pid in [waiter, holder] {
            let status = format!("{n}/proc/{pid}/status");
            assert!(cited.contains(&status), "{status}: {cited:?}");
        }
    }
}

/// The line of `path` (from 1) that contains `text`.
fn line_with(path: &Path, text: &str) -> u64 {
    let all = std::fs::read_to_string(path).unwrap();
    let i = all.lines().position(|l| l.contains(text));
    i.unwrap_or_else(|| panic!("no {text:?} in {}", path.display())) as u64 + 1
}

/// A filesystem withdrawn on n2 (`real/support-withdraw-6.12`), as glk's capture and as sos
/// (`-o gfs2,dlm,kernel,corosync`) record it: each gives GLK-WITHDRAWN on the nodes whose
/// sysfs `withdraw` the job read as 1 (n2; n1 only recovered n2's journal, and its kernel
/// log says another node withdrew), cited from the files that hold it, and nothing about
/// quorum or DLM recovery, which corosync and `dlm_tool ls` show healthy.
#[test]
fn a_withdrawn_node_is_found_in_glk_captures_and_sos_reports() {
    let fixture = testdata::path("real/support-withdraw-6.12");
    let truth = |n: &str, f: &str| std::fs::read_to_string(fixture.join(n).join(f)).unwrap();
    let withdrawn: Vec<&str> = ["n1", "n2"]
        .into_iter()
        .filter(|n| truth(n, "withdraw.txt").trim() == "1")
        .collect();
    assert_eq!(withdrawn, ["n2"]);
    for n in ["n1", "n2"] {
        assert!(truth(n, "quorum.txt").contains("Quorate:          Yes"));
        assert!(truth(n, "dlm_tool_ls.txt").contains("flags         0x00000000"));
    }
    let n2 = fixture.join("n2");
    let said = "about to withdraw this file system";
    let in_dmesg = line_with(&n2.join("dmesg.txt"), said);
    let captures: Vec<_> = ["n1", "n2"]
        .map(|n| fixture.join(n).join("capture").join(n))
        .into();
    let sos: Vec<_> = ["n1", "n2"]
        .map(|n| file_ending(&fixture.join(n), ".tar.gz"))
        .into();
    for (paths, sysfs, log) in [
        (captures, "n2/gfs2_sysfs.0", "n2/kernel.log"),
        (sos, "n2/withdraw", "n2/dmesg"),
    ] {
        let doc = doctor_with_findings(&paths);
        let f: Vec<&serde_json::Value> = elements(&doc["findings"]).collect();
        let codes: Vec<String> = f.iter().map(|f| str_of(f, "code")).collect();
        assert_eq!(codes, ["GLK-WITHDRAWN"], "{paths:?}");
        assert_eq!(f[0]["nodes"], serde_json::json!(withdrawn));
        let cited: Vec<(String, i64, String)> = elements(&f[0]["evidence"])
            .map(|e| (str_of(e, "source"), i64_of(e, "line"), str_of(e, "shows")))
            .collect();
        let cites = |source: &str, line: i64, shows: &str| {
            cited
                .iter()
                .any(|(s, l, t)| s == source && *l == line && t.contains(shows))
        };
        assert!(cites(sysfs, 1, "withdraw 1"), "{cited:?}");
        // The kernel log's line, where the node's own dmesg (taken before) has it too.
        assert!(cites(log, in_dmesg as i64, said), "{cited:?}");
    }
    // n1's recovery of n2's journal is not n1 withdrawing.
    let n1_log = fixture.join("n1/capture/n1/kernel.log");
    assert!(line_with(&n1_log, "Some node has withdrawn") > 0);
}

/// The members of an uncompressed tar (ustar headers, read here by hand, not by the crate
/// glk reads them with): each name with where its data lies.
fn tar_members(tar: &[u8]) -> Vec<(String, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 512 <= tar.len() && tar[at] != 0 {
        let field = |from: usize, to: usize| {
            let f = &tar[at + from..at + to];
            String::from_utf8_lossy(&f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())])
                .trim()
                .to_string()
        };
        let prefix = field(345, 500);
        let name = field(0, 100);
        let size = usize::from_str_radix(&field(124, 136), 8).unwrap();
        let full = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        out.push((full, at + 512..at + 512 + size));
        at += 512 + size.div_ceil(512) * 512;
    }
    out
}

/// A sos report cut short (an upload that stopped inside its last member) still gives the
/// withdrawn node, from the members before the cut, and says where it stopped.
#[test]
fn a_sos_report_cut_short_gives_what_came_before_the_cut() {
    let sos = file_ending(&testdata::path("real/support-withdraw-6.12/n2"), ".tar.gz");
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut glockparse::input::open(&sos).unwrap(), &mut tar).unwrap();
    let members = tar_members(&tar);
    let (last, data) = members.last().unwrap();
    assert!(last.ends_with("sos_reports/manifest.json"), "{members:?}");
    let scratch = tempfile::tempdir().unwrap();
    let cut = scratch.path().join("sosreport-n2.tar");
    std::fs::write(&cut, &tar[..data.start + 100]).unwrap();
    let o = Command::new(GLK)
        .args(["doctor", "--json"])
        .arg(&cut)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let said = format!(
        "{}: damaged or cut short in `{last}` after {} whole member(s)",
        cut.display(),
        members.len() - 1
    );
    assert!(
        err.contains(&said) && err.contains("what follows is not read"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f: Vec<&serde_json::Value> = elements(&doc["findings"]).collect();
    let codes: Vec<String> = f.iter().map(|f| str_of(f, "code")).collect();
    assert_eq!(codes, ["GLK-WITHDRAWN"]);
    assert_eq!(f[0]["nodes"], serde_json::json!(["n2"]));
}

/// Two GFS2 filesystems of the same two nodes, as `glk capture` writes them
/// (`DIR/FS/NODE/`, each with its `table`): the hand-off capture as `lab:a`, its traces
/// beside it, and the deadlock family's capture as `lab:b`. `lab:b`'s copy names another
/// device in its mountinfo and `/proc/locks` copies and another lockspace id in its
/// `dlm_tool ls`, as a second filesystem of a node has.
fn two_filesystems() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let sources = [
        ("lab:a", "real/handoff-6.12"),
        ("lab:b", "real/deadlock-family-6.12/capture"),
    ];
    for (fs, from) in sources {
        for n in ["n1", "n2"] {
            let to = dir.path().join(fs.replace(':', "_")).join(n);
            copy_dir(&testdata::path(from).join(n), &to, |_| false);
            std::fs::write(to.join("table"), format!("{fs}\n")).unwrap();
        }
    }
    // Each copy's lockspace is named as its table says (`a`, `b`), as dlm_tool ls would
    // list it: lab:a's with the id its trace carries, lab:b's with another.
    for n in ["n1", "n2"] {
        let ls = "## dlm_tool ls\ndlm lockspaces\nname          a\nid            0x3df8322a\n";
        std::fs::write(dir.path().join("lab_a").join(n).join("cluster.txt"), ls).unwrap();
        let d = dir.path().join("lab_b").join(n);
        for (file, from, to) in [
            ("mountinfo", " 254:0 ", " 254:16 "),
            ("cluster.txt", "name          gfs\n", "name          b\n"),
            ("cluster.txt", "0x3df8322a", "0x0badcafe"),
            ("locks.0", " fe:00:", " fe:10:"),
            ("locks.1", " fe:00:", " fe:10:"),
            ("locks.2", " fe:00:", " fe:10:"),
        ] {
            let text = std::fs::read_to_string(d.join(file)).unwrap();
            assert!(text.contains(from), "{n}/{file}");
            std::fs::write(d.join(file), text.replace(from, to)).unwrap();
        }
    }
    dir
}

/// What glk says on standard error when it refuses `args` on `input`: it fails, with
/// nothing on standard output.
fn refusal(args: &[&str], input: &Path) -> String {
    let o = Command::new(GLK).args(args).arg(input).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        !o.status.success() && o.stdout.is_empty(),
        "{args:?}: {err}"
    );
    err
}

/// The rows of `glk stats --json` or `glk top --json`, each with its `source` cut to
/// the node's directory and the file (`n1/glstats.3`).
fn rows_by_node_file(rows: &serde_json::Value) -> Vec<serde_json::Value> {
    elements(rows)
        .map(|r| {
            let mut r = r.clone();
            let source = std::path::PathBuf::from(str_of(&r, "source"));
            let short: Vec<_> = source.iter().rev().take(2).collect();
            r["source"] = format!(
                "{}/{}",
                short[1].to_string_lossy(),
                short[0].to_string_lossy()
            )
            .into();
            r
        })
        .collect()
}

#[test]
fn top_and_stats_show_one_filesystem_with_fs() {
    let two = two_filesystems();
    let alone_b = testdata::path("real/deadlock-family-6.12/capture");
    let top = |args: &[&std::ffi::OsStr]| {
        let base = ["top", "--once", "--json", "--limit", "0"].map(std::ffi::OsStr::new);
        common::glk_json(&[&base[..], args].concat())
    };
    let b = top(&["--fs".as_ref(), "b".as_ref(), two.path().as_os_str()]);
    let alone = top(&[alone_b.as_os_str()]);
    assert_eq!(b["summary"], alone["summary"]);
    assert!(elements(&b["glocks"]).count() > 0);
    assert!(
        elements(&b["glocks"]).all(|g| g["fs"] == "lab:b"),
        "{}",
        b["glocks"]
    );
    let without_fs = |v: &serde_json::Value| {
        let mut rows = rows_by_node_file(v);
        for r in &mut rows {
            r["fs"] = serde_json::Value::Null;
        }
        rows
    };
    assert_eq!(without_fs(&b["glocks"]), without_fs(&alone["glocks"]));
    // glk stats --fs: lab:a's glstats and sbstats, as the hand-off capture's alone.
    let stats = |args: &[&std::ffi::OsStr]| {
        let base = ["stats", "--json", "--limit", "0"].map(std::ffi::OsStr::new);
        common::glk_json(&[&base[..], args].concat())
    };
    let a = stats(&["--fs".as_ref(), "lab:a".as_ref(), two.path().as_os_str()]);
    let alone = stats(&[testdata::path("real/handoff-6.12").as_os_str()]);
    assert!(elements(&a["glocks"]).count() > 0);
    for key in ["glocks", "types"] {
        assert_eq!(
            rows_by_node_file(&a[key]),
            rows_by_node_file(&alone[key]),
            "{key}"
        );
    }
    // A filesystem the inputs do not hold is named with those they do.
    for cmd in ["doctor", "top", "stats"] {
        let err = refusal(&[cmd, "--fs", "lab:c"], two.path());
        assert!(
            err.contains("--fs \"lab:c\": no such GFS2 filesystem; these inputs hold 2"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn a_node_s_filesystems_are_read_one_at_a_time() {
    let two = two_filesystems();
    // Without --fs, neither is read, and both are named.
    let err = refusal(&["analyze"], two.path());
    assert!(
        err.contains("2 GFS2 filesystems: lab:a (nodes n1, n2), lab:b (nodes n1, n2)")
            && err.contains("give --fs"),
        "{err}"
    );
    let json = |args: &[&std::ffi::OsStr]| {
        let base = ["analyze", "--json", "--limit", "0"].map(std::ffi::OsStr::new);
        common::glk_json(&[&base[..], args].concat())
    };
    let fs = |name: &'static str| {
        [
            std::ffi::OsStr::new("--fs"),
            name.as_ref(),
            two.path().as_os_str(),
        ]
    };
    // lab:a is the hand-off capture, as read alone, to the byte.
    let alone = testdata::path("real/handoff-6.12");
    assert_eq!(json(&fs("a")), json(&[alone.as_os_str()]));
    // lab:b is the deadlock family's capture: its snapshots alone, and none of lab:a's
    // trace events (another device and lockspace), though the nodes' traces are read.
    let b = json(&fs("lab:b"));
    let alone = json(&[testdata::path("real/deadlock-family-6.12/capture").as_os_str()]);
    for key in ["contended", "cross_node", "local_waits", "cycles"] {
        assert_eq!(b[key], alone[key], "{key}");
    }
    assert_eq!(
        b["stuck_and_leaks"]["stuck"],
        alone["stuck_and_leaks"]["stuck"]
    );
    let traces: Vec<(String, i64, i64)> = elements(&b["input"]["traces"])
        .map(|t| {
            (
                str_of(t, "node"),
                i64_of(t, "trace_lines"),
                i64_of(t, "events"),
            )
        })
        .collect();
    assert_eq!(traces.len(), 2, "{traces:?}");
    assert!(
        traces
            .iter()
            .all(|(_, lines, events)| *lines > 0 && *events == 0),
        "{traces:?}"
    );
    // glk top reads both, each file named apart from its namesake.
    let o = Command::new(GLK)
        .args(["top", "--once"])
        .arg(two.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let head = out.lines().next().unwrap_or_default();
    for file in [
        "lab_a/n1/glocks.3",
        "lab_a/n2/glocks.3",
        "lab_b/n1/glocks.2",
        "lab_b/n2/glocks.2",
    ] {
        assert!(head.contains(file), "{file}: {head}");
    }
}

/// The pid of the `FLOCK` line of a node's `/proc/locks` copy.
fn flock_holder(proc_locks: &Path) -> i64 {
    let text = std::fs::read_to_string(proc_locks).unwrap();
    let line = text.lines().find(|l| l.contains(" FLOCK ")).unwrap();
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}

/// Two nodes' sos reports, each of two filesystems (sos copies each one's sysfs directory
/// and each lockspace's lockdebug): without --fs neither is read and both are named; with
/// it, a filesystem's DLM locks are every lock line of its lockspace's dumps (one of
/// dlm_tool's complaints cut n1's `lab:gfs` dump at the end of a `Granted` line), and the
/// flock deadlock of `lab:gfs` is found from the dumps alone, with both holders, on
/// `lab:gfs` only.
#[test]
fn two_filesystems_of_sos_reports_are_read_one_at_a_time() {
    let fixture = testdata::path("real/two-filesystems-sos-6.12");
    let tarballs = ["n1", "n2"].map(|n| file_ending(&fixture.join(n), ".tar.gz"));
    let err = refusal(&["analyze", tarballs[0].to_str().unwrap()], &tarballs[1]);
    assert!(
        err.contains("2 GFS2 filesystems: lab:data (nodes n1, n2), lab:gfs (nodes n1, n2)"),
        "{err}"
    );
    let with_fs = |ls: &str| -> Vec<std::path::PathBuf> {
        ["--fs".into(), ls.into()]
            .into_iter()
            .chain(tarballs.iter().cloned())
            .collect()
    };
    for ls in ["gfs", "data"] {
        let (v, _) = analyze_all(&with_fs(ls));
        let want: usize = tarballs
            .iter()
            .map(|t| testdata::sos_lockdebug_lines(t, ls))
            .sum();
        assert_eq!(i64_of(&v["input"], "dlm_lock_rows"), want as i64, "{ls}");
    }
    let inode = common::inodes(&fixture.join("n1/inodes.txt"));
    let flock = |f: &str| format!("6/{:x}", inode[f]);
    let deadlocks = |ls: &str| -> Vec<Vec<String>> {
        findings(&with_fs(ls))
            .into_iter()
            .filter(|(code, ..)| code == "GLK-DEADLOCK")
            .map(|(.., glocks)| glocks)
            .collect()
    };
    assert_eq!(deadlocks("gfs"), [vec![flock("A"), flock("B")]]);
    assert!(deadlocks("data").is_empty());
    let doctor = doctor_with_findings(&with_fs("gfs"));
    let title = str_of(&doctor["findings"][0], "title");
    for n in ["n1", "n2"] {
        let holder = flock_holder(&fixture.join(n).join("proc-locks.txt"));
        assert!(
            title.contains(&format!("pid {holder} [flock]")),
            "{n}: {title}"
        );
    }
}
