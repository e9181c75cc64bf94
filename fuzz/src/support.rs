//! Targets for what glk reads beside the lock dumps, and for other tools' collections:
//! `dlm_tool plocks`, process tables (glk's `procs.N`, sos's `ps`, a copy of `/proc`),
//! `/proc/locks`, kernel logs, the sysfs, cluster and mount files, and whole sos reports
//! and gfs2_lockcapture tarballs through every analysis and finding.

use std::path::Path;

use crate::{check_lines, line_count};

/// `dlm_tool plocks`: every lock's line exists, and its words and pairings can be made.
pub(crate) fn plocks(bytes: &[u8]) {
    let (locks, d) = glockparse::plocks::read_all(bytes, "fuzz");
    check_lines(&d, bytes);
    let lines = line_count(bytes);
    for p in &locks {
        assert!(p.line >= 1 && p.line <= lines, "plock line {}", p.line);
        assert!(
            p.start <= p.end,
            "a range that ends before it starts: {p:?}"
        );
        let _ = (p.inode_glock(), p.range(), p.resource(), p.mode());
    }
    for w in locks.iter().filter(|p| p.is_waiting()).take(32) {
        for h in locks.iter().take(32) {
            let _ = w.is_blocked_by(h);
        }
    }
}

/// A process table, glk's or sos's `ps`: lines exist, and every ancestor walk ends (a
/// damaged table may make a parent its own descendant).
pub(crate) fn procs(bytes: &[u8]) {
    let (tasks, d) = bundle::procs::read(bytes, "fuzz");
    check_lines(&d, bytes);
    let tids: Vec<i64> = tasks.iter().map(|t| t.tid).collect();
    let table = bundle::procs::Table::new(tasks);
    for tid in tids {
        let up = table.ancestors(tid);
        assert!(up.len() <= 65, "{} ancestors of {tid}", up.len());
    }
}

/// A copy of `/proc/locks`.
pub(crate) fn proc_locks(bytes: &[u8]) {
    let (locks, d) = bundle::procs::read_locks(bytes, "fuzz");
    check_lines(&d, bytes);
    let lines = line_count(bytes);
    assert!(locks.iter().all(|l| l.line >= 1 && l.line <= lines));
}

/// `fdlocks.N` (who holds which lock through which open file): every record cites its line.
pub(crate) fn fdlocks(bytes: &[u8]) {
    let (locks, d) = bundle::fdlocks::read(bytes, "fuzz");
    check_lines(&d, bytes);
    let lines = line_count(bytes);
    assert!(locks
        .iter()
        .all(|l| l.lock.line >= 1 && l.lock.line <= lines));
}

/// One process's `/proc/PID/status` (and `stack`) in a copy of `/proc`, as
/// gfs2_lockcapture saves it: a task, or an error naming the file and a line of it.
pub(crate) fn proc_status(bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pid = dir.path().join("4242");
    std::fs::create_dir(&pid).expect("a directory");
    std::fs::write(pid.join("status"), bytes).expect("writing the input");
    std::fs::write(pid.join("stack"), bytes).expect("writing the input");
    let (tasks, d) = bundle::procs::read_proc_dir(dir.path());
    // One status: a task, or an error that says why not.
    assert_eq!(tasks.len() as u64 + d.errors, 1, "{d:?}");
    let lines = line_count(bytes);
    for e in &d.first_errors {
        assert!(e.line <= lines, "error names line {} of {lines}", e.line);
        assert!(e.source.ends_with("4242/status"), "{}", e.source);
    }
    for t in &tasks {
        assert!(
            t.line >= 1 && t.line <= lines,
            "task line {} of {lines}",
            t.line
        );
    }
}

/// A kernel log (glk's `kernel.log`, sos's `dmesg`): events on lines that exist.
pub(crate) fn kernel_log(bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("kernel.log");
    std::fs::write(&path, bytes).expect("writing the input");
    let events = bundle::health::kernel_log(&path).expect("a file that exists");
    let lines = line_count(bytes);
    assert!(events.iter().all(|e| e.line >= 1 && e.line <= lines));
    let _ = bundle::health::recovery_in_progress(&events);
}

/// The small node files: sysfs state, `cluster.txt`, `mountinfo`.
pub(crate) fn node_files(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let lines = text.lines().count() as u64;
    let s = bundle::health::Sysfs::parse(&text);
    for l in [s.withdrawn(), s.locking_blocked()].into_iter().flatten() {
        assert!(l >= 1 && l <= lines, "sysfs line {l} of {lines}");
    }
    if let Some((used, l)) = s.used_fraction() {
        assert!(
            used.is_finite() && l >= 1 && l <= lines,
            "{used} on line {l}"
        );
    }
    let _ = s.mount();
    let c = bundle::health::Cluster::parse(&text);
    let cited = c.quorate.map(|(_, l)| l).into_iter();
    assert!(cited
        .chain(c.stopped.iter().map(|s| s.2))
        .all(|l| l >= 1 && l <= lines));
    let mounts = bundle::mounts::parse(bytes);
    let _ = bundle::mounts::points_of(&mounts, "gfs2");
    let _ = bundle::procs::gfs2_devices(&text);
}

/// A sos report or gfs2_lockcapture tarball (uncompressed) through discovery, the choice
/// of its first filesystem (`--fs`), every reader, every analysis and every finding, as
/// `glk doctor` runs them.
pub(crate) fn collection(bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let tarball = dir.path().join("collection.tar");
    std::fs::write(&tarball, bytes).expect("writing the input");
    let Ok(mut caps) = bundle::discover(&[tarball]) else {
        return;
    };
    let first = caps.filesystems().first().map(|t| t.to_string());
    caps.keep_filesystem(first.as_deref())
        .expect("a filesystem the inputs name is kept");
    assert!(caps.filesystems().len() <= 1, "{:?}", caps.filesystems());
    for n in &caps.nodes {
        for s in &n.snapshots {
            for p in bundle::FileKind::ALL.iter().filter_map(|k| s.path(*k)) {
                assert!(inside(p), "extracted outside: {}", p.display());
            }
        }
    }
    let Ok(snapshots) = analysis::snapshots::Snapshots::load(&caps) else {
        return;
    };
    let Ok((traces, folded, mut diag)) = analysis::trace::read(&caps, &|_, _| {}) else {
        return;
    };
    diag.merge(&snapshots.diagnostics);
    let o = analysis::Options::default();
    let report = analysis::analyze(&snapshots, &traces, &folded, &caps, &o);
    let t = analysis::findings::Thresholds::default();
    for f in analysis::findings::findings(&report, &caps, &traces, &diag, &t) {
        assert!(!f.title.chars().any(char::is_control), "{:?}", f.title);
    }
}

/// Whether `p` is below the temporary directory.
fn inside(p: &Path) -> bool {
    p.starts_with(std::env::temp_dir())
}
