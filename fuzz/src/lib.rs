//! Mutation fuzzing of every parser glk has, seeded from the real fixtures: each target
//! takes bytes, runs one parser on them and checks what it promises (no panic, every error
//! names a line that exists, no byte lost by the block reader). [`run`] drives a target for
//! a number of executions and catches panics, keeping each panicking input.
//!
//! The mutations are those real damage makes: bytes flipped, set to NUL or to a separator,
//! inserted or deleted; lines cut, duplicated, repeated, swapped and spliced from another
//! file; numbers replaced by huge or negative ones; and the whole input truncated. It is
//! not coverage-guided; it is seeded from every kind of real file and run for millions of
//! executions (`glk-fuzz`, `bench/README.md` has the figures).

pub mod cli;

use std::io::Read;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// A small, fast, seedable random number generator (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value; 0 is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// One fuzz target: a parser and the real files its inputs start from.
pub struct Target {
    /// The name `glk-fuzz` knows it by.
    pub name: &'static str,
    /// Fixtures (below `testdata/fixtures`) whose contents seed the mutations.
    pub seeds: &'static [&'static str],
    /// Runs the parser on one input; panics on a broken promise.
    pub run: fn(&[u8]),
}

fn line_count(bytes: &[u8]) -> u64 {
    bytes.split(|&b| b == b'\n').count() as u64
}

fn check_lines(d: &glockparse::Diagnostics, bytes: &[u8]) {
    let lines = line_count(bytes);
    for e in &d.first_errors {
        assert!(
            e.line >= 1 && e.line <= lines,
            "error names line {} of {lines}",
            e.line
        );
        assert!(
            !e.text.chars().any(char::is_control),
            "control character in {:?}",
            e.text
        );
    }
}

fn glocks(bytes: &[u8]) {
    let mut r = glockparse::GlockReader::new(bytes, "fuzz");
    let lines = line_count(bytes);
    let mut all = Vec::new();
    for g in r.by_ref() {
        assert!(g.line >= 1 && g.line <= lines);
        let _ = g.id.to_string();
        let _ = g.flags.words();
        all.push(g);
    }
    let d = r.into_diagnostics();
    check_lines(&d, bytes);
    // Skimming reads the same records with the same diagnostics.
    let mut r = glockparse::GlockReader::new(bytes, "fuzz");
    let mut k = 0;
    r.for_each_brief(|mut e| {
        assert_eq!(
            e.brief,
            glockparse::Brief::of(&all[k]),
            "brief of record {k}"
        );
        assert_eq!(e.glock(), &all[k], "record {k}");
        k += 1;
    });
    assert_eq!(k, all.len());
    assert_eq!(r.into_diagnostics(), d);
}

fn glockfd(bytes: &[u8]) {
    let (_, d) = glockparse::glockfd::read_all(bytes, "fuzz");
    check_lines(&d, bytes);
}

fn dlm_locks(bytes: &[u8]) {
    let (locks, d) = glockparse::dlm_locks::read(bytes, "fuzz");
    for l in &locks {
        let _ = l.owner_nodeid(Some(1));
    }
    check_lines(&d, bytes);
}

fn glstats(bytes: &[u8]) {
    let (stats, d) = gfs2stats::glstats::read(bytes, "fuzz");
    for s in &stats {
        let _ = gfs2stats::metrics::derive(s);
    }
    let _ = gfs2stats::metrics::deltas(&stats, &stats, 1.0);
    check_lines(&d, bytes);
}

fn sbstats(bytes: &[u8]) {
    let (s, d) = gfs2stats::sbstats::read(bytes, "fuzz");
    for t in s.types.values() {
        let _ = t.combined();
    }
    check_lines(&d, bytes);
}

fn trace_lines(bytes: &[u8]) {
    let mut lt = gfs2stats::lock_time::LockTimes::default();
    for line in bytes.split(|&b| b == b'\n') {
        // The reading of the usual layout gives what the general rules give.
        assert_eq!(
            traceparse::line::parse(line),
            traceparse::line::parse_general(line),
            "{:?}",
            String::from_utf8_lossy(line)
        );
        if let Ok(traceparse::Decoded::Gfs2 { event, .. }) = traceparse::decode_line(line) {
            lt.add(&event);
            let _ = format!("{event:?}");
        }
    }
    lt.finish();
}

/// A reader that hands out its bytes in pieces of varying size, as a pipe does.
struct Pieces<'a> {
    data: &'a [u8],
    rng: Rng,
}

impl Read for Pieces<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = (1 + self.rng.below(300))
            .min(out.len())
            .min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn trace_reader(bytes: &[u8]) {
    // 'static for the reader thread.
    let data: &'static [u8] = Box::leak(bytes.to_vec().into_boxed_slice());
    let src = Pieces {
        data,
        rng: Rng::new(bytes.len() as u64),
    };
    let r = traceparse::BlockReader::stream(Box::new(src));
    let mut got = Vec::with_capacity(bytes.len());
    while let Some(b) = r.next_block() {
        got.extend_from_slice(&b);
        r.recycle(b);
    }
    r.finish().expect("reading from memory cannot fail");
    assert!(got == bytes, "the block reader lost or changed bytes");
    // SAFETY: `data` was leaked above and nothing refers to it any more (the thread ended).
    unsafe { drop(Box::from_raw(data as *const [u8] as *mut [u8])) };
}

fn bundle_tar(bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let tarball = dir.path().join("capture.tar");
    std::fs::write(&tarball, bytes).expect("writing the input");
    if let Ok(caps) = bundle::discover(&[tarball]) {
        for n in &caps.nodes {
            for s in &n.snapshots {
                if let Some(g) = s.path(bundle::FileKind::Glocks) {
                    assert!(
                        g.starts_with(std::env::temp_dir()),
                        "extracted outside: {}",
                        g.display()
                    );
                }
            }
        }
    }
}

/// Every target.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "glocks",
            seeds: &[
                "real/dlm2-6.1/n1/glocks.4",
                "public/abegorov-linuxhl5-gfs2/gfs01-20250402.glocks",
                "public/dmesg-glock-dumps/dmesg-syzbot-do_xmote-20251014.txt",
                "real/dlm2-6.1/n1/glocktop.4",
                "public/cluster-devel-2019-rename-deadlock/deadlock-host018.glocks",
            ],
            run: glocks,
        },
        Target {
            name: "glockfd",
            seeds: &["real/dlm2-6.1/n1/glockfd.4"],
            run: glockfd,
        },
        Target {
            name: "dlm_locks",
            seeds: &[
                "real/dlm2-6.1/n1/dlm_locks.4",
                "real/dlm2-6.1/n2/dlm_locks.4",
            ],
            run: dlm_locks,
        },
        Target {
            name: "glstats",
            seeds: &["real/dlm2-6.1/n1/glstats.2"],
            run: glstats,
        },
        Target {
            name: "sbstats",
            seeds: &[
                "public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/sbstats",
                "real/dlm2-6.1/n1/sbstats.2",
            ],
            run: sbstats,
        },
        Target {
            name: "trace",
            seeds: &[
                "real/dlm2-6.1/n1/trace_pipe.txt.xz",
                "real/dlm2-6.1/n2/trace_pipe.txt.xz",
            ],
            run: trace_lines,
        },
        Target {
            name: "trace_reader",
            seeds: &["real/dlm2-6.1/n2/trace_pipe.txt.xz"],
            run: trace_reader,
        },
        Target {
            name: "bundle_tar",
            seeds: &["@tarball"],
            run: bundle_tar,
        },
    ]
}

/// A small capture tarball made from a real node directory (the `@tarball` seed).
fn seed_tarball() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for f in [
        "glocks.0",
        "glstats.0",
        "dlm_locks.0",
        "time.0",
        "glockfd.0",
    ] {
        let p = testdata::path(&format!("real/dlm2-6.1/n1/{f}"));
        let data = std::fs::read(&p).expect("a fixture");
        // The first lines only: a seed small enough for many executions.
        let cut: Vec<u8> = data
            .split_inclusive(|&c| c == b'\n')
            .take(40)
            .flatten()
            .copied()
            .collect();
        let mut h = tar::Header::new_gnu();
        h.set_size(cut.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, format!("n1/{f}"), &cut[..])
            .expect("in memory");
    }
    b.into_inner().expect("in memory")
}

/// The seed inputs of a target, decompressed, each cut to at most `max_lines` lines taken
/// at several places of the file.
pub fn seeds(t: &Target, max_lines: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for s in t.seeds {
        if *s == "@tarball" {
            out.push(seed_tarball());
            continue;
        }
        let mut text = Vec::new();
        let Ok(mut r) = glockparse::input::open(&testdata::path(s)) else {
            continue;
        };
        if r.read_to_end(&mut text).is_err() {
            continue;
        }
        let lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
        let step = (lines.len() / 8).max(1);
        for start in (0..lines.len()).step_by(step) {
            out.push(lines[start..(start + max_lines).min(lines.len())].concat());
        }
    }
    out
}

const INTERESTING: &[&[u8]] = &[
    b"\0",
    b"\n",
    b":",
    b" ",
    b"/",
    b"-",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"99999999999999999999999999",
    b"0x",
    b"\xff\xfe",
    b"\x1b[2J",
    b"G:",
    b" H:",
    b" I:",
    b"gfs2_glock_lock_time:",
    b"[000]",
];

/// Inputs grow no larger than this (a few megabytes are plenty to find what a size can).
const MAX_INPUT: usize = 4 << 20;

/// One mutated input from the seeds.
pub fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        if v.len() > MAX_INPUT {
            let keep = rng.below(MAX_INPUT);
            v.truncate(keep);
        }
        let len = v.len();
        let at = rng.below(len + 1);
        match rng.below(12) {
            0 if len > 0 => v[at.min(len - 1)] ^= 1 << rng.below(8),
            1 if len > 0 => v[at.min(len - 1)] = rng.next_u64() as u8,
            2 => {
                let s = INTERESTING[rng.below(INTERESTING.len())];
                v.splice(at..at, s.iter().copied());
            }
            3 if len > 0 => {
                let end = (at + 1 + rng.below(40)).min(len);
                v.drain(at.min(len - 1)..end);
            }
            4 => v.truncate(at),
            5 => {
                // Duplicate a line (or repeat it many times).
                let lines: Vec<&[u8]> = v.split_inclusive(|&c| c == b'\n').collect();
                if let Some(l) = lines.get(rng.below(lines.len())) {
                    let many = rng.below(10) == 0 && l.len() < 4096;
                    let times = if many { 200 } else { 1 };
                    let l = l.repeat(times);
                    v.splice(at..at, l);
                }
            }
            6 => {
                // Shuffle: swap two lines.
                let mut lines: Vec<Vec<u8>> = v
                    .split_inclusive(|&c| c == b'\n')
                    .map(<[u8]>::to_vec)
                    .collect();
                if lines.len() > 1 {
                    let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                    lines.swap(a, b);
                    v = lines.concat();
                }
            }
            7 => {
                // Splice from another seed.
                let o = &seeds[rng.below(seeds.len())];
                let from = rng.below(o.len() + 1);
                let to = (from + rng.below(400)).min(o.len());
                v.splice(at..at, o[from..to].iter().copied());
            }
            8 => {
                // Replace a number by a huge or negative one.
                if let Some(p) = v[at..].iter().position(u8::is_ascii_digit) {
                    let s = at + p;
                    let e = v[s..]
                        .iter()
                        .position(|c| !c.is_ascii_digit())
                        .map_or(v.len(), |q| s + q);
                    let n = INTERESTING[6 + rng.below(3)];
                    v.splice(s..e, n.iter().copied());
                }
            }
            9 => {
                // A long line.
                let n = 1 + rng.below(20_000);
                v.splice(at..at, std::iter::repeat_n(b'x', n));
            }
            10 if len > 0 => v.retain(|&c| c != b'\n' || rng.below(20) != 0),
            _ => v.insert(at, rng.next_u64() as u8),
        }
    }
    v
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Inputs run.
    pub executions: u64,
    /// Inputs that panicked, with the panic message (the first few are kept).
    pub panics: Vec<(Vec<u8>, String)>,
    /// Panics counted.
    pub panic_count: u64,
    /// Time taken.
    pub elapsed: Duration,
}

/// Runs `t` on `iterations` mutated inputs (or until `budget` is spent), from `seed`.
pub fn run(t: &Target, iterations: u64, budget: Option<Duration>, seed: u64) -> Report {
    let seeds = seeds(t, 48);
    assert!(!seeds.is_empty(), "{}: no seed file found", t.name);
    let mut rng = Rng::new(seed);
    let mut report = Report::default();
    let start = Instant::now();
    // Panics are caught and counted: silence the default hook's message meanwhile.
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    // The seeds themselves first, then mutations.
    let mut pending: Vec<Vec<u8>> = seeds.clone();
    while report.executions < iterations {
        if report.executions % 1024 == 0 && budget.is_some_and(|b| start.elapsed() >= b) {
            break;
        }
        let input = pending.pop().unwrap_or_else(|| mutate(&mut rng, &seeds));
        report.executions += 1;
        if let Err(e) = panic::catch_unwind(AssertUnwindSafe(|| (t.run)(&input))) {
            report.panic_count += 1;
            if report.panics.len() < 5 {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                report.panics.push((input, msg));
            }
        }
    }
    panic::set_hook(hook);
    report.elapsed = start.elapsed();
    report
}
