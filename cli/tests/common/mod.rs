//! Helpers shared by glk's integration tests (each test file uses a part of them).
#![allow(dead_code)]

/// A fixture's text, decompressed (`rel` below the fixtures folder).
pub fn fixture_text(rel: &str) -> String {
    testdata::text(rel)
}

/// The glock of a gfs2 trace line: `glock 2:266268` → `2/4101c`.
pub fn glock_of_gfs2(line: &str) -> String {
    testdata::trace_glock(line)
        .parse::<glockparse::GlockId>()
        .unwrap()
        .to_string()
}

/// `glk ARGS`, which must succeed, and its standard output as one JSON document.
pub fn glk_json<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> serde_json::Value {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}
