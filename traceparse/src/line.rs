//! The ftrace text line around an event, in all its variants:
//!
//! ```text
//!            mkdir-179     [001] ...1.    34.268977: gfs2_glock_queue: 254,0 glock 2:8498 queue PR
//!               dd-4466  [002] ....  1234.567890: ...        (≤5.9: pid width 5, 4 flag columns)
//!               dd-4466    (   4466) [002] .....  1234.567890: ...   (record-tgid)
//!               dd-4466    [002]  1234.567890: ...           (noirq-info)
//! gfs2_pin: 253,3 log pin 524401/4096 inode 132069            (nocontext-info)
//!            mkdir-179   [001]    34.268977: gfs2_glock_queue:     254,0 ...  (trace-cmd report)
//! CPU:1 [LOST 5 EVENTS]
//! ```
//! The comm may hold spaces and dashes; the pid is the digits after the last `-` before
//! the `[cpu]` field.

use glockparse::num::parse_u64;

use crate::grammar;

/// One parsed ftrace line, borrowing from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceLine<'a> {
    /// The task's command name.
    pub comm: &'a [u8],
    /// The task's pid.
    pub pid: i64,
    /// The thread group id, when the trace prints it (`-o record-tgid`).
    pub tgid: Option<i64>,
    /// The CPU, when the trace prints it.
    pub cpu: Option<u32>,
    /// The irq-info flag columns (`d..2.`), empty when not printed.
    pub irq_flags: &'a [u8],
    /// Timestamp in nanoseconds (the trace clock's seconds.micros scaled; a counter
    /// clock's raw value).
    pub ts_ns: u64,
    /// Event name (`gfs2_glock_queue`, `print`, `sched_switch`, ...) as the line prints it:
    /// for a system call, its name (`sys_getppid`); [`TraceLine::event_name`] gives the
    /// tracefs event's.
    pub event: &'a [u8],
    /// The event's TP_printk text (a system call's arguments, or its return value).
    pub body: &'a [u8],
    /// How the line names its event.
    pub naming: Naming,
}

/// How a line names its event. Most events print `name: body` (their `TP_printk`); the
/// system call events print themselves (kernel/trace/trace_syscalls.c):
/// `print_syscall_enter` writes `sys_NAME(arg: value, ...)` and `print_syscall_exit`
/// writes `sys_NAME -> 0xRET`, with no event name at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// `name: body`.
    Named,
    /// A system call's entry: tracefs event `syscalls:sys_enter_NAME`.
    SyscallEnter,
    /// A system call's return: tracefs event `syscalls:sys_exit_NAME`.
    SyscallExit,
}

impl<'a> TraceLine<'a> {
    /// The tracefs name of the line's event: [`TraceLine::event`] as printed, or for a
    /// system call `sys_enter_NAME` / `sys_exit_NAME` (as `--events syscalls:...` names it).
    pub fn event_name(&self) -> std::borrow::Cow<'a, str> {
        let printed = String::from_utf8_lossy(self.event);
        let call = || printed.strip_prefix("sys_").unwrap_or(&printed).to_string();
        match self.naming {
            Naming::Named => printed,
            Naming::SyscallEnter => format!("sys_enter_{}", call()).into(),
            Naming::SyscallExit => format!("sys_exit_{}", call()).into(),
        }
    }
}

/// What a line of trace text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// An event line.
    Event(TraceLine<'a>),
    /// `CPU:N [LOST M EVENTS]`: the ring buffer overflowed.
    Lost {
        /// The CPU whose buffer overflowed.
        cpu: u32,
        /// Events lost; None for `CPU:N [LOST EVENTS]`, where the kernel does not know.
        events: Option<u64>,
    },
    /// Blank lines, `#` headers of the `trace` file, trace-cmd's `cpus=N` and
    /// `version = N` header lines, and the `CPU N is empty` that older trace-cmd report
    /// printed among the events (a `printf` in its `init_cpu`; newer ones log it apart).
    Header,
}

/// Why a line could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadLine(pub &'static str);

/// `s` without white space at either end. (A field's text, such as an event's body,
/// which starts with a space or two: no runs of padding to skip, as [`trim_range`] does.)
fn trim(s: &[u8]) -> &[u8] {
    let a = first_where(s, |b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    trim_end(&s[a..])
}

/// Where `s` starts and ends once white space is trimmed from both ends.
#[inline(always)]
fn trim_range(s: &[u8]) -> (usize, usize) {
    // The comm is right-aligned in 16 columns: skip its padding eight spaces at a time.
    let mut a = 0;
    while s.get(a..a + 8) == Some(b"        ") {
        a += 8;
    }
    let a = a + first_where(&s[a..], |b| !b.is_ascii_whitespace()).unwrap_or(s.len() - a);
    let mut b = s.len();
    while b > a && s[b - 1].is_ascii_whitespace() {
        b -= 1;
    }
    (a, b)
}

/// The index of the first byte of `s` that `pred` accepts: a plain loop, always inlined
/// (these searches run over the few bytes of a line's prefix fields, several per line).
#[inline(always)]
fn first_where(s: &[u8], pred: impl Fn(u8) -> bool) -> Option<usize> {
    let mut i = 0;
    while i < s.len() {
        if pred(s[i]) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The index of the last byte of `s` equal to `b`.
#[inline(always)]
fn last(s: &[u8], b: u8) -> Option<usize> {
    let mut i = s.len();
    while i > 0 {
        i -= 1;
        if s[i] == b {
            return Some(i);
        }
    }
    None
}

/// `[digits]` at `s[i..]`: returns the number and the index after `]`.
/// (The digits are read up to the first byte that is not one, which must be the `]`: a
/// later `]` would leave a non-digit among them.)
#[inline(always)]
fn cpu_field(s: &[u8], i: usize) -> Option<(u32, usize)> {
    let rest = s.get(i + 1..)?;
    let mut n = 0;
    let mut cpu: u32 = 0;
    while n < 6 {
        let d = rest.get(n)?.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        cpu = cpu * 10 + u32::from(d);
        n += 1;
    }
    (n > 0 && rest.get(n) == Some(&b']')).then_some((cpu, i + 1 + n + 1))
}

/// The first `b` in `s`: a plain loop, faster than `memchr` over the few bytes of a
/// line's prefix fields.
#[inline(always)]
fn find(b: u8, s: &[u8]) -> Option<usize> {
    first_where(s, |c| c == b)
}

fn skip_spaces(s: &[u8], mut i: usize) -> usize {
    while s.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// The space-delimited token at or after `from` (leading spaces skipped), and the index
/// just past it; `None` at the end of `s`.
fn token(s: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let start = skip_spaces(s, from);
    if start >= s.len() {
        return None;
    }
    let end = find(b' ', &s[start..]).map_or(s.len(), |k| start + k);
    Some((&s[start..end], end))
}

/// `secs.frac:` or a counter `N:` as nanoseconds, by the general rule
/// ([`grammar::timestamp`]).
fn timestamp(tok: &[u8]) -> Option<u64> {
    grammar::timestamp(tok).ok().map(|(_, ns)| ns)
}

/// The usual timestamp token, `secs.micros:`, read where it starts (`s[at]`) rather
/// than found first: its value and where it ends, as [`token`] and [`timestamp`] would
/// give them. `None` for any other token, which those two then read.
#[inline(always)]
fn timestamp_at(s: &[u8], at: usize) -> Option<(u64, usize)> {
    let (secs, dot) = digit_run(s, at);
    if !(1..=18).contains(&(dot - at)) || s.get(dot) != Some(&b'.') {
        return None;
    }
    let (frac, i) = digit_run(s, dot + 1);
    let digits = i - dot - 1;
    if !(1..=9).contains(&digits)
        || s.get(i) != Some(&b':')
        || s.get(i + 1).is_some_and(|&b| b != b' ')
    {
        return None;
    }
    let ns = secs.checked_mul(1_000_000_000)?;
    Some((ns.checked_add(frac * POW10[9 - digits])?, i + 1))
}

/// The decimal digits from `s[at]` on: their value (wrapping: the callers use no more
/// than 18 digits) and where they end.
#[inline(always)]
fn digit_run(s: &[u8], at: usize) -> (u64, usize) {
    if let Some((v, n)) = s.get(at..).and_then(glockparse::num::short_digits) {
        return (v, at + n);
    }
    let mut i = at;
    let mut v: u64 = 0;
    while let Some(&b) = s.get(i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (v, i)
}

/// Powers of ten up to 10^9.
const POW10: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// The bytes of an event name: ASCII letters, digits and `_`.
static IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    t
};

/// How many bytes at the start of `s` are [`IDENT`] bytes: 16 at a time where 16 are left
/// (an event name is 10 to 30 bytes, followed by its body).
#[inline(always)]
fn ident_len(s: &[u8]) -> usize {
    // Whole 16-byte blocks first (x86-64), then the rest a byte at a time.
    #[cfg(target_arch = "x86_64")]
    let done = {
        use std::arch::x86_64::*;
        let mut i = 0;
        while i + 16 <= s.len() {
            // SAFETY: SSE2 is part of x86-64 itself; the load reads `s[i..i + 16]`.
            let m = unsafe {
                let v = _mm_loadu_si128(s.as_ptr().add(i).cast());
                let byte = |c: u8| _mm_set1_epi8(c as i8);
                // Signed comparisons: bytes of 0x80 and above are negative, in no range.
                let within = |x, lo: u8, hi: u8| {
                    _mm_and_si128(
                        _mm_cmpgt_epi8(x, byte(lo - 1)),
                        _mm_cmplt_epi8(x, byte(hi + 1)),
                    )
                };
                let letter = within(_mm_or_si128(v, byte(0x20)), b'a', b'z');
                let digit = within(v, b'0', b'9');
                let under = _mm_cmpeq_epi8(v, byte(b'_'));
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), under)) as u32
            };
            if m != 0xffff {
                return i + (!m).trailing_zeros() as usize;
            }
            i += 16;
        }
        i
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    done + first_where(&s[done..], |b| !IDENT[usize::from(b)]).unwrap_or(s.len() - done)
}

/// `s` without the white space at its end.
#[inline(always)]
fn trim_end(s: &[u8]) -> &[u8] {
    let mut b = s.len();
    while b > 0 && s[b - 1].is_ascii_whitespace() {
        b -= 1;
    }
    &s[..b]
}

/// `comm-pid` with optional `(tgid)`, right-trimmed, from the text before `[cpu]`, which
/// starts where the line's white space ends (so only ends are trimmed here).
fn task(s: &[u8]) -> Option<(&[u8], i64, Option<i64>)> {
    task_trimmed(s, trim_end)
}

/// [`task`] with the task's text and its comm trimmed by `trim_ends`.
#[inline(always)]
fn task_trimmed(s: &[u8], trim_ends: fn(&[u8]) -> &[u8]) -> Option<(&[u8], i64, Option<i64>)> {
    let mut s = trim_ends(s);
    let mut tgid = None;
    if s.ends_with(b")") {
        let open = last(s, b'(')?;
        let inner = trim(&s[open + 1..s.len() - 1]);
        tgid = parse_u64(inner).and_then(|v| i64::try_from(v).ok());
        s = trim_ends(&s[..open]);
    }
    let dash = last(s, b'-')?;
    let pid = i64::try_from(parse_u64(&s[dash + 1..])?).ok()?;
    Some((trim_ends(&s[..dash]), pid, tgid))
}

/// A line's prefix read through its timestamp: where the event's name and body are
/// to be read from (`rest[after_ts..]`).
struct Head<'a> {
    comm: &'a [u8],
    pid: i64,
    tgid: Option<i64>,
    cpu: Option<u32>,
    irq_flags: &'a [u8],
    ts_ns: u64,
    rest: &'a [u8],
    after_ts: usize,
}

/// Whether `line` (without leading blanks) is one of the header lines `trace-cmd report`
/// writes before its events: `cpus=N`, and `version = N`, which libtracecmd logs as it
/// opens the file (older trace-cmd printed it first, on the same output). No other text
/// glk reads starts so.
pub fn is_report_header(line: &[u8]) -> bool {
    line.starts_with(b"cpus=") || line.starts_with(b"version =")
}

/// Parses one line of `trace_pipe`, `trace` or `trace-cmd report` text. Inlined, so that
/// the line is built where the caller keeps it rather than copied out.
///
/// The usual layout (`"           mkdir-179     [001] ...1.    34.268977: "`) is read
/// at its places (`usual_head`); any other line as [`parse_general`] reads it, which
/// gives the same for every line (tested on every fixture line and variations of them,
/// and fuzzed).
#[inline]
pub fn parse(line: &[u8]) -> Result<Line<'_>, BadLine> {
    match usual_head(line) {
        Some(head) => event(head),
        None => parse_general(line),
    }
}

/// [`parse`] without its reading of the usual layout: every line read by the general
/// rules (the reference the fast reading is held to).
#[inline]
pub fn parse_general(line: &[u8]) -> Result<Line<'_>, BadLine> {
    match general_head(line)? {
        Prefix::Head(head) => event(head),
        Prefix::Whole(line) => Ok(line),
    }
}

/// The prefix of the usual layout, read at its places: the comm right-aligned in 16
/// columns with no `[` in it, `-`, the pid, spaces, `[cpu]`, one space, the irq flags
/// (up to 7 bytes, not ending in `:`), spaces, `secs.micros:`. `None` for anything else,
/// left to [`general_head`]; where this answers, that would answer the same.
#[inline(always)]
fn usual_head(line: &[u8]) -> Option<Head<'_>> {
    let cols: &[u8; 16] = line.get(..16)?.try_into().ok()?;
    if line.get(16) != Some(&b'-') {
        return None;
    }
    let lo = u64::from_le_bytes(cols[..8].try_into().ok()?);
    let hi = u64::from_le_bytes(cols[8..].try_into().ok()?);
    // A `[` in the comm could be taken for the `[cpu]` field: the general reading decides.
    let has = |x: u64, b: u64| {
        let x = x ^ (b * 0x0101_0101_0101_0101);
        x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080 != 0
    };
    if has(lo, u64::from(b'[')) || has(hi, u64::from(b'[')) {
        return None;
    }
    // The padding: leading spaces (other white space is left to the general reading).
    const SPACES: u64 = 0x2020_2020_2020_2020;
    let lead = match (lo ^ SPACES, hi ^ SPACES) {
        (0, 0) => 16,
        (0, h) => 8 + (h.trailing_zeros() / 8) as usize,
        (l, _) => (l.trailing_zeros() / 8) as usize,
    };
    let first = line[lead];
    if first.is_ascii_whitespace()
        || first == b'#'
        || matches!(first, b'c' | b'v' | b'C') && {
            let t = &line[lead..];
            t.starts_with(b"cpus=") || t.starts_with(b"version =") || t.starts_with(b"CPU:")
        }
    {
        return None;
    }
    // `-pid` then spaces then `[cpu]`.
    let (pid, k) = digit_run(line, 17);
    if k == 17 || k > 17 + 18 {
        return None;
    }
    let i = skip_spaces(line, k);
    if i == k || line.get(i) != Some(&b'[') {
        return None;
    }
    let (cpu, after) = cpu_field(line, i)?;
    // ` flags ` then the timestamp.
    let rest = &line[after..];
    if rest.first() != Some(&b' ') || rest.get(1) == Some(&b' ') {
        return None;
    }
    let e = 1 + rest.get(1..9)?.iter().position(|&b| b == b' ')?;
    let irq_flags = &rest[1..e];
    if irq_flags.ends_with(b":") {
        return None;
    }
    let (ts_ns, after_ts) = timestamp_at(rest, skip_spaces(rest, e))?;
    Some(Head {
        comm: trim_end(&line[lead..16]),
        pid: pid as i64,
        tgid: None,
        cpu: Some(cpu),
        irq_flags,
        ts_ns,
        rest,
        after_ts,
    })
}

/// What the general rules read first.
enum Prefix<'a> {
    /// A prefix, with the event still to read.
    Head(Head<'a>),
    /// A whole line: a header, a lost-events line, or an event without context.
    Whole(Line<'a>),
}

/// A line's prefix by the general rules.
#[inline(always)]
fn general_head(line: &[u8]) -> Result<Prefix<'_>, BadLine> {
    let (lead, end) = trim_range(line);
    let t = &line[lead..end];
    if t.is_empty() || t[0] == b'#' || is_report_header(t) {
        return Ok(Prefix::Whole(Line::Header));
    }
    if grammar::empty_cpu(t).is_ok() {
        return Ok(Prefix::Whole(Line::Header));
    }
    if let Ok((_, (cpu, events))) = grammar::lost(t) {
        return Ok(Prefix::Whole(Line::Lost {
            cpu: cpu as u32,
            events,
        }));
    }
    // Find the `[cpu]` field: a `[` preceded by a space and followed by digits and `]`.
    // The task before it starts where the trimmed line does (its padding is skipped once).
    let mut from = 0;
    let found = loop {
        let Some(off) = glockparse::scan::find_short(b'[', &line[from..]) else {
            break None;
        };
        let i = from + off;
        if i > 0 && line[i - 1] == b' ' {
            if let Ok((after, cpu)) = grammar::cpu_field(&line[i..]) {
                if let Some(t) = task(&line[lead.min(i)..i]) {
                    break Some((t, cpu, line.len() - after.len()));
                }
            }
        }
        from = i + 1;
    };
    let (comm, pid, tgid, cpu, rest) = match found {
        Some(((comm, pid, tgid), cpu, after)) => (comm, pid, tgid, Some(cpu), &line[after..]),
        None => {
            // nocontext-info: `event: body`.
            let (_, (event, body)) =
                grammar::bare_event(t).map_err(|_| BadLine("no [cpu] field and no event name"))?;
            return Ok(Prefix::Whole(Line::Event(TraceLine {
                comm: b"",
                pid: 0,
                tgid: None,
                cpu: None,
                irq_flags: b"",
                ts_ns: 0,
                event,
                body: trim(body),
                naming: Naming::Named,
            })));
        }
    };
    // `[irq-flags] timestamp: event: body`, fields separated by runs of spaces.
    let (first, after_first) = token(rest, 0).ok_or(BadLine("nothing after [cpu]"))?;
    let (irq_flags, ts_ns, after_ts) = match timestamp(first) {
        Some(ts) => (&b""[..], ts, after_first),
        None => {
            let at = skip_spaces(rest, after_first);
            let (ts, after) = match timestamp_at(rest, at) {
                Some(found) => found,
                None => {
                    let (tok, after) = token(rest, at).ok_or(BadLine("no timestamp"))?;
                    (timestamp(tok).ok_or(BadLine("bad timestamp"))?, after)
                }
            };
            (first, ts, after)
        }
    };
    Ok(Prefix::Head(Head {
        comm,
        pid,
        tgid,
        cpu,
        irq_flags,
        ts_ns,
        rest,
        after_ts,
    }))
}

/// The event's name and body after the prefix.
#[inline(always)]
fn event(h: Head<'_>) -> Result<Line<'_>, BadLine> {
    let rest = h.rest;
    let ev = &rest[skip_spaces(rest, h.after_ts)..];
    if ev.is_empty() {
        return Err(BadLine("no event name"));
    }
    // The event name runs to the first `:`, checked as it is scanned.
    let name = ident_len(ev);
    let (naming, body) = if name > 0 && ev.get(name) == Some(&b':') {
        (Naming::Named, trim(&ev[name + 1..]))
    } else if let Some(call) = syscall(ev, name) {
        // A system call's own layout (whose arguments may hold `:`).
        call
    } else if name < ev.len() && find(b':', ev).is_some() {
        return Err(BadLine("bad event name"));
    } else {
        return Err(BadLine("no event name"));
    };
    Ok(Line::Event(TraceLine {
        comm: h.comm,
        pid: h.pid,
        tgid: h.tgid,
        cpu: h.cpu,
        irq_flags: h.irq_flags,
        ts_ns: h.ts_ns,
        event: &ev[..name],
        body,
        naming,
    }))
}

/// A system call's entry `sys_NAME(args)` or return `sys_NAME -> 0xRET` ([`Naming`]),
/// `ev[..name]` being `sys_NAME`: how it names itself and its body (the arguments
/// without the parentheses, or the return value).
#[inline(never)]
fn syscall(ev: &[u8], name: usize) -> Option<(Naming, &[u8])> {
    if !ev.starts_with(b"sys_") || name <= 4 {
        return None;
    }
    let rest = trim_end(&ev[name..]);
    if let Some(args) = rest.strip_prefix(b"(").and_then(|r| r.strip_suffix(b")")) {
        return Some((Naming::SyscallEnter, args));
    }
    let ret = rest.strip_prefix(b" -> ")?;
    ret.starts_with(b"0x").then_some((Naming::SyscallExit, ret))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> TraceLine<'_> {
        match parse(s.as_bytes()).unwrap() {
            Line::Event(e) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_prefix_variant() {
        let e = ev("           mkdir-179     [001] ...1.    34.268977: gfs2_glock_queue: 254,0 glock 2:8498 queue PR");
        assert_eq!(
            (e.comm, e.pid, e.cpu, e.irq_flags),
            (&b"mkdir"[..], 179, Some(1), &b"...1."[..])
        );
        assert_eq!(e.ts_ns, 34_268_977_000);
        assert_eq!(
            (e.event, e.body),
            (
                &b"gfs2_glock_queue"[..],
                &b"254,0 glock 2:8498 queue PR"[..]
            )
        );
        let e = ev("              dd-4466  [002] ....  1234.567890: gfs2_promote: 253,3 glock 2:132069 promote first EX");
        assert_eq!((e.pid, e.irq_flags), (4466, &b"...."[..]));
        let e = ev("              dd-4466    (   4466) [002] .....  1234.567890: gfs2_log_blocks: 253,3 log reserve -5 8123");
        assert_eq!(e.tgid, Some(4466));
        let e = ev("              dd-4466    (-------) [002] .....  1234.567890: gfs2_log_blocks: 253,3 log reserve -5 8123");
        assert_eq!((e.pid, e.tgid), (4466, None));
        let e = ev("              dd-4466    [002]  1234.567890: gfs2_pin: 253,3 log pin 524401/4096 inode 132069");
        assert_eq!(e.irq_flags, b"");
        let e = ev("gfs2_pin: 253,3 log pin 524401/4096 inode 132069");
        assert_eq!((e.cpu, e.event), (None, &b"gfs2_pin"[..]));
        let e = ev("    kworker/u4:1-25      [000] .....    40.694895: gfs2_log_flush: 254,0 log flush start 8192 100002");
        assert_eq!((e.comm, e.pid), (&b"kworker/u4:1"[..], 25));
        let e = ev(" my [odd]-name-77  [003] d..2. 5.000000001: tracing_mark_write: hello [1] x");
        assert_eq!((e.comm, e.pid, e.cpu), (&b"my [odd]-name"[..], 77, Some(3)));
        assert_eq!(e.ts_ns, 5_000_000_001);
        assert_eq!(
            (e.event, e.body),
            (&b"tracing_mark_write"[..], &b"hello [1] x"[..])
        );
        let e = ev("           mkdir-179   [001]    34.268977: gfs2_glock_queue:     254,0 glock 2:8498 queue PR");
        assert_eq!(e.body, b"254,0 glock 2:8498 queue PR");
        let e = ev("          <idle>-0       [000] d.h1. 99: sched_waking: comm=x pid=1");
        assert_eq!((e.comm, e.pid, e.ts_ns), (&b"<idle>"[..], 0, 99));
    }

    #[test]
    fn identifier_runs_agree_with_the_table_for_every_byte_at_every_place() {
        for len in 0..40 {
            for at in 0..=len {
                for b in 0..=255u8 {
                    let mut s: Vec<u8> = (0..len).map(|k| b"gfs2_Zz09"[k % 9]).collect();
                    if at < len {
                        s[at] = b;
                    }
                    let want = s.iter().position(|&c| !IDENT[usize::from(c)]);
                    assert_eq!(ident_len(&s), want.unwrap_or(len), "{len} {at} {b}");
                }
            }
        }
    }

    #[test]
    fn cpu_fields_read_as_the_first_bracket_and_its_digits() {
        let reference = |s: &[u8], i: usize| -> Option<(u32, usize)> {
            let rest = s.get(i + 1..)?;
            let close = rest.iter().position(|&b| b == b']')?;
            let digits = &rest[..close];
            if digits.is_empty() || digits.len() > 6 {
                return None;
            }
            Some((parse_u64(digits)? as u32, i + 1 + close + 1))
        };
        for s in [
            "[001] x",
            "[1]",
            "[]",
            "[0000001]",
            "[999999]",
            "[12a]",
            "[12 ]",
            "[12",
            "[",
            "[1]]",
            "[x] [1]",
            "[-1]",
            "[٣]",
            "[000000] ..",
        ] {
            assert_eq!(
                cpu_field(s.as_bytes(), 0),
                reference(s.as_bytes(), 0),
                "{s:?}"
            );
        }
    }

    #[test]
    fn tasks_trimmed_at_their_ends_read_as_when_trimmed_at_both() {
        // The reading before the task was known to start where white space ends.
        let reference = |s: &[u8]| task_trimmed(s, trim).map(|(c, p, t)| (c.to_vec(), p, t));
        for s in [
            "mkdir-179     ",
            "a-b-1",
            "a-",
            "-1",
            "1",
            "a-1x",
            "a-12345678901234567",
            "a-123456789012345678",
            "a-1234567890123456789",
            "a-9223372036854775807",
            "a-9223372036854775808",
            "a  -7 ",
            "kworker/u4:1-25",
            "a--3",
            "",
            "dd-4466    (   4466) ",
            "dd-4466    (-------)",
            "my [odd]-name-77  ",
            "x\t-5\t",
            "x-5 \r",
            "(1)",
            "-",
        ] {
            let got = task(s.as_bytes()).map(|(c, p, t)| (c.to_vec(), p, t));
            assert_eq!(got, reference(s.as_bytes()), "{s:?}");
        }
    }

    /// The straightforward reading of a timestamp, to check the one-pass one against.
    fn timestamp_reference(tok: &[u8]) -> Option<u64> {
        let tok = tok.strip_suffix(b":")?;
        let dot = tok.iter().position(|&b| b == b'.');
        let secs = parse_u64(&tok[..dot.unwrap_or(tok.len())])?;
        let Some(dot) = dot else {
            return Some(secs);
        };
        let frac = &tok[dot + 1..];
        if frac.is_empty() || frac.len() > 9 {
            return None;
        }
        let scale = 10u64.pow(9 - frac.len() as u32);
        secs.checked_mul(1_000_000_000)?
            .checked_add(parse_u64(frac)? * scale)
    }

    #[test]
    fn timestamps_read_as_the_reference_reads_them() {
        let parts = [
            "",
            "0",
            "1",
            "34",
            "18446744073",
            "18446744074",
            "18446744073709551615",
            "18446744073709551616",
            "000000000000000000001",
            "00000000000000000001",
            "999999999999999999",
            "18446744074.",
            "1x",
            ".",
            "-1",
            "+1",
        ];
        let fracs = [
            "",
            ".",
            ".0",
            ".268977",
            ".123456789",
            ".1234567890",
            ".12a",
            "..1",
            ".1.",
        ];
        for p in parts {
            for f in fracs {
                for colon in ["", ":", "::"] {
                    let t = format!("{p}{f}{colon}");
                    assert_eq!(
                        timestamp(t.as_bytes()),
                        timestamp_reference(t.as_bytes()),
                        "{t:?}"
                    );
                    // Read in place, it is what the token reading gives, or left to it.
                    for (lead, after) in [("", ""), ("  ", " ev: x"), (" ", "x ev"), ("", "\t")] {
                        let s = format!("{lead}{t}{after}");
                        let at = lead.len();
                        if let Some(found) = timestamp_at(s.as_bytes(), at) {
                            let (tok, end) = token(s.as_bytes(), at).unwrap();
                            assert_eq!(Some(found), timestamp(tok).map(|ts| (ts, end)), "{s:?}");
                        }
                    }
                }
            }
        }
        assert_eq!(timestamp(b"34.268977:"), Some(34_268_977_000));
    }

    #[test]
    fn special_lines() {
        assert_eq!(
            parse(b"CPU:1 [LOST 5 EVENTS]").unwrap(),
            Line::Lost {
                cpu: 1,
                events: Some(5)
            }
        );
        assert_eq!(
            parse(b"CPU:0 [LOST EVENTS]").unwrap(),
            Line::Lost {
                cpu: 0,
                events: None
            }
        );
        assert_eq!(parse(b"# tracer: nop").unwrap(), Line::Header);
        assert_eq!(parse(b"").unwrap(), Line::Header);
        assert_eq!(parse(b"cpus=2").unwrap(), Line::Header);
        assert_eq!(parse(b"CPU 1 is empty").unwrap(), Line::Header);
        assert!(parse(b"CPU 1 is empty now").is_err());
        assert!(parse(b"garbage").is_err());
        assert!(parse(b"G:  s:EX n:2/3347 f:DyIqob t:EX d:UN/0 a:0 v:0 r:3 m:150").is_err());
        assert!(parse(b" H: s:EX f:H e:0 p:1 [a] f+0x1/0x2").is_err());
        assert!(parse(b"x-1 [000] ..... notatime: ev: b").is_err());
    }

    /// System call events print themselves without a name (kernel/trace/trace_syscalls.c).
    #[test]
    fn system_calls_are_named_by_their_tracefs_events() {
        let enter = ev("         python3-3964    [001] ..... 24366.080074: sys_openat(dfd: ffffff9c, filename: 7ffd, flags: 80000, mode: 0)");
        assert_eq!(
            (enter.event, enter.naming),
            (&b"sys_openat"[..], Naming::SyscallEnter)
        );
        assert_eq!(enter.event_name(), "sys_enter_openat");
        assert_eq!(
            enter.body,
            b"dfd: ffffff9c, filename: 7ffd, flags: 80000, mode: 0"
        );
        let exit = ev("         python3-3964    [001] ..... 24366.080076: sys_getppid -> 0xf75");
        assert_eq!(
            (exit.event_name(), exit.body),
            ("sys_exit_getppid".into(), &b"0xf75"[..])
        );
        let none = ev("         python3-3964    [001] ..... 24366.080074: sys_getppid()");
        assert_eq!(
            (none.event_name(), none.body),
            ("sys_enter_getppid".into(), &b""[..])
        );
        assert_eq!(ev("  x-1 [000] ..... 1.0: print: a").event_name(), "print");
        // Not a system call's layout: still no event name.
        for bad in ["sys_x(", "sys_ -> 0x1", "sys_x -> 1", "other(a)"] {
            let line = format!("  x-1 [000] ..... 1.0: {bad}");
            assert!(parse(line.as_bytes()).is_err(), "{line}");
        }
    }
}
