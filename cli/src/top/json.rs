//! `glk top --json`: one JSON document per snapshot. The schema is documented in the
//! README ("glk top --json").

use std::collections::HashMap;
use std::io::{self, Write};

use glockparse::{Glock, Holder};
use serde::Serialize;

use super::snapshot::{Summary, TypeCounts};
use super::waits::{WaitAge, WaiterKey};
use super::Snapshot;
use clikit::fmt;

#[derive(Serialize)]
struct Doc<'a> {
    taken_unix: f64,
    iteration: u64,
    sources: Vec<Source>,
    glocks: Vec<JGlock<'a>>,
    summary: JSummary,
    errors: clikit::diag::Errors,
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
    g: &'a Glock,
    input: usize,
    source: &'a str,
    ages: &HashMap<WaiterKey, WaitAge>,
    flag_names: bool,
) -> JGlock<'a> {
    let age = |h: &Holder| {
        ages.get(&WaiterKey {
            input,
            glock: g.id,
            pid: h.pid,
            caller: h.caller.clone(),
        })
        .copied()
    };
    JGlock {
        glock: g.id.to_string(),
        gltype: g.glock_type().name().into_owned(),
        source,
        fs: g.fs.as_deref(),
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
    }
}

pub fn write(
    out: &mut impl Write,
    snap: &Snapshot,
    ages: &HashMap<WaiterKey, WaitAge>,
    flag_names: bool,
) -> io::Result<()> {
    let paths: Vec<String> = snap
        .inputs
        .iter()
        .map(|i| i.path.display().to_string())
        .collect();
    let doc = Doc {
        taken_unix: fmt::unix_secs(snap.taken),
        iteration: snap.iteration,
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
            .map(|s| glock(&s.glock, s.input, &paths[s.input], ages, flag_names))
            .collect(),
        summary: summary(&snap.summary()),
        errors: clikit::diag::errors(&snap.diagnostics()),
    };
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
