//! glstats, sbstats and DLM lock-dump parsing never panics on arbitrary or mutated input.

use proptest::prelude::*;

fn sample(rel: &str) -> Vec<u8> {
    let mut v = std::fs::read(testdata::path(rel)).unwrap();
    v.truncate(6000);
    v
}

fn mutate(mut t: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    for &(pos, byte, op) in edits {
        if t.is_empty() {
            break;
        }
        let p = pos % t.len();
        match op {
            0 => t[p] = byte,
            1 => t.truncate(p),
            _ => t.insert(p, byte),
        }
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let _ = gfs2stats::glstats::read(&bytes[..], "x");
        let _ = gfs2stats::sbstats::read(&bytes[..], "x");
        let _ = glockparse::dlm_locks::read(&bytes[..], "x");
    }

    #[test]
    fn mutated_real_files(edits in proptest::collection::vec((0usize..6000, any::<u8>(), 0u8..3), 1..20)) {
        let (v, _) = gfs2stats::glstats::read(&mutate(sample("real/dlm2-6.1/n1/glstats.2"), &edits)[..], "x");
        prop_assert!(v.len() <= 6000);
        let _ = gfs2stats::sbstats::read(&mutate(sample("public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/sbstats"), &edits)[..], "x");
        let _ = glockparse::dlm_locks::read(&mutate(sample("real/dlm2-6.1/n1/dlm_locks.4"), &edits)[..], "x");
    }
}
