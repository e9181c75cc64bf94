//! Trace decoding throughput (in-process and end to end) against `wc -l`, and live
//! streaming without loss at a fixed marker rate.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use traceparse::{decode_line, Decoded};

use crate::measure::{self, ms};

/// Decompresses the nolock trace fixture, `copies` times over, into bench/out.
pub fn prepare(copies: usize) -> std::io::Result<PathBuf> {
    let out = PathBuf::from(format!("bench/out/nolock-trace-x{copies}.txt"));
    if out.exists() {
        return Ok(out);
    }
    std::fs::create_dir_all("bench/out")?;
    let mut text = Vec::new();
    glockparse::input::open(&testdata::path("real/nolock-6.1/trace_pipe.txt.xz"))?
        .read_to_end(&mut text)?;
    let mut f = std::io::BufWriter::new(std::fs::File::create(&out)?);
    for _ in 0..copies {
        f.write_all(&text)?;
    }
    f.flush()?;
    Ok(out)
}

/// Counts of one decode: events, and gfs2 events among them.
#[derive(Default)]
struct Counts {
    events: u64,
    gfs2: u64,
}

impl Counts {
    #[inline]
    fn line(&mut self, line: &[u8]) {
        match decode_line(line) {
            Ok(Decoded::Gfs2 { .. }) => {
                self.gfs2 += 1;
                self.events += 1;
            }
            Ok(Decoded::Other(_) | Decoded::Undecoded(_)) => self.events += 1,
            _ => {}
        }
    }
}

/// Decodes every line of text already in memory, on this one thread: the decoder's own
/// speed per core, with no I/O.
fn decode_in_memory(text: &[u8]) -> Counts {
    let mut c = Counts::default();
    traceparse::reader::lines(text).for_each(|l| c.line(l));
    c
}

/// Decodes the file on every core through `traceparse::parallel` (reading included).
fn decode_parallel(path: &Path, threads: usize) -> std::io::Result<Counts> {
    let (shares, _) =
        traceparse::parallel::for_each_line(path, threads, Counts::default, |c, _, l| c.line(l))?
            .ok_or_else(|| std::io::Error::other("file too small to split"))?;
    Ok(shares.into_iter().fold(Counts::default(), |a, c| Counts {
        events: a.events + c.events,
        gfs2: a.gfs2 + c.gfs2,
    }))
}

fn best(
    runs: usize,
    mut f: impl FnMut() -> std::io::Result<u64>,
) -> std::io::Result<(Duration, u64)> {
    let mut best = Duration::MAX;
    let mut n = 0;
    for _ in 0..runs {
        let t = Instant::now();
        n = f()?;
        best = best.min(t.elapsed());
    }
    Ok((best, n))
}

pub fn offline(glk: &Path, copies: usize) -> std::io::Result<()> {
    let file = prepare(copies)?;
    // glk first: a child starts from its parent's peak RSS, so the bench must not have
    // read the file into memory yet. wc and glk alternate, pair by pair.
    let p = measure::paired(
        5,
        || {
            let mut c = Command::new("wc");
            c.arg("-l").arg(&file);
            c
        },
        || {
            let mut c = Command::new(glk);
            c.args(["trace", "--summary", "--input"]).arg(&file);
            c.stderr(Stdio::null());
            c
        },
    )?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let text = std::fs::read(&file)?;
    let (one, events) = best(3, || {
        let c = decode_in_memory(&text);
        assert_eq!(
            c.events, c.gfs2,
            "every line of the fixture is a gfs2 event"
        );
        Ok(c.events)
    })?;
    drop(text);
    let (par, par_events) = best(3, || Ok(decode_parallel(&file, threads)?.events))?;
    assert_eq!(par_events, events);
    let size = std::fs::metadata(&file)?.len() as f64 / (1 << 20) as f64;
    let rate = |d: Duration| events as f64 / d.as_secs_f64() / 1e6;
    let ratio = |d: Duration| d.as_secs_f64() / p.best_a.as_secs_f64();
    println!(
        "file                         {} ({size:.1} MiB, {events} events)",
        file.display()
    );
    println!(
        "wc -l                        {:>8.1} ms  (CPU {:.1} ms)",
        ms(p.best_a),
        ms(p.cpu_a)
    );
    println!(
        "decode, 1 core, in memory    {:>8.1} ms  {:>6.2} M events/s  (target >= 4 M/s per core)",
        ms(one),
        rate(one)
    );
    println!(
        "decode, {threads} threads, from file  {:>8.1} ms  {:>6.2} M events/s  ratio {:.2}",
        ms(par),
        rate(par),
        ratio(par)
    );
    println!(
        "glk trace --summary          {:>8.1} ms  {:>6.2} M events/s  ratio {:.2} best/best, {:.2} median of 5 pairs  (target <= 6)  peak RSS {:.1} MiB  CPU {:.1} ms, system {:.1} ms",
        ms(p.best_b),
        rate(p.best_b),
        ratio(p.best_b),
        p.median,
        p.rss_b as f64 / 1024.0,
        ms(p.cpu_b),
        ms(p.sys_b)
    );
    Ok(())
}

/// Runs `glk trace` on a private instance and writes markers into it at `rate` per second
/// for `secs` seconds; reports what glk saw and lost.
pub fn live(glk: &Path, rate: u64, secs: f64) -> std::io::Result<()> {
    let name = format!("glk-bench-{}", std::process::id());
    let out = std::env::temp_dir().join(format!("{name}.txt"));
    let mut child = Command::new(glk)
        .args([
            "trace",
            "--events",
            "sched:sched_process_exec",
            "--buffer-kb",
            "8192",
            "--instance",
            &name,
            "-o",
        ])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()?;
    let tracing = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    let start = Instant::now();
    let inst = loop {
        if let Some(d) = tracing
            .iter()
            .map(|t| Path::new(t).join("instances").join(&name))
            .find(|d| {
                std::fs::read_to_string(d.join("tracing_on")).is_ok_and(|s| s.trim() == "1")
                    && std::fs::read_to_string(d.join("events/sched/sched_process_exec/enable"))
                        .is_ok_and(|s| s.trim() == "1")
            })
        {
            break d;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            return Err(std::io::Error::other(
                "glk trace did not start (root needed)",
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut marker = std::fs::OpenOptions::new()
        .write(true)
        .open(inst.join("trace_marker"))?;
    let total = (rate as f64 * secs) as u64;
    let t0 = Instant::now();
    let mut buf = String::with_capacity(64);
    for i in 0..total {
        // Pace to the target rate.
        let due = Duration::from_secs_f64(i as f64 / rate as f64);
        while t0.elapsed() < due {
            std::hint::spin_loop();
        }
        buf.clear();
        use std::fmt::Write as _;
        let _ = write!(buf, "glk-bench {i}");
        marker.write_all(buf.as_bytes())?;
    }
    let wrote_in = t0.elapsed();
    drop(marker);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    let seen = std::fs::read_to_string(&out)?
        .lines()
        .filter(|l| l.contains("glk-bench "))
        .count();
    let _ = std::fs::remove_file(&out);
    println!(
        "markers written            {total} in {:.2} s ({:.0}/s, target {rate}/s)",
        wrote_in.as_secs_f64(),
        total as f64 / wrote_in.as_secs_f64()
    );
    println!(
        "markers received by glk    {seen} ({} missing)",
        total as usize - seen.min(total as usize)
    );
    println!(
        "glk says                   {}",
        err.lines().find(|l| l.contains("events")).unwrap_or("?")
    );
    Ok(())
}
