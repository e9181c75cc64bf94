//! Rendering decoded gfs2 and dlm events: one readable line, or one JSON object.

use std::fmt::Write as _;

use traceparse::dlm::lkf_names;
use traceparse::{Dev, DlmEvent, Gfs2Event, TraceLine};

use clikit::fmt;

/// `   34.268977 [001] mkdir-179 `
pub fn prefix(out: &mut String, l: &TraceLine<'_>) {
    let _ = write!(
        out,
        "{:>5}.{:06} [{:03}] {}-{} ",
        l.ts_ns / 1_000_000_000,
        l.ts_ns % 1_000_000_000 / 1000,
        l.cpu.unwrap_or(0),
        glockparse::quote::plain(l.comm),
        l.pid
    );
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The event in words, glock ids in the canonical `TYPE/hexnum` form.
pub fn text(out: &mut String, dev: Dev, e: &Gfs2Event) {
    let _ = write!(out, "{} {dev} ", e.name());
    let _ = match *e {
        Gfs2Event::GlockStateChange { glock, from, to, target, demote, flags } => write!(
            out,
            "{glock} {from} -> {to} target {target} demote {demote} flags {flags}"
        ),
        Gfs2Event::GlockPut { glock, state, flags } => write!(out, "{glock} freed in {state} flags {flags}"),
        Gfs2Event::DemoteRq { glock, from, to, flags, remote } => write!(
            out,
            "{glock} {from} -> {to} {} flags {flags}",
            match remote {
                Some(true) => "remote",
                Some(false) => "local",
                None => "",
            }
        ),
        Gfs2Event::Promote { glock, state, first } => write!(
            out,
            "{glock} granted {state}{}",
            match first {
                Some(true) => " first",
                Some(false) => " other",
                None => "",
            }
        ),
        Gfs2Event::GlockQueue { glock, queue, state } => {
            write!(out, "{glock} {} {state}", if queue { "queue" } else { "dequeue" })
        }
        Gfs2Event::GlockLockTime(l) => write!(
            out,
            "{} dlm {} status {} srtt {}/{} srttb {}/{} sirt {}/{} dcnt {} qcnt {}",
            l.glock,
            fmt::nanos(l.tdiff.max(0) as u64),
            l.status,
            fmt::nanos(l.stats.srtt.max(0) as u64),
            fmt::nanos(l.stats.srttvar.max(0) as u64),
            fmt::nanos(l.stats.srttb.max(0) as u64),
            fmt::nanos(l.stats.srttvarb.max(0) as u64),
            fmt::nanos(l.stats.sirt.max(0) as u64),
            fmt::nanos(l.stats.sirtvar.max(0) as u64),
            l.stats.dcount,
            l.stats.qcount
        ),
        Gfs2Event::Pin { pin, block, len, ino } => write!(
            out,
            "{} block {block} {len} bytes, glock number {ino}",
            if pin { "pin" } else { "unpin" }
        ),
        Gfs2Event::LogFlush { start, seq, flags } => write!(
            out,
            "{} seq {seq} flags {}",
            if start { "start" } else { "end" },
            flags.map_or("-".into(), |f| format!("0x{f:x}"))
        ),
        Gfs2Event::LogBlocks { blocks, free } => write!(out, "{blocks} blocks, {} free", opt(free)),
        Gfs2Event::AilFlush { start, sync_all, nr_to_write } => write!(
            out,
            "{} {} nr_to_write {nr_to_write}",
            if start { "start" } else { "end" },
            if sync_all { "all" } else { "none" }
        ),
        Gfs2Event::Bmap { inum, lblock, len, pblock, bh_state, create, error } => write!(
            out,
            "inode {inum} block {lblock} {len} bytes -> {pblock} state {bh_state:x} {} error {error}",
            if create { "create" } else { "nocreate" }
        ),
        Gfs2Event::IomapStart { inum, pos, length, flags } => {
            write!(out, "inode {inum} pos {pos} length {length} flags {flags:x}")
        }
        Gfs2Event::IomapEnd { inum, pos, length, pblock, ty, flags, rc } => write!(
            out,
            "inode {inum} pos {pos} length {length} -> {} type {ty} flags {flags:x} rc {rc}",
            opt(pblock)
        ),
        Gfs2Event::BlockAlloc { inum, start, len, state, rg, rf, rq, rr } => write!(
            out,
            "inode {inum} blocks {start}+{len} {} rgrp {rg} free {rf} requested {} reserved {rr}",
            state.as_str(),
            opt(rq)
        ),
        Gfs2Event::Rs { inum, start, rg, rf, rq, rr, func, requested, reserved } => write!(
            out,
            "{} inode {inum} start {start} rgrp {rg} free {rf} rq {} rr {rr} requested {requested} reserved {}",
            func.as_str(),
            opt(rq),
            opt(reserved)
        ),
    };
}

/// Appends an event's serialised fields to the object being written: `{"a":1,"b":2}`
/// becomes `,"a":1,"b":2`.
fn fields(out: &mut String, e: &impl serde::Serialize) {
    let v = serde_json::to_string(e).expect("trace events serialise to JSON");
    let inner = &v[1..v.len() - 1];
    if !inner.is_empty() {
        out.push(',');
        out.push_str(inner);
    }
}

/// `s` as a JSON string, invalid UTF-8 replaced, escaped as serde_json escapes (`"`,
/// `\`, and control characters), without an allocation when `s` is valid UTF-8.
fn json_str(out: &mut String, s: &[u8]) {
    out.push('"');
    let text = String::from_utf8_lossy(s);
    let mut plain = 0;
    for (i, b) in text.bytes().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[plain..i]);
        plain = i + 1;
        if esc.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

/// `"key":value` pairs common to every event line.
fn json_head(out: &mut String, l: &TraceLine<'_>, event: &str) {
    let _ = write!(out, "{{\"ts_ns\":{},\"cpu\":", l.ts_ns);
    match l.cpu {
        Some(c) => {
            let _ = write!(out, "{c}");
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"comm\":");
    json_str(out, l.comm);
    let _ = write!(out, ",\"pid\":{},\"event\":", l.pid);
    json_str(out, event.as_bytes());
}

/// One JSON object for a gfs2 event.
pub fn json(out: &mut String, l: &TraceLine<'_>, dev: Dev, e: &Gfs2Event) {
    json_head(out, l, e.name());
    let _ = write!(out, ",\"dev\":\"{dev}\"");
    if let Some(g) = e.glock() {
        let _ = write!(
            out,
            ",\"glock\":\"{g}\",\"type\":\"{}\"",
            g.glock_type().name()
        );
    }
    fields(out, e);
    out.push_str("}\n");
}

/// One JSON object for an event glk does not decode (or a gfs2 body it could not).
pub fn json_raw(out: &mut String, l: &TraceLine<'_>, undecoded: bool) {
    json_head(out, l, &l.event_name());
    out.push_str(",\"body\":");
    json_str(out, l.body);
    if undecoded {
        out.push_str(",\"undecoded\":true");
    }
    out.push_str("}\n");
}

fn mode_or_dash(m: Option<traceparse::event::DlmMode>) -> &'static str {
    m.map_or("-", |m| m.as_str())
}

/// A dlm event in words (`dlm_lock_start 2/4101c lkb b2 EX flags CONVERT|VALBLK`), the
/// resource as its glock id when it is one.
pub fn dlm_text(out: &mut String, e: &DlmEvent) {
    let _ = write!(out, "dlm_{} ", e.name());
    let flags = |f: u32| {
        if f == 0 {
            String::new()
        } else {
            format!(" flags {}", lkf_names(f))
        }
    };
    let _ = match *e {
        DlmEvent::LockStart {
            lkb_id,
            mode,
            flags: f,
            res,
            ..
        } => {
            write!(out, "{res} lkb {lkb_id:x} request {mode}{}", flags(f))
        }
        DlmEvent::LockEnd {
            lkb_id,
            mode,
            flags: f,
            error,
            res,
            ..
        } => write!(
            out,
            "{res} lkb {lkb_id:x} {mode} returned {error}{}",
            flags(f)
        ),
        DlmEvent::Bast {
            lkb_id, mode, res, ..
        } => {
            write!(out, "{res} lkb {lkb_id:x} blocking a request for {mode}")
        }
        DlmEvent::Ast {
            lkb_id,
            sb_flags,
            status,
            res,
            ..
        } => write!(
            out,
            "{res} lkb {lkb_id:x} completed status {status}{}",
            if sb_flags & 1 != 0 { " demoted" } else { "" }
        ),
        DlmEvent::UnlockStart {
            lkb_id,
            flags: f,
            res,
            ..
        } => {
            write!(out, "{res} lkb {lkb_id:x} unlock{}", flags(f))
        }
        DlmEvent::UnlockEnd {
            lkb_id, error, res, ..
        } => {
            write!(out, "{res} lkb {lkb_id:x} unlock returned {error}")
        }
        DlmEvent::Send { nodeid, ret } => write!(out, "to node {nodeid}: {ret}"),
        DlmEvent::Recv { nodeid, ret } => write!(out, "from node {nodeid}: {ret}"),
        DlmEvent::SendMessage(m) | DlmEvent::RecvMessage(m) => write!(
            out,
            "{} node {} -> {} seq {} {} lkid {} remid {} rq {} gr {} result {}",
            m.mtype.as_str(),
            m.from,
            opt(m.dst),
            m.seq,
            m.res,
            m.lkid,
            m.remid,
            mode_or_dash(m.rqmode),
            mode_or_dash(m.grmode),
            m.result
        ),
        DlmEvent::SendRcom(m) | DlmEvent::RecvRcom(m) => write!(
            out,
            "node {} -> {} seq {} {} bytes",
            m.from,
            opt(m.dst),
            m.seq,
            m.len
        ),
        DlmEvent::PlockRead(p) | DlmEvent::PlockWrite(p) => write!(
            out,
            "inode {:x} pid {} node {} {} {}-{} rv {}",
            p.number,
            p.pid,
            p.nodeid,
            if p.ex { "write lock" } else { "read lock" },
            p.start,
            p.end,
            p.rv
        ),
    };
}

/// One JSON object for a dlm event: `event` is the kernel's name (`dlm_lock_start`),
/// `glock` the resource's glock id when it is one.
pub fn dlm_json(out: &mut String, l: &TraceLine<'_>, e: &DlmEvent) {
    json_head(out, l, &format!("dlm_{}", e.name()));
    let res = e.resource();
    if let Some(g) = res.glock() {
        let _ = write!(
            out,
            ",\"glock\":\"{g}\",\"type\":\"{}\"",
            g.glock_type().name()
        );
    } else if res != traceparse::Resource::None {
        let _ = write!(out, ",\"resource\":\"{res}\"");
    }
    fields(out, e);
    out.push_str("}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_serde_jsons() {
        let cases: &[&[u8]] = &[
            b"plain",
            b"",
            b"quote \" backslash \\ slash /",
            b"\n\r\t\x08\x0c\x00\x01\x1f\x7f end",
            "caf\u{e9} \u{1f600}".as_bytes(),
            b"bad \xff\xfe utf8 \xc3",
        ];
        for c in cases {
            let mut ours = String::new();
            json_str(&mut ours, c);
            let serde =
                serde_json::Value::String(String::from_utf8_lossy(c).into_owned()).to_string();
            assert_eq!(ours, serde, "{c:?}");
        }
    }
}
