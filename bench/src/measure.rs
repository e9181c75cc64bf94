//! Timing child processes (best of several runs) and their peak RSS.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` to completion with stdout discarded; returns wall time and the child's
/// peak RSS in KiB (from wait4's rusage).
fn run_once(cmd: &mut Command) -> std::io::Result<(Duration, u64)> {
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

/// Best wall time and the largest peak RSS over `runs` runs.
pub fn best_of(runs: usize, mut make: impl FnMut() -> Command) -> std::io::Result<(Duration, u64)> {
    let mut best = Duration::MAX;
    let mut rss = 0;
    for _ in 0..runs {
        let (t, r) = run_once(&mut make())?;
        best = best.min(t);
        rss = rss.max(r);
    }
    Ok((best, rss))
}

/// `wc -l FILE`, best of 5 after a run that warms the page cache.
pub fn wc(file: &Path) -> std::io::Result<Duration> {
    let wc = || {
        let mut c = Command::new("wc");
        c.arg("-l").arg(file);
        c
    };
    best_of(1, wc)?;
    Ok(best_of(5, wc)?.0)
}

pub fn top(glk: &Path, file: &Path) -> std::io::Result<()> {
    let size = std::fs::metadata(file)?.len();
    let wc = wc(file)?;
    let (top, rss) = best_of(5, || {
        let mut c = Command::new(glk);
        c.args(["top", "--once"]).arg(file);
        c
    })?;
    let mib = size as f64 / (1 << 20) as f64;
    println!("file            {} ({mib:.1} MiB)", file.display());
    println!("wc -l           {:>8.1} ms", wc.as_secs_f64() * 1e3);
    println!(
        "glk top --once  {:>8.1} ms  ({:.0} MiB/s)",
        top.as_secs_f64() * 1e3,
        mib / top.as_secs_f64()
    );
    println!(
        "ratio           {:>8.2}  (target <= 3)",
        top.as_secs_f64() / wc.as_secs_f64()
    );
    println!(
        "glk peak RSS    {:>8.1} MiB  (target <= 64)",
        rss as f64 / 1024.0
    );
    Ok(())
}
