//! `glk trace -o FILE.parquet`: glk (no polars) pipes the trace to glk-engine, which writes
//! the events frame.

use std::path::Path;
use std::process::Command;

use polars::prelude::DataFrame;

/// `glk trace -i REL -o DIR/events.parquet` through the engine: the directory, the frame
/// read back from the file (checked to have a row for each line) and the trace text;
/// `None` (said skipped) when no glk binary is beside the test.
fn parquet_of(test: &str, rel: &str) -> Option<(tempfile::TempDir, DataFrame, String)> {
    let Some(glk_bin) = testdata::workspace_bin("glk") else {
        testdata::skip(
            test,
            "no glk binary beside this test (run cargo test --workspace)",
        );
        return None;
    };
    let (dir, out) = testdata::scratch_file("events.parquet");
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
    let (df, text) = (frame(&out), testdata::text(rel));
    assert_eq!(df.height(), text.lines().count(), "{rel}: a row per line");
    Some((dir, df, text))
}

fn frame(path: &Path) -> DataFrame {
    use polars_io::SerReader;
    polars_io::parquet::read::ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap()
}

#[test]
fn offline_parquet_is_the_events_frame() {
    let rel = "real/dlm2-6.1/n2/trace_pipe.txt.xz";
    let Some((dir, df, text)) = parquet_of("offline_parquet_is_the_events_frame", rel) else {
        return;
    };
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

/// dlm events in the events frame: the kernel's event name, the resource's glock, and the
/// dlm columns (lock ids, mode, message type, nodes, sequence number).
#[test]
fn offline_parquet_has_the_dlm_events() {
    let rel = "real/handoff-6.12/n1/trace_pipe.txt.xz";
    let Some((_dir, df, text)) = parquet_of("offline_parquet_has_the_dlm_events", rel) else {
        return;
    };
    let count = |name: &str| {
        text.lines()
            .filter(|l| l.contains(&format!(" {name}: ")))
            .count()
    };
    let ev = df.column("event").unwrap().str().unwrap().clone();
    let glock = df.column("glock").unwrap().str().unwrap().clone();
    let lkb = df.column("lkb_id").unwrap().u32().unwrap().clone();
    let mode = df.column("mode").unwrap().str().unwrap().clone();
    let (mut starts, mut sends) = (0, 0);
    for i in 0..df.height() {
        match ev.get(i) {
            Some("dlm_lock_start") => {
                starts += 1;
                assert!(glock.get(i).is_some_and(|g| g.contains('/')));
                assert!(lkb.get(i).is_some() && mode.get(i).is_some());
            }
            Some("dlm_send_message") => sends += 1,
            _ => {}
        }
    }
    assert_eq!(starts, count("dlm_lock_start"));
    assert_eq!(sends, count("dlm_send_message"));
    // n1 sends, to n2, with a sequence number and a type, every time.
    let u32s = |c: &str| df.column(c).unwrap().u32().unwrap().clone();
    let (src, dst, seq) = (u32s("src_node"), u32s("dst_node"), u32s("seq"));
    let mtype = df.column("msg_type").unwrap().str().unwrap().clone();
    for i in (0..df.height()).filter(|&i| ev.get(i) == Some("dlm_send_message")) {
        assert_eq!((src.get(i), dst.get(i)), (Some(1), Some(2)));
        assert!(seq.get(i).is_some() && mtype.get(i).is_some());
    }
}
