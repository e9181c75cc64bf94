//! `glk stats` end to end on the real captures.

mod common;
use common::elements;

use std::process::Command;

fn stats(args: &[&str]) -> serde_json::Value {
    common::glk_json(&[&["stats"], args, &["--json"]].concat())
}

fn p(rel: &str) -> String {
    testdata::path(rel).display().to_string()
}

#[test]
fn slowest_glocks_and_types_on_the_dlm_capture() {
    let v = stats(&[&p("real/dlm2-6.1/n1"), "--limit", "0"]);
    let glocks = v["glocks"].as_array().unwrap();
    // Independently: the glstats lines with dcnt > 0, and the largest rttb mean.
    let text = std::fs::read_to_string(testdata::path("real/dlm2-6.1/n1/glstats.5")).unwrap();
    let own: Vec<(String, i64)> = text
        .lines()
        .filter(|l| l.split("dcnt: ").nth(1).unwrap().split(' ').next().unwrap() != "0")
        .map(|l| {
            let id = l
                .split("n:")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string();
            let rttb: i64 = l
                .split("rttb:")
                .nth(1)
                .unwrap()
                .split('/')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (id, rttb)
        })
        .collect();
    assert_eq!(glocks.len(), own.len());
    let top = own
        .iter()
        .max_by_key(|(id, r)| (*r, std::cmp::Reverse(id.clone())))
        .unwrap();
    assert_eq!(glocks[0]["glock"], top.0.as_str());
    assert_eq!(glocks[0]["srttb_ns"], top.1);
    for k in [
        "glock",
        "type",
        "srtt_ns",
        "srttb_ns",
        "sirt_ns",
        "dcount",
        "qcount",
        "dlm_busy",
        "request_rate_per_s",
    ] {
        assert!(glocks[0].get(k).is_some(), "missing {k}");
    }
    let sorted: Vec<i64> = glocks
        .iter()
        .map(|g| g["srttb_ns"].as_i64().unwrap())
        .collect();
    assert!(sorted.windows(2).all(|w| w[0] >= w[1]));
    let inode = common::find(&v["types"], "type", "inode");
    assert_eq!(inode["dlm"], 1953);
    assert_eq!(inode["queue"], 10766);
}

#[test]
fn nolock_has_nothing_to_rank_by_time() {
    let v = stats(&[
        &p("real/nolock-6.1/glstats.2"),
        &p("real/nolock-6.1/sbstats.2"),
    ]);
    assert_eq!(v["glocks"].as_array().unwrap().len(), 0);
    let v = stats(&[
        &p("real/nolock-6.1/glstats.2"),
        "--sort",
        "qcount",
        "--limit",
        "3",
    ]);
    let g = v["glocks"].as_array().unwrap();
    assert_eq!(g.len(), 3);
    assert!(g[0]["qcount"].as_i64().unwrap() >= g[1]["qcount"].as_i64().unwrap());
    assert_eq!(g[0]["srttb_ns"], 0);
}

#[test]
fn delta_uses_capture_times() {
    let v = stats(&[
        "--delta",
        &p("real/dlm2-6.1/n1/glstats.1"),
        &p("real/dlm2-6.1/n1/glstats.2"),
        "--limit",
        "0",
    ]);
    let t = |n: u32| -> f64 {
        std::fs::read_to_string(testdata::path(&format!("real/dlm2-6.1/n1/time.{n}")))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let secs = v["delta"]["seconds"].as_f64().unwrap();
    assert!((secs - (t(2) - t(1))).abs() < 1e-6);
    let g = &v["delta"]["glocks"][0];
    let d = g["dcount"].as_f64().unwrap();
    assert!((g["dcount_per_s"].as_f64().unwrap() - d / secs).abs() < 1e-9);
}

#[test]
fn trace_distributions() {
    let v = stats(&[
        "--trace",
        &p("real/dlm2-6.1/n2/trace_pipe.txt.xz"),
        "--limit",
        "5",
    ]);
    let tr = &v["trace"];
    let total: u64 = elements(&tr["types"])
        .map(|t| t["all"]["count"].as_u64().unwrap())
        .sum();
    let text = testdata::text("real/dlm2-6.1/n2/trace_pipe.txt.xz");
    assert_eq!(
        total,
        text.lines()
            .filter(|l| l.contains("gfs2_glock_lock_time:"))
            .count() as u64
    );
    let g = &tr["glocks"][0];
    for k in ["glock", "count", "p50_ns", "p99_ns", "max_ns"] {
        assert!(g.get(k).is_some(), "missing {k}");
    }
    let p99: Vec<u64> = elements(&tr["glocks"])
        .map(|g| g["p99_ns"].as_u64().unwrap())
        .collect();
    assert!(p99.windows(2).all(|w| w[0] >= w[1]));
}

/// A trace cut short gives the distributions of the lock times before the cut, and says
/// where the reading stopped (it gave nothing but `premature eof`).
#[test]
fn a_trace_cut_short_gives_what_it_holds() {
    let scratch = tempfile::tempdir().unwrap();
    let cut = scratch.path().join("trace_pipe.txt.xz");
    let xz = std::fs::read(testdata::path("real/dlm2-6.1/n2/trace_pipe.txt.xz")).unwrap();
    std::fs::write(&cut, &xz[..xz.len() / 2]).unwrap();
    let mut held = Vec::new();
    let read = std::io::Read::read_to_end(&mut glockparse::input::open(&cut).unwrap(), &mut held);
    assert!(read.is_err());
    let text = String::from_utf8_lossy(&held);
    let whole: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .collect();
    let o = Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(["stats", "--json", "--trace"])
        .arg(&cut)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("premature eof (after line {})", whole.len())),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let total: u64 = elements(&v["trace"]["types"])
        .map(|t| t["all"]["count"].as_u64().unwrap())
        .sum();
    let held_lock_times = whole
        .iter()
        .filter(|l| l.contains("gfs2_glock_lock_time:"))
        .count();
    assert_eq!(total, held_lock_times as u64);
}

#[test]
fn not_a_stats_file_is_named() {
    let o = Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(["stats", &p("real/dlm2-6.1/n1/glocks.1")])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("neither a glstats nor an sbstats file"));
}

/// Each `--trace` file is read apart, as one node's: a reply is classified by its own
/// trace's previous reply and state change, never by another node's. So two nodes' traces
/// read together give what each gives alone, added up: the classification counts, and each
/// glock's samples. On the 6.12 hand-off capture, reading n2's replies against n1's last
/// ones classified 15 of them by another node's statistics.
#[test]
fn each_trace_is_read_apart() {
    let traces = [
        p("real/dlmev612/n1/trace_pipe.txt.xz"),
        p("real/dlmev612/n2/trace_pipe.txt.xz"),
    ];
    let one = |t: &str| stats(&["--trace", t, "--limit", "0"]);
    let alone = [one(&traces[0]), one(&traces[1])];
    let both = stats(&["--trace", &traces[0], "--trace", &traces[1], "--limit", "0"]);
    for k in [
        "classified_by_stats",
        "classified_by_flags",
        "unclassified",
        "negative_tdiff",
    ] {
        let sum: u64 = alone.iter().map(|v| v["trace"][k].as_u64().unwrap()).sum();
        assert_eq!(both["trace"][k].as_u64().unwrap(), sum, "{k}");
    }
    let samples = |v: &serde_json::Value, class: &str| {
        let mut m = std::collections::BTreeMap::<(String, String), u64>::new();
        for g in elements(&v["trace"]["glocks"]) {
            let key = (g["fs"].to_string(), g["glock"].to_string());
            *m.entry(key).or_default() += g[class]["count"].as_u64().unwrap();
        }
        m
    };
    for class in ["all", "blocking", "nonblocking"] {
        let mut sum = samples(&alone[0], class);
        for (k, n) in samples(&alone[1], class) {
            *sum.entry(k).or_default() += n;
        }
        assert_eq!(samples(&both, class), sum, "{class}");
    }
    assert!(both["trace"]["classified_by_stats"].as_u64().unwrap() > 0);
    // No capture beside them names the device's filesystem.
    assert_eq!(both["trace"]["filesystems"], serde_json::json!(["254,0"]));
}

/// Two alike GFS2 filesystems of the same nodes, whose hot files are one inode number, so
/// the nodes' traces hold two filesystems' glock `2/1231`. `stats --trace` keeps each
/// filesystem's apart, by the lock table the trace's capture gives the device its events
/// name: each (filesystem, glock) has exactly its own `gfs2_glock_lock_time` lines, and
/// each filesystem's round trips are those `glk analyze --fs` finds for it (a route of
/// its own).
#[test]
fn two_filesystems_are_kept_apart_by_lock_table() {
    let dir = "real/two-filesystems-6.12";
    let traces: Vec<String> = ["n1", "n2"]
        .iter()
        .map(|n| p(&format!("{dir}/{n}/lab_data/{n}/trace_pipe.txt.xz")))
        .collect();
    let mut raw = std::collections::BTreeMap::<(String, String), u64>::new();
    for n in ["n1", "n2"] {
        let table_of = common::two_fs_tables(n);
        let text = testdata::text(&format!("{dir}/{n}/lab_data/{n}/trace_pipe.txt.xz"));
        for l in text.lines() {
            if let Some(body) = l.split("gfs2_glock_lock_time: ").nth(1) {
                let dev = body.split(' ').next().unwrap();
                let key = (table_of[dev].clone(), common::glock_of_gfs2(l));
                *raw.entry(key).or_default() += 1;
            }
        }
    }
    let v = stats(&["--trace", &traces[0], "--trace", &traces[1], "--limit", "0"]);
    let tr = &v["trace"];
    let got: std::collections::BTreeMap<(String, String), u64> = elements(&tr["glocks"])
        .map(|g| {
            let key = (common::str_of(g, "fs"), common::str_of(g, "glock"));
            (key, g["all"]["count"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(got, raw);
    // The same glock in both filesystems.
    let hot: Vec<&(String, String)> = raw.keys().filter(|(_, g)| g == "2/1231").collect();
    assert_eq!(hot.len(), 2, "{raw:?}");
    // Each filesystem's, as glk analyze reads it alone.
    let tables = ["lab:data", "lab:gfs"];
    assert_eq!(tr["filesystems"], serde_json::json!(tables));
    for table in tables {
        let a = common::analyze_fs(table, &[format!("{dir}/n1"), format!("{dir}/n2")]);
        let mine: Vec<&serde_json::Value> = elements(&tr["types"])
            .filter(|t| common::str_of(t, "fs") == table)
            .collect();
        let theirs: Vec<&serde_json::Value> = elements(&a["slow_dlm_types"]).collect();
        assert_eq!(mine.len(), theirs.len(), "{table}");
        for (m, t) in mine.iter().zip(&theirs) {
            assert_eq!(m["type"], t["type"], "{table}");
            for (k, class) in [("count", "all"), ("blocking_count", "blocking")] {
                assert_eq!(m[class]["count"], t[k], "{table} {k}");
            }
            assert_eq!(m["nonblocking"]["count"], t["nonblocking_count"], "{table}");
            for k in ["p50_ns", "p99_ns", "max_ns"] {
                assert_eq!(m["all"][k], t[k], "{table} {k}");
            }
        }
    }
    // The text names each row's filesystem.
    let text = common::glk_text(&["stats", "--trace", &traces[0], "--trace", &traces[1]]);
    for table in tables {
        let n = raw[&(table.to_string(), "2/1231".to_string())];
        let row = format!("2/1231 {table} all {n} ");
        assert!(
            text.lines().any(|l| l
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .starts_with(&row)),
            "{row}: {text}"
        );
    }
}

/// Device numbers are a node's own: in the loop fixture n2 mounts `lab:data` through a loop
/// device, `7,0` there and `254,2` on n1. The nodes' round trips of it join by lock table:
/// each filesystem's are exactly the lines of its devices on each node (by `mountinfo`),
/// and those `glk analyze --fs` reads for it; read out of their captures, by device, they
/// stay three.
#[test]
fn traces_of_nodes_with_other_device_numbers_join_by_lock_table() {
    let dir = "real/two-filesystems-loop-6.12";
    let trace = |n: &str| format!("{dir}/{n}/lab_data/{n}/trace_pipe.txt.xz");
    let mut raw = std::collections::BTreeMap::<String, u64>::new();
    for n in ["n1", "n2"] {
        let mountinfo = testdata::text(&format!("{dir}/{n}/lab_data/{n}/mountinfo"));
        let table_of: std::collections::BTreeMap<String, String> = mountinfo
            .lines()
            .filter(|l| l.contains(" - gfs2 "))
            .map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                (w[2].replace(':', ","), format!("lab:{}", &w[4][1..]))
            })
            .collect();
        for l in testdata::text(&trace(n)).lines() {
            if let Some(body) = l.split("gfs2_glock_lock_time: ").nth(1) {
                *raw.entry(table_of[body.split(' ').next().unwrap()].clone())
                    .or_default() += 1;
            }
        }
    }
    let traces = [p(&trace("n1")), p(&trace("n2"))];
    let v = stats(&["--trace", &traces[0], "--trace", &traces[1], "--limit", "0"]);
    let tr = &v["trace"];
    assert_eq!(
        tr["filesystems"],
        serde_json::json!(["lab:data", "lab:gfs"])
    );
    for (table, n) in &raw {
        let mine: u64 = elements(&tr["types"])
            .filter(|t| common::str_of(t, "fs") == *table)
            .map(|t| t["all"]["count"].as_u64().unwrap())
            .sum();
        assert_eq!(mine, *n, "{table}");
        let a = common::analyze_fs(table, &[format!("{dir}/n1"), format!("{dir}/n2")]);
        let theirs: u64 = elements(&a["slow_dlm_types"])
            .map(|t| common::u64_of(t, "count"))
            .sum();
        assert_eq!(theirs, *n, "{table}");
    }
    assert_eq!(raw["lab:data"], 130 + 143);
    // Out of their captures nothing names the devices' filesystems.
    let scratch = tempfile::tempdir().unwrap();
    let alone: Vec<String> = ["n1", "n2"]
        .iter()
        .zip(&traces)
        .map(|(n, t)| {
            let to = scratch.path().join(format!("{n}.txt.xz"));
            std::fs::copy(t, &to).unwrap();
            to.display().to_string()
        })
        .collect();
    let v = stats(&["--trace", &alone[0], "--trace", &alone[1], "--limit", "0"]);
    assert_eq!(
        v["trace"]["filesystems"],
        serde_json::json!(["7,0", "254,1", "254,2"])
    );
}
