//! Whether the cluster is quorate, from `corosync-quorumtool -s` (corosync says it nowhere
//! in sysfs or configfs). Judges GLK-NO-QUORUM by `glk doctor`'s rule on a capture's
//! `cluster.txt` ([`bundle::health::Cluster`]). The tool gets 5 seconds, then is killed.

use std::io;
use std::time::Duration;

use analysis::findings::FindingCode;
use bundle::health::Cluster;

use super::{Collected, Collector};
use crate::metrics;

const TOOL: [&str; 2] = ["corosync-quorumtool", "-s"];

/// The quorum collector.
pub struct Quorum;

impl Quorum {
    /// The collector, when `corosync-quorumtool` is on the PATH.
    pub fn find() -> Option<Quorum> {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .any(|d| d.join(TOOL[0]).is_file())
            .then_some(Quorum)
    }
}

impl Collector for Quorum {
    fn name(&self) -> &'static str {
        "quorum"
    }

    fn collect(&mut self) -> io::Result<Collected> {
        let text = bundle::live::run_tool(&TOOL, Duration::from_secs(5))?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "corosync-quorumtool is no longer installed",
            )
        })?;
        let Some((quorate, _)) = Cluster::parse(&text).quorate else {
            let first = text.lines().next().unwrap_or("");
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "corosync-quorumtool -s printed no `Quorate:` line (first line: {first:?})"
                ),
            ));
        };
        let mut f = metrics::COROSYNC_QUORATE.family();
        f.add(&[], if quorate { 1.0 } else { 0.0 });
        Ok(Collected {
            families: vec![f],
            findings: vec![(FindingCode::NoQuorum, u64::from(!quorate))],
            malformed: 0,
        })
    }
}
