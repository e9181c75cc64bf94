//! `bench fdlocks`: what recording who holds a lock through which open file costs
//! (`fdlocks.N`, [`bundle::fdlocks::write_this_node`]) on a node with many processes and
//! open files: `--procs` children each keep `--files` files open (one of them flocked by
//! this process, so that `/proc/locks` lets the scan run), and the scan is timed.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Instant;

/// The children, killed when the benchmark ends however it ends.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs the benchmark: `procs` children with `files` files open each, `runs` scans.
pub fn run(procs: usize, files: usize, runs: usize) -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let opened: Vec<File> = (0..files.max(1))
        .map(|i| {
            let p = dir.path().join(format!("f{i}"));
            std::fs::write(&p, b"")?;
            File::open(&p)
        })
        .collect::<std::io::Result<_>>()?;
    // SAFETY: flock on a descriptor this process owns; no memory is involved.
    if unsafe { libc::flock(opened[0].as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let meta = opened[0].metadata()?;
    let dev = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let fds: Vec<i32> = opened.iter().map(AsRawFd::as_raw_fd).collect();
    let mut children = Children(Vec::with_capacity(procs));
    for _ in 0..procs {
        let keep = fds.clone();
        let mut cmd = Command::new("sleep");
        cmd.arg("600");
        // SAFETY: between fork and exec only fcntl, which is async-signal-safe, is called.
        unsafe {
            cmd.pre_exec(move || {
                for fd in &keep {
                    if libc::fcntl(*fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        children.0.push(cmd.spawn()?);
    }
    let path_fds = std::fs::read_dir("/proc")?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .map(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |rd| {
                rd.flatten()
                    .filter(|f| {
                        std::fs::read_link(f.path())
                            .is_ok_and(|t| t.as_os_str().as_encoded_bytes().starts_with(b"/"))
                    })
                    .count()
            })
        })
        .sum::<usize>();
    let mut times = Vec::with_capacity(runs);
    let mut found = 0;
    for _ in 0..runs.max(1) {
        let mut out = Vec::new();
        let start = Instant::now();
        found = bundle::fdlocks::write_this_node(&mut out, &[dev])?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "fdlocks scan: {procs} children x {files} open files, {path_fds} path descriptors on the node; \
         {found} locks held found; median {:.1} ms, best {:.1} ms, worst {:.1} ms over {} runs",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        times.len()
    );
    Ok(())
}
