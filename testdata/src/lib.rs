//! Real GFS2 captures and public samples used by glk's tests (copied from the project's
//! shared fixtures; each folder's README says where the data came from).

#![forbid(unsafe_code)]

pub mod sshd;

use std::path::{Path, PathBuf};

/// The root of the source tree under test.
///
/// Cargo sets `CARGO_MANIFEST_DIR` in the environment of every test it runs (the tested
/// package's folder, one level below the root); that value wins. The one compiled in
/// names the tree this crate was built from, which is another copy of the tree when
/// several share a target directory, as `.ci/run`'s cache does: cargo keeps a build whose
/// files are older than the artifacts, wherever the tree now lies.
pub fn workspace() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .and_then(|d| Path::new(&d).parent().map(Path::to_path_buf))
        .filter(|w| w.join("testdata/fixtures").is_dir())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

/// The fixtures folder.
pub fn root() -> PathBuf {
    workspace().join("testdata/fixtures")
}

/// The golden reports (`golden/README.md`): what the analyses answered on the fixtures.
pub fn golden_dir() -> PathBuf {
    workspace().join("testdata/golden")
}

/// A fixture by its path below the fixtures folder, e.g. `real/dlm2-6.1/n1/glocks.3`.
pub fn path(rel: &str) -> PathBuf {
    let p = root().join(rel);
    assert!(p.exists(), "missing fixture {}", p.display());
    p
}

/// A fixture's text by its path below the fixtures folder, decompressed when it is
/// xz-compressed (`.xz`, as the real traces are kept).
pub fn text(rel: &str) -> String {
    let p = path(rel);
    String::from_utf8(bytes(&p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A file's bytes, decompressed when it is xz-compressed (`.xz`).
pub fn bytes(p: &Path) -> Vec<u8> {
    use std::io::Read;
    let file = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut v = Vec::new();
    let read = if p.extension().is_some_and(|x| x == "xz") {
        liblzma::read::XzDecoder::new(file).read_to_end(&mut v)
    } else {
        std::io::BufReader::new(file).read_to_end(&mut v)
    };
    read.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    v
}

/// A small, fast, seeded random number generator (xorshift64) for the tests that change
/// input at random places: the same seed gives the same changes on every run.
pub struct Xorshift(u64);

impl Xorshift {
    /// A generator started from `seed` (not 0).
    pub fn new(seed: u64) -> Xorshift {
        assert_ne!(seed, 0, "xorshift stays at 0");
        Xorshift(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next number below `n` (not 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// A line changed in one of four ways, for the tests that parsers never panic: byte `pos`
/// (modulo the length) replaced by `byte` (op 0), the line cut there (1), `byte` inserted
/// there (2), or the rest from there repeated (3).
pub fn mutate_line(mut l: Vec<u8>, pos: usize, byte: u8, op: u8) -> Vec<u8> {
    let p = if l.is_empty() { 0 } else { pos % l.len() };
    match op {
        0 if !l.is_empty() => l[p] = byte,
        1 => l.truncate(p),
        2 => l.insert(p, byte),
        _ => l.extend_from_within(p..),
    }
    l
}

/// Every file below `dir` (relative to the fixtures folder) whose name satisfies `keep`,
/// sorted.
pub fn files(dir: &str, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), &mut out);
    out.retain(|p| keep(p.file_name().and_then(|n| n.to_str()).unwrap_or("")));
    out.sort();
    out
}

/// The lock lines (8 hex digits and a space: `0000001f PR …`) of lockspace `lockspace`'s
/// `dlm_tool lockdebug -svw` in a sos report's tarball (the dlm plugin's
/// `sos_commands/dlm/dlm_locks_LOCKSPACE`), counted by hand with `tar` and the text: the
/// figure the readers of sos reports are checked against.
pub fn sos_lockdebug_lines(tarball: &Path, lockspace: &str) -> usize {
    let o = std::process::Command::new("tar")
        .arg("-xzOf")
        .arg(tarball)
        .arg("--wildcards")
        .arg(format!("*/sos_commands/dlm/dlm_locks_{lockspace}"))
        .output()
        .unwrap_or_else(|e| panic!("tar: {e}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| {
            l.get(..9)
                .is_some_and(|h| h.ends_with(' ') && h[..8].bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .count()
}

/// The glock of a gfs2 trace line as printed, decimal `TYPE:NUMBER` (`2:266268` in
/// `... gfs2_promote: 254,0 glock 2:266268 promote EX`): the reading tests check the
/// decoders against. Panics when the line names no glock.
pub fn trace_glock(line: &str) -> &str {
    let after = line
        .split(" glock ")
        .nth(1)
        .unwrap_or_else(|| panic!("no glock in trace line {line:?}"));
    after.split(' ').next().unwrap_or(after)
}

/// A fresh scratch directory and the path of `name` in it, nothing made there yet. The
/// directory is removed when the first value drops: keep it as long as the path is used.
pub fn scratch_file(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join(name);
    (dir, path)
}

/// Makes a FIFO at `path`, in place of the file there if any: how tests stand in for a
/// debugfs file (size 0, read as it is written, or never).
pub fn fifo_at(path: &Path) {
    let _ = std::fs::remove_file(path);
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// glockfd lines (`PID FD 5/NUMBER`, distinct processes and iopen glocks) filling at most
/// `bytes` bytes: what a live glockfd of a busy node gives in its one read.
pub fn glockfd_lines(bytes: usize) -> String {
    let mut lines = String::new();
    for i in 0u64.. {
        let l = format!("{} {} 5/{:x}\n", 1000 + i, 3 + i % 50, 0x21826 + i);
        if lines.len() + l.len() > bytes {
            break;
        }
        lines.push_str(&l);
    }
    lines
}

/// Whether this run is under CI (`CI` set to anything but the empty string), where a test
/// that cannot make its real check must fail instead of skipping.
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// Whether this process runs as root; when not, the test `test` is skipped ([`skip`]),
/// with `why` root is needed. The effective uid is read as the owner of `/proc/self`.
pub fn as_root(test: &str, why: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        skip(test, why);
    }
    root
}

/// Says that a test could not make its real check, and why. Under CI this fails the test
/// (a panic); elsewhere it prints `SKIPPED: test: why` on stderr (shown by `cargo test`
/// with `--nocapture`) and appends it to the file named by `GLK_SKIP_LOG`, which
/// `scripts/test.sh` prints after the tests, and the test returns.
pub fn skip(test: &str, why: &str) {
    if under_ci() {
        panic!("{test}: cannot run its real check under CI: {why}");
    }
    let line = format!("SKIPPED: {test}: {why}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("GLK_SKIP_LOG").filter(|v| !v.is_empty()) {
        use std::io::Write;
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = appended {
            eprintln!("testdata: cannot append to GLK_SKIP_LOG: {e}");
        }
    }
}

/// A binary of this workspace built beside the running test (`target/<profile>/NAME`):
/// tests of one package use this to run another package's binary, such as `glk-engine`.
pub fn workspace_bin(name: &str) -> Option<PathBuf> {
    // The test runs from target/<profile>/deps/.
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let p = profile.join(name);
    p.is_file().then_some(p)
}
