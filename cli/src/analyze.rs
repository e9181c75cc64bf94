//! `glk analyze`: capture bundles read into typed rows and one pass over the traces, every
//! analysis run, and the report written as text or JSON.

use std::io::{self, Write};

use analysis::contended::Contended;
use analysis::findings::{self, Finding, Thresholds};
use analysis::handoff::{DlmLatency, HandoffSummary};
use analysis::owners::named;
use analysis::slow::{SlowGlock, SlowType};
use analysis::{self as analyze, HoldWait, Options, Report, Snapshots, SortBy, StormOptions};
use bundle::Captures;
use clikit::args::{AnalyzeArgs, Sort};
use clikit::fmt::nanos;
use glockparse::Diagnostics;

use crate::table::{self, Cell, Column, Show};

/// What the analyses read: the captures, their snapshots as rows, each node's trace state
/// after one pass and the traces folded over nodes, and the problems met reading them.
pub(crate) struct Loaded {
    pub caps: Captures,
    pub snapshots: Snapshots,
    pub traces: Vec<analyze::trace::NodeTrace>,
    pub folded: analyze::trace::Folded,
    pub diagnostics: Diagnostics,
}

impl Loaded {
    /// Runs every analysis; the report's own diagnostics join the loaded ones.
    pub fn analyze(&mut self, o: &Options) -> Report {
        let r = analyze::analyze(&self.snapshots, &self.traces, &self.folded, &self.caps, o);
        self.diagnostics.merge(&r.diagnostics);
        r
    }

    /// Runs every analysis and the findings on it, as `glk doctor` and `glk report` see
    /// them: `o`'s stuck threshold judges part 7 and the findings alike.
    pub fn diagnose(&mut self, o: &Options, t: &Thresholds) -> (Report, Vec<Finding>) {
        let report = self.analyze(o);
        let fs = findings::findings(&report, &self.caps, &self.traces, &self.diagnostics, t);
        (report, fs)
    }
}

/// Reads the snapshots of one filesystem, `fs` where the inputs hold several
/// ([`Captures::keep_filesystem`]), into rows and the traces in one pass; the
/// diagnostics are those of both.
pub(crate) fn load_for_analysis(
    paths: &[std::path::PathBuf],
    fs: Option<&str>,
) -> io::Result<Loaded> {
    let mut caps = bundle::discover(paths)?;
    caps.keep_filesystem(fs)?;
    for l in caps.notes() {
        eprintln!("glk: {l}");
    }
    let snapshots = Snapshots::load(&caps)?;
    let (traces, folded, d) = analyze::trace::read(&caps, &progress)?;
    let events: u64 = traces.iter().map(|t| t.events).sum();
    let mut diagnostics = snapshots.diagnostics.clone();
    diagnostics.merge(&d);
    clikit::diag::captures_recognised(paths, snapshots.rows() + events as usize, &diagnostics)?;
    Ok(Loaded {
        caps,
        snapshots,
        traces,
        folded,
        diagnostics,
    })
}

/// Progress of the trace pass on standard error, when it is a terminal: events read per
/// node, rewritten in place, and cleared at the end.
fn progress(nodes: &[(String, u64)], done: bool) {
    use std::io::IsTerminal;
    let mut err = io::stderr().lock();
    if !err.is_terminal() || nodes.is_empty() {
        return;
    }
    if done {
        let _ = write!(err, "\r\x1b[K");
        return;
    }
    let parts: Vec<String> = nodes.iter().map(|(n, e)| format!("{n} {e}")).collect();
    let _ = write!(
        err,
        "\r\x1b[Kglk: reading traces: {} events",
        parts.join(", ")
    );
    let _ = err.flush();
}

pub fn run(a: &AnalyzeArgs, color: clikit::Color) -> io::Result<()> {
    let mut loaded = load_for_analysis(&a.captures, a.filesystem.only())?;
    let o = Options {
        sort: match a.sort {
            Sort::Demotes => SortBy::Demotes,
            Sort::Wait => SortBy::Wait,
            Sort::Changes => SortBy::Changes,
            Sort::Waiters => SortBy::Waiters,
        },
        limit: a.limit,
        storms: StormOptions {
            window_ns: (a.storm_window * 1e9) as u64,
            min_demotes: a.storm_min.max(1),
            ..StormOptions::default()
        },
        stuck_after: a.stuck.stuck_after,
    };
    let report = loaded.analyze(&o);
    let Loaded {
        traces,
        diagnostics,
        ..
    } = &loaded;
    if let Some(path) = &a.timeline {
        let file = std::fs::File::create(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let mut w = io::BufWriter::new(file);
        analyze::timeline::write(&report, traces, &mut w)
            .and_then(|()| w.flush())
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        eprintln!(
            "glk: timeline of {} hand-offs written to {} (open it in ui.perfetto.dev)",
            report.matched.len(),
            path.display()
        );
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        v["errors"] = serde_json::to_value(clikit::diag::errors(diagnostics))?;
        serde_json::to_writer(&mut out, &v)?;
        writeln!(out)?;
    } else {
        text(&mut out, &report, color.stdout())?;
    }
    out.flush()?;
    clikit::diag::report(diagnostics);
    Ok(())
}

fn ns128(v: u128) -> String {
    nanos(u64::try_from(v).unwrap_or(u64::MAX))
}

/// `1. CONTENDED GLOCKS`, and `glk report`'s table of them.
pub(crate) const CONTENDED: [Column<Contended>; 12] = [
    Column::left("GLOCK", "glock", 16, |c: &Contended| Cell::text(&c.glock)),
    Column::left("TYPE", "type", 6, |c: &Contended| Cell::text(&c.gltype)),
    Column::right("RMT-DEM", "remote demotes", 8, |c: &Contended| {
        Cell::num(c.remote_demotes)
    }),
    Column::right("LOC-DEM", "local demotes", 7, |c: &Contended| {
        Cell::num(c.local_demotes)
    }),
    Column::right("CHANGES", "state changes", 8, |c: &Contended| {
        Cell::num(c.state_changes)
    }),
    Column::right("WAITERS", "max waiters", 8, |c: &Contended| {
        Cell::num(c.max_waiters)
    }),
    Column::right("WAIT-TOT", "wait total", 10, |c: &Contended| {
        Cell::dur(u64::try_from(c.wait_ns_total).unwrap_or(u64::MAX))
    }),
    Column::right("WAITS", "waits", 6, |c: &Contended| Cell::num(c.waits)).only(Show::Text),
    Column::left("NODES / OBJECT", "", 0, |c: &Contended| {
        Cell::text(format!(
            "{}{}",
            c.nodes.join(","),
            c.object
                .as_ref()
                .map(|o| format!(" ({o})"))
                .unwrap_or_default()
        ))
    })
    .gap(2)
    .only(Show::Text),
    Column::left("", "nodes", 0, |c: &Contended| {
        Cell::text(c.nodes.join(","))
    })
    .only(Show::Html),
    Column::left("", "object", 0, |c: &Contended| {
        Cell::text(c.object.clone().unwrap_or_default())
    })
    .only(Show::Html),
    // The text has them on lines of their own under the row.
    Column::left(
        "",
        "held by, waiting (last snapshot with any)",
        0,
        |c: &Contended| Cell::text(c.parties.cited().collect::<Vec<_>>().join("\n")),
    )
    .only(Show::Html),
];

/// DLM round trips per glock type.
const SLOW_TYPES: [Column<SlowType>; 7] = [
    Column::left("TYPE", "type", 8, |t: &SlowType| Cell::text(&t.gltype)),
    Column::right("COUNT", "count", 7, |t: &SlowType| Cell::num(t.count)),
    Column::right("P50", "p50", 9, |t: &SlowType| Cell::dur(t.p50_ns)),
    Column::right("P99", "p99", 9, |t: &SlowType| Cell::dur(t.p99_ns)),
    Column::right("MAX", "max", 9, |t: &SlowType| Cell::dur(t.max_ns)),
    Column::right("BLOCKING n/p50", "blocking", 20, |t: &SlowType| {
        count_and_p50(t.blocking_count, t.blocking_p50_ns)
    })
    .gap(3),
    Column::right("NON-BLOCKING n/p50", "non-blocking", 20, |t: &SlowType| {
        count_and_p50(t.nonblocking_count, t.nonblocking_p50_ns)
    }),
];

/// A count of round trips and their median: `12 / 1.5ms`.
fn count_and_p50(count: u64, p50_ns: u64) -> Cell {
    Cell::text(format!("{count} / {}", nanos(p50_ns)))
}

/// DLM round trips of the slowest glocks, outliers marked.
const SLOW_GLOCKS: [Column<SlowGlock>; 8] = [
    Column::left("GLOCK", "glock", 16, |s: &SlowGlock| Cell::text(&s.glock)),
    Column::left("TYPE", "type", 6, |s: &SlowGlock| Cell::text(&s.gltype)),
    Column::right("COUNT", "count", 6, |s: &SlowGlock| Cell::num(s.count)),
    Column::right("P50", "p50", 9, |s: &SlowGlock| Cell::dur(s.p50_ns)),
    Column::right("P99", "p99", 9, |s: &SlowGlock| Cell::dur(s.p99_ns)),
    Column::right("MAX", "max", 9, |s: &SlowGlock| Cell::dur(s.max_ns)),
    Column::right("GLSTATS-RTTB", "glstats rttb", 12, |s: &SlowGlock| {
        Cell::text(
            s.glstats_srttb_ns
                .map_or("-".into(), |v| nanos(v.max(0) as u64)),
        )
    }),
    Column::left("", "outlier", 0, |s: &SlowGlock| {
        Cell::text(if s.outlier {
            format!(
                "outlier: p99 >= {}x type median",
                analyze::slow::OUTLIER_FACTOR
            )
        } else {
            String::new()
        })
    })
    .gap(2),
];

/// `4. HOLD AND WAIT TIMES`.
const HOLD_WAIT: [Column<HoldWait>; 7] = [
    Column::left("GLOCK", "glock", 16, |h: &HoldWait| Cell::text(&h.glock)),
    Column::left("TYPE", "type", 6, |h: &HoldWait| Cell::text(&h.gltype)),
    Column::right("WAIT n/p99/total", "wait", 18, |h: &HoldWait| {
        Cell::text(format!(
            "{}/{}/{}",
            h.wait.dist.count,
            nanos(h.wait.dist.p99_ns),
            ns128(h.wait.total_ns)
        ))
    }),
    Column::right("HOLD n/p99", "hold", 18, |h: &HoldWait| {
        Cell::text(format!(
            "{}/{}",
            h.hold.dist.count,
            nanos(h.hold.dist.p99_ns)
        ))
    }),
    Column::right("DEMOTE n/p99", "demote", 18, |h: &HoldWait| {
        Cell::text(format!(
            "{}/{}",
            h.demote.dist.count,
            nanos(h.demote.dist.p99_ns)
        ))
    }),
    Column::right("WAIT@", "waiting at end", 6, |h: &HoldWait| {
        Cell::num(h.waiting_at_end)
    }),
    Column::right("HELD@", "held at end", 6, |h: &HoldWait| {
        Cell::num(h.held_at_end)
    }),
];

/// DLM latency by master, and `glk report`'s table of it.
pub(crate) const DLM_LATENCY: [Column<DlmLatency>; 10] = [
    Column::left("NODE", "node", 8, |l: &DlmLatency| Cell::text(&l.node)),
    Column::left("MASTER", "master", 8, |l: &DlmLatency| Cell::text(l.master)),
    Column::left("ON", "master node", 8, |l: &DlmLatency| {
        Cell::text(l.master_node.as_deref().unwrap_or("-"))
    }),
    Column::left("MEASURE", "measure", 17, |l: &DlmLatency| {
        Cell::text(l.measure)
    }),
    Column::left("CONV", "conversion", 5, |l: &DlmLatency| {
        Cell::text(l.conversion)
    }),
    Column::left("BLOCKED", "blocked", 8, |l: &DlmLatency| {
        Cell::text(if l.blocked { "yes" } else { "no" })
    }),
    Column::right("COUNT", "count", 7, |l: &DlmLatency| {
        Cell::num(l.dist.count)
    }),
    Column::right("P50", "p50", 9, |l: &DlmLatency| Cell::dur(l.dist.p50_ns)),
    Column::right("P99", "p99", 9, |l: &DlmLatency| Cell::dur(l.dist.p99_ns)),
    Column::right("MAX", "max", 9, |l: &DlmLatency| Cell::dur(l.dist.max_ns)),
];

/// Hand-offs per glock and node pair (p50 of each hop), and `glk report`'s table of them.
#[rustfmt::skip]
pub(crate) const HANDOFFS: [Column<HandoffSummary>; 12] = [
    Column::left("GLOCK", "glock", 12, |h| Cell::text(&h.glock)),
    Column::left("NODES", "", 10, |h: &HandoffSummary| {
        Cell::text(format!("{}>{}", h.holder_node, h.requester_node))
    })
    .only(Show::Text),
    Column::left("", "holder", 0, |h: &HandoffSummary| Cell::text(&h.holder_node))
        .only(Show::Html),
    Column::left("", "requester", 0, |h: &HandoffSummary| Cell::text(&h.requester_node))
        .only(Show::Html),
    Column::right("COUNT", "count", 5, |h| Cell::num(h.count)),
    Column::right("QUEUE", "queue", 9, |h| Cell::dur(h.queue.p50_ns)),
    Column::right("REQ>BAST", "request > bast", 9, |h| Cell::dur(h.request_to_bast.p50_ns)),
    Column::right("HOLD", "holder wait", 9, |h| Cell::dur(h.holder_wait.p50_ns)),
    Column::right("WORK", "demote work", 9, |h| Cell::dur(h.holder_work.p50_ns)),
    Column::right("REL>GRANT", "release > grant", 9, |h| Cell::dur(h.release_to_grant.p50_ns)),
    Column::right("PROMOTE", "grant > promote", 9, |h| Cell::dur(h.grant_to_promote.p50_ns)),
    Column::right("TOTAL", "total", 9, |h| Cell::dur(h.total.p50_ns)),
];

fn text(out: &mut impl Write, r: &Report, paint: clikit::Paint) -> io::Result<()> {
    let nodes: Vec<String> = r
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{}{} ({} snapshots, {} traces)",
                n.node,
                n.nodeid
                    .map(|i| format!(" [nodeid {i}]"))
                    .unwrap_or_default(),
                n.snapshots,
                n.traces
            )
        })
        .collect();
    writeln!(out, "glk analyze: {}", nodes.join(", "))?;
    writeln!(out)?;
    contended(out, r)?;
    writeln!(out)?;
    storms(out, r)?;
    writeln!(out)?;
    slow_and_hold(out, r)?;
    writeln!(out)?;
    cross_node(out, r)?;
    writeln!(out)?;
    cycles(out, r, paint)?;
    writeln!(out)?;
    stuck(out, r, paint)?;
    causality(out, &r.causality)
}

/// 1. Contended glocks, each with who held and who waited in its last snapshot.
fn contended(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(out, "1. CONTENDED GLOCKS")?;
    table::text_head(out, &CONTENDED)?;
    for c in &r.contended {
        table::text_row(out, &CONTENDED, c)?;
        for (role, who, _) in c.parties.each() {
            writeln!(out, "    {role:<8} {who}")?;
        }
    }
    Ok(())
}

/// 2. Demote storms and ping-pong.
fn storms(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(
        out,
        "2. DEMOTE STORMS (remote demote bursts; times in each node's trace clock)"
    )?;
    each_or_none(out, &r.demote_storms, |out, s| {
        writeln!(
            out,
            "{:<16} {:<6} on {:<8} {:>5} demotes in {:>9} (peak {}/window) from {:.3}s; storm nodes: {}",
            s.glock,
            s.gltype,
            s.node,
            s.demotes,
            nanos(s.end_ns - s.start_ns),
            s.peak_per_window,
            s.start_ns as f64 / 1e9,
            s.nodes.join(",")
        )
    })?;
    for p in &r.ping_pong {
        let per: Vec<String> = p.cycles.iter().map(|(n, c)| format!("{n}: {c}")).collect();
        writeln!(
            out,
            "{:<16} {:<6} ping-pong between nodes (give up and regain cycles: {}; modes {})",
            p.glock,
            p.gltype,
            per.join(", "),
            p.modes.join("/")
        )?;
    }
    Ok(())
}

/// 3. and 4. DLM round trips, and hold and wait times.
fn slow_and_hold(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(out, "3. SLOW DLM ROUND TRIPS (gfs2_glock_lock_time tdiff)")?;
    table::text(out, &SLOW_TYPES, &r.slow_dlm_types)?;
    table::text(out, &SLOW_GLOCKS, &r.slow_dlm)?;
    writeln!(out)?;
    writeln!(out, "4. HOLD AND WAIT TIMES (traces)")?;
    table::text(out, &HOLD_WAIT, &r.hold_wait)?;
    Ok(())
}

/// 5. Cross-node waits, then the waits on one node, with the lines that show them.
fn cross_node(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(out, "5. CROSS-NODE WAITS")?;
    waits(out, &r.cross_node)?;
    if !r.local_waits.is_empty() {
        writeln!(out, "   waits for a holder on the same node:")?;
        waits(out, &r.local_waits)?;
    }
    Ok(())
}

/// Waiters and their holders, with the lines that show them.
fn waits(out: &mut impl Write, rows: &[analysis::cross::CrossNode]) -> io::Result<()> {
    each_or_none(out, rows, |out, c| {
        writeln!(
            out,
            "{:<16} {:<6} {} {} waits for {} {} (seen in {} snapshots; from {})",
            c.glock,
            c.gltype,
            c.waiter_node,
            named(c.waiter_pid, c.waiter_comm.as_deref(), c.waiter_source),
            c.holder_node,
            named(c.holder_pid, c.holder_comm.as_deref(), c.holder_source),
            c.seen_in_snapshots,
            c.evidence.join(" and ")
        )?;
        writeln!(out, "{:<23} {}", "", joined(&c.cites))
    })
}

/// 6. Deadlock cycles.
fn cycles(out: &mut impl Write, r: &Report, paint: clikit::Paint) -> io::Result<()> {
    writeln!(out, "6. DEADLOCK CYCLES")?;
    each_or_none(out, &r.cycles, |out, c| {
        writeln!(
            out,
            "{} ({}, snapshots {:?}): {}",
            paint.bad("cycle"),
            c.confidence,
            c.snapshots,
            c.why
        )?;
        for s in &c.steps {
            writeln!(out, "  {}: {} waits for {}", s.node, s.owner, s.waits_for)?;
            writeln!(out, "      {}", joined(&s.evidence))?;
        }
        writeln!(out, "  ... held by the first step: back to the start")
    })
}

/// The lines cited, as `NODE/FILE:LINE` after one another.
fn joined(cites: &[analysis::cross::Cited]) -> String {
    let cites: Vec<&str> = cites.iter().map(|c| c.cite.as_str()).collect();
    cites.join(" ")
}

/// Where and how long a waiter still waiting at the end was seen: `in snapshots 0..2 (6.00s
/// by the snapshots' clock)`, or `in snapshot 0, the node's last, alone`.
fn seen_waiting(w: &analyze::stuck::Wait) -> String {
    if w.snapshots < 2 {
        return format!("in snapshot {}, the node's last, alone", w.last_snapshot);
    }
    let span = w.span_secs.map_or_else(
        || " (the snapshots have no times)".to_string(),
        |s| format!(" ({} by the snapshots' clock)", secs(s)),
    );
    format!(
        "in snapshots {}..{}{span}",
        w.first_snapshot, w.last_snapshot
    )
}

/// A line of part 7 for a waiter still waiting at the end: `label`, the waiter, where and
/// how long it was seen waiting, `judged`, and its DLM request's age.
fn still_waiting(
    out: &mut impl Write,
    label: String,
    w: &analyze::stuck::Wait,
    judged: &str,
) -> io::Result<()> {
    writeln!(
        out,
        "{label} {} {} {} {} waiting for {} {}{judged}{}",
        w.node,
        w.glock,
        named(w.pid, w.comm.as_deref(), w.pid_source),
        w.caller,
        w.state,
        seen_waiting(w),
        dlm_age(w)
    )
}

/// `; its DLM request has waited 1m12s (n2/gfs_locks:4)` for a waiter whose DLM request a
/// last lock dump shows, else nothing.
fn dlm_age(w: &analyze::stuck::Wait) -> String {
    match (w.dlm_age_us, &w.dlm_cite) {
        (Some(us), Some(cite)) => format!(
            "; its DLM request has waited {} ({cite})",
            clikit::fmt::micros(us)
        ),
        _ => String::new(),
    }
}

/// Seconds as part 7 says them (`6.00s`, `1m12s`).
fn secs(s: f64) -> String {
    clikit::fmt::micros((s.max(0.0) * 1e6) as u64)
}

/// Writes each of `items` with `write`, or `none` when there are none.
fn each_or_none<W: Write, T>(
    out: &mut W,
    items: &[T],
    mut write: impl FnMut(&mut W, &T) -> io::Result<()>,
) -> io::Result<()> {
    if items.is_empty() {
        writeln!(out, "none")?;
    }
    items.iter().try_for_each(|i| write(out, i))
}

/// 7. Stuck and slow waiters, growth and leaks.
fn stuck(out: &mut impl Write, r: &Report, paint: clikit::Paint) -> io::Result<()> {
    writeln!(out, "7. STUCK OR SLOW, AND LEAKS")?;
    waiters(out, r, paint)?;
    leaks(out, r)
}

/// Part 7's waiters: stuck, still waiting, the DLM locks waiting in the last dumps, and
/// the waits that ended.
fn waiters(out: &mut impl Write, r: &Report, paint: clikit::Paint) -> io::Result<()> {
    let s = &r.stuck_and_leaks;
    for w in &s.stuck {
        still_waiting(out, format!("{} ", paint.bad("STUCK")), w, "")?;
    }
    for w in &s.waiting {
        // Where the snapshots cannot tell, `seen_waiting` has said why.
        let judged = if w.waited_secs().is_some() {
            format!(", under --stuck-after {}", s.stuck_after_secs)
        } else {
            ": nothing tells how long it has waited (no DLM request of it in the last dumps)"
                .to_string()
        };
        still_waiting(out, paint.warn("waiting"), w, &judged)?;
    }
    for d in &s.dlm_waits {
        let asker = d
            .owner_nodeid
            .map_or("a node".to_string(), |id| r.node_named(id));
        writeln!(
            out,
            "DLM wait {} {} asked by {asker} pid {}: {} in the queue ({})",
            d.glock,
            match (d.rqmode, d.grmode) {
                (Some(rq), Some(gr)) => format!("{rq} (converting from {gr})"),
                (rq, _) => rq.map_or("?", |m| m.as_str()).to_string(),
            },
            d.pid,
            clikit::fmt::micros(d.age_us),
            d.cite
        )?;
    }
    for w in &s.progressed {
        writeln!(
            out,
            "{}   {} {} {} {} waited through {} snapshot(s) ({}..{}), then progressed",
            paint.warn("slow"),
            w.node,
            w.glock,
            named(w.pid, w.comm.as_deref(), w.pid_source),
            w.caller,
            w.snapshots,
            w.first_snapshot,
            w.last_snapshot
        )?;
    }
    Ok(())
}

/// Part 7's leaks: glock counts that only grow, and holders queued but not dequeued by the
/// end of the traces.
fn leaks(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let s = &r.stuck_and_leaks;
    for g in &s.growing {
        writeln!(
            out,
            "growing {} {} glocks: {:?}",
            g.node, g.gltype, g.counts
        )?;
    }
    writeln!(
        out,
        "traces: {} glocks had events, {} were freed (glock_put) during the trace",
        s.glocks_seen_in_traces, s.glocks_put_in_traces
    )?;
    if !s.iopen_held.is_empty() {
        let per_node: Vec<String> = s
            .iopen_held
            .iter()
            .map(|(n, c)| format!("{n} {c}"))
            .collect();
        writeln!(
            out,
            "iopen glocks still queued at trace end: {} (each cached inode keeps its iopen \
             glock queued from lookup to eviction: expected, not listed as leaks)",
            per_node.join(", ")
        )?;
    }
    let others = s.unbalanced.iter().filter(|u| !u.is_iopen());
    for u in others {
        writeln!(
            out,
            "queued, not dequeued at trace end: {} {} {} of {} (queued by {}){}",
            u.node,
            u.glock,
            u.balance,
            u.queued,
            u.queued_by.join(", "),
            in_last_snapshot(u)
        )?;
    }
    Ok(())
}

/// `; in n1's last snapshot: held by … (n1/glocks.6:12)` for each holder and waiter of an
/// unbalanced glock that its node's last snapshot shows, or nothing.
fn in_last_snapshot(u: &analyze::stuck::Unbalanced) -> String {
    let parties: Vec<String> = u.parties.cited().collect();
    if parties.is_empty() {
        return String::new();
    }
    format!("; in {}'s last snapshot: {}", u.node, parties.join(", "))
}

/// Section 8: the cluster clock, DLM latency by master, hand-offs and demote causes.
fn causality(out: &mut impl Write, c: &analyze::handoff::Causality) -> io::Result<()> {
    let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), nanos);
    let signed = |v: i64| {
        if v < 0 {
            format!("-{}", nanos(v.unsigned_abs()))
        } else {
            nanos(v as u64)
        }
    };
    writeln!(out)?;
    writeln!(out, "8. WHO MADE WHOM WAIT (dlm events, aligned clocks)")?;
    for a in &c.clock_alignment {
        writeln!(
            out,
            "clock {}: {}, ±{} to wall clock, ±{} to {} ({} markers, {}/{} messages{})",
            a.node,
            a.method.as_str(),
            opt(a.uncertainty_ns),
            opt(a.relative_uncertainty_ns),
            a.reference,
            a.markers.0 + a.markers.1,
            a.messages.0,
            a.messages.1,
            a.wall_clock_disagreement_ns
                .map(|d| format!("; its wall clock is {} off", signed(d)))
                .unwrap_or_default()
        )?;
        if let (Some([lo, hi]), Some(by)) = (a.ssh_wall_offset_s, &a.ssh_reference) {
            writeln!(
                out,
                "      ssh (cluster.json): its wall clock is {lo:+.3} s to {hi:+.3} s from {by}'s"
            )?;
        }
    }
    if !c.dlm_latency.is_empty() {
        table::text(out, &DLM_LATENCY, &c.dlm_latency)?;
    }
    if !c.handoff_summary.is_empty() {
        writeln!(out, "hand-offs, p50 of each hop (holder > requester):")?;
        table::text(out, &HANDOFFS, &c.handoff_summary)?;
    }
    for d in &c.demote_causes {
        writeln!(
            out,
            "demotes of {} on {}: {} caused by {} ({})",
            d.glock,
            d.node,
            d.count,
            d.caused_by_node.as_deref().unwrap_or("no matching request"),
            d.source
        )?;
    }
    Ok(())
}
