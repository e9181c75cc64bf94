//! `glk doctor` on real captures (a deadlock, a stuck flock wait, contended hand-offs) and
//! on real captures with the state around the locks changed (withdrawn, recovering, no
//! quorum, lost events, a corrupt line): the findings, their evidence against the files
//! they cite, and the exit status.

mod common;
use common::elements;

use std::path::Path;
use std::process::Command;

fn doctor(path: &Path, extra: &[&str]) -> (serde_json::Value, i32) {
    let o = Command::new(env!("CARGO_BIN_EXE_glk"))
        .arg("doctor")
        .arg(path)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    let code = o.status.code().unwrap();
    assert!(
        code == 0 || code == 3,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (serde_json::from_slice(&o.stdout).unwrap(), code)
}

fn codes(v: &serde_json::Value) -> Vec<String> {
    elements(&v["findings"])
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

/// The line `line` (1-based) of `NODE/FILE` under `root`.
fn cited(root: &Path, source: &str, line: u64) -> String {
    let text = std::fs::read_to_string(root.join(source)).unwrap();
    text.lines().nth(line as usize - 1).unwrap().to_string()
}

/// The line one piece of a finding's evidence cites.
fn cited_by(root: &Path, evidence: &serde_json::Value) -> String {
    let source = evidence["source"].as_str().unwrap();
    cited(root, source, evidence["line"].as_u64().unwrap())
}

/// Copies a fixture's node directories (files only, traces decompressed on the way).
/// A finding's pids, sorted.
fn sorted_pids(f: &serde_json::Value) -> Vec<i64> {
    let mut pids: Vec<i64> = elements(&f["pids"]).map(|p| p.as_i64().unwrap()).collect();
    pids.sort();
    pids
}

fn copy_capture(fixture: &str, to: &Path) {
    for n in ["n1", "n2"] {
        let src = testdata::path(&format!("{fixture}/{n}"));
        let dst = to.join(n);
        std::fs::create_dir_all(&dst).unwrap();
        for e in std::fs::read_dir(&src).unwrap().flatten() {
            if e.path().is_file() {
                std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
            }
        }
    }
}

#[test]
fn a_deadlock_is_critical_with_its_evidence() {
    let root = testdata::path("real/flock-deadlock-6.12/deadlock");
    let (v, code) = doctor(&root, &[]);
    assert_eq!(code, 3, "critical is above the default --fail-on warning");
    let f = &v["findings"][0];
    assert_eq!(f["code"], "GLK-DEADLOCK");
    assert_eq!(f["severity"], "critical");
    // The two waiting flock processes of ps-NODE.txt (the fixture's README).
    let pids = sorted_pids(f);
    assert_eq!(pids, [247, 257]);
    assert_eq!(f["glocks"], serde_json::json!(["6/223a", "6/223b"]));
    // Every cited line exists and is about the cycle's locks or processes.
    let ev = f["evidence"].as_array().unwrap();
    assert!(ev.len() >= 8);
    for e in ev {
        let (src, n) = (e["source"].as_str().unwrap(), e["line"].as_u64().unwrap());
        let mut line = cited(&root, src, n);
        // A holder line belongs to the G: line above it.
        if line.trim_start().starts_with("H:") {
            let text = std::fs::read_to_string(root.join(src)).unwrap();
            let g = text
                .lines()
                .take(n as usize)
                .filter(|l| l.starts_with("G:"))
                .last()
                .unwrap();
            line = format!("{g} / {line}");
        }
        let about = ["223a", "223b", "8762", "8763", "247", "257", "243", "253"]
            .iter()
            .any(|k| line.contains(k));
        assert!(about, "{e}: {line}");
    }
    assert!(f["remedy"].as_str().unwrap().contains("lock order"));
    // --fail-on critical: nothing above it.
    assert_eq!(doctor(&root, &["--fail-on", "critical"]).1, 0);
}

/// Each line a deadlock or a stuck wait cites shows what its evidence says of it
/// (`pid 257 [flock] on n1 waits for 6/223b`, `pid 243 [flock] on n2 holds 6/223b`,
/// `pid 229 [flock]: pid 220 [flock], its ancestor, holds 6/223a`), read from the line by
/// plain splitting: a glocks `H:` line waiting or granted under that glock, a DLM lock of
/// that pid waiting or granted on that resource, that process in the process table (its
/// ancestor above it), that pid's flock on that inode in `/proc/locks`.
#[test]
fn each_line_a_wait_cites_shows_what_it_says() {
    for (rel, extra, code, ancestors) in [
        (
            "real/flock-deadlock-6.12/deadlock",
            &[][..],
            "GLK-DEADLOCK",
            false,
        ),
        ("real/doctor-deadlock-6.12", &[], "GLK-DEADLOCK", false),
        ("real/cluster-mode-5.10", &[], "GLK-DEADLOCK", true),
        ("real/doctor-deadlock-6.12", &[], "GLK-STUCK-WAITER", false),
        (
            "real/flock-deadlock-6.12/wait",
            &["--stuck-secs", "2"],
            "GLK-STUCK-WAITER",
            false,
        ),
    ] {
        let root = testdata::path(rel);
        let (v, _) = doctor(&root, extra);
        let mut said = std::collections::BTreeMap::new();
        for f in elements(&v["findings"]).filter(|f| f["code"] == code) {
            // The stuck rule's own lines (`waiting EX at …`, `still waiting`, `DLM lock
            // waiting 59 s`) say no party.
            let parties = elements(&f["evidence"]).filter(|e| {
                let shows = e["shows"].as_str().unwrap();
                shows.contains(" waits for ") || shows.contains(" holds ")
            });
            for e in parties {
                *said.entry(line_shows(&root, e)).or_insert(0) += 1;
            }
        }
        let want = if ancestors { 3 } else { 2 };
        assert_eq!(said.len(), want, "{rel} {code}: {said:?}");
    }
}

/// Checks that the line `e` cites shows what `e` says; returns which kind of saying it is.
fn line_shows(root: &Path, e: &serde_json::Value) -> &'static str {
    let shows = e["shows"].as_str().unwrap();
    let source = Path::new(e["source"].as_str().unwrap());
    let n = e["line"].as_u64().unwrap() as usize;
    let text = std::fs::read_to_string(root.join(source)).unwrap();
    let line = text.lines().nth(n - 1).unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    let node_dir = root.join(source.parent().unwrap());
    let node = std::fs::read_to_string(node_dir.join("node")).unwrap();
    let kind = source.file_name().unwrap().to_str().unwrap();
    let kind = kind.split('.').next().unwrap();
    // `WAITER: ANCESTOR, its ancestor, holds G`: the waiter's process-table line, whose
    // parent chain reaches the ancestor.
    if let Some((waiter, ancestor)) = shows.split_once(": ") {
        assert_eq!(kind, "procs", "{e}");
        assert_eq!(fields[0], pid_in(waiter), "{e}: {line}");
        let parents: std::collections::HashMap<&str, &str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('\t'))
            .map(|l| {
                let w: Vec<&str> = l.split('\t').collect();
                (w[0], w[2])
            })
            .collect();
        let mut p = fields[0];
        let want = pid_in(ancestor);
        while p != want {
            p = parents
                .get(p)
                .unwrap_or_else(|| panic!("{e}: no ancestor {want}"));
        }
        return "ancestor";
    }
    // `pid P [COMM] on NODE waits for G` or `… holds G`.
    let (who, glock, holds) = match shows.split_once(" waits for ") {
        Some((who, glock)) => (who, glock, false),
        None => {
            let (who, glock) = shows.split_once(" holds ").unwrap_or_else(|| panic!("{e}"));
            (who, glock, true)
        }
    };
    let pid = pid_in(who);
    let on = who.rsplit_once(" on ").unwrap().1;
    let (gltype, number) = glock.split_once('/').unwrap();
    match kind {
        "glocks" => {
            assert_eq!(on, node.trim(), "{e}");
            let flags = fields.iter().find_map(|f| f.strip_prefix("f:")).unwrap();
            assert!(flags.contains(if holds { 'H' } else { 'W' }), "{e}: {line}");
            let g = text
                .lines()
                .take(n)
                .filter(|l| l.starts_with("G:"))
                .last()
                .unwrap();
            let id = g
                .split(" n:")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap();
            let id: glockparse::GlockId = id.parse().unwrap();
            assert_eq!(id.to_string(), glock, "{e}: {g}");
        }
        "dlm_locks" => {
            // id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len r_name
            assert_eq!(fields[3], pid, "{e}: {line}");
            assert_eq!(fields[7] == "2", holds, "{e}: {line}");
            let name: Vec<&str> = line.split('"').nth(1).unwrap().split_whitespace().collect();
            assert_eq!(name, [gltype, number], "{e}: {line}");
        }
        "procs" => {
            assert_eq!(on, node.trim(), "{e}");
            assert_eq!(fields[0], pid, "{e}: {line}");
        }
        "locks" => {
            // 1: FLOCK  ADVISORY  WRITE 376 fe:00:266269 0 EOF
            assert!(holds, "{e}");
            assert_eq!(on, node.trim(), "{e}");
            assert_eq!(
                (fields[1], fields[4]),
                ("FLOCK", pid.as_str()),
                "{e}: {line}"
            );
            let ino = fields[5].rsplit(':').next().unwrap();
            let ino = u64::from_str_radix(number, 16).unwrap().to_string() == ino;
            assert!(ino, "{e}: {line}");
        }
        other => panic!("{e}: a wait cites {other}"),
    }
    if holds {
        "holds"
    } else {
        "waits"
    }
}

/// The pid of `pid 257 [flock] on n1` (or of `pid 257`).
fn pid_in(who: &str) -> String {
    let rest = who.strip_prefix("pid ").unwrap_or_else(|| panic!("{who}"));
    rest.split(' ').next().unwrap().to_string()
}

#[test]
fn a_stuck_flock_waiter_names_its_holder() {
    let root = testdata::path("real/flock-deadlock-6.12/wait");
    // The two snapshots are 3 s apart: stuck only with a lower threshold.
    let (v, _) = doctor(&root, &[]);
    assert!(!codes(&v).contains(&"GLK-STUCK-WAITER".to_string()));
    let (v, code) = doctor(&root, &["--stuck-secs", "2"]);
    assert_eq!(code, 3, "error is above warning");
    let f = common::find(&v["findings"], "code", "GLK-STUCK-WAITER");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["glocks"], serde_json::json!(["6/223a"]));
    assert_eq!(
        f["nodes"],
        serde_json::json!(["n2", "n1"]),
        "the waiter's node, then the holder's"
    );
    assert_eq!(f["pids"].as_array().unwrap().len(), 2);
    // Between 3 s (two snapshots) and 8 s, only the DLM dump's queue age shows it: the
    // waiting lock of pid 238 in the last dump, which the test reads back.
    let (v, _) = doctor(&root, &["--stuck-secs", "5"]);
    // A stuck waiter from the DLM dump's age.
    let f = common::find(&v["findings"], "code", "GLK-STUCK-WAITER");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .starts_with("a DLM lock of n2 (pid 238) has waited 8 s for 6/223a"),
        "{f}"
    );
    let e = &f["evidence"][0];
    let line = cited_by(&root, e);
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[3], "238", "{line}");
    // `time_ms` in the header, microseconds in fact (glockparse::dlm_locks).
    let age_us: u64 = cols[10].parse().unwrap();
    assert!((8_000_000..8_500_000).contains(&age_us), "{line}");
    assert!(doctor(&root, &["--stuck-secs", "9"]).0["findings"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn hot_glocks_and_storms_from_the_hand_offs() {
    let root = testdata::path("real/dlmev612");
    let (v, code) = doctor(&root, &[]);
    assert_eq!(
        code, 0,
        "warnings and infos are not above --fail-on warning"
    );
    assert_eq!(doctor(&root, &["--fail-on", "info"]).1, 3);
    let fs = v["findings"].as_array().unwrap();
    // Most severe first.
    let rank = |s: &str| {
        ["info", "warning", "error", "critical"]
            .iter()
            .position(|x| *x == s)
            .unwrap()
    };
    assert!(fs
        .windows(2)
        .all(|w| rank(w[0]["severity"].as_str().unwrap())
            >= rank(w[1]["severity"].as_str().unwrap())));
    let hot = fs
        .iter()
        .find(|f| f["code"] == "GLK-HOT-GLOCK" && f["glocks"][0] == "2/4101c")
        .unwrap();
    // The shared directory of the README (inode 266268 = 0x4101c): demotes both ways,
    // each caused by the other node.
    assert!(hot["title"].as_str().unwrap().contains("dir"));
    let ev: Vec<&str> = elements(&hot["evidence"])
        .map(|e| e["shows"].as_str().unwrap())
        .collect();
    assert!(
        ev.contains(&"106 demotes (dlm_bast) caused by n2"),
        "{ev:?}"
    );
    assert!(
        ev.contains(&"104 demotes (dlm_bast) caused by n1"),
        "{ev:?}"
    );
    assert!(fs
        .iter()
        .any(|f| f["code"] == "GLK-DEMOTE-STORM" && f["glocks"][0] == "2/4101c"));
    // Nothing about the cluster's state: none of it is wrong in this capture.
    for c in [
        "GLK-WITHDRAWN",
        "GLK-NO-QUORUM",
        "GLK-DLM-RECOVERY",
        "GLK-DEADLOCK",
    ] {
        assert!(!codes(&v).contains(&c.to_string()), "{c}");
    }
    // Every finding has a remedy, a title and evidence.
    for f in fs {
        assert!(
            !f["remedy"].as_str().unwrap().is_empty() && !f["title"].as_str().unwrap().is_empty()
        );
        assert!(!f["evidence"].as_array().unwrap().is_empty(), "{f}");
    }
}

#[test]
fn the_cluster_state_comes_before_any_glock() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_capture("real/handoff-6.1", root);
    // n2 withdrew (sysfs and its kernel log), n1's locking is blocked for recovery that
    // has not finished, and corosync says there is no quorum.
    for (file, text) in [
        (
            "n2/gfs2_sysfs.3",
            "withdraw 1\nfrozen 0\nlock_module/block 0\n",
        ),
        (
            "n2/kernel.log",
            "<6>[   50.000000] random line\n\
             <3>[   60.100000] gfs2: fsid=lab:gfs.1: fatal: I/O error\n\
             <3>[   60.100100] gfs2: fsid=lab:gfs.1: about to withdraw this file system\n",
        ),
        ("n1/gfs2_sysfs.3", "withdraw 0\nlock_module/block 1\n"),
        (
            "n1/kernel.log",
            "[   70.000000] dlm: gfs: remove member 2\n[   70.000100] dlm: gfs: dlm_recover 3\n",
        ),
        (
            "n1/cluster.txt",
            "## corosync-quorumtool -s\nQuorate:          No\n",
        ),
    ] {
        std::fs::write(root.join(file), text).unwrap();
    }
    let (v, code) = doctor(root, &[]);
    assert_eq!(code, 3);
    let c = codes(&v);
    assert_eq!(
        &c[..3],
        ["GLK-WITHDRAWN", "GLK-NO-QUORUM", "GLK-DLM-RECOVERY"]
    );
    let f = &v["findings"];
    assert_eq!(f[0]["nodes"], serde_json::json!(["n2"]));
    let ev = |i: usize| common::evidence(&f[i]);
    assert_eq!(
        ev(0),
        [
            ("n2/gfs2_sysfs.3".to_string(), 1),
            ("n2/kernel.log".to_string(), 3)
        ]
    );
    for (src, line) in ev(0).iter().chain(&ev(1)).chain(&ev(2)) {
        let l = cited(root, src, *line);
        assert!(
            [
                "withdraw",
                "Quorate",
                "block 1",
                "dlm_recover",
                "remove member"
            ]
            .iter()
            .any(|k| l.contains(k)),
            "{l}"
        );
    }
    assert_eq!(
        ev(2).len(),
        3,
        "block, the unfinished recovery and the member that left"
    );
    // The glock findings are still there, marked as happening in an unhealthy cluster.
    let hot = common::find(f, "code", "GLK-HOT-GLOCK");
    assert!(hot["title"]
        .as_str()
        .unwrap()
        .ends_with("(while the cluster is not healthy: see above)"));
}

#[test]
fn lost_events_and_corrupt_lines_weaken_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_capture("real/handoff-6.12", root);
    // LOST lines in n1's trace (one without a count, as the kernel says a loss of unknown
    // size), and a corrupt line in n2's glocks.
    let mut t = String::new();
    std::io::Read::read_to_string(
        &mut glockparse::input::open(&root.join("n1/trace_pipe.txt.xz")).unwrap(),
        &mut t,
    )
    .unwrap();
    std::fs::remove_file(root.join("n1/trace_pipe.txt.xz")).unwrap();
    let mid = t.len() / 2 + t[t.len() / 2..].find('\n').unwrap() + 1;
    std::fs::write(
        root.join("n1/trace_pipe.txt"),
        format!(
            "{}CPU:0 [LOST 42 EVENTS]\nCPU:1 [LOST EVENTS]\n{}",
            &t[..mid],
            &t[mid..]
        ),
    )
    .unwrap();
    let g = std::fs::read_to_string(root.join("n2/glocks.1")).unwrap();
    std::fs::write(root.join("n2/glocks.1"), format!("G:  s:ZZ garbage\n{g}")).unwrap();
    let (v, _) = doctor(root, &[]);
    let fs = v["findings"].as_array().unwrap();
    let lost = fs.iter().find(|f| f["code"] == "GLK-LOST-EVENTS").unwrap();
    assert_eq!(lost["evidence"][0]["shows"], "at least 43 events lost");
    assert_eq!(lost["nodes"], serde_json::json!(["n1"]));
    let bad = fs
        .iter()
        .find(|f| f["code"] == "GLK-UNPARSED-INPUT")
        .unwrap();
    let e = &bad["evidence"][0];
    assert!(e["source"].as_str().unwrap().ends_with("glocks.1"), "{e}");
    assert_eq!(e["line"], 1);
}

/// A trace cut short (an upload that stopped inside its xz stream) is read to the cut:
/// the storms and hot glocks of both nodes are still found, and GLK-UNPARSED-INPUT says
/// where the reading stopped. (glk said only `premature eof` before, and found nothing.)
#[test]
fn a_trace_cut_short_is_read_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_capture("real/handoff-6.12", root);
    let trace = root.join("n1/trace_pipe.txt.xz");
    let xz = std::fs::read(&trace).unwrap();
    std::fs::write(&trace, &xz[..xz.len() / 2]).unwrap();
    // What the cut stream holds, read without glk's trace reader: its whole lines.
    let mut held = Vec::new();
    let read = std::io::Read::read_to_end(&mut glockparse::input::open(&trace).unwrap(), &mut held);
    assert!(read.is_err(), "the cut stream reads to an error");
    let whole_lines = held.iter().filter(|&&b| b == b'\n').count();
    assert!(whole_lines > 1000, "{whole_lines}");
    let (v, _) = doctor(root, &[]);
    let fs = v["findings"].as_array().unwrap();
    let bad = fs
        .iter()
        .find(|f| f["code"] == "GLK-UNPARSED-INPUT")
        .unwrap();
    assert_eq!(bad["title"], "an input could not be read to its end");
    let shows = bad["evidence"][0]["shows"].as_str().unwrap();
    let stopped = format!(
        "{}: premature eof (after line {whole_lines})",
        trace.display()
    );
    assert_eq!(shows, stopped);
    for code in ["GLK-HOT-GLOCK", "GLK-DEMOTE-STORM"] {
        let f = fs.iter().find(|f| f["code"] == code).unwrap();
        assert_eq!(f["nodes"], serde_json::json!(["n1", "n2"]), "{code}");
    }
}

/// The README's table is the codes' own text: one row per code, in order
/// (`scripts/doctor-codes.py` rewrites it).
#[test]
fn the_readme_lists_every_code() {
    let readme = std::fs::read_to_string(testdata::workspace().join("README.md")).unwrap();
    let rows: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("| `GLK-"))
        .collect();
    assert_eq!(rows.len(), analysis::findings::CODES.len());
    for (row, c) in rows.iter().zip(&analysis::findings::CODES) {
        let want = format!(
            "| `{}` | {} | {} | {} | {} | {} |",
            c.code,
            c.severity.as_str(),
            c.means,
            c.threshold,
            c.evidence,
            c.remedy
        );
        assert_eq!(*row, want);
    }
}

/// A deadlock captured with its surroundings by glk itself (testdata README): the cycle with
/// the pids of `ps`, the stuck DLM waits with their ages, and nothing about the cluster's
/// state, which the real sysfs, kernel log and corosync files show healthy.
#[test]
fn a_lab_deadlock_with_its_real_surroundings() {
    let root = testdata::path("real/doctor-deadlock-6.12");
    let (v, code) = doctor(&root, &[]);
    assert_eq!(code, 3);
    let c = codes(&v);
    assert_eq!(c[0], "GLK-DEADLOCK");
    for healthy in [
        "GLK-WITHDRAWN",
        "GLK-NO-QUORUM",
        "GLK-DLM-RECOVERY",
        "GLK-UNPARSED-INPUT",
    ] {
        assert!(!c.iter().any(|x| x == healthy), "{healthy}: {c:?}");
    }
    let f = &v["findings"][0];
    // The waiting flock processes in D state, from ps.
    let ps_waiter = |node: &str| -> i64 {
        let ps = std::fs::read_to_string(root.join(format!("ps-{node}.txt"))).unwrap();
        ps.lines()
            .find(|l| l.contains("gfs2_glock_wait") && l.ends_with("flock"))
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let pids = sorted_pids(f);
    let mut want = vec![ps_waiter("n1"), ps_waiter("n2")];
    want.sort();
    assert_eq!(pids, want);
    // The stuck waits from the DLM dumps' ages: past the default 30 s, each citing a dump
    // line of its own waiting lock.
    let stuck: Vec<&serde_json::Value> = elements(&v["findings"])
        .filter(|f| f["code"] == "GLK-STUCK-WAITER")
        .collect();
    assert_eq!(stuck.len(), 2);
    for s in stuck {
        assert!(want.contains(&s["pids"][0].as_i64().unwrap()), "{s}");
        let e = &s["evidence"][0];
        let line = cited_by(&root, e);
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[3], s["pids"][0].to_string(), "{line}");
        assert!(cols[10].parse::<u64>().unwrap() > 30_000_000, "{line}");
    }
}

/// A remote demote is another node's doing: a storm seen in one node's capture is between
/// that node and one not captured, and the title says so; with both nodes, it names both.
#[test]
fn a_storm_seen_from_one_node_names_the_node_not_captured() {
    let storm = |v: &serde_json::Value| {
        elements(&v["findings"])
            .find(|f| f["code"] == "GLK-DEMOTE-STORM" && f["glocks"][0] == "2/2239")
            .map(|f| f["title"].as_str().unwrap().to_string())
            .unwrap()
    };
    let dir = testdata::path("real/handoff-6.12");
    let (one, _) = doctor(&dir.join("n1"), &[]);
    let title = storm(&one);
    assert!(
        title.starts_with("demote storm on 2/2239 between n1 and a node not captured: "),
        "{title}"
    );
    let (both, _) = doctor(&dir, &[]);
    let title = storm(&both);
    assert!(
        title.starts_with("demote storm on 2/2239 between n1, n2: "),
        "{title}"
    );
}

/// Where no glocks file shows the inode behind a hot glock (its `I:` line), the title names
/// the glock alone: `inode 2/2239 is shared`, not `inode 2/2239 (inode) is shared`.
#[test]
fn a_hot_glock_without_its_inode_is_named_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_capture("real/handoff-6.12", root);
    for n in ["n1", "n2"] {
        for e in std::fs::read_dir(root.join(n)).unwrap().flatten() {
            let name = e.file_name().into_string().unwrap();
            if name.starts_with("glocks.") {
                let text = std::fs::read_to_string(e.path()).unwrap();
                let kept: String = text
                    .split_inclusive('\n')
                    .filter(|l| !l.starts_with(" I:"))
                    .collect();
                assert!(kept.len() < text.len(), "{name}: no I: line");
                std::fs::write(e.path(), kept).unwrap();
            }
        }
    }
    let title = |path: &Path| {
        let (v, _) = doctor(path, &[]);
        elements(&v["findings"])
            .find(|f| f["code"] == "GLK-HOT-GLOCK" && f["glocks"][0] == "2/2239")
            .map(|f| f["title"].as_str().unwrap().to_string())
            .unwrap()
    };
    let alone = title(root);
    assert!(alone.starts_with("inode 2/2239 is shared: "), "{alone}");
    let with = title(&testdata::path("real/handoff-6.12"));
    let object = "inode 2/2239 (dir, 3864 bytes) is shared: ";
    assert!(with.starts_with(object), "{with}");
}

/// `--keep` and `--nodes` act on the capture that `live` takes; with captures given they
/// are refused, naming the option, and nothing is written where `--keep` points.
#[test]
fn options_of_live_are_refused_with_captures() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("kept");
    let fixture = testdata::path("real/handoff-6.12");
    let refused = |extra: &[&std::ffi::OsStr]| {
        let o = Command::new(env!("CARGO_BIN_EXE_glk"))
            .arg("doctor")
            .arg(&fixture)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{extra:?}");
        assert!(o.stdout.is_empty(), "{extra:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = refused(&["--keep".as_ref(), keep.as_os_str()]);
    assert!(err.contains("--keep goes with `glk doctor live`"), "{err}");
    assert!(!keep.exists());
    let err = refused(&["--nodes".as_ref(), "n2".as_ref()]);
    assert!(err.contains("--cluster and --nodes go with"), "{err}");
}
