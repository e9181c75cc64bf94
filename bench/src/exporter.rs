//! `bench exporter`: concurrent scrapers against `glk exporter` serving a debugfs-shaped tree
//! whose glocks file has N glocks (and the real capture's sbstats and DLM dump). Prints the
//! scrapes served and failed, their latency, the collections made, the exporter's peak RSS and
//! its CPU per collection and per scrape.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::measure;

/// What a run is asked for.
pub struct Load<'a> {
    /// The glk binary.
    pub glk: &'a Path,
    /// The glocks file (N glocks).
    pub glocks: &'a Path,
    /// Concurrent scrapers.
    pub scrapers: usize,
    /// How long they scrape.
    pub secs: f64,
    /// `--min-interval` of the exporter.
    pub min_interval: f64,
}

/// The debugfs-shaped tree: `DIR/gfs2/bench:fs/{glocks,sbstats}`, `DIR/dlm/fs_locks`.
fn tree(glocks: &Path) -> std::io::Result<PathBuf> {
    let dir = PathBuf::from("bench/out/exporter-debugfs");
    let fs = dir.join("gfs2/bench:fs");
    std::fs::create_dir_all(&fs)?;
    std::fs::create_dir_all(dir.join("dlm"))?;
    let link = fs.join("glocks");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(std::fs::canonicalize(glocks)?, &link)?;
    std::fs::copy(
        testdata::path("real/dlm2-6.1/n2/sbstats.4"),
        fs.join("sbstats"),
    )?;
    std::fs::copy(
        testdata::path("real/dlm2-6.1/n2/dlm_locks.4"),
        dir.join("dlm/fs_locks"),
    )?;
    Ok(dir)
}

/// A child killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One scrape: its status code (0: no answer) and body size.
fn scrape(port: u16) -> (u16, usize) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, 0);
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    if s
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n")
        .is_err()
    {
        return (0, 0);
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let code = std::str::from_utf8(&buf[..buf.len().min(16)])
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, buf.len())
}

/// The value of `name` (a sample line's start) in an exposition.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Runs the load: `l.scrapers` threads scrape `glk exporter` over a generated debugfs for
/// `l.secs` seconds; prints what was served, how fast, and the exporter's CPU and memory.
pub fn run(l: &Load) -> std::io::Result<()> {
    let (exporter, port) = start(l)?;
    let pid = exporter.0.id();
    let size = std::fs::metadata(l.glocks)?.len();
    println!(
        "glocks file     {} ({:.1} MiB), {} scrapers for {} s, --min-interval {} s",
        l.glocks.display(),
        size as f64 / (1 << 20) as f64,
        l.scrapers,
        l.secs,
        l.min_interval
    );
    let cpu0 = measure::cpu_seconds(pid).unwrap_or(0.0);
    let mut served = scrape_for(port, l.scrapers, l.secs);
    let cpu1 = measure::cpu_seconds(pid).unwrap_or(0.0);
    let hwm = measure::peak_rss_kib(pid).unwrap_or(0);
    let (collections, collect_s) = own_metrics(port);
    let cpu = cpu1 - cpu0;
    let (lat, wall) = (&mut served.latencies, served.wall_s);
    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "scrapes         {} served ({:.0}/s), {} failed; response {} bytes",
        lat.len(),
        lat.len() as f64 / wall,
        served.failed,
        served.bytes
    );
    println!(
        "latency         p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    println!(
        "collections     {collections:.0} (the glocks collector's last took {:.0} ms)",
        collect_s * 1e3
    );
    println!(
        "exporter CPU    {cpu:.2} s over {wall:.0} s: {:.3} ms per scrape served (its share of the collections included)",
        cpu * 1e3 / (lat.len().max(1) as f64)
    );
    println!("exporter RSS    peak {:.1} MiB", hwm as f64 / 1024.0);
    Ok(())
}

/// `glk exporter` on a free local port over a debugfs tree holding `l.glocks`, once it
/// listens (20 s at the most).
fn start(l: &Load) -> std::io::Result<(Running, u16)> {
    let debugfs = tree(l.glocks)?;
    let port = {
        let s = std::net::TcpListener::bind("127.0.0.1:0")?;
        s.local_addr()?.port()
    };
    let child = Command::new(l.glk)
        .args(["exporter", "--debugfs"])
        .arg(&debugfs)
        .args(["--sysfs", "/nonexistent", "--web.listen-address"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--min-interval")
        .arg(l.min_interval.to_string())
        .arg("--web.max-connections")
        .arg(l.scrapers.max(1).to_string())
        .stderr(Stdio::null())
        .spawn()?;
    let running = Running(child);
    let due = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > due {
            return Err(std::io::Error::other("glk exporter does not listen"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok((running, port))
}

/// What the scrapers were served.
struct Served {
    /// The time of each scrape answered 200.
    latencies: Vec<Duration>,
    /// Scrapes answered otherwise, or not at all.
    failed: u64,
    /// The largest response body.
    bytes: usize,
    /// How long the scrapers ran, seconds.
    wall_s: f64,
}

/// `scrapers` threads scraping `port` back to back for `secs` seconds.
fn scrape_for(port: u16, scrapers: usize, secs: f64) -> Served {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let threads: Vec<_> = (0..scrapers)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut failed = 0u64;
                let mut bytes = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let (code, n) = scrape(port);
                    if code == 200 {
                        lat.push(t.elapsed());
                        bytes = n;
                    } else {
                        failed += 1;
                    }
                }
                (lat, failed, bytes)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let mut served = Served {
        latencies: Vec::new(),
        failed: 0,
        bytes: 0,
        wall_s: 0.0,
    };
    for t in threads {
        let (l, f, b) = t.join().expect("a scraper thread");
        served.latencies.extend(l);
        served.failed += f;
        served.bytes = served.bytes.max(b);
    }
    served.wall_s = start.elapsed().as_secs_f64();
    served
}

/// The exporter's own figures from one more scrape: collections made, and how long the
/// glocks collector's last one took (seconds).
fn own_metrics(port: u16) -> (f64, f64) {
    let mut body = Vec::new();
    if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
        let _ = s.read_to_end(&mut body);
    }
    let text = String::from_utf8_lossy(&body);
    let collections = sample(&text, "glk_exporter_collections_total").unwrap_or(0.0);
    let collect_s = sample(
        &text,
        "glk_exporter_collector_duration_seconds{collector=\"glocks\"}",
    )
    .unwrap_or(0.0);
    (collections, collect_s)
}
