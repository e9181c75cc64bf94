//! A short run of every fuzz target and of the command line, in the test suite (the long
//! runs are `glk-fuzz`'s: figures in bench/README.md).

use std::time::Duration;

#[test]
fn every_parser_survives_mutated_real_inputs() {
    for t in fuzz::TARGETS {
        // Those that write and read files or whole captures per input run fewer.
        let slow = [
            "bundle_tar",
            "agent_stream",
            "collection",
            "trace_dat",
            "raw_pages",
        ];
        let n = if slow.contains(&t.name) { 300 } else { 3_000 };
        let r = fuzz::run(t, n, None, 7);
        assert_eq!(r.executions, n, "{}", t.name);
        assert!(
            r.panic_count == 0,
            "{}: {} panics, first: {:?}",
            t.name,
            r.panic_count,
            r.panics
                .first()
                .map(|(i, m)| (m, glockparse::quote::quote(i, 300)))
        );
    }
}

#[test]
fn the_command_line_never_panics_signals_or_hangs() {
    let Some(glk) = testdata::workspace_bin("glk") else {
        return testdata::skip(
            "the_command_line_never_panics_signals_or_hangs",
            "no glk binary beside this test (run cargo test --workspace)",
        );
    };
    if testdata::workspace_bin("glk-engine").is_none() {
        return testdata::skip(
            "the_command_line_never_panics_signals_or_hangs",
            "no glk-engine binary beside this test (run cargo test --workspace)",
        );
    }
    let keep = tempfile::tempdir().unwrap();
    // Two rounds of every kind of input.
    let r = fuzz::cli::run(&glk, 20, None, 11, Duration::from_secs(120), keep.path());
    assert!(r.runs >= 20, "{r:?}");
    assert!(r.failures.is_empty(), "{:#?}", r.failures);
}
