//! Cluster mode over real ssh: one OpenSSH server per node on its own loopback address
//! (`testdata::sshd`), each node's glk reading a debugfs-shaped copy of one node of a real
//! two-node flock deadlock (6.12, `real/flock-deadlock-6.12/deadlock`), reached by
//! `glk top|capture|stats --nodes` through the system's ssh client.

mod common;
use common::{doctor_with_findings, elements, str_of};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use testdata::sshd::{Host, Sshd};

/// The fixture: node `n` (1 or 2) at snapshot 2, during the deadlock.
fn fixture(n: u32, file: &str) -> PathBuf {
    testdata::path(&format!("real/flock-deadlock-6.12/deadlock/n{n}/{file}.2"))
}

/// `ROOT/gfs2/lab:gfs/{glocks,glstats,glockfd}` and `ROOT/dlm/gfs_locks` of node `n`.
fn fake_debugfs(root: &Path, n: u32) {
    let fs = root.join("gfs2/lab:gfs");
    std::fs::create_dir_all(&fs).unwrap();
    std::fs::create_dir_all(root.join("dlm")).unwrap();
    for f in ["glocks", "glstats", "glockfd"] {
        std::fs::copy(fixture(n, f), fs.join(f)).unwrap();
    }
    std::fs::copy(fixture(n, "dlm_locks"), root.join("dlm/gfs_locks")).unwrap();
}

/// A node whose sessions read `root` as debugfs and say DLM node id `nodeid`.
fn host(addr: &str, root: &Path, nodeid: u32) -> Host {
    Host {
        addr: addr.into(),
        env: vec![
            ("GLK_DEBUGFS".into(), root.display().to_string()),
            ("GLK_NODEID".into(), nodeid.to_string()),
        ],
    }
}

/// The two fixture nodes as 127.0.0.2 (node 1) and 127.0.0.3 (node 2), with `more`
/// hosts after them; None (said, and failing under CI) when sshd cannot run here.
fn two_nodes(test: &str, dir: &Path, more: &[Host]) -> Option<Sshd> {
    let mut hosts = Vec::new();
    for n in 1..=2u32 {
        let root = dir.join(format!("debugfs-n{n}"));
        fake_debugfs(&root, n);
        hosts.push(host(&format!("127.0.0.{}", n + 1), &root, n));
    }
    hosts.extend_from_slice(more);
    match Sshd::start(&dir.join("ssh"), &hosts) {
        Ok(s) => Some(s),
        Err(why) => {
            testdata::skip(test, &why);
            None
        }
    }
}

/// [`two_nodes`] in a scratch directory of their own.
fn two_nodes_in_scratch(test: &str) -> Option<(tempfile::TempDir, Sshd)> {
    let t = scratch();
    let sshd = two_nodes(test, t.path(), &[])?;
    Some((t, sshd))
}

/// `glk capture --nodes 127.0.0.2 --count 1 EXTRA -o OUT` through `sshd`.
fn capture_one_snapshot(sshd: &Sshd, extra: &[&str], out: &Path) -> Output {
    capture(sshd, "127.0.0.2", &[&["--count", "1"], extra].concat(), out)
}

/// `glk capture --nodes NODES ARGS -o OUT` through `sshd`.
fn capture(sshd: &Sshd, nodes: &str, args: &[&str], out: &Path) -> Output {
    let mut c = glk(sshd, &["capture", "--nodes", nodes]);
    c.args(args).arg("-o").arg(out);
    output(c)
}

/// `glk ARGS --ssh-config ... --remote-glk THIS`: the cluster options for `sshd`.
fn glk(sshd: &Sshd, args: &[&str]) -> Command {
    glk_running(sshd, env!("CARGO_BIN_EXE_glk"), args)
}

/// `glk ARGS` through `sshd`, running `remote` on the nodes as their glk.
fn glk_running(sshd: &Sshd, remote: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_glk"));
    c.args(args)
        .arg("--ssh-config")
        .arg(sshd.config())
        .args(["--remote-glk", remote, "--connect-timeout", "3"])
        .stdin(Stdio::null());
    c
}

fn output(mut c: Command) -> Output {
    c.output().unwrap()
}

/// `glk top --nodes NODES ARGS` through `sshd`: its output, checked to be a success, and
/// how long it took.
fn top(sshd: &Sshd, nodes: &str, args: &[&str]) -> (Output, Duration) {
    let start = Instant::now();
    let o = output(glk(sshd, &[&["top", "--nodes", nodes], args].concat()));
    let took = start.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (o, took)
}

fn scratch() -> tempfile::TempDir {
    common::scratch("cluster")
}

/// The pids in a fixture's `ps` listing whose command line contains `what`.
fn ps_pids(n: u32, what: &str) -> Vec<i64> {
    let ps = std::fs::read_to_string(testdata::path(&format!(
        "real/flock-deadlock-6.12/deadlock/ps-n{n}.txt"
    )))
    .unwrap();
    ps.lines()
        .filter(|l| l.contains(what))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn top_names_the_holder_on_the_other_node() {
    let Some((_t, sshd)) = two_nodes_in_scratch("top_names_the_holder_on_the_other_node") else {
        return;
    };
    let (o, _) = top(&sshd, "127.0.0.2,127.0.0.3", &["--once", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc.get("missing_nodes").is_none(), "{doc}");
    // Each node waits for the flock the other holds: the waiter's row names the holder
    // there, by the pid that node's DLM and glockfd give, as its `ps` shows it.
    let mut seen = Vec::new();
    for g in doc["glocks"].as_array().unwrap() {
        let Some(there) = g.get("held_elsewhere") else {
            continue;
        };
        assert!(!g["waiters"].as_array().unwrap().is_empty(), "{g}");
        let t = &there[0];
        let (node, pid) = (t["node"].as_str().unwrap(), t["pid"].as_i64().unwrap());
        let n = if node == "127.0.0.2" { 1 } else { 2 };
        assert!(
            ps_pids(n, "flock").contains(&pid),
            "pid {pid} on {node} is no flock in ps"
        );
        assert_eq!(t["holder"]["state"], "EX");
        assert!(
            t["holder"]["caller"].as_str().unwrap().contains("flock"),
            "{t}"
        );
        seen.push((g["glock"].as_str().unwrap().to_string(), node.to_string()));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("6/223a".to_string(), "127.0.0.2".to_string()),
            ("6/223b".to_string(), "127.0.0.3".to_string())
        ]
    );
    // The plain view says the same in words.
    let (o, _) = top(&sshd, "127.0.0.2,127.0.0.3", &["--once"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("held on 127.0.0.3 (node 2) by pid 243"),
        "{text}"
    );
}

/// A TCP port that accepts and then says nothing, as a paused VM's sshd does.
fn silent_listener(addr: &str) -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind(format!("{addr}:0")).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// Lets the readers blocked opening a FIFO through, when dropped (also when the test fails):
/// the stuck node's agents, which outlive their ssh session, then read its end and exit
/// instead of staying behind blocked for good.
struct ReleaseFifo(std::path::PathBuf);

impl Drop for ReleaseFifo {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        // Each open for writing lets the readers waiting in open() through; once none is
        // left, a non-blocking open fails (ENXIO).
        for _ in 0..250 {
            let writer = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.0);
            if writer.is_err() {
                break;
            }
            drop(writer);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Node 127.0.0.4 (node id 3), whose debugfs below `dir` has only a glocks file that is
/// a FIFO: its read blocks until the test writes it, or the guard is dropped.
fn fifo_node(dir: &Path) -> (PathBuf, ReleaseFifo, Host) {
    let root = dir.join("debugfs-fifo");
    std::fs::create_dir_all(root.join("gfs2/lab:gfs")).unwrap();
    let fifo = root.join("gfs2/lab:gfs/glocks");
    testdata::fifo_at(&fifo);
    (fifo.clone(), ReleaseFifo(fifo), host("127.0.0.4", &root, 3))
}

#[test]
fn nodes_that_do_not_answer_are_named_and_never_waited_for() {
    let t = scratch();
    // 127.0.0.4: sshd up, but its glocks file never gives a byte (a read stuck in the
    // kernel); 127.0.0.5: nothing listens.
    let (_, _release, stuck) = fifo_node(t.path());
    let Some(sshd) = two_nodes("nodes_that_do_not_answer_are_named", t.path(), &[stuck]) else {
        return;
    };
    one_read_names_the_missing(&sshd);
    a_running_top_waits_once(&sshd);
    a_silent_sshd_is_missing(t.path(), &sshd);
}

/// Writes `text` to the FIFO `path` for every reader that opens it, until `stop` is set
/// (a writer is opened only when a reader waits: nothing blocks).
fn feed_fifo_always(
    path: PathBuf,
    text: Vec<u8>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u32> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::thread::spawn(move || {
        let mut fed = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let writer = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path);
            match writer {
                Ok(mut w) => {
                    // The reader reads the whole file: a pipe's 64 KiB holds it.
                    if w.write_all(&text).is_ok() {
                        fed += 1;
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        fed
    })
}

#[test]
fn a_node_that_answers_late_is_shown_again() {
    const T: &str = "a_node_that_answers_late_is_shown_again";
    let t = scratch();
    // 127.0.0.4's glocks read blocks until the test lets it through.
    let (fifo, _release, late) = fifo_node(t.path());
    let Some(sshd) = two_nodes(T, t.path(), &[late]) else {
        return;
    };
    // A refresh every second: the node's late answer has come before the next one.
    let args = ["--node-timeout", "2", "--count", "5", "-d", "1", "--json"];
    let mut child = glk(
        &sshd,
        &[&["top", "--nodes", "127.0.0.2,127.0.0.4"], &args[..]].concat(),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let docs = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut feeder = None;
    let mut shown = Vec::new();
    for line in docs {
        let doc: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        // (`missing_nodes` is left out when every node answered.)
        let missing: Vec<String> = doc["missing_nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| str_of(m, "node"))
            .collect();
        shown.push(missing.is_empty() && doc["sources"].as_array().unwrap().len() == 2);
        // After the first refresh, which gave up on it, the node's read goes through.
        if feeder.is_none() {
            assert_eq!(missing, ["127.0.0.4"]);
            let text = std::fs::read(fixture(1, "glocks")).unwrap();
            feeder = Some(feed_fifo_always(fifo.clone(), text, stop.clone()));
        }
    }
    assert!(child.wait().unwrap().success());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(feeder.unwrap().join().unwrap() > 0);
    // Its late answer is taken at the next refresh, which asks it again and shows it.
    assert_eq!(shown, [false, true, true, true, true]);
}

/// `glk top --once` over two answering nodes, a stuck one and a refused one.
fn one_read_names_the_missing(sshd: &Sshd) {
    let (o, took) = top(
        sshd,
        "127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5",
        &["--node-timeout", "3", "--once", "--json"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let missing: Vec<(String, String)> = elements(&doc["missing_nodes"])
        .map(|m| (str_of(m, "node"), str_of(m, "reason")))
        .collect();
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert_eq!(missing[0].0, "127.0.0.4");
    assert!(missing[0].1.starts_with("no answer within"), "{missing:?}");
    assert_eq!(missing[1].0, "127.0.0.5");
    assert!(missing[1].1.contains("Connection refused"), "{missing:?}");
    // The two that answered are still merged.
    assert_eq!(doc["sources"].as_array().unwrap().len(), 2);
    // Connect timeout 3 s + node timeout 3 s at the start, then one refresh of 3 s.
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("node 127.0.0.4 missing"), "{err}");
}

/// A running top waits for the stuck node once, not at every refresh.
fn a_running_top_waits_once(sshd: &Sshd) {
    let args = ["--node-timeout", "3", "--count", "4", "-d", "0.2", "--json"];
    let (o, took) = top(sshd, "127.0.0.2,127.0.0.4", &args);
    let docs: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 4);
    for d in &docs {
        assert_eq!(d["missing_nodes"][0]["node"], "127.0.0.4", "{d}");
        assert_eq!(d["sources"].as_array().unwrap().len(), 1);
    }
    let last = docs[3]["missing_nodes"][0]["reason"].as_str().unwrap();
    assert!(last.starts_with("still no answer"), "{last}");
    // One 3 s wait at the first refresh, not four.
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

/// A node whose sshd accepts and never speaks (a paused VM) is missing too.
fn a_silent_sshd_is_missing(scratch: &Path, sshd: &Sshd) {
    let (_l, port) = silent_listener("127.0.0.6");
    let cfg = scratch.join("silent_config");
    std::fs::write(
        &cfg,
        format!(
            "{}\nHost 127.0.0.6\n  Port {port}\n",
            std::fs::read_to_string(sshd.config())
                .unwrap()
                .replace("Host *", "Host 127.0.0.2")
        ),
    )
    .unwrap();
    let start = Instant::now();
    let mut c = Command::new(env!("CARGO_BIN_EXE_glk"));
    c.args([
        "stats",
        "--nodes",
        "127.0.0.6",
        "--connect-timeout",
        "2",
        "--node-timeout",
        "2",
    ])
    .arg("--ssh-config")
    .arg(&cfg)
    .stdin(Stdio::null());
    let o = output(c);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("node 127.0.0.6 missing"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn capture_gathers_every_node_into_one_directory() {
    let Some((t, sshd)) = two_nodes_in_scratch("capture_gathers_every_node") else {
        return;
    };
    let out = t.path().join("capture");
    let o = capture(
        &sshd,
        "127.0.0.2,127.0.0.3,127.0.0.7",
        &["--count", "2", "--interval", "0.5"],
        &out,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("node 127.0.0.7 missing"), "{err}");
    // Every node's files as that node's debugfs had them.
    for n in 1..=2u32 {
        let d = out.join(format!("127.0.0.{}", n + 1));
        for snap in 0..2 {
            assert_eq!(
                std::fs::read(d.join(format!("glocks.{snap}"))).unwrap(),
                std::fs::read(fixture(n, "glocks")).unwrap()
            );
        }
        assert_eq!(
            std::fs::read_to_string(d.join("nodeid")).unwrap().trim(),
            n.to_string()
        );
        assert_eq!(
            std::fs::read_to_string(d.join("node")).unwrap().trim(),
            format!("127.0.0.{}", n + 1)
        );
        assert_eq!(
            std::fs::read_to_string(d.join("table")).unwrap(),
            "lab:gfs\n"
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("cluster.json")).unwrap()).unwrap();
    let nodes = manifest["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    for n in &nodes[..2] {
        assert_eq!(n["captured"], true);
        let (lo, hi) = (
            n["clock_offset"]["min_s"].as_f64().unwrap(),
            n["clock_offset"]["max_s"].as_f64().unwrap(),
        );
        // One machine, one clock: the bound holds 0.
        assert!(lo <= 0.0 && 0.0 <= hi, "{n}");
    }
    assert_eq!(nodes[2]["captured"], false);
    // The cross-node deadlock is found in the gathered capture.
    let doc = doctor_with_findings(std::slice::from_ref(&out));
    let f = common::find(&doc["findings"], "code", "GLK-DEADLOCK");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("127.0.0.2") && title.contains("127.0.0.3"),
        "{title}"
    );
    // A second capture into the same place is refused, not mixed in.
    let o = capture_one_snapshot(&sshd, &[], &out);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("there already"));
}

/// A small tmpfs mounted at `dir` for as long as it is held.
struct SmallFs(PathBuf);

impl SmallFs {
    /// Mounts a tmpfs of `size` (`2m`) at `dir`; Err: why it cannot be.
    fn mount(dir: &Path, size: &str) -> Result<SmallFs, String> {
        std::fs::create_dir_all(dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "glk-test"])
            .arg(dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "mount -t tmpfs: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(SmallFs(dir.to_path_buf()))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_node_never_fills_the_gathering_filesystem() {
    const T: &str = "a_node_never_fills_the_gathering_filesystem";
    let Some((t, sshd)) = two_nodes_in_scratch(T) else {
        return;
    };
    if !testdata::as_root(T, "mounting a small filesystem needs root") {
        return;
    }
    let small = match SmallFs::mount(&t.path().join("small"), "2m") {
        Ok(m) => m,
        Err(why) => return testdata::skip(T, &why),
    };
    // Node 1's glocks grow past the room: 3 MiB of its own glocks, repeated.
    let one = std::fs::read(fixture(1, "glocks")).unwrap();
    let grown: Vec<u8> = one.iter().copied().cycle().take(3 << 20).collect();
    std::fs::write(t.path().join("debugfs-n1/gfs2/lab:gfs/glocks"), grown).unwrap();
    let out = small.0.join("c");
    let o = capture(&sshd, "127.0.0.2,127.0.0.3", &["--count", "1"], &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Node 1 is named missing with why, and nothing of it is left.
    assert!(err.contains("node 127.0.0.2 missing"), "{err}");
    assert!(err.contains("less than 5% of the filesystem free"), "{err}");
    assert!(!out.join("127.0.0.2").exists());
    // Node 2 is captured whole.
    assert_eq!(
        std::fs::read(out.join("127.0.0.3/glocks.0")).unwrap(),
        std::fs::read(fixture(2, "glocks")).unwrap()
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("cluster.json")).unwrap()).unwrap();
    assert_eq!(manifest["nodes"][0]["captured"], false);
    assert_eq!(manifest["nodes"][1]["captured"], true);
}

#[test]
fn hostile_names_run_nothing() {
    let Some((t, sshd)) = two_nodes_in_scratch("hostile_names_run_nothing") else {
        return;
    };
    let marker = t.path().join("pwned");
    // A node name that is an ssh option or a shell command is refused before ssh runs.
    for bad in [
        "-oProxyCommand=touch /tmp/x",
        "n1;touch /tmp/x",
        "$(touch /tmp/x)",
    ] {
        let o = output(glk(&sshd, &["top", "--once", &format!("--nodes={bad}")]));
        assert!(!o.status.success(), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("node"), "{bad}");
    }
    // A filesystem name reaches the remote glk as one inert word.
    let fs = format!(
        "x; touch {}; $(touch {})",
        marker.display(),
        marker.display()
    );
    let out = t.path().join("c");
    let o = capture_one_snapshot(&sshd, &["--fs", &fs], &out);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("x; touch"), "{err}");
    assert!(!marker.exists(), "the remote shell ran a word of --fs");
}

/// A stand-in remote glk: a shell script.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    assert!(Command::new("chmod")
        .arg("755")
        .arg(&p)
        .status()
        .unwrap()
        .success());
    p.display().to_string()
}

#[test]
fn a_missing_older_or_newer_glk_is_named_with_what_to_install() {
    let Some((t, sshd)) = two_nodes_in_scratch("a_missing_older_or_newer_glk") else {
        return;
    };
    let older = script(
        t.path(),
        "old-glk",
        "echo \"error: unrecognized subcommand 'agent'\" >&2; exit 2",
    );
    let newer = script(
        t.path(),
        "new-glk",
        r#"echo '{"glk_agent":99,"version":"9.0.0","host":"n","nodeid":null,"time":0}'; sleep 1"#,
    );
    for (remote, want) in [
        ("/nonexistent/glk", "glk is not installed there"),
        (older.as_str(), "no agent of this version: install glk"),
        (newer.as_str(), "speaks protocol 99"),
    ] {
        let top = ["top", "--once", "--json", "--nodes", "127.0.0.2,127.0.0.3"];
        let o = output(glk_running(&sshd, remote, &top));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{remote}");
        assert!(err.contains(want), "{remote}: {err}");
    }
    // --sudo: the agent runs through `sudo -n` (root may, without a password). sudo
    // resets the environment, so the stand-in glk says where it ran and gives the
    // node's debugfs again.
    if Path::new("/usr/bin/sudo").exists() {
        let said = t.path().join("sudo-said");
        let through = script(
            t.path(),
            "sudo-glk",
            &format!(
                "echo \"$SUDO_USER:$SUDO_COMMAND\" > {}\nGLK_DEBUGFS={} exec {} \"$@\"",
                said.display(),
                t.path().join("debugfs-n1").display(),
                env!("CARGO_BIN_EXE_glk")
            ),
        );
        let top = ["top", "--once", "--json", "--sudo", "--nodes", "127.0.0.2"];
        let o = output(glk_running(&sshd, &through, &top));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let said_text = std::fs::read_to_string(&said).unwrap();
        // Through sudo, the agent traces the node's locking and nothing else.
        let out = t.path().join("sudo-cap");
        let capture = [
            "capture",
            "--count",
            "1",
            "--trace",
            "1",
            "--sudo",
            "--nodes",
            "127.0.0.2",
            "--trace-events",
            "syscalls:sys_enter_getppid",
            "-o",
            out.to_str().unwrap(),
        ];
        let o = output(glk_running(&sshd, &through, &capture));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(err.contains("traces only gfs2 and dlm events"), "{err}");
        let said = said_text;
        assert!(
            said.starts_with(&format!(
                "root:{through} agent snapshot --now --name 127.0.0.2"
            )),
            "{said}"
        );
    } else {
        testdata::skip(
            "a_missing_older_or_newer_glk (--sudo)",
            "sudo is not installed",
        );
    }
}

#[test]
fn a_node_that_breaks_the_protocol_costs_only_itself() {
    let Some((t, sshd)) = two_nodes_in_scratch("a_node_that_breaks_the_protocol") else {
        return;
    };
    // Node 2's "agent" writes into node 127.0.0.2's directory; node 1's is glk.
    let evil = script(
        t.path(),
        "evil-glk",
        &format!(
            "if [ \"$GLK_NODEID\" = 2 ]; then\n\
             echo '{{\"glk_agent\":1,\"version\":\"0.1.0\",\"host\":\"x\",\"nodeid\":2,\"time\":0}}'\n\
             echo '{{\"frame\":\"file\",\"path\":\"lab_gfs/127.0.0.2/glocks.0\",\"bytes\":0}}'\n\
             echo '{{\"frame\":\"end\",\"time\":0}}'\n\
             sleep 5\n\
             else exec {} \"$@\"; fi",
            env!("CARGO_BIN_EXE_glk")
        ),
    );
    let top = ["top", "--once", "--json", "--nodes", "127.0.0.2,127.0.0.3"];
    let o = output(glk_running(&sshd, &evil, &top));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["missing_nodes"][0]["node"], "127.0.0.3");
    let why = doc["missing_nodes"][0]["reason"].as_str().unwrap();
    assert!(why.contains("outside its directory"), "{why}");
    // Node 1's glocks are its own, untouched.
    let sources: Vec<&str> = elements(&doc["sources"])
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["lab_gfs/127.0.0.2/glocks.0"]);
    assert!(
        doc["sources"][0]["summary"]["total"]["glocks"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// The private instances glk made (`glk-PID`).
fn glk_instances(t: &Path) -> Vec<String> {
    std::fs::read_dir(t.join("instances"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("glk-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_dropped_connection_leaves_the_node_tracefs_as_it_was() {
    const T: &str = "a_dropped_connection_leaves_the_node_tracefs_as_it_was";
    let Some((t, sshd)) = two_nodes_in_scratch(T) else {
        return;
    };
    let held = common::hold_tracefs();
    let tfs = &held.dir;
    let before = glk_instances(tfs);
    let out = t.path().join("c");
    let mut child = glk(
        &sshd,
        &[
            "capture",
            "--nodes",
            "127.0.0.2",
            "--count",
            "1",
            "--trace",
            "60",
            "--trace-events",
            "sched:sched_process_exec",
            "-o",
            out.to_str().unwrap(),
        ],
    )
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // The remote agent's instance appears...
    let until = Instant::now() + Duration::from_secs(20);
    let mut made = Vec::new();
    while Instant::now() < until && made.is_empty() {
        made = glk_instances(tfs)
            .into_iter()
            .filter(|i| !before.contains(i))
            .collect();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!made.is_empty(), "no tracefs instance appeared");
    // ...and goes when the glk that asked for it is killed (its ssh sees its input end).
    child.kill().unwrap();
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until && glk_instances(tfs).iter().any(|i| made.contains(i)) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !glk_instances(tfs).iter().any(|i| made.contains(i)),
        "instance {made:?} left behind"
    );
}

/// What the lab's own tools say of a cluster-mode run (`testdata/lab/cluster-mode.sh`):
/// `ls -i` (`inodes.txt`) gives each lock file's inode, so its flock glock (`6/HEX`), and
/// each node's `ps` at the same moment (`ps-NODE.txt`) who holds each file (its
/// `flock -x /gfs/shared/FILE` sleeping) and who waits for it (the same in D state).
struct Truth {
    /// File name to glock.
    glock: std::collections::BTreeMap<String, String>,
    /// (glock, node, pid) of every holder.
    holders: Vec<(String, String, i64)>,
    /// (glock, node, pid) of every waiter.
    waiters: Vec<(String, String, i64)>,
}

impl Truth {
    /// The truth of the run in `dir`.
    fn read(dir: &Path) -> Truth {
        let glock: std::collections::BTreeMap<String, String> =
            common::inodes(&dir.join("inodes.txt"))
                .into_iter()
                .map(|(file, ino)| (file, format!("6/{ino:x}")))
                .collect();
        let (mut holders, mut waiters) = (Vec::new(), Vec::new());
        for node in ["n1", "n2"] {
            let ps = std::fs::read_to_string(dir.join(format!("ps-{node}.txt"))).unwrap();
            for l in ps.lines() {
                let w: Vec<&str> = l.split_whitespace().collect();
                // PID PPID STAT WCHAN COMMAND ARGS...: flock -x /gfs/shared/FILE ...
                let Some(at) = w.iter().position(|a| *a == "-x") else {
                    continue;
                };
                if w[at - 1] != "flock" || at != 6 {
                    continue;
                }
                let file = w[at + 1].rsplit('/').next().unwrap();
                let row = (glock[file].clone(), node.to_string(), w[0].parse().unwrap());
                match w[2].chars().next() {
                    Some('S') => holders.push(row),
                    Some('D') => waiters.push(row),
                    _ => panic!("{node}: {l}"),
                }
            }
        }
        holders.sort();
        waiters.sort();
        Truth {
            glock,
            holders,
            waiters,
        }
    }

    /// Who in `rows` (the holders or the waiters) holds or waits for `file`'s glock:
    /// (node, pid).
    fn who<'a>(&self, rows: &'a [(String, String, i64)], file: &str) -> (&'a str, i64) {
        let (_, node, pid) = rows
            .iter()
            .find(|(g, _, _)| *g == self.glock[file])
            .unwrap();
        (node, *pid)
    }
}

/// The lab's cluster captures (`real/cluster-mode-5.10` and `-6.12`): the doctor finds in
/// each what it finds in the two nodes' own captures, and names the cycle and the stuck
/// waits as the nodes' `ps` does; glk top names every holder on the other node as `ps`
/// does. 5.10 has no DLM tracepoints (they came with 5.16): there the nodes' clocks are
/// aligned by the capture's markers alone, and no disagreement between them is claimed.
#[test]
fn a_cluster_capture_reads_as_the_nodes_own_captures() {
    for (kernel, dlm_events) in [("5.10", false), ("6.12", true)] {
        let dir = testdata::path(&format!("real/cluster-mode-{kernel}"));
        let truth = Truth::read(&dir);
        assert_eq!(
            (truth.holders.len(), truth.waiters.len()),
            (3, 3),
            "{kernel}"
        );
        a_cluster_capture_reads_as_its_truth(&dir, &truth, dlm_events);
    }
}

/// One lab run of [`a_cluster_capture_reads_as_the_nodes_own_captures`].
fn a_cluster_capture_reads_as_its_truth(dir: &Path, truth: &Truth, dlm_events: bool) {
    let f = |p: &str| dir.join(p);
    let doctor = |paths: &[PathBuf]| -> Vec<(String, String)> {
        let doc = doctor_with_findings(paths);
        // The ages differ by the ssh connection's seconds: compare what, who and where.
        let mut out: Vec<(String, String)> = elements(&doc["findings"])
            .map(|x| {
                let title = x["title"].as_str().unwrap();
                let who = title.split(" has waited").next().unwrap().to_string();
                (x["code"].as_str().unwrap().to_string(), who)
            })
            .collect();
        out.sort();
        out
    };
    let cluster = doctor(&[f("ccap")]);
    assert_eq!(cluster, doctor(&[f("pcap-n1"), f("pcap-n2")]));
    // A stuck wait names its holder on the other node (w: held for the whole run).
    let doc = doctor_with_findings(&[f("ccap")]);
    let (node, pid) = truth.who(&truth.holders, "w");
    let behind = format!(
        "for {} behind pid {pid} [flock] on {node}",
        truth.glock["w"]
    );
    assert!(
        elements(&doc["findings"])
            .any(|x| x["code"] == "GLK-STUCK-WAITER"
                && x["title"].as_str().unwrap().contains(&behind)),
        "{} {behind}",
        dir.display()
    );
    // The cycle: n1's waiter for n, n2's waiter for m.
    let cycle = [
        truth.who(&truth.waiters, "n"),
        truth.who(&truth.waiters, "m"),
    ];
    assert_eq!((cycle[0].0, cycle[1].0), ("n1", "n2"));
    assert!(
        cluster.iter().any(|(c, t)| c == "GLK-DEADLOCK"
            && cycle
                .iter()
                .all(|(node, pid)| t.contains(&format!("pid {pid} [flock]")) && t.contains(node))),
        "{} {cluster:?}",
        dir.display()
    );
    // Two clocks that know nothing of each other agree: the DLM messages put n2's wall
    // clock as far off n1's as the ssh round trip bounds it to.
    let doc = common::glk_json(&["analyze", "--json", f("ccap").to_str().unwrap()]);
    let n2 = common::find(&doc["clock_alignment"], "node", "n2");
    assert_eq!(n2["ssh_reference"], "n1");
    if dlm_events {
        let off = n2["wall_clock_disagreement_ns"].as_f64().unwrap() / 1e9;
        let (lo, hi) = (
            n2["ssh_wall_offset_s"][0].as_f64().unwrap(),
            n2["ssh_wall_offset_s"][1].as_f64().unwrap(),
        );
        assert!(lo <= off && off <= hi, "{off} s not in [{lo}, {hi}]");
    } else {
        assert_eq!(n2["messages"], serde_json::json!([0, 0]));
        assert_eq!(n2["method"], "markers");
        assert!(n2["wall_clock_disagreement_ns"].is_null());
    }
    let doc = common::glk_json(&["top", "--json", f("ccap").to_str().unwrap()]);
    let mut holders = Vec::new();
    for g in doc["glocks"].as_array().unwrap() {
        for t in g
            .get("held_elsewhere")
            .and_then(|h| h.as_array())
            .into_iter()
            .flatten()
        {
            assert_eq!(t["comm"], "flock");
            holders.push((
                g["glock"].as_str().unwrap().to_string(),
                t["node"].as_str().unwrap().to_string(),
                t["pid"].as_i64().unwrap(),
            ));
        }
    }
    holders.sort();
    assert_eq!(holders, truth.holders, "{}", dir.display());
}

/// Writes `text` into the FIFO at `path` once a reader opens it; false when none has
/// after 20 s.
fn feed_fifo_once(path: &Path, text: &str) -> std::thread::JoinHandle<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let (path, text) = (path.to_path_buf(), text.to_string());
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            // ENXIO until a reader opens it.
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
            {
                std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    })
}

/// What a node reports beside its files (here its glockfd filled the one page the kernel
/// gives) reaches the gathering glk, named by node and quoted: a capture's warning, which
/// the agent prints on its standard error, and a snapshot's problem, which `glk top`
/// puts in its JSON. A FIFO stands in for n1's glockfd (size 0, read once).
#[test]
fn what_a_node_reports_reaches_the_gatherer() {
    let Some((t, sshd)) = two_nodes_in_scratch("what_a_node_reports") else {
        return;
    };
    let fifo = t.path().join("debugfs-n1/gfs2/lab:gfs/glockfd");
    testdata::fifo_at(&fifo);
    let _release = ReleaseFifo(fifo.clone());
    let lines = testdata::glockfd_lines(glockparse::glockfd::page_size());
    let note = format!("{} bytes, all the kernel gives in one read", lines.len());
    let writer = feed_fifo_once(&fifo, &lines);
    let out = t.path().join("capture");
    let o = capture_one_snapshot(&sshd, &[], &out);
    assert!(writer.join().unwrap(), "the agent never opened glockfd");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "glk: 127.0.0.2: warning: snapshot 0: glockfd: {note}"
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("127.0.0.2/glockfd.0")).unwrap(),
        lines
    );
    let writer = feed_fifo_once(&fifo, &lines);
    let (o, _) = top(&sshd, "127.0.0.2,127.0.0.3", &["--once", "--json"]);
    assert!(writer.join().unwrap(), "the agent never opened glockfd");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let want = format!("127.0.0.2: {}: {note}", fifo.display());
    assert!(
        problems[0].as_str().unwrap().starts_with(&want),
        "{problems:?}"
    );
}
