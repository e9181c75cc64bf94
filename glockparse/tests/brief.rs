//! `GlockReader::for_each_brief` (records skimmed, parsed on demand) against the full
//! parser (`GlockReader::next_into`): the same records, the same briefs, the same
//! diagnostics, on every fixture, on every line of a real file broken in many ways, and
//! whatever sizes the reads come in.

use std::io::{self, Read};

use glockparse::{Brief, Diagnostics, Glock, GlockReader};

/// Hands out at most `step` bytes per read (the step cycles through `steps`).
struct Uneven<'a> {
    data: &'a [u8],
    steps: &'a [usize],
    k: usize,
}

impl Read for Uneven<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let step = self.steps[self.k % self.steps.len()];
        self.k += 1;
        let n = step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn full<R: Read>(r: R) -> (Vec<Glock>, Diagnostics) {
    let mut r = GlockReader::new(r, "t");
    let v: Vec<Glock> = r.by_ref().collect();
    (v, r.into_diagnostics())
}

/// Every record through `for_each_brief`, with its brief; every other record asked for
/// whole twice, the others once, to check that asking again changes nothing.
fn skimmed<R: Read>(r: R) -> (Vec<(Brief, Glock)>, Diagnostics) {
    let mut r = GlockReader::new(r, "t");
    let mut v = Vec::new();
    r.for_each_brief(|mut e| {
        let b = e.brief;
        if v.len() % 2 == 0 {
            e.glock();
        }
        v.push((b, e.glock().clone()));
    });
    (v, r.into_diagnostics())
}

#[track_caller]
fn same(bytes: &[u8], what: &str) {
    let (want, wd) = full(bytes);
    for (name, (got, gd)) in [
        ("one read", skimmed(bytes)),
        (
            "uneven reads",
            skimmed(Uneven {
                data: bytes,
                steps: &[1, 7, 4096, 3, 65536, 100],
                k: 0,
            }),
        ),
    ] {
        assert_eq!(gd, wd, "{what} ({name}): diagnostics");
        assert_eq!(got.len(), want.len(), "{what} ({name}): records");
        for ((b, g), w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{what} ({name}): record at line {}", w.line);
            assert_eq!(
                *b,
                Brief::of(w),
                "{what} ({name}): brief at line {}",
                w.line
            );
        }
    }
}

#[test]
fn every_fixture_reads_the_same() {
    let mut files = testdata::files("real", |n| n.starts_with("glocks."));
    files.extend(testdata::files("public", |n| {
        n.ends_with(".glocks") || n == "glocks" || n.ends_with(".txt")
    }));
    assert!(files.len() > 100, "{}", files.len());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        same(&bytes, &f.display().to_string());
    }
}

/// Ways to break one line: cut or padded, bytes swapped throughout, a text replaced once,
/// or the line replaced whole.
fn broken(l: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![
        l[..l.len() / 2].to_vec(),
        [l, b" "].concat(),
        [l, b"\r"].concat(),
        [b" ", l].concat(),
        [l, b" x:1"].concat(),
    ];
    for (from, to) in [(b'0', b'o'), (b'1', b'\xff'), (b':', b';'), (b']', b')')] {
        out.push(l.iter().map(|&b| if b == from { to } else { b }).collect());
    }
    let s = String::from_utf8_lossy(l);
    for (from, to) in [
        (":0", ":184467440737095516160"),
        (":", ":-"),
        ("/", "/123456789abcdef01"),
        ("EX", "XE"),
        (" H:", "  R:"),
        ("G:  ", "G:x"),
        ("G:  ", " G:  "),
        ("G:", "[  332.856500] gfs2: fsid=a:b.0: G:"),
    ] {
        out.push(s.replacen(from, to, 1).into_bytes());
    }
    out.push(b"@ gfs       Sun Nov 22 05:02:58 2026  @n1".to_vec());
    out.push(Vec::new());
    out
}

#[test]
fn every_line_broken_every_way_reads_the_same() {
    let bytes = std::fs::read(testdata::path("real/dlm2-6.1/n1/glocks.4")).unwrap();
    // 300 lines with every kind of line the file has (rgrp records from line 1361).
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').skip(1180).take(300).collect();
    for tag in [&b"G:"[..], b" H:", b" I:", b" R:", b"  L:"] {
        assert!(lines.iter().any(|l| l.starts_with(tag)));
    }
    for i in 0..lines.len() {
        for (k, line) in broken(lines[i]).into_iter().enumerate() {
            let mut text = Vec::with_capacity(bytes.len() + 64);
            for (j, l) in lines.iter().enumerate() {
                if j > 0 {
                    text.push(b'\n');
                }
                if j == i {
                    text.extend_from_slice(&line);
                } else {
                    text.extend_from_slice(l);
                }
            }
            same(&text, &format!("line {} broken by #{k}", i + 1));
        }
    }
}

#[test]
fn records_and_lines_larger_than_the_buffer_read_the_same() {
    let mut text = Vec::new();
    for n in 0..3000u64 {
        text.extend(format!("G:  s:EX n:2/{n:x} f:q t:EX d:EX/0 a:0 v:0 r:3 m:200 p:0\n").bytes());
        text.extend(b" H: s:EX f:H e:0 p:1 [a] f+0x1/0x2 [gfs2]\n");
        text.extend(b" I: n:1/2 t:8 f:0x00 d:0x00000000 s:5 p:1\n");
    }
    // One record of 2.6 MB: more than the reader buffers at once.
    text.extend(b"G:  s:SH n:5/abc f:q t:SH d:EX/0 a:0 v:0 r:3 m:200 p:0\n");
    for p in 0..40_000 {
        text.extend(format!(" H: s:SH f:W e:0 p:{p} [waiter] g+0x1/0x2 [gfs2]\n").bytes());
    }
    text.extend(b"G:  s:EX n:2/ffff f:q t:EX d:EX/0 a:0 v:0 r:3 m:200 p:0\n");
    // A line of 3 MB.
    text.extend(vec![b'x'; 3 << 20]);
    text.extend(b"\nG:  s:EX n:2/fffe f:q t:EX d:EX/0 a:0 v:0 r:3 m:200\n");
    text.extend(b" H: s:EX f:H e:0 p:1 [a] f+0x1/0x2");
    same(&text, "large");
    let (g, d) = full(&text[..]);
    assert_eq!(g.len(), 3003);
    assert_eq!(g[3000].waiter_count(), 40_000);
    // The long line, in three pieces.
    assert_eq!(d.errors, 3);
    assert!(d
        .first_errors
        .iter()
        .all(|e| e.line == 3 * 3000 + 40_002 + 1));
}

/// Lines longer than `glockparse::lines::MAX_LINE` are cut into pieces in the same places
/// by both readers (found by `glk-fuzz glocks`: a 1.3 MB line at the end of the input
/// was one line to the skimming reader and two pieces to the full one), and a record
/// with such a line is not skimmed.
#[test]
fn overlong_lines_read_the_same() {
    let max = glockparse::lines::MAX_LINE;
    let record = b"G:  s:SH n:5/1000 f:Iqob t:SH d:EX/0 a:0 v:0 r:3 m:50 p:0\n\
        \x20I: n:151/4096 t:8 f:0x00 d:0x00000000 s:5 p:1\n";
    let long = |n: usize| vec![b'x'; n];
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "a bad state at the end",
            [&b"G:  s:UN n:2/3348 f:ldIqob t:"[..], &long(max + max / 3)].concat(),
        ),
        (
            "a bad line between records",
            [&record[..], &long(2 * max + 7), b"\n", record].concat(),
        ),
        // Every byte of these flags is a valid flag letter: only the cut makes it bad.
        (
            "flags over a line's length",
            [
                &record[..],
                b"G:  s:SH n:5/1001 f:",
                &long(max + 5),
                b" t:SH d:EX/0 a:0 v:0 r:3 m:50 p:0\n",
                record,
            ]
            .concat(),
        ),
        (
            "a line cut just before its end",
            [&record[..], &long(max), b"\r\n", record].concat(),
        ),
    ];
    for (what, bytes) in cases {
        same(&bytes, what);
    }
}
