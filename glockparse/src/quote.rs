//! Quoting bytes from input files for error messages, so that what reaches a terminal is
//! always plain text: printable ASCII and letters or digits of any script as they are, a
//! backslash as `\\`, tab as `\t`, control characters and bytes that are not UTF-8 as
//! `\xNN` (as ripgrep and `ls` do), and any other character (bidi overrides, private use,
//! symbols) as `\u{NNNN}`.

use std::borrow::Cow;
use std::fmt::Write;

/// `bytes` as text for a terminal, whole: as they are when plain ASCII (no control
/// character, no backslash), else [`quote`]d. For names a program chose that a file or the
/// kernel repeats (a task's command name, a call site): a process named with an escape
/// sequence must not write on the terminal of whoever looks at its locks.
pub fn plain(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'\\') => Cow::Borrowed(s),
        _ => Cow::Owned(quote(bytes, usize::MAX)),
    }
}

/// `bytes` quoted, cut to about `max` characters (`…` marks a cut).
pub fn quote(bytes: &[u8], max: usize) -> String {
    let mut out = String::with_capacity(bytes.len().min(max) + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if out.len() >= max {
                out.push('…');
                return out;
            }
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    // C0, DEL and the C1 controls (U+0080..U+009F, which some terminals
                    // obey as escape sequences).
                    let mut b = [0u8; 4];
                    for byte in c.encode_utf8(&mut b).bytes() {
                        let _ = write!(out, "\\x{byte:02x}");
                    }
                }
                c if c.is_ascii() || c.is_alphanumeric() => out.push(c),
                c => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
            }
        }
        for byte in chunk.invalid() {
            if out.len() >= max {
                out.push('…');
                return out;
            }
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::quote;
    use std::borrow::Cow;

    #[test]
    fn plain_names_stay_and_others_are_quoted() {
        use super::plain;
        assert!(matches!(plain(b"kworker/u4:1"), Cow::Borrowed(_)));
        assert_eq!(plain(b"my [odd]-name"), "my [odd]-name");
        assert_eq!(plain(b"fl\x1b[2Jock"), "fl\\x1b[2Jock");
        assert_eq!(plain("bash\u{9b}".as_bytes()), "bash\\xc2\\x9b");
        assert_eq!(plain(b"a\\b\xff"), "a\\\\b\\xff");
        assert_eq!(plain("日本".as_bytes()), "日本");
    }

    #[test]
    fn controls_and_invalid_bytes_are_escaped() {
        assert_eq!(quote(b"G: s:SH n:2/1f", 100), "G: s:SH n:2/1f");
        assert_eq!(quote(b"a\x1b[2Jb", 100), "a\\x1b[2Jb");
        assert_eq!(quote(b"\xff\xfe x", 100), "\\xff\\xfe x");
        assert_eq!(quote(b"tab\there\\", 100), "tab\\there\\\\");
        assert_eq!(quote("é\u{9b}".as_bytes(), 100), "é\\xc2\\x9b");
        assert_eq!(quote(b"\r\n\0", 100), "\\x0d\\x0a\\x00");
        assert_eq!(quote(b"abcdef", 3), "abc…");
        assert_eq!(
            quote("x\u{202e}y\u{e878}".as_bytes(), 100),
            "x\\u{202e}y\\u{e878}"
        );
        assert!(quote(&[0xff; 500], 160).chars().count() < 200);
    }
}
