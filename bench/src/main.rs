//! glk benchmarks, the binary `bench` (`cargo build --release -p bench`, then
//! `target/release/bench`). Each prints its figures; none asserts a target (targets are judged by
//! reading the figures, never by a timed test).
//!
//! ```text
//! bench gen-glocks --glocks 1000000 --out bench/out/glocks-1M
//! bench top --glocks 1000000          # wc -l vs glk top --once, peak RSS
//! bench trace [--copies 10]            # decode throughput vs wc -l (nolock fixture)
//! bench live [--rate 200000] [--secs 10] [--source syscall|marker] [--reader auto|raw|text] [--out jsonl|txt]
//!                                          # a flood through glk trace, events kept
//! bench export [--copies 10]           # Parquet export rows/s
//! bench analyze [--capture dlm2-6.1] [--nodes 2] [--copies 10] [--runs 3] [--python] [--against OLD]   # glk analyze at scale
//! bench instructions [--glocks 100000]  # callgrind instruction counts of top and trace
//! bench exporter [--glocks 1000000] [--scrapers 50] [--secs 60] [--min-interval 5]  # scrape load
//! bench cluster [--nodes 16] [--glocks 100000] [--refreshes 5]  # cluster mode over sshd (root)
//! bench fleet [--events 100000000] [--captures 100]  # glk fleet over a dataset made from real captures
//! ```

mod analyze;
mod cluster;
mod export;
mod exporter;
mod fleet;
mod gen;
mod instructions;
mod measure;
mod trace;

use std::path::{Path, PathBuf};

fn usage() -> ! {
    eprintln!(
        "usage: bench gen-glocks --glocks N --out FILE\n       bench top [--glocks N] [--file FILE] [--glk PATH]\n       bench trace [--copies N] [--glk PATH]\n       bench live [--rate N] [--secs S] [--source syscall|marker] [--reader auto|raw|text] [--out jsonl|txt] [--glk PATH]\n       bench export [--copies N]\n       bench analyze [--capture NAME] [--nodes N] [--copies N] [--runs N] [--python] [--glk PATH] [--against PATH]\n       bench instructions [--glocks N] [--glk PATH]\n       bench exporter [--glocks N] [--scrapers N] [--secs S] [--min-interval S] [--glk PATH]\n       bench cluster [--nodes N] [--glocks N] [--refreshes N] [--glk PATH]\n       bench fleet [--events N] [--captures N] [--engine PATH]"
    );
    std::process::exit(2)
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .map(|i| args.get(i + 1).cloned().unwrap_or_else(|| usage()))
}

fn count(args: &[String]) -> u64 {
    arg(args, "--glocks")
        .map(|s| s.parse().unwrap_or_else(|_| usage()))
        .unwrap_or(1_000_000)
}

fn generate(n: u64, out: &Path) -> std::io::Result<u64> {
    if let Some(d) = out.parent() {
        std::fs::create_dir_all(d)?;
    }
    let mut w = std::io::BufWriter::new(std::fs::File::create(out)?);
    let bytes = gen::write_glocks(n, &mut w)?;
    std::io::Write::flush(&mut w)?;
    Ok(bytes)
}

/// `bench/out/glocks-N`, generated the first time.
fn glocks_file(n: u64) -> std::io::Result<PathBuf> {
    let f = PathBuf::from(format!("bench/out/glocks-{n}"));
    if !f.exists() {
        let bytes = generate(n, &f)?;
        println!("generated {n} glocks ({bytes} bytes) in {}", f.display());
    }
    Ok(f)
}

/// The glk binary built next to this one (same target directory and profile).
fn sibling_glk() -> PathBuf {
    let me = std::env::current_exe().expect("current exe");
    me.with_file_name("glk")
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen-glocks") => {
            let out = PathBuf::from(arg(&args, "--out").unwrap_or_else(|| usage()));
            let n = count(&args);
            let bytes = generate(n, &out)?;
            println!("wrote {n} glocks, {bytes} bytes, to {}", out.display());
        }
        Some("top") => {
            let file = match arg(&args, "--file") {
                Some(f) => PathBuf::from(f),
                None => glocks_file(count(&args))?,
            };
            let glk = arg(&args, "--glk").map_or_else(sibling_glk, PathBuf::from);
            measure::top(&glk, &file)?;
        }
        Some("instructions") => {
            let n =
                arg(&args, "--glocks").map_or(100_000, |s| s.parse().unwrap_or_else(|_| usage()));
            let glocks = glocks_file(n)?;
            let trace = trace::prepare(1)?;
            let lines = std::fs::read(&trace)?
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64;
            let glk = arg(&args, "--glk").map_or_else(sibling_glk, PathBuf::from);
            instructions::run(&glk, &glocks, n, &trace, lines)?;
        }
        Some("trace") => {
            let copies =
                arg(&args, "--copies").map_or(1, |s| s.parse().unwrap_or_else(|_| usage()));
            let glk = arg(&args, "--glk").map_or_else(sibling_glk, PathBuf::from);
            trace::offline(&glk, copies)?;
        }
        Some("live") => {
            let rate =
                arg(&args, "--rate").map_or(200_000, |s| s.parse().unwrap_or_else(|_| usage()));
            let secs = arg(&args, "--secs").map_or(10.0, |s| s.parse().unwrap_or_else(|_| usage()));
            let glk = arg(&args, "--glk").map_or_else(sibling_glk, PathBuf::from);
            let source = match arg(&args, "--source").as_deref() {
                None | Some("syscall") => trace::Source::Syscall,
                Some("marker") => trace::Source::Marker,
                Some(_) => usage(),
            };
            let live = trace::Live {
                source,
                rate,
                secs,
                reader: arg(&args, "--reader").unwrap_or_else(|| "auto".into()),
                ext: arg(&args, "--out").unwrap_or_else(|| "jsonl".into()),
            };
            trace::live(&glk, &live)?;
        }
        Some("export") => {
            let copies =
                arg(&args, "--copies").map_or(10, |s| s.parse().unwrap_or_else(|_| usage()));
            export::run(copies)?;
        }
        Some("analyze") => {
            let num = |name: &str, default: usize| {
                arg(&args, name).map_or(default, |s| s.parse().unwrap_or_else(|_| usage()))
            };
            let glk = arg(&args, "--glk").map_or_else(sibling_glk, PathBuf::from);
            let against = arg(&args, "--against").map(PathBuf::from);
            let capture = arg(&args, "--capture").unwrap_or_else(|| "dlm2-6.1".into());
            analyze::run(&analyze::Run {
                glk: &glk,
                against: against.as_deref(),
                capture: &capture,
                nodes: num("--nodes", 2),
                copies: num("--copies", 10),
                runs: num("--runs", 3),
                python: args.iter().any(|a| a == "--python"),
            })?;
        }
        Some("exporter") => {
            let glocks = glocks_file(count(&args))?;
            let glk = arg(&args, "--glk").map_or_else(sibling_glk, PathBuf::from);
            let num = |name: &str, default: f64| {
                arg(&args, name).map_or(default, |s| s.parse().unwrap_or_else(|_| usage()))
            };
            exporter::run(&exporter::Load {
                glk: &glk,
                glocks: &glocks,
                scrapers: num("--scrapers", 50.0) as usize,
                secs: num("--secs", 60.0),
                min_interval: num("--min-interval", 5.0),
            })?;
        }
        Some("cluster") => {
            let num = |name: &str, default: usize| {
                arg(&args, name).map_or(default, |s| s.parse().unwrap_or_else(|_| usage()))
            };
            let generated = glocks_file(num("--glocks", 100_000) as u64)?;
            let glk = arg(&args, "--glk").map_or_else(sibling_glk, PathBuf::from);
            cluster::run(&cluster::Setup {
                glk: &std::fs::canonicalize(glk)?,
                nodes: num("--nodes", 16),
                generated: &generated,
                refreshes: num("--refreshes", 5),
            })?;
        }
        Some("fleet") => {
            let num = |name: &str, default: u64| {
                arg(&args, name).map_or(default, |s| s.parse().unwrap_or_else(|_| usage()))
            };
            let engine = arg(&args, "--engine")
                .map_or_else(|| sibling_glk().with_file_name("glk-engine"), PathBuf::from);
            fleet::run(&fleet::Setup {
                engine: &std::fs::canonicalize(engine)?,
                events: num("--events", 100_000_000),
                captures: num("--captures", 100) as usize,
            })?;
        }
        _ => usage(),
    }
    Ok(())
}
