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

mod binary;
pub mod cli;
mod support;

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

/// Where seed inputs come from (paths below `testdata/fixtures`, compressed or not).
#[derive(Debug, Clone, Copy)]
pub enum Seed {
    /// A text file, cut into windows of lines taken at several places of it.
    Lines(&'static str),
    /// A file used whole: a binary format or a tarball, where lines mean nothing.
    Whole(&'static str),
    /// The member of a tarball whose path ends with the second string (a file of a sos
    /// report or of gfs2_lockcapture's output), cut into windows of lines.
    Member(&'static str, &'static str),
    /// A small capture tarball of a real node directory's first lines.
    CaptureTarball,
    /// A `glk agent` stream of the same files: a hello, a frame per file, a problem, the end.
    AgentStream,
}

/// One fuzz target: a parser and the real files its inputs start from.
pub struct Target {
    /// The name `glk-fuzz` knows it by.
    pub name: &'static str,
    /// The real inputs the mutations start from.
    pub seeds: &'static [Seed],
    /// Runs the parser on one input; panics on a broken promise.
    pub run: fn(&[u8]),
}

pub(crate) fn line_count(bytes: &[u8]) -> u64 {
    bytes.split(|&b| b == b'\n').count() as u64
}

pub(crate) fn check_lines(d: &glockparse::Diagnostics, bytes: &[u8]) {
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

/// What a remote node sends is not trusted: read as the gathering glk reads it (the
/// protocol's reader, each file given to the node's [`cluster::gather::NodeDir`]), it
/// writes only below that node's own directory, every error is quoted, and nothing is
/// left of a batch that did not end.
fn agent_stream(bytes: &[u8]) {
    use cluster::protocol::{self, Received};
    use cluster::session::FileSink;
    let quoted = |t: &str| assert!(!t.chars().any(char::is_control), "unquoted: {t:?}");
    let mut r = bytes;
    match protocol::read_hello(&mut r) {
        Ok(Some(_)) => {}
        Ok(None) => return,
        Err(e) => return quoted(&e.to_string()),
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut sink = cluster::gather::NodeDir::new(dir.path(), "n1");
    let mut order = protocol::FileOrder::default();
    let ended = loop {
        match protocol::read_frame(&mut r) {
            Ok(Some(Received::File(p, d, append))) => {
                // As `Session::receive` takes them: out of order, or not written, the
                // session ends.
                if let Err(e) = order
                    .next(&p, append)
                    .and_then(|()| sink.frame(&p, &d, append))
                {
                    quoted(&e);
                    break false;
                }
            }
            Ok(Some(Received::Problem(t))) => quoted(&t),
            Ok(Some(Received::End(_))) => break true,
            Ok(None) => break false,
            Err(e) => {
                quoted(&e.to_string());
                break false;
            }
        }
    };
    let kept = if ended {
        sink.finish().map_err(|e| quoted(&e)).is_ok()
    } else {
        sink.discard();
        false
    };
    let mut found = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                found.push(p.strip_prefix(dir.path()).expect("below").to_path_buf());
            }
        }
    }
    for f in &found {
        let mut parts = f.iter();
        let own = |n: Option<&std::ffi::OsStr>| n.is_some_and(|n| n == "n1");
        assert!(
            own(parts.next()) || own(parts.next()),
            "outside: {}",
            f.display()
        );
    }
    assert!(
        kept || found.is_empty(),
        "left of a failed batch: {found:?}"
    );
}

/// A sos report of a lab node (its DLM and process files).
const SOS: &str = "real/support-6.12/n1/sosreport-n1-n1-2026-11-25-iepyrfy.tar.gz";
/// gfs2_lockcapture's output of the same node.
const LOCKCAPTURE: &str = "real/support-6.12/n1/gfs2_lockcapture-2026-11-25-n1.tar.bz2";
/// A sos report of a withdrawn lab node (its sysfs, kernel log and cluster state).
const SOS_WITHDRAWN: &str =
    "real/support-withdraw-6.12/n2/sosreport-n2-n2-2026-11-27-vejpcxl.tar.gz";
/// A sos report of a lab node with two GFS2 filesystems (a lockspace's lockdebug each).
const SOS_TWO_FS: &str =
    "real/two-filesystems-sos-6.12/n1/sosreport-n1-n1-2026-11-29-kamxxuv.tar.gz";

/// Every target.
pub const TARGETS: &[Target] = &[
        Target {
            name: "glocks",
            seeds: &[
                Seed::Lines("real/dlm2-6.1/n1/glocks.4"),
                Seed::Lines("public/abegorov-linuxhl5-gfs2/gfs01-20250402.glocks"),
                Seed::Lines("public/dmesg-glock-dumps/dmesg-syzbot-do_xmote-20251014.txt"),
                Seed::Lines("real/dlm2-6.1/n1/glocktop.4"),
                Seed::Lines("real/cluster-mode-5.10/ccap/n2/glocks.0"),
                Seed::Lines("public/cluster-devel-2019-rename-deadlock/deadlock-host018.glocks"),
            ],
            run: glocks,
        },
        Target {
            name: "glockfd",
            seeds: &[Seed::Lines("real/dlm2-6.1/n1/glockfd.4")],
            run: glockfd,
        },
        Target {
            name: "dlm_locks",
            seeds: &[
                Seed::Lines("real/dlm2-6.1/n1/dlm_locks.4"),
                Seed::Lines("real/dlm2-6.1/n2/dlm_locks.4"),
                // `dlm_tool lockdebug -svw`, read by the same reader.
                Seed::Lines("real/support-6.12/n1/lockdebug-svw.txt"),
                Seed::Lines("real/deadlock-family-6.12/truth-50s/n2/lockdebug.txt"),
                // One of dlm_tool's complaints at the end of a `Granted` line.
                Seed::Member(SOS_TWO_FS, "/sos_commands/dlm/dlm_locks_gfs"),
            ],
            run: dlm_locks,
        },
        Target {
            name: "glstats",
            seeds: &[Seed::Lines("real/dlm2-6.1/n1/glstats.2")],
            run: glstats,
        },
        Target {
            name: "sbstats",
            seeds: &[
                Seed::Lines("public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/sbstats"),
                Seed::Lines("real/dlm2-6.1/n1/sbstats.2"),
            ],
            run: sbstats,
        },
        Target {
            name: "trace",
            seeds: &[
                Seed::Lines("real/dlm2-6.1/n1/trace_pipe.txt.xz"),
                Seed::Lines("real/dlm2-6.1/n2/trace_pipe.txt.xz"),
                // With the dlm events.
                Seed::Lines("real/handoff-6.12/n2/trace_pipe.txt.xz"),
            ],
            run: trace_lines,
        },
        Target {
            name: "trace_reader",
            seeds: &[Seed::Lines("real/dlm2-6.1/n2/trace_pipe.txt.xz")],
            run: trace_reader,
        },
        Target {
            name: "bundle_tar",
            seeds: &[Seed::CaptureTarball],
            run: bundle_tar,
        },
        Target {
            name: "agent_stream",
            seeds: &[Seed::AgentStream],
            run: agent_stream,
        },
        Target {
            name: "plocks",
            seeds: &[
                Seed::Lines("real/deadlock-family-6.12/truth-50s/n1/plocks.txt"),
                Seed::Lines("real/deadlock-family-6.12/late/n2/plocks.0"),
            ],
            run: support::plocks,
        },
        Target {
            name: "procs",
            seeds: &[
                Seed::Lines("real/doctor-deadlock-6.12/n2/procs.1"),
                Seed::Member(SOS, "/ps_axo_flags_state_uid_pid_ppid_pgid_sid_cls_pri_addr_sz_wchan_20_lstart_tty_time_cmd"),
            ],
            run: support::procs,
        },
        Target {
            name: "proc_locks",
            seeds: &[
                Seed::Lines("real/support-6.12/n1/proc-locks.txt"),
                Seed::Lines("real/deadlock-family-6.12/truth-50s/n1/proc-locks.txt"),
            ],
            run: support::proc_locks,
        },
        Target {
            name: "fdlocks",
            seeds: &[
                Seed::Lines("real/deadlock-family-5.10/capture/n1/fdlocks.2"),
                Seed::Lines("real/deadlock-family-5.10/capture/n2/fdlocks.1"),
            ],
            run: support::fdlocks,
        },
        Target {
            name: "proc_status",
            seeds: &[
                Seed::Member(LOCKCAPTURE, "/proc/1/status"),
                Seed::Member(LOCKCAPTURE, "/proc/2/status"),
            ],
            run: support::proc_status,
        },
        Target {
            name: "kernel_log",
            seeds: &[
                Seed::Lines("real/support-withdraw-6.12/n2/capture/n2/kernel.log"),
                Seed::Lines("real/doctor-deadlock-6.12/n2/kernel.log"),
                Seed::Member(SOS_WITHDRAWN, "/sos_commands/kernel/dmesg"),
            ],
            run: support::kernel_log,
        },
        Target {
            name: "node_files",
            seeds: &[
                Seed::Lines("real/cluster-mode-6.12/ccap/n1/gfs2_sysfs.0"),
                Seed::Lines("real/cluster-mode-6.12/ccap/n1/cluster.txt"),
                Seed::Lines("real/cluster-mode-6.12/ccap/n1/mountinfo"),
            ],
            run: support::node_files,
        },
        Target {
            name: "collection",
            seeds: &[
                Seed::Whole(SOS),
                Seed::Whole(SOS_WITHDRAWN),
                Seed::Whole(SOS_TWO_FS),
                Seed::Whole(LOCKCAPTURE),
            ],
            run: support::collection,
        },
        Target {
            name: "trace_dat",
            seeds: &[
                // Version 6 and 7 uncompressed, as RHEL's trace-cmd writes them.
                Seed::Whole("real/trace-dat-nolock-6.1/small/v6.dat.xz"),
                Seed::Whole("real/trace-dat-nolock-6.1/small/v7-uncompressed.dat.xz"),
                // Version 7 with zstd (trace-cmd 3's default).
                Seed::Whole("real/support-deadlock-6.12/n1/trace.dat"),
            ],
            run: binary::trace_dat,
        },
        Target {
            name: "raw_pages",
            seeds: &[Seed::Whole("real/trace-raw-6.12/n1/pages/cpu0.raw.xz")],
            run: binary::raw_pages,
        },
        Target {
            name: "event_format",
            seeds: &[
                Seed::Lines("real/trace-raw-6.12/n1/pages/format.gfs2_glock_state_change"),
                Seed::Lines("real/trace-raw-6.12/n1/pages/format.gfs2_promote"),
                Seed::Lines("real/trace-raw-6.12/n1/pages/format.dlm_lock_start"),
                Seed::Lines("real/trace-raw-6.12/n1/pages/format.dlm_recv_message"),
                Seed::Lines("real/trace-raw-6.12/n1/pages/format.print"),
            ],
            run: binary::event_format,
        },
];

/// The files of the small seeds: a real node directory's first lines (small enough for
/// many executions), each with its name.
fn seed_files() -> Vec<(&'static str, Vec<u8>)> {
    let names = [
        "glocks.0",
        "glstats.0",
        "dlm_locks.0",
        "time.0",
        "glockfd.0",
    ];
    names
        .into_iter()
        .map(|f| {
            let p = testdata::path(&format!("real/dlm2-6.1/n1/{f}"));
            let data = std::fs::read(&p).expect("a fixture");
            let cut = data
                .split_inclusive(|&c| c == b'\n')
                .take(40)
                .flatten()
                .copied()
                .collect();
            (f, cut)
        })
        .collect()
}

/// A node's `glk agent` stream of the seed files ([`Seed::AgentStream`]), as the agent
/// writes it.
fn seed_stream() -> Vec<u8> {
    use cluster::protocol::{self, Frame, Hello};
    let mut w = Vec::new();
    let hello = Hello {
        glk_agent: protocol::PROTOCOL,
        version: "0.1.0".into(),
        host: "n1".into(),
        nodeid: Some(1),
        time: 1.5,
    };
    protocol::write_hello(&mut w, &hello).expect("in memory");
    for (f, data) in seed_files() {
        protocol::write_file(&mut w, &format!("lab_gfs/n1/{f}"), &data).expect("in memory");
    }
    let problem = Frame::Problem {
        text: "no dlm_tool".into(),
    };
    protocol::write_frame(&mut w, &problem).expect("in memory");
    protocol::write_frame(&mut w, &Frame::End { time: 2.5 }).expect("in memory");
    w
}

/// A small capture tarball made from a real node directory ([`Seed::CaptureTarball`]).
fn seed_tarball() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (f, cut) in seed_files() {
        let mut h = tar::Header::new_gnu();
        h.set_size(cut.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, format!("n1/{f}"), &cut[..])
            .expect("in memory");
    }
    b.into_inner().expect("in memory")
}

/// The seed inputs of a target, decompressed; text cut to at most `max_lines` lines taken
/// at several places of the file.
pub fn seeds(t: &Target, max_lines: usize) -> Vec<Vec<u8>> {
    t.seeds
        .iter()
        .flat_map(|s| seed_inputs(*s, max_lines))
        .collect()
}

/// The inputs of one seed. A missing fixture breaks the target: it panics, naming it.
pub fn seed_inputs(seed: Seed, max_lines: usize) -> Vec<Vec<u8>> {
    match seed {
        Seed::CaptureTarball => vec![seed_tarball()],
        Seed::AgentStream => vec![seed_stream()],
        Seed::Whole(rel) => vec![fixture(rel)],
        Seed::Lines(rel) => windows(&fixture(rel), max_lines),
        Seed::Member(rel, suffix) => windows(&member(rel, suffix), max_lines),
    }
}

/// A fixture's bytes, decompressed.
pub(crate) fn fixture(rel: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    glockparse::input::open(&testdata::path(rel))
        .and_then(|mut r| r.read_to_end(&mut bytes))
        .unwrap_or_else(|e| panic!("seed {rel}: {e}"));
    bytes
}

/// The first member of the tarball `rel` whose path ends with `suffix`.
fn member(rel: &str, suffix: &str) -> Vec<u8> {
    let tarball = fixture(rel);
    let mut archive = tar::Archive::new(&tarball[..]);
    let broken = |e: std::io::Error| -> ! { panic!("seed {rel}: {e}") };
    for entry in archive.entries().unwrap_or_else(|e| broken(e)) {
        let mut entry = entry.unwrap_or_else(|e| broken(e));
        let path = entry.path().map(|p| p.display().to_string());
        if path.is_ok_and(|p| p.ends_with(suffix)) {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap_or_else(|e| broken(e));
            return bytes;
        }
    }
    panic!("seed {rel}: no member ending with {suffix}")
}

/// Windows of at most `max_lines` lines of `text`, taken at several places of it.
fn windows(text: &[u8], max_lines: usize) -> Vec<Vec<u8>> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
    let step = (lines.len() / 8).max(1);
    (0..lines.len())
        .step_by(step)
        .map(|start| lines[start..(start + max_lines).min(lines.len())].concat())
        .collect()
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
