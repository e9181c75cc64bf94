//! Glock (`G: f:`) and holder (`H: f:`) flag letters, kept as letter sets and decoded
//! through tables that cover every kernel version (see docs/kernel-formats.md §1.8, §1.9).
//!
//! Letters that were reused or re-meant across versions are unambiguous per letter:
//! old kernels print `I` for GLF_INITIAL ("DLM lock exists") and 6.11+ print `a` for the
//! inverted flag ("no DLM lock yet"). Unknown letters are kept and shown as such.

use std::fmt;
use std::marker::PhantomData;

/// One entry of a flag table: the letter, the kernel's flag name and a plain meaning; for
/// glock flags, the flag's bit and the names it had before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagInfo {
    /// The letter.
    pub letter: char,
    /// The kernel's name (`GLF_LOCK`).
    pub name: &'static str,
    /// What it means, in words.
    pub meaning: &'static str,
    /// Its bit in the kernel's enum of glock flags (fs/gfs2/incore.h), which the trace
    /// events print: explicit there, and never changed (renamed flags kept theirs). None for
    /// holder flags and for glock flags kernels no longer have.
    pub bit: Option<u32>,
    /// The names the same bit had before (`GLF_REPLY_PENDING` for `GLF_HAVE_REPLY`).
    pub former_names: &'static [&'static str],
}

/// A flag without a bit.
const fn fi(letter: char, name: &'static str, meaning: &'static str) -> FlagInfo {
    FlagInfo {
        letter,
        name,
        meaning,
        bit: None,
        former_names: &[],
    }
}

/// A glock flag the kernel has, at `bit`.
const fn glf(bit: u32, letter: char, name: &'static str, meaning: &'static str) -> FlagInfo {
    FlagInfo {
        bit: Some(bit),
        ..fi(letter, name, meaning)
    }
}

impl FlagInfo {
    /// The same flag, called `names` before.
    const fn was(self, names: &'static [&'static str]) -> FlagInfo {
        FlagInfo {
            former_names: names,
            ..self
        }
    }
}

/// Glock flag letters in the order kernels print them (a union of every version's order).
/// GLF_INITIAL (bit 10) has two: its letter and meaning changed in 6.11 (`I`, then `a`).
#[rustfmt::skip]
pub const GLOCK_FLAGS: &[FlagInfo] = &[
    glf(1, 'l', "GLF_LOCK", "state change in progress"),
    glf(3, 'D', "GLF_DEMOTE", "demote requested"),
    glf(4, 'd', "GLF_PENDING_DEMOTE", "remote demote waiting for min hold time"),
    glf(5, 'p', "GLF_DEMOTE_IN_PROGRESS", "demote in progress"),
    glf(6, 'y', "GLF_DIRTY", "dirty, flush needed before release"),
    glf(7, 'f', "GLF_LFLUSH", "log flush needed before release"),
    glf(8, 'i', "GLF_INVALIDATE_IN_PROGRESS", "cache invalidation in progress"),
    glf(19, 'R', "GLF_PENDING_REPLY", "DLM request outstanding"),
    glf(9, 'r', "GLF_HAVE_REPLY", "DLM reply received, not yet processed")
        .was(&["GLF_REPLY_PENDING"]),
    glf(10, 'I', "GLF_INITIAL", "DLM lock exists (kernels before 6.11)"),
    glf(10, 'a', "GLF_INITIAL", "no DLM lock yet (6.11+)"),
    glf(11, 'F', "GLF_HAVE_FROZEN_REPLY", "reply frozen during recovery").was(&["GLF_FROZEN"]),
    fi('q', "GLF_QUEUED", "holders queued"),
    glf(13, 'L', "GLF_LRU", "on the LRU list"),
    glf(14, 'o', "GLF_OBJECT", "inode or rgrp attached"),
    glf(15, 'b', "GLF_BLOCKING", "DLM request may block"),
    fi('c', "GLF_INODE_CREATING", "inode creation in progress (5.9-5.10)"),
    fi('P', "GLF_PENDING_DELETE", "iopen: deletion pending"),
    glf(16, 'x', "GLF_UNLOCKED", "waiting to be freed or unlocked").was(&["GLF_FREEING"]),
    glf(2, 'n', "GLF_INSTANTIATE_NEEDED", "object must be read in"),
    glf(12, 'N', "GLF_INSTANTIATE_IN_PROG", "object being read in"),
    glf(17, 'e', "GLF_TRY_TO_EVICT", "iopen: try to evict the cached inode"),
    glf(18, 'E', "GLF_VERIFY_DELETE", "iopen: verify whether the inode was deleted")
        .was(&["GLF_VERIFY_EVICT"]),
    glf(20, 's', "GLF_DEFER_DELETE", "iopen: deletion deferred"),
    glf(21, 'C', "GLF_CANCELING", "DLM cancel in progress"),
];

/// The bit of the glock flag named `name` (`GLF_LOCK`), by any name it has had.
pub fn glf_bit(name: &str) -> Option<u32> {
    GLOCK_FLAGS
        .iter()
        .find(|f| f.name == name || f.former_names.contains(&name))
        .and_then(|f| f.bit)
}

/// The letter every kernel's trace events give glock flag bit `bit`; None for a bit not
/// known, or with letters that changed (GLF_INITIAL).
pub fn glf_letter(bit: u32) -> Option<char> {
    let mut flags = GLOCK_FLAGS.iter().filter(|f| f.bit == Some(bit));
    match (flags.next(), flags.next()) {
        (Some(f), None) => Some(f.letter),
        _ => None,
    }
}

/// Holder flag letters in the order kernels print them.
#[rustfmt::skip]
pub const HOLDER_FLAGS: &[FlagInfo] = &[
    fi('t', "LM_FLAG_TRY", "try lock"),
    fi('T', "LM_FLAG_TRY_1CB", "try lock, one callback"),
    fi('e', "LM_FLAG_NOEXP", "taken during journal recovery"),
    fi('A', "LM_FLAG_ANY", "any compatible mode"),
    fi('p', "LM_FLAG_PRIORITY", "queued at the head (before 6.6)"),
    fi('n', "LM_FLAG_NODE_SCOPE", "shares an EX glock within the node"),
    fi('a', "GL_ASYNC", "asynchronous request"),
    fi('E', "GL_EXACT", "exact mode required"),
    fi('c', "GL_NOCACHE", "demote on unlock"),
    fi('H', "HIF_HOLDER", "granted"),
    fi('W', "HIF_WAIT", "waiting"),
    fi('F', "HIF_FIRST", "first holder granted (before 5.16)"),
    fi('D', "HIF_MAY_DEMOTE", "may be auto-demoted (5.16-5.19)"),
    fi('s', "GL_SKIP", "skip instantiate"),
];

/// A set of ASCII flag letters. Order-independent; displays in the kernel's order, then
/// any unknown letters in ASCII order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LetterSet(u128);

impl LetterSet {
    /// The set whose bit `b` stands for letter `b`.
    pub(crate) const fn from_bits(bits: u128) -> LetterSet {
        LetterSet(bits)
    }

    /// Builds the set from a flag string; `None` if a byte is not printable ASCII.
    pub fn parse(s: &[u8]) -> Option<LetterSet> {
        let mut bits = 0u128;
        for &b in s {
            if !b.is_ascii_graphic() {
                return None;
            }
            bits |= 1u128 << b;
        }
        Some(LetterSet(bits))
    }

    /// Whether `letter` is in the set.
    #[inline]
    pub fn contains(self, letter: char) -> bool {
        (letter as u32) < 128 && self.0 & (1u128 << (letter as u32)) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Letters in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    fn letters_in(self, table: &[FlagInfo]) -> String {
        let mut out = String::with_capacity(self.len());
        let mut rest = self.0;
        for f in table {
            if self.contains(f.letter) {
                out.push(f.letter);
                rest &= !(1u128 << (f.letter as u32));
            }
        }
        for b in 0u8..128 {
            if rest & (1u128 << b) != 0 {
                out.push(b as char);
            }
        }
        out
    }

    fn decode_in(self, table: &'static [FlagInfo]) -> Vec<Decoded> {
        self.letters_in(table)
            .chars()
            .map(|c| match table.iter().find(|f| f.letter == c) {
                Some(info) => Decoded::Known(*info),
                None => Decoded::Unknown(c),
            })
            .collect()
    }
}

/// One decoded flag letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// A letter the table names.
    Known(FlagInfo),
    /// A letter it does not.
    Unknown(char),
}

impl Decoded {
    /// The letter.
    pub fn letter(self) -> char {
        match self {
            Decoded::Known(f) => f.letter,
            Decoded::Unknown(c) => c,
        }
    }

    /// What it means, in words (`unknown flag X` for an unknown letter).
    pub fn meaning(self) -> String {
        match self {
            Decoded::Known(f) => f.meaning.to_string(),
            Decoded::Unknown(c) => format!("unknown flag '{c}'"),
        }
    }
}

/// The table a kind of flags is read with: what makes [`GlockFlags`] and [`HolderFlags`]
/// two types over one [`Flags`].
pub trait FlagTable {
    /// The letters this kind of flags can have.
    const TABLE: &'static [FlagInfo];
}

/// The flags of a `G:` line ([`GLOCK_FLAGS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OfGlock;

impl FlagTable for OfGlock {
    const TABLE: &'static [FlagInfo] = GLOCK_FLAGS;
}

/// The flags of an `H:` line ([`HOLDER_FLAGS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OfHolder;

impl FlagTable for OfHolder {
    const TABLE: &'static [FlagInfo] = HOLDER_FLAGS;
}

/// A flags field: its letters, decoded with the table of `T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags<T> {
    /// The letters.
    pub letters: LetterSet,
    table: PhantomData<T>,
}

/// The flags of a `G:` line.
pub type GlockFlags = Flags<OfGlock>;

/// The flags of an `H:` line.
pub type HolderFlags = Flags<OfHolder>;

impl<T: FlagTable> Flags<T> {
    /// The flags with these letters.
    pub fn new(letters: LetterSet) -> Flags<T> {
        Flags {
            letters,
            table: PhantomData,
        }
    }
    /// Parses a flags field (`f:` of a `G:` or `H:` line).
    pub fn parse(s: &[u8]) -> Option<Flags<T>> {
        LetterSet::parse(s).map(Flags::new)
    }
    /// Whether the flag `letter` is set.
    pub fn contains(self, letter: char) -> bool {
        self.letters.contains(letter)
    }
    /// Whether no flag is set.
    pub fn is_empty(self) -> bool {
        self.letters.is_empty()
    }
    /// Each flag, decoded.
    pub fn decode(self) -> Vec<Decoded> {
        self.letters.decode_in(T::TABLE)
    }
    /// Each flag as a short phrase, for "flags as words" output.
    pub fn words(self) -> Vec<String> {
        self.decode().into_iter().map(Decoded::meaning).collect()
    }
}

impl GlockFlags {
    /// Demote requested, pending or in progress (`D`, `d`, `p`).
    pub fn demote_activity(self) -> bool {
        self.contains('D') || self.contains('d') || self.contains('p')
    }
    /// A state change or DLM operation is in progress (`l`).
    pub fn locked(self) -> bool {
        self.contains('l')
    }
}

impl<T: FlagTable> fmt::Display for Flags<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.letters.letters_in(T::TABLE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_order_is_kept_for_every_version() {
        for s in [
            "lDdpyfirIFqLob",
            "lDdpyfirIFqLobPxnN",
            "lDdpyfirIFqLobxnNeE",
            "lDdpyfiRraFqLobxnNeEsC",
            "lyfaqo",
        ] {
            assert_eq!(GlockFlags::parse(s.as_bytes()).unwrap().to_string(), s);
        }
        for s in ["tTeApaEcHWF", "tTeApnaEcHWDs", "tTeAnaEcHWs", "nW"] {
            assert_eq!(HolderFlags::parse(s.as_bytes()).unwrap().to_string(), s);
        }
    }

    #[test]
    fn unknown_letters_are_kept() {
        let f = GlockFlags::parse(b"qZob").unwrap();
        assert_eq!(f.to_string(), "qobZ");
        let d = f.decode();
        assert_eq!(d.last().unwrap(), &Decoded::Unknown('Z'));
        assert_eq!(d[0].meaning(), "holders queued");
    }

    #[test]
    fn initial_letter_is_version_aware() {
        let old = GlockFlags::parse(b"I").unwrap().words();
        let new = GlockFlags::parse(b"a").unwrap().words();
        assert!(old[0].contains("exists"));
        assert!(new[0].contains("no DLM lock"));
    }

    #[test]
    fn empty_and_bad() {
        assert!(GlockFlags::parse(b"").unwrap().is_empty());
        assert!(GlockFlags::parse(b"a\x01").is_none());
        assert!(GlockFlags::parse("é".as_bytes()).is_none());
    }

    /// Every flag the kernel has has its bit, each bit one flag (GLF_INITIAL's two letters
    /// aside), and renamed flags are found by their former names.
    #[test]
    fn bits_are_one_flag_each() {
        for bit in 1..=21 {
            let letter = glf_letter(bit);
            assert_eq!(letter.is_none(), bit == 10, "bit {bit}");
        }
        assert_eq!(glf_letter(0), None);
        assert_eq!(glf_letter(22), None);
        assert_eq!(glf_bit("GLF_HAVE_REPLY"), Some(9));
        assert_eq!(glf_bit("GLF_REPLY_PENDING"), Some(9));
        assert_eq!(glf_bit("GLF_INITIAL"), Some(10));
        assert_eq!(glf_bit("GLF_VERIFY_EVICT"), glf_bit("GLF_VERIFY_DELETE"));
        assert_eq!(glf_bit("GLF_QUEUED"), None);
        assert_eq!(glf_bit("GLF_MAY_CANCEL"), None);
    }
}
