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

/// What `bench live` floods the ring buffer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `getppid(2)` calls traced by `raw_syscalls:sys_enter` with a filter on their number
    /// and this thread: the cheapest event to make, so the reader is what is measured.
    Syscall,
    /// `trace_marker` writes (`ftrace:print`), each a numbered text.
    Marker,
}

/// How a live run is set up: its source, rate, length, `glk trace --reader` and output.
pub struct Live {
    /// What makes the events.
    pub source: Source,
    /// Events per second.
    pub rate: u64,
    /// Seconds of flood.
    pub secs: f64,
    /// `--reader` for glk (auto, raw, text).
    pub reader: String,
    /// The output's extension (jsonl, txt).
    pub ext: String,
}

/// Runs `glk trace` on its private instance and floods it at `live.rate` events per
/// second for `live.secs` seconds; reports what glk kept and lost, counted in its output.
pub fn live(glk: &Path, live: &Live) -> std::io::Result<()> {
    let out = std::env::temp_dir().join(format!(
        "glk-bench-live-{}.{}",
        std::process::id(),
        live.ext
    ));
    // SAFETY: gettid(2) has no preconditions.
    let tid = unsafe { libc::gettid() };
    let (events, filter, check_event) = match live.source {
        Source::Syscall => (
            "raw_syscalls:sys_enter".to_string(),
            Some(format!(
                "id == {} && common_pid == {tid}",
                libc::SYS_getppid
            )),
            "sys_enter/enable",
        ),
        Source::Marker => (
            "sched:sched_process_exec".to_string(),
            None,
            "sched_process_exec/enable",
        ),
    };
    let mut cmd = Command::new(glk);
    cmd.args([
        "trace",
        "--events",
        &events,
        "--buffer-kb",
        "8192",
        "--reader",
        &live.reader,
    ]);
    if let Some(f) = &filter {
        cmd.args(["--filter", f]);
    }
    let mut child = cmd.arg("-o").arg(&out).stderr(Stdio::piped()).spawn()?;
    let inst = wait_for_instance(&mut child, check_event)?;
    let total = (live.rate as f64 * live.secs) as u64;
    let wrote_in = match live.source {
        Source::Syscall => flood_syscalls(total, live.rate),
        Source::Marker => flood_markers(&inst, total, live.rate)?,
    };
    std::thread::sleep(Duration::from_millis(300));
    let cpu = crate::measure::cpu_seconds(child.id());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    let needle = match live.source {
        Source::Syscall => format!("NR {} (", libc::SYS_getppid),
        Source::Marker => "glk-bench ".to_string(),
    };
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let text = std::fs::read(&out)?;
    let seen = traceparse::reader::lines(&text)
        .filter(|l| finder.find(l).is_some())
        .count() as u64;
    let _ = std::fs::remove_file(&out);
    println!(
        "source {:?}, glk trace --reader {} -o .{}",
        live.source, live.reader, live.ext
    );
    println!(
        "events made                {total} in {:.2} s ({:.0}/s, target {}/s)",
        wrote_in.as_secs_f64(),
        total as f64 / wrote_in.as_secs_f64(),
        live.rate
    );
    println!(
        "events in glk's output     {seen} ({} missing, {:.2}% kept)",
        total - seen.min(total),
        100.0 * seen as f64 / total.max(1) as f64
    );
    println!(
        "glk says                   {}",
        err.lines().find(|l| l.contains("events (")).unwrap_or("?")
    );
    if let Some(cpu) = cpu {
        println!(
            "glk CPU until the stop     {cpu:.2} s user+system ({:.0}% of one core over the flood)",
            100.0 * cpu / wrote_in.as_secs_f64()
        );
    }
    Ok(())
}

/// Waits until glk's private instance (`glk-PID`) records with `event` (a path under
/// its `events/SYSTEM/`) enabled; returns its directory.
fn wait_for_instance(child: &mut std::process::Child, event: &str) -> std::io::Result<PathBuf> {
    let name = format!("glk-{}", child.id());
    let start = Instant::now();
    loop {
        let found = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .iter()
            .map(|t| Path::new(t).join("instances").join(&name))
            .find(|d| {
                let on = |f: PathBuf| std::fs::read_to_string(f).is_ok_and(|s| s.trim() == "1");
                on(d.join("tracing_on"))
                    && std::fs::read_dir(d.join("events"))
                        .map(|systems| systems.flatten().any(|s| on(s.path().join(event))))
                        .unwrap_or(false)
            });
        if let Some(d) = found {
            return Ok(d);
        }
        if start.elapsed() > Duration::from_secs(20) || child.try_wait()?.is_some() {
            let _ = child.kill();
            return Err(std::io::Error::other(
                "glk trace did not start (root needed)",
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `total` getppid calls paced at `rate` per second.
fn flood_syscalls(total: u64, rate: u64) -> Duration {
    let t0 = Instant::now();
    for i in 0..total {
        let due = Duration::from_secs_f64(i as f64 / rate as f64);
        while t0.elapsed() < due {
            std::hint::spin_loop();
        }
        // SAFETY: getppid(2) has no preconditions.
        unsafe { libc::getppid() };
    }
    t0.elapsed()
}

/// `total` numbered markers paced at `rate` per second.
fn flood_markers(inst: &Path, total: u64, rate: u64) -> std::io::Result<Duration> {
    let mut marker = std::fs::OpenOptions::new()
        .write(true)
        .open(inst.join("trace_marker"))?;
    let t0 = Instant::now();
    let mut buf = String::with_capacity(64);
    for i in 0..total {
        let due = Duration::from_secs_f64(i as f64 / rate as f64);
        while t0.elapsed() < due {
            std::hint::spin_loop();
        }
        buf.clear();
        use std::fmt::Write as _;
        let _ = write!(buf, "glk-bench {i}");
        marker.write_all(buf.as_bytes())?;
    }
    Ok(t0.elapsed())
}
