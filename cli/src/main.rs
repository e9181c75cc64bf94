//! glk: make GFS2 cluster-filesystem locking visible.
//!
//! This is the node tool, with no polars in the binary: `top`, `trace`, `stats`, `capture`,
//! `analyze`, `doctor`, `report` and `exporter` run here. `export` and `trace -o FILE.parquet` are
//! listed with their options like every other command, and run by the analyst's engine,
//! `glk-engine` (see [`engine`]).

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use clikit::args::{AnalyzeArgs, DoctorArgs, ExportArgs, FleetArgs, ReportArgs};
use clikit::Color;

mod agent;
mod analyze;
mod capture;
mod cluster;
mod doctor;
mod engine;
mod exporter;
mod generate;
mod inputs;
mod report;
mod stats;
mod svg;
mod table;
mod top;
mod trace;

/// The command line.
#[derive(Parser)]
#[command(
    name = "glk",
    version,
    about = "Make GFS2 cluster-filesystem locking visible",
    long_about = "Make GFS2 cluster-filesystem locking visible: which glock is contended, who \
                  holds it, is it stuck or slow, which DLM round trips are slow, which node \
                  made which wait.\n\nOn a cluster node: top, trace, stats, capture and doctor. \
                  Anywhere: analyze, doctor and report on captures. On a workstation: \
                  export to Parquet and questions over fleet datasets (run by glk-engine, the \
                  polars engine)."
)]
pub struct Cli {
    /// When to color the output (NO_COLOR is honoured).
    #[arg(long, value_enum, default_value = "auto", global = true)]
    color: Color,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The glocks that hurt, ranked, live: waiters and how long they waited, demotes, DLM traffic (a full-screen console on a terminal).
    Top(top::TopArgs),
    /// gfs2 tracepoints: live from a private tracefs instance, or decoded from saved text.
    Trace(trace::TraceArgs),
    /// DLM timing: glstats, sbstats (lkstats), snapshot deltas, tdiff distributions from traces.
    Stats(stats::StatsArgs),
    /// Snapshots of glocks, glstats, sbstats, glockfd and DLM lock dumps (and tracepoints)
    /// on a live node, into a bundle for analyze and export.
    Capture(capture::CaptureArgs),
    /// Contended glocks, demote storms, slow DLM, hold/wait times, cross-node waits,
    /// deadlock cycles, stuck waiters and leaks, from capture bundles.
    Analyze(AnalyzeArgs),
    /// Every frame of capture bundles as Hive-partitioned Parquet (kind=…/node=…)
    /// (runs glk-engine).
    Export(ExportArgs),
    /// Questions over a fleet dataset (`glk export --dataset`): glocks hot across captures,
    /// slow DLM masters over weeks, captures that share a demote storm (runs glk-engine).
    Fleet(FleetArgs),
    /// What is wrong, how sure, the evidence and what to do: findings with stable codes
    /// from capture bundles, or `live` on a node (exit status 3 when a finding is more
    /// severe than --fail-on).
    Doctor(DoctorCli),
    /// One self-contained HTML report of capture bundles: findings first, then charts and
    /// sortable tables.
    Report(ReportArgs),
    /// Prometheus/OpenMetrics metrics of this node's glocks, DLM locks and findings,
    /// served over HTTP(S) or written for node_exporter's textfile collector.
    Exporter(exporter::ExporterArgs),
    /// The man page (one page for every command and option) or shell completions, on stdout.
    Generate(generate::GenerateArgs),
    /// What cluster mode runs on each node (over ssh): this node's files as a stream of
    /// glk's versioned protocol. Not for people.
    #[command(hide = true)]
    Agent(agent::AgentArgs),
}

/// `glk doctor`, with cluster mode for `live`.
#[derive(clap::Args)]
struct DoctorCli {
    #[command(flatten)]
    doctor: DoctorArgs,
    #[command(flatten)]
    cluster: cluster::ClusterArgs,
}

/// An error, before anything is captured, when this node has several GFS2 filesystems
/// mounted and `--fs` names none: the doctor reads one. Where none can be listed, the
/// capture says why (with `--cluster`, the node running glk may mount no GFS2 at all).
fn one_filesystem_asked(a: &DoctorArgs) -> std::io::Result<()> {
    if a.filesystem.only().is_some() {
        return Ok(());
    }
    let Ok(fss) = inputs::debugfs_root(None).and_then(|r| bundle::live::filesystems(&r, None))
    else {
        return Ok(());
    };
    if fss.len() <= 1 {
        return Ok(());
    }
    let tables: Vec<&str> = fss.iter().map(|f| f.table.as_str()).collect();
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} GFS2 filesystems are mounted here ({}): give --fs with the one to examine",
            fss.len(),
            tables.join(", ")
        ),
    ))
}

/// Why an option given makes sense only with `glk doctor live`, if one was given.
fn live_only_options(a: &DoctorArgs, c: &cluster::ClusterArgs) -> Option<&'static str> {
    if c.on() {
        Some(
            "--cluster and --nodes go with `glk doctor live` (captures already hold every \
             node they have)",
        )
    } else if a.keep.is_some() {
        Some("--keep goes with `glk doctor live` (it keeps the capture that live takes)")
    } else {
        None
    }
}

/// `glk doctor live`: a capture of this node for `--for` seconds (default 6: 3 snapshots,
/// at the start, the middle and the end, and gfs2 and dlm events throughout) into
/// `--keep`, else a private temporary directory removed afterwards, which the doctor then
/// reads with the same options, naming hot inodes by path.
fn doctor_live(a: &DoctorArgs, c: &cluster::ClusterArgs) -> std::io::Result<doctor::Verdict> {
    one_filesystem_asked(a)?;
    // Removed when dropped, after the doctor has read it.
    let temp;
    let out = match &a.keep {
        Some(keep) => keep.clone(),
        None => {
            temp = tempfile::Builder::new().prefix("glk-doctor-").tempdir()?;
            temp.path().join("capture")
        }
    };
    let secs = a.live_secs;
    let whom = if c.on() { "every node" } else { "this node" };
    capture::run(&capture::CaptureArgs {
        fs: a.filesystem.only().map(str::to_string),
        sampling: capture::Sampling {
            count: 3,
            interval: secs / 2.0,
            trace: Some(secs),
            trace_events: vec!["gfs2".into(), "dlm".into()],
        },
        output: out.clone(),
        debugfs: None,
        node_name: None,
        cluster: c.clone(),
        announce: Some(format!(
            "glk: capturing {whom} for {secs} s (3 snapshots, gfs2 and dlm events)..."
        )),
    })?;
    let mut a = a.clone();
    a.captures = vec![out];
    a.resolve_paths = true;
    let verdict = doctor::run(&a)?;
    if a.keep.is_none() {
        eprintln!(
            "glk: the capture read is removed now; --keep DIR keeps it, with the files the \
             evidence cites"
        );
    }
    Ok(verdict)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Top(a) => top::run(a, cli.color),
        Command::Trace(a) => trace::run(a),
        Command::Stats(a) => stats::run(a),
        Command::Capture(a) => capture::run(a),
        Command::Analyze(a) => analyze::run(a, cli.color),
        Command::Report(a) => report::run(a),
        Command::Exporter(a) => exporter::run(a),
        Command::Doctor(DoctorCli { doctor: a, cluster }) => {
            let live = a.captures.len() == 1 && a.captures[0].as_os_str() == "live";
            if let Some(why) = live_only_options(a, cluster).filter(|_| !live) {
                return clikit::exit(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    why,
                )));
            }
            match if live {
                doctor_live(a, cluster)
            } else {
                doctor::run(a)
            } {
                Ok(doctor::Verdict::Findings) => return ExitCode::from(3),
                Ok(doctor::Verdict::Clean) => Ok(()),
                Err(e) => Err(e),
            }
        }
        // The arguments were checked above; the engine gets them exactly as typed.
        Command::Export(_) | Command::Fleet(_) => Err(engine::exec(std::env::args_os().skip(1))),
        Command::Generate(a) => generate::run(a, &mut Cli::command()),
        Command::Agent(a) => agent::run(a),
    };
    clikit::exit(result)
}
