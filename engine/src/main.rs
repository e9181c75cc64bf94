//! glk-engine: the analyst's half of glk, with the polars engine: `glk export`, `glk fleet`
//! and `glk trace -o FILE.parquet` (glk runs this binary for them). Everything else, the
//! analyses included, is in glk itself.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use clikit::args::{ExportArgs, FleetArgs};
use clikit::Color;

mod export;
mod fleet;
mod trace_sink;

#[derive(Parser)]
#[command(
    name = "glk-engine",
    version,
    about = "glk's polars engine: glk export and Parquet output of glk trace (run through glk)"
)]
struct Cli {
    /// When to color the output (NO_COLOR is honoured). Accepted because glk hands its
    /// own arguments on; nothing the engine prints is colored.
    #[arg(long, value_enum, default_value = "auto", global = true)]
    #[allow(dead_code)]
    color: Color,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every frame of capture bundles as Hive-partitioned Parquet (kind=…/node=…).
    Export(ExportArgs),
    /// Questions over a fleet dataset (glk export --dataset): glocks hot across captures,
    /// slow DLM masters over weeks, captures that share a demote storm.
    Fleet(FleetArgs),
    /// Reads trace text on standard input and writes the events frame as Parquet, one row
    /// group at a time (what `glk trace -o FILE.parquet` runs).
    #[command(hide = true)]
    TraceParquet(trace_sink::TraceParquetArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Export(a) => export::run(a),
        Command::Fleet(a) => fleet::run(a),
        Command::TraceParquet(a) => trace_sink::run(a),
    };
    clikit::exit(result)
}
