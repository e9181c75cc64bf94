//! Opening inputs: plain, gzip, xz, zstd or bzip2, recognised by magic bytes, never by name.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use crate::align::AlignedBuf;

/// Compression recognised from a stream's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain.
    None,
    /// gzip.
    Gzip,
    /// xz.
    Xz,
    /// zstd.
    Zstd,
    /// bzip2 (gfs2_lockcapture's tarballs).
    Bzip2,
}

impl Compression {
    /// The compression a file's first bytes say.
    pub fn detect(magic: &[u8]) -> Compression {
        if magic.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if magic.len() >= 4 && magic.starts_with(b"BZh") && (b'1'..=b'9').contains(&magic[3])
        {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }
}

const BUF: usize = 256 * 1024;

/// Wraps a reader, decompressing it if its first bytes are a gzip, xz, zstd or bzip2
/// header.
pub fn decompress<R: Read + Send + 'static>(inner: R) -> io::Result<Box<dyn Read + Send>> {
    let mut br = BufReader::with_capacity(BUF, inner);
    let kind = {
        // Fill until we have enough bytes for the longest magic, or hit EOF.
        let buf = br.fill_buf()?;
        Compression::detect(buf)
    };
    Ok(match kind {
        // Plain: hand out what was buffered, then read the source straight into the
        // caller's buffer (a BufReader would copy every byte twice for reads smaller
        // than its capacity).
        Compression::None => {
            let head = br.buffer().to_vec();
            Box::new(io::Cursor::new(head).chain(br.into_inner()))
        }
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(br)),
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(br)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(br)?),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(br)),
    })
}

/// Opens a file, decompressing it transparently. The error names the path.
pub fn open(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    let file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    decompress(file).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Opens a file (decompressing it) and hands it to a reader with the file's name, as the
/// line-oriented readers take a source and a name for their diagnostics.
pub fn read_path<T>(
    path: &Path,
    read: impl FnOnce(Box<dyn Read + Send>, &str) -> T,
) -> io::Result<T> {
    Ok(read(open(path)?, &path.display().to_string()))
}

/// Reads a source on its own thread, a block ahead of the consumer: the kernel formatting
/// a live debugfs file (or a decompressor) works while the caller parses what came before.
/// Memory is bounded by its depth ([`Prefetch::BLOCKS`] unless told otherwise) in blocks
/// of [`Prefetch::BLOCK`] bytes.
pub struct Prefetch {
    /// Blocks with the length read into each (a block keeps its full size, so refilling
    /// it costs no zeroing).
    blocks: std::sync::mpsc::Receiver<io::Result<(AlignedBuf, usize)>>,
    /// Consumed blocks go back to the reading thread: no allocation (and no page faults
    /// on fresh memory) per block.
    spent: std::sync::mpsc::SyncSender<AlignedBuf>,
    /// The block being handed out (empty before the first).
    cur: AlignedBuf,
    len: usize,
    at: usize,
    done: bool,
}

impl Prefetch {
    /// Bytes asked of the source per read.
    pub const BLOCK: usize = 1 << 20;
    /// Blocks read ahead.
    pub const BLOCKS: usize = 2;

    /// Starts reading `src` on a thread, [`Prefetch::BLOCKS`] blocks ahead. The thread ends
    /// at the end of the source, at an error (handed to the consumer in order), or when the
    /// `Prefetch` is dropped.
    pub fn new(src: Box<dyn Read + Send>) -> Prefetch {
        Prefetch::with_depth(src, Prefetch::BLOCKS)
    }

    /// As [`Prefetch::new`], reading up to `blocks` blocks ahead (at least one): deep
    /// enough to read a whole live file while the caller does other work first.
    pub fn with_depth(mut src: Box<dyn Read + Send>, blocks: usize) -> Prefetch {
        let depth = blocks.max(1);
        let (tx, blocks) = std::sync::mpsc::sync_channel(depth);
        let (spent, reuse) = std::sync::mpsc::sync_channel::<AlignedBuf>(depth + 2);
        std::thread::spawn(move || loop {
            let mut buf = reuse
                .try_recv()
                .unwrap_or_else(|_| AlignedBuf::zeroed(Prefetch::BLOCK));
            // Fill the block: a debugfs file hands out 32 KiB or less per read, and a
            // block per read would make the depth worth a few hundred KiB.
            let mut n = 0;
            let mut failed = None;
            while n < buf.len() {
                match src.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            let full = n == buf.len();
            if n > 0 && tx.send(Ok((buf, n))).is_err() {
                return;
            }
            if let Some(e) = failed {
                let _ = tx.send(Err(e));
                return;
            }
            if !full {
                return;
            }
        });
        Prefetch {
            blocks,
            spent,
            cur: AlignedBuf::zeroed(0),
            len: 0,
            at: 0,
            done: false,
        }
    }
}

impl Read for Prefetch {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.len {
            if self.done {
                return Ok(0);
            }
            match self.blocks.recv() {
                Ok(Ok((b, n))) => {
                    let old = std::mem::replace(&mut self.cur, b);
                    if !old.is_empty() {
                        let _ = self.spent.try_send(old);
                    }
                    self.len = n;
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.len - self.at);
        out[..n].copy_from_slice(&self.cur[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn roundtrip(data: Vec<u8>) -> String {
        let mut out = String::new();
        decompress(io::Cursor::new(data))
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn all_compressions_are_read() {
        let text = "G:  s:EX n:2/1 f: t:EX d:EX/0 a:0 v:0 r:3 m:200\n".repeat(100);
        assert_eq!(roundtrip(text.clone().into_bytes()), text);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text.as_bytes()).unwrap();
        assert_eq!(roundtrip(gz.finish().unwrap()), text);
        let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(text.as_bytes()).unwrap();
        assert_eq!(roundtrip(xz.finish().unwrap()), text);
        let zs = zstd::stream::encode_all(text.as_bytes(), 1).unwrap();
        assert_eq!(roundtrip(zs), text);
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        bz.write_all(text.as_bytes()).unwrap();
        assert_eq!(roundtrip(bz.finish().unwrap()), text);
        // "BZh" alone (a text that starts so) is not bzip2.
        assert_eq!(roundtrip(b"BZhello\n".to_vec()), "BZhello\n");
        assert_eq!(roundtrip(Vec::new()), "");
    }

    #[test]
    fn prefetch_hands_every_byte_in_order_then_the_error() {
        struct Source {
            data: Vec<u8>,
            at: usize,
        }
        impl Read for Source {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if self.at == self.data.len() {
                    return Err(io::Error::other("device gone"));
                }
                // Short, uneven reads.
                let n = out
                    .len()
                    .min(self.data.len() - self.at)
                    .min(7 + self.at % 5000);
                out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
                self.at += n;
                Ok(n)
            }
        }
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut p = Prefetch::new(Box::new(Source {
            data: data.clone(),
            at: 0,
        }));
        let mut got = Vec::new();
        let err = p.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.to_string(), "device gone");
        assert_eq!(got, data);
        let mut empty = Prefetch::new(Box::new(io::empty()));
        assert_eq!(empty.read(&mut [0u8; 8]).unwrap(), 0);
    }

    /// A deep read-ahead reads `depth` full blocks (and one more it holds) before anything
    /// is consumed, and no more: memory stays bounded by the depth. The source hands out
    /// 32 KiB per read, as debugfs does.
    #[test]
    fn prefetch_reads_as_deep_as_told_and_no_deeper() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        const SEQ: usize = 32 << 10;
        struct Counting(Arc<AtomicUsize>);
        impl Read for Counting {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = out.len().min(SEQ);
                self.0.fetch_add(n, Ordering::SeqCst);
                out[..n].fill(b'x');
                Ok(n)
            }
        }
        for depth in [1, 5] {
            let bytes = Arc::new(AtomicUsize::new(0));
            let mut p = Prefetch::with_depth(Box::new(Counting(Arc::clone(&bytes))), depth);
            // The reading thread gets there on its own (a bounded wait, not a timing check).
            let t = std::time::Instant::now();
            let want = (depth + 1) * Prefetch::BLOCK;
            while bytes.load(Ordering::SeqCst) < want && t.elapsed().as_secs() < 30 {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(bytes.load(Ordering::SeqCst), want, "depth {depth}");
            let mut buf = vec![0u8; Prefetch::BLOCK];
            p.read_exact(&mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == b'x'));
        }
    }

    #[test]
    fn corrupt_compressed_input_is_an_error_not_a_panic() {
        let mut data = vec![0xfd, b'7', b'z', b'X', b'Z', 0x00];
        data.extend_from_slice(b"garbage garbage garbage");
        let mut out = Vec::new();
        assert!(decompress(io::Cursor::new(data))
            .unwrap()
            .read_to_end(&mut out)
            .is_err());
    }
}
