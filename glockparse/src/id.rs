//! Glock identity: the glock type and number, printed `TYPE/hexnum` everywhere in glk.

use std::fmt;
use std::str::FromStr;

/// The `LM_TYPE_*` glock type. Unknown type numbers are kept as [`GlockType::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GlockType {
    /// Type 0 (not used by GFS2).
    Reserved,
    /// Type 1: cluster-wide operation locks (mount, live, freeze/trans, rename).
    Trans,
    /// An inode (type 2).
    Inode,
    /// A resource group (type 3).
    Rgrp,
    /// Metadata (type 4).
    Meta,
    /// An inode's existence, held while it is open or cached (type 5).
    Iopen,
    /// A flock (type 6).
    Flock,
    /// A POSIX lock (type 7; POSIX locks go through dlm_controld instead).
    Plock,
    /// A quota (type 8).
    Quota,
    /// A journal (type 9).
    Journal,
    /// A type number GFS2 does not define.
    Other(u32),
}

impl GlockType {
    /// All known types in numeric order.
    pub const KNOWN: [GlockType; 10] = [
        GlockType::Reserved,
        GlockType::Trans,
        GlockType::Inode,
        GlockType::Rgrp,
        GlockType::Meta,
        GlockType::Iopen,
        GlockType::Flock,
        GlockType::Plock,
        GlockType::Quota,
        GlockType::Journal,
    ];

    /// The type of a type number.
    pub fn from_number(n: u32) -> GlockType {
        match n {
            0 => GlockType::Reserved,
            1 => GlockType::Trans,
            2 => GlockType::Inode,
            3 => GlockType::Rgrp,
            4 => GlockType::Meta,
            5 => GlockType::Iopen,
            6 => GlockType::Flock,
            7 => GlockType::Plock,
            8 => GlockType::Quota,
            9 => GlockType::Journal,
            n => GlockType::Other(n),
        }
    }

    /// The type's number.
    pub fn number(self) -> u32 {
        match self {
            GlockType::Reserved => 0,
            GlockType::Trans => 1,
            GlockType::Inode => 2,
            GlockType::Rgrp => 3,
            GlockType::Meta => 4,
            GlockType::Iopen => 5,
            GlockType::Flock => 6,
            GlockType::Plock => 7,
            GlockType::Quota => 8,
            GlockType::Journal => 9,
            GlockType::Other(n) => n,
        }
    }

    /// Short lower-case name (`trans`, `inode`, ... or `type12` for unknown numbers).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        let s = match self {
            GlockType::Reserved => "reserved",
            GlockType::Trans => "trans",
            GlockType::Inode => "inode",
            GlockType::Rgrp => "rgrp",
            GlockType::Meta => "meta",
            GlockType::Iopen => "iopen",
            GlockType::Flock => "flock",
            GlockType::Plock => "plock",
            GlockType::Quota => "quota",
            GlockType::Journal => "journal",
            GlockType::Other(n) => return format!("type{n}").into(),
        };
        s.into()
    }

    /// Parses a type name (as [`GlockType::name`] prints it, plus the kernel's `nondisk`
    /// and glocktop's `jrnl`) or a type number.
    pub fn from_name(s: &str) -> Option<GlockType> {
        let t = match s.to_ascii_lowercase().as_str() {
            "reserved" => GlockType::Reserved,
            "trans" | "nondisk" | "non-disk" => GlockType::Trans,
            "inode" => GlockType::Inode,
            "rgrp" => GlockType::Rgrp,
            "meta" => GlockType::Meta,
            "iopen" => GlockType::Iopen,
            "flock" => GlockType::Flock,
            "plock" => GlockType::Plock,
            "quota" => GlockType::Quota,
            "journal" | "jrnl" => GlockType::Journal,
            other => {
                let digits = other.strip_prefix("type").unwrap_or(other);
                return digits.parse().ok().map(GlockType::from_number);
            }
        };
        Some(t)
    }
}

impl fmt::Display for GlockType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A glock's identity. Displays as the glocks file prints it: type in decimal, number in
/// lower-case hex without `0x` (`2/11c2a`). Tracepoints print the number in decimal;
/// [`GlockId::new`] from the parsed integers gives the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GlockId {
    /// The type number.
    pub gltype: u32,
    /// The glock number (an inode's or rgrp's block address, a journal's index...).
    pub number: u64,
}

impl GlockId {
    /// The glock of a type number and glock number.
    pub const fn new(gltype: u32, number: u64) -> GlockId {
        GlockId { gltype, number }
    }

    /// The glock's type.
    pub fn glock_type(self) -> GlockType {
        GlockType::from_number(self.gltype)
    }

    /// Parses `TYPE/hexnum` (the glocks, glstats and glockfd form).
    pub fn parse_hex(s: &[u8]) -> Option<GlockId> {
        let slash = memchr::memchr(b'/', s)?;
        let gltype = crate::num::parse_u64(&s[..slash])?;
        let number = crate::num::parse_hex_u64(&s[slash + 1..])?;
        Some(GlockId::new(u32::try_from(gltype).ok()?, number))
    }

    /// Parses the DLM resource name lock_dlm gives a glock: the type in hex right-aligned
    /// in 8 characters, then the number in hex right-aligned in 16 (`"       2           608f5"`).
    pub fn parse_dlm_resource(s: &str) -> Option<GlockId> {
        if s.len() != 24 || !s.is_ascii() {
            return None;
        }
        let gltype = u32::from_str_radix(s[..8].trim_start(), 16).ok()?;
        let number = u64::from_str_radix(s[8..].trim_start(), 16).ok()?;
        Some(GlockId::new(gltype, number))
    }

    /// The 24-character DLM resource name of this glock.
    pub fn dlm_resource(self) -> String {
        format!("{:>8x}{:>16x}", self.gltype, self.number)
    }
}

impl serde::Serialize for GlockId {
    /// As printed: `TYPE/HEX` (`2/4101c`).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for GlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{:x}", self.gltype, self.number)
    }
}

/// Error from parsing a glock id given on a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadGlockId(pub String);

impl fmt::Display for BadGlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad glock id {:?}: expected TYPE/HEXNUM (2/11c2a) or TYPE:DECIMAL (2:72746)",
            self.0
        )
    }
}

impl std::error::Error for BadGlockId {}

impl FromStr for GlockId {
    type Err = BadGlockId;

    /// Accepts `2/11c2a` (glocks form, hex) and `2:72746` (tracepoint form, decimal).
    fn from_str(s: &str) -> Result<GlockId, BadGlockId> {
        let bad = || BadGlockId(s.to_string());
        if let Some((t, n)) = s.split_once(':') {
            let gltype = t.parse().map_err(|_| bad())?;
            let number = n.parse().map_err(|_| bad())?;
            return Ok(GlockId::new(gltype, number));
        }
        GlockId::parse_hex(s.as_bytes()).ok_or_else(bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_decimal_forms_are_one_id() {
        let a: GlockId = "2/11c2a".parse().unwrap();
        let b: GlockId = "2:72746".parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "2/11c2a");
        assert_eq!(a.glock_type(), GlockType::Inode);
    }

    #[test]
    fn dlm_resource_round_trip() {
        let id = GlockId::parse_dlm_resource("       2           608f5").unwrap();
        assert_eq!(id, GlockId::new(2, 0x608f5));
        assert_eq!(id.dlm_resource(), "       2           608f5");
        assert!(GlockId::parse_dlm_resource("short").is_none());
    }

    #[test]
    fn rejects_garbage() {
        assert!("2/".parse::<GlockId>().is_err());
        assert!("x/1".parse::<GlockId>().is_err());
        assert!("2/zz".parse::<GlockId>().is_err());
        assert!("99999999999/1".parse::<GlockId>().is_err());
    }

    #[test]
    fn type_names() {
        for t in GlockType::KNOWN {
            assert_eq!(GlockType::from_name(&t.name()), Some(t));
            assert_eq!(GlockType::from_number(t.number()), t);
        }
        assert_eq!(GlockType::from_name("type12"), Some(GlockType::Other(12)));
        assert_eq!(GlockType::from_name("nondisk"), Some(GlockType::Trans));
        assert_eq!(GlockType::from_name("bogus"), None);
    }
}
