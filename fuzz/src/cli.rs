//! The command line end to end: mutated real files through every command of `glk` (and so
//! of `glk-engine`). A run passes when every command exits 0, 1 or 2 (or 3, `glk doctor`'s
//! finding): never 101 (a panic), never killed by a signal, never hung past the time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{mutate, seed_inputs, Rng, Seed};

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
    /// Mutated inputs made.
    pub inputs: u64,
    /// Commands run.
    pub runs: u64,
    /// Exit codes seen, with their counts.
    pub exits: std::collections::BTreeMap<i32, u64>,
    /// The failures.
    pub failures: Vec<Failure>,
}

/// Command lines, one argument list each (`{}` is the mutated file, `{o}` an output path
/// in a fresh directory).
type Commands = &'static [&'static [&'static str]];

/// One kind of input and the commands it goes through.
struct Case {
    /// The real input the mutations start from.
    seed: Seed,
    /// The mutated file's name (glk knows a tarball by its name, the rest by content).
    name: &'static str,
    /// What runs on it.
    commands: Commands,
}

const CASES: &[Case] = &[
    Case {
        seed: Seed::Lines("real/dlm2-6.1/n2/glocks.4"),
        name: "glocks",
        commands: &[
            &["top", "--once", "{}"],
            &["top", "--json", "--limit", "0", "{}"],
            &["analyze", "--json", "{}"],
            &["doctor", "{}"],
            &["report", "{}", "-o", "{o}.html"],
        ],
    },
    Case {
        seed: Seed::Lines("public/dmesg-glock-dumps/dmesg-syzbot-do_xmote-20251014.txt"),
        name: "dmesg",
        commands: &[&["top", "--once", "{}"]],
    },
    Case {
        seed: Seed::Lines("real/dlm2-6.1/n1/glocktop.4"),
        name: "glocktop",
        commands: &[&["top", "--once", "{}"]],
    },
    Case {
        seed: Seed::Lines("real/dlm2-6.1/n1/glstats.2"),
        name: "glstats",
        commands: &[
            &["stats", "{}"],
            &["stats", "--json", "{}"],
            &["stats", "--delta", "{}", "{}"],
        ],
    },
    Case {
        seed: Seed::Lines("public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/sbstats"),
        name: "sbstats",
        commands: &[&["stats", "{}"]],
    },
    Case {
        seed: Seed::Lines("real/dlm2-6.1/n1/dlm_locks.4"),
        name: "dlm_locks",
        commands: &[&["analyze", "{}"], &["doctor", "--json", "{}"]],
    },
    Case {
        seed: Seed::Lines("real/dlm2-6.1/n2/trace_pipe.txt.xz"),
        name: "trace_pipe",
        commands: &[
            &["trace", "--input", "{}", "--summary"],
            &["trace", "--input", "{}", "-o", "{o}.jsonl"],
            &["stats", "--trace", "{}"],
            &["analyze", "{}"],
            &["export", "{}", "-o", "{o}"],
        ],
    },
    Case {
        seed: Seed::Whole("real/trace-dat-nolock-6.1/small/v6.dat.xz"),
        name: "trace.dat",
        commands: &[&["trace", "--input", "{}", "--summary"], &["analyze", "{}"]],
    },
    Case {
        seed: Seed::Whole(
            "real/support-withdraw-6.12/n2/sosreport-n2-n2-2026-11-27-vejpcxl.tar.gz",
        ),
        name: "sosreport.tar",
        commands: &[
            &["doctor", "{}"],
            &["analyze", "--json", "{}"],
            &["stats", "--fs", "gfs", "{}"],
        ],
    },
    Case {
        seed: Seed::Whole("real/support-deadlock-6.12/n1/gfs2_lockcapture-2026-11-25-n1.tar.bz2"),
        name: "gfs2_lockcapture.tar",
        commands: &[
            &["doctor", "{}"],
            &["top", "--once", "{}"],
            &["top", "--once", "--fs", "lab:gfs", "{}"],
            &["report", "{}", "-o", "{o}.html"],
        ],
    },
];

/// Runs `rounds` mutated inputs through every command, or as many as start before
/// `until`. `glk` must have `glk-engine` next to it (or `GLK_ENGINE` set); each command may
/// take `limit`. Failing inputs are kept in `keep`.
pub fn run(
    glk: &Path,
    rounds: u64,
    until: Option<Instant>,
    seed: u64,
    limit: Duration,
    keep: &Path,
) -> Report {
    let mut rng = Rng::new(seed);
    let mut report = Report::default();
    let seeds: Vec<Vec<Vec<u8>>> = CASES.iter().map(|c| seed_inputs(c.seed, 3000)).collect();
    for round in 0..rounds {
        if until.is_some_and(|u| Instant::now() >= u) {
            break;
        }
        report.inputs += 1;
        let case = round as usize % CASES.len();
        let (seed_files, cmds, name) = (&seeds[case], CASES[case].commands, CASES[case].name);
        let work = tempfile::tempdir().expect("a temporary directory");
        let input = work.path().join(format!("{round}-{name}"));
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
                            // 3: `glk doctor` found something more severe than --fail-on.
                            let ok = matches!(c, 0..=2) || (c == 3 && args[0] == "doctor");
                            (!ok).then(|| format!("exit code {c}"))
                        }
                        (None, Some(sig)) => Some(format!("killed by signal {sig}")),
                        _ => Some("no exit status".into()),
                    }
                }
            };
            if let Some(what) = what {
                let kept = keep.join(format!("cli-failure-{seed}-{round}-{k}-{name}"));
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
