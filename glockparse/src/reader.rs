//! Assembles glock records from lines, in any of the three text forms glocks dumps come in:
//!
//! * the debugfs `glocks` file;
//! * the kernel-log form, every line prefixed `gfs2: fsid=CLUSTER:FS.J: ` (with or without a
//!   dmesg `[ secs.usecs]` timestamp), where other log messages around the dump are ignored;
//! * glocktop output (`@ fsname date @host` headers, indented G/H/I lines with glocktop's
//!   own `D:`, `U:`, `C:` and `S` lines, which are ignored).

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use crate::brief::{Brief, Skimmer};
use crate::diagnostics::{Diagnostics, ParseError};
use crate::intern::Interner;
use crate::lines::LineReader;
use crate::parse;
use crate::record::{Glock, Holder};

/// Streams glock records from a reader. Malformed lines are recorded in
/// [`GlockReader::diagnostics`] and parsing goes on; nothing here panics on any input.
pub struct GlockReader<R> {
    lines: LineReader<R>,
    state: State,
}

struct State {
    source: Arc<str>,
    interner: Interner,
    diag: Diagnostics,
    cur: Glock,
    have_cur: bool,
    /// The last G: line was malformed: drop its H/I/R lines.
    skipping: bool,
    /// A kernel-log prefix was seen: unrecognised lines are log noise, not errors.
    kernel_log: bool,
    /// A glocktop `@` header was seen.
    glocktop: bool,
    glocktop_fs: Option<Arc<str>>,
    done: bool,
    /// Where [`Entry::glock`] builds a skimmed record.
    scratch: Glock,
    /// Boxed, to be taken out cheaply while it runs ([`Skimmer::skim_run`]); made on
    /// first use.
    skimmer: Option<Box<Skimmer>>,
}

/// One record handed out by [`GlockReader::for_each_brief`]: its [`Brief`], and the full
/// record on demand.
pub struct Entry<'a> {
    /// The glock line.
    pub brief: Brief,
    full: Full<'a>,
}

enum Full<'a> {
    /// Read by the full parser already.
    Parsed(&'a Glock),
    /// Skimmed: the record's text, parsed when asked for.
    Text {
        text: &'a [u8],
        interner: &'a mut Interner,
        scratch: &'a mut Glock,
        parsed: bool,
    },
}

impl<'a> Entry<'a> {
    /// A record the full parser read.
    fn parsed(g: &'a Glock) -> Entry<'a> {
        Entry {
            brief: Brief::of(g),
            full: Full::Parsed(g),
        }
    }

    /// The whole record, exactly as [`GlockReader::next_into`] gives it.
    pub fn glock(&mut self) -> &Glock {
        match &mut self.full {
            Full::Parsed(g) => g,
            Full::Text {
                text,
                interner,
                scratch,
                parsed,
            } => {
                if !*parsed {
                    parse_skimmed(text, self.brief.line, interner, scratch);
                    *parsed = true;
                }
                scratch
            }
        }
    }
}

/// Builds the record [`Skimmer::skim`] accepted from `text` (its first line is `line`): every
/// line is in the layout the fast parsers read, so none of them fails.
fn parse_skimmed(text: &[u8], line: u64, interner: &mut Interner, g: &mut Glock) {
    g.clear();
    for (k, l) in text.split(|&b| b == b'\n').enumerate() {
        let line_no = line + k as u64;
        let ok = match l.get(..3) {
            Some(b"G: ") => parse::glock_line(&l[2..], g).is_ok(),
            Some(b" H:") => parse::holder_line(&l[3..], interner)
                .map(|h| g.holders.push(Holder { line: line_no, ..h }))
                .is_ok(),
            Some(b" I:") => parse::inode_line(&l[3..])
                .map(|i| g.inode = Some(i))
                .is_ok(),
            _ => l.is_empty(),
        };
        debug_assert!(ok, "skimmed line {line_no} does not parse");
    }
    g.line = line;
}

/// What a line is, after its prefixes are stripped.
enum Kind<'a> {
    Glock(&'a [u8], Option<&'a [u8]>),
    Holder(&'a [u8]),
    Inode(&'a [u8]),
    Rgrp(&'a [u8]),
    Lvb(&'a [u8]),
    Reservation(&'a [u8]),
    GlocktopHeader(&'a [u8]),
    Ignored,
    Unrecognized,
}

impl GlockReader<Box<dyn Read + Send>> {
    /// Opens a glocks file (compressed or not); errors are named by the path.
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(GlockReader::new(
            crate::input::open(path)?,
            path.display().to_string(),
        ))
    }
}

impl<R: Read> GlockReader<R> {
    /// `source` names the input in error messages (usually the file path).
    pub fn new(rdr: R, source: impl Into<Arc<str>>) -> GlockReader<R> {
        GlockReader {
            lines: LineReader::new(rdr),
            state: State {
                source: source.into(),
                interner: Interner::default(),
                diag: Diagnostics::default(),
                cur: Glock::default(),
                have_cur: false,
                skipping: false,
                kernel_log: false,
                glocktop: false,
                glocktop_fs: None,
                done: false,
                scratch: Glock::default(),
                skimmer: None,
            },
        }
    }

    /// Says that `rdr` starts at byte `offset` of its file (a piece of a file read from the
    /// middle), for speed only: see [`LineReader::at_offset`].
    pub fn at_offset(mut self, offset: u64) -> GlockReader<R> {
        self.lines = self.lines.at_offset(offset);
        self
    }

    /// What was malformed so far.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.state.diag
    }

    /// What was malformed, the reader done.
    pub fn into_diagnostics(self) -> Diagnostics {
        self.state.diag
    }

    /// Reads the next record into `out`, reusing its allocations. Returns `false` at the
    /// end of input (a read error also ends input and is kept as
    /// [`Diagnostics::fatal`]).
    pub fn next_into(&mut self, out: &mut Glock) -> bool {
        let st = &mut self.state;
        if st.done {
            return false;
        }
        loop {
            let (line_no, line) = match self.lines.next_numbered() {
                Ok(Some(numbered)) => numbered,
                Ok(None) => return st.finish(out),
                Err(e) => {
                    st.read_error(self.lines.line_number() + 1, &e);
                    return st.finish(out);
                }
            };
            st.diag.lines += 1;
            if st.line(line, line_no, out) {
                return true;
            }
        }
    }

    /// Calls `f` with every remaining record, as [`GlockReader::next_into`] would read
    /// them, but faster when only a few records are needed whole: records in the kernel's
    /// exact debugfs layout are skimmed into a [`Brief`] and parsed only when
    /// [`Entry::glock`] is called; every other line goes through the full parser, so
    /// diagnostics are the same.
    pub fn for_each_brief(&mut self, mut f: impl FnMut(Entry<'_>)) {
        let GlockReader { lines, state: st } = self;
        let mut out = Glock::default();
        while !st.done {
            match lines.next_block(b"\nG: ") {
                Ok(Some((len, whole))) => {
                    let base = lines.line_number();
                    let text = &lines.pending()[..len];
                    let (bytes, n) = st.block(text, base, whole, &mut out, &mut f);
                    lines.consume(bytes, n);
                }
                Ok(None) => match lines.next_numbered() {
                    Ok(Some((line_no, line))) => {
                        st.diag.lines += 1;
                        if st.line(line, line_no, &mut out) {
                            f(Entry::parsed(&out));
                        }
                    }
                    Ok(None) => {
                        if st.finish(&mut out) {
                            f(Entry::parsed(&out));
                        }
                    }
                    Err(e) => st.fatal(lines.line_number() + 1, &e, &mut out, &mut f),
                },
                Err(e) => st.fatal(lines.line_number() + 1, &e, &mut out, &mut f),
            }
        }
    }
}

impl<R: Read> Iterator for GlockReader<R> {
    type Item = Glock;

    fn next(&mut self) -> Option<Glock> {
        let mut g = Glock::default();
        self.next_into(&mut g).then_some(g)
    }
}

impl State {
    fn finish(&mut self, out: &mut Glock) -> bool {
        self.done = true;
        self.hand_over(out)
    }

    /// Moves the record in hand, if any, into `out` (and counts it); true if there was one.
    fn hand_over(&mut self, out: &mut Glock) -> bool {
        if !self.have_cur {
            return false;
        }
        self.have_cur = false;
        std::mem::swap(&mut self.cur, out);
        self.diag.records += 1;
        true
    }

    /// A read error ends the input; it is kept as [`Diagnostics::fatal`].
    fn read_error(&mut self, line_no: u64, e: &io::Error) {
        self.diag.fatal = Some(format!("{}:{line_no}: read error: {e}", self.source));
    }

    /// [`State::read_error`], then the record in hand goes to `f`.
    fn fatal(
        &mut self,
        line_no: u64,
        e: &io::Error,
        out: &mut Glock,
        f: &mut impl FnMut(Entry<'_>),
    ) {
        self.read_error(line_no, e);
        if self.finish(out) {
            f(Entry::parsed(out));
        }
    }

    /// Reads a block of whole lines (`whole`: ending where a record starts, or at the end
    /// of input), the first numbered `base + 1`: records in the exact debugfs layout are
    /// skimmed, every other line goes through [`State::line`]. Returns the bytes and lines
    /// used (all of them).
    fn block(
        &mut self,
        text: &[u8],
        base: u64,
        whole: bool,
        out: &mut Glock,
        f: &mut impl FnMut(Entry<'_>),
    ) -> (usize, u64) {
        let mut pos = 0;
        let mut no = base;
        while pos < text.len() {
            let plain = whole && !self.kernel_log && !self.glocktop;
            if plain && text[pos..].starts_with(b"G: ") {
                // The skimmer is taken out while it calls back into `self`.
                let mut skimmer = self.skimmer.take().unwrap_or_default();
                let stop = skimmer.skim_run(text, pos, |mut b, start, end, n| {
                    // The full parser would end the record it holds here.
                    if self.hand_over(out) {
                        f(Entry::parsed(out));
                    }
                    self.skipping = false;
                    b.line = no + 1;
                    self.diag.lines += n;
                    self.diag.records += 1;
                    f(Entry {
                        brief: b,
                        full: Full::Text {
                            text: &text[start..end],
                            interner: &mut self.interner,
                            scratch: &mut self.scratch,
                            parsed: false,
                        },
                    });
                    no += n;
                });
                self.skimmer = Some(skimmer);
                if stop > pos {
                    pos = stop;
                    continue;
                }
            }
            // Up to the next record that may be skimmed, line by line.
            let stop = match memchr::memmem::find(&text[pos..], b"\nG: ") {
                Some(k) if plain => pos + k + 1,
                _ => text.len(),
            };
            while pos < stop {
                let nl = memchr::memchr(b'\n', &text[pos..stop]).map_or(stop, |k| pos + k);
                no += 1;
                // An overlong line in pieces, as the line reader cuts it.
                for piece in crate::lines::pieces(&text[pos..nl]) {
                    self.diag.lines += 1;
                    if self.line(piece, no, out) {
                        f(Entry::parsed(out));
                    }
                }
                pos = (nl + 1).min(stop);
            }
        }
        (text.len(), no - base)
    }

    fn error(&mut self, line_no: u64, message: String, text: &[u8]) {
        let e = ParseError::new(&self.source, line_no, message, text);
        self.diag.error(e);
    }

    /// Handles one line; returns true when a finished record was moved into `out`.
    fn line(&mut self, line: &[u8], line_no: u64, out: &mut Glock) -> bool {
        match self.classify(line) {
            Kind::Glock(body, fsid) => {
                let finished = self.hand_over(out);
                self.cur.clear();
                match parse::glock_line(body, &mut self.cur) {
                    Ok(()) => {
                        self.cur.line = line_no;
                        self.cur.fs = match fsid {
                            Some(f) => Some(self.interner.intern(f)),
                            None => self.glocktop_fs.clone(),
                        };
                        self.have_cur = true;
                        self.skipping = false;
                    }
                    Err(m) => {
                        self.error(line_no, m, line);
                        self.have_cur = false;
                        self.skipping = true;
                    }
                }
                finished
            }
            Kind::GlocktopHeader(name) => {
                self.glocktop = true;
                self.glocktop_fs = Some(self.interner.intern(name));
                self.diag.ignored += 1;
                false
            }
            Kind::Ignored => {
                self.diag.ignored += 1;
                false
            }
            Kind::Unrecognized => {
                self.error(line_no, "not a glocks line".into(), line);
                false
            }
            part => {
                if !self.have_cur {
                    if self.skipping {
                        self.diag.skipped += 1;
                    } else {
                        self.error(line_no, "line outside a glock record".into(), line);
                    }
                    return false;
                }
                if let Err(m) = self.attach(part, line_no) {
                    self.error(line_no, m, line);
                }
                false
            }
        }
    }

    fn attach(&mut self, part: Kind<'_>, line_no: u64) -> Result<(), String> {
        let g = &mut self.cur;
        match part {
            Kind::Holder(body) => g.holders.push(Holder {
                line: line_no,
                ..parse::holder_line(body, &mut self.interner)?
            }),
            Kind::Inode(body) => g.inode = Some(parse::inode_line(body)?),
            Kind::Rgrp(body) => g.rgrp = Some(Box::new(parse::rgrp_line(body)?)),
            Kind::Lvb(body) => {
                let lvb = parse::lvb_line(body)?;
                g.rgrp.as_mut().ok_or("L: line without an R: line")?.lvb = Some(lvb);
            }
            Kind::Reservation(body) => {
                let b = parse::reservation_line(body)?;
                g.rgrp
                    .as_mut()
                    .ok_or("B: line without an R: line")?
                    .reservations
                    .push(b);
            }
            _ => unreachable!("only record parts are attached"),
        }
        Ok(())
    }

    fn classify<'a>(&mut self, line: &'a [u8]) -> Kind<'a> {
        let line = trim_end(line);
        if line.is_empty() {
            return Kind::Ignored;
        }
        // The plain debugfs form, by far the most common: no prefixes to strip.
        if !self.glocktop && !self.kernel_log {
            match line.get(..3) {
                Some(b"G: ") => return Kind::Glock(&line[2..], None),
                Some(b" H:") if line.get(3) == Some(&b' ') => return Kind::Holder(&line[3..]),
                Some(b" I:") if line.get(3) == Some(&b' ') => return Kind::Inode(&line[3..]),
                _ => {}
            }
        }
        let (rest, fsid, logged) = strip_log_prefix(line);
        if logged {
            self.kernel_log = true;
        }
        if !logged {
            if let Some(h) = rest.strip_prefix(b"@ ") {
                let name = h.split(|&b| b == b' ').find(|t| !t.is_empty());
                return Kind::GlocktopHeader(name.unwrap_or(b""));
            }
        }
        let body = trim_start(rest);
        let tag = if body.len() >= 2 && body[1] == b':' && (body.len() == 2 || body[2] == b' ') {
            body[0]
        } else {
            0
        };
        let after = if tag != 0 { &body[2..] } else { body };
        match tag {
            b'G' => {
                let after = if self.glocktop && !logged {
                    // glocktop appends " (inode)" and "** demote time ... **".
                    match memchr::memmem::find(after, b" (") {
                        Some(i) => &after[..i],
                        None => after,
                    }
                } else {
                    after
                };
                Kind::Glock(after, fsid)
            }
            b'H' => Kind::Holder(after),
            b'I' => Kind::Inode(after),
            b'R' => Kind::Rgrp(after),
            b'L' => Kind::Lvb(after),
            b'B' => Kind::Reservation(after),
            b'D' | b'U' | b'C' if self.glocktop => Kind::Ignored,
            _ if self.glocktop && (rest.starts_with(b"S ") || rest == b"S") => Kind::Ignored,
            _ if logged || self.kernel_log => Kind::Ignored,
            _ => Kind::Unrecognized,
        }
    }
}

fn trim_end(s: &[u8]) -> &[u8] {
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &s[..end]
}

fn trim_start(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    &s[start..]
}

/// Strips a dmesg timestamp `[  332.856500] ` and a `gfs2: fsid=NAME: ` prefix. Returns the
/// rest, the fsid if present, and whether any kernel-log prefix was found.
fn strip_log_prefix(line: &[u8]) -> (&[u8], Option<&[u8]>, bool) {
    let mut rest = line;
    let mut logged = false;
    if rest.first() == Some(&b'[') {
        if let Some(close) = memchr::memchr(b']', rest) {
            let inner = trim_start(&rest[1..close]);
            let is_ts = !inner.is_empty()
                && inner.iter().all(|b| b.is_ascii_digit() || *b == b'.')
                && inner.contains(&b'.');
            if is_ts {
                rest = trim_start(&rest[close + 1..]);
                logged = true;
            }
        }
    }
    let probe = trim_start(rest);
    if let Some(after) = probe.strip_prefix(b"gfs2: ") {
        if let Some(f) = after.strip_prefix(b"fsid=") {
            if let Some(i) = memchr::memmem::find(f, b": ") {
                return (&f[i + 2..], Some(&f[..i]), true);
            }
            if let Some(name) = f.strip_suffix(b":") {
                return (b"", Some(name), true);
            }
        }
        return (after, None, true);
    }
    (rest, None, logged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Vec<Glock>, Diagnostics) {
        let mut r = GlockReader::new(text.as_bytes(), "t");
        let v: Vec<Glock> = r.by_ref().collect();
        (v, r.into_diagnostics())
    }

    #[test]
    fn debugfs_record_with_everything() {
        let (g, d) = parse(
            "G:  s:EX n:2/203e5 f:yfIqob t:EX d:EX/0 a:0 v:0 r:4 m:200 p:1\n\
             \x20H: s:EX f:H e:0 p:4466 [dd] gfs2_file_write_iter+0x134/0x3a0 [gfs2]\n\
             \x20H: s:SH f:W e:0 p:4470 [cat] gfs2_open_common+0x5c/0x1a0 [gfs2]\n\
             \x20I: n:37/132069 t:8 f:0x00 d:0x00000000 s:1048576 p:256\n\
             G:  s:EX n:3/11 f:Iqob t:EX d:EX/0 a:0 v:0 r:3 m:200 p:0\n\
             \x20R: n:17 f:90000000 b:61231/61231 i:12 q:0 r:0 e:61231\n\
             \x20 L: f:00 b:38623 i:12\n\
             \x20 B: n:132069 s:524401 f:64\n",
        );
        assert!(d.is_clean(), "{d:?}");
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].holders.len(), 2);
        assert_eq!(g[0].waiter_count(), 1);
        assert_eq!(g[0].inode.as_ref().unwrap().addr, 0x203e5);
        let r = g[1].rgrp.as_ref().unwrap();
        assert_eq!(r.addr, 0x11);
        assert_eq!(r.lvb.as_ref().unwrap().free, 38623);
        assert_eq!(r.reservations[0].free, 64);
        assert_eq!((g[0].line, g[1].line), (1, 5));
        let lines: Vec<u64> = g[0].holders.iter().map(|h| h.line).collect();
        assert_eq!(lines, [2, 3]);
        assert_eq!(d.records, 2);
    }

    #[test]
    fn kernel_log_form() {
        let (g, d) = parse(
            "[  332.856500] gfs2: fsid=xapi:16d3.0: about to withdraw this file system\n\
             [  332.856510] gfs2: fsid=xapi:16d3.0: G:  s:EX n:2/805f f:Dqob t:EX d:UN/603701000 a:0 v:0 r:4 m:200 p:1\n\
             [  332.856511] gfs2: fsid=xapi:16d3.0:  H: s:EX f:H e:0 p:1 [(ended)] init_journal+0x548/0x890 [gfs2]\n\
             [  332.856512] other kernel message\n\
             \x20 inode = 3 2074\n\
             gfs2: fsid=_){&.s: G:  s:SH n:2/13 f:aqob t:SH d:EX/0 a:0 v:0 r:2 m:20 p:3\n",
        );
        assert!(d.is_clean(), "{d:?}");
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].fs.as_deref(), Some("xapi:16d3.0"));
        assert_eq!(g[0].holders.len(), 1);
        assert!(g[0].demote_requested());
        assert_eq!(g[1].fs.as_deref(), Some("_){&.s"));
        assert_eq!(d.ignored, 3);
    }

    #[test]
    fn glocktop_form() {
        let (g, d) = parse(
            "@ gfs       Sun Nov 22 05:02:58 2026  @n1 \n\
             \x20G:  s:EX n:6/60af5 f:DIqb t:EX d:UN/9928000 a:0 v:0 r:3 m:50 p:0 (flock) ** demote time is greater than 0 **\n\
             \x20 D: Granted EX on this node to pid 866 flock\n\
             \x20 H: s:EX f:H e:0 p:0 [(none)] get_tree_bdev+0x170/0x260                         \n\
             \x20 U:  H flock      60af5     Held:Exclusive   [Demoting, Queued, Blocking]\n\
             S  Unlocked:       1        5       5       0       0     0    0       11 \n\
             S\n",
        );
        assert!(d.is_clean(), "{d:?}");
        assert_eq!(g.len(), 1);
        assert!(g[0].extra.is_empty());
        assert_eq!(g[0].fs.as_deref(), Some("gfs"));
        assert_eq!(&*g[0].holders[0].caller, "get_tree_bdev+0x170/0x260");
    }

    #[test]
    fn bad_lines_are_reported_and_the_rest_survives() {
        let (g, d) = parse(
            "G:  s:EX n:2/zz f: t:EX d:EX/0 a:0 v:0 r:3 m:200\n\
             \x20H: s:EX f:H e:0 p:1 [a] f+0x1/0x2\n\
             G:  s:EX n:2/10 f: t:EX d:EX/0 a:0 v:0 r:3 m:200\n\
             \x20H: s:EX f:H e:0 p:1\n\
             \x20H: s:EX f:H e:0 p:2 [b] f+0x1/0x2\n\
             junk\n\
             G:  s:SH n:2/11 f: t:SH d:EX/0 a:0 v:0 r:3 m:200\n",
        );
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].holders.len(), 1);
        assert_eq!(g[0].holders[0].pid, 2);
        assert_eq!(d.errors, 3);
        assert_eq!(d.skipped, 1);
        let lines: Vec<u64> = d.first_errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![1, 4, 6]);
        assert!(d.first_errors[0]
            .to_string()
            .starts_with("t:1: bad glock number"));
    }

    #[test]
    fn orphan_holder_is_an_error() {
        let (g, d) = parse("gfs2: fsid=syz:syz.0:  H: s:SH f:H e:0 p:5123 [x] iterate_dir+0x57a/0x810 fs/readdir.c:110\n");
        assert!(g.is_empty());
        assert_eq!(d.errors, 1);
        assert!(d.first_errors[0].message.contains("outside"));
    }
}
