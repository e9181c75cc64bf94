//! `glk top --cluster`: each refresh, every node's agent sends its glocks and the files
//! beside them; they are written as a capture of one snapshot per node
//! (`FS/NODE/glocks.0`, ...) into a private directory and read by the same [`Reader`]
//! that reads several nodes' files, so that a waiter on one node is shown with the DLM
//! locks that block it on the master and the holder on the node that holds it.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use analysis::refresh::rank::Selection;
use analysis::refresh::waits::{WaitAge, WaiterKey};
use analysis::refresh::{Input, Reader, Snapshot};

use super::{Feed, TopArgs};
use crate::cluster::{self, Fleet};

/// Every node's files, refreshed through their agents.
pub struct ClusterFeed {
    fleet: Fleet,
    dir: tempfile::TempDir,
    reader: Option<(Vec<Input>, Reader)>,
    wait: Duration,
}

impl ClusterFeed {
    /// Starts every node's agent (waiting for each to connect at most the connect
    /// timeout plus the node timeout).
    pub fn start(args: &TopArgs) -> io::Result<ClusterFeed> {
        let c = &args.cluster;
        let nodes = c.members()?;
        let remote = c.remote()?;
        let dir = cluster::scratch_dir("glk-top-")?;
        let fs = args.filesystem.fs.clone();
        let fleet = Fleet::start(
            remote,
            nodes,
            move |n| {
                let mut a = vec!["snapshot".to_string(), "--now".to_string()];
                a.extend(cluster::place_args(n, fs.as_deref(), None));
                a
            },
            Instant::now() + c.deadline(),
        );
        Ok(ClusterFeed {
            fleet,
            dir,
            reader: None,
            wait: Duration::from_secs_f64(c.node_timeout),
        })
    }

    /// Every node's files of this refresh, written below the private directory as they
    /// come (those of the last refresh removed first, so that a node that does not answer
    /// is not read as it was): the glocks inputs, the nodes that did not answer, and what
    /// the nodes' agents reported (`NODE: what`).
    fn gather(&mut self) -> io::Result<(Vec<Input>, cluster::Missing, Vec<String>)> {
        let dir = self.dir.path();
        for s in &self.fleet.slots {
            remove_node(dir, &s.node.dir())?;
        }
        let results = self.fleet.snapshots(dir, Instant::now() + self.wait);
        let mut missing = Vec::new();
        let mut problems = Vec::new();
        for (s, got) in self.fleet.slots.iter().zip(results) {
            match got {
                Ok(got) => problems.extend(got.problems.iter().map(|p| format!("{}: {p}", s.node))),
                Err(why) => missing.push((s.node.name.clone(), why)),
            }
        }
        Ok((glocks_files(dir)?, missing, problems))
    }
}

impl Feed for ClusterFeed {
    fn take(
        &mut self,
        sel: &Selection,
        track: bool,
    ) -> io::Result<(Snapshot, HashMap<WaiterKey, WaitAge>)> {
        let start = Instant::now();
        let (inputs, missing, problems) = self.gather()?;
        if inputs.is_empty() {
            let why: Vec<String> = missing.iter().map(|(n, w)| format!("{n}: {w}")).collect();
            return Err(io::Error::other(format!(
                "no node answered ({})",
                why.join("; ")
            )));
        }
        // A node that comes or goes changes the inputs: the reader starts again (its
        // waiters' ages start again too).
        if self.reader.as_ref().is_none_or(|(i, _)| *i != inputs) {
            self.reader = Some((inputs.clone(), Reader::new(inputs)));
        }
        let (_, reader) = self.reader.as_mut().expect("just set");
        let (mut snap, ages) = reader.take(sel, track)?;
        snap.read_time = start.elapsed();
        snap.missing = missing;
        // What a node's agent reported, with the problems of reading its files here.
        snap.reported = problems;
        // The private directory is gone after this refresh: the views name `FS/NODE/glocks.0`.
        for i in &mut snap.inputs {
            if let Ok(rel) = i.path.strip_prefix(self.dir.path()) {
                i.path = rel.to_path_buf();
            }
        }
        Ok((snap, ages))
    }
}

/// Removes `NODE`'s directory under every filesystem's directory of `dir`.
fn remove_node(dir: &Path, node: &str) -> io::Result<()> {
    for fs in std::fs::read_dir(dir)?.flatten() {
        let d = fs.path().join(node);
        if d.is_dir() {
            std::fs::remove_dir_all(&d)?;
        }
    }
    Ok(())
}

/// Every `FS/NODE/glocks.0` below `dir`, sorted.
fn glocks_files(dir: &Path) -> io::Result<Vec<Input>> {
    let mut out: Vec<PathBuf> = Vec::new();
    for fs in std::fs::read_dir(dir)?.flatten() {
        let Ok(nodes) = std::fs::read_dir(fs.path()) else {
            continue;
        };
        for n in nodes.flatten() {
            let g = n.path().join("glocks.0");
            if g.is_file() {
                out.push(g);
            }
        }
    }
    out.sort();
    // Copies, not debugfs: read again at every refresh all the same, but no process named
    // in them is looked up on this machine (a pid of another node is not one of ours).
    Ok(out
        .into_iter()
        .map(|path| Input { path, live: false })
        .collect())
}
