//! `glk capture`: on a live node, snapshots of every GFS2 debugfs file and the DLM lock
//! dumps, with the capture times, optionally with gfs2 tracepoints recorded alongside,
//! into a bundle every analysis command reads (like gfs2_lockcapture, minus the Python).
//!
//! Layout: `DIR/NODE/` holds `glocks.N`, `glstats.N`, `sbstats.N`, `glockfd.N`,
//! `dlm_locks.N`, `dlm_waiters.N`, `procs.N` (every task: tid, process, parent, group,
//! session, state, wchan, comm, and the kernel stack of tasks in D state), `locks.N` (a copy
//! of `/proc/locks`: who took which flock), `fdlocks.N` (who holds those locks now, through
//! which open file: `/proc/PID/fdinfo`), `plocks.N` (`dlm_tool plocks`: the cluster's
//! POSIX locks and waiters, where dlm_tool is installed), `time.N` (epoch seconds when snapshot N started),
//! `gfs2_sysfs.N` (the filesystem's withdraw, freeze and recovery state in sysfs),
//! `trace_pipe.txt` (with `--trace`), `node`, `nodeid` (the DLM node id when configfs
//! shows it), `mountinfo`, `kernel.txt`, `kernel.log` (the kernel's log buffer) and
//! `cluster.txt` (`corosync-quorumtool -s` and `dlm_tool ls`, where installed). With several filesystems, `DIR/FS/NODE/`. `-o X.tar.zst`
//! packs the same tree.

use bundle::live::Filesystem;
use bundle::{FileKind, NodeFile};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::inputs;

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// Only this filesystem (lock table `CLUSTER:FS` or just `FS`). Default: all.
    #[arg(long)]
    pub fs: Option<String>,
    #[command(flatten)]
    pub sampling: Sampling,
    /// Output directory, or FILE.tar.zst for a packed bundle.
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// The debugfs root to read (default: the mounted debugfs).
    #[arg(long)]
    pub debugfs: Option<PathBuf>,
    /// The node's name (its directory and `node` file): the host name unless cluster
    /// mode names it as the cluster knows it.
    #[arg(skip)]
    pub node_name: Option<String>,
    #[command(flatten)]
    pub cluster: crate::cluster::ClusterArgs,
    /// A line for stderr once the output is known to be free, as the capture starts
    /// (`glk doctor live` says what it captures; a refused output says only why).
    #[arg(skip)]
    pub announce: Option<String>,
}

impl CaptureArgs {
    /// Says [`CaptureArgs::announce`], if any.
    pub fn announce(&self) {
        if let Some(line) = &self.announce {
            eprintln!("{line}");
        }
    }
}

/// How many snapshots, how far apart, and what is traced alongside: the same for a capture
/// of this node and for each node's part of a cluster capture.
#[derive(Debug, Clone, clap::Args)]
pub struct Sampling {
    /// Snapshots to take.
    #[arg(long, default_value_t = 3)]
    pub count: u32,
    /// Seconds between snapshots.
    #[arg(long, default_value_t = 5.0, value_parser = clikit::args::seconds)]
    pub interval: f64,
    /// Record gfs2 tracepoints from the start for this many seconds (the capture lasts
    /// until both the snapshots and the trace are done).
    #[arg(long, value_parser = clikit::args::seconds)]
    pub trace: Option<f64>,
    /// Events to record with --trace (as glk trace --events): by default every gfs2 and
    /// dlm event, which `glk analyze` needs for hand-offs and DLM latency by master.
    #[arg(long, value_delimiter = ',', default_value = "gfs2,dlm")]
    pub trace_events: Vec<String>,
}

/// Copies a (possibly huge, possibly debugfs) file by streaming; a missing source is skipped.
fn copy(from: &Path, to: &Path) -> io::Result<bool> {
    let mut src = match std::fs::File::open(from) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", from.display()))),
    };
    let mut dst = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(to)?);
    io::copy(&mut src, &mut dst)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", from.display())))?;
    dst.flush()?;
    Ok(true)
}

/// Snapshot `n` of one filesystem's files, `time.N` first: the moment its glocks file is
/// read, which the stuck rule's snapshot clock measures from. The node's tasks come after
/// ([`write_tasks`]), so that nothing slow stands between `time.N` and the glocks file.
/// Returns the moment `time.N` was taken, from which the next snapshots are timed.
fn snapshot(fs: &Filesystem, root: &Path, out: &Path, n: u32) -> io::Result<Instant> {
    let dlm = root.join("dlm");
    let mut taken = Instant::now();
    for kind in FileKind::ALL {
        let to = out.join(kind.file_name(n));
        match kind {
            FileKind::Time => {
                let t = clikit::fmt::unix_secs(SystemTime::now());
                taken = Instant::now();
                std::fs::write(to, format!("{t:.9}\n"))?;
            }
            FileKind::Glocks | FileKind::Glstats | FileKind::Sbstats => {
                copy(&fs.dir.join(kind.name()), &to)?;
            }
            // One read and no second: see glockparse::glockfd::read_path.
            FileKind::Glockfd => match glockparse::glockfd::read_path(&fs.dir.join("glockfd")) {
                Ok(c) => {
                    if let Some(note) = c.cut_short {
                        eprintln!("glk: warning: snapshot {n}: glockfd: {note}");
                    }
                    std::fs::write(to, c.bytes)?
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io::Error::new(e.kind(), format!("glockfd: {e}"))),
            },
            FileKind::DlmLocks => {
                copy(&dlm.join(format!("{}_locks", fs.lockspace)), &to)?;
            }
            FileKind::DlmWaiters => {
                copy(&dlm.join(format!("{}_waiters", fs.lockspace)), &to)?;
            }
            FileKind::Locks => {
                copy(Path::new("/proc/locks"), &to)?;
            }
            FileKind::Plocks => plocks(&fs.lockspace, &to)?,
            FileKind::Sysfs => {
                std::fs::write(to, sysfs_state(fs))?;
            }
            // After the snapshots of every filesystem: write_tasks and write_fdlocks.
            FileKind::Procs | FileKind::FdLocks => {}
        }
    }
    Ok(taken)
}

/// The node's tasks at snapshot `n` (`procs.N`), read once for all filesystems.
fn write_tasks(out: &Path, n: u32, tasks: &[bundle::procs::Task]) -> io::Result<()> {
    let mut w = io::BufWriter::new(std::fs::File::create(
        out.join(FileKind::Procs.file_name(n)),
    )?);
    bundle::procs::write(&mut w, tasks)?;
    w.flush()
}

/// The locks the node's processes hold on `fs` through their open files at snapshot `n`
/// (`fdlocks.N`, [`bundle::fdlocks`]): after the tasks, as the process table is.
fn write_fdlocks(fs: &Filesystem, out: &Path, n: u32) -> io::Result<()> {
    let mut w = io::BufWriter::new(std::fs::File::create(
        out.join(FileKind::FdLocks.file_name(n)),
    )?);
    let devs: Vec<(u32, u32)> = fs.device().into_iter().collect();
    bundle::fdlocks::write_this_node(&mut w, &devs)?;
    w.flush()
}

/// The cluster's POSIX locks of `lockspace` as dlm_controld keeps them (`dlm_tool plocks`,
/// 5 seconds at most), into `to`; nothing where dlm_tool is not installed. A dlm_controld
/// that does not answer is said on stderr and costs only this file.
fn plocks(lockspace: &str, to: &Path) -> io::Result<()> {
    match bundle::live::run_tool(&["dlm_tool", "plocks", lockspace], Duration::from_secs(5)) {
        Ok(Some(text)) => std::fs::write(to, text),
        Ok(None) => Ok(()),
        Err(e) => {
            eprintln!("glk capture: POSIX locks of {lockspace} not recorded: {e}");
            Ok(())
        }
    }
}

/// The sysfs files of a filesystem that say whether it can make progress
/// ([`bundle::live::sysfs_values`]), then its mount point and `statvfs` figures (`mount`,
/// `statfs_*`).
fn sysfs_state(fs: &Filesystem) -> String {
    let mut out = bundle::live::sysfs_values(&fs.sysfs());
    // Where it is mounted (by its device) and how full it is.
    let dev = fs.device();
    let mount = bundle::mounts::of_this_process()
        .into_iter()
        .find(|m| m.fs_type == "gfs2" && dev.is_some() && m.dev == dev)
        .map(|m| m.mount_point.display().to_string());
    if let Some(m) = mount {
        out.push_str(&format!("mount {m}\n"));
        if let Ok(c) = std::ffi::CString::new(m) {
            // SAFETY: statvfs is plain data, for which all zeroes is a valid value.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: a valid C string and a struct to fill.
            if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
                out.push_str(&format!(
                    "statfs_bsize {}\nstatfs_blocks {}\nstatfs_bfree {}\nstatfs_files {}\nstatfs_ffree {}\n",
                    st.f_frsize, st.f_blocks, st.f_bfree, st.f_files, st.f_ffree
                ));
            }
        }
    }
    out
}

/// The kernel's log buffer (`klogctl(SYSLOG_ACTION_READ_ALL)`, what `dmesg` prints), raw.
fn kernel_log() -> io::Result<Vec<u8>> {
    // SAFETY: size query, no buffer.
    let size = unsafe { libc::klogctl(10, std::ptr::null_mut(), 0) };
    if size < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; size as usize];
    // SAFETY: `buf` has `size` writable bytes.
    let n = unsafe { libc::klogctl(3, buf.as_mut_ptr().cast(), size) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// What corosync and dlm_controld say (`corosync-quorumtool -s`, `dlm_tool ls`), each under
/// `## COMMAND`, for the tools that are installed; each gets 5 seconds.
fn cluster_state() -> String {
    let mut out = String::new();
    for cmd in [&["corosync-quorumtool", "-s"][..], &["dlm_tool", "ls"][..]] {
        match bundle::live::run_tool(cmd, Duration::from_secs(5)) {
            Ok(None) => {}
            Ok(Some(text)) => out.push_str(&format!("## {}\n{text}", cmd.join(" "))),
            Err(e) => out.push_str(&format!("## {} ({e})\n", cmd.join(" "))),
        }
    }
    out
}

/// Sleeps until `due`; false when a stop was asked for first.
fn wait_until(due: Instant) -> bool {
    while Instant::now() < due {
        if tracepipe::stop::requested() {
            return false;
        }
        std::thread::sleep(
            Duration::from_millis(50).min(due.saturating_duration_since(Instant::now())),
        );
    }
    !tracepipe::stop::requested()
}

/// Where a capture to `output` is written: `output` itself, or for a packed bundle
/// (`X.tar.zst`) a private temporary directory (kept as long as the guard returned),
/// which [`pack`] packs when complete.
pub fn staging(output: &Path) -> io::Result<(PathBuf, Option<tempfile::TempDir>)> {
    if !output.to_string_lossy().ends_with(".tar.zst") {
        return Ok((output.to_path_buf(), None));
    }
    let t = tempfile::Builder::new().prefix("glk-capture-").tempdir()?;
    Ok((t.path().to_path_buf(), Some(t)))
}

/// Packs `dir` into `file` (tar + zstd), which appears only once complete.
pub fn pack(dir: &Path, file: &Path) -> io::Result<()> {
    let mut out = bundle::atomic::AtomicFile::create(file)?;
    {
        let enc = zstd::stream::write::Encoder::new(out.file(), 3)?;
        let mut tar = tar::Builder::new(enc);
        tar.append_dir_all(".", dir)?;
        tar.into_inner()?.finish()?.flush()?;
    }
    out.commit()
}

/// The files that say whose a node directory is: `node`, `nodeid`, `table` (the lock
/// table of its filesystem), `kernel.txt` (the kernel release) and `mountinfo`.
fn write_node_files(d: &Path, node: &str, table: &str) -> io::Result<()> {
    std::fs::write(NodeFile::Node.path_in(d), format!("{node}\n"))?;
    std::fs::write(NodeFile::Table.path_in(d), format!("{table}\n"))?;
    if let Some(id) = bundle::local_nodeid() {
        std::fs::write(NodeFile::Nodeid.path_in(d), format!("{id}\n"))?;
    }
    copy(
        Path::new("/proc/sys/kernel/osrelease"),
        &NodeFile::Kernel.path_in(d),
    )?;
    copy(
        Path::new("/proc/self/mountinfo"),
        &NodeFile::Mountinfo.path_in(d),
    )?;
    Ok(())
}

/// The state around the locks, once at the end, into every node directory: the kernel's
/// log and the cluster tools' view.
fn write_state(dirs: &[PathBuf]) -> io::Result<()> {
    let klog = kernel_log();
    let cluster = cluster_state();
    for d in dirs {
        match &klog {
            Ok(k) => std::fs::write(NodeFile::KernelLog.path_in(d), k)?,
            Err(e) => eprintln!("glk: warning: could not read the kernel log: {e}"),
        }
        if !cluster.is_empty() {
            std::fs::write(NodeFile::Cluster.path_in(d), &cluster)?;
        }
    }
    Ok(())
}

/// An error when a node's capture directory `dest` exists and is not empty: a capture is
/// never written over another.
pub fn refuse_existing(dest: &Path) -> io::Result<()> {
    if std::fs::read_dir(dest).is_ok_and(|mut rd| rd.next().is_some()) {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{}: a capture of this node is there already; choose another output",
                dest.display()
            ),
        ));
    }
    Ok(())
}

/// A node's capture directory, written under a hidden temporary name beside `dest` and
/// renamed to `dest` when complete (an interrupted capture never leaves a directory that
/// looks complete); removed if the capture fails.
struct NodeDir {
    tmp: tempfile::TempDir,
    dest: PathBuf,
}

impl NodeDir {
    fn create(dest: PathBuf) -> io::Result<NodeDir> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", dest.display()));
        refuse_existing(&dest)?;
        let parent = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(named)?;
        let name = dest
            .file_name()
            .map_or("node".into(), |n| n.to_string_lossy().into_owned());
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}.partial-"))
            .tempdir_in(parent)
            .map_err(named)?;
        Ok(NodeDir { tmp, dest })
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn commit(self) -> io::Result<PathBuf> {
        let dest = self.dest;
        let tmp = self.tmp.keep();
        // An empty directory of that name (made by hand for -o) is replaced.
        let _ = std::fs::remove_dir(&dest);
        std::fs::rename(&tmp, &dest)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dest.display())))?;
        Ok(dest)
    }
}

pub fn run(a: &CaptureArgs) -> io::Result<()> {
    if a.cluster.on() {
        return crate::cluster::capture(a);
    }
    tracepipe::stop::install();
    let root = inputs::debugfs_root(a.debugfs.as_deref())?;
    let fss = bundle::live::filesystems(&root, a.fs.as_deref())?;
    let (base, staging) = staging(&a.output)?;
    let packed = staging.is_some();
    let node = a.node_name.clone().unwrap_or_else(crate::trace::hostname);
    let node_dirs = fss
        .iter()
        .map(|f| {
            NodeDir::create(if fss.len() == 1 {
                base.join(&node)
            } else {
                base.join(f.table.replace(':', "_")).join(&node)
            })
        })
        .collect::<io::Result<Vec<NodeDir>>>()?;
    a.announce();
    let dirs: Vec<PathBuf> = node_dirs.iter().map(|d| d.path().to_path_buf()).collect();
    for (f, d) in fss.iter().zip(&dirs) {
        write_node_files(d, &node, &f.table)?;
    }
    // The trace runs on its own thread for the whole capture.
    let tracer = a.sampling.trace.map(|secs| {
        let path = dirs[0].join("trace_pipe.txt");
        let events = a.sampling.trace_events.clone();
        std::thread::spawn(move || crate::trace::record_raw(&events, secs, &path))
    });
    // Each filesystem's snapshot N is due `interval` x N after the moment its snapshot 0's
    // time was taken, so that `time.N` - `time.0` is never short of it: a waiter seen in
    // both has waited that long, and a capture as long as the stuck threshold shows a
    // stuck wait.
    let mut starts: Vec<Instant> = Vec::with_capacity(fss.len());
    let mut taken = 0;
    'snapshots: for n in 0..a.sampling.count {
        for (i, (fs, d)) in fss.iter().zip(&dirs).enumerate() {
            if let Some(start) = starts.get(i) {
                let due =
                    *start + Duration::from_secs_f64(a.sampling.interval.max(0.0) * f64::from(n));
                if !wait_until(due) {
                    break 'snapshots;
                }
            } else if tracepipe::stop::requested() {
                break 'snapshots;
            }
            let at = snapshot(fs, &root, d, n)?;
            if n == 0 {
                starts.push(at);
            }
        }
        let node_tasks = bundle::procs::this_node();
        for (fs, d) in fss.iter().zip(&dirs) {
            write_tasks(d, n, &node_tasks)?;
            write_fdlocks(fs, d, n)?;
        }
        taken += 1;
        eprintln!("glk: snapshot {n} taken ({} filesystem(s))", fss.len());
    }
    if let Some(t) = tracer {
        let (events, lost) = t
            .join()
            .map_err(|_| io::Error::other("trace thread panicked"))??;
        eprintln!("glk: trace: {events} events, {lost} lost");
    }
    write_state(&dirs)?;
    let mut written = Vec::new();
    for d in node_dirs {
        written.push(d.commit()?);
    }
    let wrote = if packed {
        pack(&base, &a.output)?;
        a.output.display().to_string()
    } else {
        written
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    eprintln!(
        "glk: {taken} snapshot(s) of {} filesystem(s) in {wrote}",
        fss.len()
    );
    Ok(())
}
