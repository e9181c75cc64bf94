//! The hand-offs as a Chrome / Perfetto trace (the JSON "Trace Event Format"), for
//! ui.perfetto.dev and chrome://tracing: one process per node, one track per glock, and
//! for each hand-off the requester's wait (with its DLM request inside), the holder's
//! demote (with its demote work inside) and two flow arrows: request → blocking AST, and
//! release → grant. Times are on the cluster clock, in µs from the first event shown;
//! cross-node arrows are only as exact as the alignment's uncertainty (in their args).

use std::collections::HashMap;
use std::io::{self, Write};

use glockparse::GlockId;
use serde_json::{json, Value};

use super::handoff::Matched;
use super::trace::NodeTrace;
use super::Report;

/// Writes the timeline of `report`'s hand-offs (`traces` as passed to the analysis).
pub fn write(report: &Report, traces: &[NodeTrace], out: &mut impl Write) -> io::Result<()> {
    let align = &report.causality.clock_alignment;
    let off = |i: usize| align.get(i).and_then(|a| a.offset_ns).unwrap_or(0);
    let at = |i: usize, ts: u64| ts as i64 + off(i);
    let start_of = |m: &Matched| {
        let r = &traces[m.requester].dlm.requests[m.request];
        at(m.requester, r.first_ns())
    };
    let t0 = report.matched.iter().map(start_of).min().unwrap_or(0);
    let spans = spans(report, traces, &at);
    let us = |t: i64| (t - t0) as f64 / 1000.0;
    let lanes = lanes(&spans);
    let mut events = process_names(traces);
    let mut tracks: HashMap<(usize, GlockId, usize), usize> = HashMap::new();
    let mut track = |events: &mut Vec<Value>, node: usize, g: GlockId, lane: usize| -> usize {
        let n = tracks.len() + 1;
        *tracks.entry((node, g, lane)).or_insert_with(|| {
            let more = if lane > 0 {
                format!(" #{}", lane + 1)
            } else {
                String::new()
            };
            events.push(
                json!({"ph": "M", "name": "thread_name", "pid": node + 1, "tid": n,
                "args": {"name": format!("glock {g} ({}){more}", g.glock_type().name())}}),
            );
            n
        })
    };
    for (h, (wait_lane, demote_lane)) in spans.iter().zip(lanes) {
        let (m, a, b) = (h.matched, h.matched.requester, h.matched.holder);
        let r = &traces[a].dlm.requests[m.request];
        let x = &traces[b].dlm.basts[m.bast];
        let (an, bn) = (&traces[a].node, &traces[b].node);
        let ta = track(&mut events, a, h.glock, wait_lane);
        let tb = track(&mut events, b, h.glock, demote_lane);
        let uncertainty = align[a].between(&align[b]);
        let (g, granted, release) = (h.glock, h.granted, h.release);
        events.push(
            json!({"ph": "X", "name": format!("wait {} (from {bn})", r.mode),
            "cat": "handoff", "pid": a + 1, "tid": ta, "ts": us(h.wait.1),
            "dur": (h.wait.2 - h.wait.1) as f64 / 1000.0,
            "args": {"glock": g.to_string(), "pid": r.pid, "holder": bn}}),
        );
        events.push(json!({"ph": "X", "name": format!("dlm request {}", r.mode),
            "cat": "dlm", "pid": a + 1, "tid": ta, "ts": us(at(a, r.start_ns)),
            "dur": (granted - r.start_ns) as f64 / 1000.0,
            "args": {"lkb_id": format!("{:x}", r.lkb_id)}}));
        // The holder's slice ends just after its release, so the arrow leaving it binds.
        events.push(
            json!({"ph": "X", "name": format!("demote for {an} ({})", x.mode),
            "cat": "handoff", "pid": b + 1, "tid": tb, "ts": us(h.demote.1),
            "dur": (h.demote.2 - h.demote.1) as f64 / 1000.0,
            "args": {"glock": g.to_string(), "requester": an,
                "holder_wait_ns": x.work_ns.map(|w| w - x.ts_ns)}}),
        );
        // The demote work, inside the demote.
        if let Some(w) = x.work_ns.filter(|&w| w >= x.ts_ns && w < release) {
            events.push(json!({"ph": "X", "name": "demote work", "cat": "handoff",
                "pid": b + 1, "tid": tb, "ts": us(at(b, w)),
                "dur": (release - w) as f64 / 1000.0}));
        }
        let args = json!({"uncertainty_ns": uncertainty});
        for (id, (from, ft, fts), (to, tt, tts), name) in [
            (
                2 * h.index,
                (a, ta, r.start_ns),
                (b, tb, x.ts_ns),
                "request → blocking AST",
            ),
            (
                2 * h.index + 1,
                (b, tb, release),
                (a, ta, granted),
                "release → grant",
            ),
        ] {
            events.push(json!({"ph": "s", "id": id, "name": name, "cat": "handoff",
                "pid": from + 1, "tid": ft, "ts": us(at(from, fts)), "args": args}));
            events.push(json!({"ph": "f", "bp": "e", "id": id, "name": name,
                "cat": "handoff", "pid": to + 1, "tid": tt, "ts": us(at(to, tts)),
                "args": args}));
        }
    }
    serde_json::to_writer(&mut *out, &document(events, t0, align))?;
    writeln!(out)
}

/// One hand-off's two outer slices on the cluster clock (ns): the requester's wait and
/// the holder's demote, each as (node, start, end).
struct Span<'a> {
    /// The hand-off.
    matched: &'a Matched,
    /// Its place in the report's list (the flow arrows' ids).
    index: usize,
    /// The glock.
    glock: GlockId,
    /// When the request was granted, on the requester's own clock.
    granted: u64,
    /// When the holder released, on its own clock.
    release: u64,
    /// The requester's wait: from its queueing (or request) to its promote (or grant,
    /// whichever is later, so that the DLM request lies inside).
    wait: (usize, i64, i64),
    /// The holder's demote: from the blocking AST to just after the release (1 ns later,
    /// so that the arrow leaving the release binds to it).
    demote: (usize, i64, i64),
}

/// The hand-offs that can be drawn (glock, grant and release known), in report order.
fn spans<'a>(
    report: &'a Report,
    traces: &[NodeTrace],
    at: &impl Fn(usize, u64) -> i64,
) -> Vec<Span<'a>> {
    let mut out = Vec::new();
    for (index, m) in report.matched.iter().enumerate() {
        let (a, b) = (m.requester, m.holder);
        let r = &traces[a].dlm.requests[m.request];
        let x = &traces[b].dlm.basts[m.bast];
        let (Some(glock), Some(granted), Some(release)) = (r.glock, r.granted_ns, x.release_ns)
        else {
            continue;
        };
        let end = r.promote_ns.unwrap_or(granted).max(granted);
        out.push(Span {
            matched: m,
            index,
            glock,
            granted,
            release,
            wait: (a, at(a, r.first_ns()), at(a, end)),
            demote: (b, at(b, x.ts_ns), at(b, release.max(x.ts_ns)) + 1),
        });
    }
    out
}

/// The lane of each hand-off's wait and demote on its (node, glock) track: the first
/// whose slices have all ended by its start, so that slices on one track nest or follow
/// each other (Perfetto's JSON importer drops or misdraws slices that overlap in part:
/// two waits of one node for the same glock, or a node waiting while it demotes).
fn lanes(spans: &[Span]) -> Vec<(usize, usize)> {
    /// An outer slice: its hand-off, whether it is the wait, its (node, start, end).
    struct Outer {
        handoff: usize,
        wait: bool,
        at: (usize, i64, i64),
        glock: GlockId,
    }
    let mut outer: Vec<Outer> = Vec::new();
    for (i, h) in spans.iter().enumerate() {
        outer.push(Outer {
            handoff: i,
            wait: true,
            at: h.wait,
            glock: h.glock,
        });
        outer.push(Outer {
            handoff: i,
            wait: false,
            at: h.demote,
            glock: h.glock,
        });
    }
    // By start, the longer first where two start together (so that it is the outer).
    outer.sort_by_key(|o| (o.at.1, std::cmp::Reverse(o.at.2), o.handoff, !o.wait));
    let mut ends: HashMap<(usize, GlockId), Vec<i64>> = HashMap::new();
    let mut out = vec![(0, 0); spans.len()];
    for o in outer {
        let (node, start, end) = o.at;
        let track = ends.entry((node, o.glock)).or_default();
        let lane = match track.iter().position(|&e| e <= start) {
            Some(l) => l,
            None => {
                track.push(i64::MIN);
                track.len() - 1
            }
        };
        track[lane] = end;
        if o.wait {
            out[o.handoff].0 = lane;
        } else {
            out[o.handoff].1 = lane;
        }
    }
    out
}

/// A process per node, named and in the nodes' order.
fn process_names(traces: &[NodeTrace]) -> Vec<Value> {
    let mut events = Vec::new();
    for (i, t) in traces.iter().enumerate() {
        events.push(json!({"ph": "M", "name": "process_name", "pid": i + 1,
            "args": {"name": format!("node {}", t.node)}}));
        events.push(
            json!({"ph": "M", "name": "process_sort_index", "pid": i + 1,
            "args": {"sort_index": i}}),
        );
    }
    events
}

/// The trace document: the events, and where its time zero and clocks come from.
fn document(events: Vec<Value>, t0: i64, align: &[crate::clock::Alignment]) -> Value {
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": "glk analyze --timeline",
            "time_zero_ns": t0,
            "clock_alignment": align,
        },
    })
}
