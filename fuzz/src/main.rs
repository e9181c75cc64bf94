//! glk-fuzz: runs the parser targets (or the command line) on mutated real inputs and
//! prints what it did.
//!
//!     glk-fuzz [TARGET...] [--iterations N] [--seconds S] [--seed N]
//!     glk-fuzz cli --glk PATH [--iterations N] [--seconds S] [--seed N]
//!
//! With no target, every parser target. Exits 1 when anything panicked or failed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let mut names = Vec::new();
    let (mut iterations, mut seconds, mut seed, mut glk) = (1_000_000u64, None, 1u64, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |what: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{what} needs a value"))
        };
        match a.as_str() {
            "--iterations" => iterations = value("--iterations").parse().expect("a number"),
            "--seconds" => seconds = Some(value("--seconds").parse::<f64>().expect("a number")),
            "--seed" => seed = value("--seed").parse().expect("a number"),
            "--glk" => glk = Some(PathBuf::from(value("--glk"))),
            "-h" | "--help" => {
                println!(
                    "glk-fuzz [TARGET...|cli --glk PATH] [--iterations N] [--seconds S] [--seed N]"
                );
                let t: Vec<&str> = fuzz::TARGETS.iter().map(|t| t.name).collect();
                println!("targets: {}", t.join(" "));
                return ExitCode::SUCCESS;
            }
            _ => names.push(a),
        }
    }
    if names.iter().any(|n| n == "cli") {
        let Some(glk) = glk else {
            eprintln!("glk-fuzz cli needs --glk PATH (with glk-engine next to it)");
            return ExitCode::from(2);
        };
        let keep = std::env::temp_dir().join("glk-fuzz-failures");
        let t = std::time::Instant::now();
        let until = seconds.map(|s| t + Duration::from_secs_f64(s));
        let limit = Duration::from_secs(60);
        let r = fuzz::cli::run(&glk, iterations, until, seed, limit, &keep);
        println!(
            "cli: {} commands on {} mutated inputs in {:.0}s; exit codes {:?}; {} failures",
            r.runs,
            r.inputs,
            t.elapsed().as_secs_f64(),
            r.exits,
            r.failures.len()
        );
        for f in &r.failures {
            println!(
                "  {}: {} (input kept in {})",
                f.command,
                f.what,
                f.input.display()
            );
        }
        return if r.failures.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let mut failed = false;
    for t in fuzz::TARGETS {
        if !names.is_empty() && !names.iter().any(|n| n == t.name) {
            continue;
        }
        let budget = seconds.map(Duration::from_secs_f64);
        let r = fuzz::run(t, iterations, budget, seed);
        println!(
            "{:<13} {:>10} executions in {:>7.1}s ({:>8.0}/s), {} panics",
            t.name,
            r.executions,
            r.elapsed.as_secs_f64(),
            r.executions as f64 / r.elapsed.as_secs_f64().max(1e-9),
            r.panic_count
        );
        for (input, msg) in &r.panics {
            let keep = std::env::temp_dir().join(format!("glk-fuzz-{}-{}", t.name, input.len()));
            let _ = std::fs::write(&keep, input);
            println!("  panic: {msg} (input kept in {})", keep.display());
        }
        failed |= r.panic_count > 0;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
