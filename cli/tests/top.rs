//! `glk top` end to end, through the built binary.

use std::path::Path;
use std::process::{Command, Output};

fn glk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(args)
        .output()
        .expect("run glk")
}

fn json_docs(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect()
}

fn p(rel: &str) -> String {
    testdata::path(rel).display().to_string()
}

#[test]
fn every_fixture_runs_and_reports_only_real_errors() {
    let files = testdata::files("", |n| {
        n.starts_with("glocks")
            || n.ends_with(".glocks")
            || n.starts_with("glocktop")
            || n.starts_with("dmesg-")
    });
    assert!(files.len() >= 40, "{}", files.len());
    for f in files {
        let out = glk(&["top", "--json", "--limit", "0", f.to_str().unwrap()]);
        let orphan = f.to_string_lossy().contains("orphan-holder");
        if orphan {
            // One-line excerpts holding a holder line without its glock: nothing to show,
            // and glk says so instead of printing an empty view.
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{}", f.display());
            assert!(
                err.contains("not a glocks file, or a damaged one")
                    && err.contains(":1: line outside a glock record"),
                "{err}"
            );
            continue;
        }
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = &json_docs(&out)[0];
        let errors = doc["errors"]["count"].as_u64().unwrap();
        assert_eq!(errors, 0, "{}", f.display());
        assert!(out.stderr.is_empty(), "{}", f.display());
    }
}

#[test]
fn json_schema_has_the_documented_keys() {
    let out = glk(&["top", "--json", &p("real/dlm2-6.1/n2/glocks.4")]);
    assert!(out.status.success());
    let doc = &json_docs(&out)[0];
    for k in [
        "glocks",
        "summary",
        "errors",
        "sources",
        "taken_unix",
        "iteration",
    ] {
        assert!(doc.get(k).is_some(), "missing {k}");
    }
    let first = &doc["glocks"][0];
    for k in [
        "glock",
        "type",
        "state",
        "target",
        "flags",
        "demote_us",
        "holders",
        "waiters",
    ] {
        assert!(first.get(k).is_some(), "missing glocks[].{k}");
    }
    // Phase 2 on n2: the only waiter is the flock n1 holds.
    assert_eq!(first["glock"], "6/60af5");
    assert_eq!(first["type"], "flock");
    let w = &first["waiters"][0];
    for k in ["pid", "comm", "state", "flags", "caller"] {
        assert!(w.get(k).is_some(), "missing waiter.{k}");
    }
    assert_eq!(w["state"], "EX");
    assert_eq!(w["caller"], "__do_sys_flock+0x144/0x1e0");
    assert_eq!(doc["summary"]["total"]["waiters"], 1);
    assert_eq!(doc["summary"]["total"]["glocks"], 1051);
}

#[test]
fn sort_limit_and_type_options() {
    let f = p("real/dlm2-6.1/n1/glocks.4");
    let out = glk(&["top", "--json", "--sort", "demote", "--limit", "1", &f]);
    let doc = &json_docs(&out)[0];
    let g = doc["glocks"].as_array().unwrap();
    assert_eq!(g.len(), 1);
    // n1 holds the flock and has a remote demote request pending for it.
    assert_eq!(g[0]["glock"], "6/60af5");
    assert!(g[0]["demote_us"].as_u64().unwrap() > 0);
    let out = glk(&[
        "top",
        "--json",
        "--type",
        "rgrp,journal",
        "--limit",
        "0",
        &f,
    ]);
    let doc = &json_docs(&out)[0];
    for g in doc["glocks"].as_array().unwrap() {
        assert!(g["type"] == "rgrp" || g["type"] == "journal");
    }
    let out = glk(&["top", "--type", "bogus", &f]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown glock type"));
}

#[test]
fn deadlock_excerpts_show_holder_and_waiter_per_host() {
    let out = glk(&[
        "top",
        &p("public/cluster-devel-2019-rename-deadlock/deadlock-host018.glocks"),
        &p("public/cluster-devel-2019-rename-deadlock/deadlock-host019.glocks"),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // Waiters rank first: each host waits for the glock the other holds.
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("2/")).collect();
    assert!(lines[0].starts_with("2/3348") || lines[0].starts_with("2/3347"));
    assert!(text.contains("waiting EX pid 6414"));
    assert!(text.contains("deadlock-host019.glocks"));
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = glk(&["top", "/nonexistent/glocks"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("glk: /nonexistent/glocks:"), "{err}");
}

#[test]
fn compressed_input() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    // A copy under a name with no companion files, like the compressed one.
    let src = dir.join("plain.glocks");
    std::fs::copy(testdata::path("real/dlm2-6.1/n2/glocks.4"), &src).unwrap();
    let dst = dir.join("glocks.xz");
    let st = Command::new("xz")
        .args(["-c", src.to_str().unwrap()])
        .stdout(std::fs::File::create(&dst).unwrap())
        .status();
    if st.map(|s| s.success()).unwrap_or(false) {
        let strip = |path: &Path| {
            let mut d = json_docs(&glk(&["top", "--json", path.to_str().unwrap()])).remove(0);
            for g in d["glocks"].as_array_mut().unwrap() {
                g.as_object_mut().unwrap().remove("source");
            }
            d
        };
        let (a, b) = (strip(&src), strip(&dst));
        assert!(a["glocks"] == b["glocks"], "decoded glocks differ");
        assert_eq!(a["summary"], b["summary"]);
    }
}

#[test]
fn follow_mode_tracks_waiters_across_refreshes() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let file = dir.join("glocks");
    let one = "G:  s:EX n:2/10 f:q t:EX d:EX/0 a:0 v:0 r:3 m:200\n H: s:EX f:H e:0 p:1 [a] f+0x1/0x2\n H: s:EX f:W e:0 p:2 [b] g+0x1/0x2\n";
    std::fs::write(&file, one).unwrap();
    // Rewrite the file while glk refreshes: a second waiter appears.
    let writer = {
        let file = file.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(700));
            let two = format!("{one} H: s:SH f:W e:0 p:3 [c] h+0x1/0x2\n");
            std::fs::write(Path::new(&file), two).unwrap();
        })
    };
    let out = glk(&[
        "top",
        "--json",
        "--follow",
        "-n",
        "3",
        "-d",
        "0.5",
        file.to_str().unwrap(),
    ]);
    writer.join().unwrap();
    assert!(out.status.success());
    let docs = json_docs(&out);
    assert_eq!(docs.len(), 3);
    let waiters = |d: &serde_json::Value| d["glocks"][0]["waiters"].as_array().unwrap().clone();
    assert_eq!(waiters(&docs[0]).len(), 1);
    assert_eq!(waiters(&docs[0])[0]["new"], false);
    let last = waiters(&docs[2]);
    assert_eq!(last.len(), 2);
    let old = last.iter().find(|w| w["pid"] == 2).unwrap();
    assert!(old["seen_waiting_s"].as_f64().unwrap() >= 0.9);
    let newer = last.iter().find(|w| w["pid"] == 3).unwrap();
    assert!(newer["seen_waiting_s"].as_f64().unwrap() < old["seen_waiting_s"].as_f64().unwrap());
}

#[test]
fn closed_pipe_is_not_a_crash() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(["top", "--limit", "0", &p("real/nolock-6.1/glocks.2")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn no_path_without_gfs2_is_a_clear_error() {
    let gfs2 = bundle::mounts::points_of(&bundle::mounts::of_this_process(), "gfs2");
    if !gfs2.is_empty() {
        return testdata::skip(
            "no_path_without_gfs2_is_a_clear_error",
            "a GFS2 filesystem is mounted here, so glk top with no path reads it",
        );
    }
    let out = glk(&["top", "--once"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("debugfs is not mounted") || err.contains("no GFS2 filesystem is mounted"),
        "{err}"
    );
}

#[test]
fn both_nodes_name_the_holder_of_a_waited_lock() {
    let (n1, n2) = (
        p("real/dlm2-6.1/n1/glocks.4"),
        p("real/dlm2-6.1/n2/glocks.4"),
    );
    let out = glk(&["top", "--json", "--stuck-after", "10", &n1, &n2]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = &json_docs(&out)[0];
    // 1046 glocks of the two nodes are only held: left out.
    assert_eq!(doc["held_hidden"], 1046);
    let g = doc["glocks"].as_array().unwrap();
    assert_eq!(g.len(), 2);
    let w = &g[0];
    assert_eq!(
        (w["glock"].as_str(), w["source"].as_str()),
        (Some("6/60af5"), Some(n2.as_str()))
    );
    // n2's DLM lock has waited 12,706,292 µs (dlm_locks.4 of n2) for node 1's EX lock.
    assert_eq!(w["wait_us"], 12_706_292);
    assert_eq!(w["wait_source"], "dlm");
    assert_eq!(w["stuck"], true);
    assert_eq!(w["waits_for"], "node 1 pid 866 EX");
    let d = &w["dlm"];
    assert_eq!(
        (d["rqmode"].as_str(), d["pid"].as_u64()),
        (Some("EX"), Some(860))
    );
    assert_eq!(
        (d["master"].as_str(), d["master_node"].as_u64()),
        (Some("remote"), Some(1))
    );
    let b = &d["blockers"][0];
    assert_eq!(
        (b["node"].as_u64(), b["pid"].as_u64(), b["grmode"].as_str()),
        (Some(1), Some(866), Some("EX"))
    );
    assert_eq!(w["open_files"][0]["pid"], 860);
    // n1 holds it with the remote demote pending; it waits for nothing.
    assert_eq!(g[1]["source"].as_str(), Some(n1.as_str()));
    assert!(g[1]["dlm"].is_null() && g[1]["waits_for"].is_null());
    assert!(g[1]["glstats"]["srttb_ns"].as_i64().unwrap() > 0);
    // Under the default threshold (30 s) the same wait (20.6 s) is not stuck; alone, n2 knows the
    // master but not the holder.
    let out = glk(&["top", "--json", &n2]);
    let w = &json_docs(&out)[0]["glocks"][0];
    assert_eq!(w["stuck"], false);
    assert_eq!(w["waits_for"], "node 1 (master)");
    // --held brings the held glocks back.
    let out = glk(&["top", "--json", "--held", "--limit", "0", &n2]);
    let doc = &json_docs(&out)[0];
    assert_eq!(doc["held_hidden"], 0);
    assert_eq!(doc["glocks"].as_array().unwrap().len(), 524);
}

/// A node's request is never blocked by its own lock. Each node's files are read one after
/// the other, so the master's dump can be of another moment than the waiting node's: on a
/// glock handed back and forth every few tens of milliseconds (the hand-off captures) it
/// can show the waiter's own lock granted already. Every pair of the two nodes' snapshots
/// is read; `handoff-6.12`'s `glocks.3` has the case (before the fix: n2 waiting for node 2 pid
/// 335 on 2/2239).
#[test]
fn a_request_never_waits_for_its_own_node() {
    for (dir, snapshots) in [
        ("real/handoff-6.1", 4),
        ("real/handoff-6.12", 4),
        ("real/dlm2-6.1", 6),
    ] {
        for i in 0..snapshots {
            let (n1, n2) = (
                p(&format!("{dir}/n1/glocks.{i}")),
                p(&format!("{dir}/n2/glocks.{i}")),
            );
            let out = glk(&["top", "--json", "--limit", "0", &n1, &n2]);
            assert!(out.status.success(), "{dir} {i}");
            for g in json_docs(&out)[0]["glocks"].as_array().unwrap() {
                let source = g["source"].as_str().unwrap();
                let own = if source == n1 { 1 } else { 2 };
                for b in g["dlm"]["blockers"].as_array().into_iter().flatten() {
                    assert_ne!(b["node"], own, "{source} {}: {b}", g["glock"]);
                }
            }
        }
    }
    // That wait is in the master's queue, and n1's glocks file names who holds the glock.
    let (n1, n2) = (
        p("real/handoff-6.12/n1/glocks.3"),
        p("real/handoff-6.12/n2/glocks.3"),
    );
    let out = glk(&["top", "--json", "--limit", "0", &n1, &n2]);
    let doc = &json_docs(&out)[0];
    let mut waits = doc["glocks"].as_array().unwrap().iter();
    let w = waits
        .find(|g| g["glock"] == "2/2239" && g["source"] == n2.as_str())
        .unwrap();
    assert_eq!(w["waits_for"], "DLM queue on node 1");
    assert_eq!(w["held_elsewhere"][0]["node"], "n1");
    assert_eq!(w["held_elsewhere"][0]["pid"], 751);
}

/// A node knows another node's blocking lock from the master's dump, whose pid is the
/// process that last asked the DLM for it. Where no holder of that node names another
/// process, the text says that the pid shown is only the DLM's, and why: alone, the other
/// node's file is missing; with it (read a moment apart, on a glock handed back and forth),
/// it shows no holder.
#[test]
fn a_pid_shown_from_the_dlm_alone_says_so() {
    let (n1, n2) = (
        p("real/handoff-6.12/n1/glocks.3"),
        p("real/handoff-6.12/n2/glocks.3"),
    );
    let hint = "(pid 335 is the process that last asked the DLM for node 2's lock, not \
                necessarily its holder now: ";
    let alone = String::from_utf8(glk(&["top", "--once", "--limit", "0", &n1]).stdout).unwrap();
    let missing = "node 2's glocks file names the holder; give it too, or use --cluster)";
    assert!(alone.contains("node 2 pid 335 EX"), "{alone}");
    assert!(alone.contains(&format!("{hint}{missing}")), "{alone}");
    let both = glk(&["top", "--once", "--limit", "0", &n1, &n2]).stdout;
    let both = String::from_utf8(both).unwrap();
    let apart = "node 2's glocks file, read a moment apart, shows no holder of it)";
    assert!(both.contains(&format!("{hint}{apart}")), "{both}");
    assert!(!both.contains(missing), "{both}");
}

#[test]
fn top_and_doctor_judge_stuck_by_one_rule_and_one_default() {
    // n1's DLM lock on 6/4101d has waited 59 s in its dump: stuck under the shared default
    // (30 s) for both commands, and not stuck for either past 60 s, whichever name the
    // option is given by.
    let dir = p("real/doctor-deadlock-6.12");
    let n1 = p("real/doctor-deadlock-6.12/n1/glocks.1");
    let stuck_in_top = |extra: &[&str]| {
        let mut args = vec!["top", "--json"];
        args.extend(extra);
        args.push(&n1);
        let out = glk(&args);
        let doc = &json_docs(&out)[0];
        let g = doc["glocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["glock"] == "6/4101d")
            .expect("6/4101d listed")
            .clone();
        g["stuck"].as_bool().unwrap()
    };
    let stuck_in_doctor = |extra: &[&str]| {
        let mut args = vec!["doctor", "--json", "--fail-on", "critical"];
        args.extend(extra);
        args.push(&dir);
        let out = glk(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "GLK-STUCK-WAITER" && f["glocks"][0] == "6/4101d")
    };
    assert!(stuck_in_top(&[]) && stuck_in_doctor(&[]));
    for name in ["--stuck-after", "--stuck-secs"] {
        assert!(!stuck_in_top(&[name, "60"]), "{name}");
        assert!(!stuck_in_doctor(&[name, "60"]), "{name}");
        assert!(
            stuck_in_top(&[name, "59"]) && stuck_in_doctor(&[name, "59"]),
            "{name}"
        );
    }
}

/// What reading a companion file ran into is in the JSON's `problems`, the file named (a
/// DLM dump with a damaged line here; a live glockfd that fills a page is another, tested
/// with the companions' reader).
#[test]
fn companion_problems_are_in_the_json() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    std::fs::copy(
        testdata::path("real/dlm2-6.1/n1/glocks.4"),
        dir.join("glocks.4"),
    )
    .unwrap();
    let mut dump = std::fs::read(testdata::path("real/dlm2-6.1/n1/dlm_locks.4")).unwrap();
    dump.extend_from_slice(b"zz not a lock\x1b[2J\n");
    std::fs::write(dir.join("dlm_locks.4"), &dump).unwrap();
    let out = glk(&["top", "--json", dir.join("glocks.4").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc = &json_docs(&out)[0];
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let note = problems[0].as_str().unwrap();
    let lines = dump.iter().filter(|b| **b == b'\n').count();
    assert!(
        note.starts_with(&format!(
            "{}: 1 unparsed line(s); first: {}:{lines}:",
            dir.join("dlm_locks.4").display(),
            dir.join("dlm_locks.4").display()
        )),
        "{note}"
    );
    assert!(
        note.contains("\\x1b[2J") && !note.contains('\x1b'),
        "{note}"
    );
    // Without problems, the key is left out.
    let clean = glk(&["top", "--json", &p("real/dlm2-6.1/n1/glocks.4")]);
    assert!(json_docs(&clean)[0].get("problems").is_none());
}

/// A process may name itself anything, escape sequences included (`prctl(PR_SET_NAME)`),
/// and the kernel repeats its name in the glocks file, the trace and /proc: glk prints it
/// quoted, so that it cannot write on the terminal of whoever looks at its locks.
#[test]
fn a_process_name_never_writes_on_the_terminal() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("n1");
    std::fs::create_dir(&dir).unwrap();
    let from = testdata::path("real/flock-deadlock-6.12/deadlock/n1");
    let named = |b: Vec<u8>| -> Vec<u8> {
        String::from_utf8(b)
            .unwrap()
            .replace("flock", "fl\x1b[2Jock")
            .into_bytes()
    };
    for e in std::fs::read_dir(&from).unwrap().flatten() {
        let name = e.file_name().into_string().unwrap();
        if name.ends_with(".2") {
            let mut data = std::fs::read(e.path()).unwrap();
            if name == "procs.2" {
                data = named(data);
            }
            std::fs::write(dir.join(&name), data).unwrap();
        }
    }
    let glocks = scratch.path().join("held.glocks");
    std::fs::write(
        &glocks,
        "G:  s:EX n:6/223a f:yIqob t:EX d:EX/0 a:0 v:0 r:3 m:200 p:0\n \
         H: s:EX f:W e:0 p:243 [fl\x1b[2Jock] __do_sys_flock+0x11c/0x1e0\n",
    )
    .unwrap();
    let trace = scratch.path().join("trace.txt");
    std::fs::write(
        &trace,
        "  fl\x1b[2Jock-1234    [001] .....  100.000001: gfs2_promote: 253,1 glock 6:8762 \
         promote first EX\n",
    )
    .unwrap();
    let p = |x: &Path| x.to_str().unwrap().to_string();
    for args in [
        vec!["top".into(), "--once".into(), "--plain".into(), p(&glocks)],
        vec!["analyze".into(), p(&dir)],
        vec!["trace".into(), "--input".into(), p(&trace)],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = glk(&args);
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("fl\\x1b[2Jock"), "{args:?}: {text}");
        assert!(!text.contains('\x1b'), "{args:?}: {text}");
    }
}
