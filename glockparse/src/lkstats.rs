//! The eight DLM statistics GFS2 keeps per glock and per glock type (`struct gfs2_lkstats`
//! in fs/gfs2/incore.h): what a glstats line prints, what an sbstats column sums, and what a
//! `gfs2_glock_lock_time` event carries after each update. One model for all three.

/// The eight statistics, in the kernel's order. Times are integer nanoseconds; the "var"
/// fields are smoothed mean absolute deviations (Jacobson/Karels), not variances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub struct LkStats {
    /// Smoothed round trip of non-blocking DLM requests, ns.
    #[serde(rename = "srtt_ns")]
    pub srtt: i64,
    /// Its smoothed mean deviation, ns.
    #[serde(rename = "srttvar_ns")]
    pub srttvar: i64,
    /// Smoothed round trip of blocking DLM requests (that had to wait for other nodes), ns.
    #[serde(rename = "srttb_ns")]
    pub srttb: i64,
    /// Its smoothed mean deviation, ns.
    #[serde(rename = "srttvarb_ns")]
    pub srttvarb: i64,
    /// Smoothed time between DLM requests, ns.
    #[serde(rename = "sirt_ns")]
    pub sirt: i64,
    /// Its smoothed mean deviation, ns.
    #[serde(rename = "sirtvar_ns")]
    pub sirtvar: i64,
    /// DLM requests issued.
    pub dcount: i64,
    /// Holders queued.
    pub qcount: i64,
}

impl LkStats {
    /// The statistics' names as glk's frames and JSON give them (its serialisation), in the
    /// kernel's order.
    pub const NAMES: [&'static str; 8] = [
        "srtt_ns",
        "srttvar_ns",
        "srttb_ns",
        "srttvarb_ns",
        "sirt_ns",
        "sirtvar_ns",
        "dcount",
        "qcount",
    ];

    /// The values, in the order of [`LkStats::NAMES`].
    pub fn values(&self) -> [i64; 8] {
        [
            self.srtt,
            self.srttvar,
            self.srttb,
            self.srttvarb,
            self.sirt,
            self.sirtvar,
            self.dcount,
            self.qcount,
        ]
    }
}
