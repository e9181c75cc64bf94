//! Timing child processes (best of several runs), their peak RSS, and the CPU time and
//! peak RSS of a running one.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One run of a child process.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// Wall time.
    pub wall: Duration,
    /// CPU time, user and system (every thread).
    pub cpu: Duration,
    /// The system part of `cpu`: mostly the kernel copying files out of the page cache.
    pub sys: Duration,
    /// Peak RSS, KiB.
    pub rss_kib: u64,
}

/// Runs `cmd` to completion with stdout discarded; times it and reads its peak RSS from
/// wait4's rusage.
pub fn run_once(cmd: &mut Command) -> std::io::Result<Run> {
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
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(Run {
        wall: elapsed,
        cpu: tv(rusage.ru_utime) + tv(rusage.ru_stime),
        sys: tv(rusage.ru_stime),
        rss_kib: rusage.ru_maxrss as u64,
    })
}

/// The CPU time (user and system, every thread) running process `pid` has used so far,
/// seconds, from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses: utime and stime are the
    // 14th and 15th fields of the line, the 12th and 13th after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks / hz)
}

/// The peak RSS of running process `pid` so far, KiB (`VmHWM` of `/proc/PID/status`).
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// `d` in milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What [`paired`] measured.
pub struct Paired {
    /// The best wall time of `a` and of `b`.
    pub best_a: Duration,
    pub best_b: Duration,
    /// The least CPU time of `a` and of `b`: how much work each did, whatever the wall
    /// clock (on a shared host the compute given to a process varies by the hour, the
    /// memory bandwidth that bounds `wc -l` much less).
    pub cpu_a: Duration,
    pub cpu_b: Duration,
    /// The least system time of `b`: a reader whose reads the kernel copies slowly shows
    /// here first (see `glockparse::align`).
    pub sys_b: Duration,
    /// The median of the per-pair ratios b/a.
    pub median: f64,
    /// `b`'s largest peak RSS, KiB.
    pub rss_b: u64,
}

/// Runs `a` and `b` alternately `pairs` times (after one warm-up run of each), so both see
/// the same machine.
pub fn paired(
    pairs: usize,
    mut a: impl FnMut() -> Command,
    mut b: impl FnMut() -> Command,
) -> std::io::Result<Paired> {
    run_once(&mut a())?;
    run_once(&mut b())?;
    let mut p = Paired {
        best_a: Duration::MAX,
        best_b: Duration::MAX,
        cpu_a: Duration::MAX,
        cpu_b: Duration::MAX,
        sys_b: Duration::MAX,
        median: 0.0,
        rss_b: 0,
    };
    let mut ratios = Vec::with_capacity(pairs);
    for _ in 0..pairs {
        let ra = run_once(&mut a())?;
        let rb = run_once(&mut b())?;
        p.best_a = p.best_a.min(ra.wall);
        p.best_b = p.best_b.min(rb.wall);
        p.cpu_a = p.cpu_a.min(ra.cpu);
        p.cpu_b = p.cpu_b.min(rb.cpu);
        p.sys_b = p.sys_b.min(rb.sys);
        p.rss_b = p.rss_b.max(rb.rss_kib);
        ratios.push(rb.wall.as_secs_f64() / ra.wall.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    p.median = ratios[ratios.len() / 2];
    Ok(p)
}

pub fn top(glk: &Path, file: &Path) -> std::io::Result<()> {
    let size = std::fs::metadata(file)?.len();
    let p = paired(
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
    println!(
        "wc -l           {:>8.1} ms  (CPU {:.1} ms)",
        ms(p.best_a),
        ms(p.cpu_a)
    );
    println!(
        "glk top --once  {:>8.1} ms  ({:.0} MiB/s; CPU {:.1} ms, system {:.1} ms)",
        ms(p.best_b),
        mib / p.best_b.as_secs_f64(),
        ms(p.cpu_b),
        ms(p.sys_b)
    );
    println!(
        "ratio           {:>8.2} best/best, {:.2} median of 7 pairs  (target <= 3)",
        p.best_b.as_secs_f64() / p.best_a.as_secs_f64(),
        p.median
    );
    println!(
        "glk peak RSS    {:>8.1} MiB  (target <= 64)",
        p.rss_b as f64 / 1024.0
    );
    Ok(())
}
