//! The command line end to end: mutated real files through every command of `glk` (and so
//! of `glk-engine`). A run passes when every command exits 0, 1 or 2: never 101 (a panic),
//! never killed by a signal, never hung past the time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{mutate, Rng};

/// A failure of one command on one input.
#[derive(Debug)]
pub struct Failure {
    /// The command line.
    pub command: String,
    /// What went wrong: exit code 101, a signal, or a hang.
    pub what: String,
    /// Where the input was kept.
    pub input: PathBuf,
}

/// What a CLI fuzz run did.
#[derive(Debug, Default)]
pub struct Report {
    /// Commands run.
    pub runs: u64,
    /// Exit codes seen, with their counts.
    pub exits: std::collections::BTreeMap<i32, u64>,
    /// The failures.
    pub failures: Vec<Failure>,
}

/// Command lines, one argument list each.
type Commands = &'static [&'static [&'static str]];

/// The files mutated, with the commands each goes through (`{}` is the mutated file, `{o}`
/// an output path in a fresh directory).
const CASES: &[(&str, Commands)] = &[
    (
        "real/dlm2-6.1/n2/glocks.4",
        &[
            &["top", "--once", "{}"],
            &["top", "--json", "--limit", "0", "{}"],
            &["analyze", "--json", "{}"],
        ],
    ),
    (
        "public/dmesg-glock-dumps/dmesg-syzbot-do_xmote-20251014.txt",
        &[&["top", "--once", "{}"]],
    ),
    ("real/dlm2-6.1/n1/glocktop.4", &[&["top", "--once", "{}"]]),
    (
        "real/dlm2-6.1/n1/glstats.2",
        &[
            &["stats", "{}"],
            &["stats", "--json", "{}"],
            &["stats", "--delta", "{}", "{}"],
        ],
    ),
    (
        "public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/sbstats",
        &[&["stats", "{}"]],
    ),
    ("real/dlm2-6.1/n1/dlm_locks.4", &[&["analyze", "{}"]]),
    (
        "real/dlm2-6.1/n2/trace_pipe.txt.xz",
        &[
            &["trace", "--input", "{}", "--summary"],
            &["trace", "--input", "{}", "-o", "{o}.jsonl"],
            &["stats", "--trace", "{}"],
            &["analyze", "{}"],
            &["export", "{}", "-o", "{o}"],
        ],
    ),
];

fn decompressed(rel: &str, max_lines: usize) -> Vec<u8> {
    let mut v = Vec::new();
    if let Ok(mut r) = glockparse::input::open(&testdata::path(rel)) {
        let _ = std::io::Read::read_to_end(&mut r, &mut v);
    }
    v.split_inclusive(|&c| c == b'\n')
        .take(max_lines)
        .flatten()
        .copied()
        .collect()
}

/// Runs `rounds` mutated inputs through every command. `glk` must have `glk-engine` next
/// to it (or `GLK_ENGINE` set). Failing inputs are kept in `keep`.
pub fn run(glk: &Path, rounds: u64, seed: u64, limit: Duration, keep: &Path) -> Report {
    let mut rng = Rng::new(seed);
    let mut report = Report::default();
    let seeds: Vec<(Vec<Vec<u8>>, Commands)> = CASES
        .iter()
        .map(|(rel, cmds)| (vec![decompressed(rel, 3000)], *cmds))
        .collect();
    for round in 0..rounds {
        let (seed_files, cmds) = &seeds[round as usize % seeds.len()];
        let work = tempfile::tempdir().expect("a temporary directory");
        let input = work.path().join(format!("input-{round}"));
        let mut data = mutate(&mut rng, seed_files);
        if rng.below(40) == 0 {
            // Now and then a line of megabytes.
            let at = rng.below(data.len() + 1);
            data.splice(at..at, std::iter::repeat_n(b'7', 3 << 20));
        }
        std::fs::write(&input, &data).expect("writing the input");
        for (k, cmd) in cmds.iter().enumerate() {
            let out = work.path().join(format!("out-{k}"));
            let args: Vec<String> = cmd
                .iter()
                .map(|a| match *a {
                    "{}" => input.display().to_string(),
                    a if a.starts_with("{o}") => format!("{}{}", out.display(), &a[3..]),
                    a => a.to_string(),
                })
                .collect();
            let mut child = Command::new(glk)
                .args(&args)
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("running glk");
            let started = Instant::now();
            let status = loop {
                if let Some(s) = child.try_wait().expect("waiting for glk") {
                    break Some(s);
                }
                if started.elapsed() > limit {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            report.runs += 1;
            let what = match status {
                None => Some(format!("hung for more than {limit:?}")),
                Some(s) => {
                    use std::os::unix::process::ExitStatusExt;
                    match (s.code(), s.signal()) {
                        (Some(c), _) => {
                            *report.exits.entry(c).or_default() += 1;
                            (!matches!(c, 0..=2)).then(|| format!("exit code {c}"))
                        }
                        (None, Some(sig)) => Some(format!("killed by signal {sig}")),
                        _ => Some("no exit status".into()),
                    }
                }
            };
            if let Some(what) = what {
                let kept = keep.join(format!("cli-failure-{seed}-{round}-{k}"));
                let _ = std::fs::create_dir_all(keep);
                let _ = std::fs::copy(&input, &kept);
                report.failures.push(Failure {
                    command: format!("glk {}", args.join(" ")),
                    what,
                    input: kept,
                });
            }
        }
    }
    report
}
