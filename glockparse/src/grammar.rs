//! The general rules of the formats glockparse reads, written as nom grammars so that
//! they read as the formats do: a line of space-separated `key:value` fields, the values
//! (`%u`, `%ld`, `%llx`, a lock state, a glock id `%u/%llx`), the DLM lock dump's
//! thirteen columns and quoted resource name.
//!
//! The measured hot loops (the exact kernel layouts read by `parse.rs`'s `*_fast`
//! functions with [`crate::cursor::Cursor`]) stay hand-written; every line they accept
//! is held to these grammars by the tests, field for field, on every fixture.

use nom::branch::alt;
use nom::bytes::complete::{tag, take, take_till, take_till1};
use nom::character::complete::{char, digit1, hex_digit1, space0, space1};
use nom::combinator::{all_consuming, map_opt, not, opt, recognize};
use nom::error::Error;
use nom::multi::separated_list0;
use nom::sequence::{delimited, preceded, separated_pair};
use nom::{IResult, Parser};

use crate::id::GlockId;
use crate::num::{parse_hex_u64, parse_i64, parse_u64};
use crate::state::LockState;

/// The input of every grammar: bytes, since a line may hold any.
pub type Input<'a> = &'a [u8];

/// What a grammar gives: the rest of the input and the value read.
pub type Res<'a, T> = IResult<Input<'a>, T>;

/// An unsigned decimal that fits 64 bits (`%u`, `%llu`, `%lu`).
pub fn dec(i: Input) -> Res<u64> {
    map_opt(digit1, parse_u64).parse(i)
}

/// A signed decimal that fits 64 bits (`%d`, `%ld`).
pub fn sdec(i: Input) -> Res<i64> {
    map_opt(recognize((opt(char('-')), digit1)), parse_i64).parse(i)
}

/// A hexadecimal number that fits 64 bits, with or without `0x` (`%llx`, `0x%08x`).
pub fn hex(i: Input) -> Res<u64> {
    map_opt(
        preceded(opt(alt((tag("0x"), tag("0X")))), hex_digit1),
        parse_hex_u64,
    )
    .parse(i)
}

/// A lock state: `UN`, `SH`, `DF`, `EX` or `??`.
pub fn state(i: Input) -> Res<LockState> {
    map_opt(take(2usize), LockState::parse).parse(i)
}

/// A glock id as glocks files print it: `TYPE/NUMBER`, decimal then hex (`2/60af5`).
pub fn glock_id(i: Input) -> Res<GlockId> {
    map_opt(separated_pair(dec, char('/'), hex), |(t, n)| {
        Some(GlockId::new(u32::try_from(t).ok()?, n))
    })
    .parse(i)
}

/// The two sides of `A/B` at its first `/`, each as it is (for messages that name the
/// side that is bad).
pub fn halves(i: Input) -> Res<(Input, Input)> {
    separated_pair(take_till(|b| b == b'/'), char('/'), nom::combinator::rest).parse(i)
}

/// The words of a line: runs of bytes other than space, separated by runs of spaces,
/// with spaces allowed at either end.
pub fn words(i: Input) -> Res<Vec<Input>> {
    all_consuming(delimited(
        space0,
        separated_list0(space1, take_till1(|b| b == b' ')),
        space0,
    ))
    .parse(i)
}

/// One field: `key:value` (the value runs to the word's end and may hold `:`), or a bare
/// word (no value).
pub fn field(word: Input) -> (Input, Option<Input>) {
    match memchr::memchr(b':', word) {
        Some(c) => (&word[..c], Some(&word[c + 1..])),
        None => (word, None),
    }
}

/// The next word, after the spaces before it.
fn next_word(i: Input) -> Res<Input> {
    preceded(space0, take_till1(|b| b == b' ')).parse(i)
}

/// The fields of a line body, read one [`field`] at a time from its [`words`] (the same
/// words, without collecting them).
pub fn fields_of(body: Input) -> impl Iterator<Item = (Input, Option<Input>)> {
    let mut rest = body;
    std::iter::from_fn(move || {
        let (after, word) = next_word(rest).ok()?;
        rest = after;
        Some(field(word))
    })
}

/// `value` read whole by grammar `p`, or None.
pub fn whole<'a, T>(
    p: impl Parser<Input<'a>, Output = T, Error = Error<Input<'a>>>,
    value: Input<'a>,
) -> Option<T> {
    all_consuming(p).parse(value).ok().map(|(_, v)| v)
}

/// A holder line up to its `[comm]`: the fields before it, and the rest of the line
/// from the `[` that starts a word (None when no word starts with `[`).
pub fn holder_head(i: Input) -> (Vec<(Input, Option<Input>)>, Option<Input>) {
    // `separated_list0` always succeeds: no word at all is an empty list.
    let (rest, ws) = head_words(i).unwrap_or((i, Vec::new()));
    let rest = &rest[rest.iter().take_while(|&&b| b == b' ').count()..];
    let tail = (rest.first() == Some(&b'[')).then_some(rest);
    (ws.into_iter().map(field).collect(), tail)
}

/// The words before the first that starts with `[`.
fn head_words(i: Input) -> Res<Vec<Input>> {
    let word = recognize(preceded(
        not(char::<_, Error<Input>>('[')),
        take_till1(|b| b == b' '),
    ));
    preceded(space0, separated_list0(space1, word)).parse(i)
}

/// A DLM lock dump line: the words before the resource name (thirteen in a good line:
/// `id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len`) and
/// the name, between the first `"` and the `"` that ends the line. `Err` names what is
/// missing.
pub fn dlm_lock_line(i: Input) -> Result<(Vec<Input>, Input), &'static str> {
    let mut quoted = (take_till(|b| b == b'"'), char('"'), nom::combinator::rest);
    let (_, (columns, _, name)) = quoted
        .parse(i)
        .map_err(|_: nom::Err<Error<Input>>| "no quoted resource name")?;
    let name = name
        .strip_suffix(b"\"")
        .ok_or("resource name not closed by '\"'")?;
    let (_, cols) = words(columns).map_err(|_| "no quoted resource name")?;
    Ok((cols, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(whole(dec, b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(whole(dec, b"18446744073709551616"), None);
        assert_eq!(whole(sdec, b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(whole(sdec, b"-"), None);
        assert_eq!(whole(hex, b"0x1f"), Some(0x1f));
        assert_eq!(whole(hex, b"1F"), Some(0x1f));
        assert_eq!(whole(hex, b"0x"), None);
        assert_eq!(whole(state, b"EX"), Some(LockState::Exclusive));
        assert_eq!(whole(glock_id, b"2/60af5"), Some(GlockId::new(2, 0x60af5)));
        assert_eq!(whole(halves, b"UN/50/0"), Some((&b"UN"[..], &b"50/0"[..])));
    }

    #[test]
    fn fields_split_as_the_kernel_prints_them() {
        let f: Vec<_> = fields_of(b"  s:SH n:2/1 f: weird t:a:b  ").collect();
        assert_eq!(
            f,
            [
                (&b"s"[..], Some(&b"SH"[..])),
                (b"n", Some(b"2/1")),
                (b"f", Some(b"")),
                (b"weird", None),
                (b"t", Some(b"a:b")),
            ]
        );
        assert_eq!(fields_of(b"").count(), 0);
        let (_, w) = words(b" a  b:c ").unwrap();
        assert_eq!(w, [&b"a"[..], b"b:c"]);
    }

    proptest::proptest! {
        /// The value grammars accept what the hand-written number readers the hot loops
        /// use accept, and read the same value.
        #[test]
        fn values_read_as_the_hot_loops_read_them(s in "[-0-9a-fxX/ ]{0,24}") {
            let b = s.as_bytes();
            proptest::prop_assert_eq!(whole(dec, b), parse_u64(b));
            proptest::prop_assert_eq!(whole(sdec, b), parse_i64(b));
            proptest::prop_assert_eq!(whole(hex, b), parse_hex_u64(b));
            proptest::prop_assert_eq!(whole(glock_id, b), GlockId::parse_hex(b));
        }
    }
}
