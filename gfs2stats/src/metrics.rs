//! Metrics derived from one glock's glstats values, and rates between two snapshots.
//! Each formula is documented in the README ("glk stats").

use std::cmp::Reverse;
use std::collections::HashMap;

use glockparse::GlockId;

use crate::glstats::GlStat;

/// Derived per-glock metrics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Derived {
    /// The glock has made DLM requests of its own (`dcnt > 0`). A glock's rtt/irt start
    /// as a copy of its CPU's per-type values, so without requests they are not its own.
    pub own_samples: bool,
    /// DLM requests per second for this glock: `1e9 / sirt`.
    pub request_rate: Option<f64>,
    /// DLM requests per holder queued, `dcount / qcount`. The kernel counts every
    /// `gdlm_lock()` and `gdlm_put_lock()`, demotes and unlocks included, so it passes 1
    /// where other nodes' requests make the glock go more often than its holders ask.
    pub dlm_share: Option<f64>,
    /// How busy this glock keeps the DLM: the share of time a request is outstanding,
    /// `rtt / (rtt + sirt)`, with rtt the blocking round trip when there is one
    /// (`srttb > 0`), else the non-blocking one (the kernel docs' time share).
    pub dlm_busy: Option<f64>,
}

/// The metrics of one glock's values.
pub fn derive(s: &GlStat) -> Derived {
    let rtt = if s.stats.srttb > 0 {
        s.stats.srttb
    } else {
        s.stats.srtt
    };
    Derived {
        own_samples: s.stats.dcount > 0,
        request_rate: (s.stats.sirt > 0).then(|| 1e9 / s.stats.sirt as f64),
        dlm_share: (s.stats.qcount > 0)
            .then(|| s.stats.dcount.max(0) as f64 / s.stats.qcount as f64),
        // With one request there is no interval yet (sirt 0, no request rate): busy is
        // undefined then, not 100%.
        dlm_busy: (rtt > 0 && s.stats.sirt > 0)
            .then(|| rtt as f64 / (rtt as f64 + s.stats.sirt as f64)),
    }
}

/// Counter increase of one glock between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delta {
    /// The glock.
    pub glock: GlockId,
    /// DLM requests issued between the snapshots.
    pub dcount: i64,
    /// Holders queued between the snapshots.
    pub qcount: i64,
    /// `dcount` per second.
    pub dcount_per_s: f64,
    /// `qcount` per second.
    pub qcount_per_s: f64,
    /// Not in the old snapshot, or its counters went down (freed and created again):
    /// the new counters are the increase.
    pub new: bool,
}

/// How much one glock's counters grew between two glstats reads: the one glstats delta
/// that `glk stats` and `glk top` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Increase {
    /// DLM requests issued in between.
    pub dcount: i64,
    /// Holders queued in between.
    pub qcount: i64,
    /// The glock was not in the old read, or its counters went down (freed and created
    /// again): the new counters are the increase.
    pub new: bool,
}

impl Increase {
    /// The increase from `old` (the glock's line in the earlier read, if any) to `new`.
    /// Saturating: the counters come from files and may hold any value.
    pub fn between(old: Option<&GlStat>, new: &GlStat) -> Increase {
        let n = &new.stats;
        match old.map(|o| &o.stats) {
            Some(o) if n.dcount >= o.dcount && n.qcount >= o.qcount => Increase {
                dcount: n.dcount.saturating_sub(o.dcount),
                qcount: n.qcount.saturating_sub(o.qcount),
                new: false,
            },
            _ => Increase::fresh(new),
        }
    }

    /// The increase of a glock seen for the first time: all its counts.
    fn fresh(new: &GlStat) -> Increase {
        Increase {
            dcount: new.stats.dcount,
            qcount: new.stats.qcount,
            new: true,
        }
    }
}

/// Increases from `old` to `new` over `seconds`, largest DLM increase first. Glocks that
/// disappeared are left out.
pub fn deltas(old: &[GlStat], new: &[GlStat], seconds: f64) -> Vec<Delta> {
    let before: HashMap<GlockId, &GlStat> = old.iter().map(|s| (s.glock, s)).collect();
    let secs = if seconds > 0.0 { seconds } else { f64::NAN };
    let mut out: Vec<Delta> = new
        .iter()
        .map(|n| {
            let Increase {
                dcount: dd,
                qcount: dq,
                new: fresh,
            } = Increase::between(before.get(&n.glock).copied(), n);
            Delta {
                glock: n.glock,
                dcount: dd,
                qcount: dq,
                dcount_per_s: dd as f64 / secs,
                qcount_per_s: dq as f64 / secs,
                new: fresh,
            }
        })
        .collect();
    out.sort_by_key(|d| (Reverse(d.dcount), Reverse(d.qcount), d.glock));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(n: u64, dcount: i64, qcount: i64) -> GlStat {
        GlStat {
            glock: GlockId::new(2, n),
            stats: glockparse::LkStats {
                dcount,
                qcount,
                srttb: 3_000_000,
                sirt: 9_000_000,
                ..Default::default()
            },
        }
    }

    #[test]
    fn formulas() {
        let d = derive(&st(1, 4, 8));
        assert_eq!(d.dlm_share, Some(0.5));
        assert_eq!(d.dlm_busy, Some(0.25));
        assert!((d.request_rate.unwrap() - 1e9 / 9e6).abs() < 1e-9);
        assert!(d.own_samples);
        let z = derive(&GlStat::default());
        assert_eq!(
            (z.request_rate, z.dlm_share, z.dlm_busy, z.own_samples),
            (None, None, None, false)
        );
        // One DLM request: a round trip but no interval yet, so no rate and no busy share.
        let one = derive(&GlStat {
            stats: glockparse::LkStats {
                srtt: 500_000,
                dcount: 1,
                qcount: 1,
                ..Default::default()
            },
            ..GlStat::default()
        });
        assert_eq!((one.request_rate, one.dlm_busy), (None, None));
    }

    #[test]
    fn deltas_of_extreme_counters_do_not_overflow() {
        let mut old = st(1, 0, 0);
        old.stats.dcount = i64::MIN;
        old.stats.qcount = -5;
        let mut new = st(1, 0, 0);
        new.stats.dcount = i64::MAX;
        new.stats.qcount = i64::MAX;
        let d = deltas(&[old], &[new], 1.0);
        assert_eq!((d[0].dcount, d[0].qcount), (i64::MAX, i64::MAX));
    }

    #[test]
    fn deltas_handle_new_and_recreated_glocks() {
        let old = [st(1, 10, 20), st(2, 5, 5), st(3, 1, 1)];
        let new = [st(1, 30, 50), st(2, 2, 3), st(4, 7, 7)];
        let d = deltas(&old, &new, 10.0);
        let by = |n| d.iter().find(|x| x.glock.number == n).unwrap();
        assert_eq!((by(1).dcount, by(1).qcount, by(1).new), (20, 30, false));
        assert_eq!(by(1).dcount_per_s, 2.0);
        assert_eq!((by(2).dcount, by(2).new), (2, true));
        assert_eq!((by(4).dcount, by(4).new), (7, true));
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].glock.number, 1);
    }
}
