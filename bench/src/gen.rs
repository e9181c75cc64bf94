//! Writes realistic glocks files of any size by varying real records: each output glock
//! is a real record from the fixtures (real kernels and public dumps) with a fresh glock
//! number, rewritten consistently in its `I:`/`R:` lines.

use std::io::{self, Write};

use glockparse::GlockReader;

/// A real record split into its lines, with what must be renumbered.
struct Template {
    gltype: u32,
    lines: Vec<String>,
}

const SOURCES: &[&str] = &[
    "real/dlm2-6.1/n1/glocks.4",
    "real/dlm2-6.1/n2/glocks.4",
    "real/nolock-6.1/glocks.2",
    "public/abegorov-linuxhl5-gfs2/gfs01-20250402.glocks",
    "public/lab03/lab03-fileio.glocks",
    "public/cluster-devel-2019-rename-deadlock/deadlock-host018.glocks",
    "public/cluster-devel-2019-rename-deadlock/deadlock-host019.glocks",
];

fn templates() -> Vec<Template> {
    let mut out = Vec::new();
    for rel in SOURCES {
        let text = std::fs::read_to_string(testdata::path(rel)).expect("fixture");
        // Records start at G: lines; the parser confirms each is well formed.
        let parsed: Vec<_> = GlockReader::new(text.as_bytes(), *rel).collect();
        let mut cur: Vec<String> = Vec::new();
        let mut i = 0;
        for line in text.lines().chain(std::iter::once("G:")) {
            if line.starts_with("G:") && !cur.is_empty() {
                out.push(Template {
                    gltype: parsed[i].id.gltype,
                    lines: std::mem::take(&mut cur),
                });
                i += 1;
            }
            cur.push(line.to_string());
        }
    }
    out
}

/// xorshift64*: deterministic, so a size always gives the same file.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn renumber(line: &str, key: &str, value: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut first = true;
    for tok in line.split(' ') {
        if !first {
            out.push(' ');
        }
        first = false;
        if let Some(rest) = tok.strip_prefix(key) {
            out.push_str(key);
            match rest.split_once('/') {
                // n:TYPE/HEX on G:, n:FORMAL/ADDR on I:
                Some((a, _)) => {
                    out.push_str(a);
                    out.push('/');
                    out.push_str(value);
                }
                None => out.push_str(value),
            }
        } else {
            out.push_str(tok);
        }
    }
    out
}

/// Writes `n` glock records to `w`; returns the bytes written.
pub fn write_glocks(n: u64, w: &mut impl Write) -> io::Result<u64> {
    let t = templates();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut bytes = 0u64;
    for i in 0..n {
        let tpl = &t[(rng.next() % t.len() as u64) as usize];
        let number = 0x1000 + i;
        for line in &tpl.lines {
            let l = if line.starts_with("G:") {
                renumber(line, "n:", &format!("{number:x}"))
            } else if line.starts_with(" I:") || (line.starts_with(" R:") && tpl.gltype == 3) {
                renumber(line, "n:", &number.to_string())
            } else {
                line.clone()
            };
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
            bytes += l.len() as u64 + 1;
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_file_parses_cleanly_with_unique_ids() {
        let mut buf = Vec::new();
        write_glocks(5000, &mut buf).unwrap();
        let mut r = GlockReader::new(&buf[..], "gen");
        let mut ids = std::collections::HashSet::new();
        let mut waiters = 0;
        for g in r.by_ref() {
            assert!(ids.insert(g.id));
            if let Some(i) = &g.inode {
                assert_eq!(i.addr, g.id.number);
            }
            waiters += g.waiter_count();
        }
        let d = r.into_diagnostics();
        assert!(d.is_clean(), "{:?}", d.first_errors);
        assert_eq!(ids.len(), 5000);
        assert!(waiters > 0);
    }
}
