//! One pass over a glocks file: per-type summary counts for every glock, and the N
//! glocks that matter most under the chosen ordering, kept in a bounded heap so memory
//! does not grow with the file. What hurts is judged from the record and from the facts
//! beside it ([`Facts`]: how long its waiters have waited, DLM requests per second).

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Read};
use std::path::Path;

use glockparse::{parallel, Brief, Diagnostics, Glock, GlockId, GlockReader, GlockType, LockState};

use super::companions::Context;

/// How glocks are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SortKey {
    /// What hurts first: glocks with waiters (the longest wait first), then demotes
    /// (the oldest first), then glocks the DLM was asked for since the last refresh
    /// (the most requests per second first).
    Hurt,
    /// Glocks with waiters first (most waiters), then demotes (oldest first), then held.
    Waiters,
    /// Oldest demote request first.
    Demote,
    /// Most holders (granted and waiting) first.
    Holders,
    /// Highest reference count first.
    Refs,
    /// Most DLM requests per second since the last refresh (glstats) first.
    Dlm,
    /// Slowest blocking DLM round trip (glstats srttb) first.
    Rtt,
}

impl SortKey {
    /// Every key, in the order the console's `s` cycles through them.
    pub const ALL: [SortKey; 7] = [
        SortKey::Hurt,
        SortKey::Waiters,
        SortKey::Demote,
        SortKey::Holders,
        SortKey::Refs,
        SortKey::Dlm,
        SortKey::Rtt,
    ];

    /// The name `--sort` takes.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Hurt => "hurt",
            SortKey::Waiters => "waiters",
            SortKey::Demote => "demote",
            SortKey::Holders => "holders",
            SortKey::Refs => "refs",
            SortKey::Dlm => "dlm",
            SortKey::Rtt => "rtt",
        }
    }

    /// The next key in [`SortKey::ALL`].
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }
}

/// What the files beside the glocks file say about one glock.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Facts {
    /// The longest its waiters are known to have waited, µs: the DLM lock dump's age of
    /// a waiting request, or how long glk has seen them waiting. 0 when unknown.
    pub wait_us: u64,
    /// DLM requests per second since the last refresh (glstats).
    pub dlm_per_s: f64,
    /// Smoothed blocking DLM round trip, ns (glstats srttb).
    pub srttb_ns: u64,
}

/// Where facts come from for the glocks of one input.
pub struct Lookup<'a> {
    /// The companions of every input.
    pub ctx: &'a Context,
    /// The index of the input.
    pub input: usize,
    /// Since when glk has seen each glock of this input with waiters.
    pub seen_waiting: &'a std::collections::HashMap<(usize, GlockId), std::time::SystemTime>,
    /// When this refresh began.
    pub now: std::time::SystemTime,
}

impl Lookup<'_> {
    /// The facts of `g`.
    pub fn facts(&self, g: &Brief) -> Facts {
        let node = self.ctx.node(self.input);
        let mut wait_us = 0;
        if g.waiters > 0 {
            if let Some(w) = self.ctx.dlm_wait(self.input, g.id) {
                wait_us = w.age_us;
            }
            if let Some(t) = self.seen_waiting.get(&(self.input, g.id)) {
                let seen = self
                    .now
                    .duration_since(*t)
                    .map_or(0, |d| d.as_micros() as u64);
                wait_us = wait_us.max(seen);
            }
        }
        Facts {
            wait_us,
            dlm_per_s: node.dlm_rate(g.id),
            srttb_ns: node
                .stat(g.id)
                .map_or(0, |(s, _)| s.stats.srttb.max(0) as u64),
        }
    }
}

/// Why a glock is shown: the first of these that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relevance {
    /// Nothing held, nothing pending: not shown.
    Idle = 0,
    /// Granted holders and nothing pending: the normal state of an open inode.
    Held = 1,
    /// The DLM was asked for it since the last refresh.
    Busy = 2,
    /// A demote is requested or under way.
    Demoting = 3,
    /// Holders wait for it.
    Waiting = 4,
}

/// Why `g` matters, given its facts.
pub fn relevance(g: &Brief, f: &Facts) -> Relevance {
    if g.waiters > 0 {
        Relevance::Waiting
    } else if g.demote_requested() {
        Relevance::Demoting
    } else if f.dlm_per_s > 0.0 {
        Relevance::Busy
    } else if g.granted > 0 {
        Relevance::Held
    } else {
        Relevance::Idle
    }
}

/// Rank of a glock: larger is shown first.
type Rank = (u64, u64, u64, u64);

/// The ordering key of a glock under `key`: larger is shown first.
pub fn rank_of(g: &Brief, f: &Facts, key: SortKey) -> Rank {
    let rel = relevance(g, f);
    let r = rel as u64;
    let waiters = u64::from(g.waiters);
    let holders = u64::from(g.holders);
    let demote = u64::from(g.demote_requested());
    let dlm = (f.dlm_per_s * 1000.0) as u64;
    match key {
        SortKey::Hurt => match rel {
            Relevance::Waiting => (r, f.wait_us, waiters, g.demote_us),
            Relevance::Demoting => (r, g.demote_us, dlm, holders),
            Relevance::Busy => (r, dlm, f.srttb_ns, holders),
            Relevance::Held | Relevance::Idle => (r, f.srttb_ns, holders, 0),
        },
        SortKey::Waiters => (r, waiters, g.demote_us, holders),
        SortKey::Demote => (demote, g.demote_us, r, waiters),
        SortKey::Holders => (holders, waiters, r, g.demote_us),
        SortKey::Refs => (g.refs.max(0) as u64, r, waiters, holders),
        SortKey::Dlm => (dlm, f.srttb_ns, r, waiters),
        SortKey::Rtt => (f.srttb_ns, dlm, r, waiters),
    }
}

/// Counts for one glock type, like glocktop's summary table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TypeCounts {
    /// Glocks of the type.
    pub glocks: u64,
    /// Glocks in UN.
    pub unlocked: u64,
    /// Glocks in another state than UN.
    pub locked: u64,
    /// Glocks in EX / SH / DF with at least one granted holder.
    pub held_ex: u64,
    /// Glocks in SH with at least one granted holder.
    pub held_sh: u64,
    /// Glocks in DF with at least one granted holder.
    pub held_df: u64,
    /// Glocks with at least one waiting holder.
    pub waiting_glocks: u64,
    /// Waiting holders.
    pub waiters: u64,
    /// Glocks with a demote requested or in progress.
    pub demoting: u64,
    /// Granted holders.
    #[serde(skip)]
    pub holders: u64,
    /// Glocks per state, indexed as [`LockState::ALL`] (UN, SH, DF, EX, unknown).
    #[serde(skip)]
    pub by_state: [u64; 5],
}

impl TypeCounts {
    /// Counts one glock.
    fn add(&mut self, g: &Brief) {
        self.add_kind(Kind::of(g), 1);
        self.waiters += u64::from(g.waiters);
        self.holders += u64::from(g.granted);
    }

    /// Counts `n` glocks of one [`Kind`] (their waiting holders are added apart).
    fn add_kind(&mut self, k: Kind, n: u64) {
        let unlocked = k.state == LockState::Unlocked;
        let of = |yes: bool| if yes { n } else { 0 };
        self.glocks += n;
        self.unlocked += of(unlocked);
        self.locked += of(!unlocked);
        self.by_state[k.state as usize] += n;
        self.held_ex += of(k.held && k.state == LockState::Exclusive);
        self.held_sh += of(k.held && k.state == LockState::Shared);
        self.held_df += of(k.held && k.state == LockState::Deferred);
        self.waiting_glocks += of(k.waiting);
        self.demoting += of(k.demoting);
    }

    fn merge(&mut self, o: &TypeCounts) {
        self.glocks += o.glocks;
        self.unlocked += o.unlocked;
        self.locked += o.locked;
        self.held_ex += o.held_ex;
        self.held_sh += o.held_sh;
        self.held_df += o.held_df;
        self.waiting_glocks += o.waiting_glocks;
        self.waiters += o.waiters;
        self.demoting += o.demoting;
        self.holders += o.holders;
        for (s, n) in self.by_state.iter_mut().zip(o.by_state) {
            *s += n;
        }
    }
}

/// Per-type counts plus the number of glocks that matter (held, demoting or waited on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Counts per glock type.
    pub by_type: BTreeMap<GlockType, TypeCounts>,
    /// Glocks that matter: held, demoting, waited on or asked of the DLM.
    pub relevant: u64,
}

impl Summary {
    /// The counts over every type.
    pub fn total(&self) -> TypeCounts {
        let mut t = TypeCounts::default();
        for c in self.by_type.values() {
            t.merge(c);
        }
        t
    }

    /// Adds the counts of `o`.
    pub fn merge(&mut self, o: &Summary) {
        for (t, c) in &o.by_type {
            self.by_type.entry(*t).or_default().merge(c);
        }
        self.relevant += o.relevant;
    }
}

/// What to keep from one file.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The ordering.
    pub sort: SortKey,
    /// 0 keeps every glock shown.
    pub limit: usize,
    /// Empty means every type.
    pub types: Vec<GlockType>,
    /// Also show glocks that are only held (nothing waits, nothing is demoted, no DLM
    /// traffic): the normal state of every open inode.
    pub held: bool,
    /// Only glocks whose id, type, holders' pids, comms or call sites contain this
    /// (lower case).
    pub filter: Option<String>,
}

impl Selection {
    /// Whether a glock of this relevance is shown at all.
    pub fn shows(&self, rel: Relevance) -> bool {
        match rel {
            Relevance::Idle => false,
            Relevance::Held => self.held,
            _ => true,
        }
    }

    /// Whether glocks of type `t` pass the type filter.
    pub fn wants_type(&self, t: GlockType) -> bool {
        self.types.is_empty() || self.types.contains(&t)
    }

    /// The text filter, if one is set (it needs the whole record).
    pub fn text_filter(&self) -> Option<&str> {
        self.filter.as_deref().filter(|n| !n.is_empty())
    }

    /// Whether `g` passes the type filter and the text filter.
    pub fn matches(&self, g: &Glock) -> bool {
        self.wants_type(g.glock_type()) && self.matches_text(g)
    }

    /// Whether `g` passes the text filter.
    pub fn matches_text(&self, g: &Glock) -> bool {
        let Some(needle) = self.text_filter() else {
            return true;
        };
        let has = |s: &str| contains_ignore_case(s.as_bytes(), needle.as_bytes());
        has(&g.id.to_string())
            || has(&g.glock_type().name())
            || g.holders
                .iter()
                .any(|h| has(&h.pid.to_string()) || has(&h.comm) || has(&h.caller))
    }
}

/// Whether `hay` contains `needle`, ASCII letters compared without case (no copy of
/// either: the text filter runs over every relevant glock of every refresh).
fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || hay
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// One file's snapshot.
#[derive(Debug, Clone)]
pub struct FileSnapshot {
    /// Counts over every glock of the file.
    pub summary: Summary,
    /// Glocks shown before the limit: they matter and pass the filters.
    pub matching: u64,
    /// Glocks only held, left out of the view (without `--held`).
    pub held_hidden: u64,
    /// Best first, with their facts.
    pub glocks: Vec<(Glock, Facts)>,
    /// Every glock held here with a demote requested, shown or not (the selection does
    /// not apply): the holders that another node's waiters wait for, by glock.
    pub asked: Vec<Glock>,
    /// What could not be read.
    pub diagnostics: Diagnostics,
}

struct Ranked {
    rank: Rank,
    id: GlockId,
    glock: Glock,
    facts: Facts,
}

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked {
    /// Higher rank is better; among equals the smaller glock id, so that the order is
    /// the same from one refresh to the next (the kernel's hash order is not).
    fn cmp(&self, o: &Self) -> Ordering {
        self.rank.cmp(&o.rank).then_with(|| o.id.cmp(&self.id))
    }
}

/// How far ahead a live glocks file is read while the files beside it are: 32 blocks of
/// 1 MiB, the whole file on most nodes.
const LIVE_AHEAD_BLOCKS: usize = 32;

/// Opens a glocks file for [`take_file`]. A file that cannot be split starts being read at
/// once; a `live` one (debugfs) up to 32 MiB ahead, so that the kernel produces it while
/// the files beside it are read.
pub fn open_file(path: &Path, live: bool) -> io::Result<parallel::Opened> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ahead = if live {
        LIVE_AHEAD_BLOCKS
    } else {
        glockparse::input::Prefetch::BLOCKS
    };
    parallel::open(path, threads, ahead)
}

/// Reads a glocks file opened by [`open_file`], in parallel pieces when it is large and
/// plain, and keeps what `sel` asks for.
pub fn take_file(
    file: parallel::Opened,
    sel: &Selection,
    look: &Lookup,
) -> io::Result<FileSnapshot> {
    let pieces = file.for_each_piece(|r| take_from(r, sel, look))?;
    let mut out = FileSnapshot {
        summary: Summary::default(),
        matching: 0,
        held_hidden: 0,
        glocks: Vec::new(),
        asked: Vec::new(),
        diagnostics: Diagnostics::default(),
    };
    for p in pieces {
        out.summary.merge(&p.value.summary);
        out.matching += p.value.matching;
        out.held_hidden += p.value.held_hidden;
        out.diagnostics.merge(&p.diagnostics);
        out.asked.extend(p.value.asked);
        out.glocks
            .extend(p.value.glocks.into_iter().map(|(mut g, f)| {
                g.line += p.line_offset;
                (g, f)
            }));
    }
    // Best first; among equals, the smaller glock id.
    out.glocks
        .sort_by_key(|(g, f)| (Reverse(rank_of(&Brief::of(g), f, sel.sort)), g.id));
    out.asked.sort_by_key(|g| g.id);
    if sel.limit > 0 {
        out.glocks.truncate(sel.limit);
    }
    Ok(out)
}

/// Reads every record of `reader` and keeps what `sel` asks for.
#[cfg(test)]
pub fn take<R: Read>(mut reader: GlockReader<R>, sel: &Selection, look: &Lookup) -> FileSnapshot {
    let mut s = take_from(&mut reader, sel, look);
    s.diagnostics = reader.into_diagnostics();
    s
}

/// What [`TypeCounts`] tells glocks apart by: their state and three yes-or-no facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    state: LockState,
    /// At least one granted holder.
    held: bool,
    /// At least one waiting holder.
    waiting: bool,
    demoting: bool,
}

impl Kind {
    fn of(g: &Brief) -> Kind {
        Kind {
            state: g.state,
            held: g.granted > 0,
            waiting: g.waiters > 0,
            demoting: g.demote_requested(),
        }
    }

    /// The kind as 6 bits: the state (its place in [`LockState::ALL`], which is its
    /// discriminant), then the three facts.
    fn index(self) -> usize {
        (self.state as usize) << 3
            | usize::from(self.held) << 2
            | usize::from(self.waiting) << 1
            | usize::from(self.demoting)
    }

    /// The kind of [`Kind::index`] `i`, if any.
    fn from_index(i: usize) -> Option<Kind> {
        Some(Kind {
            state: *LockState::ALL.get(i >> 3)?,
            held: i & 4 != 0,
            waiting: i & 2 != 0,
            demoting: i & 1 != 0,
        })
    }
}

/// Counts per glock type. A glock of a type the kernel has (below 16) costs one
/// increment, of its type's tally of its [`Kind`]; the counts are made from the tallies
/// at the end, and waiting holders summed apart. A million glocks are counted per
/// refresh. Other types are counted one by one.
struct Counter {
    /// Indexed by type << 6 | [`Kind::index`].
    tally: Box<[u64; 16 << 6]>,
    waiters: [u64; 16],
    holders: [u64; 16],
    other: BTreeMap<GlockType, TypeCounts>,
}

impl Default for Counter {
    fn default() -> Self {
        Counter {
            tally: Box::new([0; 16 << 6]),
            waiters: [0; 16],
            holders: [0; 16],
            other: BTreeMap::new(),
        }
    }
}

impl Counter {
    fn add(&mut self, b: &Brief) {
        let t = b.id.gltype as usize;
        if t < 16 {
            self.tally[t << 6 | Kind::of(b).index()] += 1;
            self.waiters[t] += u64::from(b.waiters);
            self.holders[t] += u64::from(b.granted);
        } else {
            self.other.entry(b.glock_type()).or_default().add(b);
        }
    }

    fn into_map(self) -> BTreeMap<GlockType, TypeCounts> {
        let mut m = self.other;
        for (t, tallies) in self.tally.chunks_exact(64).enumerate() {
            let mut c = TypeCounts {
                waiters: self.waiters[t],
                holders: self.holders[t],
                ..TypeCounts::default()
            };
            for (i, &n) in tallies.iter().enumerate().filter(|&(_, &n)| n > 0) {
                if let Some(k) = Kind::from_index(i) {
                    c.add_kind(k, n);
                }
            }
            if c.glocks > 0 {
                m.entry(GlockType::from_number(t as u32))
                    .or_default()
                    .merge(&c);
            }
        }
        m
    }
}

/// The records of `reader`, summarised; diagnostics are left in the reader. Records are
/// skimmed: only those kept (or searched by the text filter) are read whole.
fn take_from<R: Read>(reader: &mut GlockReader<R>, sel: &Selection, look: &Lookup) -> FileSnapshot {
    let mut counts = Counter::default();
    let mut relevant = 0u64;
    // Min-heap of the best `limit` glocks seen so far.
    let mut heap: BinaryHeap<Reverse<Ranked>> = BinaryHeap::new();
    let mut all: Vec<Ranked> = Vec::new();
    let mut matching = 0u64;
    let mut held_hidden = 0u64;
    let mut asked = Vec::new();
    let has_rates = look.ctx.node(look.input).has_rates();
    reader.for_each_brief(|mut e| {
        counts.add(&e.brief);
        // Most glocks are idle by their record alone: nothing held, nothing pending (and,
        // without DLM rates to look up, nothing else can make them matter). They are only
        // counted: no facts looked up, not even a copy of their brief.
        let quiet = e.brief.holders == 0 && !e.brief.demote_requested();
        if quiet && !has_rates {
            return;
        }
        let b = e.brief;
        if b.demote_requested() && b.granted > 0 {
            asked.push(e.glock().clone());
        }
        let facts = look.facts(&b);
        let rel = relevance(&b, &facts);
        if rel == Relevance::Idle {
            return;
        }
        relevant += 1;
        if !sel.wants_type(b.glock_type())
            || (sel.text_filter().is_some() && !sel.matches_text(e.glock()))
        {
            return;
        }
        if !sel.shows(rel) {
            held_hidden += 1;
            return;
        }
        matching += 1;
        let r = rank_of(&b, &facts, sel.sort);
        let takes = sel.limit == 0
            || heap.len() < sel.limit
            || heap
                .peek()
                .is_some_and(|Reverse(w)| (r, Reverse(b.id)) > (w.rank, Reverse(w.id)));
        if !takes {
            return;
        }
        let ranked = Ranked {
            rank: r,
            id: b.id,
            glock: e.glock().clone(),
            facts,
        };
        if sel.limit == 0 {
            all.push(ranked);
        } else {
            if heap.len() == sel.limit {
                heap.pop();
            }
            heap.push(Reverse(ranked));
        }
    });
    let mut kept: Vec<Ranked> = if sel.limit == 0 {
        all
    } else {
        heap.into_iter().map(|Reverse(r)| r).collect()
    };
    kept.sort_by(|a, b| b.cmp(a));
    FileSnapshot {
        summary: Summary {
            by_type: counts.into_map(),
            relevant,
        },
        matching,
        held_hidden,
        glocks: kept.into_iter().map(|r| (r.glock, r.facts)).collect(),
        asked,
        diagnostics: Diagnostics::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tallies give the counts that counting glocks one by one gives, for every
    /// state, every combination of the facts a kind is made of, and types the tallies do
    /// not cover.
    #[test]
    fn tallied_counts_are_the_counts_one_by_one() {
        for (i, s) in LockState::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i, "ALL in discriminant order");
        }
        let mut counter = Counter::default();
        let mut one_by_one: BTreeMap<GlockType, TypeCounts> = BTreeMap::new();
        let mut n = 0u64;
        for gltype in [1, 2, 5, 15, 16, 300] {
            for state in LockState::ALL {
                for (holders, waiters, granted) in [(0, 0, 0), (1, 0, 1), (3, 2, 1), (2, 2, 0)] {
                    for (flags, demote_us) in [(&b""[..], 0), (b"D", 0), (b"q", 7), (b"p", 0)] {
                        n += 1;
                        let b = Brief {
                            id: GlockId::new(gltype, n),
                            state,
                            flags: glockparse::GlockFlags::parse(flags).unwrap(),
                            demote_us,
                            holders,
                            waiters,
                            granted,
                            ..Brief::default()
                        };
                        // Some glocks more than once, so that tallies exceed one.
                        for _ in 0..1 + n % 3 {
                            counter.add(&b);
                            one_by_one.entry(b.glock_type()).or_default().add(&b);
                        }
                    }
                }
            }
        }
        let got = counter.into_map();
        assert_eq!(got.len(), 6);
        assert_eq!(got, one_by_one);
        for want in one_by_one.values() {
            assert!(want.held_ex > 0 && want.demoting > 0 && want.waiters > want.waiting_glocks);
            assert!(want.holders > want.held_ex);
            assert_eq!(want.by_state.iter().sum::<u64>(), want.glocks);
            assert!(want.by_state.iter().all(|&n| n > 0));
        }
    }

    const DUMP: &str = "\
G:  s:SH n:2/1 f:q t:SH d:EX/0 a:0 v:0 r:3 m:200
 H: s:SH f:H e:0 p:10 [a] f+0x1/0x2
G:  s:EX n:2/2 f:Dq t:EX d:UN/5000 a:0 v:0 r:9 m:200
 H: s:EX f:H e:0 p:11 [b] f+0x1/0x2
G:  s:EX n:2/3 f:q t:EX d:EX/0 a:0 v:0 r:4 m:200
 H: s:EX f:H e:0 p:12 [c] f+0x1/0x2
 H: s:SH f:W e:0 p:13 [d] f+0x1/0x2
 H: s:SH f:W e:0 p:14 [e] f+0x1/0x2
G:  s:UN n:3/4 f: t:UN d:EX/0 a:0 v:0 r:2 m:200
G:  s:EX n:5/5 f:Dq t:EX d:UN/9000 a:0 v:0 r:3 m:200
 H: s:SH f:W e:0 p:15 [f] f+0x1/0x2
";

    fn sel(sort: SortKey, limit: usize, types: Vec<GlockType>) -> Selection {
        Selection {
            sort,
            limit,
            types,
            held: true,
            filter: None,
        }
    }

    fn take_with(sel: &Selection) -> FileSnapshot {
        let ctx = Context::default();
        let seen = std::collections::HashMap::new();
        let look = Lookup {
            ctx: &ctx,
            input: 0,
            seen_waiting: &seen,
            now: std::time::SystemTime::now(),
        };
        take(GlockReader::new(DUMP.as_bytes(), "t"), sel, &look)
    }

    fn snap(sort: SortKey, limit: usize, types: Vec<GlockType>) -> FileSnapshot {
        take_with(&sel(sort, limit, types))
    }

    fn ids(s: &FileSnapshot) -> Vec<String> {
        s.glocks.iter().map(|(g, _)| g.id.to_string()).collect()
    }

    #[test]
    fn waiters_then_demotes_then_held() {
        let s = snap(SortKey::Waiters, 0, vec![]);
        assert_eq!(ids(&s), ["2/3", "5/5", "2/2", "2/1"]);
        assert_eq!(s.summary.relevant, 4);
        let t = s.summary.total();
        assert_eq!(
            (t.glocks, t.unlocked, t.waiting_glocks, t.waiters),
            (5, 1, 2, 3)
        );
        assert_eq!((t.held_ex, t.held_sh, t.demoting), (2, 1, 2));
    }

    #[test]
    fn limit_keeps_the_best() {
        for key in SortKey::ALL {
            let all = snap(key, 0, vec![]);
            for n in 1..=4 {
                assert_eq!(ids(&snap(key, n, vec![])), ids(&all)[..n], "{key:?} {n}");
            }
        }
        assert_eq!(ids(&snap(SortKey::Demote, 2, vec![])), ["5/5", "2/2"]);
        assert_eq!(ids(&snap(SortKey::Refs, 1, vec![])), ["2/2"]);
    }

    #[test]
    fn type_filter_does_not_change_summary() {
        let s = snap(SortKey::Waiters, 0, vec![GlockType::Iopen]);
        assert_eq!(ids(&s), ["5/5"]);
        assert_eq!(s.matching, 1);
        assert_eq!(s.summary.total().glocks, 5);
    }

    #[test]
    fn held_only_glocks_are_left_out_unless_asked() {
        let mut s = sel(SortKey::Hurt, 0, vec![]);
        s.held = false;
        let t = take_with(&s);
        // 2/1 is only held; the others wait or demote.
        assert_eq!(ids(&t), ["2/3", "5/5", "2/2"]);
        assert_eq!((t.matching, t.held_hidden, t.summary.relevant), (3, 1, 4));
    }

    #[test]
    fn the_text_filter_looks_at_ids_types_and_holders() {
        let find = |needle: &str| {
            let mut s = sel(SortKey::Hurt, 0, vec![]);
            s.filter = Some(needle.into());
            ids(&take_with(&s))
        };
        assert_eq!(find("iopen"), ["5/5"]);
        assert_eq!(find("2/2"), ["2/2"]);
        assert_eq!(find("14"), ["2/3"]);
        assert_eq!(find("f+0x1"), ["2/3", "5/5", "2/2", "2/1"]);
        assert_eq!(find("nosuch").len(), 0);
        assert_eq!(find("INODE"), ["2/3", "2/2", "2/1"]);
    }
}
