//! Cluster mode of `glk top`, `glk capture`, `glk doctor live` and `glk stats`: the same
//! command on every node at once, each node's `glk agent` reached with the system's ssh
//! ([`cluster::session`]), the nodes' files gathered into one place and read by the same
//! analysis that reads a capture of several nodes. A node that does not answer within
//! its deadline is named missing, with why; the others' results still come.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use cluster::gather::NodeDir;
use cluster::session::{Remote, Session};
use cluster::{nodes, Node};

/// Which nodes, and how to reach them.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClusterArgs {
    /// Every member of the cluster (from corosync), this node included: the others are
    /// reached with ssh and run the same glk (`glk agent`).
    #[arg(long, conflicts_with = "nodes", help_heading = "Cluster")]
    pub cluster: bool,
    /// These nodes (ssh destinations, comma-separated; one that names this host runs
    /// here without ssh).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NODE,...",
        help_heading = "Cluster"
    )]
    pub nodes: Vec<String>,
    /// Run glk on the other nodes through `sudo -n` (for a login that is not root).
    #[arg(long, help_heading = "Cluster")]
    pub sudo: bool,
    /// The glk program on the other nodes.
    #[arg(
        long,
        default_value = "glk",
        value_name = "PATH",
        help_heading = "Cluster"
    )]
    pub remote_glk: String,
    /// An ssh configuration file to use instead of ~/.ssh/config (ssh -F).
    #[arg(long, value_name = "FILE", help_heading = "Cluster")]
    pub ssh_config: Option<PathBuf>,
    /// Seconds ssh may take to connect to a node.
    #[arg(
        long,
        default_value_t = 5,
        value_name = "SECS",
        help_heading = "Cluster"
    )]
    pub connect_timeout: u32,
    /// Seconds a node may take to answer once connected (a snapshot; for a capture, on
    /// top of its length); then it is named missing.
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = clikit::args::seconds, help_heading = "Cluster")]
    pub node_timeout: f64,
}

impl ClusterArgs {
    /// True when cluster mode is asked for.
    pub fn on(&self) -> bool {
        self.cluster || !self.nodes.is_empty()
    }

    /// The members: `--nodes`, or corosync's with `--cluster`.
    pub fn members(&self) -> io::Result<Vec<Node>> {
        let me = crate::trace::hostname();
        let found = if self.cluster {
            let run = |cmd: &[&str]| {
                bundle::live::run_tool(cmd, Duration::from_secs(5))
                    .ok()
                    .flatten()
            };
            nodes::from_corosync(
                run(&["corosync-cmapctl", "nodelist"]).as_deref(),
                run(&["corosync-quorumtool", "-l"]).as_deref(),
                &me,
            )
        } else {
            nodes::parse_list(&self.nodes, &me)
        };
        found.map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    }

    /// How to reach them.
    pub fn remote(&self) -> io::Result<Remote> {
        if self.remote_glk.is_empty() || self.remote_glk.starts_with('-') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--remote-glk {:?}: not a program", self.remote_glk),
            ));
        }
        Ok(Remote {
            ssh: "ssh".into(),
            config: self.ssh_config.clone(),
            connect_timeout: self.connect_timeout,
            sudo: self.sudo,
            glk: self.remote_glk.clone(),
            this_glk: std::env::current_exe()?,
            version: env!("CARGO_PKG_VERSION").into(),
        })
    }

    /// How long a node may take to connect and answer.
    pub fn deadline(&self) -> Duration {
        Duration::from_secs_f64(f64::from(self.connect_timeout) + self.node_timeout)
    }
}

/// One node's place in the fleet.
pub struct Slot {
    /// The node.
    pub node: Node,
    /// Its agent, while connected.
    session: Option<Session>,
    /// Why it did not answer last time.
    pub missing: Option<String>,
    /// When its agent was started, and when its hello came (this machine's clock): they
    /// bound the node's clock offset.
    pub started: SystemTime,
    /// When its hello came.
    pub hello_at: Option<SystemTime>,
    /// Its hello's clock.
    pub hello_time: Option<f64>,
    /// Its DLM node id, from its hello.
    pub nodeid: Option<u64>,
    /// When to try to reconnect at the earliest.
    retry_at: Instant,
    /// Its agent sends a first snapshot unasked (`snapshot --now`), not yet taken.
    unasked: bool,
}

impl Slot {
    /// One batch of this node written below `dir` (when it was asked), until `deadline`;
    /// what is missing of it is kept in `missing`.
    fn receive(&mut self, dir: &Path, deadline: Instant, asked: bool) -> Result<Got, String> {
        let session = match self.session.as_mut() {
            Some(session) if asked => session,
            _ => {
                return Err(self
                    .missing
                    .clone()
                    .unwrap_or_else(|| "not connected".into()))
            }
        };
        let own = self.node.dir();
        let mut sink = NodeDir::new(dir, &own);
        let got = match session.receive(deadline, &mut sink) {
            Ok(end) => sink.finish().map(|files| Got {
                files,
                problems: end.problems,
            }),
            Err(why) => {
                sink.discard();
                Err(why)
            }
        };
        match &got {
            Ok(_) => self.missing = None,
            Err(why) => {
                self.missing = Some(why.clone());
                if session.is_closed() {
                    self.session = None;
                }
            }
        }
        got
    }
}

/// What a node sent in one batch.
#[derive(Debug)]
pub struct Got {
    /// The files written, relative to the directory they were written below.
    pub files: Vec<PathBuf>,
    /// What its agent could not do, and the warnings it printed.
    pub problems: Vec<String>,
}

/// The agent arguments of each node.
type AgentArgsOf = Box<dyn Fn(&Node) -> Vec<String> + Send>;

/// Nodes that did not answer, each with why.
pub type Missing = Vec<(String, String)>;

/// Every node's agent.
pub struct Fleet {
    remote: Remote,
    args: AgentArgsOf,
    /// The nodes, in the order given.
    pub slots: Vec<Slot>,
}

/// Seconds between attempts to reach a node that went away.
const RETRY: Duration = Duration::from_secs(10);

impl Fleet {
    /// Starts `glk agent ARGS` (`args` of each node) on every node at once and waits
    /// until `deadline` for their hellos.
    pub fn start(
        remote: Remote,
        nodes: Vec<Node>,
        args: impl Fn(&Node) -> Vec<String> + Send + 'static,
        deadline: Instant,
    ) -> Fleet {
        let mut fleet = Fleet {
            remote,
            args: Box::new(args),
            slots: nodes
                .into_iter()
                .map(|node| Slot {
                    node,
                    session: None,
                    missing: None,
                    started: SystemTime::now(),
                    hello_at: None,
                    hello_time: None,
                    nodeid: None,
                    retry_at: Instant::now(),
                    unasked: false,
                })
                .collect(),
        };
        for i in 0..fleet.slots.len() {
            fleet.connect(i);
        }
        for i in 0..fleet.slots.len() {
            fleet.hello(i, deadline);
        }
        fleet
    }

    /// Starts node `i`'s agent.
    fn connect(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.started = SystemTime::now();
        s.retry_at = Instant::now() + RETRY;
        let args = (self.args)(&s.node);
        s.unasked = args.iter().any(|a| a == "--now");
        match Session::start(&self.remote, &s.node, &args) {
            Ok(session) => s.session = Some(session),
            Err(e) => s.missing = Some(e.to_string()),
        }
    }

    /// Waits until `deadline` for node `i`'s hello; true when it has said it.
    fn hello(&mut self, i: usize, deadline: Instant) -> bool {
        let s = &mut self.slots[i];
        let Some(session) = s.session.as_mut() else {
            return false;
        };
        if session.hello.is_some() {
            return true;
        }
        match session.wait_hello(deadline) {
            Ok(h) => {
                s.hello_at = Some(SystemTime::now());
                s.hello_time = Some(h.time);
                s.nodeid = h.nodeid;
                s.missing = None;
                true
            }
            Err(why) => {
                s.missing = Some(why);
                if session.is_closed() {
                    s.session = None;
                }
                false
            }
        }
    }

    /// Asks every connected node for a snapshot and waits until `deadline` for them,
    /// writing each node's files below `dir` as they come. Nodes that went away are
    /// reconnected (every 10 s at most) and answer from the next call. Returns what each
    /// node sent or why it sent nothing, in node order.
    pub fn snapshots(&mut self, dir: &Path, deadline: Instant) -> Vec<Result<Got, String>> {
        let asked: Vec<bool> = (0..self.slots.len()).map(|i| self.ask(i)).collect();
        self.receive_all(dir, deadline, &asked)
    }

    /// Asks node `i` for a snapshot, reconnecting it first when it went away (every 10 s
    /// at most); true when asked. A new agent's hello is not waited for: it answers next
    /// time.
    fn ask(&mut self, i: usize) -> bool {
        if self.slots[i].session.is_none() && self.slots[i].retry_at <= Instant::now() {
            self.connect(i);
        }
        if !self.hello(i, Instant::now()) {
            return false;
        }
        let s = &mut self.slots[i];
        if std::mem::take(&mut s.unasked) {
            return true;
        }
        let session = s.session.as_mut().expect("said hello");
        if let Some(owed) = session.owes() {
            s.missing = Some(format!(
                "still no answer, {:.0} s after its deadline (its debugfs read stuck, or the \
                 node paused)",
                owed.as_secs_f64()
            ));
            return false;
        }
        match session.request("snapshot") {
            Ok(()) => true,
            Err(why) => {
                s.missing = Some(why);
                s.session = None;
                false
            }
        }
    }

    /// Tells every node that said hello to `start` (a capture); returns how many.
    pub fn start_all(&mut self) -> usize {
        let mut n = 0;
        for s in &mut self.slots {
            if let Some(session) = s.session.as_mut().filter(|x| x.hello.is_some()) {
                match session.request("start") {
                    Ok(()) => n += 1,
                    Err(why) => s.missing = Some(why),
                }
            }
        }
        n
    }

    /// Waits until `deadline` for one batch from every node that said hello (a capture),
    /// writing each node's files below `dir` as they come.
    pub fn batches(&mut self, dir: &Path, deadline: Instant) -> Vec<Result<Got, String>> {
        let said: Vec<bool> = self
            .slots
            .iter()
            .map(|s| s.session.as_ref().is_some_and(|x| x.hello.is_some()))
            .collect();
        self.receive_all(dir, deadline, &said)
    }

    /// One batch of every node in `which`, all read at once (one thread a node), each
    /// written below `dir` as it comes ([`NodeDir`]): no node's files are held whole in
    /// this process, and one slow node does not hold up the others.
    fn receive_all(
        &mut self,
        dir: &Path,
        deadline: Instant,
        which: &[bool],
    ) -> Vec<Result<Got, String>> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .slots
                .iter_mut()
                .zip(which)
                .map(|(s, &asked)| scope.spawn(move || s.receive(dir, deadline, asked)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a node's reader does not panic"))
                .collect()
        })
    }

    /// Ends every agent: their input closes, so that each stops and restores what it
    /// changed; what is left after `grace` is killed.
    pub fn finish(self, grace: Duration) {
        let sessions: Vec<Session> = self.slots.into_iter().filter_map(|s| s.session).collect();
        let handles: Vec<_> = sessions
            .into_iter()
            .map(|s| std::thread::spawn(move || s.finish(grace)))
            .collect();
        for h in handles {
            let _ = h.join();
        }
    }
}

/// The agent arguments that choose the files: the node's name, the filesystem and, when
/// given, the debugfs root.
pub fn place_args(node: &Node, fs: Option<&str>, debugfs: Option<&Path>) -> Vec<String> {
    let mut a = vec!["--name".to_string(), node.name.clone()];
    if let Some(fs) = fs {
        a.extend(["--fs".into(), fs.to_string()]);
    }
    if let Some(d) = debugfs {
        a.extend(["--debugfs".into(), d.display().to_string()]);
    }
    a
}

/// A private directory for the nodes' files of one command: in `/dev/shm` where it can
/// be made (memory, not the node's disk: a refresh over 16 nodes of 10^5 glocks writes
/// ~200 MB), else in the temporary directory.
pub fn scratch_dir(prefix: &str) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::Builder::new().prefix(prefix).tempdir())
}

/// Says on stderr which nodes did not answer and why.
pub fn report_missing(missing: &Missing) {
    for (node, why) in missing {
        eprintln!("glk: node {node} missing: {why}");
    }
}

/// `glk capture --cluster -o DIR`: every node captures at the same moment (each agent
/// connects, then all are told to start together) into `DIR/NODE/` (`DIR/FS/NODE/`
/// with several filesystems), gathered here; `DIR/cluster.json` records each node's
/// clock against this one's, bounded by the ssh round trip, and the nodes that did not
/// answer. A `-o X.tar.zst` packs the same tree.
pub fn capture(a: &crate::capture::CaptureArgs) -> io::Result<()> {
    let c = &a.cluster;
    let nodes = c.members()?;
    let (out, staging) = crate::capture::staging(&a.output)?;
    refuse_existing(&out, &nodes)?;
    a.announce();
    let args = agent_capture_args(a);
    let fleet_args = move |n: &Node| {
        let mut v = vec!["capture".to_string()];
        v.extend(place_args(n, None, None));
        v.extend(args.iter().cloned());
        v
    };
    eprintln!("glk: connecting to {} node(s)...", nodes.len());
    let mut fleet = Fleet::start(
        c.remote()?,
        nodes,
        fleet_args,
        Instant::now() + c.deadline(),
    );
    let started = fleet.start_all();
    eprintln!(
        "glk: {started} node(s) capturing for {:.0} s",
        capture_secs(a)
    );
    let deadline = Instant::now() + Duration::from_secs_f64(capture_secs(a) + c.node_timeout);
    std::fs::create_dir_all(&out)?;
    let results = fleet.batches(&out, deadline);
    let mut report = Vec::new();
    let mut captured = 0;
    for (slot, got) in fleet.slots.iter().zip(results) {
        let state = got.and_then(|b| {
            if b.files.is_empty() {
                return Err(b.problems.join("; "));
            }
            for p in &b.problems {
                eprintln!("glk: {}: {p}", slot.node);
            }
            Ok(b.files.len())
        });
        report.push(node_record(slot, &state));
        match state {
            Ok(n) => {
                captured += 1;
                eprintln!("glk: {}: {n} file(s)", slot.node);
            }
            Err(why) => eprintln!("glk: node {} missing: {why}", slot.node),
        }
    }
    let asked = report.len();
    fleet.finish(Duration::from_secs(5));
    let manifest = serde_json::json!({
        "glk_version": env!("CARGO_PKG_VERSION"),
        "gathered_by": crate::trace::hostname(),
        "nodes": report,
    });
    std::fs::write(
        out.join("cluster.json"),
        serde_json::to_vec_pretty(&manifest)?,
    )?;
    if captured == 0 {
        return Err(io::Error::other("no node was captured (see above why)"));
    }
    if staging.is_some() {
        crate::capture::pack(&out, &a.output)?;
    }
    eprintln!(
        "glk: {captured} of {asked} node(s) captured in {}",
        a.output.display()
    );
    Ok(())
}

/// How long a capture of `a` lasts: its snapshots and its trace.
fn capture_secs(a: &crate::capture::CaptureArgs) -> f64 {
    let s = &a.sampling;
    let snaps = s.interval * f64::from(s.count.saturating_sub(1));
    snaps.max(s.trace.unwrap_or(0.0))
}

/// The capture options every agent gets.
fn agent_capture_args(a: &crate::capture::CaptureArgs) -> Vec<String> {
    let s = &a.sampling;
    let mut v = vec![
        "--count".to_string(),
        s.count.to_string(),
        "--interval".into(),
        s.interval.to_string(),
        "--trace-events".into(),
        s.trace_events.join(","),
    ];
    if let Some(t) = s.trace {
        v.extend(["--trace".into(), t.to_string()]);
    }
    if let Some(fs) = &a.fs {
        v.extend(["--fs".into(), fs.clone()]);
    }
    v
}

/// An error when a node's directory in `out` exists and is not empty.
fn refuse_existing(out: &Path, nodes: &[Node]) -> io::Result<()> {
    nodes
        .iter()
        .try_for_each(|n| crate::capture::refuse_existing(&out.join(n.dir())))
}

/// A node's entry in `cluster.json`.
fn node_record(slot: &Slot, state: &Result<usize, String>) -> serde_json::Value {
    let secs = |t: SystemTime| clikit::fmt::unix_secs(t);
    // The node's clock minus this one's lies between these: its hello was written after
    // the agent started and read before the hello came.
    let offset = match (slot.hello_time, slot.hello_at) {
        (Some(h), Some(at)) => Some(serde_json::json!({
            "min_s": h - secs(at),
            "max_s": h - secs(slot.started),
        })),
        _ => None,
    };
    serde_json::json!({
        "node": slot.node.name,
        "host": slot.node.host,
        "nodeid": slot.nodeid.or(slot.node.nodeid),
        "local": slot.node.local,
        "captured": state.is_ok(),
        "files": state.as_ref().ok(),
        "missing": state.as_ref().err(),
        "clock_offset": offset,
    })
}

/// One snapshot of every node (`glk agent snapshot`) written below `dir` as
/// `FS/NODE/glocks.0`, ...; returns the node directories written. The nodes that did not
/// answer are named on stderr; none answering is an error. `fs` keeps one filesystem
/// (`--fs`), which a node that does not mount it reports.
pub fn snapshot_once(c: &ClusterArgs, fs: Option<&str>, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let nodes = c.members()?;
    let fs = fs.map(str::to_string);
    let args = move |n: &Node| {
        let mut a = vec!["snapshot".to_string(), "--now".to_string()];
        a.extend(place_args(n, fs.as_deref(), None));
        a
    };
    let mut fleet = Fleet::start(c.remote()?, nodes, args, Instant::now() + c.deadline());
    let results = fleet.snapshots(
        dir,
        Instant::now() + Duration::from_secs_f64(c.node_timeout),
    );
    let mut written = Vec::new();
    let mut missing = Vec::new();
    for (slot, got) in fleet.slots.iter().zip(results) {
        match got {
            Ok(b) => {
                for p in &b.problems {
                    eprintln!("glk: {}: {p}", slot.node);
                }
                let name = slot.node.dir();
                written.extend(
                    b.files
                        .iter()
                        .filter_map(|rel| rel.parent().map(|p| dir.join(p)))
                        .filter(|p| p.ends_with(&name)),
                );
            }
            Err(why) => missing.push((slot.node.name.clone(), why)),
        }
    }
    fleet.finish(Duration::from_secs(2));
    report_missing(&missing);
    written.sort();
    written.dedup();
    if written.is_empty() {
        return Err(io::Error::other("no node answered (see above why)"));
    }
    Ok(written)
}
