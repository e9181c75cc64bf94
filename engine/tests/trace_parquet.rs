//! `glk trace -o FILE.parquet`: glk (no polars) pipes the trace to glk-engine, which writes
//! the events frame.

use std::process::Command;

fn decompressed(rel: &str) -> String {
    let mut s = String::new();
    std::io::Read::read_to_string(
        &mut glockparse::input::open(&testdata::path(rel)).unwrap(),
        &mut s,
    )
    .unwrap();
    s
}

#[test]
fn offline_parquet_is_the_events_frame() {
    use polars_io::SerReader;
    let Some(glk_bin) = testdata::workspace_bin("glk") else {
        return testdata::skip(
            "offline_parquet_is_the_events_frame",
            "no glk binary beside this test (run cargo test --workspace)",
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events.parquet");
    let rel = "real/dlm2-6.1/n2/trace_pipe.txt.xz";
    let o = Command::new(glk_bin)
        .env("GLK_ENGINE", env!("CARGO_BIN_EXE_glk-engine"))
        .args([
            "trace",
            "-i",
            testdata::path(rel).to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let df = polars_io::parquet::read::ParquetReader::new(std::fs::File::open(&out).unwrap())
        .finish()
        .unwrap();
    let text = decompressed(rel);
    assert_eq!(df.height(), text.lines().count());
    let events = df.column("event").unwrap().str().unwrap();
    let lock_times = events
        .iter()
        .filter(|e| *e == Some("glock_lock_time"))
        .count();
    assert_eq!(
        lock_times,
        text.lines()
            .filter(|l| l.contains("gfs2_glock_lock_time:"))
            .count()
    );
    for c in ["node", "ts_ns", "glock", "tdiff_ns", "body"] {
        assert!(df.column(c).is_ok(), "missing {c}");
    }
    // Nothing but the file itself is left in the directory (no temporary names).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
