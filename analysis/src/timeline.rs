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
        at(
            m.requester,
            r.queued_ns.unwrap_or(r.start_ns).min(r.start_ns),
        )
    };
    let t0 = report.matched.iter().map(start_of).min().unwrap_or(0);
    let us = |t: i64| (t - t0) as f64 / 1000.0;
    let mut events = process_names(traces);
    let mut tracks: HashMap<(usize, GlockId), usize> = HashMap::new();
    let mut track = |events: &mut Vec<Value>, node: usize, g: GlockId| -> usize {
        let n = tracks.len() + 1;
        *tracks.entry((node, g)).or_insert_with(|| {
            events.push(
                json!({"ph": "M", "name": "thread_name", "pid": node + 1, "tid": n,
                "args": {"name": format!("glock {g} ({})", g.glock_type().name())}}),
            );
            n
        })
    };
    for (k, m) in report.matched.iter().enumerate() {
        let (a, b) = (m.requester, m.holder);
        let r = &traces[a].dlm.requests[m.request];
        let x = &traces[b].dlm.basts[m.bast];
        let (Some(g), Some(granted), Some(release)) = (r.glock, r.granted_ns, x.release_ns) else {
            continue;
        };
        let (an, bn) = (&traces[a].node, &traces[b].node);
        let ta = track(&mut events, a, g);
        let tb = track(&mut events, b, g);
        let uncertainty = align[a].between(&align[b]);
        let first = r.queued_ns.unwrap_or(r.start_ns).min(r.start_ns);
        let end = r.promote_ns.unwrap_or(granted);
        events.push(
            json!({"ph": "X", "name": format!("wait {} (from {bn})", r.mode),
            "cat": "handoff", "pid": a + 1, "tid": ta, "ts": us(at(a, first)),
            "dur": (end - first) as f64 / 1000.0,
            "args": {"glock": g.to_string(), "pid": r.pid, "holder": bn}}),
        );
        events.push(json!({"ph": "X", "name": format!("dlm request {}", r.mode),
            "cat": "dlm", "pid": a + 1, "tid": ta, "ts": us(at(a, r.start_ns)),
            "dur": (granted - r.start_ns) as f64 / 1000.0,
            "args": {"lkb_id": format!("{:x}", r.lkb_id)}}));
        // The holder's slice ends just after its release, so the arrow leaving it binds.
        events.push(
            json!({"ph": "X", "name": format!("demote for {an} ({})", x.mode),
            "cat": "handoff", "pid": b + 1, "tid": tb, "ts": us(at(b, x.ts_ns)),
            "dur": (release - x.ts_ns) as f64 / 1000.0 + 0.001,
            "args": {"glock": g.to_string(), "requester": an,
                "holder_wait_ns": x.work_ns.map(|w| w - x.ts_ns)}}),
        );
        if let Some(w) = x.work_ns.filter(|&w| w < release) {
            events.push(json!({"ph": "X", "name": "demote work", "cat": "handoff",
                "pid": b + 1, "tid": tb, "ts": us(at(b, w)),
                "dur": (release - w) as f64 / 1000.0}));
        }
        let args = json!({"uncertainty_ns": uncertainty});
        for (id, (from, ft, fts), (to, tt, tts), name) in [
            (
                2 * k,
                (a, ta, r.start_ns),
                (b, tb, x.ts_ns),
                "request → blocking AST",
            ),
            (
                2 * k + 1,
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
