//! The parser never panics: arbitrary bytes, and real lines with bytes flipped, cut or
//! duplicated. Every error it reports names a line that exists.

use glockparse::{glockfd, GlockReader};
use proptest::prelude::*;

fn run(bytes: &[u8]) {
    let lines = bytes.split(|&b| b == b'\n').count() as u64;
    let mut r = GlockReader::new(bytes, "fuzz");
    for g in r.by_ref() {
        assert!(g.line >= 1 && g.line <= lines);
    }
    let d = r.into_diagnostics();
    assert!(d
        .first_errors
        .iter()
        .all(|e| e.line >= 1 && e.line <= lines));
    assert!(d.records + d.errors + d.skipped + d.ignored <= d.lines + d.records);
    let _ = glockfd::read_all(bytes, "fuzz");
}

fn real_lines() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for f in [
        "real/dlm2-6.1/n1/glocks.4",
        "public/abegorov-linuxhl5-gfs2/gfs01-20250402.glocks",
        "public/dmesg-glock-dumps/dmesg-syzbot-do_xmote-20251014.txt",
        "real/dlm2-6.1/n1/glocktop.4",
    ] {
        let t = std::fs::read(testdata::path(f)).unwrap();
        out.extend(t.split(|&b| b == b'\n').take(400).map(<[u8]>::to_vec));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        run(&bytes);
    }

    #[test]
    fn mutated_real_lines(
        picks in proptest::collection::vec((0usize..1600, 0usize..200, any::<u8>(), 0u8..4), 1..40)
    ) {
        let lines = real_lines();
        let mut text = Vec::new();
        for (i, pos, byte, op) in picks {
            let l = testdata::mutate_line(lines[i % lines.len()].clone(), pos, byte, op);
            text.extend_from_slice(&l);
            text.push(b'\n');
        }
        run(&text);
    }
}
