//! The full-screen `glk top` console, driven for real in tmux: keys are sent with
//! `send-keys`, the screen read with `capture-pane`, and the files under it rewritten
//! while it refreshes. After it exits, the shell around it prints the exit status and
//! whether the terminal is back in canonical mode (raw mode undone).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of its own, killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, cmd: &str) -> Tmux {
        let t = Tmux {
            socket: format!("glk-test-{}-{name}", std::process::id()),
        };
        let ok = t
            .cmd(&["new-session", "-d", "-s", "t", "-x", "150", "-y", "50", cmd])
            .status
            .success();
        assert!(ok, "tmux new-session failed");
        t
    }

    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        assert!(self.cmd(&a).status.success());
    }

    /// Waits until the screen satisfies `want`; panics with the screen after 30 s.
    fn wait(&self, what: &str, want: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if want(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The pid of the glk process in the pane.
    fn glk_pid(&self) -> i32 {
        let shell = String::from_utf8_lossy(
            &self
                .cmd(&["list-panes", "-t", "t", "-F", "#{pane_pid}"])
                .stdout,
        )
        .trim()
        .to_string();
        let out = Command::new("pgrep")
            .args(["-P", &shell, "glk"])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("no glk under pane shell {shell}"))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

fn have_tmux(test: &str) -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        testdata::skip(
            test,
            "tmux is not installed (scripts/setup-system.sh installs it)",
        );
    }
    ok
}

/// A two-node capture as plain files the test can rewrite: `DIR/nN/{glocks, dlm_locks,
/// glstats, glockfd, nodeid}` from snapshot `snap` of the real two-node fixture.
fn copy_nodes(dir: &Path, snap: u32) -> [PathBuf; 2] {
    ["n1", "n2"].map(|n| {
        let d = dir.join(n);
        std::fs::create_dir_all(&d).unwrap();
        write_node(&d, n, snap);
        d.join("glocks")
    })
}

fn write_node(d: &Path, node: &str, snap: u32) {
    for kind in ["dlm_locks", "glstats", "glockfd", "glocks"] {
        let src = testdata::path(&format!("real/dlm2-6.1/{node}/{kind}.{snap}"));
        // glocks last: the console reads it first and its companions right after.
        let tmp = d.join(format!(".{kind}.tmp"));
        std::fs::copy(&src, &tmp).unwrap();
        std::fs::rename(&tmp, d.join(kind)).unwrap();
    }
    std::fs::write(d.join("nodeid"), &node[1..]).unwrap();
}

/// Whether the shell after glk has printed the terminal mode.
fn mode_printed(s: &str) -> bool {
    s.lines()
        .any(|l| l.trim() == "icanon" || l.trim() == "-icanon")
}

fn shell_cmd(args: &str) -> String {
    // After glk: its exit status, then the terminal mode (`icanon` when restored).
    format!(
        "{} top {args}; echo EXIT=$?; stty -a | tr ' ' '\\n' | grep -x -- '-\\?icanon'; sleep 60",
        env!("CARGO_BIN_EXE_glk")
    )
}

/// `glk top OPTIONS` on a saved glocks file of the two-node fixture, in a new tmux session.
fn top_on_fixture(session: &str, options: &str) -> Tmux {
    let f = testdata::path("real/dlm2-6.1/n2/glocks.4");
    Tmux::start(session, &shell_cmd(&format!("{options} {}", f.display())))
}

#[test]
fn console_keys_detail_filter_sort_freeze_and_quit() {
    if !have_tmux("console_keys_detail_filter_sort_freeze_and_quit") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let [n1, n2] = copy_nodes(dir.path(), 4);
    let t = Tmux::start(
        "keys",
        &shell_cmd(&format!(
            "--follow -d 0.3 --stuck-after 10 {} {}",
            n1.display(),
            n2.display()
        )),
    );
    // n2's flock request has waited 12.7 s in the DLM queue of node 1, where pid 866
    // holds it EX: the first row, flagged stuck past 10 s.
    let s = t.wait("the waiter", |s| s.contains("node 1 pid 866 EX"));
    let first = s
        .lines()
        .find(|l| l.contains("6/60af5"))
        .expect("a flock row");
    assert!(first.contains("> 6/60af5"), "{s}");
    assert!(first.contains("STUCK 12.71s dlm"), "{s}");
    assert!(s.contains("1 stuck"), "{s}");
    assert!(s.contains("sort: hurt"), "{s}");
    // Only the two flock glocks matter: the 1046 iopen/inode glocks only held are hidden.
    assert!(s.contains("1046 only held"), "{s}");
    assert!(!s.contains("5/3160"), "{s}");

    // Detail of the selected glock: the DLM request, the master's view, the open file.
    t.keys(&["Enter"]);
    let s = t.wait("the detail pane", |s| s.contains("on the master"));
    assert!(s.contains("DLM lock: waiting for EX"), "{s}");
    assert!(
        s.contains("on the master: node 1 pid 866 granted EX"),
        "{s}"
    );
    assert!(s.contains("open: pid 860 fd 3"), "{s}");
    t.keys(&["Escape"]);
    t.wait("the detail to close", |s| !s.contains("on the master"));

    // Move to the second row (n1's holder) and back.
    t.keys(&["j"]);
    t.wait("the selection to move", |s| {
        s.lines()
            .any(|l| l.contains("> 6/60af5") && l.contains("n1/glocks"))
    });
    t.keys(&["k"]);

    // Filter: iopen glocks are only held, so none shows until H.
    t.keys(&["/", "iopen", "Enter"]);
    let s = t.wait("the filter", |s| {
        s.contains("filter: iopen") && !s.contains("iopen_")
    });
    assert!(!s.contains("6/60af5"), "{s}");
    t.keys(&["H"]);
    t.wait("held iopen glocks", |s| s.contains("5/3160"));
    t.keys(&["H", "Escape"]);
    t.wait("the filter to clear", |s| {
        !s.contains("filter: iopen") && s.contains("6/60af5")
    });

    // Sort cycles.
    t.keys(&["s"]);
    t.wait("the next sort", |s| s.contains("sort: waiters"));

    // Help opens and any key closes it.
    t.keys(&["?"]);
    t.wait("help", |s| s.contains("any key closes this help"));
    t.keys(&["x"]);
    t.wait("help to close", |s| !s.contains("any key closes this help"));

    // The files change under the console: n2's waiter is gone in snapshot 5.
    write_node(n2.parent().unwrap(), "n2", 5);
    let s = t.wait("the waiter to go", |s| s.contains("0 with waiters"));
    assert!(!s.contains("node 1 pid 866 EX"), "{s}");
    // And it comes back: the selection follows the glock.
    write_node(n2.parent().unwrap(), "n2", 4);
    t.wait("the waiter to come back", |s| s.contains("1 with waiters"));

    freeze_and_thaw(&t);

    // q: exit 0 and the terminal back in canonical mode, off the alternate screen.
    t.keys(&["q"]);
    let s = t.wait("glk to exit", mode_printed);
    assert!(s.contains("EXIT=0"), "{s}");
    assert!(s.lines().any(|l| l.trim() == "icanon"), "{s}");
    assert!(!s.contains("GLOCK"), "alternate screen not left:\n{s}");
}

/// `f` freezes the console (no refresh while frozen) and `f` again thaws it.
fn freeze_and_thaw(t: &Tmux) {
    t.keys(&["f"]);
    let s = t.wait("frozen", |s| s.contains("FROZEN"));
    let refresh = |s: &str| -> u64 {
        s.split("refresh ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    let r1 = refresh(&s);
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(refresh(&t.screen()), r1, "refreshed while frozen");
    t.keys(&["f"]);
    t.wait("reading again", |s| {
        !s.contains("FROZEN") && refresh(s) > r1
    });
}

#[test]
fn console_restores_the_terminal_on_sigterm_and_ctrl_c() {
    if !have_tmux("console_restores_the_terminal_on_sigterm_and_ctrl_c") {
        return;
    }
    for how in ["sigterm", "ctrl-c"] {
        let t = top_on_fixture(how, "--follow -d 0.3");
        t.wait("the console", |s| s.contains("sort: hurt"));
        if how == "sigterm" {
            let pid = t.glk_pid();
            // SAFETY: kill(2) with a pid of our own child tree.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        } else {
            t.keys(&["C-c"]);
        }
        let s = t.wait("glk to exit", mode_printed);
        assert!(s.contains("EXIT=0"), "{how}: {s}");
        assert!(s.lines().any(|l| l.trim() == "icanon"), "{how}: {s}");
    }
}

#[test]
fn console_ends_when_its_terminal_goes_away() {
    if !have_tmux("console_ends_when_its_terminal_goes_away") {
        return;
    }
    let t = top_on_fixture("hangup", "--follow -d 0.3");
    t.wait("the console", |s| s.contains("sort: hurt"));
    let pid = t.glk_pid();
    // The whole tmux server goes: the pty is hung up under glk.
    t.cmd(&["kill-server"]);
    let start = Instant::now();
    // SAFETY: kill(pid, 0) only probes whether the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "glk {pid} still running 10 s after its terminal went away"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn console_ends_after_count_refreshes_and_saved_files_are_read_on_demand() {
    if !have_tmux("console_ends_after_count_refreshes_and_saved_files_are_read_on_demand") {
        return;
    }
    let t = top_on_fixture("count", "--follow -d 0.2 -n 3");
    let s = t.wait("glk to exit", mode_printed);
    assert!(s.contains("EXIT=0"), "{s}");
    let saved = top_on_fixture("saved", "");
    let s = saved.wait("the console", |s| s.contains("sort: hurt"));
    assert!(s.contains("saved files: not refreshed"), "{s}");
    assert!(s.contains("refresh 1 "), "{s}");
    assert!(s.contains("523 only held"), "{s}");
    // A new selection reads the saved file again: H brings the held glocks.
    saved.keys(&["H"]);
    saved.wait("held glocks of the saved file", |s| s.contains("5/3160"));
    saved.keys(&["q"]);
    saved.wait("glk to exit", |s| s.contains("EXIT=0"));
}
