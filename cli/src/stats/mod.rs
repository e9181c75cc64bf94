//! `glk stats`: DLM timing from glstats and sbstats (lkstats), snapshot deltas, and tdiff
//! distributions from traces.

mod render;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bundle::{FileKind, Sniffed};
use gfs2stats::lock_time::ByFilesystem;
use gfs2stats::metrics::{self, Delta};
use gfs2stats::{glstats, sbstats, GlStat, SbStats};
use glockparse::Diagnostics;

use crate::inputs;

/// Ranking of the per-glock table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatSort {
    /// Blocking DLM round trip (waiting for other nodes), slowest first.
    Srttb,
    /// Non-blocking DLM round trip.
    Srtt,
    /// Inter-request time, shortest first (the most frequently requested).
    Sirt,
    /// DLM requests.
    Dcount,
    /// Holder queues.
    Qcount,
    /// Share of time a DLM request is outstanding.
    Busy,
}

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// glstats / sbstats (lkstats) files, debugfs directories, or captures as
    /// directories or tarballs, read as glk analyze reads them (the newest snapshot of
    /// each node). Default: every mounted GFS2 filesystem.
    pub paths: Vec<PathBuf>,
    /// Which filesystem's glstats and sbstats are shown (all by default).
    #[command(flatten)]
    pub filesystem: clikit::args::FsArg,
    #[arg(long, value_enum, default_value = "srttb")]
    pub sort: StatSort,
    /// Glocks shown (0: all).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Counter increases between two glstats snapshots (files or capture snapshots).
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    pub delta: Option<Vec<PathBuf>>,
    /// tdiff distributions from gfs2_glock_lock_time events in saved trace text: every
    /// filesystem's events, each apart (by its lock table where the trace's capture names
    /// its device, else by device; --fs does not apply to them; glk analyze --fs reads
    /// one filesystem's from captures).
    #[arg(long)]
    pub trace: Vec<PathBuf>,
    /// Show sbstats per CPU, not only combined.
    #[arg(long)]
    pub per_cpu: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub cluster: crate::cluster::ClusterArgs,
}

/// One glstats input.
pub struct GlFile {
    pub path: PathBuf,
    pub stats: Vec<GlStat>,
}

/// One sbstats input.
pub struct SbFile {
    pub path: PathBuf,
    pub stats: SbStats,
}

/// Everything `glk stats` read and computed.
pub struct Report {
    pub glstats: Vec<GlFile>,
    pub sbstats: Vec<SbFile>,
    pub delta: Option<(f64, Vec<Delta>)>,
    /// The traces' round trips by filesystem (None without `--trace`).
    pub trace: Option<ByFilesystem>,
    pub diagnostics: Diagnostics,
}

enum Kind {
    Glstats,
    Sbstats,
}

/// Tells glstats from sbstats by the first line ([`bundle::sniff`]).
fn sniff(path: &Path) -> io::Result<Kind> {
    let (what, head) = bundle::sniff(path)?;
    let not = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}{why}", path.display()),
        ))
    };
    match what {
        Sniffed::Kind(FileKind::Glstats) => Ok(Kind::Glstats),
        Sniffed::Kind(FileKind::Sbstats) => Ok(Kind::Sbstats),
        Sniffed::Kind(FileKind::Glocks) => not(
            ": neither a glstats nor an sbstats file (it looks like a glocks file: try glk top)"
                .into(),
        ),
        Sniffed::Empty => not(": empty: neither a glstats nor an sbstats file".into()),
        _ => not(format!(
            ":{}: neither a glstats nor an sbstats file (it starts \"{}\")",
            head.line,
            glockparse::quote::quote(&head.text, 60)
        )),
    }
}

/// The glstats and sbstats files the paths stand for ([`inputs::resolve`]): of a file,
/// what it reads as; of a node, its last snapshot's of each.
fn resolve(
    paths: &[PathBuf],
    only: Option<&str>,
) -> io::Result<(Vec<PathBuf>, Vec<PathBuf>, inputs::Resolved)> {
    let resolved = inputs::resolve(paths, &[FileKind::Glstats, FileKind::Sbstats], only)?;
    let (mut gl, mut sb) = (Vec::new(), Vec::new());
    for g in &resolved.given {
        match g {
            inputs::Given::File(i) => match sniff(&i.path)? {
                Kind::Glstats => gl.push(i.path.clone()),
                Kind::Sbstats => sb.push(i.path.clone()),
            },
            inputs::Given::Node(_) => {
                gl.extend(g.file(FileKind::Glstats).map(Path::to_path_buf));
                sb.extend(g.file(FileKind::Sbstats).map(Path::to_path_buf));
            }
        }
    }
    if gl.is_empty() && sb.is_empty() {
        return Err(resolved.none_of("glstats or sbstats file"));
    }
    Ok((gl, sb, resolved))
}

/// When a snapshot was taken: the capture's `time.N` next to `glstats.N` (either plain or
/// compressed), else the mtime.
pub fn snapshot_time(path: &Path) -> Option<f64> {
    let time = || {
        let (_, n) = FileKind::parse(path.file_name()?.to_str()?)?;
        bundle::read_time(&bundle::find_named(
            path.parent()?,
            &FileKind::Time.file_name(n),
        )?)
    };
    time().or_else(|| {
        let m = std::fs::metadata(path).ok()?.modified().ok()?;
        Some(clikit::fmt::unix_secs(m))
    })
}

pub fn build(args: &StatsArgs) -> io::Result<Report> {
    let mut diagnostics = Diagnostics::default();
    let paths = &args.paths;
    let (glp, sbp, _resolved) =
        if paths.is_empty() && (args.delta.is_some() || !args.trace.is_empty()) {
            (Vec::new(), Vec::new(), inputs::Resolved::default())
        } else {
            resolve(paths, args.filesystem.only())?
        };
    let mut glstats_out = Vec::new();
    let check =
        |d: &Diagnostics, p: &Path, what: &str| d.recognised(&p.display().to_string(), what);
    for p in glp {
        let (stats, d) = glstats::read_path(&p)?;
        check(&d, &p, "a glstats file")?;
        diagnostics.merge(&d);
        glstats_out.push(GlFile { path: p, stats });
    }
    let mut sbstats_out = Vec::new();
    for p in sbp {
        let (stats, d) = sbstats::read_path(&p)?;
        check(&d, &p, "an sbstats file")?;
        diagnostics.merge(&d);
        sbstats_out.push(SbFile { path: p, stats });
    }
    let delta = match &args.delta {
        Some(v) => {
            let (old, d1) = glstats::read_path(&v[0])?;
            let (new, d2) = glstats::read_path(&v[1])?;
            diagnostics.merge(&d1);
            diagnostics.merge(&d2);
            let secs = match (snapshot_time(&v[0]), snapshot_time(&v[1])) {
                (Some(a), Some(b)) => b - a,
                _ => 0.0,
            };
            Some((secs, metrics::deltas(&old, &new, secs)))
        }
        None => None,
    };
    let trace = if args.trace.is_empty() {
        None
    } else {
        let mut lt = ByFilesystem::default();
        for p in &args.trace {
            bundle::live::refuse_trace_pipe(p)?;
            // Bad lines, and an end the file could not be read to, are diagnostics.
            traceparse::reader::for_each_decoded(p, &mut diagnostics, |d| {
                if let traceparse::Decoded::Gfs2 { dev, event, .. } = d {
                    lt.add(dev, &event);
                }
                true
            })?;
            let fss = bundle::filesystems::beside_trace(p);
            lt.end_trace(|d| {
                let dev = Some((d.major, d.minor));
                fss.iter()
                    .find(|f| f.ids.dev == dev)
                    .map(|f| f.table.clone())
            });
        }
        Some(lt)
    };
    Ok(Report {
        glstats: glstats_out,
        sbstats: sbstats_out,
        delta,
        trace,
        diagnostics,
    })
}

/// The glocks to show, best first per `sort`, with the file each came from. Timing sorts
/// skip glocks without DLM requests of their own (their values are inherited).
pub fn ranked(r: &Report, sort: StatSort, limit: usize) -> (Vec<(usize, &GlStat)>, usize) {
    let mut v: Vec<(usize, &GlStat)> = r
        .glstats
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.stats.iter().map(move |s| (i, s)))
        .filter(|(_, s)| match sort {
            StatSort::Srttb | StatSort::Srtt | StatSort::Sirt | StatSort::Busy => {
                s.stats.dcount > 0
            }
            StatSort::Dcount | StatSort::Qcount => true,
        })
        .collect();
    let key = |s: &GlStat| -> i128 {
        match sort {
            StatSort::Srttb => s.stats.srttb as i128,
            StatSort::Srtt => s.stats.srtt as i128,
            StatSort::Sirt => -(s.stats.sirt as i128),
            StatSort::Dcount => s.stats.dcount as i128,
            StatSort::Qcount => s.stats.qcount as i128,
            StatSort::Busy => (metrics::derive(s).dlm_busy.unwrap_or(0.0) * 1e9) as i128,
        }
    };
    v.sort_by(|a, b| key(b.1).cmp(&key(a.1)).then(a.1.glock.cmp(&b.1.glock)));
    let candidates = v.len();
    if limit > 0 {
        v.truncate(limit);
    }
    (v, candidates)
}

pub fn run(args: &StatsArgs) -> io::Result<()> {
    if args.cluster.on() {
        return cluster_run(args);
    }
    let report = build(args)?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        render::json(&mut out, &report, args)?;
    } else {
        render::text(&mut out, &report, args)?;
    }
    out.flush()?;
    clikit::diag::report(&report.diagnostics);
    Ok(())
}

/// `glk stats --cluster`: one snapshot of every node's glstats and sbstats through its
/// agent, shown side by side as `glk stats` shows several capture directories.
fn cluster_run(args: &StatsArgs) -> io::Result<()> {
    if !args.paths.is_empty() || args.delta.is_some() || !args.trace.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "--cluster and --nodes read every node's live files: give no paths, --delta or --trace",
        ));
    }
    let dir = crate::cluster::scratch_dir("glk-stats-")?;
    let only = args.filesystem.only();
    let nodes = crate::cluster::snapshot_once(&args.cluster, only, dir.path())?;
    let a = StatsArgs {
        paths: nodes,
        filesystem: Default::default(),
        sort: args.sort,
        limit: args.limit,
        delta: None,
        trace: Vec::new(),
        per_cpu: args.per_cpu,
        json: args.json,
        cluster: Default::default(),
    };
    run(&a)
}
