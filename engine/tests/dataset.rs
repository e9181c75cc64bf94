//! `glk export --dataset`: captures of two clusters added to one fleet dataset, one of them
//! twice (its files replaced, not doubled), then read by DuckDB, pyarrow and polars
//! (examples/read_dataset.py) and held to counts made from the raw glocks files.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

mod common;
use common::add;

/// The Python with pyarrow, duckdb and polars: $GLK_PYTHON (scripts/test.sh sets it up in a
/// private venv), else python3 if it has them.
fn python() -> Option<String> {
    let candidates = std::env::var("GLK_PYTHON")
        .into_iter()
        .chain(["python3".to_string()]);
    candidates.into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import pyarrow, duckdb, polars"])
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// `G:` lines of every `glocks.N` of a node directory: the glocks table's rows for it.
fn g_lines(node: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(node).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("glocks.") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            n += text.lines().filter(|l| l.starts_with("G:")).count() as u64;
        }
    }
    n
}

#[test]
fn captures_of_two_clusters_form_one_dataset() {
    let (_scratch, dir) = testdata::scratch_file("fleet");
    let dlm2 = testdata::path("real/dlm2-6.1");
    let family = testdata::path("real/deadlock-family-6.12/capture");
    let late = testdata::path("real/deadlock-family-6.12/late");
    let first = add(&dir, "lab", &[&dlm2]);
    add(&dir, "family", &[&family]);
    add(&dir, "family", &[&late]);
    // The same capture again: its own files are replaced, nothing is added.
    let again = add(&dir, "lab", &[&dlm2]);
    other_columns_are_refused(&dir, &dlm2);
    let id = |err: &str| {
        err.lines()
            .find(|l| l.contains("capture "))
            .unwrap()
            .to_string()
    };
    assert_eq!(id(&first), id(&again));
    assert!(dir.join("_glk_dataset.json").is_file());
    let files: Vec<_> = walk(&dir);
    assert!(
        files.iter().all(|f| {
            let s = f.to_string_lossy();
            s.ends_with("_glk_dataset.json")
                || (s.contains("/table=") && s.contains("/cluster=") && s.contains("/node="))
        }),
        "{files:?}"
    );
    let want: BTreeMap<String, u64> = [
        (
            "family/n1",
            g_lines(&family.join("n1")) + g_lines(&late.join("n1")),
        ),
        (
            "family/n2",
            g_lines(&family.join("n2")) + g_lines(&late.join("n2")),
        ),
        ("lab/n1", g_lines(&dlm2.join("n1"))),
        ("lab/n2", g_lines(&dlm2.join("n2"))),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let Some(py) = python() else {
        return testdata::skip(
            "captures_of_two_clusters_form_one_dataset",
            "no Python with pyarrow, duckdb and polars (scripts/test.sh sets one up)",
        );
    };
    python_reads_it(&py, &dir, &want, &dlm2);
    spark_reads_it(&py, &dir, &want);
}

/// A dataset written with other columns is refused, and left as it was.
fn other_columns_are_refused(dir: &Path, capture: &Path) {
    let manifest = dir.join("_glk_dataset.json");
    let good = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, good.replace("\"version\": 3", "\"version\": 0")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .arg("export")
        .arg(capture)
        .args(["--dataset", dir.to_str().unwrap(), "--cluster", "other"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("written with other columns"),
        "{err}"
    );
    assert!(!dir.join("table=glocks/cluster=other").exists());
    std::fs::write(&manifest, good).unwrap();
}

/// DuckDB, pyarrow and polars (examples/read_dataset.py) count `want`'s rows, read the
/// times as UTC microseconds from dlm2-6.1's first snapshot, and rank the contended glocks.
fn python_reads_it(py: &str, dir: &Path, want: &BTreeMap<String, u64>, dlm2: &Path) {
    let example = testdata::workspace().join("examples/read_dataset.py");
    let o = Command::new(py).arg(&example).arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = |key: &str| -> BTreeMap<String, u64> {
        v[key]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
            .collect()
    };
    assert_eq!(&rows("duckdb_rows"), want);
    assert_eq!(&rows("polars_rows"), want);
    assert_eq!(v["pyarrow_rows"], want.values().sum::<u64>());
    assert_eq!(v["duckdb_captures"], 3);
    // Microsecond UTC timestamps, as Spark 3 reads them, beside the seconds recorded.
    assert_eq!(v["duckdb_time_type"], "TIMESTAMP WITH TIME ZONE");
    assert_eq!(v["pyarrow_time_type"], "timestamp[us, tz=UTC]");
    assert_eq!(
        v["polars_time_type"],
        "Datetime(time_unit='us', time_zone='UTC')"
    );
    // dlm2-6.1's first snapshot (time.0 of its nodes) is the dataset's first moment.
    let t0: f64 = ["n1", "n2"]
        .iter()
        .map(|n| {
            std::fs::read_to_string(dlm2.join(format!("{n}/time.0")))
                .unwrap()
                .trim()
                .parse::<f64>()
                .unwrap()
        })
        .fold(f64::MAX, f64::min);
    let first_time = v["duckdb_first_time"].as_str().unwrap();
    let secs = chrono_free_epoch(first_time);
    assert!((secs - t0).abs() < 1e-3, "{first_time} vs {t0}");
    let cols: Vec<&str> = v["pyarrow_columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for c in [
        "capture",
        "cluster",
        "fs",
        "node",
        "time",
        "time_unix",
        "glock",
    ] {
        assert!(cols.contains(&c), "{cols:?}");
    }
    // The most contended glocks over the captures: the family capture's flock glocks
    // waited on in both of its captures come first.
    let top = &v["duckdb_most_contended"][0];
    assert_eq!(top[0], "family");
    assert_eq!(top[3], 2, "{top}");
}

/// Spark (pyspark, examples/spark_dataset.py) finds the partitions, reads `time` as a
/// timestamp, and counts the same rows.
fn spark_reads_it(py: &str, dir: &Path, want: &BTreeMap<String, u64>) {
    let has_spark = Command::new(py)
        .args(["-c", "import pyspark"])
        .status()
        .is_ok_and(|s| s.success());
    let has_java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !(has_spark && has_java) {
        return testdata::skip(
            "captures_of_two_clusters_form_one_dataset (Spark)",
            "no pyspark in the venv or no Java runtime (scripts/test.sh sets them up)",
        );
    }
    let example = testdata::workspace().join("examples/spark_dataset.py");
    let o = Command::new(py).arg(&example).arg(dir).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let got: BTreeMap<String, u64> = out
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("rows ")?.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect();
    assert_eq!(&got, want, "{out}");
    assert!(out.contains("time:timestamp"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("contended family ")),
        "{out}"
    );
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Seconds since the epoch of DuckDB's `2026-11-25 10:15:30.123456+00` (UTC).
fn chrono_free_epoch(s: &str) -> f64 {
    let (date, rest) = s.split_once(' ').unwrap();
    let time = rest.trim_end_matches("+00").trim_end_matches("+00:00");
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let days = common::days_from_civil(d[0], d[1], d[2]);
    let t: Vec<f64> = time.split(':').map(|x| x.parse().unwrap()).collect();
    days as f64 * 86_400.0 + t[0] * 3600.0 + t[1] * 60.0 + t[2]
}
