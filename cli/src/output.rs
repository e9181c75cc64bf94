//! Terminal checks and warnings on stderr.

use std::io::IsTerminal;

pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Tells on stderr what could not be parsed: counts and the first few lines by file:line.
pub fn report_diagnostics(d: &glockparse::Diagnostics) {
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
