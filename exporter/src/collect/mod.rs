//! The collectors: each reads one kind of source at every collection and gives metric
//! families, the node-local findings it judges (by `glk doctor`'s rules) and how many input
//! lines it could not read. The [`crate::hub`] runs each on its own thread under a
//! deadline.

pub mod glocks;
pub mod quorum;
pub mod sbstats;
pub mod sysfs;
pub mod trace;

use std::io;
use std::path::PathBuf;

use analysis::findings::{FindingCode, Thresholds};

use crate::exposition::Family;

/// Where the sources are and the thresholds of the findings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The debugfs root (`/sys/kernel/debug`).
    pub debugfs: PathBuf,
    /// The sysfs root (`/sys`).
    pub sysfs: PathBuf,
    /// Seconds of waiting that make a waiter stuck (`--stuck-after`,
    /// [`analysis::stuck::is_stuck`]).
    pub stuck_after: f64,
    /// The other findings' thresholds.
    pub thresholds: Thresholds,
    /// Waiting glocks judged per filesystem at most (the longest waits first): bounds the
    /// memory a pathological glocks file can take.
    pub judged_per_fs: usize,
}

/// What one collection of one collector gave.
#[derive(Debug, Default)]
pub struct Collected {
    /// Its metric families.
    pub families: Vec<Family>,
    /// The findings it made, by code (each code it judges is reported, 0 when none).
    pub findings: Vec<(FindingCode, u64)>,
    /// Input lines it could not read.
    pub malformed: u64,
}

/// A source read at every collection.
pub trait Collector: Send {
    /// Its name (the `collector` label).
    fn name(&self) -> &'static str;

    /// Reads the source once. An error makes this collection of it a failure (its
    /// families and findings are then left out of the scrape, never reported as zero).
    fn collect(&mut self) -> io::Result<Collected>;
}

/// Every collector, for `cfg`; the quorum collector only where `corosync-quorumtool` is
/// installed.
pub fn all(cfg: &Config) -> Vec<Box<dyn Collector>> {
    let mut v: Vec<Box<dyn Collector>> = vec![
        Box::new(glocks::Glocks::new(cfg.clone())),
        Box::new(sbstats::Sbstats::new(cfg.clone())),
        Box::new(sysfs::Sysfs::new(cfg.clone())),
    ];
    if let Some(q) = quorum::Quorum::find() {
        v.push(Box::new(q));
    }
    v
}
