//! Buffers that `read(2)` fills at full speed.
//!
//! The kernel copies a file out of the page cache with `rep movsb`, which runs three to
//! five times slower when the destination lies 1 to 31 bytes after the source modulo
//! 4096: every load then seems to depend on a store just made (4K aliasing). Measured on
//! this project's build machines (AMD EPYC under a hypervisor, Linux 6.18), reading 162 MB
//! 1 MiB at a time from a warm page cache: 15-18 ms with the destination 0 or 33-64 bytes
//! after the source, 42-83 ms with it 8, 28 or 31 bytes after. `wc -l` reads from offset
//! 0 into an aligned buffer and never meets this; a reader that starts in the middle of a
//! file, or moves an unread tail to the front of its buffer and reads after it, lands in
//! that window now and then (glk top's second thread on the bench's 1e6-glock file did
//! whenever the record cut at a read's end left 101 to 131 bytes to carry over).
//!
//! So a buffer read into starts on a [`READ_ALIGN`] boundary, and a read is placed so
//! that its destination has the same offset within 64 bytes as the file offset it reads
//! from: their distance is then a multiple of 64, never in the window.

use std::ops::{Deref, DerefMut};

/// The alignment of [`AlignedBuf`]s, and the period of [`front_for`]'s placement.
pub const READ_ALIGN: usize = 64;

/// A byte buffer whose first byte lies on a [`READ_ALIGN`] boundary. Its bytes are
/// zeroed once, when allocated; it never shrinks.
pub struct AlignedBuf {
    /// The allocation: the buffer is `vec[base..base + len]`, and may grow in place up to
    /// the end of `vec`.
    vec: Vec<u8>,
    base: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes, the first on a [`READ_ALIGN`] boundary.
    pub fn zeroed(len: usize) -> AlignedBuf {
        let vec = vec![0u8; len + READ_ALIGN - 1];
        // `align_offset` may decline (usize::MAX); alignment is only a matter of speed.
        let base = vec.as_ptr().align_offset(READ_ALIGN).min(READ_ALIGN - 1);
        AlignedBuf { vec, base, len }
    }

    /// Makes the buffer at least `len` bytes long, keeping its bytes (and its alignment:
    /// a larger allocation, at least twice the length, gets them copied over).
    pub fn grow(&mut self, len: usize) {
        if len <= self.len {
            return;
        }
        if self.base + len > self.vec.len() {
            let mut more = AlignedBuf::zeroed(len.max(2 * self.len));
            more[..self.len].copy_from_slice(self);
            more.len = self.len;
            *self = more;
        }
        self.len = len;
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.vec[self.base..self.base + self.len]
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.vec[self.base..self.base + self.len]
    }
}

/// Where to put `pending` unread bytes at the front of an [`AlignedBuf`] so that the read
/// after them, from file offset `next`, goes where the kernel copies fastest: the bytes go
/// at the returned index (less than [`READ_ALIGN`]), and the read at the index they end
/// at, which is `next` modulo [`READ_ALIGN`]. With nothing pending, the returned index is
/// where to read to.
pub fn front_for(pending: usize, next: u64) -> usize {
    let want = (next % READ_ALIGN as u64) as usize;
    (want + READ_ALIGN - pending % READ_ALIGN) % READ_ALIGN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_the_boundary_and_have_their_length() {
        for len in [0, 1, 63, 64, 4096, (1 << 20) + 3] {
            let mut b = AlignedBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
            if len > 0 {
                assert_eq!(b.as_ptr() as usize % READ_ALIGN, 0, "len {len}");
                b[len - 1] = 7;
                assert_eq!(b[len - 1], 7);
            }
        }
    }

    #[test]
    fn growing_keeps_the_bytes_and_the_boundary() {
        let mut b = AlignedBuf::zeroed(100);
        for (i, x) in b.iter_mut().enumerate() {
            *x = i as u8;
        }
        for len in [50, 101, 130, 1000, 5000] {
            b.grow(len);
            assert_eq!(b.len(), len.max(100));
            assert_eq!(b.as_ptr() as usize % READ_ALIGN, 0);
            assert!(b[..100].iter().enumerate().all(|(i, &x)| x == i as u8));
            assert!(b[100..].iter().all(|&x| x == 0), "len {len}");
        }
    }

    #[test]
    fn reads_go_where_their_offset_falls_within_64_bytes() {
        for next in [0u64, 1, 31, 63, 64, 116, 4068, 61_845_620, u64::MAX] {
            for pending in 0..300 {
                let front = front_for(pending, next);
                assert!(front < READ_ALIGN);
                assert_eq!(
                    (front + pending) as u64 % READ_ALIGN as u64,
                    next % READ_ALIGN as u64,
                    "pending {pending}, next {next}"
                );
            }
            assert_eq!(front_for(0, next) as u64, next % 64);
        }
    }
}
