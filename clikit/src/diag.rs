//! Parse diagnostics for people (stderr) and for programs (the `errors` object of every
//! `--json` document).

use glockparse::Diagnostics;
use serde::Serialize;

/// Tells on stderr what could not be parsed: counts and the first few lines by file:line.
pub fn report(d: &Diagnostics) {
    if let Some(f) = &d.fatal {
        eprintln!("glk: warning: input ended early: {f}");
    }
    if d.errors == 0 && d.skipped == 0 {
        return;
    }
    eprintln!(
        "glk: warning: {} malformed line(s) skipped{}",
        d.errors,
        if d.skipped > 0 {
            format!(", and {} line(s) of malformed records", d.skipped)
        } else {
            String::new()
        }
    );
    for e in d.first_errors.iter().take(5) {
        eprintln!("  {e}");
    }
    if d.errors > 5 {
        eprintln!("  ... and {} more", d.errors - 5);
    }
}

/// The `errors` object of a JSON document.
#[derive(Debug, Serialize)]
pub struct Errors {
    /// Malformed lines.
    pub count: u64,
    /// Lines dropped with the malformed record they belonged to.
    pub skipped_lines: u64,
    /// Lines that are no record and no error (blank lines, log lines around a dump).
    pub ignored_lines: u64,
    /// The read error that ended a parse early.
    pub fatal: Option<String>,
    /// The first malformed lines.
    pub first: Vec<Error>,
}

/// One malformed line in JSON.
#[derive(Debug, Serialize)]
pub struct Error {
    /// The file (or `-` for standard input).
    pub file: String,
    /// Its 1-based line number.
    pub line: u64,
    /// What is wrong with it.
    pub message: String,
    /// The line, quoted (control characters and invalid UTF-8 as `\xNN`), cut short.
    pub text: String,
}

/// The `errors` object for a parse's diagnostics.
pub fn errors(d: &Diagnostics) -> Errors {
    Errors {
        count: d.errors,
        skipped_lines: d.skipped,
        ignored_lines: d.ignored,
        fatal: d.fatal.clone(),
        first: d
            .first_errors
            .iter()
            .map(|e| Error {
                file: e.source.to_string(),
                line: e.line,
                message: e.message.clone(),
                text: e.text.clone(),
            })
            .collect(),
    }
}

/// An error when nothing in a set of captures was recognised: `rows` rows were read from
/// `paths` in all, with the diagnostics `d`.
pub fn captures_recognised(
    paths: &[std::path::PathBuf],
    rows: usize,
    d: &Diagnostics,
) -> std::io::Result<()> {
    if rows == 0 && d.errors > 0 {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let mut d = d.clone();
        d.records = 0;
        d.recognised(&names.join(", "), "a capture")?;
    }
    Ok(())
}
