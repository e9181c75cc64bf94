//! Decoded trace lines pushed into a consumer, as grep-searcher pushes matches into its
//! `Sink`: whatever reads trace text (a saved file, a live `trace_pipe`, standard input)
//! hands its blocks of lines to one [`Decoder`], which numbers, decodes and pushes each line
//! into a [`Sink`]; every consumer (`glk trace`'s outputs and tallies, the analyses' trace
//! pass, the frames, the Parquet writer) is a sink.

use std::io;
use std::path::Path;

use crate::line::BadLine;
use crate::Decoded;

/// A consumer of decoded trace lines.
pub trait Sink {
    /// One line that decoded: `n` is its number in the input (1-based), `raw` its text.
    /// `Ok(false)` stops the reading: the lines after it in its block are only counted, and
    /// [`read_file`] reads no further.
    fn line(&mut self, n: u64, raw: &[u8], decoded: Decoded<'_>) -> io::Result<bool>;

    /// One line that is not trace text, and why. By default it is skipped.
    fn bad_line(&mut self, n: u64, raw: &[u8], why: BadLine) -> io::Result<bool> {
        let _ = (n, raw, why);
        Ok(true)
    }
}

/// A closure as a sink of the lines that decode.
pub struct FnSink<F>(pub F);

impl<F: FnMut(Decoded<'_>) -> bool> Sink for FnSink<F> {
    fn line(&mut self, _: u64, _: &[u8], decoded: Decoded<'_>) -> io::Result<bool> {
        Ok((self.0)(decoded))
    }
}

/// Numbers, decodes and pushes the lines of a stream of blocks (each block whole lines, as
/// [`crate::BlockReader`] hands them out) into a sink: the one driver of every consumer.
#[derive(Debug, Default)]
pub struct Decoder {
    lines: u64,
    stopped: bool,
}

impl Decoder {
    /// A decoder at the first line.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Lines seen so far (blank ones included).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Whether the sink has stopped the reading.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Pushes every line of `block` into `sink` (once the sink has stopped, lines are only
    /// counted). A blank line is pushed as a header, as it decodes.
    pub fn block(&mut self, block: &[u8], sink: &mut impl Sink) -> io::Result<()> {
        for line in crate::reader::lines(block) {
            self.lines += 1;
            if self.stopped {
                continue;
            }
            let go_on = match crate::decode_line(line) {
                Ok(d) => sink.line(self.lines, line, d)?,
                Err(e) => sink.bad_line(self.lines, line, e)?,
            };
            self.stopped = !go_on;
        }
        Ok(())
    }
}

/// Pushes every line of a saved trace file (compressed or not) into `sink`, until the sink
/// stops the reading; returns the number of lines read (to the end of the block in which
/// the sink stopped).
pub fn read_file(path: &Path, sink: &mut impl Sink) -> io::Result<u64> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let reader = crate::reader::open_file(path).map_err(named)?;
    let mut d = Decoder::new();
    while let Some(b) = reader.next_block() {
        d.block(&b, sink)?;
        reader.recycle(b);
        if d.stopped() {
            break;
        }
    }
    reader.finish().map(drop).map_err(named)?;
    Ok(d.lines())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what it is pushed, and stops after `stop_after` decoded lines.
    #[derive(Default)]
    struct Record {
        good: Vec<u64>,
        bad: Vec<(u64, String)>,
        stop_after: usize,
    }

    impl Sink for Record {
        fn line(&mut self, n: u64, _: &[u8], _: Decoded<'_>) -> io::Result<bool> {
            self.good.push(n);
            Ok(self.good.len() < self.stop_after)
        }

        fn bad_line(&mut self, n: u64, raw: &[u8], _: BadLine) -> io::Result<bool> {
            self.bad
                .push((n, String::from_utf8_lossy(raw).into_owned()));
            Ok(true)
        }
    }

    #[test]
    fn lines_are_numbered_across_blocks_and_a_sink_can_stop() {
        let ev = "           mkdir-243     [000] ...1.    59.642391: gfs2_glock_queue: 254,0 glock 2:8760 queue PR\n";
        let mut r = Record {
            stop_after: 3,
            ..Record::default()
        };
        let mut d = Decoder::new();
        d.block(format!("{ev}\nnot a trace line\n").as_bytes(), &mut r)
            .unwrap();
        d.block(format!("{ev}{ev}{ev}").as_bytes(), &mut r).unwrap();
        assert_eq!(r.good, [1, 2, 4]);
        assert_eq!(r.bad, [(3, "not a trace line".to_string())]);
        assert!(d.stopped());
        assert_eq!(d.lines(), 6);
    }
}
