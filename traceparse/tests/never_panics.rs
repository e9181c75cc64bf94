//! The trace decoder never panics: arbitrary bytes, and real trace lines with bytes
//! flipped, cut, inserted or duplicated.

use proptest::prelude::*;

/// A sample of every event kind, read once for all cases.
fn real_lines() -> &'static [Vec<u8>] {
    static LINES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    LINES.get_or_init(load)
}

fn load() -> Vec<Vec<u8>> {
    let s = testdata::text("real/dlm2-6.1/n1/trace_pipe.txt.xz");
    let mut seen = std::collections::BTreeMap::new();
    for l in s.lines() {
        let ev = l
            .split_whitespace()
            .find(|w| w.starts_with("gfs2_"))
            .unwrap_or("")
            .to_string();
        let v: &mut Vec<Vec<u8>> = seen.entry(ev).or_default();
        if v.len() < 20 {
            v.push(l.as_bytes().to_vec());
        }
    }
    seen.into_values().flatten().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = traceparse::decode_line(&bytes);
    }

    #[test]
    fn mutated_real_lines(i in 0usize..10_000, pos in 0usize..300, byte in any::<u8>(), op in 0u8..4) {
        let lines = real_lines();
        let l = testdata::mutate_line(lines[i % lines.len()].clone(), pos, byte, op);
        let _ = traceparse::decode_line(&l);
    }
}
