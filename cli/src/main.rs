//! glk: make GFS2 cluster-filesystem locking visible.

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod analyze;
mod capture;
mod fmt;
mod inputs;
mod output;
mod stats;
mod top;
mod trace;

#[derive(Parser)]
#[command(name = "glk", version, about = "Make GFS2 cluster-filesystem locking visible", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The glocks that matter, ranked: waiters, demotes, holders (from debugfs glocks files).
    Top(top::TopArgs),
    /// gfs2 tracepoints: live from a private tracefs instance, or decoded from saved text.
    Trace(trace::TraceArgs),
    /// DLM timing: glstats, sbstats (lkstats), snapshot deltas, tdiff distributions from traces.
    Stats(stats::StatsArgs),
    /// Contended glocks, demote storms, slow DLM, hold/wait times, cross-node waits,
    /// deadlock cycles, stuck waiters and leaks, from capture bundles.
    Analyze(analyze::AnalyzeArgs),
    /// Every frame of capture bundles as Hive-partitioned Parquet (kind=…/node=…).
    Export(analyze::ExportArgs),
    /// Snapshots of glocks, glstats, sbstats, glockfd and DLM lock dumps (and tracepoints)
    /// on a live node, into a bundle for analyze and export.
    Capture(capture::CaptureArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Top(a) => top::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Stats(a) => stats::run(a),
        Command::Analyze(a) => analyze::run(a),
        Command::Export(a) => analyze::export(a),
        Command::Capture(a) => capture::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`glk top | head`) is a normal way to stop reading.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("glk: {e}");
            ExitCode::FAILURE
        }
    }
}
