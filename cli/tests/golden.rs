//! The analysis reports on the real captures must not change when its internals do: each
//! is compared with the golden report in testdata/golden (see its README).

mod common;

use std::io::Read;
use std::process::Command;

fn golden(name: &str) -> serde_json::Value {
    let p = testdata::golden_dir().join(format!("analyze-{name}.json.xz"));
    let mut s = String::new();
    glockparse::input::open(&p)
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

/// The first place two JSON values differ, as a path.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &format!("{at}.{k}")),
                _ => Some(format!("{at}.{k}: present on one side only")),
            })
        }
        (Array(x), Array(y)) => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]")))
            .or_else(|| {
                (x.len() != y.len()).then(|| format!("{at}: {} vs {} entries", x.len(), y.len()))
            }),
        _ => (a != b).then(|| format!("{at}: {a} vs {b}")),
    }
}

fn check(name: &str, args: &[std::path::PathBuf]) {
    let mut all = vec![std::ffi::OsString::from("analyze")];
    all.extend(args.iter().map(|a| a.as_os_str().to_owned()));
    all.extend(["--json", "--limit", "0"].map(std::ffi::OsString::from));
    let got = common::glk_json(&all);
    if let Some(d) = first_difference(&got, &golden(name), "") {
        panic!("{name}: the report differs from testdata/golden at {d}");
    }
}

#[test]
fn two_node_capture() {
    check("dlm2-6.1", &[testdata::path("real/dlm2-6.1")]);
}

#[test]
fn one_node_capture() {
    check("nolock-6.1", &[testdata::path("real/nolock-6.1")]);
}

#[test]
fn flock_deadlock() {
    check(
        "flock-deadlock-6.12",
        &[testdata::path("real/flock-deadlock-6.12/deadlock")],
    );
}

#[test]
fn rename_deadlock() {
    let d = testdata::path("public/cluster-devel-2019-rename-deadlock");
    check(
        "rename-deadlock",
        &[
            d.join("deadlock-host018.glocks"),
            d.join("deadlock-host019.glocks"),
        ],
    );
}

#[test]
fn trace_files_out_of_time_order_give_the_same_answers() {
    // n1's trace cut in two, the later half in the file read first: the node is sorted by
    // time in memory and every answer is the one of the whole trace.
    let text = common::fixture_text("real/dlm2-6.1/n1/trace_pipe.txt.xz");
    let lines: Vec<&str> = text.lines().collect();
    let (first, second) = lines.split_at(lines.len() / 2);
    let dir = tempfile::tempdir().unwrap();
    let (whole, split) = (dir.path().join("whole/n1"), dir.path().join("split/n1"));
    for d in [&whole, &split] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(whole.join("trace_pipe.txt"), &text).unwrap();
    std::fs::write(split.join("trace_pipe.a"), second.join("\n") + "\n").unwrap();
    std::fs::write(split.join("trace_pipe.b"), first.join("\n") + "\n").unwrap();
    let report = |d: &std::path::Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_glk"))
            .arg("analyze")
            .arg(d)
            .args(["--json", "--limit", "0"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_object_mut().unwrap().remove("nodes");
        let input = v.as_object_mut().unwrap().remove("input").unwrap();
        (v, input)
    };
    let ((a, ia), (b, ib)) = (report(&whole), report(&split));
    assert_eq!(ia["traces"][0]["sorted_in_memory"], false);
    assert_eq!(ib["traces"][0]["sorted_in_memory"], true);
    assert_eq!(ia["traces"][0]["events"], ib["traces"][0]["events"]);
    assert!(a["hold_wait"].as_array().is_some_and(|h| !h.is_empty()));
    if let Some(d) = first_difference(&a, &b, "") {
        panic!("out-of-order files changed the report at {d}");
    }
}
