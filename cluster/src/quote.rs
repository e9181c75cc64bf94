//! Words for a remote shell. ssh hands the remote side one string, which the login shell
//! splits again: each word glk sends is wrapped in single quotes (a quote inside becomes
//! `'\''`), so that a name with spaces, `;`, `$` or backquotes is one inert word.

/// `word` as one word for a POSIX shell.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
    if plain {
        return word.to_string();
    }
    let mut q = String::with_capacity(word.len() + 2);
    q.push('\'');
    for c in word.chars() {
        if c == '\'' {
            q.push_str("'\\''");
        } else {
            q.push(c);
        }
    }
    q.push('\'');
    q
}

/// `words` as one remote command line.
pub fn command_line<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| shell_word(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What `sh -c LINE` passes to a program as its arguments.
    fn split_by_sh(line: &str) -> Vec<String> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .output()
            .unwrap();
        assert!(out.status.success());
        let s = String::from_utf8(out.stdout).unwrap();
        s.trim_end_matches('\0')
            .split('\0')
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn hostile_words_reach_the_remote_program_whole() {
        let words = [
            "glk",
            "agent",
            "--fs",
            "a b;touch /tmp/glk-pwned",
            "$(id)",
            "`id`",
            "it's",
            "",
            "x\ny",
            "*",
            "--",
        ];
        assert_eq!(split_by_sh(&command_line(&words)), words);
    }

    #[test]
    fn plain_words_stay_readable() {
        assert_eq!(
            command_line(&["glk", "agent", "--fs", "lab:gfs"]),
            "glk agent --fs lab:gfs"
        );
    }
}
