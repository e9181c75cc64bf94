//! Where decoded events go: readable lines, JSON lines, or the raw text as read.

use std::io::{self, Write};
use std::path::Path;

use tracepipe::Decoded;

use super::render;

/// An output for trace lines.
pub trait Sink {
    /// One input line and what it decoded to.
    fn line(&mut self, raw: &[u8], decoded: &Decoded<'_>) -> io::Result<()>;
    fn finish(&mut self) -> io::Result<()>;
}

/// Readable decoded lines. Undecoded and foreign events are shown raw.
pub struct TextSink<W: Write> {
    out: W,
    buf: String,
}

impl<W: Write> TextSink<W> {
    pub fn new(out: W) -> Self {
        TextSink {
            out,
            buf: String::with_capacity(256),
        }
    }
}

impl<W: Write> Sink for TextSink<W> {
    fn line(&mut self, _raw: &[u8], d: &Decoded<'_>) -> io::Result<()> {
        self.buf.clear();
        match d {
            Decoded::Gfs2 { line, dev, event } => {
                render::prefix(&mut self.buf, line);
                render::text(&mut self.buf, *dev, event);
            }
            Decoded::Undecoded(line) | Decoded::Other(line) => {
                render::prefix(&mut self.buf, line);
                self.buf.push_str(&String::from_utf8_lossy(line.event));
                self.buf.push_str(": ");
                self.buf.push_str(&String::from_utf8_lossy(line.body));
            }
            Decoded::Lost { cpu, events } => {
                self.buf
                    .push_str(&format!("*** cpu {cpu}: {events} events lost ***"));
            }
            Decoded::Header => return Ok(()),
        }
        self.buf.push('\n');
        self.out.write_all(self.buf.as_bytes())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One JSON object per event (`.jsonl`).
pub struct JsonSink<W: Write> {
    out: W,
    buf: String,
}

impl<W: Write> JsonSink<W> {
    pub fn new(out: W) -> Self {
        JsonSink {
            out,
            buf: String::with_capacity(512),
        }
    }
}

impl<W: Write> Sink for JsonSink<W> {
    fn line(&mut self, _raw: &[u8], d: &Decoded<'_>) -> io::Result<()> {
        self.buf.clear();
        match d {
            Decoded::Gfs2 { line, dev, event } => render::json(&mut self.buf, line, *dev, event),
            Decoded::Undecoded(line) => render::json_raw(&mut self.buf, line, true),
            Decoded::Other(line) => render::json_raw(&mut self.buf, line, false),
            Decoded::Lost { cpu, events } => {
                self.buf.push_str(&format!(
                    "{{\"event\":\"lost\",\"cpu\":{cpu},\"events\":{events}}}\n"
                ));
            }
            Decoded::Header => return Ok(()),
        }
        self.out.write_all(self.buf.as_bytes())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The lines exactly as read (`.txt`).
pub struct RawSink<W: Write> {
    out: W,
}

impl<W: Write> Sink for RawSink<W> {
    fn line(&mut self, raw: &[u8], _d: &Decoded<'_>) -> io::Result<()> {
        self.out.write_all(raw)?;
        self.out.write_all(b"\n")
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Discards events (`--summary` without `--output`).
pub struct NullSink;

impl Sink for NullSink {
    fn line(&mut self, _raw: &[u8], _d: &Decoded<'_>) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Collects events into the `events` frame and writes it as Parquet at the end. The node
/// column holds this machine's host name.
pub struct ParquetSink {
    cols: frames::EventCols,
    node: String,
    path: std::path::PathBuf,
}

impl Sink for ParquetSink {
    fn line(&mut self, _raw: &[u8], d: &Decoded<'_>) -> io::Result<()> {
        self.cols.push(&self.node, d);
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let cols = std::mem::take(&mut self.cols);
        let mut df = cols.frame().map_err(|e| io::Error::other(e.to_string()))?;
        frames::export::write_parquet(&mut df, &self.path)
    }
}

/// This machine's host name (the `node` of what it records).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The sink for `--output PATH`, chosen by extension.
pub fn for_path(path: &Path) -> io::Result<Box<dyn Sink + Send>> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let open = || {
        std::fs::File::create(path)
            .map(|f| io::BufWriter::with_capacity(1 << 20, f))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    };
    Ok(match ext {
        "jsonl" | "ndjson" => Box::new(JsonSink::new(open()?)),
        "txt" => Box::new(RawSink { out: open()? }),
        "parquet" => {
            // Fail now, not after the trace, when the file cannot be created.
            std::fs::File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            Box::new(ParquetSink {
                cols: frames::EventCols::default(),
                node: hostname(),
                path: path.to_path_buf(),
            })
        }
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: unknown output format {other:?}: use .jsonl (one JSON object per event), .parquet (the events frame) or .txt (raw lines)",
                    path.display()
                ),
            ))
        }
    })
}
