//! Helpers shared by the integration tests of glk and glk-engine (each test file uses a
//! part of them).
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
