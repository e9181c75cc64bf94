//! `glk export` read back by the Python example (pyarrow, pandas, polars, DuckDB), and
//! its SQL answer compared with `glk analyze`.

use std::process::Command;

/// The Python with pyarrow, duckdb, pandas and polars: $GLK_PYTHON (scripts/test.sh sets it
/// up in a private venv), else python3 if it has them.
fn python() -> Option<String> {
    let candidates = std::env::var("GLK_PYTHON")
        .into_iter()
        .chain(["python3".to_string()]);
    for py in candidates {
        let ok = Command::new(&py)
            .args(["-c", "import pyarrow, duckdb, pandas, polars"])
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(py);
        }
    }
    None
}

#[test]
fn notebook_example_reads_the_export() {
    let Some(py) = python() else {
        return testdata::skip(
            "notebook_example_reads_the_export",
            "no Python with pyarrow, duckdb, pandas and polars (scripts/test.sh sets one up)",
        );
    };
    let (_scratch, dir) = testdata::scratch_file("export");
    let capture = testdata::path("real/dlm2-6.1");
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .args([
            "export",
            capture.to_str().unwrap(),
            "-o",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("kind=events/node=n1/part-0.parquet").is_file());
    let example = testdata::workspace().join("examples/read_export.py");
    let o = Command::new(&py).arg(&example).arg(&dir).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The example's SQL ranks by remote demotes, as glk analyze does.
    let Some(glk) = testdata::workspace_bin("glk") else {
        testdata::skip(
            "notebook_example_reads_the_export",
            "no glk binary beside this test to compare with (run cargo test --workspace)",
        );
        return;
    };
    let a = Command::new(glk)
        .args([
            "analyze",
            capture.to_str().unwrap(),
            "--json",
            "--limit",
            "1",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let top = &v["contended"][0];
    let want = format!(
        "duckdb: {} remote_demotes={} nodes=2",
        top["glock"].as_str().unwrap(),
        top["remote_demotes"]
    );
    assert!(out.contains(&want), "{want} not in:\n{out}");
    assert!(
        out.contains("pandas: events per node {'n1': 58492, 'n2': 58180}"),
        "{out}"
    );
    // pyarrow's compute kernels work on the string columns (they fail on string_view).
    assert!(
        out.contains(" large_string columns, string_view columns []"),
        "{out}"
    );
    assert!(!out.contains("pyarrow: 0 large_string"), "{out}");
    // Counted again from the raw traces: every `gfs2_demote_rq` line, and the smallest
    // glock id among them (as `TYPE/hex`, ordered as strings, as pyarrow sorts).
    let mut demotes = 0;
    let mut first: Option<String> = None;
    for n in ["n1", "n2"] {
        let mut text = String::new();
        let p = testdata::path(&format!("real/dlm2-6.1/{n}/trace_pipe.txt.xz"));
        std::io::Read::read_to_string(&mut glockparse::input::open(&p).unwrap(), &mut text)
            .unwrap();
        for l in text.lines().filter(|l| l.contains(" gfs2_demote_rq: ")) {
            demotes += 1;
            let id = l
                .split(" gfs2_demote_rq: ")
                .nth(1)
                .unwrap()
                .split(' ')
                .nth(2)
                .unwrap();
            let g: glockparse::GlockId = id.parse().unwrap();
            let g = g.to_string();
            if first.as_ref().is_none_or(|f| g < *f) {
                first = Some(g);
            }
        }
    }
    let want = format!(
        "pyarrow compute: demote_rq events {demotes}, first glock {}",
        first.unwrap()
    );
    assert!(out.contains(&want), "{want} not in:\n{out}");
    assert!(
        out.contains("polars: node=n2 glocks_with_waiters="),
        "{out}"
    );
}
