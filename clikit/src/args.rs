//! The command line of the analysis commands and of `export`, which the polars engine
//! (`glk-engine`) runs: `glk` lists it in its help, man page and completions exactly as the
//! engine parses it, and forwards its arguments to the engine unchanged.

use std::path::PathBuf;

/// The ranking of `glk analyze`'s contended glocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sort {
    /// Remote demote requests summed over nodes.
    Demotes,
    /// Time spent waiting (queue → promote in traces).
    Wait,
    /// State changes.
    Changes,
    /// Most waiters in one snapshot.
    Waiters,
}

/// Which GFS2 filesystem of the inputs the analyses read.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FsArg {
    /// Read only this GFS2 filesystem (its lock table `CLUSTER:FS`, or `FS`), where the
    /// inputs hold several (a node with several mounted: `glk capture`'s `DIR/FS/NODE/`, a
    /// sos report's or gfs2_lockcapture's copy of each, debugfs); analyze, doctor, report
    /// and export need it then, top and stats show each filesystem's files apart.
    #[arg(long, value_name = "TABLE")]
    pub fs: Option<String>,
}

impl FsArg {
    /// The filesystem asked for, if any.
    pub fn only(&self) -> Option<&str> {
        self.fs.as_deref()
    }
}

/// `glk analyze`.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Capture directories (one per node, or a directory of them), tarballs, or loose files.
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    /// Which filesystem of the inputs is read.
    #[command(flatten)]
    pub filesystem: FsArg,
    /// Ranking of the contended glocks.
    #[arg(long, value_enum, default_value = "demotes")]
    pub sort: Sort,
    /// Entries per list (0: all).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Demote-storm window, seconds.
    #[arg(long, default_value_t = 1.0, value_parser = crate::args::seconds)]
    pub storm_window: f64,
    /// Remote demotes within one window that make a storm.
    #[arg(long, default_value_t = 5)]
    pub storm_min: u64,
    /// When a waiter is stuck.
    #[command(flatten)]
    pub stuck: StuckArgs,
    /// One JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the cross-node hand-offs as a Chrome/Perfetto trace (JSON) to this file:
    /// open it in ui.perfetto.dev or chrome://tracing.
    #[arg(long, value_name = "FILE.json")]
    pub timeline: Option<PathBuf>,
}

/// The severity from which `glk doctor` exits with status 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum FailOn {
    /// Any finding.
    Info,
    /// Warnings and above.
    Warning,
    /// Errors and above.
    Error,
    /// Critical findings only.
    Critical,
}

/// `glk doctor`.
#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// Capture directories, tarballs or loose files; or `live` (on a node: glk takes a
    /// short capture with a trace itself, then reads it).
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    /// Which filesystem of the inputs is read.
    #[command(flatten)]
    pub filesystem: FsArg,
    /// One JSON document (`findings[]`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 3 when a finding is more severe than this (0 otherwise).
    #[arg(long, value_enum, default_value = "warning")]
    pub fail_on: FailOn,
    /// When a waiter is stuck.
    #[command(flatten)]
    pub stuck: StuckArgs,
    /// Remote demotes (summed over nodes) that make a glock hot.
    #[arg(long, default_value_t = 20)]
    pub hot_demotes: u64,
    /// Unblocked remote DLM requests slower than this (p50, ms) make a master slow.
    #[arg(long, default_value_t = 10.0)]
    pub slow_dlm_ms: f64,
    /// Demote-storm window, seconds.
    #[arg(long, default_value_t = 1.0, value_parser = crate::args::seconds)]
    pub storm_window: f64,
    /// Remote demotes within one window that make a storm.
    #[arg(long, default_value_t = 5)]
    pub storm_min: u64,
    /// Name hot inodes by path, searching the filesystem where the capture says it is
    /// mounted (only meaningful on the node that took the capture; `live` does it).
    #[arg(long)]
    pub resolve_paths: bool,
    /// With `live`: watch the node this long (snapshots at the start, the middle and the
    /// end; gfs2 and dlm events throughout). A wait behind a holder on this node has no
    /// DLM queue age: watch at least --stuck-after to judge it stuck.
    #[arg(long = "for", value_name = "SECS", default_value_t = 6.0, value_parser = crate::args::seconds)]
    pub live_secs: f64,
    /// With `live`: keep the capture in DIR (or pack it into FILE.tar.zst) instead of
    /// removing it, so that the files the evidence cites can be read and sent on; `glk
    /// doctor DIR` reads it again.
    #[arg(long, value_name = "DIR|FILE.tar.zst")]
    pub keep: Option<PathBuf>,
}

/// `glk report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Capture directories, tarballs or loose files.
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    /// Which filesystem of the inputs is read.
    #[command(flatten)]
    pub filesystem: FsArg,
    /// The HTML file to write (self-contained: it opens from a mail attachment).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// Rows per table (0: all).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// When a waiter is stuck.
    #[command(flatten)]
    pub stuck: StuckArgs,
}

/// `glk export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Capture directories, tarballs or loose files.
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    /// Which filesystem of the inputs is read.
    #[command(flatten)]
    pub filesystem: FsArg,
    /// Output directory: DIR/kind=KIND/node=NODE/part-0.parquet.
    #[arg(
        long,
        short = 'o',
        required_unless_present = "dataset",
        conflicts_with = "dataset"
    )]
    pub output: Option<PathBuf>,
    /// Add the captures, as one capture, to the fleet dataset at DIR:
    /// DIR/table=KIND/cluster=CLUSTER/node=NODE/capture-ID.parquet (appended; the same
    /// capture exported again replaces its own files).
    #[arg(long, value_name = "DIR")]
    pub dataset: Option<PathBuf>,
    /// The cluster the captures belong to (with --dataset; default: the cluster their
    /// lock table CLUSTER:FS names). Its filesystems are told apart by the lock table the
    /// capture names (the dataset's `fs` column); for captures that name none, give each
    /// filesystem a name of its own, since glock numbers repeat between filesystems.
    #[arg(long, value_name = "NAME", requires = "dataset")]
    pub cluster: Option<String>,
}

/// `glk fleet`: questions over a fleet dataset (`glk export --dataset`), answered by lazy
/// polars queries that stream the dataset's Parquet files one cluster at a time (memory
/// follows the largest cluster's files, not the rows).
#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    /// The question.
    #[command(subcommand)]
    pub query: FleetQuery,
}

/// The questions `glk fleet` answers.
#[derive(Debug, clap::Subcommand)]
pub enum FleetQuery {
    /// The glocks hot across many captures: remote demote requests in the traces, and
    /// snapshots in which the glock had waiters, per cluster, filesystem and glock (or
    /// also per node or kernel), the glocks hot in the most captures first.
    Hot {
        /// The dataset, and what to print.
        #[command(flatten)]
        common: FleetCommon,
        /// Also split each glock's rows by node, or by the kernel the nodes ran.
        #[arg(long, value_enum)]
        by: Option<FleetBy>,
    },
    /// DLM masters that are slow over days or weeks: the DLM round trip of gfs2 lock
    /// requests (`lock_time` events' `tdiff`) sent to another node, by the node that
    /// mastered the lock's resource (from the DLM lock dumps) and period, slowest first.
    Masters {
        /// The dataset, and what to print.
        #[command(flatten)]
        common: FleetCommon,
        /// The period requests are grouped by (UTC; weeks start on Monday).
        #[arg(long, value_enum, default_value = "week")]
        period: FleetPeriod,
    },
    /// Which captures share a demote-storm pattern: glocks that had a storm (at least
    /// --min-demotes remote demote requests within one second on a node) in several
    /// captures, per cluster, filesystem and glock, the glocks that stormed in the most
    /// captures first.
    Storms {
        /// The dataset, and what to print.
        #[command(flatten)]
        common: FleetCommon,
        /// Remote demote requests within one second on one node that make a storm (5:
        /// a node holds a glock at least its minimum hold time, 200 ms, before honouring
        /// one, so a healthy glock sees at most about five a second).
        #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        min_demotes: u32,
    },
}

/// What every `glk fleet` question takes.
#[derive(Debug, clap::Args)]
pub struct FleetCommon {
    /// The dataset (the DIR of `glk export --dataset DIR`).
    #[arg(value_name = "DATASET")]
    pub dataset: PathBuf,
    /// Rows to print at most.
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20)]
    pub limit: u32,
    /// Only this cluster (repeatable).
    #[arg(long, value_name = "NAME")]
    pub cluster: Vec<String>,
    /// JSON lines, one object per row, instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What `glk fleet hot` also splits by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FleetBy {
    /// The node.
    Node,
    /// The kernel release.
    Kernel,
}

/// The period `glk fleet masters` groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FleetPeriod {
    /// A UTC day.
    Day,
    /// A week from Monday 00:00 UTC.
    Week,
}

/// The threshold of the one stuck rule ([`analysis::stuck::is_stuck`]), with one name and
/// one default on every command that judges stuck (`glk analyze`, `glk doctor`, `glk
/// report`, `glk top`, `glk exporter`).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct StuckArgs {
    /// A waiter that has waited at least this many seconds is stuck, by the longer of its
    /// clocks: its DLM request's age in the lock dump, and how long the snapshots (or,
    /// live, the refreshes) have seen it waiting. `--stuck-secs` is the same option.
    #[arg(
        long = "stuck-after",
        alias = "stuck-secs",
        value_name = "SECS",
        default_value_t = analysis::stuck::STUCK_AFTER_SECS,
        value_parser = seconds_or_zero
    )]
    pub stuck_after: f64,
}

/// A number of seconds from the command line: finite, positive, at most ten years.
pub fn seconds(s: &str) -> Result<f64, String> {
    let v = seconds_or_zero(s)?;
    if v == 0.0 {
        return Err(format!("{s:?}: seconds must be a finite number above 0"));
    }
    Ok(v)
}

/// A number of seconds from the command line: finite, 0 or more, at most ten years.
pub fn seconds_or_zero(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s:?}: seconds must be a finite number, 0 or more"));
    }
    if v > 315_576_000.0 {
        return Err(format!("{s:?}: at most 315576000 seconds (ten years)"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_checked() {
        assert_eq!(seconds("0.5"), Ok(0.5));
        for bad in ["inf", "nan", "-1", "0", "1e300", "x", ""] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(seconds_or_zero("0"), Ok(0.0));
        for bad in ["inf", "nan", "-1", "1e300", "x", ""] {
            assert!(seconds_or_zero(bad).is_err(), "{bad}");
        }
    }
}
