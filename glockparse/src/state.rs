//! Glock states as the glocks file prints them (`UN`, `SH`, `DF`, `EX`, `??`).

use std::fmt;

/// A glock state as the glocks file prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum LockState {
    /// `UN`: unlocked.
    #[default]
    Unlocked,
    /// `SH`: shared.
    Shared,
    /// `DF`: deferred (shared among direct-I/O holders).
    Deferred,
    /// `EX`: exclusive.
    Exclusive,
    /// The kernel's `??` (a state value it has no name for).
    Unknown,
}

impl LockState {
    /// Every state, in discriminant order (`state as usize` is its index).
    pub const ALL: [LockState; 5] = [
        LockState::Unlocked,
        LockState::Shared,
        LockState::Deferred,
        LockState::Exclusive,
        LockState::Unknown,
    ];

    /// Parses the glocks-file token. Returns `None` for anything else.
    pub fn parse(s: &[u8]) -> Option<LockState> {
        Some(match s {
            b"UN" => LockState::Unlocked,
            b"SH" => LockState::Shared,
            b"DF" => LockState::Deferred,
            b"EX" => LockState::Exclusive,
            b"??" => LockState::Unknown,
            _ => return None,
        })
    }

    /// The glocks-file token.
    pub fn as_str(self) -> &'static str {
        match self {
            LockState::Unlocked => "UN",
            LockState::Shared => "SH",
            LockState::Deferred => "DF",
            LockState::Exclusive => "EX",
            LockState::Unknown => "??",
        }
    }

    /// The DLM mode name tracepoints print for this state (`glock_trace_state()`).
    pub fn dlm_mode(self) -> &'static str {
        match self {
            LockState::Shared => "PR",
            LockState::Deferred => "CW",
            LockState::Exclusive => "EX",
            LockState::Unlocked | LockState::Unknown => "NL",
        }
    }

    /// Maps a tracepoint DLM mode name back to a glock state (`PR`→SH, `CW`→DF, `EX`→EX,
    /// `NL`/`IV`→UN). Other DLM modes (CR, PW) are never produced by gfs2.
    pub fn from_dlm_mode(s: &[u8]) -> Option<LockState> {
        Some(match s {
            b"NL" | b"IV" => LockState::Unlocked,
            b"PR" => LockState::Shared,
            b"CW" => LockState::Deferred,
            b"EX" => LockState::Exclusive,
            b"CR" | b"PW" => LockState::Unknown,
            _ => return None,
        })
    }

    /// The state in one word (`unlocked`, `shared`...).
    pub fn word(self) -> &'static str {
        match self {
            LockState::Unlocked => "unlocked",
            LockState::Shared => "shared",
            LockState::Deferred => "deferred",
            LockState::Exclusive => "exclusive",
            LockState::Unknown => "unknown",
        }
    }
}

impl fmt::Display for LockState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
