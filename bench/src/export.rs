//! Parquet export throughput: the events frame of the nolock trace fixture (replicated)
//! written by `frames::export`, in rows per second.

use std::time::Instant;

pub fn run(copies: usize) -> std::io::Result<()> {
    let trace = crate::trace::prepare(copies)?;
    let t = Instant::now();
    let caps = frames::discover(std::slice::from_ref(&trace))?;
    let f = frames::load(&caps)?;
    let load = t.elapsed();
    let rows: usize = frames::KINDS
        .iter()
        .map(|k| f.get(k).map_or(0, |d| d.height()))
        .sum();
    let out = std::path::PathBuf::from(format!("bench/out/export-x{copies}"));
    let _ = std::fs::remove_dir_all(&out);
    let t = Instant::now();
    let written = frames::export::export(&f, &out)?;
    let export = t.elapsed();
    let bytes: u64 = written
        .iter()
        .filter_map(|w| std::fs::metadata(&w.path).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "input                      {} ({rows} rows)",
        trace.display()
    );
    println!(
        "decode into frames         {:>8.1} ms  {:>6.2} M rows/s",
        crate::measure::ms(load),
        rows as f64 / load.as_secs_f64() / 1e6
    );
    println!(
        "Parquet export (zstd)      {:>8.1} ms  {:>6.2} M rows/s  (target >= 1 M rows/s), {:.1} MiB written",
        crate::measure::ms(export),
        rows as f64 / export.as_secs_f64() / 1e6,
        bytes as f64 / (1 << 20) as f64
    );
    Ok(())
}
