//! What counting and ranking need from a glock record, read without building the record.
//!
//! A file of a million glocks is mostly records nobody will look at: a summary needs the
//! state, type and holder counts of every glock, a ranking needs a few numbers more, and
//! only the few glocks kept need everything. [`skim`] reads one record in the kernel's
//! exact debugfs layout, checking every byte the full parser would check but keeping only
//! a [`Brief`]; anything it does not recognise exactly is left to the full parser, so a
//! malformed line is still reported as the full parser reports it.

use crate::flags::{GlockFlags, LetterSet};
use crate::id::{GlockId, GlockType};
use crate::parse::holder_tail_split;
use crate::record::Glock;
use crate::state::LockState;

/// The part of a glock record that counting and ranking need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Brief {
    pub id: GlockId,
    /// The state the glock is in (`s:`).
    pub state: LockState,
    pub flags: GlockFlags,
    /// How long ago a demote was requested, µs (`d:STATE/µs`).
    pub demote_us: u64,
    /// Reference count (`r:`).
    pub refs: i64,
    /// `H:` lines.
    pub holders: u32,
    /// Holders waiting (`W`).
    pub waiters: u32,
    /// Holders granted (`H`).
    pub granted: u32,
    /// Line number of the `G:` line (1-based).
    pub line: u64,
}

impl Brief {
    /// The brief of a full record.
    pub fn of(g: &Glock) -> Brief {
        Brief {
            id: g.id,
            state: g.state,
            flags: g.flags,
            demote_us: g.demote_us,
            refs: g.refs,
            holders: u32::try_from(g.holders.len()).unwrap_or(u32::MAX),
            waiters: u32::try_from(g.waiter_count()).unwrap_or(u32::MAX),
            granted: u32::try_from(g.granted_count()).unwrap_or(u32::MAX),
            line: g.line,
        }
    }

    pub fn glock_type(&self) -> GlockType {
        self.id.glock_type()
    }

    /// As [`Glock::demote_requested`].
    pub fn demote_requested(&self) -> bool {
        self.flags.demote_activity() || self.demote_us > 0
    }
}

/// Reads the record that starts at `text[at..]` with a `G: ` line and ends before the
/// next line that starts with `G: ` (or at the end of `text`). Every line must be a `G:`,
/// `H:` or `I:` line in the kernel's exact layout (the layout the full parser reads on
/// its fast path, which then cannot fail): otherwise `None`. Returns the brief (its
/// `line` left 0), where the record ends (after its last `\n`) and how many lines it has.
pub fn skim(text: &[u8], at: usize) -> Option<(Brief, usize, u64)> {
    let mut i = at;
    let mut b = Brief::default();
    glock_line(text, &mut i, &mut b)?;
    let mut lines = 1;
    loop {
        if i >= text.len() {
            return Some((b, i, lines));
        }
        match text.get(i..i + 4) {
            Some(b" H: ") => {
                i += 3;
                let flags = holder_line(text, &mut i)?;
                b.holders += 1;
                b.waiters += u32::from(flags.contains('W'));
                b.granted += u32::from(flags.contains('H'));
            }
            Some(b" I: ") => {
                i += 3;
                inode_line(text, &mut i)?;
            }
            Some([b'G', b':', b' ', _]) => return Some((b, i, lines)),
            _ => return None,
        }
        lines += 1;
    }
}

/// `G:  s:%s n:%u/%llx f:%s t:%s d:%s/%llu a:%d v:%d r:%d m:%ld[ p:%lu]\n`.
#[inline]
fn glock_line(s: &[u8], i: &mut usize, b: &mut Brief) -> Option<()> {
    lit(s, i, b"G:")?;
    spaces(s, i);
    lit(s, i, b"s:")?;
    b.state = state(s, i)?;
    lit(s, i, b" n:")?;
    let gltype = digits(s, i, 9)?;
    lit(s, i, b"/")?;
    let number = hex(s, i)?;
    b.id = GlockId::new(gltype as u32, number);
    lit(s, i, b" f:")?;
    b.flags = GlockFlags(letters(s, i)?);
    lit(s, i, b" t:")?;
    state(s, i)?;
    lit(s, i, b" d:")?;
    state(s, i)?;
    lit(s, i, b"/")?;
    b.demote_us = digits(s, i, 19)?;
    lit(s, i, b" a:")?;
    skip_int(s, i)?;
    lit(s, i, b" v:")?;
    skip_int(s, i)?;
    lit(s, i, b" r:")?;
    b.refs = int(s, i)?;
    lit(s, i, b" m:")?;
    skip_int(s, i)?;
    if lit(s, i, b" p:").is_some() {
        skip_digits(s, i)?;
    }
    line_end(s, i)
}

/// ` H: s:%s f:%s e:%d p:%ld [%s] %pS\n` (after ` H:`); the comm and caller as the full
/// parser splits them.
#[inline]
fn holder_line(s: &[u8], i: &mut usize) -> Option<LetterSet> {
    spaces(s, i);
    lit(s, i, b"s:")?;
    state(s, i)?;
    lit(s, i, b" f:")?;
    let flags = letters(s, i)?;
    lit(s, i, b" e:")?;
    skip_int(s, i)?;
    lit(s, i, b" p:")?;
    skip_int(s, i)?;
    lit(s, i, b" [")?;
    let rest = &s[*i..];
    let end = crate::scan::find_short(b'\n', rest).unwrap_or(rest.len());
    let tail = &rest[..end];
    // The full parser sees the line without trailing white space: leave such lines to it.
    if tail.last().is_some_and(u8::is_ascii_whitespace) {
        return None;
    }
    holder_tail_split(tail)?;
    *i += (end + 1).min(rest.len());
    Some(flags)
}

/// ` I: n:%llu/%llu t:%u f:0x%02lx d:0x%08x s:%llu[ p:%lu]\n` (after ` I:`).
#[inline]
fn inode_line(s: &[u8], i: &mut usize) -> Option<()> {
    spaces(s, i);
    lit(s, i, b"n:")?;
    skip_digits(s, i)?;
    lit(s, i, b"/")?;
    skip_digits(s, i)?;
    lit(s, i, b" t:")?;
    skip_digits(s, i)?;
    lit(s, i, b" f:0x")?;
    hex(s, i)?;
    lit(s, i, b" d:0x")?;
    hex(s, i)?;
    lit(s, i, b" s:")?;
    skip_digits(s, i)?;
    if lit(s, i, b" p:").is_some() {
        skip_digits(s, i)?;
    }
    line_end(s, i)
}

#[inline(always)]
fn lit<const N: usize>(s: &[u8], i: &mut usize, l: &[u8; N]) -> Option<()> {
    if s.get(*i..*i + N)? == l {
        *i += N;
        Some(())
    } else {
        None
    }
}

#[inline(always)]
fn spaces(s: &[u8], i: &mut usize) {
    while s.get(*i) == Some(&b' ') {
        *i += 1;
    }
}

/// The end of a line: `\n` (consumed) or the end of the text.
#[inline(always)]
fn line_end(s: &[u8], i: &mut usize) -> Option<()> {
    match s.get(*i) {
        None => Some(()),
        Some(b'\n') => {
            *i += 1;
            Some(())
        }
        Some(_) => None,
    }
}

#[inline(always)]
fn state(s: &[u8], i: &mut usize) -> Option<LockState> {
    let w = s.get(*i..*i + 2)?;
    let st = match u16::from_le_bytes([w[0], w[1]]) {
        x if x == u16::from_le_bytes(*b"EX") => LockState::Exclusive,
        x if x == u16::from_le_bytes(*b"SH") => LockState::Shared,
        x if x == u16::from_le_bytes(*b"UN") => LockState::Unlocked,
        x if x == u16::from_le_bytes(*b"DF") => LockState::Deferred,
        x if x == u16::from_le_bytes(*b"??") => LockState::Unknown,
        _ => return None,
    };
    *i += 2;
    Some(st)
}

/// 1 to `max` decimal digits (`max` ≤ 19, so the value cannot overflow).
#[inline(always)]
fn digits(s: &[u8], i: &mut usize, max: usize) -> Option<u64> {
    let start = *i;
    let mut v: u64 = 0;
    while let Some(&c) = s.get(*i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        *i += 1;
    }
    let n = *i - start;
    (1..=max).contains(&n).then_some(v)
}

/// Skips 1 to 19 decimal digits whose value is not needed.
#[inline(always)]
fn skip_digits(s: &[u8], i: &mut usize) -> Option<()> {
    let n = digit_run(s, *i);
    *i += n;
    (1..=19).contains(&n).then_some(())
}

/// How many ASCII digits start at `s[at..]`.
#[inline(always)]
fn digit_run(s: &[u8], at: usize) -> usize {
    let mut n = 0;
    while s.get(at + n).is_some_and(u8::is_ascii_digit) {
        n += 1;
    }
    n
}

/// Skips an optional `-` and 1 to 18 digits (always an `i64`).
#[inline(always)]
fn skip_int(s: &[u8], i: &mut usize) -> Option<()> {
    *i += usize::from(s.get(*i) == Some(&b'-'));
    let n = digit_run(s, *i);
    *i += n;
    (1..=18).contains(&n).then_some(())
}

/// An optional `-` and 1 to 18 digits: always an `i64`.
#[inline(always)]
fn int(s: &[u8], i: &mut usize) -> Option<i64> {
    let neg = s.get(*i) == Some(&b'-');
    *i += usize::from(neg);
    let v = digits(s, i, 18)? as i64;
    Some(if neg { -v } else { v })
}

/// 1 to 16 hex digits.
#[inline(always)]
fn hex(s: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut v: u64 = 0;
    while let Some(&c) = s.get(*i) {
        let Some(d) = crate::cursor::hex_digit(c) else {
            break;
        };
        // Digits shifted out do not matter: a run of over 16 is refused below.
        v = (v << 4) | u64::from(d);
        *i += 1;
    }
    (1..=16).contains(&(*i - start)).then_some(v)
}

/// Flag letters up to the next space: printable, as [`LetterSet::parse`] takes them.
#[inline(always)]
fn letters(s: &[u8], i: &mut usize) -> Option<LetterSet> {
    let mut bits = 0u128;
    while let Some(&c) = s.get(*i) {
        if c == b' ' {
            break;
        }
        if !c.is_ascii_graphic() {
            return None;
        }
        bits |= 1u128 << c;
        *i += 1;
    }
    Some(LetterSet::from_bits(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_runs_at_every_length_and_offset() {
        for len in 0..20 {
            for pad in 0..9 {
                for stop in [b' ', b'/', b':', b'\n', 0xff, 0xfa, b'a'] {
                    let mut s = vec![b'x'; pad];
                    s.extend((0..len).map(|k| b'0' + (k % 10) as u8));
                    s.push(stop);
                    s.extend(b"99999999");
                    assert_eq!(digit_run(&s, pad), len, "len {len} pad {pad} stop {stop}");
                    assert_eq!(digit_run(&s[..pad + len], pad), len);
                }
            }
        }
    }

    #[test]
    fn digits_stop_where_a_number_could_overflow() {
        let mut i = 0;
        assert_eq!(digits(b"18446744073709551615", &mut i, 19), None);
        let mut i = 0;
        assert_eq!(
            digits(b"9999999999999999999x", &mut i, 19),
            Some(9_999_999_999_999_999_999)
        );
        assert_eq!(i, 19);
        let mut i = 0;
        assert_eq!(
            int(b"-999999999999999999", &mut i),
            Some(-999_999_999_999_999_999)
        );
        let mut i = 0;
        assert_eq!(int(b"-", &mut i), None);
    }

    #[test]
    fn a_record_in_the_kernel_layout_is_skimmed() {
        let text = b"G:  s:EX n:2/203e5 f:yfIqob t:EX d:UN/12 a:0 v:0 r:4 m:200 p:1\n\
            \x20H: s:EX f:H e:0 p:4466 [dd] gfs2_file_write_iter+0x134/0x3a0 [gfs2]\n\
            \x20H: s:SH f:W e:0 p:4470 [cat] gfs2_open_common+0x5c/0x1a0 [gfs2]\n\
            \x20I: n:37/132069 t:8 f:0x00 d:0x00000000 s:1048576 p:256\n\
            G:  s:UN n:3/11 f: t:UN d:EX/0 a:0 v:0 r:-1 m:200\n";
        let (b, end, lines) = skim(text, 0).unwrap();
        assert_eq!(
            (b.id, b.state, b.demote_us, b.refs),
            (GlockId::new(2, 0x203e5), LockState::Exclusive, 12, 4)
        );
        assert_eq!((b.holders, b.waiters, b.granted, lines), (2, 1, 1, 4));
        assert!(text[end..].starts_with(b"G:  s:UN"));
        let (b, end, lines) = skim(text, end).unwrap();
        assert_eq!(
            (b.refs, b.flags, end, lines),
            (-1, GlockFlags::default(), text.len(), 1)
        );
        assert!(skim(b"G:  s:UN n:3/11 f: t:UN d:EX/0 a:0 v:0 r:-1 m:200 \n", 0).is_none());
    }
}
