//! glk-engine: the analyst's half of glk, with the polars engine. Users type `glk analyze`
//! and `glk export` (glk runs this binary for them); it can also be run directly.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use clikit::args::{AnalyzeArgs, DoctorArgs, ExportArgs, ReportArgs};
use clikit::Color;

mod analyze;
mod doctor;
mod report;
mod svg;
mod trace_sink;

#[derive(Parser)]
#[command(
    name = "glk-engine",
    version,
    about = "glk's analysis engine: glk analyze, doctor, report and export over capture bundles (run through glk)"
)]
struct Cli {
    /// When to color the output (NO_COLOR is honoured).
    #[arg(long, value_enum, default_value = "auto", global = true)]
    color: Color,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Contended glocks, demote storms, slow DLM, hold/wait times, cross-node waits,
    /// deadlock cycles, stuck waiters and leaks, from capture bundles.
    Analyze(AnalyzeArgs),
    /// Every frame of capture bundles as Hive-partitioned Parquet (kind=…/node=…).
    Export(ExportArgs),
    /// Findings with stable codes, severity, evidence and remedy; the exit status is 3
    /// when one is more severe than --fail-on.
    Doctor(DoctorArgs),
    /// One self-contained HTML report: the findings, then charts (storm timeline, DLM
    /// round trips, hold and wait times, waiters, the wait-for graph) and sortable tables.
    Report(ReportArgs),
    /// Reads trace text on standard input and writes the events frame as Parquet, one row
    /// group at a time (what `glk trace -o FILE.parquet` runs).
    #[command(hide = true)]
    TraceParquet(trace_sink::TraceParquetArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Analyze(a) => analyze::run(a, cli.color),
        Command::Export(a) => analyze::export(a),
        Command::TraceParquet(a) => trace_sink::run(a),
        Command::Report(a) => report::run(a),
        Command::Doctor(a) => match doctor::run(a) {
            Ok(doctor::Verdict::Findings) => return ExitCode::from(3),
            Ok(doctor::Verdict::Clean) => Ok(()),
            Err(e) => Err(e),
        },
    };
    clikit::exit(result)
}
