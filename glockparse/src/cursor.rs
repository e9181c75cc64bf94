//! A byte cursor for fast parsing: lines printed exactly as the kernel's format strings
//! lay them out are read in one left-to-right pass. Every method returns `None` (or an
//! empty slice) instead of panicking when the input does not match.

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

    #[inline]
    pub fn new(s: &'a [u8]) -> Cursor<'a> {
        Cursor { s, i: 0 }
    }

    #[inline]
    pub fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.s[self.i.min(self.s.len())..]
    }

    #[inline]
    pub fn skip_spaces(&mut self) {
        while self.i < self.s.len() && self.s[self.i] == b' ' {
            self.i += 1;
        }
    }

    #[inline]
    pub fn lit(&mut self, l: &[u8]) -> Option<()> {
        if self.s[self.i.min(self.s.len())..].starts_with(l) {
            self.i += l.len();
            Some(())
        } else {
            None
        }
    }

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

    #[inline]
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.i.checked_add(n)?;
        let w = self.s.get(self.i..end)?;
        self.i = end;
        Some(w)
    }

    /// Unsigned decimal digits (at least one, at most 20).
    #[inline]
    pub fn uint(&mut self) -> Option<u64> {
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&b) = self.s.get(self.i) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.checked_mul(10)?.checked_add(u64::from(d))?;
            self.i += 1;
        }
        (self.i > start).then_some(v)
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
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&b) = self.s.get(self.i) {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => break,
            };
            if self.i - start == 16 {
                return None;
            }
            v = (v << 4) | u64::from(d);
            self.i += 1;
        }
        (self.i > start).then_some(v)
    }
}

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
        assert!(Cursor::new(b"").take(1).is_none());
    }
}
