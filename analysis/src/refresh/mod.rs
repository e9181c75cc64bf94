//! What `glk top` sees at each refresh, without its views: every glocks input read once
//! and ranked ([`rank`]), the files beside each ([`companions`]: the DLM lock dump with
//! its blocker join, glstats rates, glockfd), the waiters followed across refreshes
//! ([`waits`]) and the judgement on each shown glock ([`verdict`]). The console and the
//! text and JSON outputs only show what [`Reader::take`] and [`verdict::judge`] give.

pub mod companions;
pub mod rank;
pub mod verdict;
pub mod waits;

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use glockparse::{Brief, Diagnostics, Glock};

use companions::{Context, Sources};
use rank::{Facts, FileSnapshot, Lookup, Selection, Summary};
use waits::{WaitAge, WaitTracker, WaiterKey};

/// One glocks file to read at each refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The file.
    pub path: PathBuf,
    /// True for files in debugfs, which change between reads.
    pub live: bool,
}

/// A glock chosen for display, with the input it came from.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The index of its input.
    pub input: usize,
    /// The glock's record.
    pub glock: Glock,
    /// What the files beside it say.
    pub facts: Facts,
}

/// Everything one refresh shows.
pub struct Snapshot {
    /// When the refresh began.
    pub taken: SystemTime,
    /// The refresh's number, from 1.
    pub iteration: u64,
    /// The inputs read.
    pub inputs: Vec<Input>,
    /// Each input's snapshot, in input order.
    pub files: Vec<FileSnapshot>,
    /// The glocks shown, best first over every input.
    pub shown: Vec<Shown>,
    /// The DLM lock dumps, glstats and glockfd read with the glocks files.
    pub ctx: Arc<Context>,
    /// How long reading every file took.
    pub read_time: Duration,
    /// What should have been read but did not come (a cluster node that did not answer
    /// in time), each named with why; empty when the reader read files itself.
    pub missing: Vec<(String, String)>,
    /// What the nodes' cluster agents reported with their files (a glockfd that filled
    /// its one page...), each naming its node; empty when the reader read files itself.
    pub reported: Vec<String>,
}

impl Snapshot {
    /// Every problem of the refresh, one line each: what reading the companion files ran
    /// into, then what the nodes' agents reported.
    pub fn problems(&self) -> impl Iterator<Item = &str> {
        self.ctx
            .nodes
            .iter()
            .flat_map(|n| &n.problems)
            .chain(&self.reported)
            .map(String::as_str)
    }

    /// The per-type counts over every input.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for f in &self.files {
            s.merge(&f.summary);
        }
        s
    }

    /// The parse diagnostics over every input.
    pub fn diagnostics(&self) -> Diagnostics {
        let mut d = Diagnostics::default();
        for f in &self.files {
            d.merge(&f.diagnostics);
        }
        d
    }

    /// Glocks that matter but are not shown (the limit), and glocks only held.
    pub fn hidden(&self) -> (usize, u64) {
        let matching: u64 = self.files.iter().map(|f| f.matching).sum();
        let held: u64 = self.files.iter().map(|f| f.held_hidden).sum();
        ((matching as usize).saturating_sub(self.shown.len()), held)
    }
}

/// Reads every input (and the files beside it) once per refresh.
pub struct Reader {
    inputs: Vec<Input>,
    sources: Vec<Sources>,
    prev: Option<Arc<Context>>,
    iteration: u64,
    /// Waiters across refreshes.
    pub waits: WaitTracker,
}

impl Reader {
    /// A reader of `inputs`, their companions found once.
    pub fn new(inputs: Vec<Input>) -> Reader {
        let sources = inputs.iter().map(Sources::find).collect();
        Reader::with_sources(inputs, sources)
    }

    /// A reader of `inputs` with the companions given (one [`Sources`] per input, in
    /// order): for readers that want fewer of them than [`Sources::find`] finds.
    pub fn with_sources(inputs: Vec<Input>, sources: Vec<Sources>) -> Reader {
        assert_eq!(inputs.len(), sources.len(), "one Sources per input");
        Reader {
            inputs,
            sources,
            prev: None,
            iteration: 0,
            waits: WaitTracker::default(),
        }
    }

    /// Takes the next snapshot; returns it with the waiters' ages. `track`: count this
    /// read as a refresh for the waiters' "seen waiting" times (not when a saved file is
    /// read again for a new selection). An input in which nothing was recognised is an
    /// error naming it.
    pub fn take(
        &mut self,
        sel: &Selection,
        track: bool,
    ) -> io::Result<(Snapshot, HashMap<WaiterKey, WaitAge>)> {
        self.iteration += 1;
        let start = Instant::now();
        let taken = SystemTime::now();
        // Live files are produced by the kernel walking every glock, and so are glstats
        // and the DLM dump beside them: start reading the glocks files before the others,
        // so that the walks overlap.
        let opened: Vec<io::Result<_>> = self
            .inputs
            .iter()
            .map(|i| rank::open_file(&i.path, i.live))
            .collect();
        let ctx = Arc::new(Context::load(&self.sources, self.prev.as_deref()));
        let files = self.read_files(opened, &ctx, sel, taken)?;
        let shown = self.merge(&files, sel);
        let snap = Snapshot {
            taken,
            iteration: self.iteration,
            inputs: self.inputs.clone(),
            files,
            shown,
            ctx,
            read_time: start.elapsed(),
            missing: Vec::new(),
            reported: Vec::new(),
        };
        let ages = if track {
            self.waits.update(&snap)
        } else {
            HashMap::new()
        };
        // The glstats counts of this refresh make the next one's rates.
        self.prev = Some(snap.ctx.clone());
        Ok((snap, ages))
    }

    /// Reads each opened glocks file, ranked with the facts `ctx` gives.
    fn read_files(
        &self,
        opened: Vec<io::Result<glockparse::parallel::Opened>>,
        ctx: &Context,
        sel: &Selection,
        now: SystemTime,
    ) -> io::Result<Vec<FileSnapshot>> {
        let mut files = Vec::with_capacity(self.inputs.len());
        for (n, (i, file)) in self.inputs.iter().zip(opened).enumerate() {
            let look = Lookup {
                ctx,
                input: n,
                seen_waiting: self.waits.seen_waiting(),
                now,
            };
            let f = rank::take_file(file?, sel, &look)?;
            f.diagnostics
                .recognised(&i.path.display().to_string(), "a glocks file")?;
            files.push(f);
        }
        Ok(files)
    }

    /// Merges the per-file best lists into one ranking; among equals, input order then
    /// glock id, so that rows keep their places between refreshes.
    fn merge(&self, files: &[FileSnapshot], sel: &Selection) -> Vec<Shown> {
        let mut shown: Vec<Shown> = files
            .iter()
            .enumerate()
            .flat_map(|(n, f)| {
                f.glocks.iter().map(move |(g, facts)| Shown {
                    input: n,
                    glock: g.clone(),
                    facts: *facts,
                })
            })
            .collect();
        if self.inputs.len() > 1 {
            shown.sort_by_key(|s| {
                (
                    std::cmp::Reverse(rank::rank_of(&Brief::of(&s.glock), &s.facts, sel.sort)),
                    s.input,
                    s.glock.id,
                )
            });
            if sel.limit > 0 {
                shown.truncate(sel.limit);
            }
        }
        shown
    }
}
