//! What a live node shows of its GFS2 filesystems: the debugfs directory of each (one per
//! lock table) and the sysfs files that say whether it can make progress. `glk capture`
//! copies these; `glk exporter` reads them at every collection.

use std::io;
use std::path::{Path, PathBuf};

/// A filesystem of the kernel's own that glk meets, told by its `statfs` magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelFs {
    /// debugfs: the live GFS2 and DLM files (`DEBUGFS_MAGIC`).
    Debugfs,
    /// tracefs: the ring buffer and its controls (`TRACEFS_MAGIC`).
    Tracefs,
    /// sysfs (`SYSFS_MAGIC`).
    Sysfs,
    /// procfs (`PROC_SUPER_MAGIC`).
    Proc,
}

impl KernelFs {
    /// The kernel filesystem `path` lies on, when it is one of these.
    pub fn of(path: &Path) -> Option<KernelFs> {
        let magic = rustix::fs::statfs(path).ok()?.f_type as i64;
        match magic {
            0x6462_6720 => Some(KernelFs::Debugfs),
            0x7472_6163 => Some(KernelFs::Tracefs),
            0x6265_6572 => Some(KernelFs::Sysfs),
            0x9fa0 => Some(KernelFs::Proc),
            _ => None,
        }
    }

    /// Its name (`sysfs`).
    pub fn name(self) -> &'static str {
        match self {
            KernelFs::Debugfs => "debugfs",
            KernelFs::Tracefs => "tracefs",
            KernelFs::Sysfs => "sysfs",
            KernelFs::Proc => "procfs",
        }
    }
}

/// Whether `path` lies on debugfs (a live kernel file rather than a saved copy).
pub fn is_debugfs(path: &Path) -> bool {
    KernelFs::of(path) == Some(KernelFs::Debugfs)
}

/// An error when `path` is the kernel's live `trace_pipe` (or a CPU's, raw or not) on
/// tracefs, or on debugfs where old kernels kept tracing, given where a saved trace is
/// read: the read would wait for events forever, and take them from whoever traces.
pub fn refuse_trace_pipe(path: &Path) -> io::Result<()> {
    let pipe = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("trace_pipe"));
    if pipe
        && matches!(
            KernelFs::of(path),
            Some(KernelFs::Tracefs | KernelFs::Debugfs)
        )
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: no saved trace (the kernel's live trace_pipe, which would be read \
                 forever and taken from whoever traces); to trace live, run glk trace or \
                 glk capture --trace SECS",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// One mounted GFS2 filesystem as debugfs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filesystem {
    /// Its lock table, `CLUSTER:FSNAME` (the debugfs and sysfs directory name).
    pub table: String,
    /// Its debugfs directory, `DEBUGFS/gfs2/TABLE`.
    pub dir: PathBuf,
    /// Its DLM lockspace (the table's part after `:`).
    pub lockspace: String,
}

impl Filesystem {
    /// The filesystem of debugfs directory `dir`.
    pub fn of_dir(dir: PathBuf) -> Filesystem {
        let table = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let lockspace = crate::filesystems::lockspace(&table).to_string();
        Filesystem {
            table,
            dir,
            lockspace,
        }
    }

    /// Its sysfs directory, `/sys/fs/gfs2/TABLE`.
    pub fn sysfs(&self) -> PathBuf {
        Path::new("/sys/fs/gfs2").join(&self.table)
    }

    /// Its device (`MAJOR:MINOR` in sysfs `id`, as `/proc/locks` and mountinfo name it),
    /// when sysfs shows it.
    pub fn device(&self) -> Option<(u32, u32)> {
        sysfs_device(&self.sysfs())
    }

    /// Its DLM lock dump, `DEBUGFS/dlm/LOCKSPACE_locks` (given the debugfs root).
    pub fn dlm_locks(&self, debugfs: &Path) -> PathBuf {
        debugfs
            .join("dlm")
            .join(format!("{}_locks", self.lockspace))
    }
}

/// The GFS2 filesystems in debugfs root `root` (`ROOT/gfs2/*`), sorted by table; `only`
/// keeps the one whose table or lockspace it names. An error when `ROOT/gfs2` cannot be
/// read or nothing is left.
pub fn filesystems(root: &Path, only: Option<&str>) -> io::Result<Vec<Filesystem>> {
    let gfs2 = root.join("gfs2");
    let out: Vec<Filesystem> = mounted(root)?
        .into_iter()
        .filter(|f| only.is_none_or(|o| crate::filesystems::names(o, &f.table)))
        .collect();
    if out.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            match only {
                Some(o) => format!("no GFS2 filesystem {o:?} in {}", gfs2.display()),
                None => format!("no GFS2 filesystem in {}", gfs2.display()),
            },
        ));
    }
    Ok(out)
}

/// The GFS2 filesystems in debugfs root `root`, sorted by table; none is not an error
/// (nothing mounted now), an unreadable `ROOT/gfs2` is.
pub fn mounted(root: &Path) -> io::Result<Vec<Filesystem>> {
    let gfs2 = root.join("gfs2");
    let mut out: Vec<Filesystem> = std::fs::read_dir(&gfs2)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: {e} (is a GFS2 filesystem mounted?)", gfs2.display()),
            )
        })?
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| Filesystem::of_dir(e.path()))
        .collect();
    out.sort_by(|a, b| a.table.cmp(&b.table));
    Ok(out)
}

/// The GFS2 filesystems mounted now as sysfs `root` (`/sys`) shows them, sorted by lock
/// table: each directory `ROOT/fs/gfs2/TABLE` with its device (`id`, `MAJOR:MINOR`) and
/// its DLM lockspace's id (`ROOT/kernel/dlm/LOCKSPACE/id`, as dlm_controld set it; none
/// for lock_nolock). None where sysfs shows none.
pub fn named_filesystems(root: &Path) -> Vec<crate::filesystems::NamedFs> {
    let Ok(dirs) = crate::subdirs(&root.join("fs/gfs2")) else {
        return Vec::new();
    };
    dirs.into_iter()
        .filter_map(|d| {
            let table = d.file_name()?.to_str()?.to_string();
            let dev = sysfs_device(&d);
            let lockspace = crate::filesystems::lockspace(&table);
            let ls_id = std::fs::read_to_string(root.join("kernel/dlm").join(lockspace).join("id"))
                .ok()
                .and_then(|id| id.trim().parse().ok());
            let ids = crate::filesystems::FsIds { dev, ls_id };
            Some(crate::filesystems::NamedFs { table, ids })
        })
        .collect()
}

/// The device of the filesystem of sysfs directory `dir` (`SYSFS/fs/gfs2/TABLE`): its `id`,
/// `MAJOR:MINOR`.
fn sysfs_device(dir: &Path) -> Option<(u32, u32)> {
    let id = std::fs::read_to_string(dir.join("id")).ok()?;
    let (major, minor) = id.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The sysfs files of a filesystem (`SYSFS/fs/gfs2/TABLE`) that say whether it can make
/// progress, as the `KEY VALUE` lines [`crate::health::Sysfs`] reads; files this kernel
/// does not have are left out. Only sysfs is read, never the mount point.
pub fn sysfs_values(dir: &Path) -> String {
    const KEYS: [&str; 9] = [
        "withdraw",
        "frozen",
        "lock_module/block",
        "lock_module/withdraw",
        "lock_module/jid",
        "lock_module/first_done",
        "lock_module/recover_done",
        "lock_module/recover_status",
        "lock_module/proto_name",
    ];
    let mut out = String::new();
    for k in KEYS {
        if let Ok(v) = std::fs::read_to_string(dir.join(k)) {
            out.push_str(&format!("{k} {}\n", v.trim()));
        }
    }
    out
}

/// Waits at most `within` for `child` to end: its exit status, or None when it has not
/// ended by then (never an unbounded wait: a child in uninterruptible sleep cannot end
/// before it wakes, even killed).
pub fn wait_within(
    child: &mut std::process::Child,
    within: std::time::Duration,
) -> io::Result<Option<std::process::ExitStatus>> {
    let until = std::time::Instant::now() + within;
    loop {
        match child.try_wait()? {
            Some(s) => return Ok(Some(s)),
            None if std::time::Instant::now() >= until => return Ok(None),
            None => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

/// Runs a cluster tool (`corosync-quorumtool -s`, `dlm_tool ls`) with no input and gives
/// its standard output; a tool that is not installed is `Ok(None)`. A tool that has not
/// ended `within` the time given is killed and named in the error: a hung corosync must
/// not hang glk.
pub fn run_tool(cmd: &[&str], within: std::time::Duration) -> io::Result<Option<String>> {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = match Command::new(cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", cmd[0]))),
    };
    // Read as it comes, so that a long output cannot fill the pipe and stall the tool.
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = io::Read::read_to_end(&mut stdout, &mut text);
        text
    });
    if wait_within(&mut child, within)?.is_none() {
        let _ = child.kill();
        // Reaped if it dies at once; one stuck in uninterruptible sleep is left to the
        // system rather than waited for.
        let _ = wait_within(&mut child, Duration::from_secs(1));
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "`{}` did not answer in {:.1} s",
                cmd.join(" "),
                within.as_secs_f64()
            ),
        ));
    }
    // The output ends with the tool, unless something it started keeps the pipe open:
    // then what came so far.
    let until = Instant::now() + Duration::from_secs(1);
    while !reader.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    if !reader.is_finished() {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("`{}` ended but its output did not", cmd.join(" ")),
        ));
    }
    let text = reader.join().unwrap_or_default();
    Ok(Some(String::from_utf8_lossy(&text).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sysfs directory of a GFS2 filesystem, with its device and its lockspace's
    /// id as the kernel shows them (a sysfs tree laid out as the kernel's); lock_nolock
    /// has no lockspace.
    #[test]
    fn named_filesystems_as_sysfs_shows_them() {
        use crate::filesystems::{FsIds, NamedFs};
        let sys = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = sys.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("fs/gfs2/lab:gfs/id", "254:1\n");
        write("kernel/dlm/gfs/id", "1039675946\n");
        write("fs/gfs2/lab:data/id", "254:2\n");
        write("kernel/dlm/data/id", "2858078307\n");
        write("kernel/dlm/lvm_global/id", "7\n");
        write("fs/gfs2/vda3/id", "254:3\n");
        let got = named_filesystems(sys.path());
        let fs = |table: &str, dev, ls_id| NamedFs {
            table: table.into(),
            ids: FsIds {
                dev: Some(dev),
                ls_id,
            },
        };
        assert_eq!(
            got,
            [
                fs("lab:data", (254, 2), Some(2_858_078_307)),
                fs("lab:gfs", (254, 1), Some(1_039_675_946)),
                fs("vda3", (254, 3), None),
            ]
        );
        assert!(named_filesystems(&sys.path().join("none")).is_empty());
    }

    #[test]
    fn filesystems_by_table_and_lockspace() {
        let d = tempfile::tempdir().unwrap();
        for t in ["lab:gfs", "lab:data"] {
            std::fs::create_dir_all(d.path().join("gfs2").join(t)).unwrap();
        }
        std::fs::write(d.path().join("gfs2/stray"), "").unwrap();
        let all = filesystems(d.path(), None).unwrap();
        let tables: Vec<_> = all.iter().map(|f| f.table.as_str()).collect();
        assert_eq!(tables, ["lab:data", "lab:gfs"]);
        assert_eq!(all[1].lockspace, "gfs");
        assert_eq!(all[1].dlm_locks(d.path()), d.path().join("dlm/gfs_locks"));
        assert_eq!(filesystems(d.path(), Some("data")).unwrap().len(), 1);
        let e = filesystems(d.path(), Some("x")).unwrap_err().to_string();
        assert!(e.contains("no GFS2 filesystem \"x\""), "{e}");
        let e = mounted(&d.path().join("none")).unwrap_err().to_string();
        assert!(e.contains("is a GFS2 filesystem mounted?"), "{e}");
    }

    #[test]
    fn tools_answer_or_are_named() {
        use std::time::Duration;
        let out = run_tool(
            &["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x"],
            Duration::from_secs(20),
        );
        assert_eq!(
            out.unwrap().unwrap().len(),
            200_000,
            "a long output does not stall"
        );
        assert!(run_tool(&["glk-no-such-tool"], Duration::from_secs(1))
            .unwrap()
            .is_none());
        let e = run_tool(&["sleep", "10"], Duration::from_millis(200)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(
            e.to_string().contains("`sleep 10` did not answer in 0.2 s"),
            "{e}"
        );
    }

    #[test]
    fn sysfs_values_lists_what_exists() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("lock_module")).unwrap();
        std::fs::write(d.path().join("withdraw"), "0\n").unwrap();
        std::fs::write(d.path().join("lock_module/block"), "1\n").unwrap();
        let v = sysfs_values(d.path());
        assert_eq!(v, "withdraw 0\nlock_module/block 1\n");
        let s = crate::health::Sysfs::parse(&v);
        assert_eq!(s.locking_blocked(), Some(2));
        assert_eq!(s.withdrawn(), None);
    }
}
