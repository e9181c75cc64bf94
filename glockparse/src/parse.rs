//! Parsers for single glocks-file lines (the part after the tag: `G:`, `H:`, ...).
//! Each returns a message on malformed input; none allocates on the common path except
//! through the interner.

use crate::cursor::Cursor;
use crate::flags::{GlockFlags, HolderFlags};
use crate::grammar::{self, fields_of, whole};
use crate::id::GlockId;
use crate::intern::Interner;
use crate::record::{Glock, Holder, InodeInfo, Reservation, RgrpInfo, RgrpLvb, Token};
use crate::state::LockState;

/// Reads the fields of `body` in order: `known` takes each `key:value` and says whether
/// it knew the key; unknown fields and bare words are kept in `extra` as they are.
fn read_fields(
    body: &[u8],
    extra: &mut Vec<Token>,
    mut known: impl FnMut(&[u8], &[u8]) -> Result<bool, String>,
) -> Result<(), String> {
    for (key, value) in fields_of(body) {
        match value {
            Some(v) if known(key, v)? => {}
            _ => keep_token(extra, key, value),
        }
    }
    Ok(())
}

fn keep_token(extra: &mut Vec<Token>, key: &[u8], value: Option<&[u8]>) {
    extra.push(Token {
        key: String::from_utf8_lossy(key).into(),
        value: String::from_utf8_lossy(value.unwrap_or(b"")).into(),
    });
}

fn state(v: &[u8], what: &'static str) -> Result<LockState, String> {
    whole(grammar::state, v).ok_or_else(|| format!("bad {what} state \"{}\"", lossy(v)))
}

/// A value from the input, quoted for a message (control bytes never reach a terminal).
fn lossy(v: &[u8]) -> String {
    crate::quote::quote(v, 60)
}

fn num_u(v: &[u8], key: &str) -> Result<u64, String> {
    whole(grammar::dec, v).ok_or_else(|| format!("bad number in {key}:{}", lossy(v)))
}

fn num_i(v: &[u8], key: &str) -> Result<i64, String> {
    whole(grammar::sdec, v).ok_or_else(|| format!("bad number in {key}:{}", lossy(v)))
}

fn num_hex(v: &[u8], key: &str) -> Result<u64, String> {
    whole(grammar::hex, v).ok_or_else(|| format!("bad hex number in {key}:{}", lossy(v)))
}

/// `A/B`, both unsigned decimals.
fn num_pair(v: &[u8], key: &str) -> Result<(u64, u64), String> {
    let (a, b) = pair(v, key)?;
    Ok((num_u(a, key)?, num_u(b, key)?))
}

fn pair<'a>(v: &'a [u8], key: &str) -> Result<(&'a [u8], &'a [u8]), String> {
    grammar::halves(v)
        .map(|(_, halves)| halves)
        .map_err(|_| format!("expected A/B in {key}:{}", lossy(v)))
}

/// The kernel's exact `G:` layout, every version:
/// `s:%s n:%u/%llx f:%s t:%s d:%s/%llu a:%d v:%d r:%d m:%ld[ p:%lu]`.
fn glock_line_fast(body: &[u8], g: &mut Glock) -> Option<()> {
    let mut c = Cursor::new(body);
    c.skip_spaces();
    c.lit(b"s:")?;
    g.state = LockState::parse(c.take(2)?)?;
    c.lit(b" n:")?;
    let gltype = u32::try_from(c.uint()?).ok()?;
    c.byte(b'/')?;
    g.id = GlockId::new(gltype, c.hex()?);
    c.lit(b" f:")?;
    g.flags = GlockFlags::parse(c.word())?;
    c.lit(b" t:")?;
    g.target = LockState::parse(c.take(2)?)?;
    c.lit(b" d:")?;
    g.demote_state = LockState::parse(c.take(2)?)?;
    c.byte(b'/')?;
    g.demote_us = c.uint()?;
    g.ail = c.lit_int(b" a:")?;
    g.revokes = c.lit_int(b" v:")?;
    g.refs = c.lit_int(b" r:")?;
    g.hold_jiffies = c.lit_int(b" m:")?;
    g.nrpages = c.opt_lit_uint(b" p:")?;
    c.at_end().then_some(())
}

/// Parses the body of a `G:` line (after `G:`) into `g`, which must be cleared first.
/// `s:` and `n:` are required; every other known field is optional so that old and new
/// kernels parse alike.
pub(crate) fn glock_line(body: &[u8], g: &mut Glock) -> Result<(), String> {
    if glock_line_fast(body, g).is_some() {
        return Ok(());
    }
    g.clear();
    glock_line_general(body, g)
}

/// [`glock_line`] by the general rule alone: the fields of [`grammar`] in any order.
fn glock_line_general(body: &[u8], g: &mut Glock) -> Result<(), String> {
    let (mut have_s, mut have_n) = (false, false);
    read_fields(body, &mut g.extra, |key, v| {
        match key {
            b"s" => {
                g.state = state(v, "s:")?;
                have_s = true;
            }
            b"n" => {
                g.id = whole(grammar::glock_id, v)
                    .ok_or_else(|| format!("bad glock number n:{}", lossy(v)))?;
                have_n = true;
            }
            b"f" => {
                g.flags =
                    GlockFlags::parse(v).ok_or_else(|| format!("bad glock flags f:{}", lossy(v)))?
            }
            b"t" => g.target = state(v, "t:")?,
            b"d" => {
                let (s, us) = pair(v, "d")?;
                g.demote_state = state(s, "d:")?;
                g.demote_us = num_u(us, "d")?;
            }
            b"a" => g.ail = num_i(v, "a")?,
            b"v" => g.revokes = num_i(v, "v")?,
            b"r" => g.refs = num_i(v, "r")?,
            b"m" => g.hold_jiffies = num_i(v, "m")?,
            b"p" => g.nrpages = Some(num_u(v, "p")?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    match (have_s, have_n) {
        (true, true) => Ok(()),
        (false, _) => Err("G: line without s: state".into()),
        (_, false) => Err("G: line without n: glock number".into()),
    }
}

/// A `%pS` symbol carries `+0xOFF/0xSIZE`: some `+` is followed by `0x`.
fn has_offset(tok: &[u8]) -> bool {
    let mut from = 0;
    while let Some(k) = tok[from..].iter().position(|&b| b == b'+') {
        from += k + 1;
        if tok[from..].starts_with(b"0x") {
            return true;
        }
    }
    false
}

/// Finds where the caller starts in `"COMM] CALLER"`: the last token, or the last two
/// when the final token is `[module]` or a `file.c:line` location.
fn caller_start(rest: &[u8]) -> usize {
    let last_space = |s: &[u8]| crate::scan::rfind_short(b' ', s);
    let Some(sp) = last_space(rest) else {
        return rest.len();
    };
    let last = &rest[sp + 1..];
    let two_tokens = (last.starts_with(b"[") && last.ends_with(b"]"))
        || (last.contains(&b':') && !has_offset(last));
    if two_tokens {
        if let Some(sp2) = last_space(&rest[..sp]) {
            let prev = &rest[sp2 + 1..sp];
            if has_offset(prev) || prev.starts_with(b"0x") {
                return sp2 + 1;
            }
        }
    }
    sp + 1
}

/// The kernel's exact `H:` layout up to the comm: `s:%s f:%s e:%d p:%ld [`.
fn holder_prefix_fast(body: &[u8]) -> Option<(LockState, HolderFlags, i64, i64, &[u8])> {
    let mut c = Cursor::new(body);
    c.skip_spaces();
    c.lit(b"s:")?;
    let state = LockState::parse(c.take(2)?)?;
    c.lit(b" f:")?;
    let flags = HolderFlags::parse(c.word())?;
    let error = c.lit_int(b" e:")?;
    let pid = c.lit_int(b" p:")?;
    c.byte(b' ')?;
    let rest = c.rest();
    (rest.first() == Some(&b'[')).then_some((state, flags, error, pid, rest))
}

/// Parses the body of an ` H:` line. The comm may contain spaces and `]`, so it is taken
/// as whatever lies between `p:N [` and the caller found from the right.
pub(crate) fn holder_line(body: &[u8], interner: &mut Interner) -> Result<Holder, String> {
    match holder_line_fast(body, interner) {
        Some(h) => h,
        None => holder_line_general(body, interner),
    }
}

/// [`holder_line`] by the kernel's exact layout alone: None when the line is not in it.
fn holder_line_fast(body: &[u8], interner: &mut Interner) -> Option<Result<Holder, String>> {
    let (state, flags, error, pid, rest) = holder_prefix_fast(body)?;
    let h = Holder {
        state,
        flags,
        error,
        pid,
        comm: interner.empty(),
        caller: interner.empty(),
        line: 0,
    };
    Some(holder_tail(h, rest, interner))
}

/// [`holder_line`] by the general rule alone: [`grammar::holder_head`]'s fields in any
/// order, then the `[comm]` and caller.
fn holder_line_general(body: &[u8], interner: &mut Interner) -> Result<Holder, String> {
    let mut h = Holder {
        state: LockState::Unlocked,
        flags: HolderFlags::default(),
        error: 0,
        pid: -1,
        comm: interner.empty(),
        caller: interner.empty(),
        line: 0,
    };
    let (fields, rest) = grammar::holder_head(body);
    let (mut have_s, mut have_p) = (false, false);
    for (key, value) in fields {
        let Some(v) = value else {
            return Err(format!("unexpected token \"{}\" in H: line", lossy(key)));
        };
        match key {
            b"s" => {
                h.state = state(v, "s:")?;
                have_s = true;
            }
            b"f" => {
                h.flags = HolderFlags::parse(v)
                    .ok_or_else(|| format!("bad holder flags f:{}", lossy(v)))?
            }
            b"e" => h.error = num_i(v, "e")?,
            b"p" => {
                h.pid = num_i(v, "p")?;
                have_p = true;
            }
            _ => {}
        }
    }
    if !have_s || !have_p {
        return Err("H: line without s: and p: fields".into());
    }
    let rest = rest.ok_or("H: line without [comm]")?;
    holder_tail(h, rest, interner)
}

/// Splits `COMM] CALLER` (the text after `[`, without trailing white space) into the comm
/// and the caller (empty when none is printed); `None` when the comm is not closed by `]`.
pub(crate) fn holder_tail_split(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let cs = caller_start(rest);
    if cs >= 2 && &rest[cs - 2..cs] == b"] " {
        Some((&rest[..cs - 2], &rest[cs..]))
    } else if let Some(comm) = rest.strip_suffix(b"]") {
        // No caller printed at all.
        Some((comm, b""))
    } else {
        None
    }
}

/// Fills comm and caller from `[COMM] CALLER`.
fn holder_tail(mut h: Holder, rest: &[u8], interner: &mut Interner) -> Result<Holder, String> {
    let (comm, caller) = holder_tail_split(&rest[1..]).ok_or("H: line: comm not closed by ']'")?;
    h.comm = interner.intern(comm);
    if !caller.is_empty() {
        h.caller = interner.intern(caller);
    }
    Ok(h)
}

/// The kernel's exact `I:` layout: `n:%llu/%llu t:%u f:0x%02lx d:0x%08x s:%llu[ p:%lu]`.
fn inode_line_fast(body: &[u8]) -> Option<InodeInfo> {
    let mut c = Cursor::new(body);
    c.skip_spaces();
    let (formal_ino, addr) = c.lit_uint_pair(b"n:")?;
    let dtype = c.lit_uint(b" t:")?;
    let iflags = c.lit_hex(b" f:0x")?;
    let diskflags = c.lit_hex(b" d:0x")?;
    let size = c.lit_uint(b" s:")?;
    let nrpages = c.opt_lit_uint(b" p:")?;
    c.at_end().then_some(InodeInfo {
        formal_ino,
        addr,
        dtype,
        iflags,
        diskflags,
        size,
        nrpages,
        extra: Vec::new(),
    })
}

/// Parses the body of an ` I:` line.
pub(crate) fn inode_line(body: &[u8]) -> Result<InodeInfo, String> {
    match inode_line_fast(body) {
        Some(i) => Ok(i),
        None => inode_line_general(body),
    }
}

/// [`inode_line`] by the general rule alone.
fn inode_line_general(body: &[u8]) -> Result<InodeInfo, String> {
    let mut i = InodeInfo::default();
    let mut have_n = false;
    read_fields(body, &mut i.extra, |key, v| {
        match key {
            b"n" => {
                (i.formal_ino, i.addr) = num_pair(v, "n")?;
                have_n = true;
            }
            b"t" => i.dtype = num_u(v, "t")?,
            b"f" => i.iflags = num_hex(v, "f")?,
            b"d" => i.diskflags = num_hex(v, "d")?,
            // RHEL6-era kernels printed s:size/disksize.
            b"s" => i.size = num_u(v.split(|&b| b == b'/').next().unwrap_or(v), "s")?,
            b"p" => i.nrpages = Some(num_u(v, "p")?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    numbered(i, have_n, "I:")
}

/// Parses the body of an ` R:` line.
pub(crate) fn rgrp_line(body: &[u8]) -> Result<RgrpInfo, String> {
    let mut r = RgrpInfo::default();
    let mut have_n = false;
    read_fields(body, &mut r.extra, |key, v| {
        match key {
            b"n" => {
                r.addr = num_u(v, "n")?;
                have_n = true;
            }
            b"f" => r.flags = num_hex(v, "f")?,
            b"b" => (r.free, r.free_clone) = num_pair(v, "b")?,
            b"i" => r.dinodes = num_u(v, "i")?,
            b"q" => r.requested = Some(num_u(v, "q")?),
            b"r" => r.reserved = Some(num_u(v, "r")?),
            b"e" => r.extfail = Some(num_u(v, "e")?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    numbered(r, have_n, "R:")
}

/// A line's record when it had its `n:` field (its number); else the error naming the
/// line's `tag`.
fn numbered<T>(record: T, have_n: bool, tag: &str) -> Result<T, String> {
    have_n
        .then_some(record)
        .ok_or_else(|| format!("{tag} line without n:"))
}

/// Parses the body of an `  L:` line.
pub(crate) fn lvb_line(body: &[u8]) -> Result<RgrpLvb, String> {
    let mut l = RgrpLvb::default();
    for (key, value) in fields_of(body) {
        match (key, value) {
            (b"f", Some(v)) => l.flags = num_hex(v, "f")?,
            (b"b", Some(v)) => l.free = num_u(v, "b")?,
            (b"i", Some(v)) => l.dinodes = num_u(v, "i")?,
            _ => {}
        }
    }
    Ok(l)
}

/// Parses the body of a `  B:` line.
pub(crate) fn reservation_line(body: &[u8]) -> Result<Reservation, String> {
    let mut b = Reservation::default();
    let mut have_n = false;
    for (key, value) in fields_of(body) {
        match (key, value) {
            (b"n", Some(v)) => {
                b.inode = num_u(v, "n")?;
                have_n = true;
            }
            (b"s", Some(v)) => b.start = num_u(v, "s")?,
            (b"b", Some(v)) => b.bit_offset = Some(num_u(v, "b")?),
            (b"f", Some(v)) => b.free = num_u(v, "f")?,
            _ => {}
        }
    }
    numbered(b, have_n, "B:")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `G:`, `H:` and `I:` line of every glocks fixture that the exact kernel
    /// layouts read gives what the general grammar gives, field for field.
    #[test]
    fn fast_layouts_read_every_fixture_line_as_the_grammar_does() {
        let files = testdata::files("", |name| {
            name.contains("glocks") || name.ends_with(".txt") || name.ends_with(".log")
        });
        let mut interner = Interner::default();
        let (mut checked, mut fast) = (0u64, 0u64);
        for path in &files {
            let text = glockparse_text(path);
            for line in text.split(|&b| b == b'\n') {
                let t = line.trim_ascii_start();
                let Some((tag, body)) = t.split_at_checked(2) else {
                    continue;
                };
                checked += 1;
                fast += u64::from(match tag {
                    b"G:" => same_glock(body, path),
                    b"H:" => same_holder(body, &mut interner, path),
                    b"I:" => same_inode(body, path),
                    _ => false,
                });
            }
        }
        // 47,109 of 50,107 tagged lines in 206 files when this was written.
        assert!(
            fast > 40_000,
            "{fast} fast lines of {checked} in {} files",
            files.len()
        );
    }

    /// A fixture's bytes, decompressed when it is compressed.
    fn glockparse_text(path: &std::path::Path) -> Vec<u8> {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut crate::input::open(path).unwrap(), &mut v).unwrap();
        v
    }

    fn same_glock(body: &[u8], path: &std::path::Path) -> bool {
        let mut g = Glock::default();
        if glock_line_fast(body, &mut g).is_none() {
            return false;
        }
        let mut general = Glock::default();
        glock_line_general(body, &mut general).unwrap();
        assert_eq!(g, general, "{}: G:{}", path.display(), lossy(body));
        true
    }

    fn same_holder(body: &[u8], interner: &mut Interner, path: &std::path::Path) -> bool {
        let Some(fast) = holder_line_fast(body, interner) else {
            return false;
        };
        let general = holder_line_general(body, interner);
        assert_eq!(fast, general, "{}: H:{}", path.display(), lossy(body));
        true
    }

    fn same_inode(body: &[u8], path: &std::path::Path) -> bool {
        let Some(fast) = inode_line_fast(body) else {
            return false;
        };
        assert_eq!(
            Ok(fast),
            inode_line_general(body),
            "{}: I:{}",
            path.display(),
            lossy(body)
        );
        true
    }

    #[test]
    fn offsets_are_found_wherever_they_are() {
        for (tok, want) in [
            (&b"gfs2_glock_nq+0x56/0xe0"[..], true),
            (b"+0x", true),
            (b"a++0x1", true),
            (b"a+0+0x1", true),
            (b"a+0", false),
            (b"a+", false),
            (b"a+x0x", false),
            (b"0x12", false),
            (b"", false),
        ] {
            assert_eq!(has_offset(tok), want, "{}", String::from_utf8_lossy(tok));
            assert_eq!(has_offset(tok), tok.windows(3).any(|w| w == b"+0x"));
        }
    }

    fn holder(s: &str) -> Holder {
        holder_line(s.as_bytes(), &mut Interner::default()).unwrap()
    }

    #[test]
    fn holder_caller_forms() {
        let h = holder("s:EX f:H e:0 p:4466 [dd] gfs2_file_write_iter+0x134/0x3a0 [gfs2]");
        assert_eq!(
            (&*h.comm, &*h.caller),
            ("dd", "gfs2_file_write_iter+0x134/0x3a0 [gfs2]")
        );
        assert_eq!(h.caller_function(), "gfs2_file_write_iter");
        let h =
            holder("s:EX f:nW e:0 p:6072 [syz.0.21] alloc_dinode+0x16a/0x550 fs/gfs2/inode.c:414");
        assert_eq!(&*h.caller, "alloc_dinode+0x16a/0x550 fs/gfs2/inode.c:414");
        let h = holder("s:EX f:H e:0 p:0 [(none)] get_tree_bdev+0x133/0x1d0");
        assert_eq!(
            (&*h.comm, &*h.caller),
            ("(none)", "get_tree_bdev+0x133/0x1d0")
        );
        assert!(h.pid_meaningless());
        let h = holder("s:SH f:W e:0 p:12 [a b] c]] 0xffffffffc04b621e");
        assert_eq!((&*h.comm, &*h.caller), ("a b] c]", "0xffffffffc04b621e"));
        let h = holder("s:SH f:W e:-5 p:-1 [(ended)]");
        assert_eq!(
            (h.pid, h.error, &*h.comm, &*h.caller),
            (-1, -5, "(ended)", "")
        );
    }

    #[test]
    fn holder_errors() {
        let mut i = Interner::default();
        assert!(holder_line(b"s:EX f:H e:0 [dd] x", &mut i).is_err());
        assert!(holder_line(b"s:EX f:H e:0 p:1 dd x", &mut i).is_err());
        assert!(holder_line(b"s:XX f:H e:0 p:1 [dd] x", &mut i).is_err());
        assert!(holder_line(b"s:EX f:H e:0 p:1 [dd x", &mut i).is_err());
    }

    #[test]
    fn glock_line_fields_and_extras() {
        let mut g = Glock::default();
        glock_line(
            b" s:EX n:2/203e5 f:yfIqob t:EX d:UN/2368172000 a:0 v:0 r:-128 m:200 p:1 z:9 <--root",
            &mut g,
        )
        .unwrap();
        assert_eq!(g.id, GlockId::new(2, 0x203e5));
        assert_eq!(g.demote_state, LockState::Unlocked);
        assert_eq!(g.demote_us, 2368172000);
        assert_eq!(g.refs, -128);
        assert_eq!(g.nrpages, Some(1));
        assert_eq!(g.extra.len(), 2);
        assert_eq!((&*g.extra[0].key, &*g.extra[0].value), ("z", "9"));
        let mut g = Glock::default();
        glock_line(b"  s:UN n:2/819 f: t:UN d:EX/0 a:0 v:0 r:-128 m:20", &mut g).unwrap();
        assert!(g.flags.is_empty());
        assert_eq!(g.nrpages, None);
        assert!(glock_line(b" s:EX f:q", &mut Glock::default()).is_err());
        assert!(glock_line(b" s:EX n:2/zz", &mut Glock::default()).is_err());
    }

    #[test]
    fn object_lines() {
        let i = inode_line(b" n:37/132069 t:8 f:0x00 d:0x00000000 s:1048576 p:256").unwrap();
        assert_eq!(
            (i.formal_ino, i.addr, i.size, i.nrpages),
            (37, 132069, 1048576, Some(256))
        );
        assert_eq!(i.file_type(), "file");
        let r = rgrp_line(b" n:17 f:90000000 b:61231/61230 i:12 q:0 r:0 e:61231").unwrap();
        assert_eq!(
            (r.addr, r.flags, r.free_clone, r.requested),
            (17, 0x90000000, 61230, Some(0))
        );
        let b = reservation_line(b" n:132069 s:524401 f:64").unwrap();
        assert_eq!(
            (b.inode, b.start, b.bit_offset, b.free),
            (132069, 524401, None, 64)
        );
        let l = lvb_line(b" f:00 b:38623 i:12").unwrap();
        assert_eq!((l.free, l.dinodes), (38623, 12));
    }
}
