//! Live tests on this machine's tracefs, with events every kernel has (ftrace `print`
//! through `trace_marker`, sched events). They need root, as live tracing does.

use std::time::Duration;

use traceparse::{decode_line, BlockReader, Decoded};
use tracepipe::{Instance, Released, TraceError, Tracefs};

mod common;

fn collect(reader: BlockReader) -> Vec<String> {
    let mut lines = Vec::new();
    while let Some(b) = reader.next_block() {
        lines.extend(String::from_utf8_lossy(&b).lines().map(str::to_string));
        reader.recycle(b);
    }
    reader.finish().unwrap();
    lines
}

#[test]
fn markers_arrive_in_order_and_the_instance_is_removed() {
    let Some((_serial, tfs)) =
        common::tracefs("markers_arrive_in_order_and_the_instance_is_removed")
    else {
        return;
    };
    let name = format!("glk-test-markers-{}", std::process::id());
    let mut inst = Instance::open(&tfs, &name).unwrap();
    assert!(inst.created());
    let dir = inst.dir().to_path_buf();
    assert!(dir.is_dir());
    inst.set_buffer_kb(4096).unwrap();
    inst.tracing_on().unwrap();
    let reader = BlockReader::live_pipe(&inst.trace_pipe()).unwrap();
    const N: usize = 20_000;
    for i in 0..N {
        inst.write_marker(&format!("glk-marker {i}")).unwrap();
    }
    inst.tracing_off();
    std::thread::sleep(Duration::from_millis(50));
    reader.drain();
    let lines = collect(reader);
    let mut next = 0;
    for l in &lines {
        match decode_line(l.as_bytes()).unwrap() {
            Decoded::Other(t) => {
                assert_eq!(t.event, b"tracing_mark_write");
                let body = String::from_utf8_lossy(t.body);
                let n: usize = body.rsplit(' ').next().unwrap().parse().unwrap();
                assert_eq!(n, next, "out of order or missing: {l}");
                next += 1;
                // SAFETY: gettid(2) has no preconditions.
                assert_eq!(t.pid, i64::from(unsafe { libc::gettid() }));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(next, N);
    assert_eq!(inst.losses().total(), 0);
    inst.close().unwrap();
    assert!(!dir.exists(), "instance left behind");
}

#[test]
fn sched_event_with_filter_and_a_bad_filter() {
    let Some((_serial, tfs)) = common::tracefs("sched_event_with_filter_and_a_bad_filter") else {
        return;
    };
    assert!(tfs.has_event("sched", Some("sched_switch")));
    let name = format!("glk-test-sched-{}", std::process::id());
    let mut inst = Instance::open(&tfs, &name).unwrap();
    let enable = inst.dir().join("events/sched/sched_switch/enable");
    inst.enable("sched", "sched_switch").unwrap();
    assert_eq!(std::fs::read_to_string(&enable).unwrap().trim(), "1");
    // The kernel's own message comes back for a bad expression.
    match inst.set_filter("sched", "sched_switch", "no_such_field == 1") {
        Err(TraceError::BadFilter { kernel, .. }) => assert!(!kernel.is_empty()),
        other => panic!("expected a rejected filter, got {other:?}"),
    }
    // Only switches away from this thread's pid pass the filter.
    // SAFETY: gettid(2) has no preconditions.
    let me = unsafe { libc::gettid() };
    inst.set_filter("sched", "sched_switch", &format!("prev_pid == {me}"))
        .unwrap();
    inst.tracing_on().unwrap();
    let reader = BlockReader::live_pipe(&inst.trace_pipe()).unwrap();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(2));
    }
    inst.tracing_off();
    reader.drain();
    let lines = collect(reader);
    let switches: Vec<_> = lines
        .iter()
        .filter_map(|l| match decode_line(l.as_bytes()) {
            Ok(Decoded::Other(t)) if t.event == b"sched_switch" => {
                Some(String::from_utf8_lossy(t.body).into_owned())
            }
            _ => None,
        })
        .collect();
    assert!(!switches.is_empty(), "no sched_switch seen");
    assert!(
        switches
            .iter()
            .all(|b| b.contains(&format!("prev_pid={me} "))),
        "{switches:?}"
    );
    let dir = inst.dir().to_path_buf();
    drop(inst);
    assert!(!dir.exists());
}

#[test]
fn a_preexisting_instance_is_restored_not_removed() {
    let Some((_serial, tfs)) = common::tracefs("a_preexisting_instance_is_restored_not_removed")
    else {
        return;
    };
    let name = format!("glk-test-kept-{}", std::process::id());
    let dir = tfs.dir().join("instances").join(&name);
    std::fs::create_dir(&dir).unwrap();
    let kb_before = std::fs::read_to_string(dir.join("buffer_size_kb")).unwrap();
    {
        let mut inst = Instance::open(&tfs, &name).unwrap();
        assert!(!inst.created());
        inst.enable("sched", "sched_wakeup").unwrap();
        inst.set_filter("sched", "sched_wakeup", "pid == 1")
            .unwrap();
        inst.set_buffer_kb(64).unwrap();
    }
    assert!(dir.is_dir());
    let ev = dir.join("events/sched/sched_wakeup");
    assert_eq!(
        std::fs::read_to_string(ev.join("enable")).unwrap().trim(),
        "0"
    );
    assert_eq!(
        std::fs::read_to_string(ev.join("filter")).unwrap().trim(),
        "none"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("buffer_size_kb")).unwrap(),
        kb_before
    );
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn stale_private_instances_are_removed() {
    let Some((_serial, tfs)) = common::tracefs("stale_private_instances_are_removed") else {
        return;
    };
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // A pid above pid_max can belong to no process.
    let stale = format!("glk-{}", max + 7);
    let dir = tfs.dir().join("instances").join(&stale);
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("events/sched/sched_switch/enable"), "1").unwrap();
    let removed = tracepipe::instance::remove_stale(&tfs);
    assert!(removed.contains(&stale), "{removed:?}");
    assert!(!dir.exists());
}

/// A panic while an instance is in use unwinds through its guard, which restores tracefs.
#[test]
fn a_panic_while_tracing_restores_everything() {
    let Some((_serial, tfs)) = common::tracefs("a_panic_while_tracing_restores_everything") else {
        return;
    };
    let name = format!("glk-panictest-{}", std::process::id());
    let dir = tfs.dir().join("instances").join(&name);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut inst = Instance::open(&tfs, &name).unwrap();
        inst.enable("sched", "sched_switch").unwrap();
        inst.tracing_on().unwrap();
        assert!(dir.exists());
        panic!("a bug while tracing");
    }));
    assert!(r.is_err());
    assert!(!dir.exists(), "instance left behind after a panic");
}

/// The tracefs mount point of this process's mount table, if any.
fn tracefs_mounted() -> Option<std::path::PathBuf> {
    bundle::mounts::points_of(&bundle::mounts::of_this_process(), "tracefs")
        .into_iter()
        .next()
}

/// Where tracefs is not mounted, the first of two users mounts it (source `glk`) and the
/// second uses that mount. The one that mounted it, let go first, cannot unmount it while
/// the second holds it and says so (a lazy unmount would pull it from under the second);
/// the second, let go last, unmounts it. A glk mount left behind (a `kill -9`) is
/// unmounted by the next glk to use it; another program's mount is left as found. An
/// instance holds the mount as its `Tracefs` does.
///
/// Run in a private mount namespace (`unshare`), where tracefs and debugfs are first
/// unmounted: what this machine has mounted is not touched, and does not matter.
#[test]
fn a_mount_another_user_holds_is_never_pulled_from_under_it() {
    const T: &str = "a_mount_another_user_holds_is_never_pulled_from_under_it";
    if std::env::var_os(PRIVATE_NS).is_some() {
        return mounts_in_a_private_namespace();
    }
    let Some(_serial) = common::alone(T) else {
        return;
    };
    let o = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", T, "--nocapture", "--test-threads", "1"])
        .env(PRIVATE_NS, "1")
        .output()
        .expect("unshare (util-linux) runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("1 passed"), "{out}\n{err}");
}

/// An instance whose `Tracefs` is let go first holds the mount: it stays, and the
/// `Tracefs` says so; the instance is still removed, and the next glk unmounts the mount.
fn instance_outliving_its_tracefs(name: &str) {
    let tfs = Tracefs::locate(true).unwrap();
    let inst = Instance::open(&tfs, name).unwrap();
    // The instance holds glk's lock, so the `Tracefs` takes it for another glk's. No glk
    // is left to unmount it after the instance, though: the next one does (below).
    left_mounted(tfs.release(), true, "stays mounted");
    let dir = inst.dir().to_path_buf();
    assert!(dir.is_dir(), "{}", dir.display());
    inst.close().unwrap();
    assert!(!dir.exists(), "{} left behind", dir.display());
    let next = Tracefs::locate(true).unwrap();
    assert!(matches!(next.release(), Released::Unmounted));
    assert_eq!(tracefs_mounted(), None);
}

/// A glk-made mount that a program other than glk holds (here an open directory, without
/// glk's lock) when the last glk lets it go stays mounted, and that glk says so, whether
/// it mounted tracefs or found it; the next glk unmounts it once the program is done.
fn held_by_a_program_other_than_glk() {
    for first_mounts in [true, false] {
        let first = Tracefs::locate(true).unwrap();
        assert!(first.mounted_by_us());
        let last = if first_mounts {
            first
        } else {
            let second = Tracefs::locate(true).unwrap();
            left_mounted(first.release(), true, "while another glk uses it");
            second
        };
        let foreign = std::fs::File::open(last.dir()).unwrap();
        left_mounted(
            last.release(),
            false,
            "a program other than glk uses it (Device or resource busy (os error 16)); the \
             next glk unmounts it, or run `umount /sys/kernel/tracing` when",
        );
        assert!(tracefs_mounted().is_some());
        drop(foreign);
        let next = Tracefs::locate(true).unwrap();
        assert!(!next.mounted_by_us() && next.glk_made());
        assert!(matches!(next.release(), Released::Unmounted));
        assert_eq!(tracefs_mounted(), None);
    }
}

/// Asserts that `released` left a glk-made mount mounted, held by a glk (`glk_holds`) or
/// by another program, and that its warning says `says`.
fn left_mounted(released: Released, glk_holds: bool, says: &str) {
    let warning = released.warning().unwrap_or_default();
    assert!(
        matches!(released, Released::LeftMounted { glk_holds: g, .. } if g == glk_holds)
            && warning.contains(says),
        "{released:?}: {warning}"
    );
}

/// Set in the copy of this test run in its own mount namespace.
const PRIVATE_NS: &str = "GLK_TEST_PRIVATE_MOUNT_NS";

fn mounts_in_a_private_namespace() {
    let run = |args: &[&str]| {
        let s = std::process::Command::new(args[0])
            .args(&args[1..])
            .status();
        assert!(s.unwrap().success(), "{args:?}");
    };
    for m in bundle::mounts::of_this_process() {
        if m.fs_type == "tracefs" || m.fs_type == "debugfs" {
            run(&["umount", "-l", m.mount_point.to_str().unwrap()]);
        }
    }
    assert_eq!(tracefs_mounted(), None);
    let first = Tracefs::locate(true).unwrap();
    let second = Tracefs::locate(true).unwrap();
    assert!(first.mounted_by_us() && !second.mounted_by_us() && second.glk_made());
    assert_eq!(first.dir(), second.dir());
    left_mounted(
        first.release(),
        true,
        "stays mounted while another glk uses it",
    );
    assert!(
        second.dir().join("instances").is_dir(),
        "pulled from under the second"
    );
    let name = format!("glk-test-held-{}", std::process::id());
    let inst = Instance::open(&second, &name).unwrap();
    inst.close().unwrap();
    assert!(matches!(second.release(), Released::Unmounted));
    assert_eq!(tracefs_mounted(), None);
    instance_outliving_its_tracefs(&name);
    held_by_a_program_other_than_glk();
    for (source, left) in [("glk", false), ("nodev", true)] {
        run(&["mount", "-t", "tracefs", source, "/sys/kernel/tracing"]);
        let found = Tracefs::locate(true).unwrap();
        assert!(
            !found.mounted_by_us() && found.glk_made() != left,
            "{source}"
        );
        let released = found.release();
        assert!(released.warning().is_none(), "{source}: {released:?}");
        assert_eq!(tracefs_mounted().is_some(), left, "{source}: {released:?}");
        if left {
            run(&["umount", "/sys/kernel/tracing"]);
        }
    }
}
