//! `glk agent`: what cluster mode runs on each node (over ssh, or directly on the node glk
//! runs on). It only reads: this node's debugfs files, the DLM's dumps and `dlm_tool
//! plocks`, or a `glk capture` of this node (whose trace uses a private tracefs instance,
//! restored when the capture ends, when the session's input closes, and on SIGHUP).
//! It writes [`cluster::protocol`] on stdout: a hello, then frames of files.
//!
//! `glk agent snapshot` sends one snapshot per `snapshot` line it reads and ends when its
//! input ends (the other side went away). `glk agent capture` captures when told `start`,
//! then sends every file of the capture.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cluster::protocol::{self, Frame, Hello};

use crate::inputs;

/// `glk agent`.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub what: AgentCommand,
}

/// What the agent does.
#[derive(Debug, clap::Subcommand)]
pub enum AgentCommand {
    /// This node's glocks, glstats, glockfd, DLM lock dump and POSIX locks, once per
    /// `snapshot` line read on stdin, until stdin ends.
    Snapshot(AgentSnapshot),
    /// A `glk capture` of this node, sent when complete.
    Capture(AgentCapture),
}

/// Which files, and under which node name.
#[derive(Debug, Clone, clap::Args)]
pub struct Where {
    /// The name the cluster knows this node by (its directory).
    #[arg(long)]
    pub name: String,
    /// Only this filesystem (lock table or its FS part).
    #[arg(long)]
    pub fs: Option<String>,
    /// The debugfs root (default: GLK_DEBUGFS, else the mounted debugfs).
    #[arg(long)]
    pub debugfs: Option<PathBuf>,
}

/// `glk agent snapshot`.
#[derive(Debug, clap::Args)]
pub struct AgentSnapshot {
    #[command(flatten)]
    pub place: Where,
    /// Send a first snapshot at once, unasked (it is read while the other nodes are
    /// still connecting).
    #[arg(long)]
    pub now: bool,
}

/// `glk agent capture`.
#[derive(Debug, clap::Args)]
pub struct AgentCapture {
    #[command(flatten)]
    pub place: Where,
    #[command(flatten)]
    pub sampling: crate::capture::Sampling,
}

pub fn run(a: &AgentArgs) -> io::Result<()> {
    let out = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 20, out.lock());
    protocol::write_hello(&mut out, &hello())?;
    out.flush()?;
    match &a.what {
        AgentCommand::Snapshot(a) => serve_snapshots(a, &mut out),
        AgentCommand::Capture(c) => send_capture(c, &mut out),
    }
}

/// This node's hello.
fn hello() -> Hello {
    Hello {
        glk_agent: protocol::PROTOCOL,
        version: env!("CARGO_PKG_VERSION").into(),
        host: crate::trace::hostname(),
        nodeid: nodeid(),
        time: clikit::fmt::unix_secs(SystemTime::now()),
    }
}

/// This node's DLM node id ([`bundle::local_nodeid`]).
fn nodeid() -> Option<u64> {
    bundle::local_nodeid().and_then(|s| s.trim().parse().ok())
}

/// The debugfs root: the one given, else `GLK_DEBUGFS`, else the mounted one. Through
/// sudo only the mounted one: the login may not point root at other files.
fn root(w: &Where) -> io::Result<PathBuf> {
    if through_sudo() && w.debugfs.is_some() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "through sudo the agent reads the mounted debugfs only (no --debugfs)",
        ));
    }
    let env = std::env::var_os("GLK_DEBUGFS").map(PathBuf::from);
    inputs::debugfs_root(w.debugfs.as_deref().or(env.as_deref()))
}

/// Answers `snapshot` lines until stdin ends.
fn serve_snapshots(a: &AgentSnapshot, out: &mut impl Write) -> io::Result<()> {
    let w = &a.place;
    let root = root(w)?;
    if a.now {
        snapshot(w, &root, out)?;
        end(out)?;
    }
    for line in io::stdin().lock().lines() {
        match line?.trim() {
            "snapshot" => snapshot(w, &root, out)?,
            other => protocol::write_frame(
                out,
                &Frame::Problem {
                    text: format!(
                        "unknown request {}",
                        glockparse::quote::quote(other.as_bytes(), 60)
                    ),
                },
            )?,
        }
        end(out)?;
    }
    Ok(())
}

/// Ends a snapshot (or a capture): the end frame with this node's clock, flushed.
fn end(out: &mut impl Write) -> io::Result<()> {
    protocol::write_frame(
        out,
        &Frame::End {
            time: clikit::fmt::unix_secs(SystemTime::now()),
        },
    )?;
    out.flush()
}

/// One snapshot of every filesystem: `FS/NODE/` with `time.0`, `glocks.0`, `glstats.0`,
/// `glockfd.0`, `sbstats.0`, `dlm_locks.0`, `plocks.0`, `procs.0`, `fdlocks.0`, `node` and
/// `nodeid`, as glk capture names them.
fn snapshot(w: &Where, root: &Path, out: &mut impl Write) -> io::Result<()> {
    let fss = match bundle::live::filesystems(root, w.fs.as_deref()) {
        Ok(f) => f,
        Err(e) => return problem(out, e.to_string()),
    };
    let node = cluster::nodes::dir_name(&w.name);
    let id = nodeid();
    // The node's tasks, once for every filesystem: the commands of the processes that
    // hold GL_NOPID flocks, which the glocks file does not name.
    let mut procs = Vec::new();
    bundle::procs::write(&mut procs, &bundle::procs::this_node())?;
    for fs in &fss {
        let base = format!("{}/{node}", fs.table.replace(':', "_"));
        let time = clikit::fmt::unix_secs(SystemTime::now());
        protocol::write_file(
            out,
            &format!("{base}/time.0"),
            format!("{time:.9}\n").as_bytes(),
        )?;
        let dlm = root.join("dlm").join(format!("{}_locks", fs.lockspace));
        for (name, path) in [
            ("glocks.0", fs.dir.join("glocks")),
            ("glstats.0", fs.dir.join("glstats")),
            ("glockfd.0", fs.dir.join("glockfd")),
            ("sbstats.0", fs.dir.join("sbstats")),
            ("dlm_locks.0", dlm),
        ] {
            let read = if name == "glockfd.0" {
                // One read and no second: see glockparse::glockfd::read_path.
                glockparse::glockfd::read_path(&path).map(|c| (c.bytes, c.cut_short))
            } else {
                read_whole(&path).map(|data| (data, None))
            };
            match read {
                Ok((data, cut)) => {
                    protocol::write_file(out, &format!("{base}/{name}"), &data)?;
                    if let Some(note) = cut {
                        problem(out, format!("{}: {note}", path.display()))?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound && name != "glocks.0" => {}
                Err(e) => problem(out, format!("{}: {e}", path.display()))?,
            }
        }
        let plocks = ["dlm_tool", "plocks", fs.lockspace.as_str()];
        match bundle::live::run_tool(&plocks, Duration::from_secs(2)) {
            Ok(Some(text)) => {
                protocol::write_file(out, &format!("{base}/plocks.0"), text.as_bytes())?
            }
            Ok(None) => {}
            Err(e) => problem(out, format!("dlm_tool plocks {}: {e}", fs.lockspace))?,
        }
        protocol::write_file(out, &format!("{base}/procs.0"), &procs)?;
        // Who holds an flock through an open file, where the glocks file names a process
        // that has ended (before 6.1) or none.
        let mut fdlocks = Vec::new();
        let devs: Vec<(u32, u32)> = fs.device().into_iter().collect();
        bundle::fdlocks::write_this_node(&mut fdlocks, &devs)?;
        protocol::write_file(out, &format!("{base}/fdlocks.0"), &fdlocks)?;
        protocol::write_file(
            out,
            &format!("{base}/node"),
            format!("{}\n", w.name).as_bytes(),
        )?;
        protocol::write_file(
            out,
            &format!("{base}/table"),
            format!("{}\n", fs.table).as_bytes(),
        )?;
        if let Some(id) = id {
            protocol::write_file(out, &format!("{base}/nodeid"), format!("{id}\n").as_bytes())?;
        }
    }
    Ok(())
}

/// Reads a file whole in reads of 1 MiB (a debugfs file reports size 0: no tiny first
/// probe, and few calls into the kernel's seq_file).
fn read_whole(path: &Path) -> io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match io::Read::read(&mut f, &mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn problem(out: &mut impl Write, text: String) -> io::Result<()> {
    protocol::write_frame(out, &Frame::Problem { text })
}

/// Captures this node once a `start` line comes on stdin (so that every node starts
/// together, when all have connected), then sends every file of the capture. The capture
/// stops early, restoring tracefs, when stdin ends (the other side went away) or on a
/// signal.
fn send_capture(c: &AgentCapture, out: &mut impl Write) -> io::Result<()> {
    tracepipe::stop::install();
    let (go, started) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        let mut line = String::new();
        if stdin.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() == "start" {
            let _ = go.send(());
            // Nothing more is asked: the end of stdin means the session is gone.
            let _ = io::copy(&mut stdin, &mut io::sink());
        }
        tracepipe::stop::request();
    });
    let dir = tempfile::Builder::new().prefix("glk-agent-").tempdir()?;
    let result = wait_for_start(&started)
        .and_then(|()| traced_as_sudo_allows(&c.sampling.trace_events))
        .and_then(|()| {
            crate::capture::run(&crate::capture::CaptureArgs {
                fs: c.place.fs.clone(),
                sampling: c.sampling.clone(),
                output: dir.path().join("capture"),
                debugfs: Some(root(&c.place)?),
                node_name: Some(cluster::nodes::dir_name(&c.place.name)),
                cluster: Default::default(),
                announce: None,
            })
        });
    match result {
        Ok(()) if tracepipe::stop::requested() => {
            problem(out, "the capture was interrupted".into())?;
        }
        Ok(()) => send_tree(&dir.path().join("capture"), out)?,
        Err(e) => problem(out, format!("capture failed: {e}"))?,
    }
    end(out)
}

/// True when the agent runs through sudo (`SUDO_USER` set): for a login that is not
/// root, which gets what it needs and no more.
fn through_sudo() -> bool {
    std::env::var_os("SUDO_USER").is_some()
}

/// Through sudo the agent traces only gfs2 and dlm events: the login is
/// allowed the node's locking state, not every process's system calls.
fn traced_as_sudo_allows(events: &[String]) -> io::Result<()> {
    if !through_sudo() {
        return Ok(());
    }
    // A bare name is a gfs2 event (or gfs2, dlm, all), as glk trace --events reads it.
    let locking = |e: &str| match e.split_once(':') {
        None => true,
        Some((system, _)) => system == "gfs2" || system == "dlm",
    };
    match events.iter().find(|e| !locking(e.trim())) {
        None => Ok(()),
        Some(e) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "through sudo the agent traces only gfs2 and dlm events, not {}",
                glockparse::quote::quote(e.as_bytes(), 60)
            ),
        )),
    }
}

/// Waits for the `start` line; an error when stdin ends first.
fn wait_for_start(started: &std::sync::mpsc::Receiver<()>) -> io::Result<()> {
    started
        .recv()
        .map_err(|_| io::Error::other("the session ended before the capture started"))
}

/// Sends every file below `dir` with its path relative to it.
fn send_tree(dir: &Path, out: &mut impl Write) -> io::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)?.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(dir)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            protocol::write_file_from(out, &rel, std::fs::File::open(&p)?)?;
        }
    }
    Ok(())
}
