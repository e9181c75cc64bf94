//! Where decoded events go: readable lines, JSON lines, or the raw text as read.

use std::io::{self, Write};
use std::path::Path;

use traceparse::Decoded;

use super::render;

/// Where a sink's bytes go: [`Output::done`] makes them final (flushes standard output;
/// renames a file written under a temporary name into place).
pub trait Output: Write + Send {
    /// Called once, when the trace ends normally.
    fn done(&mut self) -> io::Result<()>;
}

impl Output for io::BufWriter<io::Stdout> {
    fn done(&mut self) -> io::Result<()> {
        self.flush()
    }
}

/// A file that appears under its name only once the trace has ended (a kill or a full
/// disk never leaves a half file that looks whole).
pub struct FileOut {
    w: Option<io::BufWriter<bundle::atomic::AtomicFile>>,
}

impl FileOut {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> io::Result<FileOut> {
        let f = bundle::atomic::AtomicFile::create(path)?;
        Ok(FileOut {
            w: Some(io::BufWriter::with_capacity(1 << 20, f)),
        })
    }

    fn writer(&mut self) -> io::Result<&mut io::BufWriter<bundle::atomic::AtomicFile>> {
        self.w
            .as_mut()
            .ok_or_else(|| io::Error::other("output already finished"))
    }
}

impl Write for FileOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer()?.flush()
    }
}

impl Output for FileOut {
    fn done(&mut self) -> io::Result<()> {
        let w = self
            .w
            .take()
            .ok_or_else(|| io::Error::other("output already finished"))?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        let path = f.path().display().to_string();
        f.commit()
            .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
    }
}

/// Where `glk trace` writes the lines it is pushed (text, JSON lines, the raw text,
/// Parquet through the engine, or nothing): the end of the [`traceparse::sink`] chain.
pub trait TraceOut {
    /// One input line and what it decoded to.
    fn line(&mut self, raw: &[u8], decoded: &Decoded<'_>) -> io::Result<()>;
    /// The trace ended: makes the output final.
    fn finish(&mut self) -> io::Result<()>;
}

/// Decoded lines, one by one, in a format: readable text or JSON lines.
pub struct LineSink<W: Output> {
    out: W,
    buf: String,
    format: fn(&mut String, &Decoded<'_>),
}

impl<W: Output> LineSink<W> {
    /// Readable decoded lines. Undecoded and foreign events are shown raw.
    pub fn text(out: W) -> Self {
        LineSink {
            out,
            buf: String::with_capacity(256),
            format: text_line,
        }
    }

    /// One JSON object per event (`.jsonl`).
    pub fn json(out: W) -> Self {
        LineSink {
            out,
            buf: String::with_capacity(512),
            format: json_line,
        }
    }
}

impl<W: Output> TraceOut for LineSink<W> {
    fn line(&mut self, _raw: &[u8], d: &Decoded<'_>) -> io::Result<()> {
        self.buf.clear();
        (self.format)(&mut self.buf, d);
        self.out.write_all(self.buf.as_bytes())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.done()
    }
}

/// `d` as a readable line (nothing for a header).
fn text_line(buf: &mut String, d: &Decoded<'_>) {
    match d {
        Decoded::Gfs2 { line, dev, event } => {
            render::prefix(buf, line);
            render::text(buf, *dev, event);
        }
        Decoded::Dlm { line, event } => {
            render::prefix(buf, line);
            render::dlm_text(buf, event);
        }
        Decoded::Undecoded(line) | Decoded::Other(line) => {
            render::prefix(buf, line);
            // Foreign bodies are quoted: control bytes never reach the terminal.
            buf.push_str(&glockparse::quote::quote(
                line.event_name().as_bytes(),
                usize::MAX,
            ));
            buf.push_str(": ");
            buf.push_str(&glockparse::quote::quote(line.body, usize::MAX));
        }
        Decoded::Lost { cpu, events } => {
            let n = events.map_or("some".into(), |n| n.to_string());
            buf.push_str(&format!("*** cpu {cpu}: {n} events lost ***"));
        }
        Decoded::Header => return,
    }
    buf.push('\n');
}

/// `d` as a JSON line (nothing for a header).
fn json_line(buf: &mut String, d: &Decoded<'_>) {
    match d {
        Decoded::Gfs2 { line, dev, event } => render::json(buf, line, *dev, event),
        Decoded::Dlm { line, event } => render::dlm_json(buf, line, event),
        Decoded::Undecoded(line) => render::json_raw(buf, line, true),
        Decoded::Other(line) => render::json_raw(buf, line, false),
        Decoded::Lost { cpu, events } => {
            // `null` events: the kernel did not say how many.
            let n = events.map_or("null".into(), |n| n.to_string());
            buf.push_str(&format!(
                "{{\"event\":\"lost\",\"cpu\":{cpu},\"events\":{n}}}\n"
            ));
        }
        Decoded::Header => {}
    }
}

/// The lines exactly as read (`.txt`).
pub struct RawSink<W: Output> {
    out: W,
}

impl<W: Output> TraceOut for RawSink<W> {
    fn line(&mut self, raw: &[u8], _d: &Decoded<'_>) -> io::Result<()> {
        self.out.write_all(raw)?;
        self.out.write_all(b"\n")
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.done()
    }
}

/// Discards events (`--summary` without `--output`).
pub struct NullSink;

impl TraceOut for NullSink {
    fn line(&mut self, _raw: &[u8], _d: &Decoded<'_>) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Pipes the trace text to the analyst's engine (`glk-engine trace-parquet`), which
/// decodes it into the `events` frame and writes Parquet one row group at a time. The node
/// column holds this machine's host name.
pub struct ParquetSink {
    child: std::process::Child,
    stdin: Option<io::BufWriter<std::process::ChildStdin>>,
    path: std::path::PathBuf,
}

impl ParquetSink {
    fn start(path: &Path) -> io::Result<ParquetSink> {
        let mut cmd = crate::engine::command([
            std::ffi::OsStr::new("trace-parquet"),
            std::ffi::OsStr::new("--node"),
            std::ffi::OsStr::new(&hostname()),
            std::ffi::OsStr::new("-o"),
            path.as_os_str(),
        ])
        .map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", path.display())))?;
        let mut child = cmd.stdin(std::process::Stdio::piped()).spawn()?;
        let stdin = child
            .stdin
            .take()
            .map(|s| io::BufWriter::with_capacity(1 << 20, s));
        Ok(ParquetSink {
            child,
            stdin,
            path: path.to_path_buf(),
        })
    }

    fn broken(&mut self, e: io::Error) -> io::Error {
        // The engine stopped reading: its own error says why.
        let status = self.child.wait().ok();
        io::Error::other(format!(
            "{}: the engine writing it stopped ({}): {e}",
            self.path.display(),
            status.map_or("unknown status".into(), |s| s.to_string())
        ))
    }
}

impl TraceOut for ParquetSink {
    fn line(&mut self, raw: &[u8], _d: &Decoded<'_>) -> io::Result<()> {
        let Some(w) = &mut self.stdin else {
            return Ok(());
        };
        let r = w.write_all(raw).and_then(|()| w.write_all(b"\n"));
        r.map_err(|e| self.broken(e))
    }

    fn finish(&mut self) -> io::Result<()> {
        if let Some(mut w) = self.stdin.take() {
            w.flush().map_err(|e| self.broken(e))?;
        }
        let status = self.child.wait()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "{}: the engine writing it failed ({status})",
                self.path.display()
            )))
        }
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
pub fn for_path(path: &Path) -> io::Result<Box<dyn TraceOut + Send>> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let open = || FileOut::create(path);
    Ok(match ext {
        "jsonl" | "ndjson" => Box::new(LineSink::json(open()?)),
        "txt" => Box::new(RawSink { out: open()? }),
        "parquet" => Box::new(ParquetSink::start(path)?),
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
