//! One `glk agent` per node: started through the system's OpenSSH client (or directly on
//! this node), its stream read on a thread of its own, and every wait bounded by a
//! deadline, so that a node that is down, fenced, stuck in D state reading debugfs, or
//! whose ssh asks for a password is named with the reason and never waited for.

use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::nodes::Node;
use crate::protocol::{self, FileOrder, Hello, Packed, Received};
use crate::quote;

/// How glk reaches the other nodes.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The ssh client (`ssh`, from PATH).
    pub ssh: PathBuf,
    /// An ssh configuration file to use instead of the user's (`-F`).
    pub config: Option<PathBuf>,
    /// Seconds ssh may take to connect.
    pub connect_timeout: u32,
    /// Run the remote glk through `sudo -n` (an unprivileged login).
    pub sudo: bool,
    /// The glk program on the other nodes.
    pub glk: String,
    /// This glk, which runs the agent of this node.
    pub this_glk: PathBuf,
    /// This glk's version, which the others should have.
    pub version: String,
}

impl Remote {
    /// The command that runs `glk agent ARGS` on `node`. On another node that is ssh with
    /// BatchMode (no password or host-key question can stall it), a connect timeout and
    /// keep-alives, `--` before the destination, and a remote command line whose every
    /// word is quoted ([`quote::command_line`]); on this node, this glk itself.
    pub fn command(&self, node: &Node, agent_args: &[String]) -> Command {
        if node.local {
            let mut c = Command::new(&self.this_glk);
            c.arg("agent").args(agent_args);
            return c;
        }
        let mut words: Vec<&str> = Vec::new();
        if self.sudo {
            words.extend(["sudo", "-n", "--"]);
        }
        words.push(&self.glk);
        words.push("agent");
        words.extend(agent_args.iter().map(String::as_str));
        let mut c = Command::new(&self.ssh);
        if let Some(cfg) = &self.config {
            c.arg("-F").arg(cfg);
        }
        c.args(["-T", "-o", "BatchMode=yes"])
            .arg("-o")
            .arg(format!("ConnectTimeout={}", self.connect_timeout.max(1)))
            .args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"])
            .arg("--")
            .arg(&node.host)
            .arg(quote::command_line(&words));
        c
    }
}

/// What the stream thread saw.
enum Event {
    Hello(Hello),
    Frame(Received),
    /// The stream ended (None) or broke (Some: why).
    Closed(Option<String>),
}

/// One node's agent.
pub struct Session {
    /// The node.
    pub node: Node,
    /// Its hello, once read.
    pub hello: Option<Hello>,
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Event>,
    /// The bytes of the frames in `events`.
    ahead: Arc<ReadAhead>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// How much of `stderr` [`Session::warnings`] has looked at.
    warned: usize,
    version: String,
    /// Snapshot ends still due from requests whose deadline passed.
    stale: u32,
    /// When the oldest of those requests gave up waiting.
    stale_since: Option<Instant>,
    closed: Option<String>,
}

/// Where a batch's files go (a snapshot's, a capture's), frame by frame as they come: no
/// batch is held whole in memory, since a capture's trace alone can be gigabytes.
pub trait FileSink {
    /// A frame of the file `rel`: its start, or with `append` more of the file of the
    /// frame before. Err: why the batch cannot be taken (the session then ends).
    fn frame(&mut self, rel: &Path, data: &Packed, append: bool) -> Result<(), String>;
}

/// The end of a batch, its files all given to the [`FileSink`].
#[derive(Debug, Default)]
pub struct Ended {
    /// What the agent could not do.
    pub problems: Vec<String>,
    /// The agent's clock at the end.
    pub end_time: f64,
}

/// The most of a node's stream read ahead of what is written, bytes: a snapshot's files
/// come whole while the others are taken, a capture's trace waits in its ssh pipe, not in
/// this process's memory.
const READ_AHEAD: u64 = 16 << 20;

/// The frames read from a node's stream and not yet taken, counted in bytes: the stream
/// thread waits while they are more than [`READ_AHEAD`] (one frame alone always passes).
#[derive(Default)]
struct ReadAhead {
    /// The bytes held, and whether the session has ended (the thread then stops).
    state: Mutex<(u64, bool)>,
    taken: Condvar,
}

impl ReadAhead {
    /// Waits until `n` more bytes may be held, then holds them; false once the session
    /// has ended.
    fn hold(&self, n: u64) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while !st.1 && st.0 > 0 && st.0 + n > READ_AHEAD {
            st = self.taken.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.0 += n;
        !st.1
    }

    /// `n` bytes were taken.
    fn taken(&self, n: u64) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.0 = st.0.saturating_sub(n);
        self.taken.notify_all();
    }

    /// The session has ended: the stream thread waits no more.
    fn end(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.taken.notify_all();
    }
}

/// How long a late answer's next frame is waited for while it is taken ([`Session::owes`]):
/// frames that keep coming are taken (only [`READ_AHEAD`] bytes wait here at a time), a node
/// that sends nothing costs this once.
const DRAIN_GAP: Duration = Duration::from_millis(20);

/// The most a late answer is taken for at once ([`Session::owes`]): a node that trickles
/// frames cannot hold up the others.
const DRAIN_MOST: Duration = Duration::from_secs(1);

/// The most of a remote standard error kept.
const STDERR_KEEP: usize = 16 << 10;

impl Session {
    /// Starts `glk agent ARGS` on `node`.
    pub fn start(remote: &Remote, node: &Node, agent_args: &[String]) -> io::Result<Session> {
        let mut child = remote
            .command(node, agent_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                let prog = if node.local {
                    &remote.this_glk
                } else {
                    &remote.ssh
                };
                io::Error::new(e.kind(), format!("{}: {e}", prog.display()))
            })?;
        let stdout = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let keep = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut k = keep.lock().unwrap_or_else(|p| p.into_inner());
                if k.len() < STDERR_KEEP {
                    k.extend_from_slice(&buf[..n]);
                }
            }
        });
        let (tx, events) = mpsc::channel();
        let ahead = Arc::new(ReadAhead::default());
        let held = ahead.clone();
        std::thread::spawn(move || read_stream(stdout, &tx, &held));
        Ok(Session {
            node: node.clone(),
            hello: None,
            stdin: child.stdin.take(),
            child,
            events,
            ahead,
            stderr,
            warned: 0,
            version: remote.version.clone(),
            stale: 0,
            stale_since: None,
            closed: None,
        })
    }

    /// Waits until `deadline` for the agent's hello. Err: why the node is missing.
    pub fn wait_hello(&mut self, deadline: Instant) -> Result<&Hello, String> {
        if self.hello.is_none() {
            match self.next(deadline)? {
                Event::Hello(h) => self.hello = Some(h),
                _ => return Err(self.why("no hello")),
            }
        }
        Ok(self.hello.as_ref().expect("just set"))
    }

    /// Sends one request line (`snapshot`) to the agent.
    pub fn request(&mut self, line: &str) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("its agent's input is closed".into());
        };
        match stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
        {
            Ok(()) => Ok(()),
            Err(_) => Err(self.why("the connection closed")),
        }
    }

    /// Reads one batch (up to its end frame) until `deadline`, giving each file frame to
    /// `sink` as it comes. A batch not complete by then is abandoned: its frames are
    /// skipped when they come later.
    pub fn receive(&mut self, deadline: Instant, sink: &mut dyn FileSink) -> Result<Ended, String> {
        let mut order = FileOrder::default();
        let mut problems = Vec::new();
        loop {
            match self.next(deadline) {
                Ok(Event::Frame(Received::End(_))) if self.stale > 0 => self.stale -= 1,
                Ok(Event::Frame(_)) if self.stale > 0 => {}
                Ok(Event::Frame(Received::File(p, d, append))) => {
                    if let Err(why) = order
                        .next(&p, append)
                        .and_then(|()| sink.frame(&p, &d, append))
                    {
                        return Err(self.broken(why));
                    }
                }
                Ok(Event::Frame(Received::Problem(t))) => problems.push(t),
                Ok(Event::Frame(Received::End(end_time))) => {
                    problems.extend(self.warnings());
                    return Ok(Ended { problems, end_time });
                }
                Ok(Event::Hello(_)) => return Err(self.broken("its agent said hello twice".into())),
                Ok(Event::Closed(_)) => unreachable!("next turns Closed into Err"),
                Err(e) => {
                    if e.starts_with("no answer") {
                        self.stale += 1;
                        self.stale_since.get_or_insert_with(Instant::now);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// The warnings the agent printed on its standard error since the last call (a
    /// capture's `glk: warning: …` lines, such as a glockfd that filled its one page),
    /// quoted: they reach the user with the batch instead of being lost.
    fn warnings(&mut self) -> Vec<String> {
        let err = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let (found, upto) = warning_lines(&err, self.warned);
        drop(err);
        self.warned = upto;
        found
    }

    /// Whether the agent still owes an answer to a request whose deadline passed (its
    /// debugfs read stuck, say): what has come of it since is taken, for as long as it
    /// keeps coming (20 ms between frames, 1 s at most). The caller then asks nothing
    /// more of it, so that one stuck node does not cost every refresh its whole deadline;
    /// Some: how long it has owed it.
    pub fn owes(&mut self) -> Option<Duration> {
        let until = Instant::now() + DRAIN_MOST;
        while self.stale > 0 {
            let wait = DRAIN_GAP.min(until.saturating_duration_since(Instant::now()));
            match self.recv(wait) {
                Ok(Event::Frame(Received::End(_))) => self.stale -= 1,
                Ok(Event::Closed(broke)) => {
                    let why = broke.unwrap_or_else(|| "the connection closed".into());
                    self.closed = Some(why);
                    self.stale = 0;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if self.stale == 0 {
            self.stale_since = None;
        }
        self.stale_since.map(|t| t.elapsed())
    }

    /// The next event within `wait`, its bytes no longer held.
    fn recv(&mut self, wait: Duration) -> Result<Event, RecvTimeoutError> {
        let ev = self.events.recv_timeout(wait)?;
        if let Event::Frame(Received::File(_, data, _)) = &ev {
            self.ahead.taken(data.len() as u64);
        }
        Ok(ev)
    }

    /// Ends a session whose agent broke the protocol: nothing more of it is read.
    fn broken(&mut self, why: String) -> String {
        self.closed = Some(why.clone());
        self.kill();
        why
    }

    /// True once the agent's stream has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// The next event before `deadline`. Err: why nothing came.
    fn next(&mut self, deadline: Instant) -> Result<Event, String> {
        if let Some(why) = &self.closed {
            return Err(why.clone());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.recv(left) {
            Ok(Event::Closed(broke)) => {
                let why = match broke {
                    Some(b) => format!("{}: {b}", self.why("its stream broke")),
                    None => self.why("the connection closed"),
                };
                self.closed = Some(why.clone());
                Err(why)
            }
            Ok(e) => Ok(e),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "no answer within {:.0} s (the node down or paused, its debugfs read stuck, \
                 or ssh still connecting)",
                left.as_secs_f64().max(1.0)
            )),
            Err(RecvTimeoutError::Disconnected) => Err(self.why("the connection closed")),
        }
    }

    /// Why the agent is gone: its exit status (waited for a moment) and standard error,
    /// in words with what to do; `what` when nothing says more.
    fn why(&mut self, what: &str) -> String {
        let status = wait_a_moment(&mut self.child, Duration::from_secs(2));
        // The stderr thread may still be copying the last bytes.
        std::thread::sleep(Duration::from_millis(20));
        let err = self
            .stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        explain(
            status,
            &String::from_utf8_lossy(&err),
            &self.version,
            self.node.local,
            what,
        )
    }

    /// Ends the session: closes the agent's input (an agent stops at its end, restoring
    /// anything it changed), then kills what is left after `grace`.
    pub fn finish(mut self, grace: Duration) {
        self.stdin = None;
        if wait_a_moment(&mut self.child, grace).is_none() {
            self.kill();
        }
    }

    /// Kills the child and reaps it if it dies within a second: a child in uninterruptible
    /// sleep (this node's agent reading a stuck debugfs file) cannot die before it wakes,
    /// and is never waited for.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = wait_a_moment(&mut self.child, Duration::from_secs(1));
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.ahead.end();
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// The child's exit status if it ends within `within` ([`bundle::live::wait_within`]).
fn wait_a_moment(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    bundle::live::wait_within(child, within).ok().flatten()
}

/// Reads the hello, then frames, into `tx`, until the stream ends or breaks (or the
/// session, `tx`'s other end, is gone); a file frame waits until `ahead` may hold it.
fn read_stream(stdout: impl Read, tx: &Sender<Event>, ahead: &ReadAhead) {
    let mut r = BufReader::with_capacity(1 << 20, stdout);
    match protocol::read_hello(&mut r) {
        Ok(Some(h)) => {
            if tx.send(Event::Hello(h)).is_err() {
                return;
            }
        }
        Ok(None) => {
            let _ = tx.send(Event::Closed(None));
            return;
        }
        Err(e) => {
            let _ = tx.send(Event::Closed(Some(e.to_string())));
            return;
        }
    }
    loop {
        let ev = match protocol::read_frame(&mut r) {
            Ok(Some(f)) => Event::Frame(f),
            Ok(None) => Event::Closed(None),
            Err(e) => Event::Closed(Some(e.to_string())),
        };
        let end = matches!(ev, Event::Closed(_));
        if let Event::Frame(Received::File(_, data, _)) = &ev {
            if !ahead.hold(data.len() as u64) {
                return;
            }
        }
        if tx.send(ev).is_err() || end {
            return;
        }
    }
}

/// The `glk: warning: ` lines of `stderr` from byte `from` on, quoted and without `glk: `,
/// and where the last whole line ends (a line still being written is left for later).
fn warning_lines(stderr: &[u8], from: usize) -> (Vec<String>, usize) {
    let rest = stderr.get(from..).unwrap_or_default();
    let whole = rest.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let found = rest[..whole]
        .split(|&b| b == b'\n')
        .filter_map(|l| l.strip_prefix(b"glk: warning: "))
        .map(|w| format!("warning: {}", glockparse::quote::quote(w, 1000)))
        .collect();
    (found, from + whole)
}

/// The last line of `stderr` that says something, quoted.
fn last_words(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| glockparse::quote::quote(l.as_bytes(), 200))
}

/// Why an agent ended, in words with what to do.
pub fn explain(
    status: Option<ExitStatus>,
    stderr: &str,
    version: &str,
    local: bool,
    what: &str,
) -> String {
    let code = status.and_then(|s| s.code());
    let words = last_words(stderr);
    let has = |s: &str| stderr.contains(s);
    if has("unrecognized subcommand") || has("unexpected argument") {
        return format!("its glk has no agent of this version: install glk {version} there");
    }
    if has("sudo: a password is required") || has("sudo: a terminal is required") {
        return "sudo asks for a password there: allow the login `glk agent` with NOPASSWD \
                in sudoers (LOGIN ALL=(root) NOPASSWD: /usr/bin/glk agent *), or log in as root"
            .into();
    }
    if code == Some(127) || has("command not found") || has("glk: not found") {
        return format!(
            "glk is not installed there: install glk {version} (or give its path with \
             --remote-glk)"
        );
    }
    if code == Some(255) && !local {
        let w = words.unwrap_or_else(|| "ssh failed".into());
        let w = w.strip_prefix("ssh: ").unwrap_or(&w);
        let hint = if has("Host key verification failed") {
            " (its host key is not in known_hosts: connect once with ssh to check and add it)"
        } else if has("Permission denied") {
            " (ssh runs in BatchMode and asks no password: give the login your key or agent)"
        } else {
            ""
        };
        return format!("ssh: {w}{hint}");
    }
    match (code, words) {
        (Some(c), Some(w)) => format!("its agent ended with status {c}: {w}"),
        (Some(c), None) => format!("its agent ended with status {c}"),
        (None, Some(w)) => format!("{what}: {w}"),
        (None, None) => what.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_reads_ahead_at_most_its_bytes() {
        let a = Arc::new(ReadAhead::default());
        // One frame alone passes, however large.
        assert!(a.hold(READ_AHEAD + 1));
        let b = a.clone();
        let waiting = std::thread::spawn(move || b.hold(1));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiting.is_finished());
        a.taken(READ_AHEAD + 1);
        assert!(waiting.join().unwrap());
        // Within the bytes, nothing waits.
        assert!(a.hold(READ_AHEAD - 1));
        // A session that ends lets the waiting thread go, told to stop.
        let b = a.clone();
        let waiting = std::thread::spawn(move || b.hold(2));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiting.is_finished());
        a.end();
        assert!(!waiting.join().unwrap());
    }

    #[test]
    fn warnings_are_taken_once_each_whole_and_quoted() {
        let err = b"glk: snapshot 0 taken\nglk: warning: snapshot 0: glockfd: 4095 bytes\n\
                    glk: warning: \x1b[2J\nglk: warning: half";
        let (found, upto) = warning_lines(err, 0);
        assert_eq!(
            found,
            [
                "warning: snapshot 0: glockfd: 4095 bytes",
                "warning: \\x1b[2J"
            ]
        );
        assert_eq!(&err[upto..], b"glk: warning: half");
        assert_eq!(warning_lines(err, upto), (Vec::<String>::new(), upto));
        let more = [&err[..], b" done\n"].concat();
        assert_eq!(warning_lines(&more, upto).0, ["warning: half done"]);
        assert_eq!(warning_lines(&more, more.len() + 5).0, Vec::<String>::new());
    }
    use std::os::unix::process::ExitStatusExt;

    fn remote() -> Remote {
        Remote {
            ssh: "ssh".into(),
            config: None,
            connect_timeout: 5,
            sudo: true,
            glk: "/opt/glk bin/glk".into(),
            this_glk: "/usr/bin/glk".into(),
            version: "0.1.0".into(),
        }
    }

    #[test]
    fn the_ssh_command_is_batch_mode_and_quoted() {
        let node = Node::new("root@n2", "n1").unwrap();
        let c = remote().command(&node, &["snapshot".into(), "--fs".into(), "a b;c".into()]);
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(c.get_program(), "ssh");
        let dash = args.iter().position(|a| a == "--").unwrap();
        assert!(args[..dash].contains(&"BatchMode=yes".to_string()));
        assert!(args[..dash].contains(&"ConnectTimeout=5".to_string()));
        assert_eq!(
            &args[dash + 1..],
            [
                "root@n2",
                "sudo -n -- '/opt/glk bin/glk' agent snapshot --fs 'a b;c'"
            ]
        );
        let here = Node::new("n1", "n1").unwrap();
        let c = remote().command(&here, &["snapshot".into()]);
        assert_eq!(c.get_program(), "/usr/bin/glk");
    }

    /// Each failure (exit status, what the remote side wrote) and what the message says.
    #[test]
    fn failures_say_what_to_do() {
        let st = |c: i32| Some(ExitStatus::from_raw(c << 8));
        let e = explain(
            st(255),
            "ssh: connect to host n2 port 22: Connection refused\r\n",
            "0.1.0",
            false,
            "x",
        );
        assert_eq!(e, "ssh: connect to host n2 port 22: Connection refused");
        for (status, stderr, says) in [
            (
                255,
                "root@n2: Permission denied (publickey).\n",
                "BatchMode",
            ),
            (
                127,
                "bash: line 1: glk: command not found\n",
                "install glk 0.1.0",
            ),
            (2, "error: unrecognized subcommand 'agent'\n", "no agent"),
            (1, "sudo: a password is required\n", "NOPASSWD"),
            (1, "glk agent: \x1b[31mboom\n", "\\x1b[31mboom"),
        ] {
            let e = explain(st(status), stderr, "0.1.0", false, "x");
            assert!(e.contains(says), "{stderr:?}: {e}");
        }
    }
}
