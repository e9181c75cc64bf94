//! Plain-text rendering of a `glk top` snapshot.

use std::collections::HashMap;
use std::io::{self, Write};

use glockparse::{Glock, Holder};

use super::waits::{WaitAge, WaiterKey};
use super::{Snapshot, TopArgs};
use clikit::fmt;

fn input_label(snap: &Snapshot, i: usize) -> String {
    let p = &snap.inputs[i].path;
    let file = p
        .file_name()
        .map(|f| f.to_string_lossy())
        .unwrap_or_default();
    match p.parent().and_then(|d| d.file_name()) {
        Some(dir) => format!("{}/{file}", dir.to_string_lossy()),
        None => file.into_owned(),
    }
}

pub fn write(
    out: &mut impl Write,
    snap: &Snapshot,
    ages: &HashMap<WaiterKey, WaitAge>,
    args: &TopArgs,
    refreshing: bool,
    paint: clikit::Paint,
) -> io::Result<()> {
    let summary = snap.summary();
    let total = summary.total();
    let sources: Vec<String> = (0..snap.inputs.len())
        .map(|i| input_label(snap, i))
        .collect();
    write!(out, "glk top  {}  ", fmt::utc(snap.taken))?;
    if refreshing {
        write!(out, "refresh {}  ", snap.iteration)?;
    }
    writeln!(out, "{}", sources.join(" "))?;
    writeln!(
        out,
        "{} glocks: {} held, demoting or waited on; {} with waiters ({} waiting holders); {} demoting",
        total.glocks, summary.relevant, total.waiting_glocks, total.waiters, total.demoting
    )?;
    writeln!(out)?;
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
    let row = |out: &mut dyn Write, name: &str, c: &super::snapshot::TypeCounts| {
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
    row(out, "total", &total)?;
    writeln!(out)?;
    if snap.shown.is_empty() {
        writeln!(out, "No glock is held, demoting or waited on.")?;
        return Ok(());
    }
    let multi = snap.inputs.len() > 1;
    writeln!(
        out,
        "{:<22} {:<7} {:<5} {:<6} {:<22} {:>4} {:>4}  {}",
        "GLOCK",
        "TYPE",
        "STATE",
        "TARGET",
        "DEMOTE",
        "HELD",
        "WAIT",
        if multi { "FLAGS  SOURCE" } else { "FLAGS" }
    )?;
    for s in &snap.shown {
        glock(
            out,
            s.input,
            &s.glock,
            ages,
            args,
            multi.then(|| sources[s.input].as_str()),
            paint,
        )?;
    }
    let matching: u64 = snap.files.iter().map(|f| f.matching).sum();
    let hidden = (matching as usize).saturating_sub(snap.shown.len());
    if hidden > 0 {
        writeln!(out, "({hidden} more not shown; --limit 0 shows all)")?;
    }
    Ok(())
}

fn glock(
    out: &mut impl Write,
    input: usize,
    g: &Glock,
    ages: &HashMap<WaiterKey, WaitAge>,
    args: &TopArgs,
    source: Option<&str>,
    paint: clikit::Paint,
) -> io::Result<()> {
    let demote = if g.demote_us > 0 {
        format!("to {} for {}", g.demote_state, fmt::micros(g.demote_us))
    } else if g.demote_requested() {
        format!("to {} pending", g.demote_state)
    } else {
        "-".into()
    };
    let flags = g.flags.to_string();
    writeln!(
        out,
        "{:<22} {:<7} {:<5} {:<6} {:<22} {:>4} {:>4}  {}{}",
        g.id.to_string(),
        g.glock_type().name(),
        g.state.as_str(),
        g.target.as_str(),
        demote,
        g.granted_count(),
        g.waiter_count(),
        if flags.is_empty() { "-" } else { &flags },
        source.map(|s| format!("  {s}")).unwrap_or_default(),
    )?;
    if args.flag_names && !g.flags.0.is_empty() {
        writeln!(out, "    flags: {}", g.flags.words().join(", "))?;
    }
    for h in &g.holders {
        holder(out, input, g, h, ages, args.flag_names, paint)?;
    }
    if let Some(i) = &g.inode {
        writeln!(
            out,
            "    inode {} ({}, {} bytes{})",
            i.addr,
            i.file_type(),
            i.size,
            i.nrpages
                .map(|p| format!(", {p} pages cached"))
                .unwrap_or_default()
        )?;
    }
    if let Some(r) = &g.rgrp {
        writeln!(
            out,
            "    rgrp {} ({} free blocks, {} dinodes, {} reservations)",
            r.addr,
            r.free,
            r.dinodes,
            r.reservations.len()
        )?;
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
    let role = if h.is_waiting() {
        "waiting"
    } else if h.is_granted() {
        "holds"
    } else {
        "queued"
    };
    let pid = if h.pid_meaningless() && h.pid <= 0 {
        "-".to_string()
    } else {
        h.pid.to_string()
    };
    let mut tail = String::new();
    if h.error != 0 {
        tail.push_str(&format!("  error {}", h.error));
    }
    if h.is_waiting() {
        let key = WaiterKey {
            input,
            glock: g.id,
            pid: h.pid,
            caller: h.caller.clone(),
        };
        if let Some(a) = ages.get(&key) {
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
    if flag_names && !h.flags.0.is_empty() {
        writeln!(out, "            ({})", h.flags.words().join(", "))?;
    }
    Ok(())
}
