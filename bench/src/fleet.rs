//! `glk fleet` over a fleet dataset of at least 10^8 events, made from real captures:
//! three real two-node captures (`handoff-6.12`, `handoff-6.1`, `dlm2-6.1`, each node's
//! trace repeated with shifted timestamps as `bench analyze` does) are added to one
//! dataset by `glk-engine export --dataset`, again and again, each time as another capture
//! (its snapshot times two days later than the one before, in one of four clusters), until
//! the dataset holds the events asked for. Then each `glk fleet` question runs over the
//! whole dataset; its wall time and peak RSS are printed (goal: within 2 GiB).

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The real captures the dataset is made from.
const BASES: [&str; 3] = ["handoff-6.12", "handoff-6.1", "dlm2-6.1"];

/// What `bench fleet` builds and measures.
pub struct Setup<'a> {
    /// The glk-engine to run.
    pub engine: &'a Path,
    /// Events the dataset must hold at least.
    pub events: u64,
    /// Captures to spread them over.
    pub captures: usize,
}

/// Trace lines of the real capture `base`'s two nodes.
fn base_lines(base: &str) -> io::Result<u64> {
    let mut lines = 0;
    for n in ["n1", "n2"] {
        let path = testdata::path(&format!("real/{base}/{n}/trace_pipe.txt.xz"));
        let mut text = Vec::new();
        io::Read::read_to_end(&mut glockparse::input::open(&path)?, &mut text)?;
        lines += text.iter().filter(|b| **b == b'\n').count() as u64;
    }
    Ok(lines)
}

/// Capture `k`'s node directories: links to the base's files, with its own snapshot times
/// (`days` later than the base's) and the base's kernel release.
fn stage(base_dir: &Path, base: &str, days: u64, into: &Path) -> io::Result<()> {
    let _ = std::fs::remove_dir_all(into);
    // analyze::prepare's two nodes, made from the base's n1 and n2.
    for node in ["n1", "n2"] {
        let (src, dst) = (base_dir.join(node), into.join(node));
        std::fs::create_dir_all(&dst)?;
        for e in std::fs::read_dir(&src)?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("time.") {
                let t: f64 = std::fs::read_to_string(e.path())?
                    .trim()
                    .parse()
                    .map_err(io::Error::other)?;
                std::fs::write(
                    dst.join(&name),
                    format!("{:.6}\n", t + days as f64 * 86_400.0),
                )?;
            } else {
                std::os::unix::fs::symlink(std::fs::canonicalize(e.path())?, dst.join(&name))?;
            }
        }
        let kernel = bundle::NodeFile::Kernel;
        std::fs::copy(
            kernel.path_in(&testdata::path(&format!("real/{base}/{node}"))),
            kernel.path_in(&dst),
        )?;
    }
    Ok(())
}

/// The size of everything below `dir`, bytes, and its number of files.
fn du(dir: &Path) -> (u64, u64) {
    let (mut bytes, mut files) = (0, 0);
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => {
                    bytes += m.len();
                    files += 1;
                }
                Err(_) => {}
            }
        }
    }
    (bytes, files)
}

/// `bench/out/fleet-vVERSION-EVENTS`: the dataset, made once for each version of the
/// dataset's layout (`.complete` holds its event count).
fn dataset(s: &Setup) -> io::Result<(PathBuf, u64)> {
    let dir = PathBuf::from(format!(
        "bench/out/fleet-v{}-{}",
        frames::export::DATASET_VERSION,
        s.events
    ));
    let done = dir.join(".complete");
    if let Ok(n) = std::fs::read_to_string(&done) {
        return Ok((dir, n.trim().parse().unwrap_or(0)));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let per_capture = s.events.div_ceil(s.captures as u64);
    let mut bases = Vec::new();
    for b in BASES {
        let copies = per_capture.div_ceil(base_lines(b)?) as usize;
        let (d, lines) = crate::analyze::prepare(b, 2, copies)?;
        println!("base {b}: {} ({lines} trace lines a capture)", d.display());
        bases.push((b, d));
    }
    let stage_dir = PathBuf::from("bench/out/fleet-stage");
    let t = std::time::Instant::now();
    let mut events = 0u64;
    for k in 0..s.captures {
        let (base, base_dir) = &bases[k % bases.len()];
        stage(base_dir, base, 2 * k as u64, &stage_dir)?;
        let out = Command::new(s.engine)
            .arg("export")
            .arg(&stage_dir)
            .arg("--dataset")
            .arg(&dir)
            .arg("--cluster")
            .arg(format!("c{}", k % 4))
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "glk-engine export failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        // Its `nodes` rows count the trace events it added.
        events += String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("table=events/"))
            .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .sum::<u64>();
        if k % 10 == 9 || k + 1 == s.captures {
            println!(
                "  {} captures, {events} events, {:.0} s",
                k + 1,
                t.elapsed().as_secs_f64()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&stage_dir);
    std::fs::write(&done, format!("{events}\n"))?;
    Ok((dir, events))
}

/// Builds the dataset (once) and prints each question's wall time and peak RSS.
pub fn run(s: &Setup) -> io::Result<()> {
    let (dir, events) = dataset(s)?;
    let (bytes, files) = du(&dir);
    println!(
        "dataset            {} ({events} events, {} captures, {files} files, {:.2} GiB)",
        dir.display(),
        s.captures,
        bytes as f64 / (1u64 << 30) as f64
    );
    for (name, extra) in [
        ("hot", &[][..]),
        ("hot", &["--by", "kernel"][..]),
        ("masters", &[][..]),
        ("storms", &[][..]),
    ] {
        let mut c = Command::new(s.engine);
        c.arg("fleet").arg(name).arg(&dir).args(extra).arg("--json");
        let r = crate::measure::run_once(&mut c)?;
        let out = Command::new(s.engine)
            .arg("fleet")
            .arg(name)
            .arg(&dir)
            .args(extra)
            .args(["--limit", "1", "--json"])
            .output()?;
        println!(
            "fleet {:<18} {:>7.2} s  {:>6.1} M events/s  peak RSS {:>7.1} MiB  CPU {:.1} s",
            format!("{name} {}", extra.join(" ")),
            r.wall.as_secs_f64(),
            events as f64 / r.wall.as_secs_f64() / 1e6,
            r.rss_kib as f64 / 1024.0,
            r.cpu.as_secs_f64()
        );
        println!(
            "  first row: {}",
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or("(none)")
        );
    }
    Ok(())
}
