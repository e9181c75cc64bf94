//! `glk capture` against a debugfs-shaped directory built from the real fixtures (this
//! machine has no GFS2), and its bundle read back by `glk analyze`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn glk() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glk"))
}

/// `ROOT/gfs2/lab:gfs/{glocks,...}` and `ROOT/dlm/gfs_{locks,waiters}` from n1's snapshot 4.
fn fake_debugfs(root: &Path) {
    let fs = root.join("gfs2/lab:gfs");
    std::fs::create_dir_all(&fs).unwrap();
    std::fs::create_dir_all(root.join("dlm")).unwrap();
    let src = |f: &str| testdata::path(&format!("real/dlm2-6.1/n1/{f}.4"));
    for f in ["glocks", "glstats", "sbstats", "glockfd"] {
        std::fs::copy(src(f), fs.join(f)).unwrap();
    }
    std::fs::copy(src("dlm_locks"), root.join("dlm/gfs_locks")).unwrap();
    std::fs::copy(src("dlm_waiters"), root.join("dlm/gfs_waiters")).unwrap();
}

/// `glk capture --debugfs ROOT ARGS... -o OUT`: how it ended.
fn capture(root: &Path, out: &Path, args: &[&str]) -> std::process::Output {
    capture_with_path(root, out, args, None)
}

/// [`capture`] with `PATH` set to `path`, when given.
fn capture_with_path(
    root: &Path,
    out: &Path,
    args: &[&str],
    path: Option<&str>,
) -> std::process::Output {
    let mut all = vec!["capture", "--debugfs", root.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend(["-o", out.to_str().unwrap()]);
    let mut cmd = glk();
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    cmd.args(all).output().unwrap()
}

/// The one node directory a capture wrote.
fn only_node(out: &Path) -> PathBuf {
    let nodes: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    nodes.into_iter().next().unwrap()
}

/// A scratch directory (see [`tmp`]) holding the [`fake_debugfs`] tree `debugfs`.
fn scratch_with_debugfs(name: &str) -> (tempfile::TempDir, PathBuf) {
    let scratch = tmp(name);
    let root = scratch.path().join("debugfs");
    fake_debugfs(&root);
    (scratch, root)
}

fn tmp(name: &str) -> tempfile::TempDir {
    common::scratch(&format!("capture-{name}"))
}

/// A live glockfd gives one page at most: a capture whose read came within a line of a
/// page says that processes may be missing, and keeps what it read. A FIFO stands in for
/// the debugfs file (size 0, one read).
#[test]
fn a_glockfd_read_that_fills_a_page_is_named_as_possibly_cut() {
    let (scratch, root) = scratch_with_debugfs("glockfd-page");
    let d = scratch.path();
    let fifo = root.join("gfs2/lab:gfs/glockfd");
    testdata::fifo_at(&fifo);
    let page = glockparse::glockfd::page_size();
    let lines = testdata::glockfd_lines(page);
    let written = lines.clone();
    let writer = std::thread::spawn(move || std::fs::write(&fifo, written).unwrap());
    let out = d.join("bundle");
    let o = capture(&root, &out, &["--count", "1"]);
    writer.join().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "snapshot 0: glockfd: {} bytes, all the kernel gives in one read (a {page}-byte page)",
            lines.len()
        )),
        "{err}"
    );
    let n = only_node(&out);
    assert_eq!(std::fs::read_to_string(n.join("glockfd.0")).unwrap(), lines);
}

#[test]
fn snapshots_copy_every_file_with_times() {
    let (scratch, root) = scratch_with_debugfs("dir");
    let d = scratch.path();
    let out = d.join("bundle");
    let o = capture(&root, &out, &["--count", "3", "--interval", "0.2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let n = &only_node(&out);
    let times: Vec<f64> = (0..3).map(|i| check_snapshot(n, i)).collect();
    // The lock table, which tells this filesystem's glocks from another's on other nodes.
    assert_eq!(
        std::fs::read_to_string(n.join("table")).unwrap(),
        "lab:gfs\n"
    );
    // Snapshot N is taken no earlier than N intervals after snapshot 0: the span the stuck
    // rule measures is never short of what was asked for.
    for (i, t) in times.iter().enumerate() {
        assert!(t - times[0] >= 0.2 * i as f64, "{times:?}");
    }
    // The kernel's log buffer, as dmesg prints it: `<N>[ secs] text` lines (root may
    // always read it; others where dmesg_restrict allows).
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } == 0 {
        let klog = std::fs::read_to_string(n.join("kernel.log")).unwrap();
        assert!(
            klog.lines().count() > 0 && klog.starts_with('<'),
            "{klog:.200}"
        );
    } else {
        testdata::skip(
            "snapshots_copy_every_file_with_times (kernel.log)",
            "reading the kernel log needs root",
        );
    }
    // The bundle is an analyze input.
    let v = common::glk_json(&["analyze", out.to_str().unwrap(), "--json"]);
    assert_eq!(v["nodes"][0]["snapshots"], 3);
    assert_eq!(v["errors"]["count"], 0);
    // A filesystem that is not there is named.
    let o = capture(&root, &d.join("x"), &["--fs", "nosuch"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no GFS2 filesystem \"nosuch\""));
}

/// Snapshot `i` of a capture of the dlm2-6.1 n1 files: the debugfs copies byte for byte,
/// the process table (this test process, under its real parent), `locks.N` and
/// `gfs2_sysfs.N`; returns the snapshot's time.
fn check_snapshot(n: &Path, i: u32) -> f64 {
    for (f, src) in [
        ("glocks", "glocks"),
        ("glstats", "glstats"),
        ("dlm_locks", "dlm_locks"),
    ] {
        let got = std::fs::read(n.join(format!("{f}.{i}"))).unwrap();
        assert_eq!(
            got,
            std::fs::read(testdata::path(&format!("real/dlm2-6.1/n1/{src}.4"))).unwrap()
        );
    }
    // The process table holds this test process, under its real parent.
    let (tasks, d) = bundle::procs::read(
        std::fs::File::open(n.join(format!("procs.{i}"))).unwrap(),
        "procs",
    );
    assert!(d.is_clean(), "{d:?}");
    let me = i64::from(std::process::id());
    let t = tasks.iter().find(|t| t.tid == me).expect("this process");
    assert_eq!(t.ppid, i64::from(std::os::unix::process::parent_id()));
    assert!(n.join(format!("locks.{i}")).is_file());
    // sysfs state: this machine has no GFS2 mounted, so no key, but the file is there.
    assert!(n.join(format!("gfs2_sysfs.{i}")).is_file());
    std::fs::read_to_string(n.join(format!("time.{i}")))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn packed_bundle_with_a_trace() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return testdata::skip("packed_bundle_with_a_trace", "capture --trace needs root");
    }
    let (scratch, root) = scratch_with_debugfs("tar");
    let d = scratch.path();
    let out = d.join("bundle.tar.zst");
    let child = glk()
        .args([
            "capture",
            "--debugfs",
            root.to_str().unwrap(),
            "--count",
            "2",
            "--interval",
            "0.5",
            "--trace",
            "1.5",
            "--trace-events",
            "sched:sched_process_exec",
            "-o",
            out.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    Command::new("true").status().unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = common::glk_json(&["analyze", out.to_str().unwrap(), "--json"]);
    assert_eq!(v["nodes"][0]["snapshots"], 2);
    assert_eq!(v["nodes"][0]["traces"], 1);
    // The trace holds the exec of `true`, and the export sees it.
    let e = d.join("export");
    let x = glk()
        .args(["export", out.to_str().unwrap(), "-o", e.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(x.status.success(), "{}", String::from_utf8_lossy(&x.stderr));
    assert!(std::fs::read_dir(e.join("kind=events")).unwrap().count() == 1);
}

#[test]
fn top_and_stats_read_a_packed_bundle() {
    let (scratch, root) = scratch_with_debugfs("packed-read");
    let d = scratch.path();
    let out = d.join("b.tar.zst");
    let o = capture(&root, &out, &["--count", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = common::glk_json(&["top", "--json", out.to_str().unwrap()]);
    let want = std::fs::read_to_string(testdata::path("real/dlm2-6.1/n1/glocks.4"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("G:"))
        .count();
    assert_eq!(v["summary"]["total"]["glocks"], want);
    assert_eq!(v["errors"]["count"], 0);
    let v = common::glk_json(&["stats", "--json", out.to_str().unwrap()]);
    assert!(!v["glocks"].as_array().unwrap().is_empty());
    assert_eq!(v["types"].as_array().unwrap().len(), 10);
}

/// A directory holding an executable `dlm_tool` that runs `script`, to put first on PATH.
fn fake_dlm_tool(dir: &Path, script: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let tool = dir.join("dlm_tool");
    std::fs::write(&tool, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn posix_locks_are_recorded_and_a_stuck_dlm_tool_costs_only_them() {
    let (scratch, root) = scratch_with_debugfs("plocks");
    let d = scratch.path();
    // dlm_tool answers: its output is plocks.N, asked for the filesystem's lockspace.
    let dump = "8770 WR 0-9223372036854775807 nodeid 1 pid 431 owner ffff8a0c4e6d2f00 rown 0\n";
    let path = fake_dlm_tool(
        &d.join("bin"),
        &format!("[ \"$1 $2\" = \"plocks gfs\" ] && printf '{dump}'"),
    );
    let out = d.join("bundle");
    let o = capture_with_path(&root, &out, &["--count", "1"], Some(&path));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let node = only_node(&out);
    assert_eq!(
        std::fs::read_to_string(node.join("plocks.0")).unwrap(),
        dump
    );
    // dlm_tool never answers (dlm_controld stuck): the capture goes on after 5 s without
    // that file, and says so.
    let path = fake_dlm_tool(&d.join("bin2"), "exec sleep 60");
    let out = d.join("bundle2");
    let t = std::time::Instant::now();
    let o = capture_with_path(&root, &out, &["--count", "1"], Some(&path));
    let took = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!((5.0..30.0).contains(&took), "{took}");
    assert!(
        stderr.contains("POSIX locks of gfs not recorded"),
        "{stderr}"
    );
    let node = only_node(&out);
    assert!(node.join("glocks.0").is_file() && !node.join("plocks.0").exists());
}
