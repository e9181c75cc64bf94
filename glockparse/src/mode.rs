//! DLM lock modes: the one model of a DLM mode every glk crate uses, whether it comes
//! from a tracepoint (`EX`, printed by `glock_trace_name`) or a DLM lock dump (`5`).

use std::fmt;

/// A DLM lock mode (`include/uapi/linux/dlmconstants.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DlmMode {
    /// Invalid: no mode (`DLM_LOCK_IV`, -1).
    IV,
    /// Null: no access, keeps the lock (and its value block).
    NL,
    /// Concurrent read.
    CR,
    /// Concurrent write.
    CW,
    /// Protected read (GFS2's shared).
    PR,
    /// Protected write.
    PW,
    /// Exclusive.
    EX,
}

impl DlmMode {
    /// From the name tracepoints print (`NL` ... `EX`, `IV`).
    pub fn parse(s: &[u8]) -> Option<DlmMode> {
        Some(match s {
            b"IV" => DlmMode::IV,
            b"NL" => DlmMode::NL,
            b"CR" => DlmMode::CR,
            b"CW" => DlmMode::CW,
            b"PR" => DlmMode::PR,
            b"PW" => DlmMode::PW,
            b"EX" => DlmMode::EX,
            _ => return None,
        })
    }

    /// From the number the DLM lock dumps print (-1 is `IV`, 0 `NL` ... 5 `EX`).
    pub fn from_number(n: i64) -> Option<DlmMode> {
        Some(match n {
            -1 => DlmMode::IV,
            0 => DlmMode::NL,
            1 => DlmMode::CR,
            2 => DlmMode::CW,
            3 => DlmMode::PR,
            4 => DlmMode::PW,
            5 => DlmMode::EX,
            _ => return None,
        })
    }

    /// The name as the kernel prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            DlmMode::IV => "IV",
            DlmMode::NL => "NL",
            DlmMode::CR => "CR",
            DlmMode::CW => "CW",
            DlmMode::PR => "PR",
            DlmMode::PW => "PW",
            DlmMode::EX => "EX",
        }
    }

    /// Strength order for "is this a promotion": IV/NL < CR < CW/PR < PW < EX.
    pub fn rank(self) -> u8 {
        match self {
            DlmMode::IV | DlmMode::NL => 0,
            DlmMode::CR => 1,
            DlmMode::CW | DlmMode::PR => 2,
            DlmMode::PW => 3,
            DlmMode::EX => 4,
        }
    }

    /// Whether a lock granted in `self` keeps a request for `requested` waiting: the one
    /// rule by which glk finds what blocks a waiter. With no requested mode known, a
    /// granted lock above NL is taken to block.
    pub fn blocks(self, requested: Option<DlmMode>) -> bool {
        match requested {
            Some(rq) => !self.compatible(rq),
            None => !matches!(self, DlmMode::IV | DlmMode::NL),
        }
    }

    /// Whether a lock granted in `self` lets another be granted in `other` (the DLM's
    /// compatibility matrix, `__dlm_compat_matrix` in fs/dlm/lock.c). `IV` holds nothing
    /// and so blocks nothing.
    pub fn compatible(self, other: DlmMode) -> bool {
        use DlmMode::*;
        match (self, other) {
            (IV, _) | (_, IV) | (NL, _) | (_, NL) => true,
            (CR, m) | (m, CR) => m != EX,
            (CW, CW) | (PR, PR) => true,
            _ => false,
        }
    }
}

impl serde::Serialize for DlmMode {
    /// As printed: `EX`, `PR`...
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl fmt::Display for DlmMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::DlmMode::{self, *};

    #[test]
    fn compatibility_matches_the_dlm_matrix() {
        // Rows and columns NL CR CW PR PW EX, from fs/dlm/lock.c.
        let matrix = [
            [1, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 1, 0],
            [1, 1, 1, 0, 0, 0],
            [1, 1, 0, 1, 0, 0],
            [1, 1, 0, 0, 0, 0],
            [1, 0, 0, 0, 0, 0],
        ];
        let modes = [NL, CR, CW, PR, PW, EX];
        for (i, a) in modes.iter().enumerate() {
            for (j, b) in modes.iter().enumerate() {
                assert_eq!(a.compatible(*b), matrix[i][j] == 1, "{a} {b}");
            }
            assert!(a.compatible(IV));
        }
    }

    #[test]
    fn numbers_and_names() {
        for n in -1..=5 {
            let m = DlmMode::from_number(n).unwrap();
            assert_eq!(DlmMode::parse(m.as_str().as_bytes()), Some(m));
        }
        assert_eq!(DlmMode::from_number(6), None);
        assert_eq!(DlmMode::from_number(5), Some(EX));
    }
}
