//! Timing child processes (best of several runs) and their peak RSS.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` to completion with stdout discarded; returns wall time and the child's
/// peak RSS in KiB (from wait4's rusage).
pub fn run_once(cmd: &mut Command) -> std::io::Result<(Duration, u64)> {
    let start = Instant::now();
    let child = cmd.stdout(Stdio::null()).spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain wait4 on our own child with zero-initialised out-parameters.
    let rusage = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::wait4(pid, &mut status, 0, &mut ru) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        ru
    };
    let elapsed = start.elapsed();
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(std::io::Error::other(format!(
            "{cmd:?} failed: status {status}"
        )));
    }
    Ok((elapsed, rusage.ru_maxrss as u64))
}

/// Runs `a` and `b` alternately `pairs` times (after one warm-up run of each), so both see
/// the same machine: returns the best time of each, the median of the per-pair ratios
/// b/a, and b's largest peak RSS in KiB.
pub fn paired(
    pairs: usize,
    mut a: impl FnMut() -> Command,
    mut b: impl FnMut() -> Command,
) -> std::io::Result<(Duration, Duration, f64, u64)> {
    run_once(&mut a())?;
    run_once(&mut b())?;
    let (mut best_a, mut best_b, mut rss) = (Duration::MAX, Duration::MAX, 0);
    let mut ratios = Vec::with_capacity(pairs);
    for _ in 0..pairs {
        let (ta, _) = run_once(&mut a())?;
        let (tb, r) = run_once(&mut b())?;
        best_a = best_a.min(ta);
        best_b = best_b.min(tb);
        rss = rss.max(r);
        ratios.push(tb.as_secs_f64() / ta.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    Ok((best_a, best_b, ratios[ratios.len() / 2], rss))
}

pub fn top(glk: &Path, file: &Path) -> std::io::Result<()> {
    let size = std::fs::metadata(file)?.len();
    let (wc, top, median, rss) = paired(
        7,
        || {
            let mut c = Command::new("wc");
            c.arg("-l").arg(file);
            c
        },
        || {
            let mut c = Command::new(glk);
            c.args(["top", "--once"]).arg(file);
            c
        },
    )?;
    let mib = size as f64 / (1 << 20) as f64;
    println!("file            {} ({mib:.1} MiB)", file.display());
    println!("wc -l           {:>8.1} ms", wc.as_secs_f64() * 1e3);
    println!(
        "glk top --once  {:>8.1} ms  ({:.0} MiB/s)",
        top.as_secs_f64() * 1e3,
        mib / top.as_secs_f64()
    );
    println!(
        "ratio           {:>8.2} best/best, {median:.2} median of 7 pairs  (target <= 3)",
        top.as_secs_f64() / wc.as_secs_f64()
    );
    println!(
        "glk peak RSS    {:>8.1} MiB  (target <= 64)",
        rss as f64 / 1024.0
    );
    Ok(())
}
