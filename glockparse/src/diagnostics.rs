//! What went wrong while parsing: malformed lines as values with file and line number,
//! and counts of what was read, skipped and ignored.

use std::fmt;
use std::sync::Arc;

/// How many errors are kept with their text; the rest are only counted.
pub const KEPT_ERRORS: usize = 20;

/// One malformed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The file (or `-` for standard input).
    pub source: Arc<str>,
    /// The 1-based line number.
    pub line: u64,
    /// What is wrong with the line.
    pub message: String,
    /// The offending line, quoted ([`crate::quote`]) and cut to about 160 characters.
    pub text: String,
}

impl ParseError {
    /// An error at `line` of `source`; `text` is the line's bytes, quoted and cut.
    pub fn new(source: &Arc<str>, line: u64, message: String, text: &[u8]) -> ParseError {
        ParseError {
            source: Arc::clone(source),
            line,
            message,
            text: crate::quote::quote(text, 160),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.source, self.line, self.message, self.text
        )
    }
}

/// Counts for one parse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Lines read.
    pub lines: u64,
    /// Records produced.
    pub records: u64,
    /// Malformed lines.
    pub errors: u64,
    /// Lines dropped because the record they belonged to was malformed.
    pub skipped: u64,
    /// Lines that are not part of a record and not errors: blank lines, kernel-log
    /// messages around a dump, glocktop's own D:/U:/C:/S lines.
    pub ignored: u64,
    /// The first [`KEPT_ERRORS`] errors.
    pub first_errors: Vec<ParseError>,
    /// A read error that ended the parse early (I/O or decompression failure).
    pub fatal: Option<String>,
}

impl Diagnostics {
    /// An error for an input in which nothing was recognised: no record parsed and at
    /// least one malformed line (a file of another kind, or not text at all). `source`
    /// names the input, `what` the kind expected (`a glocks file`). `Ok` when anything
    /// parsed, or the input was empty.
    pub fn recognised(&self, source: &str, what: &str) -> std::io::Result<()> {
        if self.records > 0 || self.errors == 0 {
            return Ok(());
        }
        let first = self
            .first_errors
            .first()
            .map(|e| format!("; the first: {e}"))
            .unwrap_or_default();
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{source}: not {what}, or a damaged one: nothing in it could be read ({} malformed line(s){first})",
                self.errors
            ),
        ))
    }

    /// Counts a malformed line, keeping the first ones with their text.
    pub fn error(&mut self, e: ParseError) {
        self.errors += 1;
        if self.first_errors.len() < KEPT_ERRORS {
            self.first_errors.push(e);
        }
    }

    /// Adds another parse's counts to these.
    pub fn merge(&mut self, other: &Diagnostics) {
        self.lines += other.lines;
        self.records += other.records;
        self.errors += other.errors;
        self.skipped += other.skipped;
        self.ignored += other.ignored;
        for e in &other.first_errors {
            if self.first_errors.len() < KEPT_ERRORS {
                self.first_errors.push(e.clone());
            }
        }
        if self.fatal.is_none() {
            self.fatal.clone_from(&other.fatal);
        }
    }

    /// Whether nothing was malformed and nothing failed.
    pub fn is_clean(&self) -> bool {
        self.errors == 0 && self.skipped == 0 && self.fatal.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unrecognised_only_when_nothing_parsed() {
        let mut d = Diagnostics::default();
        assert!(d.recognised("f", "a glocks file").is_ok());
        d.errors = 3;
        let e = d.recognised("f", "a glocks file").unwrap_err().to_string();
        assert!(
            e.starts_with("f: not a glocks file, or a damaged one"),
            "{e}"
        );
        d.records = 1;
        assert!(d.recognised("f", "a glocks file").is_ok());
    }
}
