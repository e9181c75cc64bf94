//! `glk trace -o FILE.parquet`: glk (which has no polars) pipes the trace text here; this
//! decodes it into the events frame and writes Parquet one row group at a time, so memory
//! holds one batch however long the trace.

use std::io::{self, Read};
use std::path::PathBuf;

use frames::export::ParquetStream;
use frames::EventCols;
use traceparse::reader::BlockReader;
use traceparse::sink::{Decoder, FnSink};
use traceparse::Decoded;

/// Rows per row group.
const BATCH: usize = 256 * 1024;

/// Arguments of the hidden `trace-parquet` command.
#[derive(Debug, clap::Args)]
pub struct TraceParquetArgs {
    /// The Parquet file to write.
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// The `node` column's value (the traced machine's host name).
    #[arg(long)]
    pub node: String,
}

/// Decodes standard input until it closes, then finishes the file. Stop signals are
/// ignored: glk closes the pipe when it stops, and a terminal's Ctrl-C, sent to the whole
/// process group, must not cut the file short.
pub fn run(a: &TraceParquetArgs) -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: setting a signal's disposition to SIG_IGN has no memory-safety effect.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let input: Box<dyn Read + Send> = Box::new(io::stdin());
    let reader = BlockReader::stream(input);
    let mut out = ParquetStream::create(&a.output)?;
    let mut cols = EventCols::default();
    let mut decoder = Decoder::new();
    while let Some(block) = reader.next_block() {
        decoder.block(
            &block,
            &mut FnSink(|d: Decoded<'_>| {
                cols.push(&a.node, &d);
                true
            }),
        )?;
        reader.recycle(block);
        if cols.len() >= BATCH {
            let df = std::mem::take(&mut cols)
                .frame()
                .map_err(|e| io::Error::other(e.to_string()))?;
            out.write(&df)?;
        }
    }
    reader.finish()?;
    if !cols.is_empty() {
        let df = cols.frame().map_err(|e| io::Error::other(e.to_string()))?;
        out.write(&df)?;
    }
    out.finish(|| EventCols::default().frame())?;
    Ok(())
}
