//! `bench cluster`: glk's cluster mode over stand-in nodes. One real OpenSSH server per
//! node on its own loopback address (`testdata::sshd`, root), each node's glk reading its
//! own debugfs-shaped root: a real fixture node's files (glocks, glstats, glockfd, the DLM
//! dump, its node id), its glocks file grown by the generated glocks to the size asked.
//! Measured: `cat` of one node's glocks file (the floor a node's own `glk top` stands
//! on), `glk top --nodes ... --once` (time to the first screen: connecting to every node
//! included), the refreshes of a running `glk top --nodes ... --json` (the `read_s` each
//! reports: asking every node, gathering and reading), the peak RSS of glk and of one
//! node's agent, `glk capture --nodes ...`, and a capture of one node whose trace is
//! hundreds of MB (the gathering glk's peak RSS beside what it gathered).
//!
//! Every node shares this machine's cores: on a real cluster each node's agent reads its
//! own files on its own CPU, so these figures are an upper bound of the gathering.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testdata::sshd::{Host, Sshd};

use crate::measure::{self, ms};

/// What to run.
pub struct Setup<'a> {
    /// The glk under test.
    pub glk: &'a Path,
    /// Stand-in nodes (GFS2 allows 16).
    pub nodes: usize,
    /// The generated glocks file every node's glocks are grown by.
    pub generated: &'a Path,
    /// Refreshes of the running top.
    pub refreshes: usize,
}

/// Every real fixture node directory with a glocks, glstats, glockfd and DLM dump of one
/// snapshot: (directory, its newest such snapshot number).
fn fixture_nodes() -> Vec<(PathBuf, u32)> {
    let mut out: Vec<(PathBuf, u32)> = Vec::new();
    for glocks in testdata::files("real", |n| n.starts_with("glocks.")) {
        let (Some(dir), Some(n)) = (
            glocks.parent(),
            glocks
                .extension()
                .and_then(|e| e.to_str()?.parse::<u32>().ok()),
        ) else {
            continue;
        };
        let complete = ["glstats", "glockfd", "dlm_locks"]
            .iter()
            .all(|f| dir.join(format!("{f}.{n}")).is_file());
        if !complete {
            continue;
        }
        match out.last_mut() {
            Some((d, newest)) if d == dir => *newest = (*newest).max(n),
            _ => out.push((dir.to_path_buf(), n)),
        }
    }
    out
}

/// Node `i`'s debugfs root under `dir`, from fixture node `from` (snapshot `n`), its
/// glocks file followed by `generated`.
fn make_root(dir: &Path, from: &Path, n: u32, generated: &Path) -> std::io::Result<PathBuf> {
    let fs = dir.join("gfs2/lab:gfs");
    std::fs::create_dir_all(&fs)?;
    std::fs::create_dir_all(dir.join("dlm"))?;
    let src = |f: &str| from.join(format!("{f}.{n}"));
    let mut glocks = std::fs::File::create(fs.join("glocks"))?;
    std::io::copy(&mut std::fs::File::open(src("glocks"))?, &mut glocks)?;
    std::io::copy(&mut std::fs::File::open(generated)?, &mut glocks)?;
    glocks.flush()?;
    std::fs::copy(src("glstats"), fs.join("glstats"))?;
    std::fs::copy(src("glockfd"), fs.join("glockfd"))?;
    std::fs::copy(src("dlm_locks"), dir.join("dlm/gfs_locks"))?;
    Ok(fs.join("glocks"))
}

/// The cluster options of every glk command here.
fn cluster_args(cmd: &mut Command, glk: &Path, sshd: &Sshd, nodes: &str) {
    cmd.args(["--nodes", nodes])
        .arg("--ssh-config")
        .arg(sshd.config())
        .arg("--remote-glk")
        .arg(glk)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
}

/// Best and median of `runs` runs of `make()`, and the largest peak RSS (KiB).
fn best_median(runs: usize, mut make: impl FnMut() -> Command) -> std::io::Result<(f64, f64, u64)> {
    let mut walls = Vec::new();
    let mut rss = 0;
    for _ in 0..runs {
        let r = measure::run_once(&mut make())?;
        walls.push(ms(r.wall));
        rss = rss.max(r.rss_kib);
    }
    walls.sort_by(f64::total_cmp);
    Ok((walls[0], walls[walls.len() / 2], rss))
}

pub fn run(s: &Setup) -> std::io::Result<()> {
    let work = PathBuf::from("bench/out/cluster-work");
    let _ = std::fs::remove_dir_all(&work);
    let fixtures = fixture_nodes();
    let mut hosts = Vec::new();
    let mut files = Vec::new();
    for i in 0..s.nodes {
        let (from, n) = &fixtures[i % fixtures.len()];
        let root = work.join(format!("node{i}"));
        files.push(make_root(&root, from, *n, s.generated)?);
        let nodeid = bundle::read_nodeid(from).unwrap_or(i as u64 + 1);
        hosts.push(Host {
            addr: format!("127.0.0.{}", i + 2),
            env: vec![
                (
                    "GLK_DEBUGFS".into(),
                    std::fs::canonicalize(&root)?.display().to_string(),
                ),
                ("GLK_NODEID".into(), nodeid.to_string()),
            ],
        });
    }
    let ssh_dir = std::fs::canonicalize(&work)?.join("ssh");
    let sshd = Sshd::start(&ssh_dir, &hosts).map_err(std::io::Error::other)?;
    let nodes: Vec<String> = hosts.iter().map(|h| h.addr.clone()).collect();
    let nodes = nodes.join(",");
    let size = std::fs::metadata(&files[0])?.len();
    println!(
        "{} nodes over ssh (sshd on 127.0.0.2-{}), each {:.1} MB of glocks (fixtures {} with generated glocks)",
        s.nodes,
        s.nodes + 1,
        size as f64 / 1e6,
        fixtures.len()
    );
    ssh_floor(&sshd, &hosts)?;
    let (cat_best, cat_med, _) = best_median(7, || {
        let mut c = Command::new("cat");
        c.arg(&files[0]);
        c
    })?;
    println!("cat glocks (one node): best {cat_best:.1} ms, median {cat_med:.1} ms");
    let once = || {
        let mut c = Command::new(s.glk);
        c.args(["top", "--once", "--json"]);
        cluster_args(&mut c, s.glk, &sshd, &nodes);
        c
    };
    let (best, med, rss) = best_median(5, once)?;
    println!(
        "glk top --nodes ({} nodes) --once: first screen best {best:.0} ms, median {med:.0} ms; \
         {:.0} ms over cat's best (goal: within 2000 ms); peak RSS {:.1} MiB",
        s.nodes,
        best - cat_best,
        rss as f64 / 1024.0
    );
    refreshes(s, &sshd, &nodes)?;
    agent_rss(s, &hosts[0])?;
    let out = work.join("capture");
    let mut c = Command::new(s.glk);
    c.args(["capture", "--count", "2", "--interval", "1", "-o"])
        .arg(&out);
    cluster_args(&mut c, s.glk, &sshd, &nodes);
    let r = measure::run_once(&mut c)?;
    println!(
        "glk capture --nodes ({} nodes) --count 2 --interval 1: {:.0} ms (1000 ms of it the \
         interval), {:.0} MB gathered, peak RSS {:.1} MiB",
        s.nodes,
        ms(r.wall),
        dir_bytes(&out) as f64 / 1e6,
        r.rss_kib as f64 / 1024.0
    );
    traced_capture(s, &sshd, &hosts[0], &work.join("traced"))?;
    drop(sshd);
    std::fs::remove_dir_all(&work)?;
    Ok(())
}

/// A capture whose trace is large: one node traces every sched and syscalls event for
/// 20 s (hundreds of MB of text here), gathered by this glk, whose peak RSS should not
/// grow with it (the files are written as they come).
fn traced_capture(s: &Setup, sshd: &Sshd, host: &Host, out: &Path) -> std::io::Result<()> {
    let mut c = Command::new(s.glk);
    c.args(["capture", "--count", "1", "--trace", "20", "--trace-events"])
        .arg("sched:*,syscalls:*")
        .arg("-o")
        .arg(out);
    cluster_args(&mut c, s.glk, sshd, &host.addr);
    let r = measure::run_once(&mut c)?;
    println!(
        "glk capture --nodes (1 node) --trace 20 of sched:* and syscalls:*: {:.0} ms, {:.0} MB \
         gathered, peak RSS {:.1} MiB",
        ms(r.wall),
        dir_bytes(out) as f64 / 1e6,
        r.rss_kib as f64 / 1024.0
    );
    Ok(())
}

/// What ssh alone costs here: every node's `ssh NODE true` at once (best of 5), the floor
/// under glk's first screen on stand-in nodes that share this machine's cores.
fn ssh_floor(sshd: &Sshd, hosts: &[Host]) -> std::io::Result<()> {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let children: Vec<_> = hosts
            .iter()
            .map(|h| {
                Command::new("ssh")
                    .arg("-F")
                    .arg(sshd.config())
                    .args(["-T", "-o", "BatchMode=yes", "--", &h.addr, "true"])
                    .stdin(Stdio::null())
                    .spawn()
            })
            .collect::<std::io::Result<_>>()?;
        for mut c in children {
            c.wait()?;
        }
        best = best.min(ms(start.elapsed()));
    }
    println!(
        "ssh alone: {} sessions of `true` at once: best {best:.0} ms",
        hosts.len()
    );
    Ok(())
}

/// The refreshes of a running `glk top --nodes ... --json`: each document's `read_s`.
fn refreshes(s: &Setup, sshd: &Sshd, nodes: &str) -> std::io::Result<()> {
    let mut c = Command::new(s.glk);
    c.args(["top", "--json", "-d", "0.5", "--count"])
        .arg((s.refreshes + 1).to_string());
    cluster_args(&mut c, s.glk, sshd, nodes);
    let start = Instant::now();
    let mut child = c.stdout(Stdio::piped()).spawn()?;
    let out = BufReader::new(child.stdout.take().expect("piped"));
    let mut reads = Vec::new();
    let mut first = None;
    for line in out.lines() {
        let line = line?;
        first.get_or_insert(start.elapsed());
        if let Some(r) = line
            .split("\"read_s\":")
            .nth(1)
            .and_then(|t| t.split([',', '}']).next())
            .and_then(|v| v.parse::<f64>().ok())
        {
            reads.push(r * 1e3);
        }
    }
    child.wait()?;
    let first = first.unwrap_or(Duration::ZERO);
    let later: Vec<f64> = reads.iter().skip(1).copied().collect();
    let mut sorted = later.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "glk top --nodes --json: first screen {:.0} ms; {} refreshes after it: best {:.0} ms, \
         median {:.0} ms each (asking every node, gathering, reading)",
        ms(first),
        later.len(),
        sorted.first().copied().unwrap_or(0.0),
        sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
    );
    Ok(())
}

/// The peak RSS of one node's agent answering one snapshot request.
fn agent_rss(s: &Setup, host: &Host) -> std::io::Result<()> {
    let req = PathBuf::from("bench/out/cluster-work/request");
    std::fs::write(&req, "snapshot\n")?;
    let mut c = Command::new(s.glk);
    c.args(["agent", "snapshot", "--name", "n"])
        .envs(host.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::fs::File::open(&req)?);
    let r = measure::run_once(&mut c)?;
    println!(
        "one node's glk agent, one snapshot: {:.0} ms, CPU {:.0} ms, peak RSS {:.1} MiB",
        ms(r.wall),
        ms(r.cpu),
        r.rss_kib as f64 / 1024.0
    );
    Ok(())
}

/// The bytes of every file below `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                total += e.metadata().map_or(0, |m| m.len());
            }
        }
    }
    total
}
