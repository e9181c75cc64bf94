//! `glk top --json`: one JSON document per snapshot. The schema is documented in the
//! README ("glk top --json").

use std::collections::HashMap;
use std::io::{self, Write};

use gfs2stats::glstats::GlStat;
use glockparse::Holder;
use serde::Serialize;

use analysis::refresh::companions::{Rates, RequestWait};
use analysis::refresh::rank::{Summary, TypeCounts};
use analysis::refresh::verdict::{AgeSource, Verdict};
use analysis::refresh::waits::{WaitAge, WaiterKey};
use analysis::refresh::Shown;

use super::Page;
use clikit::fmt;

#[derive(Serialize)]
struct Doc<'a> {
    taken_unix: f64,
    iteration: u64,
    /// Seconds reading every file took.
    read_s: f64,
    /// Glocks only held, left out (without --held).
    held_hidden: u64,
    sources: Vec<Source>,
    glocks: Vec<JGlock<'a>>,
    /// POSIX (fcntl) lock requests that wait, from `dlm_tool plocks`.
    posix_waits: Vec<JPosixWait>,
    summary: JSummary,
    errors: clikit::diag::Errors,
    /// Cluster mode: the nodes that did not answer this refresh, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    missing_nodes: Vec<JMissing<'a>>,
    /// What reading the companion files (DLM dump, glstats, glockfd...) ran into this
    /// refresh, one line each, the file named.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<&'a str>,
}

#[derive(Serialize)]
struct JMissing<'a> {
    node: &'a str,
    reason: &'a str,
}

/// A holder on another node that the waiters wait for.
#[derive(Serialize)]
struct JThere<'a> {
    node: String,
    nodeid: Option<u64>,
    /// The holding process (for a GL_NOPID flock holder, the one that node's DLM and
    /// glockfd name).
    pid: Option<i64>,
    /// That process's command, from the node's task list, when the holder does not say it.
    comm: Option<&'a str>,
    holder: JHolder<'a>,
}

#[derive(Serialize)]
struct JPlock {
    nodeid: i64,
    pid: u32,
    mode: &'static str,
    start: u64,
    end: u64,
}

impl JPlock {
    fn of(l: &glockparse::plocks::Plock) -> JPlock {
        JPlock {
            nodeid: l.nodeid,
            pid: l.pid,
            mode: l.mode(),
            start: l.start,
            end: l.end,
        }
    }
}

#[derive(Serialize)]
struct JPosixWait {
    /// `posix 2/N`: the POSIX locks of the file whose inode glock is `2/N`.
    resource: String,
    inode: u64,
    /// `waiting` or `pending`.
    state: &'static str,
    request: JPlock,
    blockers: Vec<JPlock>,
}

#[derive(Serialize)]
struct Source {
    path: String,
    live: bool,
    summary: JSummary,
    errors: clikit::diag::Errors,
}

#[derive(Serialize)]
struct JSummary {
    relevant: u64,
    by_type: Vec<TypeRow>,
    total: TypeCounts,
}

#[derive(Serialize)]
struct TypeRow {
    #[serde(rename = "type")]
    gltype: String,
    #[serde(flatten)]
    counts: TypeCounts,
}

#[derive(Serialize)]
struct JGlock<'a> {
    glock: String,
    #[serde(rename = "type")]
    gltype: String,
    source: &'a str,
    /// The filesystem's lock table: glocktop's label of the glock, else its input's
    /// (a debugfs directory's name, a capture's `table`).
    fs: Option<&'a str>,
    line: u64,
    state: &'static str,
    target: &'static str,
    demote_state: &'static str,
    demote_us: u64,
    flags: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    flag_names: Option<Vec<String>>,
    refs: i64,
    ail: i64,
    revokes: i64,
    hold_jiffies: i64,
    nrpages: Option<u64>,
    holders: Vec<JHolder<'a>>,
    waiters: Vec<JHolder<'a>>,
    inode: Option<JInode>,
    rgrp: Option<JRgrp>,
    extra: HashMap<&'a str, &'a str>,
    /// The longest known wait, µs, and where that age comes from (`dlm`, `seen`).
    wait_us: u64,
    wait_source: Option<&'static str>,
    stuck: bool,
    waits_for: Option<String>,
    dlm: Option<JDlm>,
    glstats: Option<JStats>,
    open_files: Vec<JFd>,
    /// The holders on other nodes that the waiters wait for (every node's files read).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    held_elsewhere: Vec<JThere<'a>>,
}

#[derive(Serialize)]
struct JDlm {
    rqmode: &'static str,
    grmode: &'static str,
    pid: u64,
    age_us: u64,
    master: &'static str,
    master_node: Option<u64>,
    blockers: Vec<JBlocker>,
}

#[derive(Serialize)]
struct JBlocker {
    node: Option<u64>,
    pid: u64,
    grmode: &'static str,
    age_us: u64,
}

#[derive(Serialize)]
struct JStats {
    srtt_ns: i64,
    srttb_ns: i64,
    sirt_ns: i64,
    dcount: i64,
    qcount: i64,
    dlm_per_s: Option<f64>,
    queued_per_s: Option<f64>,
}

#[derive(Serialize)]
struct JFd {
    pid: u32,
    fd: u32,
}

#[derive(Serialize)]
struct JHolder<'a> {
    pid: i64,
    comm: &'a str,
    state: &'static str,
    flags: String,
    caller: &'a str,
    error: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    seen_waiting_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new: Option<bool>,
}

#[derive(Serialize)]
struct JInode {
    formal_ino: u64,
    addr: u64,
    file_type: &'static str,
    size: u64,
    nrpages: Option<u64>,
}

#[derive(Serialize)]
struct JRgrp {
    addr: u64,
    free: u64,
    dinodes: u64,
    reservations: usize,
}

fn summary(s: &Summary) -> JSummary {
    JSummary {
        relevant: s.relevant,
        by_type: s
            .by_type
            .iter()
            .map(|(t, c)| TypeRow {
                gltype: t.name().into_owned(),
                counts: c.clone(),
            })
            .collect(),
        total: s.total(),
    }
}

fn holder<'a>(h: &'a Holder, age: Option<&WaitAge>) -> JHolder<'a> {
    JHolder {
        pid: h.pid,
        comm: &h.comm,
        state: h.state.as_str(),
        flags: h.flags.to_string(),
        caller: &h.caller,
        error: h.error,
        seen_waiting_s: age.map(|a| a.seen_secs),
        new: age.map(|a| a.new),
    }
}

fn glock<'a>(
    page: &Page<'a>,
    s: &'a Shown,
    v: &'a Verdict,
    source: &'a str,
    flag_names: bool,
) -> JGlock<'a> {
    let (g, input, ages) = (&s.glock, s.input, page.ages);
    let node = page.snap.ctx.node(input);
    let age = |h: &Holder| ages.get(&WaiterKey::of(input, g, h)).copied();
    JGlock {
        glock: g.id.to_string(),
        gltype: g.glock_type().name().into_owned(),
        source,
        fs: g.fs.as_deref().or(node.sources.fs.as_deref()),
        line: g.line,
        state: g.state.as_str(),
        target: g.target.as_str(),
        demote_state: g.demote_state.as_str(),
        demote_us: g.demote_us,
        flags: g.flags.to_string(),
        flag_names: flag_names.then(|| g.flags.words()),
        refs: g.refs,
        ail: g.ail,
        revokes: g.revokes,
        hold_jiffies: g.hold_jiffies,
        nrpages: g.nrpages,
        holders: g.granted().map(|h| holder(h, None)).collect(),
        waiters: g.waiters().map(|h| holder(h, age(h).as_ref())).collect(),
        inode: g.inode.as_ref().map(|i| JInode {
            formal_ino: i.formal_ino,
            addr: i.addr,
            file_type: i.file_type(),
            size: i.size,
            nrpages: i.nrpages,
        }),
        rgrp: g.rgrp.as_ref().map(|r| JRgrp {
            addr: r.addr,
            free: r.free,
            dinodes: r.dinodes,
            reservations: r.reservations.len(),
        }),
        extra: g.extra.iter().map(|t| (&*t.key, &*t.value)).collect(),
        wait_us: v.wait_us,
        wait_source: v.source.map(|s| match s {
            AgeSource::Dlm => "dlm",
            AgeSource::Seen => "seen",
        }),
        stuck: v.stuck,
        waits_for: (g.waiter_count() > 0).then(|| v.blocker.to_string()),
        dlm: v.dlm.as_ref().map(|d| dlm(d, node.nodeid())),
        glstats: node.stat(g.id).map(|(s, r)| stats(s, r)),
        open_files: node
            .open_files(g.id)
            .iter()
            .map(|f| JFd {
                pid: f.pid,
                fd: f.fd,
            })
            .collect(),
        held_elsewhere: v
            .elsewhere
            .iter()
            .map(|t| JThere {
                node: super::columns::node_name(page.snap, t.input),
                nodeid: t.nodeid,
                pid: t.pid,
                comm: t.comm.as_deref(),
                holder: holder(&t.holder, None),
            })
            .collect(),
    }
}

/// The DLM's view of a waiting glock's request: `local_node` is the node's own id, its
/// master when the lock dump names no other.
fn dlm(d: &RequestWait, local_node: Option<u64>) -> JDlm {
    JDlm {
        rqmode: d.rqmode.as_str(),
        grmode: d.grmode.as_str(),
        pid: d.pid,
        age_us: d.age_us,
        master: if d.master.is_some() {
            "remote"
        } else {
            "local"
        },
        master_node: d.master.or(local_node),
        blockers: d
            .blockers
            .iter()
            .map(|b| JBlocker {
                node: b.owner,
                pid: b.pid,
                grmode: b.grmode.as_str(),
                age_us: b.age_us,
            })
            .collect(),
    }
}

/// A glock's glstats counters and, after two reads, their rates.
fn stats(s: &GlStat, r: Option<&Rates>) -> JStats {
    JStats {
        srtt_ns: s.stats.srtt,
        srttb_ns: s.stats.srttb,
        sirt_ns: s.stats.sirt,
        dcount: s.stats.dcount,
        qcount: s.stats.qcount,
        dlm_per_s: r.map(|r| r.dlm_per_s),
        queued_per_s: r.map(|r| r.queued_per_s),
    }
}

pub fn write(out: &mut impl Write, page: &Page, flag_names: bool) -> io::Result<()> {
    let snap = page.snap;
    let paths: Vec<String> = snap
        .inputs
        .iter()
        .map(|i| i.path.display().to_string())
        .collect();
    let doc = Doc {
        taken_unix: fmt::unix_secs(snap.taken),
        iteration: snap.iteration,
        read_s: snap.read_time.as_secs_f64(),
        held_hidden: snap.hidden().1,
        sources: snap
            .inputs
            .iter()
            .zip(&snap.files)
            .map(|(i, f)| Source {
                path: i.path.display().to_string(),
                live: i.live,
                summary: summary(&f.summary),
                errors: clikit::diag::errors(&f.diagnostics),
            })
            .collect(),
        glocks: snap
            .shown
            .iter()
            .zip(page.verdicts)
            .map(|(s, v)| glock(page, s, v, &paths[s.input], flag_names))
            .collect(),
        posix_waits: snap
            .ctx
            .posix_waits()
            .iter()
            .map(|w| JPosixWait {
                resource: w.request.resource(),
                inode: w.request.number,
                state: w.request.state.as_str(),
                request: JPlock::of(&w.request),
                blockers: w.blockers.iter().map(JPlock::of).collect(),
            })
            .collect(),
        summary: summary(&snap.summary()),
        errors: clikit::diag::errors(&snap.diagnostics()),
        missing_nodes: snap
            .missing
            .iter()
            .map(|(node, reason)| JMissing { node, reason })
            .collect(),
        problems: snap.problems().collect(),
    };
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
