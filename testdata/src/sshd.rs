//! Real OpenSSH servers on loopback addresses, standing in for cluster nodes: one `sshd`
//! per node, each on its own address `127.0.0.N`, accepting one fresh key, and giving
//! its sessions the environment of its node (`SetEnv`: which debugfs root the node's glk
//! reads, its DLM node id). [`Sshd::config`] is the client configuration that reaches
//! them (port, key, a private known_hosts).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One node: its loopback address and its sessions' environment.
#[derive(Debug, Clone)]
pub struct Host {
    /// `127.0.0.N`.
    pub addr: String,
    /// `NAME=VALUE` pairs every session on it gets.
    pub env: Vec<(String, String)>,
}

/// The servers; stopped when dropped.
pub struct Sshd {
    dir: PathBuf,
    children: Vec<Option<Child>>,
    /// The port every server listens on (each on its own address).
    pub port: u16,
}

/// The sshd program, where installed.
fn sshd_program() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let o = cmd
        .output()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{:?}: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// A port free on 127.0.0.1 at this moment.
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

impl Sshd {
    /// Starts one sshd per host in `dir` (which must outlive them). Err: why sshd cannot
    /// run here (not installed, not root); any other failure panics.
    pub fn start(dir: &Path, hosts: &[Host]) -> Result<Sshd, String> {
        let sshd = sshd_program().ok_or("sshd is not installed (openssh-server)")?;
        if Command::new("ssh").arg("-V").output().is_err() {
            return Err("the ssh client is not installed (openssh-client)".into());
        }
        // /proc/self belongs to the process's effective user.
        let uid = std::os::unix::fs::MetadataExt::uid(
            &std::fs::metadata("/proc/self").map_err(|e| e.to_string())?,
        );
        if uid != 0 {
            return Err("sshd needs root to log sessions in".into());
        }
        Sshd::setup(&sshd, dir, hosts)
            .map(Ok)
            .unwrap_or_else(|e| panic!("sshd: {e}"))
    }

    /// Keys, configurations and servers.
    fn setup(sshd: &Path, dir: &Path, hosts: &[Host]) -> Result<Sshd, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        std::fs::create_dir_all("/run/sshd").map_err(|e| e.to_string())?;
        let key = |name: &str| {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(name)))
        };
        key("host_key")?;
        key("id")?;
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        let port = free_port()?;
        let mut me = Sshd {
            dir: dir.to_path_buf(),
            children: Vec::new(),
            port,
        };
        for (i, h) in hosts.iter().enumerate() {
            let env: Vec<String> = h.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let conf = dir.join(format!("sshd_config.{i}"));
            std::fs::write(
                &conf,
                format!(
                    "Port {port}\nListenAddress {}\nHostKey {}\nAuthorizedKeysFile {}\n\
                     PidFile none\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     MaxStartups 64\nMaxSessions 64\nSetEnv {}\n",
                    h.addr,
                    dir.join("host_key").display(),
                    dir.join("authorized_keys").display(),
                    env.join(" ")
                ),
            )
            .map_err(|e| e.to_string())?;
            let child = Command::new(sshd)
                .args(["-D", "-e", "-f"])
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(
                    std::fs::File::create(dir.join(format!("sshd.{i}.log")))
                        .map_err(|e| e.to_string())?,
                )
                .spawn()
                .map_err(|e| format!("{}: {e}", sshd.display()))?;
            me.children.push(Some(child));
        }
        std::fs::write(
            me.config(),
            format!(
                "Host *\n  Port {port}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile {}\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n",
                dir.join("id").display(),
                dir.join("known_hosts").display()
            ),
        )
        .map_err(|e| e.to_string())?;
        for h in hosts {
            me.wait_listening(&h.addr)?;
        }
        Ok(me)
    }

    /// The client configuration file (`ssh -F`) that reaches every server.
    pub fn config(&self) -> PathBuf {
        self.dir.join("ssh_config")
    }

    /// Waits (10 s at most) until `addr` accepts connections.
    fn wait_listening(&self, addr: &str) -> Result<(), String> {
        let to: SocketAddr = format!("{addr}:{}", self.port)
            .parse()
            .map_err(|e| format!("{addr}: {e}"))?;
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if TcpStream::connect_timeout(&to, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "sshd on {to} did not start (see {})",
            self.dir.display()
        ))
    }

    /// Stops node `i`'s server (its sessions go on, as a dying sshd's do).
    pub fn stop(&mut self, i: usize) {
        if let Some(mut c) = self.children.get_mut(i).and_then(Option::take) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.stop(i);
        }
    }
}
