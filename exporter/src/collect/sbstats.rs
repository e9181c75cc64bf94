//! `sbstats` (lkstats) of every filesystem: the DLM request and holder-queue counters per
//! glock type summed over CPUs, and the smoothed round-trip and inter-request times
//! combined across CPUs weighted by each CPU's requests ([`gfs2stats::sbstats`]), not summed.
//!
//! These are the per-type figures: `glstats` holds them per glock, but a glock's counts
//! leave with the glock, so sums over glstats go down and cannot be counters.

use std::io;

use gfs2stats::sbstats;

use super::{Collected, Collector, Config};
use crate::exposition::{Family, Kind};

/// The `sbstats` collector.
pub struct Sbstats {
    cfg: Config,
}

impl Sbstats {
    /// A collector reading the filesystems under `cfg.debugfs`.
    pub fn new(cfg: Config) -> Sbstats {
        Sbstats { cfg }
    }
}

impl Collector for Sbstats {
    fn name(&self) -> &'static str {
        "sbstats"
    }

    fn collect(&mut self) -> io::Result<Collected> {
        let mut requests = Family::new(
            "gfs2_dlm_requests",
            Kind::Counter,
            "DLM lock requests made for glocks of this type (sbstats dcnt, summed over CPUs).",
        );
        let mut queued = Family::new(
            "gfs2_glock_holders_queued",
            Kind::Counter,
            "Glock holders queued for glocks of this type (sbstats qcnt, summed over CPUs).",
        );
        let mut rtt = Family::new(
            "gfs2_dlm_rtt_seconds",
            Kind::Gauge,
            "Smoothed DLM round-trip time of this type's requests (sbstats srtt, or srttb for blocking ones), averaged over CPUs weighted by their requests.",
        );
        let mut rttvar = Family::new(
            "gfs2_dlm_rtt_deviation_seconds",
            Kind::Gauge,
            "Smoothed mean deviation of the DLM round-trip time (sbstats srttvar, srttvarb), weighted over CPUs like gfs2_dlm_rtt_seconds.",
        );
        let mut irt = Family::new(
            "gfs2_dlm_interrequest_seconds",
            Kind::Gauge,
            "Smoothed time between DLM requests for glocks of this type (sbstats sirt), weighted over CPUs.",
        );
        let mut c = Collected::default();
        for fs in bundle::live::mounted(&self.cfg.debugfs)? {
            let path = fs.dir.join("sbstats");
            let (stats, diag) = match sbstats::read_path(&path) {
                Ok(r) => r,
                // Unmounted since it was listed.
                Err(_) if !fs.dir.exists() => continue,
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            };
            c.malformed += diag.errors;
            for (t, s) in &stats.types {
                let m = s.combined();
                let ty = t.name();
                let l = [("fs", fs.table.as_str()), ("type", &*ty)];
                requests.add(&l, m.dlm.max(0) as f64);
                queued.add(&l, m.queue.max(0) as f64);
                for (blocking, v, var) in
                    [("false", m.srtt, m.srttvar), ("true", m.srttb, m.srttvarb)]
                {
                    let l = [l[0], l[1], ("blocking", blocking)];
                    rtt.add(&l, v / 1e9);
                    rttvar.add(&l, var / 1e9);
                }
                irt.add(&l, m.sirt / 1e9);
            }
        }
        c.families = vec![requests, queued, rtt, rttvar, irt];
        Ok(c)
    }
}
