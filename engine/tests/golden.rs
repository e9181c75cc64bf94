//! The engine's reports on the real captures must not change when its internals do: each
//! is compared with the golden report in testdata/golden (see its README).

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
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .arg("analyze")
        .args(args)
        .args(["--json", "--limit", "0"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
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
