//! `glk analyze` at cluster scale: a real two-node capture (`real/dlm2-6.1`, gfs2 events
//! only, or with `--capture handoff-6.12` gfs2 and dlm events) made longer by repeating each
//! node's trace with shifted timestamps, and wider by giving more nodes the same kind of
//! trace. Measures `glk analyze`'s wall time, lines per second and peak RSS; with
//! `--against PATH`, another build's (an older glk, or glk-engine before the analyses moved
//! into glk) in the same run, the two alternating; and a plain Python pass over the same
//! trace files (what users would write instead).

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Rewrites the `SECS.USECS:` timestamp of an ftrace line shifted by `shift_us`; lines
/// without one come back unchanged.
fn shifted(line: &str, shift_us: u64) -> Option<String> {
    let close = line.find("] ")?;
    let rest = &line[close + 2..];
    let colon = rest.find(": ")?;
    let head = &rest[..colon];
    let ts = head.rsplit(' ').next()?;
    let (secs, usecs) = ts.split_once('.')?;
    let t = secs.parse::<u64>().ok()? * 1_000_000 + usecs.parse::<u64>().ok()? + shift_us;
    let at = close + 2 + head.len() - ts.len();
    Some(format!(
        "{}{}.{:06}{}",
        &line[..at],
        t / 1_000_000,
        t % 1_000_000,
        &line[at + ts.len()..]
    ))
}

/// The capture `bench/out/analyze-NODESx{copies}` (`analyze-CAPTURE-NODESx{copies}` for
/// another capture than `dlm2-6.1`): `nodes` node directories, node `i` holding the real n1
/// or n2 (alternately) snapshots and its trace repeated `copies` times, each copy shifted
/// past the previous one (clock markers only in the first). Made once.
pub fn prepare(capture: &str, nodes: usize, copies: usize) -> io::Result<(PathBuf, u64)> {
    let dir = PathBuf::from(if capture == "dlm2-6.1" {
        format!("bench/out/analyze-{nodes}x{copies}")
    } else {
        format!("bench/out/analyze-{capture}-{nodes}x{copies}")
    });
    let done = dir.join(".complete");
    let mut lines = 0u64;
    if let Ok(s) = std::fs::read_to_string(&done) {
        return Ok((dir, s.trim().parse().unwrap_or(0)));
    }
    let _ = std::fs::remove_dir_all(&dir);
    for i in 0..nodes {
        let src_name = if i % 2 == 0 { "n1" } else { "n2" };
        let src = testdata::path(&format!("real/{capture}/{src_name}"));
        let name = format!("n{}", i + 1);
        let out = dir.join(&name);
        std::fs::create_dir_all(&out)?;
        for e in std::fs::read_dir(&src)?.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            let snapshot = ["glocks.", "glstats.", "dlm_locks.", "sbstats.", "time."]
                .iter()
                .any(|k| f.starts_with(k));
            if snapshot {
                std::fs::copy(e.path(), out.join(&f))?;
            }
        }
        std::fs::write(out.join("node"), format!("{name}\n"))?;
        let mut text = String::new();
        io::Read::read_to_string(
            &mut glockparse::input::open(&src.join("trace_pipe.txt.xz"))?,
            &mut text,
        )?;
        let span_us = text
            .lines()
            .rev()
            .find_map(|l| shifted(l, 0).and(Some(l)))
            .and_then(|l| {
                let rest = &l[l.find("] ")? + 2..];
                let head = &rest[..rest.find(": ")?];
                let (s, u) = head.rsplit(' ').next()?.split_once('.')?;
                Some(s.parse::<u64>().ok()? * 1_000_000 + u.parse::<u64>().ok()?)
            })
            .unwrap_or(0)
            + 1_000_000;
        let mut w = io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(out.join("trace_pipe.txt"))?,
        );
        for k in 0..copies as u64 {
            for l in io::BufReader::new(text.as_bytes()).lines() {
                let l = l?;
                if k > 0 && l.contains("glkmark ") {
                    continue;
                }
                match shifted(&l, k * span_us) {
                    Some(s) => writeln!(w, "{s}")?,
                    None => writeln!(w, "{l}")?,
                }
                lines += 1;
            }
        }
        w.flush()?;
    }
    std::fs::write(&done, format!("{lines}\n"))?;
    Ok((dir, lines))
}

/// The Python baseline: one regex per line, counting events per glock and pairing queue
/// with promote per glock, node by node (bench/analyze_baseline.py).
fn python_cmd(dir: &Path) -> Command {
    let mut c = Command::new("python3");
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("analyze_baseline.py"))
        .arg(dir);
    c
}

/// Best wall time and largest peak RSS (KiB) of `runs` runs of each binary's `analyze DIR
/// --json`, the binaries alternating run by run so that both meet the same machine.
fn best_of(bins: &[&Path], dir: &Path, runs: usize) -> io::Result<Vec<(std::time::Duration, u64)>> {
    let mut best = vec![(std::time::Duration::MAX, 0); bins.len()];
    for _ in 0..runs.max(1) {
        for (bin, b) in bins.iter().zip(best.iter_mut()) {
            let mut c = Command::new(bin);
            c.arg("analyze").arg(dir).arg("--json");
            let r = crate::measure::run_once(&mut c)?;
            b.0 = b.0.min(r.wall);
            b.1 = b.1.max(r.rss_kib);
        }
    }
    Ok(best)
}

/// Glock events the report says it read (the sum of its per-node `events`).
fn events_read(glk: &Path, dir: &Path) -> io::Result<u64> {
    let out = Command::new(glk)
        .arg("analyze")
        .arg(dir)
        .arg("--json")
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .split("\"events\":")
        .skip(1)
        .filter_map(|s| {
            s.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum::<u64>())
}

/// What `bench analyze` measures.
pub struct Run<'a> {
    /// The glk to measure.
    pub glk: &'a Path,
    /// Another build to measure in the same run.
    pub against: Option<&'a Path>,
    /// The real capture the input is made from.
    pub capture: &'a str,
    /// Nodes and copies of each node's trace.
    pub nodes: usize,
    pub copies: usize,
    /// Runs of each binary (the best is reported).
    pub runs: usize,
    /// Also time the Python baseline.
    pub python: bool,
}

pub fn run(r: &Run) -> io::Result<()> {
    let (dir, lines) = prepare(r.capture, r.nodes, r.copies)?;
    // Best of `runs` (this machine is shared: single runs vary by up to 2x).
    let mut bins = vec![r.glk];
    bins.extend(r.against);
    let best = best_of(&bins, &dir, r.runs)?;
    let events = events_read(r.glk, &dir)?;
    println!(
        "capture            {} ({} nodes, {lines} trace lines, {events} glock events)",
        dir.display(),
        r.nodes
    );
    for (bin, (t, rss)) in bins.iter().zip(&best) {
        println!(
            "{:<18} {:>8.2} s  {:>6.2} M lines/s  peak RSS {:>7.1} MiB  (best of {})",
            bin.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            t.as_secs_f64(),
            lines as f64 / t.as_secs_f64() / 1e6,
            *rss as f64 / 1024.0,
            r.runs
        );
        println!("                   {}", bin.display());
    }
    let t = best[0].0;
    if r.python {
        let py = crate::measure::run_once(&mut python_cmd(&dir))?;
        let (tp, rp) = (py.wall, py.rss_kib);
        println!(
            "python baseline    {:>8.2} s  {:>6.2} M lines/s  peak RSS {:>7.1} MiB  (glk {:.1}x faster)",
            tp.as_secs_f64(),
            lines as f64 / tp.as_secs_f64() / 1e6,
            rp as f64 / 1024.0,
            tp.as_secs_f64() / t.as_secs_f64()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_shift_and_keep_their_layout() {
        let l = "           mkdir-243     [000] ...1.    59.642391: gfs2_glock_queue: 254,0 glock 2:8760 queue PR";
        assert_eq!(
            super::shifted(l, 1_500_000).unwrap(),
            "           mkdir-243     [000] ...1.    61.142391: gfs2_glock_queue: 254,0 glock 2:8760 queue PR"
        );
        assert!(super::shifted("# tracer: nop", 5).is_none());
    }
}
