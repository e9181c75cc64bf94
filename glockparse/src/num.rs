//! Allocation-free integer parsing from byte slices (the hot path of every parser).

/// Parses an unsigned decimal number; `None` on empty input, a non-digit or overflow.
#[inline]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// Parses a signed decimal number with an optional leading `-`.
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', rest)) => {
            let v = parse_u64(rest)?;
            if v == 1u64 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(v).ok().map(|v| -v)
            }
        }
        _ => i64::try_from(parse_u64(s)?).ok(),
    }
}

/// The decimal digits at the start of `s` when fewer than eight are and `s` has eight
/// bytes: their value and how many there are (0 when `s` starts with a non-digit).
/// `None` when `s` is shorter than eight bytes or starts with eight digits, for a
/// byte-by-byte reading to go on with.
///
/// All eight bytes are read as one word, without a branch per digit (SWAR): the first
/// non-digit is found from the bytes' differences to `'0'`, and the digits before it are
/// shifted to the top of the word and summed in three multiplications, as in
/// simdjson's eight-digit parse.
#[inline(always)]
pub fn short_digits(s: &[u8]) -> Option<(u64, usize)> {
    let word: [u8; 8] = s.get(..8)?.try_into().ok()?;
    let x = u64::from_le_bytes(word);
    let d = x.wrapping_sub(0x3030_3030_3030_3030);
    // A byte's top bit is set in `d` when it is below '0' and in `d + 0x76` when it is
    // above '9'. A borrow or carry can only come from a lower byte that is not a digit,
    // so the lowest flagged byte is the first non-digit.
    let flagged = (d | d.wrapping_add(0x7676_7676_7676_7676)) & 0x8080_8080_8080_8080;
    if flagged == 0 {
        return None;
    }
    let n = (flagged.trailing_zeros() / 8) as usize;
    if n == 0 {
        return Some((0, 0));
    }
    // The n digits at the top, zeros (leading zero digits) below: eight digits' value.
    let v = d << (64 - 8 * n as u32);
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let v = ((v & 0x0000_00ff_0000_00ff)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00ff_0000_00ff).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    Some((v, n))
}

/// Parses lower- or upper-case hex digits, with an optional `0x` prefix.
#[inline]
pub fn parse_hex_u64(s: &[u8]) -> Option<u64> {
    let s = s
        .strip_prefix(b"0x")
        .or_else(|| s.strip_prefix(b"0X"))
        .unwrap_or(s);
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"1a"), None);
        assert_eq!(parse_i64(b"-128"), Some(-128));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-"), None);
    }

    #[test]
    fn short_digit_runs_read_as_the_byte_loop_reads_them() {
        let reference = |s: &[u8]| -> Option<(u64, usize)> {
            let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
            (s.len() >= 8 && n < 8).then(|| (parse_u64(&s[..n]).unwrap_or(0), n))
        };
        // Every byte after runs of every length, and runs of every digit.
        let mut seen = 0;
        for n in 0..=9 {
            for digit in b'0'..=b'9' {
                for stop in 0..=255u8 {
                    for len in [n, n + 1, 8, 9, 12] {
                        let mut s: Vec<u8> = (0..n)
                            .map(|k| b"9876543210"[(k + usize::from(digit)) % 10])
                            .collect();
                        s.push(stop);
                        s.extend(b"12345678901");
                        s.truncate(len);
                        assert_eq!(short_digits(&s), reference(&s), "{s:?}");
                        seen += usize::from(short_digits(&s).is_some());
                    }
                }
            }
        }
        assert!(seen > 10_000, "{seen}");
        assert_eq!(short_digits(b"1234567 "), Some((1_234_567, 7)));
        assert_eq!(short_digits(b"0000042:"), Some((42, 7)));
        assert_eq!(short_digits(b"12345678"), None);
    }

    #[test]
    fn hex() {
        assert_eq!(parse_hex_u64(b"ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_hex_u64(b"0x1F"), Some(31));
        assert_eq!(parse_hex_u64(b"10000000000000000"), None);
        assert_eq!(parse_hex_u64(b"0x"), None);
        assert_eq!(parse_hex_u64(b"g"), None);
    }
}
