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
//! bench fdlocks [--procs 1000] [--files 10] [--runs 5]  # who holds a lock through which open file
//! ```

mod analyze;
mod cluster;
mod export;
mod exporter;
mod fdlocks;
mod fleet;
mod gen;
mod instructions;
mod measure;
mod trace;

use std::path::{Path, PathBuf};

fn usage() -> ! {
    eprintln!(
        "usage: bench gen-glocks --glocks N --out FILE\n       bench top [--glocks N] [--file FILE] [--glk PATH]\n       bench trace [--copies N] [--glk PATH]\n       bench live [--rate N] [--secs S] [--source syscall|marker] [--reader auto|raw|text] [--out jsonl|txt] [--glk PATH]\n       bench export [--copies N]\n       bench analyze [--capture NAME] [--nodes N] [--copies N] [--runs N] [--python] [--glk PATH] [--against PATH]\n       bench instructions [--glocks N] [--glk PATH]\n       bench exporter [--glocks N] [--scrapers N] [--secs S] [--min-interval S] [--glk PATH]\n       bench cluster [--nodes N] [--glocks N] [--refreshes N] [--glk PATH]\n       bench fleet [--events N] [--captures N] [--engine PATH]\n       bench fdlocks [--procs N] [--files N] [--runs N]"
    );
    std::process::exit(2)
}

/// The command line after the benchmark's name: `--name value` options and `--flag`s.
struct Args(Vec<String>);

impl Args {
    /// The value after `name`, if given (a missing value is a usage error).
    fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .position(|a| a == name)
            .map(|i| self.0.get(i + 1).cloned().unwrap_or_else(|| usage()))
    }

    /// The number after `name`, else `default` (one that does not parse is a usage error).
    fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        self.get(name)
            .map_or(default, |s| s.parse().unwrap_or_else(|_| usage()))
    }

    /// Whether `--name` is given.
    fn flag(&self, name: &str) -> bool {
        self.0.iter().any(|a| a == name)
    }

    /// The glk binary to measure: `--glk`, else the one built next to this one.
    fn glk(&self) -> PathBuf {
        self.get("--glk").map_or_else(sibling_glk, PathBuf::from)
    }

    /// `--glocks` for the benchmarks that read a generated glocks file (default 1,000,000).
    fn glocks(&self) -> u64 {
        self.num("--glocks", 1_000_000)
    }
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
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_default();
    let args = Args(args.collect());
    match name.as_str() {
        "gen-glocks" => gen_glocks(&args),
        "top" => top(&args),
        "instructions" => instructions(&args),
        "trace" => trace::offline(&args.glk(), args.num("--copies", 1)),
        "live" => live(&args),
        "export" => export::run(args.num("--copies", 10)),
        "analyze" => analyze(&args),
        "exporter" => exporter(&args),
        "cluster" => cluster(&args),
        "fleet" => fleet(&args),
        "fdlocks" => fdlocks::run(
            args.num("--procs", 1000),
            args.num("--files", 10),
            args.num("--runs", 5),
        ),
        _ => usage(),
    }
}

/// `bench gen-glocks`: a glocks file of `--glocks` entries at `--out`.
fn gen_glocks(args: &Args) -> std::io::Result<()> {
    let out = PathBuf::from(args.get("--out").unwrap_or_else(|| usage()));
    let n = args.glocks();
    let bytes = generate(n, &out)?;
    println!("wrote {n} glocks, {bytes} bytes, to {}", out.display());
    Ok(())
}

/// `bench top`: `glk top --once` over `--file` or a generated glocks file.
fn top(args: &Args) -> std::io::Result<()> {
    let file = match args.get("--file") {
        Some(f) => PathBuf::from(f),
        None => glocks_file(args.glocks())?,
    };
    measure::top(&args.glk(), &file)
}

/// `bench instructions`: callgrind counts of top and trace.
fn instructions(args: &Args) -> std::io::Result<()> {
    let n = args.num("--glocks", 100_000);
    let glocks = glocks_file(n)?;
    let trace = trace::prepare(1)?;
    let lines = std::fs::read(&trace)?
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64;
    instructions::run(&args.glk(), &glocks, n, &trace, lines)
}

/// `bench live`: a flood of events through `glk trace`.
fn live(args: &Args) -> std::io::Result<()> {
    let source = match args.get("--source").as_deref() {
        None | Some("syscall") => trace::Source::Syscall,
        Some("marker") => trace::Source::Marker,
        Some(_) => usage(),
    };
    let live = trace::Live {
        source,
        rate: args.num("--rate", 200_000),
        secs: args.num("--secs", 10.0),
        reader: args.get("--reader").unwrap_or_else(|| "auto".into()),
        ext: args.get("--out").unwrap_or_else(|| "jsonl".into()),
    };
    trace::live(&args.glk(), &live)
}

/// `bench analyze`: `glk analyze` over many copies of a real capture.
fn analyze(args: &Args) -> std::io::Result<()> {
    let against = args.get("--against").map(PathBuf::from);
    let capture = args.get("--capture").unwrap_or_else(|| "dlm2-6.1".into());
    analyze::run(&analyze::Run {
        glk: &args.glk(),
        against: against.as_deref(),
        capture: &capture,
        nodes: args.num("--nodes", 2),
        copies: args.num("--copies", 10),
        runs: args.num("--runs", 3),
        python: args.flag("--python"),
    })
}

/// `bench exporter`: scrapers against `glk exporter`.
fn exporter(args: &Args) -> std::io::Result<()> {
    exporter::run(&exporter::Load {
        glk: &args.glk(),
        glocks: &glocks_file(args.glocks())?,
        scrapers: args.num("--scrapers", 50),
        secs: args.num("--secs", 60.0),
        min_interval: args.num("--min-interval", 5.0),
    })
}

/// `bench cluster`: cluster mode over sshd.
fn cluster(args: &Args) -> std::io::Result<()> {
    cluster::run(&cluster::Setup {
        glk: &std::fs::canonicalize(args.glk())?,
        nodes: args.num("--nodes", 16),
        generated: &glocks_file(args.num("--glocks", 100_000))?,
        refreshes: args.num("--refreshes", 5),
    })
}

/// `bench fleet`: `glk fleet` over a dataset made from real captures.
fn fleet(args: &Args) -> std::io::Result<()> {
    let engine = args
        .get("--engine")
        .map_or_else(|| sibling_glk().with_file_name("glk-engine"), PathBuf::from);
    fleet::run(&fleet::Setup {
        engine: &std::fs::canonicalize(engine)?,
        events: args.num("--events", 100_000_000),
        captures: args.num("--captures", 100),
    })
}
