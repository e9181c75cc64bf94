//! Every metric family the exporter serves, defined once: its name, its type and its help.
//! The collectors make their families from these ([`Metric::family`]); [`all`] lists them
//! for the tests that hold the dashboard, the alert rules and the README to what is served.

use crate::exposition::{Family, Kind};

/// A metric family's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The name (a counter's without `_total`).
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// One line of help.
    pub help: &'static str,
}

impl Metric {
    const fn gauge(name: &'static str, help: &'static str) -> Metric {
        Metric {
            name,
            kind: Kind::Gauge,
            help,
        }
    }

    const fn counter(name: &'static str, help: &'static str) -> Metric {
        Metric {
            name,
            kind: Kind::Counter,
            help,
        }
    }

    const fn histogram(name: &'static str, help: &'static str) -> Metric {
        Metric {
            name,
            kind: Kind::Histogram,
            help,
        }
    }

    /// A family of this metric with no samples yet.
    pub fn family(&self) -> Family {
        Family::new(self.name, self.kind, self.help)
    }
}

// The glocks collector: debugfs `glocks` and the DLM lock dump.
pub(crate) const GLOCKS: Metric = Metric::gauge(
    "gfs2_glocks",
    "Glocks cached on this node, by type and state (UN, SH, DF, EX).",
);
pub(crate) const GLOCK_HOLDERS: Metric = Metric::gauge(
    "gfs2_glock_holders",
    "Granted glock holders, by glock type.",
);
pub(crate) const GLOCK_WAITERS: Metric = Metric::gauge(
    "gfs2_glock_waiters",
    "Glock holders waiting for a grant, by glock type.",
);
pub(crate) const GLOCKS_WAITED_ON: Metric = Metric::gauge(
    "gfs2_glocks_waited_on",
    "Glocks with at least one waiting holder, by type.",
);
pub(crate) const GLOCKS_DEMOTE_PENDING: Metric = Metric::gauge(
    "gfs2_glocks_demote_pending",
    "Glocks with a demote requested or in progress, by type.",
);
pub(crate) const GLOCK_OLDEST_WAIT_SECONDS: Metric = Metric::gauge(
    "gfs2_glock_oldest_wait_seconds",
    "The longest wait for a glock: its DLM request's queue age from the DLM lock dump where it waits in the DLM, else how long the exporter has seen it waiting (a lower bound).",
);
pub(crate) const GLOCK_STUCK_WAITERS: Metric = Metric::gauge(
    "gfs2_glock_stuck_waiters",
    "Waiting holders of glocks waited on for at least the stuck threshold (--stuck-after), by glk doctor's rule.",
);
pub(crate) const DLM_LOCKS: Metric = Metric::gauge(
    "dlm_locks",
    "DLM locks of glocks in this node's lock dump, by lockspace, queue (granted, converting, waiting) and whether this node masters the resource.",
);
pub(crate) const DLM_LOCK_OLDEST_WAIT_SECONDS: Metric = Metric::gauge(
    "dlm_lock_oldest_wait_seconds",
    "The longest time a lock of the lockspace has waited in a DLM queue (converting or waiting), from this node's lock dump.",
);

// The sbstats collector: per-type DLM statistics summed or weighted over CPUs.
pub(crate) const DLM_REQUESTS: Metric = Metric::counter(
    "gfs2_dlm_requests",
    "DLM lock requests made for glocks of this type (sbstats dcnt, summed over CPUs).",
);
pub(crate) const GLOCK_HOLDERS_QUEUED: Metric = Metric::counter(
    "gfs2_glock_holders_queued",
    "Glock holders queued for glocks of this type (sbstats qcnt, summed over CPUs).",
);
pub(crate) const DLM_RTT_SECONDS: Metric = Metric::gauge(
    "gfs2_dlm_rtt_seconds",
    "Smoothed DLM round-trip time of this type's requests (sbstats srtt, or srttb for blocking ones), averaged over CPUs weighted by their requests.",
);
pub(crate) const DLM_RTT_DEVIATION_SECONDS: Metric = Metric::gauge(
    "gfs2_dlm_rtt_deviation_seconds",
    "Smoothed mean deviation of the DLM round-trip time (sbstats srttvar, srttvarb), weighted over CPUs like gfs2_dlm_rtt_seconds.",
);
pub(crate) const DLM_INTERREQUEST_SECONDS: Metric = Metric::gauge(
    "gfs2_dlm_interrequest_seconds",
    "Smoothed time between DLM requests for glocks of this type (sbstats sirt), weighted over CPUs.",
);

// The sysfs collector: the filesystems' state.
pub(crate) const FILESYSTEM_WITHDRAWN: Metric = Metric::gauge(
    "gfs2_filesystem_withdrawn",
    "1 when the filesystem has withdrawn on this node (sysfs withdraw): it no longer uses the shared storage.",
);
pub(crate) const FILESYSTEM_FROZEN: Metric = Metric::gauge(
    "gfs2_filesystem_frozen",
    "1 when the filesystem is frozen (sysfs frozen).",
);
pub(crate) const FILESYSTEM_LOCKING_BLOCKED: Metric = Metric::gauge(
    "gfs2_filesystem_locking_blocked",
    "1 when lock requests are held while the DLM recovers (sysfs lock_module/block).",
);

// The quorum collector: `corosync-quorumtool -s`.
pub(crate) const COROSYNC_QUORATE: Metric = Metric::gauge(
    "corosync_quorate",
    "1 when the cluster is quorate (corosync-quorumtool -s); without quorum the DLM cannot recover.",
);

// `--trace`: the gfs2 trace events read as they come.
pub(crate) const DLM_REQUEST_DURATION_SECONDS: Metric = Metric::histogram(
    "gfs2_dlm_request_duration_seconds",
    "DLM round trips of glock requests (gfs2_glock_lock_time tdiff), blocking or not (the GLF_BLOCKING flag of the state change that follows).",
);
pub(crate) const GLOCK_WAIT_DURATION_SECONDS: Metric = Metric::histogram(
    "gfs2_glock_wait_duration_seconds",
    "Glock holders' waits, queued to granted (gfs2_glock_queue to gfs2_promote), by glock type.",
);
pub(crate) const GLOCK_HOLD_DURATION_SECONDS: Metric = Metric::histogram(
    "gfs2_glock_hold_duration_seconds",
    "Glock holds, granted to dequeued (gfs2_promote to gfs2_glock_queue dequeue), by glock type.",
);
pub(crate) const GLOCK_REMOTE_DEMOTES: Metric = Metric::counter(
    "gfs2_glock_remote_demotes",
    "Demotes of glocks requested by other nodes (gfs2_demote_rq remote), by glock type.",
);
pub(crate) const EXPORTER_TRACE_EVENTS: Metric = Metric::counter(
    "glk_exporter_trace_events",
    "gfs2 trace events read by --trace.",
);
pub(crate) const EXPORTER_TRACE_LOST_EVENTS: Metric = Metric::counter(
    "glk_exporter_trace_lost_events",
    "gfs2 trace events the kernel dropped before --trace read them (the histograms miss them).",
);
pub(crate) const EXPORTER_TRACE_DROPPED_STATES: Metric = Metric::counter(
    "glk_exporter_trace_dropped_states",
    "Glocks whose holders stopped being followed because too many glocks had holders at once.",
);
pub(crate) const EXPORTER_TRACE_UNPRINTED: Metric = Metric::counter(
    "glk_exporter_trace_unprinted",
    "What --trace read raw from the ring buffer but could not print (what: records of events glk has no format for, or pages not readable to their end); the histograms miss their events.",
);

// The exporter itself: findings, collectors and collections.
pub(crate) const GLK_FINDINGS: Metric = Metric::gauge(
    "glk_findings",
    "Node-local findings of glk doctor's rules, by code and severity (see glk doctor's table of codes); a code whose collector failed is absent.",
);
pub(crate) const EXPORTER_COLLECTOR_SUCCESS: Metric = Metric::gauge(
    "glk_exporter_collector_success",
    "1 when the collector read its sources within the deadline in the last collection.",
);
pub(crate) const EXPORTER_COLLECTOR_DURATION_SECONDS: Metric = Metric::gauge(
    "glk_exporter_collector_duration_seconds",
    "How long the collector took in the last collection (the deadline when it missed it).",
);
pub(crate) const EXPORTER_COLLECTOR_FAILURES: Metric = Metric::counter(
    "glk_exporter_collector_failures",
    "Collections in which the collector failed or missed the deadline.",
);
pub(crate) const EXPORTER_MALFORMED_LINES: Metric = Metric::counter(
    "glk_exporter_malformed_lines",
    "Input lines the collector could not read (the sources may be truncated or of an unknown kernel format).",
);
pub(crate) const EXPORTER_COLLECTIONS: Metric = Metric::counter(
    "glk_exporter_collections",
    "Collections made (scrapes within the minimum interval share one).",
);
pub(crate) const EXPORTER_BUILD_INFO: Metric = Metric::gauge(
    "glk_exporter_build_info",
    "The glk version serving these metrics (always 1).",
);

// The HTTP server.
pub(crate) const EXPORTER_HTTP_RESPONSES: Metric = Metric::counter(
    "glk_exporter_http_responses",
    "HTTP responses sent, by status code (this one not yet counted).",
);
pub(crate) const EXPORTER_HTTP_CONNECTIONS_REJECTED: Metric = Metric::counter(
    "glk_exporter_http_connections_rejected",
    "Connections answered 503 because --web.max-connections were being served.",
);

/// The families `--trace` adds.
pub const TRACE: [Metric; 8] = [
    DLM_REQUEST_DURATION_SECONDS,
    GLOCK_WAIT_DURATION_SECONDS,
    GLOCK_HOLD_DURATION_SECONDS,
    GLOCK_REMOTE_DEMOTES,
    EXPORTER_TRACE_EVENTS,
    EXPORTER_TRACE_LOST_EVENTS,
    EXPORTER_TRACE_DROPPED_STATES,
    EXPORTER_TRACE_UNPRINTED,
];

/// The families read from the node's sources: glocks, the DLM lock dump, sbstats, sysfs
/// and quorum.
pub const SOURCES: [Metric; 18] = [
    GLOCKS,
    GLOCK_HOLDERS,
    GLOCK_WAITERS,
    GLOCKS_WAITED_ON,
    GLOCKS_DEMOTE_PENDING,
    GLOCK_OLDEST_WAIT_SECONDS,
    GLOCK_STUCK_WAITERS,
    DLM_LOCKS,
    DLM_LOCK_OLDEST_WAIT_SECONDS,
    DLM_REQUESTS,
    GLOCK_HOLDERS_QUEUED,
    DLM_RTT_SECONDS,
    DLM_RTT_DEVIATION_SECONDS,
    DLM_INTERREQUEST_SECONDS,
    FILESYSTEM_WITHDRAWN,
    FILESYSTEM_FROZEN,
    FILESYSTEM_LOCKING_BLOCKED,
    COROSYNC_QUORATE,
];

/// The exporter's own families: findings, collectors, collections and HTTP.
pub const OWN: [Metric; 9] = [
    GLK_FINDINGS,
    EXPORTER_COLLECTOR_SUCCESS,
    EXPORTER_COLLECTOR_DURATION_SECONDS,
    EXPORTER_COLLECTOR_FAILURES,
    EXPORTER_MALFORMED_LINES,
    EXPORTER_COLLECTIONS,
    EXPORTER_BUILD_INFO,
    EXPORTER_HTTP_RESPONSES,
    EXPORTER_HTTP_CONNECTIONS_REJECTED,
];

/// Every family the exporter can serve, in the order of its collectors.
pub fn all() -> impl Iterator<Item = &'static Metric> {
    SOURCES.iter().chain(&TRACE).chain(&OWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name is a valid Prometheus metric name, given once; a counter's has no
    /// `_total` (the exposition adds it) and every help is one line.
    #[test]
    fn names_are_valid_and_given_once() {
        let mut seen = std::collections::BTreeSet::new();
        for m in all() {
            assert!(seen.insert(m.name), "{} defined twice", m.name);
            let mut chars = m.name.chars();
            assert!(chars.next().is_some_and(|c| c.is_ascii_lowercase()));
            assert!(
                chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                m.name
            );
            assert!(!m.name.ends_with("_total"), "{}", m.name);
            assert!(!m.help.is_empty() && !m.help.contains('\n'), "{}", m.name);
        }
    }
}
