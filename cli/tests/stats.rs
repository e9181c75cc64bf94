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
