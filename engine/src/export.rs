//! `glk export`: every frame of capture bundles as Hive-partitioned Parquet.

use std::io;

use clikit::args::ExportArgs;

/// Rows of every frame.
fn frame_rows(f: &frames::Frames) -> usize {
    frames::KINDS
        .iter()
        .map(|k| f.get(k).map_or(0, |d| d.height()))
        .sum()
}

/// Reads the captures into frames and writes them as Parquet under `--output`.
pub fn run(a: &ExportArgs) -> io::Result<()> {
    let caps = frames::discover(&a.captures)?;
    let f = frames::load(&caps)?;
    clikit::diag::captures_recognised(&a.captures, frame_rows(&f), &f.diagnostics)?;
    let t = std::time::Instant::now();
    let written = frames::export::export(&f, &a.output)?;
    let rows: usize = written.iter().map(|w| w.rows).sum();
    for w in &written {
        println!("{:>9} rows  {}", w.rows, w.path.display());
    }
    eprintln!(
        "glk: wrote {rows} rows in {} files in {:.2}s",
        written.len(),
        t.elapsed().as_secs_f64()
    );
    clikit::diag::report(&f.diagnostics);
    Ok(())
}
