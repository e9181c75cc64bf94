//! The trace half of the analyses, in one pass per node with bounded memory.
//!
//! Every analysis of trace events is a per-node state machine or count in time order
//! (queue → promote pairing, demote bursts, give-up/regain cycles, lock-time classes,
//! queue/dequeue balance, per-glock counts). So each node's traces are decoded straight
//! into typed events ([`traceparse::Gfs2Event`]) and fed to [`NodeTrace`] as they are read:
//! no event is kept, no text is copied, and memory is the per-glock state, whatever the
//! length of the trace. Nodes are read on every core at once; their states are combined by
//! the report functions of each analysis.
//!
//! A node's events must be fed in time order. A trace is (the kernel merges its per-CPU
//! buffers by time); when one is not (files concatenated out of order), that node is read
//! again into memory and sorted by time, stably, as the analyses always did.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bundle::filesystems::FsIds;
use bundle::Captures;
use gfs2stats::lock_time::LockTimes;
use glockparse::Diagnostics;
use traceparse::{Decoded, Dev, DlmEvent, Gfs2Event};

use super::clock::Mark;
use super::{contended, handoff, hold_wait, storms, stuck};

/// One event the per-node state machines read.
#[derive(Debug, Clone, Copy)]
pub enum Ev {
    /// A gfs2 event.
    Gfs2(Gfs2Event),
    /// A dlm event.
    Dlm(DlmEvent),
    /// A `glkmark` clock marker, with its trace clock name when it carries one
    /// (`clock=local`: up to 16 bytes).
    Mark(Mark, Option<([u8; 16], u8)>),
    /// `CPU:N [LOST M EVENTS]`: events the ring buffer dropped (None: `CPU:N [LOST
    /// EVENTS]`, how many unknown).
    Lost(Option<u64>),
}

impl Ev {
    /// Whether any state machine reads it (gfs2 events about a glock, flush starts for
    /// the demote work, every dlm event, markers).
    fn wanted(&self) -> bool {
        match self {
            Ev::Gfs2(e) => {
                e.glock().is_some()
                    || matches!(
                        e,
                        Gfs2Event::LogFlush { start: true, .. }
                            | Gfs2Event::AilFlush { start: true, .. }
                    )
            }
            Ev::Dlm(_) | Ev::Mark(..) | Ev::Lost(_) => true,
        }
    }
}

/// The per-glock distributions of every node read so far, folded together as each node
/// finishes, so only the nodes being read hold their own.
#[derive(Default)]
pub struct Folded {
    /// Wait, hold and demote times per glock.
    pub hold_wait: hold_wait::Pairing,
    /// Classified lock-time samples per glock and type.
    pub lock_times: LockTimes,
}

impl Folded {
    fn absorb(&mut self, t: &mut NodeTrace) {
        self.hold_wait.absorb(&mut t.hold_wait);
        self.lock_times.absorb(std::mem::take(&mut t.lock_times));
    }
}

/// One node's trace state after all its events (its distributions are moved into
/// [`Folded`] once it is read).
#[derive(Default)]
pub struct NodeTrace {
    /// The node.
    pub node: String,
    /// Events with a glock fed in.
    pub events: u64,
    /// Trace lines read.
    pub lines: u64,
    /// Whether the node's events had to be sorted by time in memory.
    pub sorted_in_memory: bool,
    /// Events the trace says were lost (`[LOST N EVENTS]` and `[LOST EVENTS]` lines).
    pub lost: traceparse::LostEvents,
    /// Queue, promote and dequeue paired into hold and wait times.
    pub hold_wait: hold_wait::Pairing,
    /// Remote demotes over time, for storms and ping-pong.
    pub demotes: storms::NodeDemotes,
    /// DLM round trips (`gfs2_glock_lock_time`).
    pub lock_times: LockTimes,
    /// The queue/dequeue balance per glock.
    pub balance: stuck::NodeBalance,
    /// Every glock with an event, with its counts.
    pub counts: super::GlockMap<contended::EventCounts>,
    /// DLM requests, blocking ASTs, messages and clock markers.
    pub dlm: handoff::NodeDlm,
    last_ts: u64,
}

impl NodeTrace {
    fn new(node: &str) -> NodeTrace {
        NodeTrace {
            node: node.to_string(),
            ..NodeTrace::default()
        }
    }

    /// Feeds one event; returns false (and ignores it) when it is older than the last.
    fn add(&mut self, ts_ns: u64, pid: i64, e: &Ev) -> bool {
        if let Ev::Lost(n) = e {
            self.lost.add(*n);
            return true;
        }
        if !e.wanted() {
            return true;
        }
        if ts_ns < self.last_ts {
            return false;
        }
        self.last_ts = ts_ns;
        let e = match e {
            Ev::Gfs2(e) => e,
            Ev::Dlm(d) => {
                self.dlm.dlm(ts_ns, pid, d);
                return true;
            }
            Ev::Mark(m, clock) => {
                let clock = clock.as_ref().map(|(b, n)| &b[..usize::from(*n)]);
                self.dlm.mark(ts_ns, *m, clock);
                return true;
            }
            Ev::Lost(_) => return true,
        };
        self.dlm.gfs2(ts_ns, pid, e);
        let Some(glock) = e.glock() else {
            return true;
        };
        self.events += 1;
        self.hold_wait.add(ts_ns, pid, glock, e);
        self.demotes.add(ts_ns, glock, e);
        self.lock_times.add(e);
        self.balance.add(pid, glock, e);
        self.counts.entry(glock).or_default().add(e);
        true
    }

    fn finish(&mut self) {
        self.dlm.finish();
        self.lock_times.finish();
        self.hold_wait.finish();
    }
}

/// What reading traces yields besides their events: the bad lines, and the command of
/// each pid that queued a holder.
#[derive(Default)]
struct Aside {
    diag: Diagnostics,
    queuers: crate::owners::Queuers,
    /// The devices the gfs2 events kept name, in the order first seen.
    devices: Vec<Dev>,
}

impl Aside {
    /// Adds what a later read set aside.
    fn merge(&mut self, later: Aside) {
        self.diag.merge(&later.diag);
        self.queuers.merge(later.queuers);
        for d in later.devices {
            saw_device(&mut self.devices, d);
        }
    }
}

/// Notes device `d` among `devices` (a handful at most: one per filesystem).
#[inline]
fn saw_device(devices: &mut Vec<Dev>, d: Dev) {
    if devices.last() != Some(&d) && !devices.contains(&d) {
        devices.push(d);
    }
}

/// Calls `f` with every gfs2 and dlm event of the filesystem `fs` names and every clock
/// marker of `path` (time, pid, event), and sets aside bad lines (with their line) and the
/// command of each holder queued. Returns false when `f` does, and the lines read (the file
/// is read no further once `f` says stop). Where `fs` names no device, reading stops at the
/// gfs2 event of a second device: such a trace is refused ([`several_filesystems`]), so the
/// rest would be read for nothing.
fn decode(
    path: &std::path::Path,
    fs: FsIds,
    aside: &mut Aside,
    mut f: impl FnMut(u64, i64, &Ev) -> bool,
) -> io::Result<(bool, u64)> {
    let mut ok = true;
    let queuers = &mut aside.queuers;
    let devices = &mut aside.devices;
    let lines = traceparse::reader::for_each_decoded(path, &mut aside.diag, |d| {
        let (line, ev) = match d {
            _ if !fs.keeps(&d) => return ok,
            Decoded::Gfs2 {
                line, event, dev, ..
            } => {
                saw_device(devices, dev);
                if devices.len() > 1 {
                    return false;
                }
                if let Gfs2Event::GlockQueue { queue: true, .. } = event {
                    queuers.saw(line.pid, line.comm);
                }
                (line, Ev::Gfs2(event))
            }
            Decoded::Dlm { line, event } => (line, Ev::Dlm(event)),
            Decoded::Other(line)
                if line.event == b"tracing_mark_write" || line.event == b"print" =>
            {
                let Some((m, clock)) = Mark::parse(line.body) else {
                    return ok;
                };
                let clock = clock.filter(|c| c.len() <= 16).map(|c| {
                    let mut b = [0u8; 16];
                    b[..c.len()].copy_from_slice(c);
                    (b, c.len() as u8)
                });
                (line, Ev::Mark(m, clock))
            }
            Decoded::Lost { events, .. } => {
                ok = f(0, 0, &Ev::Lost(events));
                return ok;
            }
            _ => return ok,
        };
        ok = f(line.ts_ns, line.pid, &ev);
        ok
    })?;
    Ok((ok, lines))
}

/// Events decoded per batch handed from the decoding thread to the state machines.
const BATCH: usize = 4096;

/// [`decode`], on this thread, or `pipelined` on two: one reads and decodes `path`, this
/// one runs `f` on the events, a few batches behind (for a core that would otherwise be
/// idle: fewer nodes than cores).
fn each_event(
    path: &std::path::Path,
    fs: FsIds,
    aside: &mut Aside,
    pipelined: bool,
    mut f: impl FnMut(u64, i64, &Ev) -> bool,
) -> io::Result<(bool, u64)> {
    if !pipelined {
        return decode(path, fs, aside, f);
    }
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(u64, i64, Ev)>>(4);
    std::thread::scope(|s| {
        let decoder = s.spawn(move || {
            let mut a = Aside::default();
            let mut batch = Vec::with_capacity(BATCH);
            let r = decode(path, fs, &mut a, |ts, pid, e| {
                if !e.wanted() {
                    return true;
                }
                batch.push((ts, pid, *e));
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    // The consumer stopped: stop decoding.
                    return tx.send(full).is_ok();
                }
                true
            });
            if !batch.is_empty() {
                let _ = tx.send(batch);
            }
            r.map(|(_, n)| (a, n))
        });
        let mut ok = true;
        'batches: for b in &rx {
            for (ts, pid, e) in &b {
                if !f(*ts, *pid, e) {
                    ok = false;
                    break 'batches;
                }
            }
        }
        drop(rx);
        let (a, n) = decoder
            .join()
            .map_err(|_| io::Error::other("trace decoding thread panicked"))??;
        aside.merge(a);
        Ok((ok, n))
    })
}

/// Reads one node's traces, cut to the filesystem `fs` names, into its state.
fn read_node(
    node: &str,
    traces: &[PathBuf],
    fs: FsIds,
    pipelined: bool,
    progress: &AtomicU64,
) -> io::Result<(NodeTrace, Diagnostics)> {
    let mut t = NodeTrace::new(node);
    let mut aside = Aside::default();
    let mut in_order = true;
    for p in traces {
        let feed = |ts, pid, e: &Ev| {
            progress.fetch_add(1, Ordering::Relaxed);
            t.add(ts, pid, e)
        };
        let (ok, lines) = each_event(p, fs, &mut aside, pipelined, feed)?;
        t.lines += lines;
        several_filesystems(node, traces, &aside.devices)?;
        if !ok {
            in_order = false;
            break;
        }
    }
    if !in_order {
        // Again, from the start, into memory, sorted by time (stable: equal times keep
        // their order in the files).
        t = NodeTrace::new(node);
        t.sorted_in_memory = true;
        aside = Aside::default();
        let mut all: Vec<(u64, i64, Ev)> = Vec::new();
        for p in traces {
            let (_, lines) = decode(p, fs, &mut aside, |ts, pid, e| {
                if e.wanted() {
                    all.push((ts, pid, *e));
                }
                true
            })?;
            t.lines += lines;
            several_filesystems(node, traces, &aside.devices)?;
        }
        all.sort_by_key(|(ts, _, _)| *ts);
        for (ts, pid, e) in &all {
            t.add(*ts, *pid, e);
        }
    }
    t.balance.queuers = aside.queuers;
    t.finish();
    Ok((t, aside.diag))
}

/// An error where a node's traces, read for every filesystem because nothing says which
/// they are of, hold the gfs2 events of several devices: glock numbers repeat between
/// filesystems (each has its own root inode), so their glocks cannot be told apart. The
/// devices are the first two the traces name: [`decode`] reads no further.
fn several_filesystems(node: &str, traces: &[PathBuf], devices: &[Dev]) -> io::Result<()> {
    let [first, second, ..] = devices else {
        return Ok(());
    };
    let files: Vec<String> = traces.iter().map(|p| p.display().to_string()).collect();
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{node}: {} holds the gfs2 events of more than one GFS2 filesystem (devices \
             {first} and {second}, the first two it names), and nothing says which to read: glock \
             numbers repeat between filesystems, so their glocks would be counted as one. A \
             capture by glk capture --trace keeps the node's mount table, which names each \
             filesystem's device: analyze it with --fs",
            files.join(", "),
        ),
    ))
}

/// Called now and then with the events read so far per node, and once at the end (`true`).
pub type Progress<'a> = dyn Fn(&[(String, u64)], bool) + Sync + 'a;

/// Reads every node's traces, nodes on all cores at once. Nodes of the same name (loose
/// files) are one node. Where the node's captures are of one filesystem, its events of
/// other filesystems are left out ([`Captures::fs_ids_of`]).
pub fn read(
    caps: &Captures,
    progress: &Progress,
) -> io::Result<(Vec<NodeTrace>, Folded, Diagnostics)> {
    let mut by_name: Vec<(String, Vec<PathBuf>, FsIds)> = Vec::new();
    for n in &caps.nodes {
        match by_name.iter_mut().find(|(name, _, _)| *name == n.node) {
            Some((_, t, _)) => t.extend(n.traces.iter().cloned()),
            None => by_name.push((n.node.clone(), n.traces.clone(), caps.fs_ids_of(&n.node))),
        }
    }
    by_name.retain(|(_, t, _)| !t.is_empty());
    let counters: Vec<AtomicU64> = by_name.iter().map(|_| AtomicU64::new(0)).collect();
    let next = AtomicUsize::new(0);
    let folded = std::sync::Mutex::new(Folded::default());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(by_name.len().max(1));
    // Cores no node would use decode for the others.
    let pipelined = cores > by_name.len();
    let snapshot = || -> Vec<(String, u64)> {
        by_name
            .iter()
            .zip(&counters)
            .map(|((n, _, _), c)| (n.clone(), c.load(Ordering::Relaxed)))
            .collect()
    };
    let mut results: Vec<Option<io::Result<(NodeTrace, Diagnostics)>>> =
        by_name.iter().map(|_| None).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((name, traces, fs)) = by_name.get(i) else {
                            break;
                        };
                        let mut r = read_node(name, traces, *fs, pipelined, &counters[i]);
                        if let Ok((t, _)) = &mut r {
                            folded
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .absorb(t);
                        }
                        out.push((i, r));
                    }
                    out
                })
            })
            .collect();
        let mut shown = std::time::Instant::now();
        while workers.iter().any(|w| !w.is_finished()) {
            std::thread::sleep(std::time::Duration::from_millis(5));
            if shown.elapsed() >= std::time::Duration::from_millis(250) {
                progress(&snapshot(), false);
                shown = std::time::Instant::now();
            }
        }
        for w in workers {
            match w.join() {
                Ok(v) => {
                    for (i, r) in v {
                        results[i] = Some(r);
                    }
                }
                Err(_) => {
                    return;
                }
            }
        }
    });
    progress(&snapshot(), true);
    let mut nodes = Vec::new();
    let mut diag = Diagnostics::default();
    for r in results {
        let (t, d) = r.ok_or_else(|| io::Error::other("a trace reading thread failed"))??;
        diag.merge(&d);
        nodes.push(t);
    }
    nodes.sort_by(|a, b| a.node.cmp(&b.node));
    let folded = folded
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok((nodes, folded, diag))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace line of `gfs2_glock_queue` for glock 2/7 of device `dev` at `us` µs.
    fn queue(dev: &str, us: u64) -> String {
        format!(
            "          job.sh-276     [000] .....    {}.{:06}: gfs2_glock_queue: {dev} glock 2:7 queue PR\n",
            us / 1_000_000,
            us % 1_000_000
        )
    }

    /// Where nothing names the filesystem, reading stops at the second device's first
    /// event: the events before it are handed on, none after it, and the file (6 MB, six
    /// blocks) is read no further than the block it is in.
    #[test]
    fn a_second_device_stops_the_decoding() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace_pipe.txt");
        let mut text = String::new();
        for i in 0..3 {
            text += &queue("254,1", i);
        }
        text += &queue("254,2", 3);
        for i in 4..60_000 {
            text += &queue(if i % 2 == 0 { "254,1" } else { "254,2" }, i);
        }
        std::fs::write(&path, &text).unwrap();
        let mut aside = Aside::default();
        let mut events = 0;
        let (ok, lines) = decode(&path, FsIds::default(), &mut aside, |_, _, _| {
            events += 1;
            true
        })
        .unwrap();
        assert!(ok, "not a stop for order");
        assert_eq!(events, 3);
        assert!((4..20_000).contains(&lines), "{lines} lines read");
        let dev = |minor| Dev { major: 254, minor };
        assert_eq!(aside.devices, [dev(1), dev(2)]);
        // Refused, naming both devices: read in order, and out of time order from its
        // second line, when it is read again into memory and the second device is found
        // there.
        let refusal = |p: &std::path::Path| {
            let r = read_node(
                "n1",
                &[p.to_path_buf()],
                FsIds::default(),
                false,
                &AtomicU64::new(0),
            );
            r.err().unwrap().to_string()
        };
        let late = dir.path().join("late.txt");
        std::fs::write(&late, queue("254,1", 70_000) + &text).unwrap();
        for p in [&path, &late] {
            let err = refusal(p);
            assert!(
                err.contains("devices 254,1 and 254,2"),
                "{}: {err}",
                p.display()
            );
        }
        // One filesystem named: its events are read to the end.
        let one = FsIds {
            dev: Some((254, 1)),
            ls_id: None,
        };
        let mut aside = Aside::default();
        let mut events = 0;
        decode(&path, one, &mut aside, |_, _, _| {
            events += 1;
            true
        })
        .unwrap();
        assert_eq!(events, 3 + 29_998);
    }
}
