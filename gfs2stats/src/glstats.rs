//! The debugfs `glstats` file: one line per glock,
//! `G: n:TYPE/HEX rtt:SRTT/SRTTVAR rttb:SRTTB/SRTTVARB irt:SIRT/SIRTVAR dcnt: N qcnt: N`.
//! All times are integer nanoseconds; the "var" fields are smoothed mean deviations.

use std::io::Read;
use std::path::Path;

use glockparse::lines::{parse_records, Parsed};
use glockparse::quote::quote;
use glockparse::{Diagnostics, GlockId, LkStats};

use crate::value;

/// One glock's line: the glock and its eight DLM statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GlStat {
    /// The glock.
    pub glock: GlockId,
    /// Its statistics.
    pub stats: LkStats,
}

/// Splits `a/b`.
fn pair(v: &[u8]) -> Option<(i64, i64)> {
    let i = v.iter().position(|&b| b == b'/')?;
    Some((value::parse(&v[..i])?, value::parse(&v[i + 1..])?))
}

/// Parses one glstats line. Spacing is free: `dcnt: 5` and `dcnt:5` both work.
pub fn parse_line(line: &[u8]) -> Result<GlStat, String> {
    let mut toks = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
        .peekable();
    if toks.next() != Some(b"G:") {
        return Err("not a glstats line (expected G:)".into());
    }
    let mut s = GlStat::default();
    let (mut id, mut seen) = (false, 0u32);
    while let Some(tok) = toks.next() {
        let Some(colon) = tok.iter().position(|&b| b == b':') else {
            return Err(format!("unexpected token \"{}\"", quote(tok, 60)));
        };
        let key = &tok[..colon];
        let mut v = &tok[colon + 1..];
        if v.is_empty() {
            v = toks
                .next()
                .ok_or_else(|| format!("{} without a value", quote(key, 60)))?;
        }
        let bad = || format!("bad value {}:{}", quote(key, 60), quote(v, 60));
        match key {
            b"n" => {
                s.glock = GlockId::parse_hex(v).ok_or_else(bad)?;
                id = true;
            }
            b"rtt" => (s.stats.srtt, s.stats.srttvar) = pair(v).ok_or_else(bad)?,
            b"rttb" => (s.stats.srttb, s.stats.srttvarb) = pair(v).ok_or_else(bad)?,
            b"irt" => (s.stats.sirt, s.stats.sirtvar) = pair(v).ok_or_else(bad)?,
            b"dcnt" => s.stats.dcount = value::parse(v).ok_or_else(bad)?,
            b"qcnt" => s.stats.qcount = value::parse(v).ok_or_else(bad)?,
            _ => continue,
        }
        seen += 1;
    }
    if !id {
        return Err("no n: glock id".into());
    }
    if seen < 6 {
        return Err("missing fields (expected rtt, rttb, irt, dcnt, qcnt)".into());
    }
    Ok(s)
}

/// Reads every line of a glstats file; malformed lines are counted and reported.
pub fn read<R: Read>(rdr: R, source: &str) -> (Vec<GlStat>, Diagnostics) {
    parse_records(rdr, source, |_, line| match parse_line(line) {
        Ok(s) => Parsed::Record(s),
        Err(m) => Parsed::Bad(m),
    })
}

/// Reads a glstats file (compressed or not).
pub fn read_path(path: &Path) -> std::io::Result<(Vec<GlStat>, Diagnostics)> {
    glockparse::input::read_path(path, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spacing_and_sign() {
        let s = parse_line(b"G: n:2/608ea rtt:301936/241999 rttb:64736034/28945459 irt:352352111/440779811 dcnt: 1 qcnt: 3").unwrap();
        assert_eq!(s.glock, GlockId::new(2, 0x608ea));
        assert_eq!(
            (
                s.stats.srtt,
                s.stats.srttvarb,
                s.stats.sirtvar,
                s.stats.dcount,
                s.stats.qcount
            ),
            (301936, 28945459, 440779811, 1, 3)
        );
        let s = parse_line(b"G:  n:2/1 rtt:-1/0 rttb:0/0 irt:0/0 dcnt:5 qcnt:6").unwrap();
        assert_eq!((s.stats.srtt, s.stats.dcount), (-1, 5));
        assert!(parse_line(b"G: n:2/1 rtt:1/2").is_err());
        assert!(parse_line(b"G: rtt:1/2 rttb:0/0 irt:0/0 dcnt: 1 qcnt: 1").is_err());
        assert!(parse_line(b"G: n:2/1 rtt:1 rttb:0/0 irt:0/0 dcnt: 1 qcnt: 1").is_err());
        assert!(parse_line(b"type cpu: 0").is_err());
    }
}
