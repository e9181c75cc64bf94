//! `glk top`: the glocks that matter, ranked, from saved or live glocks files.

mod json;
pub mod snapshot;
mod text;
mod waits;

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use glockparse::{Glock, GlockType};

use crate::inputs::{self, Input};
use snapshot::{FileSnapshot, Selection, SortKey};
pub use waits::WaitTracker;

#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// glocks files (saved or live, compressed or not), debugfs filesystem directories
    /// (/sys/kernel/debug/gfs2/CLUSTER:FS), capture directories or capture tarballs (the
    /// newest snapshot of each node). Default: every mounted GFS2 filesystem.
    pub paths: Vec<PathBuf>,
    /// Ranking of the glocks shown.
    #[arg(long, value_enum, default_value = "waiters")]
    pub sort: SortKey,
    /// How many glocks to show (0: every glock that is held, demoting or waited on).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Only these glock types (comma-separated: trans,inode,rgrp,meta,iopen,flock,quota,journal or numbers).
    #[arg(long, value_delimiter = ',', value_parser = parse_type)]
    pub r#type: Vec<GlockType>,
    /// Explain flag letters in words.
    #[arg(long)]
    pub flag_names: bool,
    /// One snapshot, even on live files and a terminal.
    #[arg(long)]
    pub once: bool,
    /// Seconds between refreshes of live files.
    #[arg(short = 'd', long = "delay", default_value_t = 5.0, value_parser = parse_delay)]
    pub delay: f64,
    /// Number of refreshes (default: until interrupted). Given explicitly, refreshing also
    /// happens when stdout is not a terminal.
    #[arg(short = 'n', long = "count")]
    pub count: Option<u64>,
    /// Re-read the files at each refresh even though they are not in debugfs (for a copy
    /// that another program keeps rewriting).
    #[arg(long)]
    pub follow: bool,
    /// One JSON document per snapshot (one per line).
    #[arg(long)]
    pub json: bool,
}

fn parse_type(s: &str) -> Result<GlockType, String> {
    GlockType::from_name(s).ok_or_else(|| {
        format!("unknown glock type {s:?} (trans, inode, rgrp, meta, iopen, flock, plock, quota, journal or a number)")
    })
}

fn parse_delay(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(d) if (0.1..=86_400.0).contains(&d) => Ok(d),
        _ => Err(format!("{s:?}: the delay is seconds between 0.1 and 86400")),
    }
}

/// A glock chosen for display, with the input it came from.
pub struct Shown {
    pub input: usize,
    pub glock: Glock,
}

/// Everything one refresh shows.
pub struct Snapshot {
    pub taken: SystemTime,
    pub iteration: u64,
    pub inputs: Vec<Input>,
    pub files: Vec<FileSnapshot>,
    pub shown: Vec<Shown>,
}

impl Snapshot {
    pub fn summary(&self) -> snapshot::Summary {
        let mut s = snapshot::Summary::default();
        for f in &self.files {
            s.merge(&f.summary);
        }
        s
    }

    pub fn diagnostics(&self) -> glockparse::Diagnostics {
        let mut d = glockparse::Diagnostics::default();
        for f in &self.files {
            d.merge(&f.diagnostics);
        }
        d
    }
}

fn take_snapshot(inputs: &[Input], sel: &Selection, iteration: u64) -> io::Result<Snapshot> {
    let taken = SystemTime::now();
    let mut files = Vec::with_capacity(inputs.len());
    for i in inputs {
        let f = snapshot::take_file(&i.path, sel)?;
        let name = i.path.display().to_string();
        clikit::diag::recognised(&f.diagnostics, &name, "a glocks file")?;
        files.push(f);
    }
    // Merge the per-file best lists into one ranking.
    let mut shown: Vec<Shown> = files
        .iter()
        .enumerate()
        .flat_map(|(n, f)| {
            f.glocks.iter().map(move |g| Shown {
                input: n,
                glock: g.clone(),
            })
        })
        .collect();
    if inputs.len() > 1 {
        // Stable: within one rank the files keep their order.
        shown.sort_by_key(|s| {
            (
                std::cmp::Reverse(snapshot::rank_of(&s.glock, sel.sort)),
                s.input,
                s.glock.line,
            )
        });
        if sel.limit > 0 {
            shown.truncate(sel.limit);
        }
    }
    Ok(Snapshot {
        taken,
        iteration,
        inputs: inputs.to_vec(),
        files,
        shown,
    })
}

pub fn run(args: &TopArgs, color: clikit::Color) -> io::Result<()> {
    let paint = color.stdout();
    let (paths, _unpacked) = inputs::unpack_tarballs(&args.paths)?;
    let inputs = inputs::resolve(&paths, "glocks")?;
    let sel = Selection {
        sort: args.sort,
        limit: args.limit,
        types: args.r#type.clone(),
    };
    let stdout_tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let live = args.follow || inputs.iter().all(|i| i.live);
    let refresh = !args.once && live && (stdout_tty || args.count.is_some());
    let count = if refresh {
        args.count.unwrap_or(u64::MAX)
    } else {
        1
    };
    let mut waits = WaitTracker::default();
    let mut out = io::BufWriter::new(io::stdout().lock());
    for iteration in 1..=count {
        let snap = take_snapshot(&inputs, &sel, iteration)?;
        let ages = waits.update(&snap);
        if args.json {
            json::write(&mut out, &snap, &ages, args.flag_names)?;
        } else {
            if refresh && stdout_tty {
                write!(out, "\x1b[H\x1b[2J")?;
            } else if iteration > 1 {
                writeln!(out)?;
            }
            text::write(&mut out, &snap, &ages, args, refresh, paint)?;
        }
        out.flush()?;
        clikit::diag::report(&snap.diagnostics());
        if iteration < count {
            std::thread::sleep(Duration::from_secs_f64(args.delay));
        }
    }
    Ok(())
}
