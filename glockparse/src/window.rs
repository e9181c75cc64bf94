//! The 64 bytes from a line's start, classified at once: a bit per byte (bit `k` for byte
//! `k`) for each class of byte the skim's line checks need. With the classes in hand, a
//! line's fields are found and checked a field at a time (its spaces, where each number
//! ends, whether a field holds only digits) instead of a byte at a time.
//!
//! [`Classes::of`] is the portable reading, a byte at a time; [`Classes::avx2`] does the
//! same 32 bytes at a time. Beside the classes, for the same lines: the hex or decimal
//! number a line's text starts with, read without a loop, and whether a line starts with
//! a line kept before, compared 32 bytes at a time. Tests hold each vector reading to a
//! plain one.

/// Bit masks over the 64 bytes of a window: bit `k` is set when byte `k` is of the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Classes {
    /// `\n`.
    pub nl: u64,
    /// ` `.
    pub space: u64,
    /// `0`-`9`.
    pub digit: u64,
    /// `0`-`9`, `a`-`f`, `A`-`F`: the bytes [`crate::cursor::hex_digit`] takes.
    pub hex: u64,
    /// `-`.
    pub minus: u64,
}

impl Classes {
    /// The classes of `w`, a byte at a time: what [`Classes::avx2`] is tested against.
    #[cfg(test)]
    pub fn of(w: &[u8; 64]) -> Classes {
        let mut c = Classes {
            nl: 0,
            space: 0,
            digit: 0,
            hex: 0,
            minus: 0,
        };
        for (k, &b) in w.iter().enumerate() {
            let bit = 1u64 << k;
            let set = |m: &mut u64, yes: bool| *m |= if yes { bit } else { 0 };
            set(&mut c.nl, b == b'\n');
            set(&mut c.space, b == b' ');
            set(&mut c.digit, b.is_ascii_digit());
            set(&mut c.hex, crate::cursor::hex_digit(b).is_some());
            set(&mut c.minus, b == b'-');
        }
        c
    }

    /// The classes of `w`, 32 bytes at a time.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn avx2(w: &[u8; 64]) -> Classes {
        use avx2::*;
        use std::arch::x86_64::*;
        // SAFETY: the caller guarantees AVX2 (this function's contract); the two loads
        // read the 64 bytes of `w`.
        unsafe {
            let lo = _mm256_loadu_si256(w.as_ptr().cast());
            let hi = _mm256_loadu_si256(w.as_ptr().add(32).cast());
            let digit = bits(within(lo, b'0', 9), within(hi, b'0', 9));
            // `| 0x20` takes `A`-`F` to `a`-`f`, and nothing else there.
            let case = _mm256_set1_epi8(0x20);
            let letter = bits(
                within(_mm256_or_si256(lo, case), b'a', 5),
                within(_mm256_or_si256(hi, case), b'a', 5),
            );
            Classes {
                nl: eq(lo, hi, b'\n'),
                space: eq(lo, hi, b' '),
                digit,
                hex: digit | letter,
                minus: eq(lo, hi, b'-'),
            }
        }
    }
}

/// The vector steps of [`Classes::avx2`]; each needs AVX2.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// A bit per byte of the two halves: `lo` in bits 0-31, `hi` in 32-63.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn bits(lo: __m256i, hi: __m256i) -> u64 {
        _mm256_movemask_epi8(lo) as u32 as u64 | (_mm256_movemask_epi8(hi) as u32 as u64) << 32
    }

    /// The bytes of `lo` and `hi` equal to `b`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn eq(lo: __m256i, hi: __m256i, b: u8) -> u64 {
        // SAFETY: AVX2 is enabled for this function, and `bits` needs nothing more.
        unsafe {
            let b = _mm256_set1_epi8(b as i8);
            bits(_mm256_cmpeq_epi8(lo, b), _mm256_cmpeq_epi8(hi, b))
        }
    }

    /// All ones in the bytes of `v` from `from` to `from + span`: `v - from`, as an
    /// unsigned byte, is at most `span` exactly when `min` leaves it as it is.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn within(v: __m256i, from: u8, span: u8) -> __m256i {
        let t = _mm256_sub_epi8(v, _mm256_set1_epi8(from as i8));
        _mm256_cmpeq_epi8(_mm256_min_epu8(t, _mm256_set1_epi8(span as i8)), t)
    }
}

/// Whether `rest` starts with the first `len` bytes of `kept` (`len` ≤ 128), 32 bytes at a
/// time; where `rest` has too few bytes for whole 32-byte loads, as `starts_with`. A call
/// to `memcmp` costs more than the compare on lines this short.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn starts_with_avx2(rest: &[u8], kept: &[u8; 128], len: usize) -> bool {
    use std::arch::x86_64::*;
    let len = len.min(128);
    // Most kept lines are at most 64 bytes: one 64-bit mask, no loop.
    if len <= 64 && rest.len() >= 64 {
        // SAFETY: 64 bytes of each, checked above (`kept` has 128).
        let same = unsafe {
            let a = _mm256_cmpeq_epi8(
                _mm256_loadu_si256(rest.as_ptr().cast()),
                _mm256_loadu_si256(kept.as_ptr().cast()),
            );
            let b = _mm256_cmpeq_epi8(
                _mm256_loadu_si256(rest.as_ptr().add(32).cast()),
                _mm256_loadu_si256(kept.as_ptr().add(32).cast()),
            );
            _mm256_movemask_epi8(a) as u32 as u64 | (_mm256_movemask_epi8(b) as u32 as u64) << 32
        };
        let wanted = u64::MAX.checked_shr(64 - len as u32).unwrap_or(0);
        return !same & wanted == 0;
    }
    let chunks = len.div_ceil(32);
    if rest.len() < chunks * 32 {
        return rest.starts_with(&kept[..len]);
    }
    for k in 0..chunks {
        // SAFETY: both loads read 32 bytes within their slices, checked above.
        let same = unsafe {
            let a = _mm256_loadu_si256(rest.as_ptr().add(32 * k).cast());
            let b = _mm256_loadu_si256(kept.as_ptr().add(32 * k).cast());
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)) as u32
        };
        let wanted = match len - 32 * k {
            32.. => u32::MAX,
            n => (1u32 << n) - 1,
        };
        if !same & wanted != 0 {
            return false;
        }
    }
    true
}

/// The line `w` starts with, if its `\n` is among the 64 bytes: its bytes through the `\n`
/// with zeros after, and its length; as [`crate::brief`]'s portable reading gives them.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1")]
#[inline]
pub(crate) unsafe fn short_line_avx2(w: &[u8; 64]) -> Option<([u8; 64], usize)> {
    use avx2::*;
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees AVX2 and BMI1; the loads read the 64 bytes of `w`
    // and the stores write the 64 bytes of `bytes`.
    unsafe {
        let lo = _mm256_loadu_si256(w.as_ptr().cast());
        let hi = _mm256_loadu_si256(w.as_ptr().add(32).cast());
        let nl = eq(lo, hi, b'\n');
        if nl == 0 {
            return None;
        }
        let len = nl.trailing_zeros() as usize + 1;
        // Byte `k` is kept when `k < len`.
        let n = _mm256_set1_epi8(len as i8);
        let iota = _mm256_setr_epi8(
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
            24, 25, 26, 27, 28, 29, 30, 31,
        );
        let keep_lo = _mm256_cmpgt_epi8(n, iota);
        let keep_hi = _mm256_cmpgt_epi8(n, _mm256_add_epi8(iota, _mm256_set1_epi8(32)));
        let mut bytes = [0u8; 64];
        _mm256_storeu_si256(bytes.as_mut_ptr().cast(), _mm256_and_si256(lo, keep_lo));
        _mm256_storeu_si256(
            bytes.as_mut_ptr().add(32).cast(),
            _mm256_and_si256(hi, keep_hi),
        );
        Some((bytes, len))
    }
}

/// The hex digits `s` starts with: their value (of the first 16) and how many there are
/// (up to 32), without a loop: the digits are turned into nibbles, those past the count
/// cleared, paired into bytes and read as one big-endian word.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn hex_prefix_avx2(s: &[u8; 32]) -> (u64, u32) {
    use avx2::*;
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees AVX2; the load reads the 32 bytes of `s`.
    unsafe {
        let v = _mm256_loadu_si256(s.as_ptr().cast());
        let case = _mm256_set1_epi8(0x20);
        let digit = within(v, b'0', 9);
        let letter = within(_mm256_or_si256(v, case), b'a', 5);
        let hex = _mm256_movemask_epi8(_mm256_or_si256(digit, letter)) as u32;
        let n = (!hex).trailing_zeros();
        let lo = _mm256_castsi256_si128(v);
        // `0`-`9` are 0x30-0x39, `a`-`f` 0x61-0x66, `A`-`F` 0x41-0x46: the low nibble, plus 9
        // for letters (bit 6 set).
        let low = _mm_and_si128(lo, _mm_set1_epi8(0x0f));
        let letters = _mm_and_si128(_mm_srli_epi16(lo, 6), _mm_set1_epi8(1));
        let nibbles = _mm_add_epi8(low, _mm_add_epi8(_mm_slli_epi16(letters, 3), letters));
        let iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let kept = _mm_cmpgt_epi8(_mm_set1_epi8(n.min(16) as i8), iota);
        let nibbles = _mm_and_si128(nibbles, kept);
        // Each pair of nibbles as one byte, first digit high: 16 * first + second.
        let pairs = _mm_maddubs_epi16(nibbles, _mm_set1_epi16(0x0110));
        let bytes = _mm_packus_epi16(pairs, pairs);
        let word = (_mm_cvtsi128_si64(bytes) as u64).swap_bytes();
        let value = match n {
            0 => 0,
            1..=16 => word >> (4 * (16 - n)),
            _ => word,
        };
        (value, n)
    }
}

/// How many decimal digits `s` starts with (up to 32).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn digit_prefix_avx2(s: &[u8; 32]) -> u32 {
    use avx2::*;
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees AVX2; the load reads the 32 bytes of `s`.
    unsafe {
        let v = _mm256_loadu_si256(s.as_ptr().cast());
        (!(_mm256_movemask_epi8(within(v, b'0', 9)) as u32)).trailing_zeros()
    }
}

/// Bits `0..k` (`k` ≤ 63).
#[inline(always)]
pub(crate) fn below(k: u32) -> u64 {
    (1u64 << k) - 1
}

/// Whether `m` has a run of 17 or more set bits: a number that long may overflow or pass a
/// field's limit, which only the byte-at-a-time reading checks.
#[inline(always)]
pub(crate) fn has_run_of_17(m: u64) -> bool {
    let mut r = m & (m >> 1); // runs of 2
    r &= r >> 2; // 4
    r &= r >> 4; // 8
    r &= r >> 8; // 16
    r &= r >> 1; // 17
    r != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the AVX2 readings can be checked on this CPU; if not, says so (and fails
    /// under CI, whose machines have AVX2).
    fn can_check_avx2(test: &str) -> bool {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            return true;
        }
        testdata::skip(test, "this CPU has no AVX2");
        false
    }

    #[test]
    fn vector_classes_agree_with_the_byte_loop_for_every_byte_at_every_place() {
        if !can_check_avx2("vector_classes_agree_with_the_byte_loop_for_every_byte_at_every_place")
        {
            return;
        }
        for b in 0..=255u8 {
            for at in 0..64 {
                let mut w = [b'x'; 64];
                w[at] = b;
                w[(at + 17) % 64] = b.wrapping_add(1);
                w[(at + 40) % 64] = b.wrapping_sub(1);
                #[cfg(target_arch = "x86_64")]
                // SAFETY: AVX2 was detected above.
                assert_eq!(unsafe { Classes::avx2(&w) }, Classes::of(&w), "{b} at {at}");
            }
        }
    }

    #[test]
    fn vector_prefix_compares_agree_with_starts_with() {
        if !can_check_avx2("vector_prefix_compares_agree_with_starts_with") {
            return;
        }
        let mut kept = [0u8; 128];
        for (k, b) in kept.iter_mut().enumerate() {
            *b = b'a' + (k % 26) as u8;
        }
        for len in 0..=128 {
            for extra in [0, 1, 31, 32, 64] {
                let rest: Vec<u8> = kept
                    .iter()
                    .chain(b"xyz".iter().cycle())
                    .take(len + extra)
                    .copied()
                    .collect();
                // Equal, then differing at every place (the last byte of a chunk, the first
                // past `len` which must not count).
                for at in std::iter::once(usize::MAX).chain(0..rest.len()) {
                    let mut r = rest.clone();
                    if at != usize::MAX {
                        r[at] ^= 0x80;
                    }
                    let want = r.starts_with(&kept[..len]);
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: AVX2 was detected above.
                    let got = unsafe { starts_with_avx2(&r, &kept, len) };
                    #[cfg(target_arch = "x86_64")]
                    assert_eq!(got, want, "len {len} extra {extra} at {at}");
                    let _ = want;
                }
            }
        }
    }

    #[test]
    fn vector_number_prefixes_agree_with_the_byte_loop() {
        if !can_check_avx2("vector_number_prefixes_agree_with_the_byte_loop") {
            return;
        }
        let digits = b"0123456789abcdefABCDEF";
        let stops = b" /:\ngGxX\x00\xff\x80\xb0\xe6@`";
        let mut rng = testdata::Xorshift::new(0x2545_f491_4f6c_dd1d);
        for n in 0..=32usize {
            for &stop in stops {
                for _ in 0..40 {
                    let mut s = [stop; 32];
                    for b in s.iter_mut().take(n) {
                        *b = digits[rng.below(digits.len())];
                    }
                    let text = std::str::from_utf8(&s[..n]).unwrap();
                    let want_n = n as u32;
                    let want_v = u64::from_str_radix(&text[..n.min(16)], 16).unwrap_or(0);
                    #[cfg(target_arch = "x86_64")]
                    {
                        // SAFETY: AVX2 was detected above.
                        let got = unsafe { hex_prefix_avx2(&s) };
                        assert_eq!(got, (want_v, want_n), "{:?}", String::from_utf8_lossy(&s));
                        let decimal = s.iter().take_while(|b| b.is_ascii_digit()).count() as u32;
                        // SAFETY: as above.
                        assert_eq!(unsafe { digit_prefix_avx2(&s) }, decimal);
                    }
                    let _ = (want_n, want_v);
                }
            }
        }
    }

    #[test]
    fn the_byte_loop_classes() {
        let mut w = [b'x'; 64];
        w[..12].copy_from_slice(b"a:-5 n:2/F\ng");
        let c = Classes::of(&w);
        assert_eq!(c.nl, 1 << 10);
        assert_eq!(c.space, 1 << 4);
        assert_eq!(c.digit, 1 << 3 | 1 << 7);
        assert_eq!(c.hex, 1 | 1 << 3 | 1 << 7 | 1 << 9);
        assert_eq!(c.minus, 1 << 2);
    }

    #[test]
    fn runs_of_17_bits_are_found_anywhere() {
        for len in 0..=64u32 {
            for at in 0..=64 - len {
                let m = match len {
                    0 => 0,
                    64 => u64::MAX,
                    _ => below(len) << at,
                };
                assert_eq!(has_run_of_17(m), len >= 17, "{len} at {at}");
                // Two shorter runs with a gap do not add up.
                if (17..64).contains(&len) {
                    let split = m & !(1u64 << (at + 8));
                    assert_eq!(has_run_of_17(split), len - 9 >= 17, "split {len} at {at}");
                }
            }
        }
    }
}
