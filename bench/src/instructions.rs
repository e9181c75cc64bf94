//! Instruction counts of `glk top --once` and `glk trace --summary` under callgrind: the
//! same count for the same binary and input however busy the host is, so two builds can
//! be compared across hours where their timings cannot.

use std::path::Path;
use std::process::{Command, Stdio};

/// Counts the user-space instructions `glk ARGS` executes (every thread), from
/// callgrind's `Collected :` line.
fn count(glk: &Path, args: &[&str]) -> std::io::Result<u64> {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(glk)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("valgrind: {e} (Debian package valgrind: apt-get install valgrind)"),
            )
        })?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "valgrind glk {} failed ({}): {}",
            args.join(" "),
            out.status,
            err.lines().last().unwrap_or("")
        )));
    }
    err.lines()
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, n)| n.trim().to_owned())
        })
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| std::io::Error::other("valgrind printed no `Collected :` count"))
}

/// Prints the instructions of `glk top --once` on `glocks` (`records` records) and of
/// `glk trace --summary` on `trace` (`lines` lines).
pub fn run(
    glk: &Path,
    glocks: &Path,
    records: u64,
    trace: &Path,
    lines: u64,
) -> std::io::Result<()> {
    let show = |p: &Path| p.display().to_string();
    let runs = [
        (
            "glk top --once",
            vec!["top", "--once"],
            glocks,
            records,
            "record",
        ),
        (
            "glk trace --summary",
            vec!["trace", "--summary", "--input"],
            trace,
            lines,
            "line",
        ),
    ];
    for (label, mut args, file, units, unit) in runs {
        let path = show(file);
        args.push(&path);
        let n = count(glk, &args)?;
        let bytes = std::fs::metadata(file)?.len() as f64;
        println!(
            "{label:<20} {:>13} instructions  {:>6.1} a byte  {:>6.0} a {unit:<6}  ({path}, {:.1} MB)",
            group(n),
            n as f64 / bytes,
            n as f64 / units as f64,
            bytes / 1e6
        );
    }
    Ok(())
}

/// `1234567` as `1,234,567`.
fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_grouped() {
        assert_eq!(super::group(0), "0");
        assert_eq!(super::group(999), "999");
        assert_eq!(super::group(1000), "1,000");
        assert_eq!(super::group(683_735_274), "683,735,274");
    }
}
