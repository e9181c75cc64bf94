//! Trace decoding throughput (in-process and end to end) against `wc -l`, and live
//! streaming without loss at a fixed marker rate.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use traceparse::{decode_line, Decoded};

use crate::measure;

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

/// Decodes and counts every line on this thread (the reader runs on its own).
fn decode_count(path: &Path) -> std::io::Result<(u64, u64)> {
    let (mut events, mut gfs2) = (0u64, 0u64);
    traceparse::reader::for_each_line(path, |line| match decode_line(line) {
        Ok(Decoded::Gfs2 { .. }) => {
            gfs2 += 1;
            events += 1;
        }
        Ok(Decoded::Other(_) | Decoded::Undecoded(_)) => events += 1,
        _ => {}
    })?;
    Ok((events, gfs2))
}

pub fn offline(glk: &Path, copies: usize) -> std::io::Result<()> {
    let file = prepare(copies)?;
    let wc = measure::wc(&file)?;
    let mut best = Duration::MAX;
    let mut events = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let (e, g) = decode_count(&file)?;
        best = best.min(t.elapsed());
        assert_eq!(e, g, "every line of the fixture is a gfs2 event");
        events = e;
    }
    let (e2e, rss) = measure::best_of(3, || {
        let mut c = Command::new(glk);
        c.args(["trace", "--summary", "--input"]).arg(&file);
        c.stderr(Stdio::null());
        c
    })?;
    let size = std::fs::metadata(&file)?.len() as f64 / (1 << 20) as f64;
    println!(
        "file                       {} ({size:.1} MiB, {events} events)",
        file.display()
    );
    println!(
        "wc -l                      {:>8.1} ms",
        wc.as_secs_f64() * 1e3
    );
    println!(
        "decode+count (library)     {:>8.1} ms  {:>6.2} M events/s  ratio {:.2}  (target >= 2 M/s, ratio <= 3)",
        best.as_secs_f64() * 1e3,
        events as f64 / best.as_secs_f64() / 1e6,
        best.as_secs_f64() / wc.as_secs_f64()
    );
    println!(
        "glk trace --summary        {:>8.1} ms  {:>6.2} M events/s  ratio {:.2}  peak RSS {:.1} MiB",
        e2e.as_secs_f64() * 1e3,
        events as f64 / e2e.as_secs_f64() / 1e6,
        e2e.as_secs_f64() / wc.as_secs_f64(),
        rss as f64 / 1024.0
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
