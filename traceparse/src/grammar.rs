//! The general rules of ftrace text as nom grammars, read as the formats are written:
//! the pieces of a line's prefix ([`lost`], [`cpu_field`], [`timestamp`], a context-less
//! [`bare_event`]), and an event's body read by the kernel's own `TP_printk` string
//! ([`printk`]).
//!
//! The measured hot loops stay hand-written: `line::parse` reads the usual layout at its
//! places, and `event::decode` reads each gfs2 body with a cursor. Both are held to these
//! grammars by the tests: every line of every fixture trace is read alike by the usual
//! layout and by the general rules built from these pieces, and every gfs2 body the
//! decoder reads is one that its event's `TP_printk` grammar reads, with the same device
//! and glock.

use glockparse::grammar::{dec, hex, sdec, Input, Res};
use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_until, take_while_m_n};
use nom::character::complete::{char, satisfy};
use nom::combinator::{all_consuming, map, map_opt, opt, recognize, rest, value};
use nom::sequence::{delimited, preceded, terminated};
use nom::Parser;

/// `CPU:N [LOST M EVENTS]`: the CPU whose ring buffer overflowed and how many events
/// were lost; `CPU:N [LOST EVENTS]` when the kernel does not know how many (the `trace`
/// file's iterator overrun by the writer). `trace-cmd report` says the same as `CPU:N [M
/// EVENTS DROPPED]` and `CPU:N [EVENTS DROPPED]`.
pub fn lost(i: Input) -> Res<(u64, Option<u64>)> {
    all_consuming((
        preceded(tag("CPU:"), dec),
        alt((
            delimited(tag(" [LOST "), map(dec, Some), tag(" EVENTS]")),
            value(None, tag(" [LOST EVENTS]")),
            delimited(tag(" ["), map(dec, Some), tag(" EVENTS DROPPED]")),
            value(None, tag(" [EVENTS DROPPED]")),
        )),
    ))
    .parse(i)
}

/// `CPU N is empty`: older trace-cmd report's word, on standard output among the events,
/// that a trace.dat holds nothing of CPU N.
pub fn empty_cpu(i: Input) -> Res<u64> {
    all_consuming(delimited(tag("CPU "), dec, tag(" is empty"))).parse(i)
}

/// The `[cpu]` field: one to six digits in brackets.
pub fn cpu_field(i: Input) -> Res<u32> {
    let digits = take_while_m_n(1, 6, |b: u8| b.is_ascii_digit());
    map_opt(delimited(char('['), digits, char(']')), |d: Input| {
        // Six digits always fit.
        Some(glockparse::num::parse_u64(d)? as u32)
    })
    .parse(i)
}

/// A timestamp token, `secs.frac:` (1 to 20 digits of seconds, 1 to 9 of fraction) or a
/// counter clock's `N:`, in nanoseconds (a counter's value as it is).
pub fn timestamp(i: Input) -> Res<u64> {
    let secs = map_opt(take_while_m_n(1, 20, |b: u8| b.is_ascii_digit()), |d| {
        glockparse::num::parse_u64(d)
    });
    let frac = preceded(char('.'), take_while_m_n(1, 9, |b: u8| b.is_ascii_digit()));
    map_opt(
        all_consuming(terminated((secs, opt(frac)), char(':'))),
        |(secs, frac): (u64, Option<Input>)| match frac {
            None => Some(secs),
            Some(f) => {
                let scaled = glockparse::num::parse_u64(f)? * 10u64.pow(9 - f.len() as u32);
                secs.checked_mul(1_000_000_000)?.checked_add(scaled)
            }
        },
    )
    .parse(i)
}

/// A line with no context prefix (`nocontext-info`): `event: body`, the event a
/// tracepoint name (a lower-case letter, then lower-case letters, digits and `_`, three
/// bytes at least), the body after one space.
pub fn bare_event(i: Input) -> Res<(Input, Input)> {
    let name = recognize((
        satisfy(|c| c.is_ascii_lowercase()),
        take_while_m_n(2, usize::MAX, |b: u8| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'
        }),
    ));
    (terminated(name, tag(": ")), rest).parse(i)
}

/// One value of an event body, as its `TP_printk` conversion printed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg<'a> {
    /// `%u`, `%llu`, `%lu`.
    Unsigned(u64),
    /// `%d`, `%lld`, `%ld`.
    Signed(i64),
    /// `%x`, `%02x`, `%08lx`, `%llx`.
    Hex(u64),
    /// `%s`: the text up to what the format prints next.
    Text(&'a [u8]),
}

/// One piece of a `TP_printk` format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'f> {
    /// Text printed as it is.
    Literal(&'f str),
    /// A conversion: its letter (`u`, `d`, `x`, `s`).
    Conversion(u8),
}

/// The pieces of a `TP_printk` format: literals, and conversions with their flags,
/// width and length (`%02x`, `%lld`) reduced to their letter.
fn pieces(fmt: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = fmt;
    while let Some(i) = rest.find('%') {
        if i > 0 {
            out.push(Piece::Literal(&rest[..i]));
        }
        let spec = &rest[i + 1..];
        let len = spec
            .find(|c: char| c.is_ascii_alphabetic() && c != 'l')
            .map_or(spec.len(), |n| n + 1);
        out.push(Piece::Conversion(
            spec.as_bytes().get(len - 1).copied().unwrap_or(b'?'),
        ));
        rest = &spec[len..];
    }
    if !rest.is_empty() {
        out.push(Piece::Literal(rest));
    }
    out
}

/// The body `fmt` prints, read by the grammar `fmt` stands for: its literals as they are,
/// its numbers by their conversions, each `%s` up to the literal after it (the rest of
/// the body when it comes last). `None` when the body is not one `fmt` prints.
pub fn printk<'a>(fmt: &str, body: &'a [u8]) -> Option<Vec<Arg<'a>>> {
    let pieces = pieces(fmt);
    let mut args = Vec::new();
    let mut input = body;
    for (k, piece) in pieces.iter().enumerate() {
        let (after, arg) = match *piece {
            Piece::Literal(text) => (literal(text, input).ok()?.0, None),
            Piece::Conversion(c) => conversion(c, pieces.get(k + 1), input)?,
        };
        args.extend(arg);
        input = after;
    }
    input.is_empty().then_some(args)
}

/// The literal `text` at the start of `input`.
fn literal<'a>(text: &str, input: Input<'a>) -> Res<'a, Input<'a>> {
    tag(text.as_bytes()).parse(input)
}

/// One conversion at the start of `input`, with `next`, the piece after it, which ends
/// a `%s`.
fn conversion<'a>(
    c: u8,
    next: Option<&Piece>,
    input: Input<'a>,
) -> Option<(Input<'a>, Option<Arg<'a>>)> {
    let (after, arg) = match c {
        b'u' => dec(input).map(|(r, v)| (r, Arg::Unsigned(v))),
        b'd' => sdec(input).map(|(r, v)| (r, Arg::Signed(v))),
        b'x' => hex(input).map(|(r, v)| (r, Arg::Hex(v))),
        b's' => text(next, input).map(|(r, v)| (r, Arg::Text(v))),
        _ => return None,
    }
    .ok()?;
    Some((after, Some(arg)))
}

/// A `%s`: up to the first place the literal after it is printed; to the next space
/// when a conversion follows; the rest when it is last.
fn text<'a>(next: Option<&Piece>, input: Input<'a>) -> Res<'a, Input<'a>> {
    match next {
        Some(Piece::Literal(l)) => take_until(l.as_bytes()).parse(input),
        Some(Piece::Conversion(_)) => take_till(|b| b == b' ').parse(input),
        None => rest(input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_pieces() {
        assert_eq!(lost(b"CPU:3 [LOST 17 EVENTS]").unwrap().1, (3, Some(17)));
        assert_eq!(lost(b"CPU:3 [LOST EVENTS]").unwrap().1, (3, None));
        assert!(lost(b"CPU:3 [LOST  EVENTS]").is_err());
        assert_eq!(
            lost(b"CPU:1 [1002 EVENTS DROPPED]").unwrap().1,
            (1, Some(1002))
        );
        assert_eq!(lost(b"CPU:1 [EVENTS DROPPED]").unwrap().1, (1, None));
        assert!(lost(b"CPU:1 [LOST 2 EVENTS DROPPED]").is_err());
        assert!(lost(b"CPU:3 [LOST 17 EVENTS] x").is_err());
        assert_eq!(cpu_field(b"[001] x").unwrap(), (&b" x"[..], 1));
        assert!(cpu_field(b"[1234567]").is_err());
        assert_eq!(timestamp(b"34.268977:").unwrap().1, 34_268_977_000);
        assert_eq!(timestamp(b"123456:").unwrap().1, 123_456);
        assert!(timestamp(b"1.1234567890:").is_err());
        assert_eq!(
            bare_event(b"gfs2_pin: 253,3 x").unwrap().1,
            (&b"gfs2_pin"[..], &b"253,3 x"[..])
        );
        assert!(bare_event(b"G: s:SH").is_err());
    }

    #[test]
    fn bodies_read_by_their_format() {
        let fmt = "%u,%u glock %u:%llu %squeue %s";
        let args = printk(fmt, b"254,0 glock 2:8498 dequeue PR").unwrap();
        assert_eq!(
            args,
            [
                Arg::Unsigned(254),
                Arg::Unsigned(0),
                Arg::Unsigned(2),
                Arg::Unsigned(8498),
                Arg::Text(b"de"),
                Arg::Text(b"PR")
            ]
        );
        assert_eq!(
            printk(fmt, b"254,0 glock 2:8498 queue PR").unwrap()[4],
            Arg::Text(b"")
        );
        assert!(printk(fmt, b"254,0 glock 2:x queue PR").is_none());
        assert!(
            printk(fmt, b"254,0 glock 2:1 queue PR extra").is_some(),
            "%s runs to the end"
        );
        let lock_time = printk("flags:%02x tdiff:%lld", b"flags:1f tdiff:-5").unwrap();
        assert_eq!(lock_time, [Arg::Hex(0x1f), Arg::Signed(-5)]);
    }
}
