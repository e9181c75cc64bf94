//! A byte cursor for fast parsing: lines printed exactly as the kernel's format strings
//! lay them out are read in one left-to-right pass. Every method returns `None` (or an
//! empty slice) instead of panicking when the input does not match.

/// A position in a byte string, for hand-written grammars: each step consumes what it
/// matches and returns `None` (consuming nothing) when it does not match.
pub struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.i
    }

    /// A cursor at the start of `s`.
    #[inline]
    pub fn new(s: &'a [u8]) -> Cursor<'a> {
        Cursor { s, i: 0 }
    }

    /// Whether everything was consumed.
    #[inline]
    pub fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    /// What is left.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.s[self.i.min(self.s.len())..]
    }

    /// Skips spaces.
    #[inline]
    pub fn skip_spaces(&mut self) {
        while self.i < self.s.len() && self.s[self.i] == b' ' {
            self.i += 1;
        }
    }

    /// Consumes the literal `l`.
    #[inline]
    pub fn lit(&mut self, l: &[u8]) -> Option<()> {
        if self.s[self.i.min(self.s.len())..].starts_with(l) {
            self.i += l.len();
            Some(())
        } else {
            None
        }
    }

    /// Consumes the byte `b`.
    #[inline]
    pub fn byte(&mut self, b: u8) -> Option<()> {
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// Bytes up to (not including) the next space or the end.
    #[inline]
    pub fn word(&mut self) -> &'a [u8] {
        let start = self.i.min(self.s.len());
        let mut j = start;
        while j < self.s.len() && self.s[j] != b' ' {
            j += 1;
        }
        self.i = j;
        &self.s[start..j]
    }

    /// Consumes the next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.i.checked_add(n)?;
        let w = self.s.get(self.i..end)?;
        self.i = end;
        Some(w)
    }

    /// Unsigned decimal digits (at least one; `None` past `u64::MAX`). The first 19
    /// digits cannot overflow and are summed without checks.
    #[inline]
    pub fn uint(&mut self) -> Option<u64> {
        let s = self.rest();
        if let Some((v, n)) = crate::num::short_digits(s) {
            if n == 0 {
                return None;
            }
            self.i += n;
            return Some(v);
        }
        let mut n = 0;
        let mut v: u64 = 0;
        while n < s.len().min(19) {
            let d = s[n].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v * 10 + u64::from(d);
            n += 1;
        }
        if n == 19 {
            while let Some(&b) = s.get(n) {
                let d = b.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                v = v.checked_mul(10)?.checked_add(u64::from(d))?;
                n += 1;
            }
        }
        if n == 0 {
            return None;
        }
        self.i += n;
        Some(v)
    }

    /// Signed decimal with an optional `-`.
    #[inline]
    pub fn int(&mut self) -> Option<i64> {
        if self.byte(b'-').is_some() {
            let v = self.uint()?;
            if v == 1u64 << 63 {
                return Some(i64::MIN);
            }
            return i64::try_from(v).ok().map(|v| -v);
        }
        i64::try_from(self.uint()?).ok()
    }

    /// Lower-case or upper-case hex digits (at least one, at most 16).
    #[inline]
    pub fn hex(&mut self) -> Option<u64> {
        let s = self.rest();
        let mut n = 0;
        let mut v: u64 = 0;
        while let Some(&b) = s.get(n) {
            let Some(d) = hex_digit(b) else {
                break;
            };
            if n == 16 {
                return None;
            }
            v = (v << 4) | u64::from(d);
            n += 1;
        }
        if n == 0 {
            return None;
        }
        self.i += n;
        Some(v)
    }

    /// The literal `l`, then an unsigned decimal: a printed `l%u` field.
    #[inline(always)]
    pub fn lit_uint(&mut self, l: &[u8]) -> Option<u64> {
        self.lit(l)?;
        self.uint()
    }

    /// The literal `l`, then a signed decimal: a printed `l%d` field.
    #[inline(always)]
    pub fn lit_int(&mut self, l: &[u8]) -> Option<i64> {
        self.lit(l)?;
        self.int()
    }

    /// The literal `l`, then hex digits: a printed `l%x` field.
    #[inline(always)]
    pub fn lit_hex(&mut self, l: &[u8]) -> Option<u64> {
        self.lit(l)?;
        self.hex()
    }

    /// The literal `l`, then `%u/%u` (a block and a length, say).
    #[inline(always)]
    pub fn lit_uint_pair(&mut self, l: &[u8]) -> Option<(u64, u64)> {
        let a = self.lit_uint(l)?;
        Some((a, self.lit_uint(b"/")?))
    }

    /// A field printed only by some kernels: `Some(None)` when `l` is not there,
    /// `Some(Some(v))` for `l%u`, `None` when `l` is there without a number.
    #[inline(always)]
    pub fn opt_lit_uint(&mut self, l: &[u8]) -> Option<Option<u64>> {
        match self.lit(l) {
            Some(()) => self.uint().map(Some),
            None => Some(None),
        }
    }
}

/// The value of a hex digit (either case).
#[inline(always)]
pub fn hex_digit(b: u8) -> Option<u8> {
    let d = HEX[usize::from(b)];
    (d < 16).then_some(d)
}

/// Hex digit values; 0xff for every other byte.
static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stop_at_non_digits() {
        let mut c = Cursor::new(b"123/ffx -5 18446744073709551616");
        assert_eq!(c.uint(), Some(123));
        c.byte(b'/').unwrap();
        assert_eq!(c.hex(), Some(0xff));
        assert_eq!(c.word(), b"x");
        c.skip_spaces();
        assert_eq!(c.int(), Some(-5));
        c.skip_spaces();
        assert_eq!(c.uint(), None);
        let mut c = Cursor::new(b"11112222333344445");
        assert_eq!(c.hex(), None);
        let mut c = Cursor::new(b"ffffFFFFffffFFFF/18446744073709551615 99999999999999999999");
        assert_eq!(c.hex(), Some(u64::MAX));
        c.byte(b'/').unwrap();
        assert_eq!(c.uint(), Some(u64::MAX));
        c.skip_spaces();
        assert_eq!(c.uint(), None);
        let mut c = Cursor::new(b"0000000000000000000000012x");
        assert_eq!(c.uint(), Some(12));
        assert_eq!(c.word(), b"x");
        assert!(Cursor::new(b"").take(1).is_none());
    }
}
