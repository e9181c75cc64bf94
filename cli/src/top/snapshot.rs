//! One pass over a glocks file: per-type summary counts for every glock, and the N
//! glocks that matter most under the chosen ordering, kept in a bounded heap so memory
//! does not grow with the file.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Read};
use std::path::Path;

use glockparse::{parallel, Diagnostics, Glock, GlockReader, GlockType, LockState};

/// How glocks are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SortKey {
    /// Glocks with waiters first (most waiters), then demotes (oldest first), then held.
    Waiters,
    /// Oldest demote request first.
    Demote,
    /// Most holders (granted and waiting) first.
    Holders,
    /// Highest reference count first.
    Refs,
}

/// Why a glock is shown: the first of these that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relevance {
    Idle = 0,
    Held = 1,
    Demoting = 2,
    Waiting = 3,
}

pub fn relevance(g: &Glock) -> Relevance {
    if g.waiters().next().is_some() {
        Relevance::Waiting
    } else if g.demote_requested() {
        Relevance::Demoting
    } else if g.granted().next().is_some() {
        Relevance::Held
    } else {
        Relevance::Idle
    }
}

/// Rank of a glock: larger is shown first.
type Rank = (u64, u64, u64, u64);

/// The ordering key of a glock under `key`: larger is shown first.
pub fn rank_of(g: &Glock, key: SortKey) -> Rank {
    let rel = relevance(g) as u64;
    let waiters = g.waiter_count() as u64;
    let holders = g.holders.len() as u64;
    let demote = u64::from(g.demote_requested());
    match key {
        SortKey::Waiters => (rel, waiters, g.demote_us, holders),
        SortKey::Demote => (demote, g.demote_us, rel, waiters),
        SortKey::Holders => (holders, waiters, rel, g.demote_us),
        SortKey::Refs => (g.refs.max(0) as u64, rel, waiters, holders),
    }
}

/// Counts for one glock type, like glocktop's summary table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TypeCounts {
    pub glocks: u64,
    pub unlocked: u64,
    pub locked: u64,
    /// Glocks in EX / SH / DF with at least one granted holder.
    pub held_ex: u64,
    pub held_sh: u64,
    pub held_df: u64,
    /// Glocks with at least one waiting holder.
    pub waiting_glocks: u64,
    /// Waiting holders.
    pub waiters: u64,
    /// Glocks with a demote requested or in progress.
    pub demoting: u64,
}

impl TypeCounts {
    fn add(&mut self, g: &Glock) {
        self.glocks += 1;
        if g.state == LockState::Unlocked {
            self.unlocked += 1;
        } else {
            self.locked += 1;
        }
        if g.granted().next().is_some() {
            match g.state {
                LockState::Exclusive => self.held_ex += 1,
                LockState::Shared => self.held_sh += 1,
                LockState::Deferred => self.held_df += 1,
                _ => {}
            }
        }
        let w = g.waiter_count() as u64;
        if w > 0 {
            self.waiting_glocks += 1;
            self.waiters += w;
        }
        if g.demote_requested() {
            self.demoting += 1;
        }
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
    }
}

/// Per-type counts plus the number of glocks that matter (held, demoting or waited on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub by_type: BTreeMap<GlockType, TypeCounts>,
    pub relevant: u64,
}

impl Summary {
    pub fn total(&self) -> TypeCounts {
        let mut t = TypeCounts::default();
        for c in self.by_type.values() {
            t.merge(c);
        }
        t
    }

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
    pub sort: SortKey,
    /// 0 keeps every relevant glock.
    pub limit: usize,
    /// Empty means every type.
    pub types: Vec<GlockType>,
}

/// One file's snapshot.
#[derive(Debug, Clone)]
pub struct FileSnapshot {
    pub summary: Summary,
    /// Relevant glocks that pass the type filter (the candidates for display).
    pub matching: u64,
    /// Best first.
    pub glocks: Vec<Glock>,
    pub diagnostics: Diagnostics,
}

struct Ranked {
    rank: Rank,
    seq: u64,
    glock: Glock,
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
    /// Higher rank is better; among equals the one seen first is better.
    fn cmp(&self, o: &Self) -> Ordering {
        self.rank.cmp(&o.rank).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// Reads a glocks file, in parallel pieces when it is large and plain, and keeps what
/// `sel` asks for.
pub fn take_file(path: &Path, sel: &Selection) -> io::Result<FileSnapshot> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pieces = parallel::for_each_piece(path, threads, |r| take_from(r, sel))?;
    let mut out = FileSnapshot {
        summary: Summary::default(),
        matching: 0,
        glocks: Vec::new(),
        diagnostics: Diagnostics::default(),
    };
    for p in pieces {
        out.summary.merge(&p.value.summary);
        out.matching += p.value.matching;
        out.diagnostics.merge(&p.diagnostics);
        out.glocks.extend(p.value.glocks.into_iter().map(|mut g| {
            g.line += p.line_offset;
            g
        }));
    }
    // Best first; among equals, the one earlier in the file.
    out.glocks
        .sort_by_key(|g| (Reverse(rank_of(g, sel.sort)), g.line));
    if sel.limit > 0 {
        out.glocks.truncate(sel.limit);
    }
    Ok(out)
}

/// Reads every record of `reader` and keeps what `sel` asks for.
#[cfg(test)]
pub fn take<R: Read>(mut reader: GlockReader<R>, sel: &Selection) -> FileSnapshot {
    let mut s = take_from(&mut reader, sel);
    s.diagnostics = reader.into_diagnostics();
    s
}

/// The records of `reader`, summarised; diagnostics are left in the reader.
fn take_from<R: Read>(reader: &mut GlockReader<R>, sel: &Selection) -> FileSnapshot {
    let mut summary = Summary::default();
    // Min-heap of the best `limit` glocks seen so far.
    let mut heap: BinaryHeap<Reverse<Ranked>> = BinaryHeap::new();
    let mut all: Vec<Ranked> = Vec::new();
    let mut g = Glock::default();
    let mut seq = 0u64;
    let mut matching = 0u64;
    while reader.next_into(&mut g) {
        seq += 1;
        let t = g.glock_type();
        summary.by_type.entry(t).or_default().add(&g);
        if relevance(&g) == Relevance::Idle {
            continue;
        }
        summary.relevant += 1;
        if !sel.types.is_empty() && !sel.types.contains(&t) {
            continue;
        }
        matching += 1;
        let r = rank_of(&g, sel.sort);
        if sel.limit == 0 {
            all.push(Ranked {
                rank: r,
                seq,
                glock: g.clone(),
            });
        } else if heap.len() < sel.limit {
            heap.push(Reverse(Ranked {
                rank: r,
                seq,
                glock: g.clone(),
            }));
        } else if let Some(Reverse(worst)) = heap.peek() {
            if (r, Reverse(seq)) > (worst.rank, Reverse(worst.seq)) {
                heap.pop();
                heap.push(Reverse(Ranked {
                    rank: r,
                    seq,
                    glock: g.clone(),
                }));
            }
        }
    }
    let mut kept: Vec<Ranked> = if sel.limit == 0 {
        all
    } else {
        heap.into_iter().map(|Reverse(r)| r).collect()
    };
    kept.sort_by(|a, b| b.cmp(a));
    FileSnapshot {
        summary,
        matching,
        glocks: kept.into_iter().map(|r| r.glock).collect(),
        diagnostics: Diagnostics::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn snap(sort: SortKey, limit: usize, types: Vec<GlockType>) -> FileSnapshot {
        take(
            GlockReader::new(DUMP.as_bytes(), "t"),
            &Selection { sort, limit, types },
        )
    }

    fn ids(s: &FileSnapshot) -> Vec<String> {
        s.glocks.iter().map(|g| g.id.to_string()).collect()
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
        for key in [
            SortKey::Waiters,
            SortKey::Demote,
            SortKey::Holders,
            SortKey::Refs,
        ] {
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
}
