//! DLM round-trip distributions from `gfs2_glock_lock_time` events: per glock and per
//! glock type, an HDR histogram of `tdiff`, split blocking / non-blocking, so slow round
//! trips show as percentiles rather than the kernel's smoothed means.
//!
//! Which kind a reply was: the kernel updates either the non-blocking pair (`srtt`) or the
//! blocking pair (`srttb`) with each sample, depending on GLF_BLOCKING. So an event is
//! classified by which pair changed since the glock's previous event. When that cannot
//! tell (a glock's first event, or neither/both changed), the `b` (GLF_BLOCKING) flag of
//! the glock's next `gfs2_glock_state_change` decides, since finish_xmote runs right after
//! the reply with the same bit. Unlock replies (`status -65538`) are non-blocking
//! (gdlm_put_lock clears the bit). What stays undecided counts only in `all`.

use std::collections::{BTreeMap, HashMap};

use glockparse::{GlockId, GlockType};
use hdrhistogram::Histogram;
use tracepipe::{Gfs2Event, LockTime};

/// `-DLM_EUNLOCK`: the reply to an unlock.
const DLM_EUNLOCK: i64 = -65538;
/// Largest tdiff recorded exactly (one hour); longer ones are recorded as this.
const MAX_NS: u64 = 3_600_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Blocking,
    NonBlocking,
}

/// Percentiles of one histogram, ns.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Distribution {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid bounds")
}

/// All, blocking and non-blocking histograms of one glock or type.
#[derive(Debug, Clone)]
pub struct Hists {
    pub all: Histogram<u64>,
    pub blocking: Histogram<u64>,
    pub nonblocking: Histogram<u64>,
}

impl Default for Hists {
    fn default() -> Self {
        Hists {
            all: new_hist(),
            blocking: new_hist(),
            nonblocking: new_hist(),
        }
    }
}

impl Hists {
    fn record(&mut self, ns: u64, class: Option<Class>) {
        let v = ns.clamp(1, MAX_NS);
        self.all.saturating_record(v);
        match class {
            Some(Class::Blocking) => self.blocking.saturating_record(v),
            Some(Class::NonBlocking) => self.nonblocking.saturating_record(v),
            None => {}
        }
    }
}

/// Summarises a histogram.
pub fn distribution(h: &Histogram<u64>) -> Distribution {
    if h.is_empty() {
        return Distribution::default();
    }
    Distribution {
        count: h.len(),
        p50_ns: h.value_at_quantile(0.5),
        p90_ns: h.value_at_quantile(0.9),
        p99_ns: h.value_at_quantile(0.99),
        max_ns: h.max(),
        mean_ns: h.mean(),
    }
}

/// Collects lock-time distributions from a stream of decoded gfs2 events.
#[derive(Default)]
pub struct LockTimes {
    pub per_glock: HashMap<GlockId, Hists>,
    pub per_type: BTreeMap<GlockType, Hists>,
    prev: HashMap<GlockId, LockTime>,
    /// Samples waiting for the glock's next state change to be classified.
    pending: HashMap<GlockId, Vec<u64>>,
    /// Events with a negative tdiff (a wall-clock step), not recorded.
    pub negative: u64,
    /// Events classified by which stats pair changed / by the next state change's flags /
    /// not at all.
    pub by_stats: u64,
    pub by_flags: u64,
    pub unclassified: u64,
}

/// Which stats pair a sample updated, if the previous event tells.
pub fn class_by_stats(prev: &LockTime, now: &LockTime) -> Option<Class> {
    let nb = (prev.srtt, prev.srttvar) != (now.srtt, now.srttvar);
    let b = (prev.srttb, prev.srttvarb) != (now.srttb, now.srttvarb);
    match (nb, b) {
        (true, false) => Some(Class::NonBlocking),
        (false, true) => Some(Class::Blocking),
        _ => None,
    }
}

impl LockTimes {
    fn record(&mut self, g: GlockId, ns: u64, class: Option<Class>) {
        self.per_glock.entry(g).or_default().record(ns, class);
        self.per_type
            .entry(g.glock_type())
            .or_default()
            .record(ns, class);
    }

    /// Feeds one event (others than lock_time and state_change are ignored).
    pub fn add(&mut self, ev: &Gfs2Event) {
        match ev {
            Gfs2Event::GlockLockTime(lt) => {
                if lt.tdiff < 0 {
                    self.negative += 1;
                    return;
                }
                let ns = lt.tdiff as u64;
                let class = if lt.status == DLM_EUNLOCK {
                    Some(Class::NonBlocking)
                } else {
                    self.prev.get(&lt.glock).and_then(|p| class_by_stats(p, lt))
                };
                self.prev.insert(lt.glock, *lt);
                match class {
                    Some(c) => {
                        self.by_stats += 1;
                        self.record(lt.glock, ns, Some(c));
                    }
                    None => self.pending.entry(lt.glock).or_default().push(ns),
                }
            }
            Gfs2Event::GlockStateChange { glock, flags, .. } => {
                if let Some(samples) = self.pending.remove(glock) {
                    let class = if flags.letters.contains('b') {
                        Class::Blocking
                    } else {
                        Class::NonBlocking
                    };
                    for ns in samples {
                        self.by_flags += 1;
                        self.record(*glock, ns, Some(class));
                    }
                }
            }
            _ => {}
        }
    }

    /// Records the samples no state change came for (in `all` only).
    pub fn finish(&mut self) {
        let pending: Vec<(GlockId, Vec<u64>)> = self.pending.drain().collect();
        for (g, samples) in pending {
            for ns in samples {
                self.unclassified += 1;
                self.record(g, ns, None);
            }
        }
    }

    /// Glocks by p99 of all their samples, slowest first (ties by id).
    pub fn slowest(&self, n: usize) -> Vec<(GlockId, &Hists)> {
        let mut v: Vec<(GlockId, &Hists)> = self.per_glock.iter().map(|(g, h)| (*g, h)).collect();
        v.sort_by(|a, b| {
            b.1.all
                .value_at_quantile(0.99)
                .cmp(&a.1.all.value_at_quantile(0.99))
                .then(a.0.cmp(&b.0))
        });
        v.truncate(n);
        v
    }
}
