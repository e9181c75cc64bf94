//! `glk report`: one self-contained HTML file (no network: inline CSS, inline SVG charts,
//! a few lines of script for sortable tables) with the findings first, then the charts and
//! the tables of the analysis.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use analysis::findings::{Finding, Thresholds};
use analysis::snapshots::{Role, Snapshots};
use analysis::{self as analyze, Options, Report};
use bundle::Captures;
use clikit::args::ReportArgs;

use analysis::clock::Alignment;

use crate::analyze::{load_for_analysis, Loaded, CONTENDED, DLM_LATENCY, HANDOFFS};
use crate::svg::{self, esc};
use crate::table::{self, Cell, Column};

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\
.finding{border-left:6px solid #888;padding:6px 12px;margin:10px 0;background:#fafafa}\
.critical{border-color:#b00020}.error{border-color:#d55e00}.warning{border-color:#e69f00}.info{border-color:#0072b2}\
.sev{font-weight:bold;text-transform:uppercase;margin-right:8px}.code{font-family:monospace;margin-right:8px}\
.remedy{margin-top:4px}.who{color:#555}details{margin-top:4px}\
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}\
th{background:#eee;cursor:pointer;user-select:none}td.n{text-align:right;font-variant-numeric:tabular-nums}\
svg.chart{display:block;margin:12px 0;border:1px solid #eee}.note{color:#666;font-size:12px}";

const SCRIPT: &str = "document.querySelectorAll('table.sortable th').forEach(function(th,i){\
th.addEventListener('click',function(){var t=th.closest('table'),b=t.tBodies[0],rows=Array.from(b.rows),\
asc=th.dataset.dir!=='asc';t.querySelectorAll('th').forEach(function(h){delete h.dataset.dir});\
th.dataset.dir=asc?'asc':'desc';rows.sort(function(x,y){var a=x.cells[i].dataset.v||x.cells[i].textContent,\
c=y.cells[i].dataset.v||y.cells[i].textContent,na=parseFloat(a),nc=parseFloat(c),\
r=(!isNaN(na)&&!isNaN(nc))?na-nc:a.localeCompare(c);return asc?r:-r});\
rows.forEach(function(r){b.appendChild(r)})})});\
var m=location.hash.match(/^#sort=([\\w-]+):(\\d+)(:desc)?$/);if(m){var th=document.querySelectorAll('#'+m[1]+' th')[+m[2]];\
if(th){th.click();if(m[3])th.click();}}document.body.classList.add('sortable-ready');";

/// The clock alignment of each node.
const CLOCKS: [Column<Alignment>; 6] = [
    Column::left("NODE", "node", 0, |a: &Alignment| Cell::text(&a.node)),
    Column::left("METHOD", "method", 0, |a: &Alignment| {
        Cell::text(a.method.as_str())
    }),
    Column::left("REFERENCE", "reference", 0, |a: &Alignment| {
        Cell::text(&a.reference)
    }),
    Column::right("±WALL", "± to wall clock", 0, |a: &Alignment| {
        a.uncertainty_ns.map_or_else(|| Cell::text("-"), Cell::dur)
    }),
    Column::right("±REF", "± to reference", 0, |a: &Alignment| {
        a.relative_uncertainty_ns
            .map_or_else(|| Cell::text("-"), Cell::dur)
    }),
    Column::right("MESSAGES", "messages", 0, |a: &Alignment| {
        Cell::num(a.messages.0 as u64 + a.messages.1 as u64)
    }),
];

fn finding_html(out: &mut String, f: &Finding) {
    let sev = f.severity.as_str();
    let _ = write!(
        out,
        "<div class=\"finding {sev}\"><span class=\"sev\">{sev}</span><span class=\"code\">{}</span>{}",
        esc(f.code.as_str()),
        esc(&f.title)
    );
    if let Some(who) = f.who() {
        let _ = write!(out, "<div class=\"who\">{}</div>", esc(&who));
    }
    let _ = write!(
        out,
        "<details><summary>evidence ({})</summary><ul>",
        f.evidence.len()
    );
    for e in &f.evidence {
        let _ = write!(
            out,
            "<li><code>{}</code> {}</li>",
            esc(&e.at()),
            esc(&e.shows)
        );
    }
    let _ = write!(
        out,
        "</ul></details><div class=\"remedy\"><b>What to do:</b> {}</div></div>",
        esc(&f.remedy)
    );
}

/// Remote demotes over time per glock and node, on the cluster clock when the nodes are
/// aligned (each node's own clock otherwise, said in the title).
fn storm_chart(r: &Report, traces: &[analyze::trace::NodeTrace]) -> Option<String> {
    let glocks: Vec<glockparse::GlockId> = r
        .contended
        .iter()
        .filter(|c| c.remote_demotes > 0)
        .take(4)
        .filter_map(|c| c.glock.parse().ok())
        .collect();
    let offset = |node: &str| {
        r.causality
            .clock_alignment
            .iter()
            .find(|a| a.node == node)
            .and_then(|a| a.offset_ns)
    };
    let aligned = traces.iter().all(|t| offset(&t.node).is_some());
    let mut raw: Vec<(String, Vec<f64>)> = Vec::new();
    for g in &glocks {
        for t in traces {
            let Some(ts) = t.demotes.remote_times().get(g) else {
                continue;
            };
            let o = if aligned {
                offset(&t.node).unwrap_or(0)
            } else {
                0
            };
            raw.push((
                format!("{g} on {}", t.node),
                ts.iter().map(|x| (*x as i64 + o) as f64 / 1e9).collect(),
            ));
        }
    }
    let all = || raw.iter().flat_map(|(_, v)| v.iter().copied());
    let t0 = all().fold(f64::INFINITY, f64::min);
    let t1 = all().fold(f64::NEG_INFINITY, f64::max);
    if !t0.is_finite() {
        return None;
    }
    let bucket = ((t1 - t0) / 60.0).max(0.1);
    let n = ((t1 - t0) / bucket).floor() as usize + 1;
    let series: Vec<(String, Vec<(f64, f64)>)> = raw
        .into_iter()
        .take(svg::COLOURS.len())
        .map(|(name, v)| {
            let mut counts = vec![0.0; n];
            for x in v {
                counts[(((x - t0) / bucket) as usize).min(n - 1)] += 1.0;
            }
            let pts = counts
                .into_iter()
                .enumerate()
                .map(|(i, c)| (i as f64 * bucket, c))
                .collect();
            (name, pts)
        })
        .collect();
    svg::lines(
        "chart-storms",
        &format!(
            "Remote demote requests over time ({}; per {:.1} s)",
            if aligned {
                "cluster clock"
            } else {
                "each node's own trace clock"
            },
            bucket
        ),
        "seconds from the first",
        "remote demotes",
        &series,
    )
}

fn sum_counts(v: &mut [u64], add: &[u64]) {
    for (a, b) in v.iter_mut().zip(add) {
        *a += b;
    }
}

/// DLM round trips: gfs2's tdiff per type, blocking and not; and the DLM's request →
/// grant by master locality.
fn dlm_charts(r: &Report, folded: &analyze::trace::Folded) -> Vec<String> {
    let mut out = Vec::new();
    let mut types: Vec<_> = folded.lock_times.per_type.iter().collect();
    types.sort_by_key(|(_, h)| std::cmp::Reverse(h.all.len()));
    let mut series: Vec<(String, Vec<u64>)> = Vec::new();
    for (ty, h) in types.into_iter().take(2) {
        let name = ty.name();
        series.push((
            format!("{name} blocking"),
            h.blocking.log2_counts().to_vec(),
        ));
        series.push((
            format!("{name} non-blocking"),
            h.nonblocking.log2_counts().to_vec(),
        ));
    }
    let refs: Vec<(String, &[u64])> = series
        .iter()
        .map(|(n, c)| (n.clone(), c.as_slice()))
        .collect();
    out.extend(svg::log2_histogram(
        "chart-tdiff",
        "DLM round trips (gfs2_glock_lock_time tdiff), blocking vs not",
        &refs,
    ));
    let mut by: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for l in r.causality.dlm_latency.iter().filter(|l| {
        l.measure == "request_to_grant" && l.master != "unknown" && l.conversion != "down"
    }) {
        let name = format!(
            "{} master{}",
            l.master,
            if l.blocked { ", blocked" } else { "" }
        );
        sum_counts(
            by.entry(name).or_insert_with(|| vec![0; 64]),
            &l.dist.log2_counts,
        );
    }
    let refs: Vec<(String, &[u64])> = by.iter().map(|(n, c)| (n.clone(), c.as_slice())).collect();
    out.extend(svg::log2_histogram(
        "chart-master",
        "DLM request -> grant (new locks and up-conversions), by master locality",
        &refs,
    ));
    out
}

fn hold_wait_chart(folded: &analyze::trace::Folded) -> Option<String> {
    let (mut wait, mut hold) = (vec![0u64; 64], vec![0u64; 64]);
    for t in folded.hold_wait.times.values() {
        sum_counts(&mut wait, &t.wait.samples.log2_counts());
        sum_counts(&mut hold, &t.hold.samples.log2_counts());
    }
    svg::log2_histogram(
        "chart-holdwait",
        "Hold and wait times (traces, every glock)",
        &[
            ("wait (queue -> promote)".into(), &wait[..]),
            ("hold (promote -> dequeue)".into(), &hold[..]),
        ],
    )
}

fn waiters_chart(f: &Snapshots, caps: &Captures) -> Option<String> {
    let mut per: BTreeMap<(String, u32), u64> = BTreeMap::new();
    for h in &f.holders {
        let e = per.entry((h.at.node.clone(), h.at.snapshot)).or_default();
        if h.role == Role::Waiter {
            *e += 1;
        }
    }
    let time = |node: &str, s: u32| {
        caps.nodes
            .iter()
            .find(|n| n.node == node)?
            .snapshots
            .iter()
            .find(|x| x.index == s)?
            .time_unix
    };
    let timed = per.keys().all(|(n, s)| time(n, *s).is_some());
    let t0 = per
        .keys()
        .filter_map(|(n, s)| time(n, *s))
        .fold(f64::INFINITY, f64::min);
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for ((n, s), w) in &per {
        let x = if timed {
            time(n, *s).unwrap_or(t0) - t0
        } else {
            f64::from(*s)
        };
        series.entry(n.clone()).or_default().push((x, *w as f64));
    }
    let series: Vec<(String, Vec<(f64, f64)>)> = series.into_iter().collect();
    svg::lines(
        "chart-waiters",
        "Waiters per snapshot (glocks files), per node",
        if timed {
            "seconds from the first snapshot"
        } else {
            "snapshot"
        },
        "waiting holders",
        &series,
    )
}

fn wait_for_graph(r: &Report) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    let mut id = |n: String| match names.iter().position(|x| *x == n) {
        Some(i) => i,
        None => {
            names.push(n);
            names.len() - 1
        }
    };
    let who = |node: &str, pid: Option<i64>, comm: &Option<String>| match pid {
        Some(p) => format!(
            "{node} pid {p}{}",
            comm.as_ref().map(|c| format!(" {c}")).unwrap_or_default()
        ),
        None => format!("{node} (unknown pid)"),
    };
    // The waits of a cycle's steps, and who holds each step's lock.
    let step_of = |node: &str, pid: Option<i64>, glock: &str| {
        r.cycles.iter().find_map(|c| {
            let k = c
                .steps
                .iter()
                .position(|s| s.node == node && s.pid == pid && s.waits_for == glock)?;
            Some((c, k))
        })
    };
    let mut edges = Vec::new();
    let mut links = Vec::new();
    for x in r.cross_node.iter().take(40) {
        let a = id(who(&x.waiter_node, x.waiter_pid, &x.waiter_comm));
        let b = id(who(&x.holder_node, x.holder_pid, &x.holder_comm));
        let step = step_of(&x.waiter_node, x.waiter_pid, &x.glock);
        edges.push((a, b, x.glock.clone(), step.is_some()));
        // The holder is the next step's waiter, or its ancestor (the cycle's owner).
        if let Some((c, k)) = step {
            let next = &c.steps[(k + 1) % c.steps.len()];
            links.push((b, who(&next.node, next.pid, &next.comm)));
        }
    }
    for (b, next) in links {
        let n = id(next);
        if n != b {
            edges.push((b, n, "its descendant".to_string(), true));
        }
    }
    svg::graph(
        "chart-waitfor",
        "Wait-for graph (waiter -> holder, by glock; red: a deadlock cycle, through the holders' descendants)",
        &names,
        &edges,
    )
}

/// What a report is made of.
pub struct Page<'a> {
    pub report: &'a Report,
    pub findings: &'a [Finding],
    pub snapshots: &'a Snapshots,
    pub caps: &'a Captures,
    pub traces: &'a [analyze::trace::NodeTrace],
    pub folded: &'a analyze::trace::Folded,
    /// The inputs as named on the command line.
    pub inputs: &'a str,
    /// Rows per table (0: all).
    pub limit: usize,
}

/// Builds the report's HTML.
pub fn html(p: &Page<'_>) -> io::Result<String> {
    let (r, fs, f, caps, traces, folded, inputs, limit) = (
        p.report,
        p.findings,
        p.snapshots,
        p.caps,
        p.traces,
        p.folded,
        p.inputs,
        p.limit,
    );
    let limit = if limit == 0 { usize::MAX } else { limit };
    let mut out = String::new();
    let nodes: Vec<&str> = r.nodes.iter().map(|n| n.node.as_str()).collect();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>glk report: {}</title><style>{STYLE}</style></head><body><h1>glk report</h1><p class=\"note\">{} · nodes {} · made {} UTC by glk {}</p>",
        esc(&nodes.join(", ")),
        esc(inputs),
        esc(&nodes.join(", ")),
        esc(&clikit::fmt::utc(std::time::SystemTime::now())),
        env!("CARGO_PKG_VERSION")
    );
    for l in r.input.lacks.iter().chain(&r.input.passed_over) {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(l));
    }
    let _ = write!(out, "<h2 id=\"findings\">Findings ({})</h2>", fs.len());
    if fs.is_empty() {
        out.push_str("<p>Nothing wrong found.</p>");
    }
    for x in fs {
        finding_html(&mut out, x);
    }
    out.push_str("<h2 id=\"charts\">Charts</h2>");
    let mut charts: Vec<String> = Vec::new();
    charts.extend(storm_chart(r, traces));
    charts.extend(dlm_charts(r, folded));
    charts.extend(hold_wait_chart(folded));
    charts.extend(waiters_chart(f, caps));
    charts.extend(wait_for_graph(r));
    if charts.is_empty() {
        out.push_str("<p>No trace or snapshot data to chart.</p>");
    }
    for c in &charts {
        out.push_str(c);
    }
    out.push_str("<h2 id=\"contended\">Contended glocks</h2>");
    table::html(
        &mut out,
        "table-contended",
        &CONTENDED,
        r.contended.iter().take(limit),
    );
    if !r.causality.handoff_summary.is_empty() {
        out.push_str("<h2 id=\"handoffs\">Hand-offs (p50 of each hop)</h2>");
        let rows = r.causality.handoff_summary.iter().take(limit);
        table::html(&mut out, "table-handoffs", &HANDOFFS, rows);
    }
    if !r.causality.dlm_latency.is_empty() {
        out.push_str("<h2 id=\"dlm\">DLM latency by master</h2>");
        table::html(
            &mut out,
            "table-dlm",
            &DLM_LATENCY,
            &r.causality.dlm_latency,
        );
    }
    if !r.causality.clock_alignment.is_empty() {
        out.push_str("<h2 id=\"clocks\">Clock alignment</h2>");
        table::html(
            &mut out,
            "table-clocks",
            &CLOCKS,
            &r.causality.clock_alignment,
        );
    }
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
    Ok(out)
}

pub fn run(a: &ReportArgs) -> io::Result<()> {
    let mut loaded = load_for_analysis(&a.captures, a.filesystem.only())?;
    // The whole analysis, as glk doctor sees it (the same findings); tables are cut to
    // --limit rows when written.
    let o = Options {
        stuck_after: a.stuck.stuck_after,
        ..Options::default()
    };
    let (report, fs) = loaded.diagnose(&o, &Thresholds::default());
    let Loaded {
        caps,
        snapshots,
        traces,
        folded,
        diagnostics: diag,
    } = &loaded;
    let inputs: Vec<String> = a.captures.iter().map(|p| p.display().to_string()).collect();
    let page = html(&Page {
        report: &report,
        findings: &fs,
        snapshots,
        caps,
        traces,
        folded,
        inputs: &inputs.join(" "),
        limit: a.limit,
    })?;
    let mut file = bundle::atomic::AtomicFile::create(&a.output)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", a.output.display())))?;
    file.file().write_all(page.as_bytes())?;
    file.commit()?;
    eprintln!(
        "glk: report with {} findings written to {}",
        fs.len(),
        a.output.display()
    );
    clikit::diag::report(diag);
    Ok(())
}
