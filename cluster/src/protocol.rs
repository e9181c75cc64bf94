//! What a remote `glk agent` writes on its standard output, and how it is read back.
//!
//! The stream opens with a [`Hello`] line (JSON): the protocol version, the agent's glk
//! version, its host name, node id and clock. Then come [`Frame`]s, each a JSON line,
//! followed for a file by exactly `bytes` bytes of its zstd-compressed content. A
//! snapshot ends with [`Frame::End`]. Nothing in the stream is trusted: lines and files
//! have size limits, and a file's path can only name a file below the directory it is
//! written to ([`safe_path`]).

use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};

use glockparse::quote::quote;
use serde::{Deserialize, Serialize};

/// The protocol this glk speaks. A change that an older reader would misread raises it.
pub const PROTOCOL: u32 = 1;

/// The longest JSON line accepted.
pub const MAX_LINE: usize = 64 << 10;

/// The largest file frame accepted, uncompressed (a debugfs glocks file of 10^6 glocks
/// is ~200 MiB). Larger files come as several frames, each after the first appending.
pub const MAX_FILE: u64 = 1 << 30;

/// The size of the frames [`write_file_from`] cuts a file into.
pub const CHUNK: usize = 64 << 20;

/// The most of a problem's text kept, characters.
const MAX_PROBLEM: usize = 1000;

/// The agent's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol version ([`PROTOCOL`]).
    pub glk_agent: u32,
    /// The agent's glk version.
    pub version: String,
    /// Its host name.
    pub host: String,
    /// Its DLM node id, when configfs (or `GLK_NODEID`) says.
    pub nodeid: Option<u64>,
    /// Its clock when it started, in seconds since the epoch.
    pub time: f64,
}

/// One frame after the hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "snake_case")]
pub enum Frame {
    /// A file: its path below the snapshot's directory, then `bytes` bytes of zstd.
    File {
        /// The relative path ([`safe_path`]).
        path: String,
        /// The compressed length that follows the line.
        bytes: u64,
        /// True when this frame continues the file of the frame before.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        append: bool,
    },
    /// Something the agent could not do (the rest still comes).
    Problem {
        /// What, in words.
        text: String,
    },
    /// The end of one snapshot or capture.
    End {
        /// The agent's clock at the end, in seconds since the epoch.
        time: f64,
    },
}

/// Writes one JSON line.
fn write_line<W: Write, T: Serialize>(w: &mut W, value: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *w, value)?;
    w.write_all(b"\n")
}

/// Writes the hello.
pub fn write_hello<W: Write>(w: &mut W, hello: &Hello) -> io::Result<()> {
    write_line(w, hello)
}

/// Writes a frame without payload (a problem or the end).
pub fn write_frame<W: Write>(w: &mut W, frame: &Frame) -> io::Result<()> {
    write_line(w, frame)
}

/// Writes `data` as the file `path` (compressed at zstd level 1: the node's CPU is the
/// production's).
pub fn write_file<W: Write>(w: &mut W, path: &str, data: &[u8]) -> io::Result<()> {
    write_chunk(w, path, data, false)
}

/// Writes one frame of the file `path`.
fn write_chunk<W: Write>(w: &mut W, path: &str, data: &[u8], append: bool) -> io::Result<()> {
    let packed = zstd::bulk::compress(data, 1)?;
    write_line(
        w,
        &Frame::File {
            path: path.to_string(),
            bytes: packed.len() as u64,
            append,
        },
    )?;
    w.write_all(&packed)
}

/// Writes what `from` reads as the file `path`, in frames of [`CHUNK`] bytes (one frame
/// for an empty file), so that neither side holds more than one frame of it.
pub fn write_file_from<W: Write, R: Read>(w: &mut W, path: &str, from: R) -> io::Result<()> {
    let mut from = from.take(u64::MAX);
    let mut buf = Vec::with_capacity(CHUNK.min(1 << 20));
    let mut first = true;
    loop {
        buf.clear();
        (&mut from).take(CHUNK as u64).read_to_end(&mut buf)?;
        if buf.is_empty() && !first {
            return Ok(());
        }
        write_chunk(w, path, &buf, !first)?;
        if buf.len() < CHUNK {
            return Ok(());
        }
        first = false;
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes; None at the end of the stream.
fn read_line<R: BufRead>(r: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let n = r.take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(bad(if line.len() > MAX_LINE {
            format!("a line longer than {MAX_LINE} bytes")
        } else {
            "the stream ends inside a line".into()
        }));
    }
    line.pop();
    Ok(Some(line))
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// What a line that is not the protocol's says, quoted and cut short.
fn quoted(line: &[u8]) -> String {
    glockparse::quote::quote(line, 120)
}

/// Why JSON from a node could not be read, quoted: serde's words repeat what the node
/// sent (an unknown variant, a string of the wrong kind), control characters included.
fn why_not(e: &serde_json::Error) -> String {
    glockparse::quote::quote(e.to_string().as_bytes(), 200)
}

/// Reads the hello; None when the stream ended before it (the agent did not start: its
/// exit status and standard error say why).
pub fn read_hello<R: BufRead>(r: &mut R) -> io::Result<Option<Hello>> {
    let Some(line) = read_line(r)? else {
        return Ok(None);
    };
    // The version first, on its own: a future hello may carry other fields.
    #[derive(Deserialize)]
    struct Version {
        glk_agent: u32,
    }
    let v: Version = serde_json::from_slice(&line)
        .map_err(|_| bad(format!("not a glk agent's hello: {}", quoted(&line))))?;
    if v.glk_agent != PROTOCOL {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "its glk agent speaks protocol {} and this glk {PROTOCOL}",
                v.glk_agent
            ),
        ));
    }
    serde_json::from_slice(&line)
        .map(Some)
        .map_err(|e| bad(format!("a bad hello ({}): {}", why_not(&e), quoted(&line))))
}

/// A file frame's content as it came: zstd, unpacked only where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed(Vec<u8>);

impl Packed {
    /// Unpacks into `w` (at most [`MAX_FILE`] bytes); returns how many bytes.
    pub fn unpack_to<W: Write>(&self, w: &mut W) -> io::Result<u64> {
        // The frame is in memory: read as it is, without a buffer of its own.
        let mut d = zstd::stream::read::Decoder::with_buffer(&self.0[..])?.take(MAX_FILE + 1);
        let n = io::copy(&mut d, w)?;
        if n > MAX_FILE {
            return Err(bad(format!("a file larger than {MAX_FILE} bytes")));
        }
        Ok(n)
    }

    /// The content.
    pub fn unpack(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.unpack_to(&mut out)?;
        Ok(out)
    }

    /// The size its zstd frame header says it unpacks to, when it says (the node's word,
    /// not a promise: [`Packed::unpack_to`] holds to [`MAX_FILE`] whatever it says).
    pub fn declared_size(&self) -> Option<u64> {
        zstd::zstd_safe::get_frame_content_size(&self.0)
            .ok()
            .flatten()
    }

    /// The compressed size.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for no bytes at all (not even an empty file's zstd frame).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A frame as read.
#[derive(Debug)]
pub enum Received {
    /// A file (or, `true`, more of the file before) and its content.
    File(PathBuf, Packed, bool),
    /// A problem the agent reported.
    Problem(String),
    /// The end of a snapshot, with the agent's clock.
    End(f64),
}

/// Reads the next frame; None at the end of the stream.
pub fn read_frame<R: BufRead>(r: &mut R) -> io::Result<Option<Received>> {
    let Some(line) = read_line(r)? else {
        return Ok(None);
    };
    let frame: Frame = serde_json::from_slice(&line).map_err(|e| {
        bad(format!(
            "not a glk agent frame ({}): {}",
            why_not(&e),
            quoted(&line)
        ))
    })?;
    Ok(Some(match frame {
        Frame::File {
            path,
            bytes,
            append,
        } => {
            let rel = safe_path(&path)?;
            if bytes > MAX_FILE {
                return Err(bad(format!("{path}: a frame of {bytes} bytes")));
            }
            let mut data = Vec::with_capacity(bytes.min(1 << 20) as usize);
            r.take(bytes).read_to_end(&mut data)?;
            if data.len() as u64 != bytes {
                return Err(bad(format!("{path}: the stream ends inside the file")));
            }
            Received::File(rel, Packed(data), append)
        }
        // A problem is printed: what a node sends reaches no terminal raw.
        Frame::Problem { text } => Received::Problem(quote(text.as_bytes(), MAX_PROBLEM)),
        Frame::End { time } => Received::End(time),
    }))
}

/// The order of a batch's file frames: a frame that continues a file (`append`) is of the
/// file of the frame before it; any other is a break of the protocol.
#[derive(Debug, Default)]
pub struct FileOrder(Option<PathBuf>);

impl FileOrder {
    /// Takes the next file frame, of `path`; Err: it continues a file not started.
    pub fn next(&mut self, path: &Path, append: bool) -> Result<(), String> {
        if self.0.as_deref() == Some(path) {
            return Ok(());
        }
        if append {
            return Err(format!(
                "its agent continued a file it had not started: {}",
                path.display()
            ));
        }
        self.0 = Some(path.to_path_buf());
        Ok(())
    }
}

/// `path` as a relative path of 1 to 4 plain names (letters, digits, `._:-`, not starting
/// with a dot): it cannot leave the directory it is joined to, nor name a hidden file.
pub fn safe_path(path: &str) -> io::Result<PathBuf> {
    let names: Vec<&str> = path.split('/').collect();
    let plain = |n: &str| {
        !n.is_empty()
            && !n.starts_with('.')
            && n.len() <= 255
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
    };
    if names.len() > 4 || !names.iter().all(|n| plain(n)) {
        return Err(bad(format!("a file path glk does not write: {path:?}")));
    }
    Ok(names.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn hello() -> Hello {
        Hello {
            glk_agent: PROTOCOL,
            version: "0.1.0".into(),
            host: "n1".into(),
            nodeid: Some(1),
            time: 1.5,
        }
    }

    #[test]
    fn a_stream_reads_back_as_written() {
        let mut w = Vec::new();
        write_hello(&mut w, &hello()).unwrap();
        write_file(&mut w, "lab:gfs/glocks", b"G:  s:EX n:2/1\n").unwrap();
        write_frame(
            &mut w,
            &Frame::Problem {
                text: "no dlm_tool".into(),
            },
        )
        .unwrap();
        // A node's problem reaches the terminal quoted, never raw.
        write_frame(
            &mut w,
            &Frame::Problem {
                text: "bad\x1b[2J\u{202e}".into(),
            },
        )
        .unwrap();
        write_file(&mut w, "nodeid", b"").unwrap();
        write_frame(&mut w, &Frame::End { time: 2.0 }).unwrap();
        let mut r = io::Cursor::new(w);
        assert_eq!(read_hello(&mut r).unwrap(), Some(hello()));
        match read_frame(&mut r).unwrap() {
            Some(Received::File(p, d, false)) => {
                assert_eq!(p, Path::new("lab:gfs/glocks"));
                assert_eq!(d.unpack().unwrap(), b"G:  s:EX n:2/1\n");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(read_frame(&mut r).unwrap(), Some(Received::Problem(t)) if t == "no dlm_tool")
        );
        match read_frame(&mut r).unwrap() {
            Some(Received::Problem(t)) => assert_eq!(t, "bad\\x1b[2J\\u{202e}"),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(read_frame(&mut r).unwrap(), Some(Received::File(_, d, false)) if d.unpack().unwrap().is_empty())
        );
        assert!(matches!(read_frame(&mut r).unwrap(), Some(Received::End(t)) if t == 2.0));
        assert!(read_frame(&mut r).unwrap().is_none());
    }

    #[test]
    fn a_big_file_comes_in_appending_frames() {
        let data: Vec<u8> = (0..CHUNK * 2 + 5).map(|i| (i % 251) as u8).collect();
        let mut w = Vec::new();
        write_file_from(&mut w, "trace_pipe.txt", &data[..]).unwrap();
        let mut r = io::Cursor::new(w);
        let mut back = Vec::new();
        let mut appends = Vec::new();
        while let Some(Received::File(_, d, append)) = read_frame(&mut r).unwrap() {
            back.extend_from_slice(&d.unpack().unwrap());
            appends.push(append);
        }
        assert_eq!(appends, [false, true, true]);
        assert!(back == data);
    }

    #[test]
    fn paths_cannot_leave_the_directory() {
        for bad in [
            "../etc/passwd",
            "/etc/passwd",
            "a/../../b",
            ".ssh/authorized_keys",
            "a/./b",
            "",
            "a b",
            "a/b/c/d/e",
            "a\nb",
        ] {
            assert!(safe_path(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            safe_path("lab_gfs/n1/glocks.0").unwrap(),
            Path::new("lab_gfs/n1/glocks.0")
        );
    }

    /// JSON that serde cannot take is named in words that repeat what the node sent (an
    /// unknown variant, as it is): those are quoted too, so that no escape sequence of a
    /// node reaches a terminal.
    #[test]
    fn what_serde_repeats_is_quoted() {
        let frame = b"{\"frame\":\"\\u001b[2Jfile\",\"path\":\"a\",\"bytes\":0}\n";
        let e = read_frame(&mut io::Cursor::new(frame.to_vec())).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("unknown variant"), "{e}");
        assert!(!e.chars().any(char::is_control), "{e:?}");
    }

    #[test]
    fn a_frame_continues_only_the_file_before_it() {
        let mut o = FileOrder::default();
        let (a, b) = (Path::new("n1/glocks.0"), Path::new("n1/trace_pipe.txt"));
        assert!(o.next(a, true).is_err(), "nothing started yet");
        assert!(o.next(a, false).is_ok());
        assert!(o.next(a, true).is_ok());
        assert!(o.next(b, false).is_ok());
        assert!(o.next(b, true).is_ok());
        let e = o.next(a, true).unwrap_err();
        assert!(
            e.contains("continued a file it had not started: n1/glocks.0"),
            "{e}"
        );
    }

    #[test]
    fn a_frame_says_what_it_unpacks_to() {
        let mut w = Vec::new();
        write_file(&mut w, "n1/glocks.0", &[b'G'; 5000]).unwrap();
        let Some(Received::File(_, d, _)) = read_frame(&mut io::Cursor::new(w)).unwrap() else {
            panic!("a file frame");
        };
        assert_eq!(d.declared_size(), Some(5000));
        assert_eq!(Packed(b"not zstd".to_vec()).declared_size(), None);
    }

    #[test]
    fn another_protocol_and_strangers_are_named() {
        let mut other = hello();
        other.glk_agent = PROTOCOL + 1;
        let line = serde_json::to_vec(&other).unwrap();
        let e = read_hello(&mut io::Cursor::new([line, b"\n".to_vec()].concat())).unwrap_err();
        assert!(e.to_string().contains("speaks protocol 2"), "{e}");
        let e = read_hello(&mut io::Cursor::new(b"Welcome to n2!\x1b[0m\n".to_vec())).unwrap_err();
        assert!(e.to_string().contains("Welcome to n2!\\x1b[0m"), "{e}");
        assert!(read_hello(&mut io::Cursor::new(Vec::new()))
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_bomb_unpacks_no_further_than_the_limit() {
        // 2 GiB of zeros packs into a few hundred KiB; unpacking stops at the limit.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..(MAX_FILE >> 20) + 1 {
            enc.write_all(&zeros).unwrap();
        }
        let packed = Packed(enc.finish().unwrap());
        assert!(packed.len() < 1 << 20);
        let mut seen = 0u64;
        struct Count<'a>(&'a mut u64);
        impl Write for Count<'_> {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                *self.0 += b.len() as u64;
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        assert!(packed.unpack_to(&mut Count(&mut seen)).is_err());
        assert!(seen <= MAX_FILE + (1 << 20));
    }

    #[test]
    fn truncated_and_oversized_frames_are_errors() {
        let mut w = Vec::new();
        write_file(&mut w, "glocks", &[b'x'; 10_000]).unwrap();
        w.truncate(w.len() - 3);
        assert!(read_frame(&mut io::Cursor::new(w)).is_err());
        let long = vec![b'{'; MAX_LINE + 10];
        assert!(read_frame(&mut io::Cursor::new(long)).is_err());
    }
}
