//! `glk doctor`: the analysis as findings: what is wrong, how sure, the evidence, and what
//! to do, with an exit status for scripts and monitoring.

use std::io::{self, Write};
use std::path::Path;

use analysis::findings::{Finding, FindingCode, Severity, Thresholds};
use analysis::{self as analyze, Options, StormOptions};
use bundle::Captures;
use clikit::args::{DoctorArgs, FailOn};

use crate::analyze::{load_for_analysis, Loaded};

/// What `glk doctor` concluded, for its exit status.
pub enum Verdict {
    /// Nothing above `--fail-on`.
    Clean,
    /// Findings above `--fail-on`.
    Findings,
}

fn fail_level(f: FailOn) -> Severity {
    match f {
        FailOn::Info => Severity::Info,
        FailOn::Warning => Severity::Warning,
        FailOn::Error => Severity::Error,
        FailOn::Critical => Severity::Critical,
    }
}

/// Finds the inode `ino` under `root` (same filesystem), giving up after `budget` entries.
fn find_inode(root: &Path, ino: u64, budget: &mut usize) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(root).ok()?.dev();
    if std::fs::metadata(root).ok()?.ino() == ino {
        return Some(root.to_path_buf());
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            let Ok(m) = e.metadata() else { continue };
            if m.ino() == ino {
                return Some(e.path());
            }
            if m.is_dir() && m.dev() == dev {
                stack.push(e.path());
            }
        }
    }
    None
}

/// Names the inodes of hot-glock findings by path, where the capture says the filesystem
/// is mounted.
fn resolve_paths(fs: &mut [Finding], caps: &Captures) {
    let mount = caps.nodes.iter().find_map(|n| {
        let p = n.last_sysfs()?;
        Some(bundle::health::Sysfs::read(p).ok()?.mount()?.to_string())
    });
    let Some(mount) = mount else { return };
    let mut budget = 500_000;
    for f in fs.iter_mut().filter(|f| f.code == FindingCode::HotGlock) {
        let Some(g) = f
            .glocks
            .first()
            .and_then(|g| g.parse::<glockparse::GlockId>().ok())
        else {
            continue;
        };
        if g.gltype != 2 {
            continue;
        }
        if let Some(p) = find_inode(Path::new(&mount), g.number, &mut budget) {
            f.title = format!("{} [path {}]", f.title, p.display());
        }
    }
}

pub fn run(a: &DoctorArgs) -> io::Result<Verdict> {
    let mut loaded = load_for_analysis(&a.captures, a.filesystem.only())?;
    let o = Options {
        storms: StormOptions {
            window_ns: (a.storm_window * 1e9) as u64,
            min_demotes: a.storm_min.max(1),
            ..StormOptions::default()
        },
        stuck_after: a.stuck.stuck_after,
        ..Options::default()
    };
    let t = Thresholds {
        hot_demotes: a.hot_demotes,
        slow_dlm_ms: a.slow_dlm_ms,
        ..Thresholds::default()
    };
    let (report, mut fs) = loaded.diagnose(&o, &t);
    let Loaded {
        caps,
        diagnostics: diag,
        ..
    } = &loaded;
    if a.resolve_paths {
        resolve_paths(&mut fs, caps);
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    if a.json {
        let mut v = serde_json::json!({
            "nodes": report.nodes,
            "findings": fs,
            "errors": clikit::diag::errors(diag),
        });
        // What the inputs lack or held beside what was read, as `glk analyze --json` has it.
        let input = &report.input;
        for (key, lines) in [("lacks", &input.lacks), ("passed_over", &input.passed_over)] {
            if !lines.is_empty() {
                v[key] = serde_json::json!(lines);
            }
        }
        serde_json::to_writer(&mut out, &v)?;
        writeln!(out)?;
    } else {
        text(&mut out, &fs, &report)?;
    }
    out.flush()?;
    clikit::diag::report(diag);
    let level = fail_level(a.fail_on);
    Ok(if fs.iter().any(|f| f.severity > level) {
        Verdict::Findings
    } else {
        Verdict::Clean
    })
}

fn text(out: &mut impl Write, fs: &[Finding], r: &analyze::Report) -> io::Result<()> {
    let nodes: Vec<&str> = r.nodes.iter().map(|n| n.node.as_str()).collect();
    let count = |s: Severity| fs.iter().filter(|f| f.severity == s).count();
    writeln!(
        out,
        "glk doctor: {} finding(s) from {} ({} critical, {} error, {} warning, {} info)",
        fs.len(),
        nodes.join(", "),
        count(Severity::Critical),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    )?;
    if fs.is_empty() {
        writeln!(out, "nothing wrong found")?;
    }
    for f in fs {
        writeln!(out)?;
        writeln!(
            out,
            "{:<8} {}  {}",
            f.severity.as_str().to_uppercase(),
            f.code,
            f.title
        )?;
        if let Some(who) = f.who() {
            writeln!(out, "         {who}")?;
        }
        for e in f.evidence.iter().take(8) {
            writeln!(out, "         evidence {}: {}", e.at(), e.shows)?;
        }
        if f.evidence.len() > 8 {
            writeln!(
                out,
                "         ... {} more (--json has them all)",
                f.evidence.len() - 8
            )?;
        }
        writeln!(out, "         remedy: {}", f.remedy)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn inodes_are_found_by_walking_the_mount() {
        let (d, deep) = testdata::scratch_file("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        for i in 0..50 {
            std::fs::write(d.path().join(format!("a/f{i}")), "x").unwrap();
        }
        let target = deep.join("hot");
        std::fs::write(&target, "x").unwrap();
        let ino = std::fs::metadata(&target).unwrap().ino();
        let mut budget = 1000;
        assert_eq!(find_inode(d.path(), ino, &mut budget), Some(target));
        // The root itself, and a budget that runs out before the file.
        let root_ino = std::fs::metadata(d.path()).unwrap().ino();
        assert_eq!(
            find_inode(d.path(), root_ino, &mut 10),
            Some(d.path().to_path_buf())
        );
        assert_eq!(find_inode(d.path(), ino, &mut 5), None);
    }
}
