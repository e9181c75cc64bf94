//! glk's cluster mode, on the node tool: one command on any node sees every node.
//!
//! - [`nodes`]: the members, from corosync (`corosync-cmapctl nodelist`, else
//!   `corosync-quorumtool -l`) or a list the user gives, each checked to be a host name
//!   and never an option.
//! - [`quote`]: every word of a remote command line quoted for the remote shell.
//! - [`protocol`]: what a remote `glk agent` writes: a versioned hello, then frames (a JSON
//!   line, then that many bytes of zstd-compressed file), read back with limits and with
//!   paths that can only name files below the directory they are written to.
//! - [`session`]: one agent per node, run through the system's OpenSSH client (BatchMode,
//!   a connect timeout, keep-alives; the user's config, keys, agent and known_hosts apply)
//!   or directly on this node, read on its own thread so that a node that does not answer
//!   is named when its deadline passes, never waited for.
//! - [`gather`]: what a node sends, written below a directory as it comes: only into its
//!   own directory, never past the free space kept, nothing left of a batch that failed.
//!
//! Nothing here listens on a port: the only door is ssh as the user already has it, and
//! the remote side runs only `glk agent`, whose commands read and never change anything
//! but their own private tracefs instance, restored when the session ends.

pub mod gather;
pub mod nodes;
pub mod protocol;
pub mod quote;
pub mod session;

pub use nodes::Node;
pub use session::{Remote, Session};
