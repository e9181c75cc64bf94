//! Slow DLM round trips: `tdiff` distributions per glock and per type from
//! `gfs2_glock_lock_time` (each node's events classified blocking / non-blocking by
//! gfs2stats' rules, then merged across nodes), outliers against their type's median, and
//! the glstats view of the same glocks.

use std::collections::{BTreeMap, HashMap};

use gfs2stats::lock_time::{distribution, Hists, LockTimes};
use glockparse::{GlockId, GlockType};
use serde::Serialize;

/// A glock is an outlier when its p99 round trip is this many times its type's median.
pub const OUTLIER_FACTOR: u64 = 10;

/// One glock's DLM round trips (`gfs2_glock_lock_time` tdiff) across nodes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SlowGlock {
    /// The glock.
    pub glock: String,
    /// Its type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// Round trips.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Round trips of blocking requests (that waited for other nodes).
    pub blocking_count: u64,
    /// Their 99th percentile, ns.
    pub blocking_p99_ns: u64,
    /// Round trips of non-blocking requests.
    pub nonblocking_count: u64,
    /// Their 99th percentile, ns.
    pub nonblocking_p99_ns: u64,
    /// The type's median over all its glocks.
    pub type_p50_ns: u64,
    /// p99 at least OUTLIER_FACTOR times the type's median.
    pub outlier: bool,
    /// From the last glstats snapshot (largest over nodes), when captured.
    pub glstats_srttb_ns: Option<i64>,
    /// DLM requests issued, from the same glstats line.
    pub glstats_dcount: Option<i64>,
}

/// The DLM round trips of one glock type.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SlowType {
    /// The type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// Round trips.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Round trips of blocking requests.
    pub blocking_count: u64,
    /// Their median, ns.
    pub blocking_p50_ns: u64,
    /// Round trips of non-blocking requests.
    pub nonblocking_count: u64,
    /// Their median, ns.
    pub nonblocking_p50_ns: u64,
}

/// Lock-time distributions from the classified samples of every node (folded into one
/// [`LockTimes`]); `glstats` maps a glock to its (srttb, dcount) of the last snapshot.
pub fn analyze(
    lt: &LockTimes,
    glstats: &HashMap<String, (i64, i64)>,
) -> (Vec<SlowGlock>, Vec<SlowType>) {
    let glocks: BTreeMap<&GlockId, &Hists> = lt.per_glock.iter().collect();
    let types = &lt.per_type;
    let type_p50: HashMap<GlockType, u64> = types
        .iter()
        .map(|(t, h)| (*t, distribution(&h.all).p50_ns))
        .collect();
    let mut out: Vec<SlowGlock> = glocks
        .iter()
        .map(|(g, h)| {
            let a = distribution(&h.all);
            let b = distribution(&h.blocking);
            let nb = distribution(&h.nonblocking);
            let tp = type_p50.get(&g.glock_type()).copied().unwrap_or(0);
            let gs = glstats.get(&g.to_string());
            SlowGlock {
                glock: g.to_string(),
                gltype: g.glock_type().name().into_owned(),
                count: a.count,
                p50_ns: a.p50_ns,
                p90_ns: a.p90_ns,
                p99_ns: a.p99_ns,
                max_ns: a.max_ns,
                blocking_count: b.count,
                blocking_p99_ns: b.p99_ns,
                nonblocking_count: nb.count,
                nonblocking_p99_ns: nb.p99_ns,
                type_p50_ns: tp,
                outlier: tp > 0 && a.p99_ns >= tp.saturating_mul(OUTLIER_FACTOR),
                glstats_srttb_ns: gs.map(|x| x.0),
                glstats_dcount: gs.map(|x| x.1),
            }
        })
        .collect();
    out.sort_by(|a, b| b.p99_ns.cmp(&a.p99_ns).then(a.glock.cmp(&b.glock)));
    let types = types
        .iter()
        .map(|(t, h)| {
            let (a, b, nb) = (
                distribution(&h.all),
                distribution(&h.blocking),
                distribution(&h.nonblocking),
            );
            SlowType {
                gltype: t.name().into_owned(),
                count: a.count,
                p50_ns: a.p50_ns,
                p99_ns: a.p99_ns,
                max_ns: a.max_ns,
                blocking_count: b.count,
                blocking_p50_ns: b.p50_ns,
                nonblocking_count: nb.count,
                nonblocking_p50_ns: nb.p50_ns,
            }
        })
        .collect();
    (out, types)
}
