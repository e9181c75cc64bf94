//! `sbstats` (lkstats) of every filesystem: the DLM request and holder-queue counters per
//! glock type summed over CPUs, and the smoothed round-trip and inter-request times
//! combined across CPUs weighted by each CPU's requests ([`gfs2stats::sbstats`]), not summed.
//!
//! These are the per-type figures: `glstats` holds them per glock, but a glock's counts
//! leave with the glock, so sums over glstats go down and cannot be counters.

use std::io;

use gfs2stats::sbstats;

use super::{Collected, Collector, Config};
use crate::metrics;

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
        let mut requests = metrics::DLM_REQUESTS.family();
        let mut queued = metrics::GLOCK_HOLDERS_QUEUED.family();
        let mut rtt = metrics::DLM_RTT_SECONDS.family();
        let mut rttvar = metrics::DLM_RTT_DEVIATION_SECONDS.family();
        let mut irt = metrics::DLM_INTERREQUEST_SECONDS.family();
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
