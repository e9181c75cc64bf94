//! Every glocks-like fixture parses; expected counts are computed here independently of
//! the parser, with plain string tests on the raw lines.

use std::path::Path;

use glockparse::{glockfd, Diagnostics, Glock, GlockReader};

fn parse(path: &Path) -> (Vec<Glock>, Diagnostics) {
    let mut r = GlockReader::open(path).unwrap();
    let v: Vec<Glock> = r.by_ref().collect();
    (v, r.into_diagnostics())
}

fn text(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

/// Lines whose text after any kernel-log prefix starts with `tag` once whitespace is
/// trimmed.
fn count_tag(text: &str, tag: &str) -> usize {
    text.lines()
        .map(|l| match l.find("fsid=") {
            Some(i) => l[i..].split_once(": ").map_or("", |(_, r)| r),
            None => l,
        })
        .filter(|l| l.trim_start().starts_with(tag))
        .count()
}

fn check_clean(path: &Path) -> Vec<Glock> {
    let (g, d) = parse(path);
    let t = text(path);
    assert!(d.is_clean(), "{}: {:?}", path.display(), d.first_errors);
    assert_eq!(g.len(), count_tag(&t, "G:"), "{}", path.display());
    let holders: usize = g.iter().map(|g| g.holders.len()).sum();
    assert_eq!(holders, count_tag(&t, "H:"), "{}", path.display());
    let objects = g
        .iter()
        .filter(|g| g.inode.is_some() || g.rgrp.is_some())
        .count();
    assert_eq!(
        objects,
        count_tag(&t, "I:") + count_tag(&t, "R:"),
        "{}",
        path.display()
    );
    g
}

#[test]
fn real_glocks_files_parse_without_errors() {
    let files = testdata::files("real", |n| n.starts_with("glocks."));
    // nolock-6.1, dlm2-6.1 (two nodes), flock-deadlock-6.1 and -6.12 (each wait: 2 nodes x
    // 2, deadlock: 2 x 3), dlmev612 (2 x 7), handoff-6.1 and -6.12 (each 2 x 4),
    // doctor-deadlock-6.12 (2 x 2), support-6.12, support-5.10, support-deadlock-6.12 and
    // trace-dat-6.12 (each glk capture: 2 x 2), deadlock-family-5.10, -6.1, -6.12 and -6.12-fdlocks (each
    // capture 2 x 3 and late 2 x 2; their plain copies are bare `glocks`), cluster-mode-5.10
    // and -6.12 (each the cluster capture 2 x 2, each node's own 2 x 2),
    // support-withdraw-6.12 (glk capture: 2 x 1), mount-holds-5.10 (glk capture: 2 x 2),
    // two-filesystems-6.12 and two-filesystems-loop-6.12 (each glk capture of two
    // filesystems: 2 x 2 x 3).
    assert_eq!(
        files.len(),
        3 + 6
            + 6
            + 2 * (4 + 6)
            + 14
            + 2 * 8
            + 4
            + 4 * 4
            + 4 * (6 + 4)
            + 2 * (2 * 4)
            + 2
            + 4
            + 2 * 12
    );
    for f in files {
        let g = check_clean(&f);
        assert!(!g.is_empty());
        // Real 5.10, 6.1 and 6.12 kernels print p: on every G: line.
        assert!(g.iter().all(|g| g.nrpages.is_some() && g.extra.is_empty()));
    }
}

#[test]
fn dlm_phase2_flock_waiter_is_seen() {
    // Phase 2: n1 holds the flock EX, n2 waits for it.
    let (n1, _) = parse(&testdata::path("real/dlm2-6.1/n1/glocks.4"));
    let (n2, _) = parse(&testdata::path("real/dlm2-6.1/n2/glocks.4"));
    let flock_n1: Vec<&Glock> = n1.iter().filter(|g| g.id.gltype == 6).collect();
    let flock_n2: Vec<&Glock> = n2.iter().filter(|g| g.id.gltype == 6).collect();
    assert_eq!(flock_n1.len(), 1);
    assert_eq!(flock_n2.len(), 1);
    assert_eq!(flock_n1[0].id, flock_n2[0].id);
    assert!(flock_n1[0].demote_requested());
    assert_eq!(flock_n1[0].granted_count(), 1);
    assert_eq!(flock_n2[0].waiter_count(), 1);
}

#[test]
fn public_glocks_dumps_parse_without_errors() {
    let mut files = testdata::files("public", |n| n.ends_with(".glocks") || n == "glocks");
    files.retain(|f| !f.to_string_lossy().contains("annotated"));
    assert_eq!(files.len(), 8);
    for f in &files {
        check_clean(f);
    }
    let pcp = check_clean(&testdata::path(
        "public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/glocks",
    ));
    // PCP's qa/654.out: total 33, shared 22, unlocked 8, exclusive 3.
    use glockparse::LockState::*;
    let count = |s| pcp.iter().filter(|g| g.state == s).count();
    assert_eq!(
        (pcp.len(), count(Shared), count(Unlocked), count(Exclusive)),
        (33, 22, 8, 3)
    );
    assert_eq!(pcp.iter().filter(|g| g.flags.contains('o')).count(), 23);
    assert_eq!(pcp.iter().filter(|g| g.flags.contains('b')).count(), 21);
    assert_eq!(pcp.iter().filter(|g| g.flags.contains('L')).count(), 4);
}

#[test]
fn kernel_log_dumps_parse() {
    let files = testdata::files("public/dmesg-glock-dumps", |n| n.ends_with(".txt"));
    assert_eq!(files.len(), 19);
    for f in files {
        let (g, d) = parse(&f);
        let t = text(&f);
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("orphan-holder") {
            // Excerpts that start mid-dump: the holder has no glock. Really malformed.
            assert_eq!((g.len(), d.errors), (0, 1), "{name}");
            assert!(d.first_errors[0].message.contains("outside a glock record"));
            continue;
        }
        assert!(d.is_clean(), "{name}: {:?}", d.first_errors);
        assert_eq!(g.len(), count_tag(&t, "G:"), "{name}");
        assert!(g.iter().all(|g| g.fs.is_some()), "{name}");
    }
    let (g, _) = parse(&testdata::path(
        "public/dmesg-glock-dumps/dmesg-syzbot-glock_put2-20251104.txt",
    ));
    assert_eq!(g[0].id.number, u64::MAX);
    assert_eq!(g[0].refs, -128);
    let (g, _) = parse(&testdata::path(
        "public/dmesg-glock-dumps/dmesg-xenserver-iput-bug-20200608.txt",
    ));
    assert_eq!(g[0].rgrp.as_ref().unwrap().addr, 0x402b1);
}

#[test]
fn glocktop_outputs_are_imported() {
    let mut files = testdata::files("real", |n| n.starts_with("glocktop."));
    files.push(testdata::path(
        "public/glocktop-manpage/glocktop-manpage.txt",
    ));
    assert_eq!(files.len(), 5);
    for f in files {
        let (g, d) = parse(&f);
        let t = text(&f);
        assert!(d.is_clean(), "{}: {:?}", f.display(), d.first_errors);
        assert_eq!(g.len(), count_tag(&t, "G:"), "{}", f.display());
        assert_eq!(
            g.iter().map(|g| g.holders.len()).sum::<usize>(),
            count_tag(&t, "H:")
        );
    }
    let (g, _) = parse(&testdata::path(
        "public/glocktop-manpage/glocktop-manpage.txt",
    ));
    let fs: std::collections::BTreeSet<_> = g.iter().filter_map(|g| g.fs.clone()).collect();
    assert_eq!(fs.len(), 2);
}

#[test]
fn annotated_mail_text_reports_exactly_the_prose_lines() {
    for host in ["host018", "host019"] {
        let f = testdata::path(&format!(
            "public/cluster-devel-2019-rename-deadlock/deadlock-{host}.annotated.txt"
        ));
        let t = text(&f);
        let prose: Vec<usize> = t
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                let l = l.trim_start();
                !l.is_empty() && !["G:", "H:", "I:"].iter().any(|tag| l.starts_with(tag))
            })
            .map(|(i, _)| i + 1)
            .collect();
        let (g, d) = parse(&f);
        let reported: Vec<usize> = d.first_errors.iter().map(|e| e.line as usize).collect();
        assert_eq!(reported, prose, "{host}");
        assert_eq!(g.len(), count_tag(&t, "G:"));
        // The author's arrows are kept as unknown tokens.
        assert!(g
            .iter()
            .all(|g| g.extra.len() == 1 && g.extra[0].key.starts_with("<-")));
    }
}

#[test]
fn glockfd_files() {
    let files = testdata::files("", |n| {
        n.starts_with("glockfd") || n == "glockfd-commit-example.txt"
    });
    assert!(files.len() >= 13);
    for f in files {
        let (v, d) = glockfd::read_all(std::fs::File::open(&f).unwrap(), "x");
        assert!(d.is_clean());
        assert_eq!(
            v.len(),
            text(&f).lines().filter(|l| !l.trim().is_empty()).count()
        );
    }
    let (v, _) = glockfd::read_all(
        std::fs::File::open(testdata::path("real/dlm2-6.1/n1/glockfd.3")).unwrap(),
        "x",
    );
    // Each open file gives its iopen glock and, holding a flock, the flock glock.
    assert_eq!(v.len(), 4);
    assert_eq!(v.iter().filter(|r| r.glock.gltype == 6).count(), 2);
}

#[test]
fn compressed_fixture_matches_plain() {
    use std::io::Write;
    let plain = testdata::path("real/nolock-6.1/glocks.2");
    let raw = std::fs::read(&plain).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    let encoded = [
        ("glocks.gz", gz.finish().unwrap()),
        ("glocks.zst", zstd::stream::encode_all(&raw[..], 3).unwrap()),
    ];
    let (want, _) = parse(&plain);
    for (name, bytes) in encoded {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let (got, d) = parse(&p);
        assert!(d.is_clean());
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn dlm_lock_dumps_parse_and_name_glocks() {
    let files = testdata::files("real/dlm2-6.1", |n| n.starts_with("dlm_locks."));
    assert_eq!(files.len(), 12);
    for f in files {
        let (locks, d) = glockparse::dlm_locks::read(std::fs::File::open(&f).unwrap(), "x");
        assert!(d.is_clean(), "{}: {:?}", f.display(), d.first_errors);
        let t = text(&f);
        assert_eq!(
            locks.len(),
            t.lines().skip(1).filter(|l| !l.trim().is_empty()).count()
        );
        // Every resource of a gfs2 lockspace is a glock name.
        assert!(locks.iter().all(|l| l.glock.is_some()));
    }
    // Phase 2 on the master n1: its own EX flock (pid 866) and n2's waiting copy (pid 860).
    let (locks, _) = glockparse::dlm_locks::read(
        std::fs::File::open(testdata::path("real/dlm2-6.1/n1/dlm_locks.4")).unwrap(),
        "x",
    );
    let flock: Vec<_> = locks
        .iter()
        .filter(|l| l.glock == Some(glockparse::GlockId::new(6, 0x60af5)))
        .collect();
    assert_eq!(flock.len(), 2);
    assert!(flock
        .iter()
        .any(|l| !l.is_master_copy() && l.pid == 866 && l.grmode == glockparse::DlmMode::EX));
    assert!(flock
        .iter()
        .any(|l| l.owner_nodeid(Some(1)) == Some(2) && l.pid == 860 && l.status.is_waiting()));
}
