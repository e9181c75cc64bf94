//! The state of every filesystem from sysfs (`/sys/fs/gfs2/TABLE`): withdrawn, frozen,
//! locking blocked for DLM recovery. It judges GLK-WITHDRAWN and GLK-DLM-RECOVERY by the
//! rules `glk doctor` applies to a capture's `gfs2_sysfs.N` ([`bundle::health::Sysfs`]).

use std::io;

use analysis::findings::FindingCode;
use bundle::health;

use super::{Collected, Collector, Config};
use crate::metrics;

/// The sysfs collector.
pub struct Sysfs {
    cfg: Config,
}

impl Sysfs {
    /// A collector reading `cfg.sysfs/fs/gfs2`.
    pub fn new(cfg: Config) -> Sysfs {
        Sysfs { cfg }
    }
}

impl Collector for Sysfs {
    fn name(&self) -> &'static str {
        "sysfs"
    }

    fn collect(&mut self) -> io::Result<Collected> {
        let root = self.cfg.sysfs.join("fs").join("gfs2");
        let mut dirs: Vec<_> = match std::fs::read_dir(&root) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect(),
            // No GFS2 module loaded: nothing mounted, nothing wrong.
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", root.display()))),
        };
        dirs.sort();
        let mut withdrawn = metrics::FILESYSTEM_WITHDRAWN.family();
        let mut frozen = metrics::FILESYSTEM_FROZEN.family();
        let mut blocked = metrics::FILESYSTEM_LOCKING_BLOCKED.family();
        let (mut n_withdrawn, mut n_recovery) = (0, 0);
        for dir in dirs {
            let table = dir
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let s = health::Sysfs::parse(&bundle::live::sysfs_values(&dir));
            let l = [("fs", table.as_str())];
            let is = |b: bool| if b { 1.0 } else { 0.0 };
            if s.get("withdraw").is_some() {
                withdrawn.add(&l, is(s.withdrawn().is_some()));
            }
            if let Some((v, _)) = s.get("frozen") {
                frozen.add(&l, is(v != "0"));
            }
            if s.get("lock_module/block").is_some() {
                blocked.add(&l, is(s.locking_blocked().is_some()));
            }
            n_withdrawn += u64::from(s.withdrawn().is_some());
            n_recovery += u64::from(s.locking_blocked().is_some());
        }
        Ok(Collected {
            families: vec![withdrawn, frozen, blocked],
            findings: vec![
                (FindingCode::Withdrawn, n_withdrawn),
                (FindingCode::DlmRecovery, n_recovery),
            ],
            malformed: 0,
        })
    }
}
