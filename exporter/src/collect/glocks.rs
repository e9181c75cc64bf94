//! The glocks of every filesystem, read as `glk top` reads them at a refresh
//! ([`analysis::refresh::Reader`]): each `glocks` file with the DLM lock dump of its
//! lockspace. It gives the glocks by type and state, holders and waiters, demotes pending,
//! the oldest wait (the DLM queue age where the request waits in the DLM, else how long the
//! exporter has seen it waiting), the waiters past the stuck threshold, and the DLM locks of
//! the lockspace by queue and master. It judges GLK-STUCK-WAITER and GLK-RGRP-CONTENTION by
//! `glk doctor`'s rules.

use std::collections::BTreeMap;
use std::io;

use analysis::findings::FindingCode;
use analysis::refresh::companions::Sources;
use analysis::refresh::rank::{Selection, SortKey};
use analysis::refresh::{verdict, Input, Reader};
use bundle::live::Filesystem;
use bundle::FileKind;
use glockparse::dlm_locks::LockStatus;
use glockparse::{GlockType, LockState};

use super::{Collected, Collector, Config};
use crate::exposition::Family;
use crate::metrics;

/// The glocks collector. It keeps one reader while the set of filesystems stays the same,
/// so that waiters are followed from one collection to the next.
pub struct Glocks {
    cfg: Config,
    reader: Option<(Vec<Filesystem>, Reader)>,
}

impl Glocks {
    /// A collector reading the filesystems under `cfg.debugfs`.
    pub fn new(cfg: Config) -> Glocks {
        Glocks { cfg, reader: None }
    }

    /// The reader of `fss`: the one kept when they are the ones it reads.
    fn reader_for(&mut self, fss: Vec<Filesystem>) -> &mut Reader {
        if self.reader.as_ref().is_none_or(|(had, _)| *had != fss) {
            let inputs: Vec<Input> = fss
                .iter()
                .map(|f| Input {
                    path: f.dir.join("glocks"),
                    live: true,
                })
                .collect();
            // The glocks file and its DLM dump: glstats and glockfd are not needed here.
            let sources = inputs
                .iter()
                .map(|i| {
                    let mut s = Sources::find(i);
                    s.files.remove(FileKind::Glstats);
                    s.files.remove(FileKind::Glockfd);
                    s
                })
                .collect();
            self.reader = Some((fss, Reader::with_sources(inputs, sources)));
        }
        &mut self.reader.as_mut().expect("made above").1
    }
}

/// The families this collector gives.
struct Families {
    glocks: Family,
    holders: Family,
    waiters: Family,
    waited_on: Family,
    demoting: Family,
    oldest: Family,
    stuck: Family,
    dlm: Family,
    dlm_oldest: Family,
}

impl Families {
    fn new() -> Families {
        Families {
            glocks: metrics::GLOCKS.family(),
            holders: metrics::GLOCK_HOLDERS.family(),
            waiters: metrics::GLOCK_WAITERS.family(),
            waited_on: metrics::GLOCKS_WAITED_ON.family(),
            demoting: metrics::GLOCKS_DEMOTE_PENDING.family(),
            oldest: metrics::GLOCK_OLDEST_WAIT_SECONDS.family(),
            stuck: metrics::GLOCK_STUCK_WAITERS.family(),
            dlm: metrics::DLM_LOCKS.family(),
            dlm_oldest: metrics::DLM_LOCK_OLDEST_WAIT_SECONDS.family(),
        }
    }

    fn into_vec(self) -> Vec<Family> {
        vec![
            self.glocks,
            self.holders,
            self.waiters,
            self.waited_on,
            self.demoting,
            self.oldest,
            self.stuck,
            self.dlm,
            self.dlm_oldest,
        ]
    }
}

/// What the judged glocks of one filesystem add up to.
#[derive(Default)]
struct Judged {
    oldest_us: u64,
    stuck_waiters: u64,
    contended_rgrps: u64,
}

impl Collector for Glocks {
    fn name(&self) -> &'static str {
        "glocks"
    }

    fn collect(&mut self) -> io::Result<Collected> {
        let fss = bundle::live::mounted(&self.cfg.debugfs)?;
        let mut fam = Families::new();
        let mut c = Collected {
            findings: vec![
                (FindingCode::StuckWaiter, 0),
                (FindingCode::RgrpContention, 0),
            ],
            ..Collected::default()
        };
        if fss.is_empty() {
            self.reader = None;
            c.families = fam.into_vec();
            return Ok(c);
        }
        let t = self.cfg.thresholds;
        let sel = Selection {
            sort: SortKey::Hurt,
            limit: self.cfg.judged_per_fs.max(1) * fss.len(),
            types: Vec::new(),
            held: false,
            filter: None,
        };
        let tables: Vec<String> = fss.iter().map(|f| f.table.clone()).collect();
        let lockspaces: Vec<String> = fss.iter().map(|f| f.lockspace.clone()).collect();
        let reader = self.reader_for(fss);
        let (snap, ages) = reader.take(&sel, true)?;
        let verdicts = verdict::judge(&snap, &ages, self.cfg.stuck_after);
        let mut judged: Vec<Judged> = tables.iter().map(|_| Judged::default()).collect();
        for (s, v) in snap.shown.iter().zip(&verdicts) {
            let j = &mut judged[s.input];
            j.oldest_us = j.oldest_us.max(v.wait_us);
            let waiting = s.glock.waiter_count() as u64;
            if v.stuck {
                j.stuck_waiters += waiting;
            }
            if s.glock.glock_type() == GlockType::Rgrp && t.is_rgrp_contended(waiting, 0) {
                j.contended_rgrps += 1;
            }
        }
        for (i, file) in snap.files.iter().enumerate() {
            let fs = tables[i].as_str();
            for (ty, n) in &file.summary.by_type {
                let ty = ty.name();
                let l = [("fs", fs), ("type", &*ty)];
                for (state, count) in LockState::ALL.iter().zip(n.by_state) {
                    if count > 0 || *state != LockState::Unknown {
                        fam.glocks
                            .add(&[l[0], l[1], ("state", state.as_str())], count as f64);
                    }
                }
                fam.holders.add(&l, n.holders as f64);
                fam.waiters.add(&l, n.waiters as f64);
                fam.waited_on.add(&l, n.waiting_glocks as f64);
                fam.demoting.add(&l, n.demoting as f64);
            }
            let j = &judged[i];
            fam.oldest.add(&[("fs", fs)], j.oldest_us as f64 / 1e6);
            fam.stuck.add(&[("fs", fs)], j.stuck_waiters as f64);
            c.findings[0].1 += j.stuck_waiters;
            c.findings[1].1 += j.contended_rgrps;
            c.malformed += file.diagnostics.errors;
        }
        dlm_locks(&snap, &lockspaces, &mut fam);
        c.malformed += snap
            .ctx
            .nodes
            .iter()
            .map(|n| n.problems.len() as u64)
            .sum::<u64>();
        c.families = fam.into_vec();
        Ok(c)
    }
}

/// The DLM locks of each lockspace's dump by queue and master, and the longest wait.
fn dlm_locks(snap: &analysis::refresh::Snapshot, lockspaces: &[String], fam: &mut Families) {
    for (i, node) in snap.ctx.nodes.iter().enumerate() {
        if !node.sources.files.has(FileKind::DlmLocks) {
            continue;
        }
        let ls = lockspaces[i].as_str();
        let mut counts: BTreeMap<(String, &str), u64> = BTreeMap::new();
        for q in ["granted", "converting", "waiting"] {
            for m in ["local", "remote"] {
                counts.insert((q.to_string(), m), 0);
            }
        }
        let mut oldest_us = 0u64;
        for l in node.all_locks() {
            let master = if l.master().is_none() {
                "local"
            } else {
                "remote"
            };
            *counts.entry((l.status.name(), master)).or_default() += 1;
            if l.status != LockStatus::Granted {
                oldest_us = oldest_us.max(l.age_us);
            }
        }
        for ((queue, master), n) in counts {
            fam.dlm.add(
                &[("lockspace", ls), ("queue", &queue), ("master", master)],
                n as f64,
            );
        }
        fam.dlm_oldest
            .add(&[("lockspace", ls)], oldest_us as f64 / 1e6);
    }
}
