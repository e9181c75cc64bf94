//! `--color auto|always|never`, honouring `NO_COLOR` (<https://no-color.org>) and
//! `CLICOLOR_FORCE`, and the few ANSI styles glk uses.

use std::io::IsTerminal;

/// When to color output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    /// On a terminal, unless `NO_COLOR` is set (to anything but the empty string).
    #[default]
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

impl Color {
    /// Whether to color standard output.
    pub fn stdout(self) -> Paint {
        self.resolve(std::io::stdout().is_terminal())
    }

    fn resolve(self, terminal: bool) -> Paint {
        let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
        let on = match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => {
                !set("NO_COLOR")
                    && (set("CLICOLOR_FORCE")
                        || (terminal && std::env::var_os("TERM").is_none_or(|t| t != "dumb")))
            }
        };
        Paint { on }
    }
}

/// Applies styles when color is on; passes text through unchanged when it is off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Paint {
    /// Whether styles are written.
    pub on: bool,
}

impl Paint {
    fn wrap(self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Bold red: what is wrong (stuck waiters, deadlocks, errors).
    pub fn bad(self, s: &str) -> String {
        self.wrap("1;31", s)
    }

    /// Yellow: what is waiting or slow.
    pub fn warn(self, s: &str) -> String {
        self.wrap("33", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_and_always() {
        assert!(!Color::Never.resolve(true).on);
        assert!(Color::Always.resolve(false).on);
        assert_eq!(Paint { on: false }.bad("x"), "x");
        assert_eq!(Paint { on: true }.bad("x"), "\x1b[1;31mx\x1b[0m");
    }
}
