//! Searches over the few dozen bytes of one line, where a call into `memchr` (a dispatch
//! through a function pointer, then its vector loop's own set-up) costs more than the
//! search itself.

/// The first `b` in `s`, 16 bytes at a time (SSE2, which every x86-64 has), inlined.
#[inline(always)]
pub fn find_short(b: u8, s: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut i = 0;
        while i + 16 <= s.len() {
            // SAFETY: SSE2 is part of x86-64 itself; the load reads `s[i..i + 16]`.
            let m = unsafe {
                let v = _mm_loadu_si128(s.as_ptr().add(i).cast());
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))) as u32
            };
            if m != 0 {
                return Some(i + m.trailing_zeros() as usize);
            }
            i += 16;
        }
        s[i..].iter().position(|&c| c == b).map(|k| i + k)
    }
    #[cfg(not(target_arch = "x86_64"))]
    memchr::memchr(b, s)
}

/// The last `b` in `s`, 16 bytes at a time from the end (SSE2), inlined: [`find_short`]
/// from the other side.
#[inline(always)]
pub fn rfind_short(b: u8, s: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut end = s.len();
        while end >= 16 {
            // SAFETY: SSE2 is part of x86-64 itself; the load reads `s[end - 16..end]`.
            let m = unsafe {
                let v = _mm_loadu_si128(s.as_ptr().add(end - 16).cast());
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))) as u32
            };
            if m != 0 {
                return Some(end - 16 + 31 - m.leading_zeros() as usize);
            }
            end -= 16;
        }
        s[..end].iter().rposition(|&c| c == b)
    }
    #[cfg(not(target_arch = "x86_64"))]
    memchr::memrchr(b, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_finds_from_either_side_agree_with_memchr_at_every_length_and_place() {
        for len in 0..70 {
            for at in 0..=len {
                let mut s = vec![b'x'; len];
                if at < len {
                    s[at] = b'\n';
                }
                // A second match after the first, and bytes that differ only in the high bit.
                if at + 3 < len {
                    s[at + 3] = b'\n';
                }
                if at > 0 {
                    s[at - 1] = b'\n' | 0x80;
                }
                assert_eq!(
                    find_short(b'\n', &s),
                    memchr::memchr(b'\n', &s),
                    "{len} {at}"
                );
                assert_eq!(
                    rfind_short(b'\n', &s),
                    memchr::memrchr(b'\n', &s),
                    "{len} {at}"
                );
                // The mirror image, for the search from the end: a match before the last one
                // and a look-alike after it.
                let mut s = vec![b'x'; len];
                if at < len {
                    s[at] = b'\n';
                    if at >= 3 {
                        s[at - 3] = b'\n';
                    }
                }
                if at + 1 < len {
                    s[at + 1] = b'\n' | 0x80;
                }
                assert_eq!(
                    rfind_short(b'\n', &s),
                    memchr::memrchr(b'\n', &s),
                    "from the end: {len} {at}"
                );
            }
        }
    }
}
