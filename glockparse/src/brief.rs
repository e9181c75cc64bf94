//! What counting and ranking need from a glock record, read without building the record.
//!
//! A file of a million glocks is mostly records nobody will look at: a summary needs the
//! state, type and holder counts of every glock, a ranking needs a few numbers more, and
//! only the few glocks kept need everything. [`Skimmer::skim_run`] reads records in the
//! kernel's exact debugfs layout, checking every byte the full parser would check but
//! keeping only a [`Brief`]; anything it does not recognise exactly is left to the full
//! parser, so a malformed line is still reported as the full parser reports it.
//!
//! Three things make the skim cheap, none of them at the cost of a byte unchecked:
//! - lines that fit in 64 bytes are checked a field at a time through bit masks of their
//!   bytes' classes (AVX2, detected at run time; other CPUs read a byte at a time);
//! - numbers are read without a loop, and a `G:` line's head (`G:  s:SH n:5/`, the same
//!   13 bytes but for state and type) as two words;
//! - a [`Skimmer`] remembers line tails it read and what they said: a line whose text
//!   after its numbers is one of them byte for byte is known at once (for an `I:` line,
//!   its text up to the size, which is read every time). Dumps repeat themselves: 96-99%
//!   of the `G:`, `I:` and `H:` lines of the larger real fixtures do. `G:` tails are kept
//!   by a hash of their bytes, since a dump has a dozen common ones; `I:` and `H:` tails
//!   the last four, since those come in runs.

use crate::flags::{GlockFlags, LetterSet};
use crate::id::{GlockId, GlockType};
use crate::lines::MAX_LINE;
use crate::parse::holder_tail_split;
use crate::record::Glock;
use crate::state::LockState;
use crate::window::{below, has_run_of_17, Classes};

/// The part of a glock record that counting and ranking need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Brief {
    /// The glock.
    pub id: GlockId,
    /// The state the glock is in (`s:`).
    pub state: LockState,
    /// Its flags.
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

    /// The glock's type.
    pub fn glock_type(&self) -> GlockType {
        self.id.glock_type()
    }

    /// As [`Glock::demote_requested`].
    pub fn demote_requested(&self) -> bool {
        self.flags.demote_activity() || self.demote_us > 0
    }
}

/// Reads records ([`Skimmer::skim_run`]), remembering what it read between them.
///
/// The records of a dump repeat themselves: every cached inode's iopen glock reads
/// `s:SH ... f:Iqob t:SH d:EX/0 a:0 v:0 r:3 m:200 p:0` after its number, and is held by
/// the same ` H: s:SH f:EH e:0 p:0 [(none)] gfs2_inode_lookup+0x253/0x3c0 [gfs2]`. So the
/// skimmer keeps line tails it read whole (the text after a line's numbers, through its
/// `\n`; for `I:` lines through ` s:`, since sizes vary) with what it found there; a tail
/// equal to one of them byte for byte is known without reading it again.
#[derive(Debug, Default, Clone)]
pub struct Skimmer {
    /// `G:` lines after the glock number, by their bytes: a dump's glocks have a dozen
    /// common tails, more than the last few.
    glocks: Hashed<GlockTail>,
    /// `I:` lines after `n:FORMAL/ADDR` through ` s:`: a dump's inodes share their type
    /// and flags far more than their sizes and page counts, which are read every time.
    inodes: Tails<()>,
    /// `H:` lines whole.
    holders: Tails<LetterSet>,
}

impl Skimmer {
    /// Skims record after record from `text[at..]`, calling `f(brief, start, end, lines)`
    /// with each (the brief's `line` left 0; `end` after the record's last `\n`); returns
    /// where the first record it could not skim starts (or the end of `text`). A record
    /// starts with a `G: ` line and ends before the next line that starts with `G: ` (or at
    /// the end of `text`). It is skimmed when every line is a `G:`, `H:` or `I:` line in
    /// the kernel's exact layout (the layout the full parser reads on its fast path, which
    /// then cannot fail) and the record is no longer than a line may be ([`MAX_LINE`]: the
    /// line reader cuts longer ones). One call for a run of records saves the cost of a
    /// call for each (a tenth of the skim's instructions).
    pub fn skim_run(
        &mut self,
        text: &[u8],
        at: usize,
        mut f: impl FnMut(Brief, usize, usize, u64),
    ) -> usize {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: the CPU has what `run_avx2` needs.
            return unsafe { run_avx2(text, at, self, &mut f) };
        }
        run_with::<Bytes, _>(text, at, self, &mut f)
    }
}

/// [`Skimmer::skim_run`] with lines classified by `C`.
#[inline(always)]
fn run_with<C: Classifier, F: FnMut(Brief, usize, usize, u64)>(
    text: &[u8],
    mut at: usize,
    seen: &mut Skimmer,
    f: &mut F,
) -> usize {
    while text[at..].starts_with(b"G: ") {
        let Some((b, end, lines)) = skim_with::<C>(text, at, seen) else {
            break;
        };
        f(b, at, end, lines);
        at = end;
    }
    at
}

/// [`Skimmer::skim_run`] with [`Classes::avx2`].
///
/// # Safety
/// The CPU must have AVX2, BMI1 and POPCNT ([`has_avx2`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,popcnt")]
unsafe fn run_avx2<F: FnMut(Brief, usize, usize, u64)>(
    text: &[u8],
    at: usize,
    seen: &mut Skimmer,
    f: &mut F,
) -> usize {
    run_with::<Avx2, F>(text, at, seen, f)
}

/// A record's holders counted. The skim keeps what it reads in parts ([`GlockHead`],
/// [`GlockTail`], [`Held`]) and makes the [`Brief`] once, when the record ends: a brief
/// written field by field and then copied whole is read back right after narrow writes
/// to it, a store the processor cannot forward (it had cost 7% of the skim, and zeroing
/// a brief for each record 13% of its samples).
#[derive(Default, Clone, Copy)]
struct Held {
    holders: u32,
    waiters: u32,
    granted: u32,
}

impl Held {
    #[inline(always)]
    fn add(&mut self, flags: LetterSet) {
        self.holders += 1;
        self.waiters += u32::from(flags.contains('W'));
        self.granted += u32::from(flags.contains('H'));
    }
}

impl Brief {
    /// The brief made of the parts of a record the skim read.
    #[inline(always)]
    fn of_parts(g: GlockHead, t: GlockTail, h: Held) -> Brief {
        Brief {
            id: g.id,
            state: g.state,
            flags: t.flags,
            demote_us: t.demote_us,
            refs: t.refs,
            holders: h.holders,
            waiters: h.waiters,
            granted: h.granted,
            line: 0,
        }
    }
}

/// What a `G:` line says up to the end of the glock number.
#[derive(Debug, Clone, Copy)]
struct GlockHead {
    id: GlockId,
    state: LockState,
}

/// What a `G:` line's text after the glock number says.
#[derive(Debug, Default, Clone, Copy)]
struct GlockTail {
    flags: GlockFlags,
    demote_us: u64,
    refs: i64,
}

/// What skimming a record gives: the brief, where the record ends and its lines, or `None`
/// (see [`Skimmer::skim_run`]).
type Skimmed = Option<(Brief, usize, u64)>;

/// Longer line tails are not kept by [`Tails`].
const LONGEST_TAIL: usize = 128;

/// The last [`Tails::KEPT`] line tails (or parts of lines) read whole, each with what was
/// found in it.
#[derive(Debug, Clone)]
struct Tails<T> {
    /// The tails, each in the first `len[k]` bytes; `len[k]` 0 when none is kept there.
    text: [[u8; LONGEST_TAIL]; 4],
    len: [u8; 4],
    found: [T; 4],
    /// Where the next tail goes (the oldest is replaced).
    next: usize,
    /// The tail found or kept last.
    last: usize,
}

impl<T: Default + Copy> Default for Tails<T> {
    fn default() -> Self {
        Tails {
            text: [[0; LONGEST_TAIL]; 4],
            len: [0; 4],
            found: [T::default(); 4],
            next: 0,
            last: 0,
        }
    }
}

impl<T: Copy> Tails<T> {
    const KEPT: usize = 4;

    /// What was found in the tail `rest` starts with, and its length, if it is one kept.
    /// The tail found last is tried first, then the others in turn: a run of lines alike
    /// is then found at the first compare (on the bench's file, `I:` and `H:` lines took
    /// 2.5 compares each in slot order, 1.1-1.3 so).
    #[inline(always)]
    fn find<C: Classifier>(&mut self, rest: &[u8]) -> Option<(T, usize)> {
        let (t, len, k) = (0..Self::KEPT).find_map(|j| {
            let k = (self.last + j) % Self::KEPT;
            let len = usize::from(self.len[k]);
            (len > 0 && C::starts_with(rest, &self.text[k], len)).then_some((self.found[k], len, k))
        })?;
        self.last = k;
        Some((t, len))
    }

    /// What the line at `text[*i..]` says, its tail starting at `text[tail..]`: what a
    /// kept tail says (`i` moved past the tail), or else what `read` reads from the line's
    /// start (moving `i` itself to the tail's end), the tail then kept by `keep`:
    /// [`Tails::keep`] when the tail ends the line, [`Tails::keep_part`] when the rest of
    /// the line follows it and is read every time.
    #[inline(always)]
    fn recall_or_read<C: Classifier>(
        &mut self,
        text: &[u8],
        i: &mut usize,
        tail: usize,
        keep: fn(&mut Self, &[u8], T),
        read: impl FnOnce(&mut usize) -> Option<T>,
    ) -> Option<T> {
        if let Some((t, len)) = self.find::<C>(&text[tail..]) {
            *i = tail + len;
            return Some(t);
        }
        let t = read(i)?;
        keep(self, &text[tail..*i], t);
        Some(t)
    }

    /// Keeps `tail`, just read whole, with what was found in it: only a whole line's
    /// tail, ending with `\n` (a tail at the end of the text could be a line cut short).
    #[inline(always)]
    fn keep(&mut self, tail: &[u8], found: T) {
        if tail.last() == Some(&b'\n') {
            self.keep_part(tail, found);
        }
    }

    /// Keeps `part` of a line, just read, with what was found in it: text that the rest
    /// of the line, read every time, follows (so it need not end the line).
    #[inline(always)]
    fn keep_part(&mut self, part: &[u8], found: T) {
        if part.len() <= LONGEST_TAIL {
            let k = self.next;
            self.text[k][..part.len()].copy_from_slice(part);
            self.len[k] = part.len() as u8;
            self.found[k] = found;
            self.next = (k + 1) % Self::KEPT;
            self.last = k;
        }
    }
}

/// A line of at most 64 bytes (a line's tail, from where it starts through its `\n`),
/// with zeros after it: two such lines are the same line exactly when their 64 bytes are
/// equal.
#[derive(Clone, Copy)]
struct ShortLine {
    bytes: [u8; 64],
    /// Through the `\n`.
    len: usize,
}

impl ShortLine {
    /// The line `rest` starts with, if its `\n` is among its first 64 bytes.
    #[inline(always)]
    fn of(rest: &[u8]) -> Option<ShortLine> {
        let end = memchr::memchr(b'\n', &rest[..rest.len().min(64)])?;
        let mut bytes = [0; 64];
        bytes[..=end].copy_from_slice(&rest[..=end]);
        Some(ShortLine {
            bytes,
            len: end + 1,
        })
    }

    /// The set of two places in a [`Hashed`] where the line may be kept.
    #[inline(always)]
    fn set(&self) -> usize {
        let folded = self.bytes.chunks_exact(8).fold(0u64, |h, w| {
            h ^ u64::from_le_bytes(w.try_into().unwrap_or_default())
        });
        (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - Hashed::<()>::SET_BITS)) as usize
    }
}

/// Lines of at most 64 bytes ([`ShortLine`]) read whole, each with what was found in it,
/// kept in one of the two places its bytes hash to (the one used less recently is
/// replaced). Unlike [`Tails`], it keeps as many different lines as a dump commonly has,
/// and finds most at the first compare.
#[derive(Debug, Clone)]
struct Hashed<T> {
    /// Zeros where none is kept: no line, which holds a `\n`, equals them.
    lines: [[u8; 64]; 2 << Hashed::<()>::SET_BITS],
    found: [T; 2 << Hashed::<()>::SET_BITS],
    /// The place in each set found or kept last.
    recent: [u8; 1 << Hashed::<()>::SET_BITS],
}

impl<T: Default + Copy> Default for Hashed<T> {
    fn default() -> Self {
        Hashed {
            lines: [[0; 64]; 2 << Hashed::<()>::SET_BITS],
            found: [T::default(); 2 << Hashed::<()>::SET_BITS],
            recent: [0; 1 << Hashed::<()>::SET_BITS],
        }
    }
}

impl<T: Copy> Hashed<T> {
    /// 32 sets of two.
    const SET_BITS: u32 = 5;

    /// What was found in `line`, if it is kept: the place in its set found or kept last
    /// is tried first.
    #[inline(always)]
    fn find(&mut self, line: &ShortLine) -> Option<T> {
        let set = line.set();
        // `& 1` (it is 0 or 1 anyway) lets the compiler see `k` within the set: no bounds check.
        let mut k = 2 * set + usize::from(self.recent[set] & 1);
        if self.lines[k] != line.bytes {
            k ^= 1;
            if self.lines[k] != line.bytes {
                return None;
            }
            self.recent[set] = (k % 2) as u8;
        }
        Some(self.found[k])
    }

    /// Keeps `line`, just read whole, with what was found in it.
    #[inline(always)]
    fn keep(&mut self, line: &ShortLine, found: T) {
        let set = line.set();
        let k = 2 * set + 1 - usize::from(self.recent[set]);
        self.lines[k] = line.bytes;
        self.found[k] = found;
        self.recent[set] = (k % 2) as u8;
    }
}

/// Whether the CPU has what [`run_avx2`] needs (the check is cached by `std`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("bmi1")
        && std::is_x86_feature_detected!("popcnt")
}

/// How a record's lines are read: with vector instructions ([`Avx2`]) or a byte at a time
/// ([`Bytes`]). Each way reads exactly what the other reads (the tests hold them to it).
trait Classifier {
    /// The [`Classes`] of the 64 bytes at `text[at..]`, or `None` to read the line a byte
    /// at a time.
    fn classes(text: &[u8], at: usize) -> Option<(&[u8; 64], Classes)>;

    /// Whether `rest` starts with the first `len` bytes of `kept`.
    #[inline(always)]
    fn starts_with(rest: &[u8], kept: &[u8; LONGEST_TAIL], len: usize) -> bool {
        rest.starts_with(&kept[..len])
    }

    /// As [`ShortLine::of`].
    #[inline(always)]
    fn short_line(rest: &[u8]) -> Option<ShortLine> {
        ShortLine::of(rest)
    }

    /// As [`hex`].
    #[inline(always)]
    fn hex(s: &[u8], i: &mut usize) -> Option<u64> {
        hex(s, i)
    }

    /// As [`skip_digits`].
    #[inline(always)]
    fn skip_digits(s: &[u8], i: &mut usize) -> Option<()> {
        skip_digits(s, i)
    }
}

/// Every line a byte at a time.
struct Bytes;

impl Classifier for Bytes {
    #[inline(always)]
    fn classes(_: &[u8], _: usize) -> Option<(&[u8; 64], Classes)> {
        None
    }
}

/// Lines with 64 bytes after their start classified by [`Classes::avx2`]; only ever
/// used where the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Classifier for Avx2 {
    #[inline(always)]
    fn classes(text: &[u8], at: usize) -> Option<(&[u8; 64], Classes)> {
        let w = text.get(at..at + 64)?.first_chunk()?;
        // SAFETY: `Avx2` is only used by `run_avx2`, which runs where the CPU has AVX2.
        Some((w, unsafe { Classes::avx2(w) }))
    }

    #[inline(always)]
    fn starts_with(rest: &[u8], kept: &[u8; LONGEST_TAIL], len: usize) -> bool {
        // SAFETY: as above.
        unsafe { crate::window::starts_with_avx2(rest, kept, len) }
    }

    #[inline(always)]
    fn short_line(rest: &[u8]) -> Option<ShortLine> {
        let Some(w) = rest.first_chunk() else {
            return ShortLine::of(rest);
        };
        // SAFETY: as above.
        let (bytes, len) = unsafe { crate::window::short_line_avx2(w) }?;
        Some(ShortLine { bytes, len })
    }

    #[inline(always)]
    fn hex(s: &[u8], i: &mut usize) -> Option<u64> {
        let Some(w) = s.get(*i..*i + 32).and_then(<[u8]>::first_chunk) else {
            return hex(s, i);
        };
        // SAFETY: as above.
        let (v, n) = unsafe { crate::window::hex_prefix_avx2(w) };
        *i += n as usize;
        (1..=16).contains(&n).then_some(v)
    }

    #[inline(always)]
    fn skip_digits(s: &[u8], i: &mut usize) -> Option<()> {
        let Some(w) = s.get(*i..*i + 32).and_then(<[u8]>::first_chunk) else {
            return skip_digits(s, i);
        };
        // SAFETY: as above.
        let n = unsafe { crate::window::digit_prefix_avx2(w) };
        *i += n as usize;
        (1..=19).contains(&n).then_some(())
    }
}

/// Lines classified a byte at a time by [`Classes::of`] and checked through the classes as
/// [`Avx2`] checks them: the window checks, tested on every CPU.
#[cfg(test)]
struct Portable;

#[cfg(test)]
impl Classifier for Portable {
    fn classes(text: &[u8], at: usize) -> Option<(&[u8; 64], Classes)> {
        let w = text.get(at..at + 64)?.first_chunk()?;
        Some((w, Classes::of(w)))
    }
}

/// One record of [`Skimmer::skim_run`], the one at `text[at..]`, its lines read as `C`
/// reads them.
#[inline(always)]
fn skim_with<C: Classifier>(text: &[u8], at: usize, seen: &mut Skimmer) -> Skimmed {
    let mut i = at;
    // The `G:` line. A line whose head does not read cannot read whole either.
    let mut j = i;
    let g = glock_head::<C>(text, &mut j)?;
    let head = j - i;
    let read = |i: &mut usize| match C::classes(text, *i)
        .and_then(|(w, c)| glock_line_window(w, &c, head))
    {
        Some((t, len)) => {
            *i += len;
            Some(t)
        }
        None => {
            *i += head;
            glock_tail(text, i)
        }
    };
    let t = match C::short_line(&text[j..]) {
        Some(tail) => match seen.glocks.find(&tail) {
            Some(t) => {
                i = j + tail.len;
                t
            }
            None => {
                let t = read(&mut i)?;
                if i == j + tail.len {
                    seen.glocks.keep(&tail, t);
                }
                t
            }
        },
        None => read(&mut i)?,
    };
    let mut lines = 1;
    let mut held = Held::default();
    // A record longer than a line may be is left to the line reader, which cuts overlong
    // lines (such a record is malformed anyway).
    let whole = |i: usize| i - at <= MAX_LINE;
    loop {
        if i >= text.len() {
            return whole(i).then(|| (Brief::of_parts(g, t, held), i, lines));
        }
        match text.get(i..i + 4) {
            Some(b" H: ") => {
                // The whole line is the tail.
                let start = i;
                let flags =
                    seen.holders
                        .recall_or_read::<C>(text, &mut i, start, Tails::keep, |i| {
                            *i += 3;
                            holder_line(text, i)
                        })?;
                held.add(flags);
            }
            Some(b" I: ") => {
                let mut j = i + 3;
                inode_head::<C>(text, &mut j)?;
                let head = j - i;
                // Through ` s:` as kept, or else read and kept; the numbers after it read.
                seen.inodes
                    .recall_or_read::<C>(text, &mut i, j, Tails::keep_part, |i| {
                        *i = match C::classes(text, *i)
                            .and_then(|(w, c)| inode_line_window(w, &c, head))
                        {
                            Some(at) => *i + at,
                            None => {
                                let mut k = j;
                                inode_fields(text, &mut k)?;
                                k
                            }
                        };
                        Some(())
                    })?;
                inode_sizes::<C>(text, &mut i)?;
            }
            Some([b'G', b':', b' ', _]) => {
                return whole(i).then(|| (Brief::of_parts(g, t, held), i, lines));
            }
            _ => return None,
        }
        lines += 1;
    }
}

/// Where each field of a line starts (the space before it), found from the window's
/// spaces from `from` on: `n` fields, and at `[n]` where the line ends (the `\n`).
/// `None` unless there are `min` to `keys.len()` fields, each with its key in order.
#[inline(always)]
fn fields<const K: usize>(
    w: &[u8; 64],
    c: &Classes,
    from: u32,
    keys: &[&[u8]; K],
    min: usize,
) -> Option<([u8; 10], usize)> {
    let end = c.nl.trailing_zeros();
    if end == 64 {
        return None;
    }
    let mut spaces = c.space & below(end) & !below(from);
    let n = spaces.count_ones() as usize;
    if n < min || n > K {
        return None;
    }
    let mut at = [0u8; 10];
    for (k, key) in keys.iter().enumerate().take(n) {
        let q = spaces.trailing_zeros() as usize;
        spaces &= spaces - 1;
        if w.get(q + 1..q + 1 + key.len())? != *key {
            return None;
        }
        at[k] = q as u8;
    }
    at[n] = end as u8;
    Some((at, n))
}

/// Bit `k`.
#[inline(always)]
fn bit(k: usize) -> u64 {
    1 << k
}

/// [`glock_tail`] for the common line (`G:  s:`, all of it within the 64 bytes of `w`,
/// no number longer than 16 digits), through the classes `c` of `w`, its head
/// ([`glock_head`]) already read: `head` bytes. Each field is found by its space and
/// checked as a whole. What the tail says and the line's length with its `\n`, or `None`
/// for the byte-at-a-time reading to decide.
#[inline(always)]
fn glock_line_window(w: &[u8; 64], c: &Classes, head: usize) -> Option<(GlockTail, usize)> {
    const KEYS: [&[u8]; 9] = [
        b"n:", b"f:", b"t:", b"d:", b"a:", b"v:", b"r:", b"m:", b"p:",
    ];
    if w[..6] != *b"G:  s:" {
        return None;
    }
    let (at, n) = fields(w, c, 8, &KEYS, 8)?;
    let at = at.map(usize::from);
    // `n:` is the head's last field.
    if at[0] != 8 || at[1] != head {
        return None;
    }
    let flags = GlockFlags::new(letters_between(&w[at[1] + 3..at[2]])?);
    if at[3] != at[2] + 5 {
        return None;
    }
    state(w, &mut (at[2] + 3))?;
    let mut i = at[3] + 3;
    state(w, &mut i)?;
    lit(w, &mut i, b"/")?;
    let demote_us = digits(w, &mut i, 19)?;
    if i != at[4] {
        return None;
    }
    // `a:`, `v:`, `r:`, `m:` hold an optional `-` and digits, `p:` digits.
    let line = below(at[n] as u32);
    let tail = line & !below(at[4] as u32);
    let spaces = c.space & tail;
    let signed = if n == 9 { spaces & !bit(at[8]) } else { spaces };
    let allowed = spaces | spaces << 1 | spaces << 2 | c.minus & signed << 3 | c.digit;
    let first = spaces << 3;
    let first = (first & c.minus) << 1 | first & !c.minus;
    if tail & !allowed != 0 || first & !c.digit != 0 || has_run_of_17(c.digit & line) {
        return None;
    }
    let refs = int(w, &mut (at[6] + 3))?;
    let tail = GlockTail {
        flags,
        demote_us,
        refs,
    };
    Some((tail, at[n] + 1))
}

/// [`inode_fields`] for the common line (all of it within the 64 bytes of `w`, no number
/// longer than 16 digits), through the classes `c` of `w`, its head ([`inode_head`])
/// already read: `head` bytes. The whole line is checked, and where its size starts (after
/// ` s:`) is returned, for [`inode_sizes`]; or `None` for the byte-at-a-time reading to
/// decide.
#[inline(always)]
fn inode_line_window(w: &[u8; 64], c: &Classes, head: usize) -> Option<usize> {
    const KEYS: [&[u8]; 6] = [b"n:", b"t:", b"f:0x", b"d:0x", b"s:", b"p:"];
    if w[..6] != *b" I: n:" {
        return None;
    }
    let (at, n) = fields(w, c, 3, &KEYS, 5)?;
    let at = at.map(usize::from);
    // `n:` is the head's one field.
    if at[1] != head {
        return None;
    }
    let line = below(at[n] as u32);
    let spaces = c.space & line & !below(at[1] as u32);
    let x = bit(at[2] + 4) | bit(at[3] + 4);
    let hexes = c.hex & below(at[4] as u32) & !below(at[2] as u32);
    let allowed = spaces | spaces << 1 | spaces << 2 | x | c.digit | hexes;
    // Each other number has a digit first: `t:`, `s:` and `p:` after their key, `f:` and
    // `d:` after their `0x`.
    let digits_first = bit(at[1] + 3) | bit(at[4] + 3);
    let digits_first = digits_first | if n == 6 { bit(at[5] + 3) } else { 0 };
    let hex_first = x << 1;
    if line & !below(at[1] as u32) & !allowed != 0
        || digits_first & !c.digit != 0
        || hex_first & !c.hex != 0
        || has_run_of_17(c.hex & line)
    {
        return None;
    }
    Some(at[4] + 3)
}

/// A `G:` line (`G:  s:%s n:%u/%llx f:%s t:%s d:%s/%llu a:%d v:%d r:%d m:%ld[ p:%lu]\n`)
/// after its glock number ([`glock_head`]).
#[inline]
fn glock_tail(s: &[u8], i: &mut usize) -> Option<GlockTail> {
    lit(s, i, b" f:")?;
    let flags = GlockFlags::new(letters(s, i)?);
    lit(s, i, b" t:")?;
    state(s, i)?;
    lit(s, i, b" d:")?;
    state(s, i)?;
    lit(s, i, b"/")?;
    let demote_us = digits(s, i, 19)?;
    lit(s, i, b" a:")?;
    skip_int(s, i)?;
    lit(s, i, b" v:")?;
    skip_int(s, i)?;
    lit(s, i, b" r:")?;
    let refs = int(s, i)?;
    lit(s, i, b" m:")?;
    skip_int(s, i)?;
    if lit(s, i, b" p:").is_some() {
        skip_digits(s, i)?;
    }
    line_end(s, i)?;
    Some(GlockTail {
        flags,
        demote_us,
        refs,
    })
}

/// A `G:` line up to the end of its glock number, `G:  s:%s n:%u/%llx`.
#[inline(always)]
fn glock_head<C: Classifier>(s: &[u8], i: &mut usize) -> Option<GlockHead> {
    if let Some(w) = s.get(*i..*i + 16).and_then(<[u8]>::first_chunk) {
        if let Some((state, gltype)) = usual_glock_head(w) {
            *i += USUAL_HEAD.len();
            let number = C::hex(s, i)?;
            return Some(GlockHead {
                id: GlockId::new(gltype, number),
                state,
            });
        }
    }
    glock_head_general::<C>(s, i)
}

/// [`glock_head`] by the general rules alone: any number of spaces after `G:`, a type of
/// up to 9 digits.
#[inline(always)]
fn glock_head_general<C: Classifier>(s: &[u8], i: &mut usize) -> Option<GlockHead> {
    lit(s, i, b"G:")?;
    spaces(s, i);
    lit(s, i, b"s:")?;
    let held_state = state(s, i)?;
    lit(s, i, b" n:")?;
    let gltype = digits(s, i, 9)?;
    lit(s, i, b"/")?;
    let number = C::hex(s, i)?;
    let id = GlockId::new(gltype as u32, number);
    Some(GlockHead {
        id,
        state: held_state,
    })
}

/// The head every `G:` line of a kernel's dump has, `G:  s:XX n:T/` with a one-digit
/// type (the kernel's types are 1 to 9): its fixed bytes, the state's and the type's
/// places left zero.
const USUAL_HEAD: [u8; 13] = *b"G:  s:\0\0 n:\0/";

/// The state and type of a `G:` line whose first 16 bytes `w` start with the usual head
/// ([`USUAL_HEAD`]), read as two words instead of a byte at a time; `None` for any other
/// line, which [`glock_head`] then reads by the general rules. Where it reads a head, the
/// general rules read the same.
#[inline(always)]
fn usual_glock_head(w: &[u8; 16]) -> Option<(LockState, u32)> {
    const fn fixed(value: bool) -> u128 {
        let mut b = [0u8; 16];
        let mut k = 0;
        while k < USUAL_HEAD.len() {
            let varies = k == 6 || k == 7 || k == 11;
            b[k] = match (varies, value) {
                (true, _) => 0,
                (false, true) => USUAL_HEAD[k],
                (false, false) => 0xff,
            };
            k += 1;
        }
        u128::from_le_bytes(b)
    }
    const MASK: u128 = fixed(false);
    const WANT: u128 = fixed(true);
    if u128::from_le_bytes(*w) & MASK != WANT {
        return None;
    }
    let gltype = w[11].wrapping_sub(b'0');
    if gltype > 9 {
        return None;
    }
    let state = state(w, &mut 6)?;
    Some((state, u32::from(gltype)))
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

/// An `I:` line (` I: n:%llu/%llu t:%u f:0x%02lx d:0x%08x s:%llu[ p:%lu]\n`) after its
/// numbers ([`inode_head`]), through ` s:`; [`inode_sizes`] reads the rest.
#[inline]
fn inode_fields(s: &[u8], i: &mut usize) -> Option<()> {
    lit(s, i, b" t:")?;
    skip_digits(s, i)?;
    lit(s, i, b" f:0x")?;
    hex(s, i)?;
    lit(s, i, b" d:0x")?;
    hex(s, i)?;
    lit(s, i, b" s:")
}

/// The rest of an `I:` line after ` s:` ([`inode_fields`]): `%llu[ p:%lu]\n`.
#[inline(always)]
fn inode_sizes<C: Classifier>(s: &[u8], i: &mut usize) -> Option<()> {
    C::skip_digits(s, i)?;
    if lit(s, i, b" p:").is_some() {
        C::skip_digits(s, i)?;
    }
    line_end(s, i)
}

/// An `I:` line up to the end of its numbers (after ` I:`): ` n:%llu/%llu`.
#[inline(always)]
fn inode_head<C: Classifier>(s: &[u8], i: &mut usize) -> Option<()> {
    spaces(s, i);
    lit(s, i, b"n:")?;
    C::skip_digits(s, i)?;
    lit(s, i, b"/")?;
    C::skip_digits(s, i)
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

/// Printable letters being gathered into a [`LetterSet`], in two halves: a `u128`
/// shift by a variable amount costs a dozen instructions.
#[derive(Default)]
struct Gathered {
    lo: u64,
    hi: u64,
}

impl Gathered {
    /// Adds `c`; false if it is not printable.
    #[inline(always)]
    fn add(&mut self, c: u8) -> bool {
        let bit = 1u64 << (c & 63);
        if c < 64 {
            self.lo |= bit;
        } else {
            self.hi |= bit;
        }
        c.is_ascii_graphic()
    }

    #[inline(always)]
    fn set(self) -> LetterSet {
        LetterSet::from_bits(u128::from(self.hi) << 64 | u128::from(self.lo))
    }
}

/// Flag letters, all of `s` (which holds no space): printable, as [`letters`] takes them.
#[inline(always)]
fn letters_between(s: &[u8]) -> Option<LetterSet> {
    let mut g = Gathered::default();
    for &c in s {
        if !g.add(c) {
            return None;
        }
    }
    Some(g.set())
}

/// Flag letters up to the next space: printable, as [`LetterSet::parse`] takes them.
#[inline(always)]
fn letters(s: &[u8], i: &mut usize) -> Option<LetterSet> {
    let mut g = Gathered::default();
    while let Some(&c) = s.get(*i) {
        if c == b' ' {
            break;
        }
        if !g.add(c) {
            return None;
        }
        *i += 1;
    }
    Some(g.set())
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

    /// The first record [`run_with`] skims from `text[at..]`, lines read as `C` reads them.
    fn skim_first<C: Classifier>(text: &[u8], at: usize, seen: &mut Skimmer) -> Skimmed {
        let mut got = None;
        run_with::<C, _>(text, at, seen, &mut |b, _, end, n| {
            got.get_or_insert((b, end, n));
        });
        got
    }

    /// [`skim_first`] through [`run_avx2`]; only where the CPU has what it needs.
    #[cfg(target_arch = "x86_64")]
    fn skim_first_avx2(text: &[u8], at: usize, seen: &mut Skimmer) -> Skimmed {
        assert!(has_avx2());
        let mut got = None;
        // SAFETY: just checked.
        unsafe {
            run_avx2(text, at, seen, &mut |b, _, end, n| {
                got.get_or_insert((b, end, n));
            })
        };
        got
    }

    /// The skim of the record at `text[at..]` with every way to classify lines, each by a
    /// fresh [`Skimmer`], by one that has read the record at the start of `before`, and
    /// by one that has read `text` once: they must all agree, on all input.
    fn every_way(text: &[u8], at: usize, before: &[u8]) -> Skimmed {
        let want = skim_first::<Bytes>(text, at, &mut Skimmer::default());
        let shown = String::from_utf8_lossy(text);
        for first in [&b""[..], before, text] {
            let read = |skim: &dyn Fn(&[u8], usize, &mut Skimmer) -> Skimmed| {
                let mut seen = Skimmer::default();
                if !first.is_empty() {
                    skim(first, 0, &mut seen);
                }
                skim(text, at, &mut seen)
            };
            assert_eq!(read(&skim_first::<Bytes>), want, "bytes: {shown:?}");
            assert_eq!(read(&skim_first::<Portable>), want, "portable: {shown:?}");
            #[cfg(target_arch = "x86_64")]
            if has_avx2() {
                assert_eq!(read(&skim_first_avx2), want, "avx2: {shown:?}");
            }
        }
        want
    }

    /// Real `G:` and `I:` lines (6.1 with `p:`, 5.10 without), and long ones.
    const LINES: [&[u8]; 12] = [
        b"G:  s:SH n:5/1000 f:Iqob t:SH d:EX/0 a:0 v:0 r:3 m:50 p:0\n",
        b"G:  s:EX n:2/203e5 f:yfIqob t:EX d:UN/12 a:0 v:0 r:4 m:200 p:1\n",
        b"G:  s:UN n:3/11 f: t:UN d:EX/0 a:0 v:0 r:-1 m:200\n",
        b"G:  s:DF n:1/2 f:lDpb t:DF d:SH/1234567 a:1 v:0 r:12 m:0 p:327\n",
        b"G:  s:EX n:2/ABCdef9 f:q t:EX d:EX/0 a:-2 v:-1 r:-99 m:-3 p:1\n",
        b" I: n:151/4096 t:8 f:0x00 d:0x00000000 s:5 p:1\n",
        b" I: n:12/4098 t:8 f:0x00 d:0x00000200 s:1048576\n",
        b" I: n:905/4110 t:4 f:0xAb d:0xdeadBEEF s:32768 p:8\n",
        // Lines that fit with numbers near the limits (18 digits for a `G:` line's `m:`, 16
        // for hex).
        b"G:  s:EX n:1/1 f: t:EX d:EX/0 a:0 v:0 r:0 m:123456789012345678\n",
        b" I: n:1/2 t:8 f:0x1234567890abcdef d:0x0 s:1234567890123456\n",
        b"G:  s:SH n:2/123456789abcdef f:yfIqobnNrRLl t:SH d:EX/1234567890123 a:1 v:2 r:3 m:4 p:5\n",
        b" I: n:1234567890123456/1234567890123456 t:8 f:0x00 d:0x00000000 s:1234567 p:1\n",
    ];

    /// Real holder lines, and ones the full parser splits in each of its ways.
    const HOLDERS: [&[u8]; 6] = [
        b" H: s:SH f:EH e:0 p:0 [(none)] gfs2_atomic_open+0x56/0xe0 [gfs2]\n",
        b" H: s:EX f:W e:0 p:4470 [cat] gfs2_open_common+0x5c/0x1a0 [gfs2]\n",
        b" H: s:SH f:EH e:0 p:9367 [(ended)] gfs2_inode_lookup+0x253/0x3c0\n",
        b" H: s:EX f:tH e:-5 p:1 [a] b] 0xffffffffc0a1b2c3\n",
        b" H: s:UN f: e:0 p:2 [kworker/0:1]\n",
        b" H: s:SH f:cH e:0 p:3 [x] glock.c:123 [gfs2]\n",
    ];

    /// `line` as the only line of a record: a `G:` line as it is, an `I:` line after a
    /// `G:` line, an `H:` line after a `G:` line and `remembered`, the line it was made
    /// from (so that a changed holder line comes after the one it was changed from).
    /// Padded to 64 bytes past the line's start, so the window is used.
    fn record(line: &[u8], remembered: &[u8]) -> (Vec<u8>, usize) {
        let mut text = Vec::new();
        if line.starts_with(b" I:") {
            text.extend_from_slice(LINES[0]);
        }
        if line.starts_with(b" H:") {
            text.extend_from_slice(LINES[0]);
            text.extend_from_slice(remembered);
        }
        let at = text.len();
        text.extend_from_slice(line);
        text.extend_from_slice(&[b'G', b':', b' ', b' '].repeat(20));
        (text, at)
    }

    #[test]
    fn the_window_takes_the_common_lines_and_leaves_long_ones() {
        for line in LINES {
            let (text, at) = record(line, b"");
            let w = text[at..at + 64].first_chunk().unwrap();
            let c = Classes::of(w);
            // The head as the skim reads it first.
            let mut j = at;
            let taken = if line.starts_with(b"G:") {
                glock_head::<Bytes>(&text, &mut j).unwrap();
                glock_line_window(w, &c, j - at).map(|(_, len)| len)
            } else {
                j += 3;
                inode_head::<Bytes>(&text, &mut j).unwrap();
                inode_line_window(w, &c, j - at)
            };
            // Lines over 64 bytes or with a number over 16 digits are left to the byte loop.
            let longest = line
                .split(|b| !b.is_ascii_hexdigit())
                .map(<[u8]>::len)
                .max();
            let fits = line.len() <= 64 && longest <= Some(16);
            assert_eq!(taken.is_some(), fits, "{:?}", String::from_utf8_lossy(line));
            assert!(every_way(&text, 0, &text).is_some());
        }
    }

    /// Every line with each byte replaced by each of the bytes the checks care about,
    /// dropped, or doubled; and pairs of such changes. The ways to read must agree, with
    /// and without the unchanged line remembered.
    #[test]
    fn the_window_agrees_with_the_byte_loop_on_every_change_to_a_line() {
        const BYTES: &[u8] = b" \n\r\t-/09aAfFgGxX:pIH?\x80\xff\x00";
        let mut changed = 0;
        let mut taken = 0;
        // Each changed line is also read after its unchanged line, which the skimmer then
        // remembers.
        let mut check = |l: &[u8], from: &[u8]| {
            if every_way(&record(l, from).0, 0, &record(from, from).0).is_some() {
                taken += 1;
            }
            changed += 1;
        };
        let mut rng = testdata::Xorshift::new(0x9e37_79b9_7f4a_7c15);
        let mut rand = |n: usize| rng.below(n);
        for line in LINES.into_iter().chain(HOLDERS) {
            check(line, line);
            for i in 0..line.len() {
                for &b in BYTES {
                    let mut l = line.to_vec();
                    l[i] = b;
                    check(&l, line);
                }
                let mut l = line.to_vec();
                l.remove(i);
                check(&l, line);
                let mut l = line.to_vec();
                l.insert(i, line[i]);
                check(&l, line);
            }
            for _ in 0..3000 {
                let mut l = line.to_vec();
                for _ in 0..2 {
                    let i = rand(l.len());
                    match rand(3) {
                        0 => l[i] = BYTES[rand(BYTES.len())],
                        1 => drop(l.remove(i)),
                        _ => l.insert(i, l[i]),
                    }
                }
                check(&l, line);
            }
        }
        // Most changes break the line; a fair share still reads.
        assert!(
            changed > 40_000 && taken > changed / 10,
            "{taken} of {changed}"
        );
    }

    /// The vector reading of a short line gives what the portable one gives: the `\n`
    /// at every place of the 64 bytes or past them, every byte value before and after it,
    /// and text shorter than 64 bytes.
    #[test]
    fn short_lines_read_through_avx2_as_read_portably() {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            let read = |rest: &[u8]| {
                let want = ShortLine::of(rest).map(|l| (l.bytes, l.len));
                assert_eq!(
                    Avx2::short_line(rest).map(|l| (l.bytes, l.len)),
                    want,
                    "{rest:?}"
                );
                want.is_some()
            };
            let mut found = 0;
            for nl in 0..70 {
                for b in 0..=255u8 {
                    let mut rest: Vec<u8> =
                        (0..80).map(|k| b.wrapping_add((k * 37) as u8)).collect();
                    rest.iter_mut()
                        .filter(|c| **c == b'\n')
                        .for_each(|c| *c = b'x');
                    rest[nl] = b'\n';
                    found += usize::from(read(&rest));
                    found += usize::from(read(&rest[..nl.min(63) + 1]));
                }
            }
            // Found where the `\n` is among the first 64 bytes, in the whole text and cut after it.
            assert_eq!(found, 2 * 64 * 256);
            return;
        }
        testdata::skip(
            "short_lines_read_through_avx2_as_read_portably",
            "this CPU has no AVX2",
        );
    }

    /// The usual head read as two words reads what the general rules read, on every
    /// line of the tests changed a byte at a time, padded and not.
    #[test]
    fn the_usual_glock_head_is_read_as_the_general_rules_read_it() {
        const BYTES: &[u8] = b" \n-/09aAfFgGxX:sSnNHEUD?\x80\xff\x00";
        let mut usual = 0;
        let mut check = |l: &[u8]| {
            for pad in [&b""[..], b"0123456789abcdef"] {
                let text = [l, pad].concat();
                let (mut a, mut b) = (0, 0);
                let fast = glock_head::<Bytes>(&text, &mut a).map(|h| (h.id, h.state));
                let general = glock_head_general::<Bytes>(&text, &mut b).map(|h| (h.id, h.state));
                assert_eq!(fast, general, "{:?}", String::from_utf8_lossy(&text));
                if fast.is_some() {
                    assert_eq!(a, b, "{:?}", String::from_utf8_lossy(&text));
                }
                usual += usize::from(
                    text.get(..16)
                        .is_some_and(|w| usual_glock_head(w.first_chunk().unwrap()).is_some()),
                );
            }
        };
        for line in LINES.iter().filter(|l| l.starts_with(b"G:")) {
            check(line);
            for i in 0..20.min(line.len()) {
                for &c in BYTES {
                    let mut l = line.to_vec();
                    l[i] = c;
                    check(&l);
                }
                let mut l = line.to_vec();
                l.remove(i);
                check(&l);
                let mut l = line.to_vec();
                l.insert(i, line[i]);
                check(&l);
            }
        }
        assert!(usual > 500, "{usual}");
    }

    /// More different `G:` line tails than the skimmer keeps, read over and over in an
    /// order that makes them displace each other: every record reads as a fresh skimmer
    /// reads it alone, whatever was kept, replaced or found.
    #[test]
    fn many_different_glock_tails_are_recalled_as_read() {
        let line = |k: usize| {
            let flags = ["Iqob", "yLob", "Lb", "", "lDpb", "yIob"][k % 6];
            format!(
                "G:  s:EX n:{}/{:x} f:{flags} t:EX d:EX/{} a:0 v:0 r:{} m:{} p:{}\n",
                1 + k % 9,
                0x1000 + k,
                k % 7,
                k % 11,
                50 + k % 13,
                k % 3,
            )
        };
        let mut text = Vec::new();
        let mut seed = 7u64;
        for _ in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.extend_from_slice(line((seed >> 33) as usize % 400).as_bytes());
        }
        text.extend_from_slice(&b"G:  ".repeat(20));
        // Every record of the text, read by one skimmer (that of `run`) or each by a
        // fresh one.
        type Each<'a> = &'a mut dyn FnMut(Brief, usize, usize, u64);
        let all = |run: &dyn Fn(&mut Skimmer, Each)| {
            let mut got = Vec::new();
            run(&mut Skimmer::default(), &mut |b, _, end, n| {
                got.push((b, end, n))
            });
            got
        };
        let mut alone = Vec::new();
        let mut at = 0;
        for l in text.split_inclusive(|&b| b == b'\n').take(3000) {
            let one = [l, b"G:  "].concat();
            if let Some((b, end, n)) = skim_first::<Bytes>(&one, 0, &mut Skimmer::default()) {
                alone.push((b, at + end, n));
            }
            at += l.len();
        }
        assert_eq!(alone.len(), 3000);
        let bytes = all(&|seen, f| {
            run_with::<Bytes, _>(&text, 0, seen, &mut { f });
        });
        let portable = all(&|seen, f| {
            run_with::<Portable, _>(&text, 0, seen, &mut { f });
        });
        assert!(bytes == alone, "bytes");
        assert!(portable == alone, "portable");
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: just checked.
            let avx2 = all(&|seen, f| unsafe {
                run_avx2(&text, 0, seen, &mut { f });
            });
            assert!(avx2 == alone, "avx2");
        }
    }

    #[test]
    fn a_record_in_the_kernel_layout_is_skimmed() {
        let text = b"G:  s:EX n:2/203e5 f:yfIqob t:EX d:UN/12 a:0 v:0 r:4 m:200 p:1\n\
            \x20H: s:EX f:H e:0 p:4466 [dd] gfs2_file_write_iter+0x134/0x3a0 [gfs2]\n\
            \x20H: s:SH f:W e:0 p:4470 [cat] gfs2_open_common+0x5c/0x1a0 [gfs2]\n\
            \x20I: n:37/132069 t:8 f:0x00 d:0x00000000 s:1048576 p:256\n\
            G:  s:UN n:3/11 f: t:UN d:EX/0 a:0 v:0 r:-1 m:200\n";
        let mut s = Skimmer::default();
        let mut got = Vec::new();
        let stop = s.skim_run(text, 0, |b, start, end, lines| {
            got.push((b, start, end, lines))
        });
        assert_eq!((stop, got.len()), (text.len(), 2));
        let (b, start, end, lines) = got[0];
        assert_eq!(
            (b.id, b.state, b.demote_us, b.refs),
            (GlockId::new(2, 0x203e5), LockState::Exclusive, 12, 4)
        );
        assert_eq!((b.holders, b.waiters, b.granted, lines), (2, 1, 1, 4));
        assert_eq!(start, 0);
        assert!(text[end..].starts_with(b"G:  s:UN"));
        let (b, start, end, lines) = got[1];
        assert_eq!(
            (b.refs, b.flags, start, end, lines),
            (-1, GlockFlags::default(), got[0].2, text.len(), 1)
        );
        let trailing_space = b"G:  s:UN n:3/11 f: t:UN d:EX/0 a:0 v:0 r:-1 m:200 \n";
        let stop = s.skim_run(trailing_space, 0, |_, _, _, _| panic!("skimmed"));
        assert_eq!(stop, 0);
    }
}
