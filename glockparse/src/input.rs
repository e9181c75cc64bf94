//! Opening inputs: plain, gzip, xz or zstd, recognised by magic bytes, never by name.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Compression recognised from a stream's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Xz,
    Zstd,
}

impl Compression {
    pub fn detect(magic: &[u8]) -> Compression {
        if magic.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

const BUF: usize = 256 * 1024;

/// Wraps a reader, decompressing it if its first bytes are a gzip, xz or zstd header.
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
    })
}

/// Opens a file, decompressing it transparently. The error names the path.
pub fn open(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    let file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    decompress(file).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
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
        assert_eq!(roundtrip(Vec::new()), "");
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
