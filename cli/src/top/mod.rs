//! `glk top`: the glocks that matter, ranked, from saved or live glocks files: a
//! full-screen console on a terminal ([`console`]), plain text or JSON otherwise.

mod columns;
mod console;
mod fleet;
mod json;
mod keys;
mod text;

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use analysis::refresh::rank::{Selection, SortKey};
use analysis::refresh::verdict::{self, Verdict};
use analysis::refresh::waits::{WaitAge, WaiterKey};
use analysis::refresh::{Reader, Snapshot};
use bundle::FileKind;
use glockparse::GlockType;

use crate::inputs;

#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// glocks files (saved or live, compressed or not), debugfs directories
    /// (/sys/kernel/debug/gfs2/CLUSTER:FS, gfs2/ or the debugfs root), or captures, sos
    /// reports and gfs2_lockcapture output, as directories or tarballs, read as glk
    /// analyze reads them (the newest snapshot of each node). Default: every mounted GFS2
    /// filesystem. The DLM lock dump, glstats and glockfd beside each file are read too
    /// when they exist.
    pub paths: Vec<PathBuf>,
    /// Which filesystem's glocks are shown (all by default).
    #[command(flatten)]
    pub filesystem: clikit::args::FsArg,
    /// Ranking of the glocks shown.
    #[arg(long, value_enum, default_value = "hurt")]
    pub sort: SortKey,
    /// How many glocks to keep (0: every glock shown). Default: 20 in text, 500 in the
    /// console.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only these glock types (comma-separated: trans,inode,rgrp,meta,iopen,flock,quota,journal or numbers).
    #[arg(long, value_delimiter = ',', value_parser = parse_type)]
    pub r#type: Vec<GlockType>,
    /// Only glocks whose id, type, holders' pids, comms or call sites contain this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Also show glocks that are only held (nothing waits, no demote, no DLM requests
    /// since the last refresh): the normal state of every open inode.
    #[arg(long)]
    pub held: bool,
    #[command(flatten)]
    pub stuck: clikit::args::StuckArgs,
    /// Table columns, comma-separated (default: glock,type,state,demote,held,wait,age,blocker,dlm,rtt,flags).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub fields: Vec<columns::Field>,
    /// Explain flag letters in words.
    #[arg(long)]
    pub flag_names: bool,
    /// One snapshot, even on live files and a terminal.
    #[arg(long)]
    pub once: bool,
    /// Plain text even on a terminal (no full-screen console).
    #[arg(long)]
    pub plain: bool,
    /// Seconds between refreshes of live files (never less than one read of the files
    /// takes: on big live files the kernel's own output is the cost).
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
    #[command(flatten)]
    pub cluster: crate::cluster::ClusterArgs,
}

/// Where refreshes come from: this node's files ([`Reader`]), or every node's
/// ([`fleet::ClusterFeed`]).
pub trait Feed: Send + 'static {
    /// The next snapshot, with the waiters' ages (as [`Reader::take`]).
    fn take(
        &mut self,
        sel: &Selection,
        track: bool,
    ) -> io::Result<(Snapshot, HashMap<WaiterKey, WaitAge>)>;
}

impl Feed for Reader {
    fn take(
        &mut self,
        sel: &Selection,
        track: bool,
    ) -> io::Result<(Snapshot, HashMap<WaiterKey, WaitAge>)> {
        Reader::take(self, sel, track)
    }
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

/// A short name for input `i` of `snap`: its directory and file name, and the directory
/// above where another input's directory has the same name in another place (a node's
/// two filesystems in a capture: `lab_gfs/n1/glocks.2`, `lab_data/n1/glocks.2`).
pub fn label(snap: &Snapshot, i: usize) -> String {
    let path = &snap.inputs[i].path;
    let short = inputs::label(path);
    let dir = path.parent();
    let namesake = snap.inputs.iter().any(|other| {
        let theirs = other.path.parent();
        theirs != dir && theirs.and_then(Path::file_name) == dir.and_then(Path::file_name)
    });
    match dir.and_then(|d| d.parent()?.file_name()) {
        Some(above) if namesake => format!("{}/{short}", above.to_string_lossy()),
        _ => short,
    }
}

/// One refresh as the views show it: the snapshot, the waiters' ages across refreshes,
/// and the verdict on each shown glock (parallel to `snap.shown`).
pub struct Page<'a> {
    pub snap: &'a Snapshot,
    pub ages: &'a HashMap<WaiterKey, WaitAge>,
    pub verdicts: &'a [Verdict],
}

/// The pause before the next refresh: the delay, but never less than the last read
/// took, so that glk spends at most half its time in the kernel's seq_file output.
pub fn pause(delay: f64, read_time: Duration) -> Duration {
    Duration::from_secs_f64(delay).max(read_time)
}

pub fn run(args: &TopArgs, color: clikit::Color) -> io::Result<()> {
    if args.cluster.on() {
        if !args.paths.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--cluster and --nodes read every node's live files: give no paths",
            ));
        }
        let feed = fleet::ClusterFeed::start(args)?;
        return show(feed, args, color, true);
    }
    let resolved = inputs::resolve(&args.paths, &[FileKind::Glocks], args.filesystem.only())?;
    let (inputs, sources): (Vec<_>, Vec<_>) = resolved
        .given
        .iter()
        .filter_map(inputs::Given::glocks)
        .unzip();
    if inputs.is_empty() {
        return Err(resolved.none_of("glocks dump"));
    }
    let live = args.follow || inputs.iter().all(|i| i.live);
    show(Reader::with_sources(inputs, sources), args, color, live)
}

/// Shows the refreshes of `feed`: the console on a terminal, else text or JSON.
fn show(mut feed: impl Feed, args: &TopArgs, color: clikit::Color, live: bool) -> io::Result<()> {
    let paint = color.stdout();
    let stdout_tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
    // The console reads its keys from stdin.
    let stdin_tty = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let console = stdout_tty && stdin_tty && !args.json && !args.plain && !args.once;
    let refresh = !args.once && live && (stdout_tty || args.count.is_some());
    let sel = Selection {
        sort: args.sort,
        limit: args.limit.unwrap_or(if console { 500 } else { 20 }),
        types: args.r#type.clone(),
        held: args.held,
        filter: args.filter.clone(),
    };
    if console {
        return console::run(feed, sel, args, refresh);
    }
    let count = if refresh {
        args.count.unwrap_or(u64::MAX)
    } else {
        1
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    let fields = columns::Field::chosen(&args.fields);
    for iteration in 1..=count {
        let (snap, ages) = feed.take(&sel, true)?;
        let verdicts = verdict::judge(&snap, &ages, args.stuck.stuck_after);
        let page = Page {
            snap: &snap,
            ages: &ages,
            verdicts: &verdicts,
        };
        if args.json {
            json::write(&mut out, &page, args.flag_names)?;
        } else {
            if refresh && stdout_tty {
                write!(out, "\x1b[H\x1b[2J")?;
            } else if iteration > 1 {
                writeln!(out)?;
            }
            text::write(&mut out, &page, &fields, args, refresh, paint)?;
        }
        out.flush()?;
        clikit::diag::report(&snap.diagnostics());
        for p in snap.problems() {
            eprintln!("glk: {p}");
        }
        crate::cluster::report_missing(&snap.missing);
        if iteration < count {
            std::thread::sleep(pause(args.delay, snap.read_time));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshes_never_outpace_one_read() {
        assert_eq!(
            pause(5.0, Duration::from_millis(800)),
            Duration::from_secs(5)
        );
        assert_eq!(pause(0.5, Duration::from_secs(2)), Duration::from_secs(2));
    }
}
