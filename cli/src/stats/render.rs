//! Text and JSON output of `glk stats`. JSON keys are documented in the README.

use std::io::{self, Write};

use gfs2stats::lock_time::{distribution, Distribution, FsKey, Hists};
use gfs2stats::metrics;
use gfs2stats::{GlStat, Stat};
use glockparse::GlockId;
use serde_json::{json, Value};

use super::{ranked, Report, StatsArgs};
use crate::inputs::label;
use clikit::fmt::nanos;

fn ns(v: i64) -> String {
    if v < 0 {
        format!("{v}ns")
    } else {
        nanos(v as u64)
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.0}%", v * 100.0))
}

/// One row of a distribution table; `fs` is the FS column's cell, padded to its width,
/// where the table has one.
fn dist_row(
    out: &mut impl Write,
    name: &str,
    fs: Option<&str>,
    kind: &str,
    d: Distribution,
) -> io::Result<()> {
    if d.count == 0 {
        return Ok(());
    }
    let fs = fs.map_or_else(String::new, |f| format!("{f} "));
    writeln!(
        out,
        "{name:<18} {fs}{kind:<13} {:>7} {:>9} {:>9} {:>9} {:>9}",
        d.count,
        nanos(d.p50_ns),
        nanos(d.p90_ns),
        nanos(d.p99_ns),
        nanos(d.max_ns)
    )
}

/// The all, blocking and non-blocking rows of one glock or type; `fs` as [`dist_row`]'s.
fn hists_rows(out: &mut impl Write, name: &str, fs: Option<&str>, h: &Hists) -> io::Result<()> {
    let blank = fs.map(|f| " ".repeat(f.len()));
    dist_row(out, name, fs, "all", distribution(&h.all))?;
    dist_row(
        out,
        "",
        blank.as_deref(),
        "blocking",
        distribution(&h.blocking),
    )?;
    dist_row(
        out,
        "",
        blank.as_deref(),
        "non-blocking",
        distribution(&h.nonblocking),
    )
}

/// The header of a distribution table, with an FS column `fs_width` wide where the traces
/// hold several filesystems.
fn dist_header(out: &mut impl Write, first: &str, fs_width: Option<usize>) -> io::Result<()> {
    let fs = fs_width.map_or_else(String::new, |w| format!("{:<w$} ", "FS"));
    writeln!(
        out,
        "{first:<18} {fs}{:<13} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "REQUESTS", "COUNT", "P50", "P90", "P99", "MAX"
    )
}

pub fn text(out: &mut impl Write, r: &Report, args: &StatsArgs) -> io::Result<()> {
    glstats_text(out, r, args)?;
    sbstats_text(out, r, args)?;
    delta_text(out, r, args)?;
    trace_text(out, r, args)
}

/// The glstats files: the glocks with DLM requests of their own, ranked.
fn glstats_text(out: &mut impl Write, r: &Report, args: &StatsArgs) -> io::Result<()> {
    if !r.glstats.is_empty() {
        let total: usize = r.glstats.iter().map(|f| f.stats.len()).sum();
        let own: usize = r
            .glstats
            .iter()
            .flat_map(|f| &f.stats)
            .filter(|s| s.stats.dcount > 0)
            .count();
        let files: Vec<String> = r.glstats.iter().map(|f| label(&f.path)).collect();
        writeln!(out, "glk stats  {}", files.join(" "))?;
        writeln!(out, "{total} glocks, {own} with DLM requests of their own")?;
        writeln!(out)?;
        let (rows, candidates) = ranked(r, args.sort, args.limit);
        let key = clap::ValueEnum::to_possible_value(&args.sort)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        writeln!(
            out,
            "GLOCKS by {key} (times: smoothed mean ±mean deviation)"
        )?;
        writeln!(
            out,
            "{:<16} {:<7} {:>19} {:>19} {:>19} {:>8} {:>7} {:>7} {:>5} {:>5}{}",
            "GLOCK",
            "TYPE",
            "RTT",
            "RTT-BLOCKING",
            "INTER-REQUEST",
            "REQ/S",
            "DCNT",
            "QCNT",
            "DLM",
            "BUSY",
            if r.glstats.len() > 1 { "  SOURCE" } else { "" }
        )?;
        for (i, s) in &rows {
            let d = metrics::derive(s);
            writeln!(
                out,
                "{:<16} {:<7} {:>19} {:>19} {:>19} {:>8} {:>7} {:>7} {:>5} {:>5}{}",
                s.glock.to_string(),
                s.glock.glock_type().name(),
                format!("{} ±{}", ns(s.stats.srtt), ns(s.stats.srttvar)),
                format!("{} ±{}", ns(s.stats.srttb), ns(s.stats.srttvarb)),
                format!("{} ±{}", ns(s.stats.sirt), ns(s.stats.sirtvar)),
                d.request_rate.map_or("-".into(), |v| format!("{v:.2}")),
                s.stats.dcount,
                s.stats.qcount,
                pct(d.dlm_share),
                pct(d.dlm_busy),
                if r.glstats.len() > 1 {
                    format!("  {}", label(&r.glstats[*i].path))
                } else {
                    String::new()
                }
            )?;
        }
        if rows.is_empty() {
            writeln!(
                out,
                "(no glock has made a DLM request of its own: lock_nolock, or nothing happened)"
            )?;
        } else if candidates > rows.len() {
            writeln!(
                out,
                "({} more; --limit 0 shows all)",
                candidates - rows.len()
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Each sbstats file: per glock type, counters summed and means weighted over CPUs.
fn sbstats_text(out: &mut impl Write, r: &Report, args: &StatsArgs) -> io::Result<()> {
    for f in &r.sbstats {
        writeln!(
            out,
            "PER TYPE  {} (CPUs: {}; counters summed, means weighted by each CPU's DLM requests)",
            label(&f.path),
            f.stats.cpus.len()
        )?;
        writeln!(
            out,
            "{:<9} {:>8} {:>8} {:>19} {:>19} {:>19}",
            "TYPE", "DLM", "QUEUE", "RTT", "RTT-BLOCKING", "INTER-REQUEST"
        )?;
        for (t, ts) in &f.stats.types {
            let c = ts.combined();
            if c.dlm == 0 && c.queue == 0 {
                continue;
            }
            writeln!(
                out,
                "{:<9} {:>8} {:>8} {:>19} {:>19} {:>19}",
                t.name(),
                c.dlm,
                c.queue,
                format!("{} ±{}", ns(c.srtt as i64), ns(c.srttvar as i64)),
                format!("{} ±{}", ns(c.srttb as i64), ns(c.srttvarb as i64)),
                format!("{} ±{}", ns(c.sirt as i64), ns(c.sirtvar as i64)),
            )?;
            if args.per_cpu {
                for (i, cpu) in f.stats.cpus.iter().enumerate() {
                    let v = |s: Stat| ts.get(s).get(i).copied().unwrap_or(0);
                    writeln!(
                        out,
                        "  cpu {cpu:<3} {:>8} {:>8} {:>19} {:>19} {:>19}",
                        v(Stat::Dlm),
                        v(Stat::Queue),
                        format!("{} ±{}", ns(v(Stat::Srtt)), ns(v(Stat::Srttvar))),
                        format!("{} ±{}", ns(v(Stat::Srttb)), ns(v(Stat::Srttvarb))),
                        format!("{} ±{}", ns(v(Stat::Sirt)), ns(v(Stat::Sirtvar))),
                    )?;
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The increases between two glstats snapshots.
fn delta_text(out: &mut impl Write, r: &Report, args: &StatsArgs) -> io::Result<()> {
    if let Some((secs, deltas)) = &r.delta {
        writeln!(out, "INCREASES over {:.1}s", secs)?;
        writeln!(
            out,
            "{:<16} {:<7} {:>8} {:>8} {:>10} {:>10}",
            "GLOCK", "TYPE", "+DCNT", "+QCNT", "DCNT/S", "QCNT/S"
        )?;
        for d in deltas
            .iter()
            .filter(|d| d.dcount > 0 || d.qcount > 0)
            .take(shown(args.limit))
        {
            writeln!(
                out,
                "{:<16} {:<7} {:>8} {:>8} {:>10} {:>10}{}",
                d.glock.to_string(),
                d.glock.glock_type().name(),
                d.dcount,
                d.qcount,
                if d.dcount_per_s.is_finite() {
                    format!("{:.2}", d.dcount_per_s)
                } else {
                    "-".into()
                },
                if d.qcount_per_s.is_finite() {
                    format!("{:.2}", d.qcount_per_s)
                } else {
                    "-".into()
                },
                if d.new { "  new" } else { "" }
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// DLM round trips from the traces' `gfs2_glock_lock_time` events; where they hold several
/// filesystems, each row names its filesystem (FS: the lock table where the trace's
/// capture names it, else the device).
fn trace_text(out: &mut impl Write, r: &Report, args: &StatsArgs) -> io::Result<()> {
    let Some(t) = &r.trace else {
        return Ok(());
    };
    let names: Vec<String> = t.filesystems.keys().map(FsKey::to_string).collect();
    let fs_width =
        (names.len() > 1).then(|| names.iter().map(String::len).max().unwrap_or(0).max(9));
    let cell = |f: &FsKey| fs_width.map(|w| format!("{:<w$}", f.to_string()));
    writeln!(out, "DLM ROUND TRIPS from gfs2_glock_lock_time (tdiff)")?;
    if fs_width.is_some() {
        writeln!(
            out,
            "{} filesystems in the traces: {}; each row is of its FS (glock numbers repeat \
             between filesystems; FS is the lock table where the trace's capture names the \
             device, else the device)",
            names.len(),
            names.join(", ")
        )?;
    }
    dist_header(out, "TYPE", fs_width)?;
    for (f, lt) in &t.filesystems {
        for (ty, h) in &lt.per_type {
            hists_rows(out, &ty.name(), cell(f).as_deref(), h)?;
        }
    }
    writeln!(out)?;
    dist_header(out, "GLOCK (by p99)", fs_width)?;
    for (f, g, h) in t.slowest(shown(args.limit)) {
        hists_rows(out, &g.to_string(), cell(f).as_deref(), h)?;
    }
    writeln!(
        out,
        "(classified by stats pair: {}, by the next state change's flags: {}, unclassified: {}, negative tdiff skipped: {})",
        t.total(|l| l.by_stats),
        t.total(|l| l.by_flags),
        t.total(|l| l.unclassified),
        t.total(|l| l.negative)
    )
}

/// Entries shown for `--limit` (0: all).
fn shown(limit: usize) -> usize {
    if limit == 0 {
        usize::MAX
    } else {
        limit
    }
}

fn jhists(h: &Hists) -> Value {
    json!({
        "all": distribution(&h.all),
        "blocking": distribution(&h.blocking),
        "nonblocking": distribution(&h.nonblocking),
    })
}

fn jglock(s: &GlStat, source: &std::path::Path) -> Value {
    let d = metrics::derive(s);
    json!({
        "glock": s.glock.to_string(),
        "type": s.glock.glock_type().name(),
        "source": source.display().to_string(),
        "srtt_ns": s.stats.srtt, "srttvar_ns": s.stats.srttvar,
        "srttb_ns": s.stats.srttb, "srttvarb_ns": s.stats.srttvarb,
        "sirt_ns": s.stats.sirt, "sirtvar_ns": s.stats.sirtvar,
        "dcount": s.stats.dcount, "qcount": s.stats.qcount,
        "own_samples": d.own_samples,
        "request_rate_per_s": d.request_rate,
        "dlm_share": d.dlm_share,
        "dlm_busy": d.dlm_busy,
    })
}

fn jtrace_glock(fs: &FsKey, g: GlockId, h: &Hists) -> Value {
    let mut v = jhists(h);
    let a = distribution(&h.all);
    let o = v.as_object_mut().expect("object");
    o.insert("glock".into(), json!(g.to_string()));
    o.insert("type".into(), json!(g.glock_type().name()));
    o.insert("fs".into(), json!(fs.to_string()));
    // The headline figures at the top level too.
    o.insert("count".into(), json!(a.count));
    o.insert("p50_ns".into(), json!(a.p50_ns));
    o.insert("p99_ns".into(), json!(a.p99_ns));
    o.insert("max_ns".into(), json!(a.max_ns));
    v
}

pub fn json(out: &mut impl Write, r: &Report, args: &StatsArgs) -> io::Result<()> {
    let (rows, _) = ranked(r, args.sort, args.limit);
    let glocks: Vec<Value> = rows
        .iter()
        .map(|(i, s)| jglock(s, &r.glstats[*i].path))
        .collect();
    let types: Vec<Value> =
        r.sbstats
            .iter()
            .flat_map(|f| {
                f.stats.types.iter().map(move |(t, ts)| {
                let c = ts.combined();
                let per_cpu: serde_json::Map<String, Value> =
                    Stat::ALL.iter().map(|s| (s.name().to_string(), json!(ts.get(*s)))).collect();
                json!({
                    "type": t.name(), "source": f.path.display().to_string(), "cpus": f.stats.cpus,
                    "dlm": c.dlm, "queue": c.queue,
                    "srtt_ns": c.srtt, "srttvar_ns": c.srttvar, "srttb_ns": c.srttb,
                    "srttvarb_ns": c.srttvarb, "sirt_ns": c.sirt, "sirtvar_ns": c.sirtvar,
                    "per_cpu": per_cpu,
                })
            })
            })
            .collect();
    let delta = r.delta.as_ref().map(|(secs, d)| {
        json!({
            "seconds": secs,
            "glocks": d.iter().filter(|d| d.dcount > 0 || d.qcount > 0).map(|d| json!({
                "glock": d.glock.to_string(), "type": d.glock.glock_type().name(),
                "dcount": d.dcount, "qcount": d.qcount,
                "dcount_per_s": d.dcount_per_s.is_finite().then_some(d.dcount_per_s),
                "qcount_per_s": d.qcount_per_s.is_finite().then_some(d.qcount_per_s),
                "new": d.new,
            })).collect::<Vec<_>>(),
        })
    });
    let trace = r.trace.as_ref().map(|t| {
        json!({
            "filesystems": t.filesystems.keys().map(FsKey::to_string).collect::<Vec<_>>(),
            "types": t.filesystems.iter().flat_map(|(f, lt)| lt.per_type.iter().map(move |(ty, h)| {
                let mut v = jhists(h);
                let o = v.as_object_mut().expect("object");
                o.insert("type".into(), json!(ty.name()));
                o.insert("fs".into(), json!(f.to_string()));
                v
            })).collect::<Vec<_>>(),
            "glocks": t.slowest(shown(args.limit)).into_iter().map(|(f, g, h)| jtrace_glock(f, g, h)).collect::<Vec<_>>(),
            "classified_by_stats": t.total(|l| l.by_stats),
            "classified_by_flags": t.total(|l| l.by_flags),
            "unclassified": t.total(|l| l.unclassified),
            "negative_tdiff": t.total(|l| l.negative),
        })
    });
    let doc = json!({
        "glocks": glocks,
        "types": types,
        "delta": delta,
        "trace": trace,
        "errors": clikit::diag::errors(&r.diagnostics),
    });
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
