//! Plain-text rendering of a `glk top` snapshot.

use std::collections::HashMap;
use std::io::{self, Write};

use glockparse::{Glock, Holder};

use analysis::refresh::rank::{Summary, TypeCounts};
use analysis::refresh::verdict::{Blocker, Verdict};
use analysis::refresh::waits::{WaitAge, WaiterKey};
use analysis::refresh::Shown;

use super::columns::{self, Field};
use super::{Page, TopArgs};
use clikit::fmt;

pub fn write(
    out: &mut impl Write,
    page: &Page,
    fields: &[Field],
    args: &TopArgs,
    refreshing: bool,
    paint: clikit::Paint,
) -> io::Result<()> {
    let snap = page.snap;
    let summary = snap.summary();
    let total = summary.total();
    let sources: Vec<String> = (0..snap.inputs.len())
        .map(|i| super::label(snap, i))
        .collect();
    write!(out, "glk top  {}  ", fmt::utc(snap.taken))?;
    if refreshing {
        write!(out, "refresh {}  ", snap.iteration)?;
    }
    write!(
        out,
        "read {}  ",
        fmt::micros(snap.read_time.as_micros() as u64)
    )?;
    writeln!(out, "{}", sources.join(" "))?;
    writeln!(
        out,
        "{} glocks: {} held, demoting or waited on; {} with waiters ({} waiting holders); {} demoting",
        total.glocks, summary.relevant, total.waiting_glocks, total.waiters, total.demoting
    )?;
    writeln!(out)?;
    type_table(out, &summary, &total)?;
    posix_waits(out, &snap.ctx.posix_waits(), paint)?;
    let (more, held) = snap.hidden();
    if snap.shown.is_empty() {
        if held > 0 {
            writeln!(
                out,
                "Nothing waits or demotes; {held} glocks are only held (--held shows them)."
            )?;
        } else {
            writeln!(out, "No glock is held, demoting or waited on.")?;
        }
        return Ok(());
    }
    let multi = snap.inputs.len() > 1;
    let mut fields = fields.to_vec();
    if multi && !fields.contains(&Field::Source) {
        fields.push(Field::Source);
    }
    let head: Vec<String> = fields
        .iter()
        .map(|f| columns::fit(f.title(), f.width(), f.right()))
        .collect();
    writeln!(out, "{}", head.join(" ").trim_end())?;
    for (s, v) in snap.shown.iter().zip(page.verdicts) {
        let cells: Vec<String> = fields
            .iter()
            .map(|f| {
                let c = f.cell(snap, s, v);
                if *f == Field::Source || *f == Field::Blocker {
                    // Never cut a file name or a node: pad only.
                    format!("{c:<w$}", w = f.width())
                } else {
                    columns::fit(&c, f.width(), f.right())
                }
            })
            .collect();
        let line = cells.join(" ");
        let line = line.trim_end();
        if v.stuck {
            writeln!(out, "{}", paint.warn(line))?;
        } else {
            writeln!(out, "{line}")?;
        }
        glock(out, page, s, v, args, paint)?;
    }
    if more > 0 {
        writeln!(out, "({more} more not shown; --limit 0 shows all)")?;
    }
    if held > 0 {
        writeln!(
            out,
            "({held} glocks only held are not shown; --held shows them)"
        )?;
    }
    Ok(())
}

/// The POSIX (fcntl) lock requests that wait, each with who holds what it wants: dlm_controld
/// keeps them outside the glocks file.
fn posix_waits(
    out: &mut impl Write,
    waits: &[analysis::refresh::companions::PosixWait],
    paint: clikit::Paint,
) -> io::Result<()> {
    if waits.is_empty() {
        return Ok(());
    }
    writeln!(out, "POSIX locks waiting (dlm_tool plocks):")?;
    let lock = |l: &glockparse::plocks::Plock| {
        format!("node {} pid {} {} {}", l.nodeid, l.pid, l.mode(), l.range())
    };
    for w in waits {
        let held: Vec<String> = w.blockers.iter().map(lock).collect();
        let line = format!(
            "  {} waits for {} ({}), held by {}",
            lock(&w.request),
            w.request.resource(),
            w.request.state.as_str(),
            if held.is_empty() {
                "nobody the dump shows".to_string()
            } else {
                held.join(", ")
            }
        );
        writeln!(out, "{}", paint.warn(&line))?;
    }
    writeln!(out)
}

/// The glock counts per type, and their total.
fn type_table(out: &mut impl Write, summary: &Summary, total: &TypeCounts) -> io::Result<()> {
    writeln!(
        out,
        "{:<9} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8}",
        "TYPE",
        "GLOCKS",
        "UNLOCKED",
        "LOCKED",
        "HELD-EX",
        "HELD-SH",
        "HELD-DF",
        "WAITING",
        "WAITERS",
        "DEMOTING"
    )?;
    let row = |out: &mut dyn Write, name: &str, c: &TypeCounts| {
        writeln!(
            out,
            "{:<9} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8}",
            name,
            c.glocks,
            c.unlocked,
            c.locked,
            c.held_ex,
            c.held_sh,
            c.held_df,
            c.waiting_glocks,
            c.waiters,
            c.demoting
        )
    };
    for (t, c) in &summary.by_type {
        row(out, &t.name(), c)?;
    }
    row(out, "total", total)?;
    writeln!(out)?;
    Ok(())
}

fn glock(
    out: &mut impl Write,
    page: &Page,
    s: &Shown,
    v: &Verdict,
    args: &TopArgs,
    paint: clikit::Paint,
) -> io::Result<()> {
    let (snap, input, g) = (page.snap, s.input, &s.glock);
    if args.flag_names && !g.flags.is_empty() {
        writeln!(out, "    flags: {}", g.flags.words().join(", "))?;
    }
    for h in &g.holders {
        holder(out, input, g, h, page.ages, args.flag_names, paint)?;
    }
    if let Some(d) = &v.dlm {
        let master = d.master.map_or("this node".into(), |m| format!("node {m}"));
        writeln!(
            out,
            "    DLM: request {} (granted {}, pid {}) waiting {} in the queue of master {}; waits for {}",
            d.rqmode,
            d.grmode,
            d.pid,
            fmt::micros(d.age_us),
            master,
            v.blocker
        )?;
        if let Blocker::Granted(locks) = &v.blocker {
            for l in locks {
                let Some(n) = l.lock.owner else { continue };
                if let Some(asked) = l.asked_not_holding() {
                    writeln!(
                        out,
                        "    (the master's dump names pid {asked} for node {n}'s lock: the process that last asked the DLM for it, not the holder)"
                    )?;
                } else if l.holder.is_none() {
                    let pid = l.lock.pid;
                    let lead = format!("    (pid {pid} is the process that last asked the DLM for node {n}'s lock, not necessarily its holder now");
                    if snap.ctx.peers(input).any(|(_, id)| id == Some(n)) {
                        writeln!(out, "{lead}: node {n}'s glocks file, read a moment apart, shows no holder of it)")?;
                    } else {
                        writeln!(out, "{lead}: node {n}'s glocks file names the holder; give it too, or use --cluster)")?;
                    }
                }
            }
        }
        if let (Some(m), false) = (d.master, d.master_seen) {
            writeln!(
                out,
                "    (the holder is known to node {m}'s DLM lock dump: give its glocks file too)"
            )?;
        }
    } else if g.waiter_count() > 0 {
        writeln!(out, "    waits for {}", v.blocker)?;
    }
    for t in &v.elsewhere {
        writeln!(out, "    {}", columns::held_there(snap, t))?;
    }
    let node = snap.ctx.node(input);
    for f in node.open_files(g.id) {
        writeln!(out, "    open: pid {} fd {}", f.pid, f.fd)?;
    }
    for o in columns::objects(g) {
        writeln!(out, "    {o}")?;
    }
    Ok(())
}

fn holder(
    out: &mut impl Write,
    input: usize,
    g: &Glock,
    h: &Holder,
    ages: &HashMap<WaiterKey, WaitAge>,
    flag_names: bool,
    paint: clikit::Paint,
) -> io::Result<()> {
    let role = columns::role(h);
    let pid = columns::pid(h);
    let mut tail = String::new();
    if h.error != 0 {
        tail.push_str(&format!("  error {}", h.error));
    }
    if h.is_waiting() {
        if let Some(a) = ages.get(&WaiterKey::of(input, g, h)) {
            if a.refreshes > 1 {
                tail.push_str(&format!(
                    "  seen waiting {} ({} refreshes)",
                    fmt::micros((a.seen_secs * 1e6) as u64),
                    a.refreshes
                ));
            } else if a.new {
                tail.push_str("  NEW");
            }
        }
    }
    // Padded before painting, so escape codes do not upset the columns.
    let role = format!("{role:<7}");
    let role = if h.is_waiting() {
        paint.warn(&role)
    } else {
        role
    };
    writeln!(
        out,
        "    {} {:<2} pid {:<8} {:<16} {}  f:{}{}",
        role,
        h.state.as_str(),
        pid,
        &*h.comm,
        &*h.caller,
        h.flags,
        tail
    )?;
    if flag_names && !h.flags.is_empty() {
        writeln!(out, "            ({})", h.flags.words().join(", "))?;
    }
    Ok(())
}
