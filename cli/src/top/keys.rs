//! Keys from the terminal in raw mode, read with poll(2) and decoded here.
//!
//! crossterm's own event reader spins forever when its terminal goes away (a read that
//! returns 0 or EIO is retried in a loop), which leaves a console whose tmux or ssh
//! session died burning a core. Reading stdin ourselves lets a hung-up terminal end the
//! console like `q` does.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// A key the console knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Enter,
    Esc,
    Backspace,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    CtrlC,
}

/// What one wait for input gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// The keys read (possibly none, after the timeout).
    Keys(Vec<Key>),
    /// The terminal is gone (hung up, closed or in error).
    Gone,
}

/// Waits up to `timeout` for input on `fd` and decodes what arrived.
pub fn wait(fd: RawFd, timeout: Duration) -> io::Result<Input> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(Input::Keys(Vec::new()))
        } else {
            Err(e)
        };
    }
    if n == 0 {
        return Ok(Input::Keys(Vec::new()));
    }
    if p.revents & libc::POLLIN == 0 {
        // POLLHUP, POLLERR or POLLNVAL without data.
        return Ok(Input::Gone);
    }
    let mut buf = [0u8; 256];
    // SAFETY: reads at most buf.len() bytes into buf.
    let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    match r {
        0 => Ok(Input::Gone),
        r if r < 0 => {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => {
                    Ok(Input::Keys(Vec::new()))
                }
                _ => Ok(Input::Gone),
            }
        }
        r => Ok(Input::Keys(decode(&buf[..r as usize]))),
    }
}

/// Decodes the bytes a terminal sends in raw mode. Unknown escape sequences are dropped.
pub fn decode(mut b: &[u8]) -> Vec<Key> {
    let mut out = Vec::new();
    while let Some(&c) = b.first() {
        if c == 0x1b {
            let (key, used) = escape(b);
            if let Some(k) = key {
                out.push(k);
            }
            b = &b[used..];
            continue;
        }
        let (key, used) = match c {
            b'\r' | b'\n' => (Some(Key::Enter), 1),
            0x7f | 0x08 => (Some(Key::Backspace), 1),
            0x03 => (Some(Key::CtrlC), 1),
            c if c < 0x20 => (None, 1),
            _ => {
                // One UTF-8 character.
                let len = match c {
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    0xf0..=0xf7 => 4,
                    _ => 1,
                }
                .min(b.len());
                let ch = std::str::from_utf8(&b[..len])
                    .ok()
                    .and_then(|s| s.chars().next());
                (ch.map(Key::Char), len)
            }
        };
        if let Some(k) = key {
            out.push(k);
        }
        b = &b[used..];
    }
    out
}

/// An escape sequence at the start of `b`: the key and the bytes it used.
fn escape(b: &[u8]) -> (Option<Key>, usize) {
    match b.get(1) {
        None => (Some(Key::Esc), 1),
        Some(b'[') | Some(b'O') => {
            // CSI or SS3: parameters (digits, ';'), then a final byte.
            let mut i = 2;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b';') {
                i += 1;
            }
            let Some(&fin) = b.get(i) else {
                return (None, b.len());
            };
            let params = &b[2..i];
            let key = match (fin, params) {
                (b'A', _) => Some(Key::Up),
                (b'B', _) => Some(Key::Down),
                (b'H', _) => Some(Key::Home),
                (b'F', _) => Some(Key::End),
                (b'~', b"1") | (b'~', b"7") => Some(Key::Home),
                (b'~', b"4") | (b'~', b"8") => Some(Key::End),
                (b'~', b"5") => Some(Key::PageUp),
                (b'~', b"6") => Some(Key::PageDown),
                _ => None,
            };
            (key, i + 1)
        }
        // Esc then another key (Alt+key, or Esc typed quickly before it): Esc, and the
        // key is decoded on its own.
        Some(_) => (Some(Key::Esc), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::Key::*;
    use super::*;

    #[test]
    fn keys_and_sequences() {
        assert_eq!(
            decode(b"jk\r\x1b[A\x1b[B\x1bOA\x1b[5~\x1b[6~\x1b[H\x1b[4~\x1b"),
            [
                Char('j'),
                Char('k'),
                Enter,
                Up,
                Down,
                Up,
                PageUp,
                PageDown,
                Home,
                End,
                Esc
            ]
        );
        assert_eq!(
            decode(b"\x03\x7f/\xc3\xa9"),
            [CtrlC, Backspace, Char('/'), Char('é')]
        );
        // Unknown sequences and control bytes are dropped; Esc before a key is Esc.
        assert_eq!(decode(b"\x1b[15~\x01q"), [Char('q')]);
        assert_eq!(decode(b"\x1bq"), [Esc, Char('q')]);
    }

    #[test]
    fn a_closed_terminal_is_gone() {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills two fds.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        assert_eq!(
            // SAFETY: writes two bytes from a static buffer.
            unsafe { libc::write(fds[1], b"q\x1b".as_ptr().cast(), 2) },
            2
        );
        assert_eq!(
            wait(fds[0], Duration::from_millis(100)).unwrap(),
            Input::Keys(vec![Char('q'), Esc])
        );
        assert_eq!(
            wait(fds[0], Duration::from_millis(10)).unwrap(),
            Input::Keys(vec![])
        );
        // SAFETY: closes our own fds.
        unsafe { libc::close(fds[1]) };
        assert_eq!(
            wait(fds[0], Duration::from_millis(100)).unwrap(),
            Input::Gone
        );
        // SAFETY: closes our own fd.
        unsafe { libc::close(fds[0]) };
    }
}
