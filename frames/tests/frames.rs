//! Frames from the real two-node capture, their row counts checked against the raw files,
//! and the Parquet export read back.

use polars_io::SerReader;

fn count_lines(rel: &str, keep: impl Fn(&str) -> bool) -> usize {
    testdata::text(rel).lines().filter(|l| keep(l)).count()
}

#[test]
fn frames_from_the_dlm_capture() {
    let caps = frames::discover(&[testdata::path("real/dlm2-6.1")]).unwrap();
    let f = frames::load(&caps).unwrap();
    assert!(f.diagnostics.is_clean(), "{:?}", f.diagnostics.first_errors);
    let mut want_glocks = 0;
    let mut want_holders = 0;
    let mut want_glstats = 0;
    let mut want_dlm = 0;
    let mut want_events = 0;
    for n in ["n1", "n2"] {
        for i in 0..6 {
            want_glocks += count_lines(&format!("real/dlm2-6.1/{n}/glocks.{i}"), |l| {
                l.starts_with("G:")
            });
            want_holders += count_lines(&format!("real/dlm2-6.1/{n}/glocks.{i}"), |l| {
                l.starts_with(" H:")
            });
            want_glstats += count_lines(&format!("real/dlm2-6.1/{n}/glstats.{i}"), |l| {
                l.starts_with("G:")
            });
            want_dlm += count_lines(&format!("real/dlm2-6.1/{n}/dlm_locks.{i}"), |l| {
                l.ends_with('"')
            });
        }
        want_events += count_lines(&format!("real/dlm2-6.1/{n}/trace_pipe.txt.xz"), |l| {
            !l.trim().is_empty()
        });
    }
    assert_eq!(f.glocks.height(), want_glocks);
    assert_eq!(f.holders.height(), want_holders);
    assert_eq!(f.glstats.height(), want_glstats);
    assert_eq!(f.dlm_locks.height(), want_dlm);
    assert_eq!(f.events.height(), want_events);
    // 2 nodes x 6 snapshots x 10 types x 8 stats x 1 CPU.
    assert_eq!(f.sbstats.height(), 2 * 6 * 80);
    for kind in frames::KINDS {
        let df = f.get(kind).unwrap();
        let nodes = df
            .column("node")
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .flatten()
            .collect::<std::collections::BTreeSet<_>>();
        assert_eq!(
            nodes.into_iter().collect::<Vec<_>>(),
            ["n1", "n2"],
            "{kind}"
        );
    }
}

#[test]
fn export_is_hive_partitioned_and_reads_back() {
    let caps = frames::discover(&[testdata::path("real/dlm2-6.1")]).unwrap();
    let f = frames::load(&caps).unwrap();
    let (_scratch, dir) = testdata::scratch_file("export");
    let written = frames::export::export(&f, &dir).unwrap();
    // Seven frames, each split by the two nodes.
    assert_eq!(written.len(), 14);
    for w in &written {
        assert!(w
            .path
            .ends_with(format!("kind={}/node={}/part-0.parquet", w.kind, w.node)));
        let back =
            polars_io::parquet::read::ParquetReader::new(std::fs::File::open(&w.path).unwrap())
                .finish()
                .unwrap();
        assert_eq!(back.height(), w.rows);
        // The node is a partition column, not stored in the file.
        assert!(back.column("node").is_err());
        let all = f.get(w.kind).unwrap();
        assert_eq!(back.width(), all.width() - 1);
    }
    let total: usize = written
        .iter()
        .filter(|w| w.kind == "events")
        .map(|w| w.rows)
        .sum();
    assert_eq!(total, f.events.height());
    // The nodes frame: one row per node, its node id (from dlm_controld.log), kernel
    // release (kernel.txt) and trace events, which add up to the events frame.
    let nodes = &f.nodes;
    assert_eq!(nodes.height(), 2);
    let kernels: Vec<_> = nodes
        .column("kernel")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(kernels, [Some("6.1.0-56-amd64"), Some("6.1.0-56-amd64")]);
    let ids: Vec<_> = nodes
        .column("nodeid")
        .unwrap()
        .u64()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(ids, [Some(1), Some(2)]);
    let events: u64 = nodes
        .column("events")
        .unwrap()
        .u64()
        .unwrap()
        .iter()
        .flatten()
        .sum();
    assert_eq!(events as usize, f.events.height());
    let snaps: Vec<_> = nodes
        .column("snapshots")
        .unwrap()
        .u32()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(snaps, [Some(6), Some(6)]);
}

#[test]
fn trace_errors_keep_true_line_numbers_past_the_first_block() {
    let s = testdata::text("real/dlm2-6.1/n2/trace_pipe.txt.xz");
    // More than two 1 MiB blocks of real lines, then one bad line.
    let mut lines: Vec<&str> = s.lines().take(30_000).collect();
    assert!(lines.iter().map(|l| l.len() + 1).sum::<usize>() > 2 << 20);
    lines.push("not a trace line");
    let bad_line = lines.len() as u64;
    lines.extend(s.lines().take(10));
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let path = dir.join("trace_pipe.txt");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let caps = frames::discover(std::slice::from_ref(&path)).unwrap();
    let f = frames::load(&caps).unwrap();
    assert_eq!(f.events.height(), lines.len() - 1);
    let e: Vec<u64> = f.diagnostics.first_errors.iter().map(|e| e.line).collect();
    assert_eq!(e, vec![bad_line]);
}

/// The columns of every frame, in order, are those the README's frames table lists (after
/// `node`, which every frame has first): the README is the schema's documentation.
#[test]
fn every_frame_has_the_columns_the_readme_lists() {
    let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"));
    let (_, table) = readme
        .split_once("| frame | columns |")
        .expect("the README's frames table");
    let table = table.split("\n\n").next().unwrap();
    let caps = frames::discover(&[testdata::path("real/dlm2-6.1")]).unwrap();
    let f = frames::load(&caps).unwrap();
    for kind in frames::KINDS {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| `{kind}` | ")))
            .unwrap_or_else(|| panic!("the README's frames table has no row for {kind}"));
        let mut want = vec!["node".to_string()];
        want.extend(documented_columns(row.rsplit(" | ").next().unwrap()));
        let have: Vec<String> = f
            .get(kind)
            .unwrap()
            .get_column_names()
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(have, want, "{kind}");
    }
}

/// The column names of a table cell: its backticked words outside parentheses (which
/// explain a column).
fn documented_columns(cell: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut depth = 0;
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}
