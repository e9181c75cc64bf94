//! Typed decoding of the `dlm:*` tracepoints (`include/trace/events/dlm.h`), every version:
//!
//! ```text
//! dlm_lock_start: ls_id=1039675946 lkb_id=1 mode=EX flags=NOQUEUE|CONVERT|VALBLK res_name=2020…34
//! dlm_lock_end: ls_id=… lkb_id=1 mode=NL flags=VALBLK error=0 res_name=…
//! dlm_bast: ls_id=… lkb_id=b2 mode=PR res_name=…
//! dlm_ast: ls_id=… lkb_id=1 sb_flags= sb_status=0 res_name=…
//! dlm_unlock_start: ls_id=… lkb_id=12 flags=VALBLK res_name=…
//! dlm_unlock_end: ls_id=… lkb_id=12 flags=VALBLK error=0 res_name=…
//! dlm_send: nodeid=2 ret=64                      (dlm_recv likewise)
//! dlm_send_message: dst=2 h_seq=2 h_version=3.2 h_lockspace=… h_nodeid=1 h_length=112 h_cmd=MSG
//!     m_type=LOOKUP m_nodeid=… m_pid=426 m_lkid=9 m_remid=0 … m_grmode=IV m_rqmode=PR
//!     m_bastmode=NL m_asts=3 m_result=0 m_extra=0x2020… res_name=0x2020…
//! dlm_send_rcom: dst=2 h_seq=0 … h_cmd=RCOM rc_type=NAMES rc_result=0 rc_id=… rc_seq=… …
//! dlm_plock_read: fsid=… number=… owner=… optype=… ex=… wait=… flags=… pid=… nodeid=… rv=… start=… end=…
//! ```
//!
//! Every body is `key=value` words, so one tokenizer serves every kernel: fields a kernel
//! does not print (`dst`, added to the message events after 6.2; `res_name` of the send
//! events) are `None`, and fields a later kernel adds are skipped. 6.1 (Debian) prints
//! `seq=` where later kernels print `h_seq=`, and `seq=N,` in the rcom events. `lkb_id` is hex in the
//! lock events while `m_lkid`/`m_remid` are decimal in the message events: both are kept
//! as numbers, so a lock is one id whichever event names it.
//!
//! A resource name is printed as the hex of its bytes; a glock's resource is the 24
//! characters `"%8x%16x"` of its type and number, which [`Resource`] turns back into the
//! [`GlockId`] the gfs2 events use.

use glockparse::num::{parse_hex_u64, parse_u64};
use glockparse::{DlmMode, GlockId};

/// The `dlm` event names, without `dlm_`, in [`DlmEvent::index`] order.
pub const DLM_EVENTS: [&str; 14] = [
    "lock_start",
    "lock_end",
    "bast",
    "ast",
    "unlock_start",
    "unlock_end",
    "send",
    "recv",
    "send_message",
    "recv_message",
    "send_rcom",
    "recv_rcom",
    "plock_read",
    "plock_write",
];

/// A DLM resource, as a tracepoint names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Resource {
    /// The event names no resource (or an empty one).
    #[default]
    None,
    /// A GFS2 glock's resource.
    Glock(GlockId),
    /// Another resource: a hash of its name (enough to tell resources apart).
    Other(u64),
}

impl Resource {
    /// From the hex of the name's bytes (`2020…34`, with or without `0x`).
    pub fn from_hex(hex: &[u8]) -> Resource {
        let hex = hex.strip_prefix(b"0x").unwrap_or(hex);
        if hex.is_empty() {
            return Resource::None;
        }
        let mut name = [0u8; 64];
        let n = hex.len() / 2;
        if hex.len() % 2 == 0 && n <= name.len() {
            let mut ok = true;
            for (i, pair) in hex.chunks_exact(2).enumerate() {
                match (nibble(pair[0]), nibble(pair[1])) {
                    (Some(a), Some(b)) => name[i] = a << 4 | b,
                    _ => ok = false,
                }
            }
            if ok {
                if let Some(g) = std::str::from_utf8(&name[..n])
                    .ok()
                    .and_then(GlockId::parse_dlm_resource)
                {
                    return Resource::Glock(g);
                }
            }
        }
        // FNV-1a over the text: stable across runs and machines.
        let h = hex.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(0x100_0000_01b3)
        });
        Resource::Other(h)
    }

    /// The glock, when the resource is one.
    pub fn glock(self) -> Option<GlockId> {
        match self {
            Resource::Glock(g) => Some(g),
            _ => None,
        }
    }
}

impl std::fmt::Display for Resource {
    /// A glock as `TYPE/hexnum`, another resource as `res:HASH`, none as `-`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::None => f.write_str("-"),
            Resource::Glock(g) => write!(f, "{g}"),
            Resource::Other(h) => write!(f, "res:{h:016x}"),
        }
    }
}

fn nibble(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// A DLM message's type (`DLM_MSG_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsgType {
    /// `DLM_MSG_REQUEST`: a new lock request to the master.
    Request,
    /// `DLM_MSG_CONVERT`: a conversion request to the master.
    Convert,
    /// `DLM_MSG_UNLOCK`: an unlock request to the master.
    Unlock,
    /// `DLM_MSG_CANCEL`: a cancel request to the master.
    Cancel,
    /// `DLM_MSG_REQUEST_REPLY`: the master's answer to a request.
    RequestReply,
    /// `DLM_MSG_CONVERT_REPLY`: the master's answer to a conversion.
    ConvertReply,
    /// `DLM_MSG_UNLOCK_REPLY`: the master's answer to an unlock.
    UnlockReply,
    /// `DLM_MSG_CANCEL_REPLY`: the master's answer to a cancel.
    CancelReply,
    /// `DLM_MSG_GRANT`: the master grants a request that had to wait.
    Grant,
    /// `DLM_MSG_BAST`: the master asks a holder to give its lock up (blocking AST).
    Bast,
    /// `DLM_MSG_LOOKUP`: who masters a resource, asked of its directory node.
    Lookup,
    /// `DLM_MSG_REMOVE`: a resource's directory entry is removed.
    Remove,
    /// `DLM_MSG_LOOKUP_REPLY`: the directory node names the master.
    LookupReply,
    /// `DLM_MSG_PURGE`: a dead process's orphan locks are purged.
    Purge,
    /// A recovery message (`h_cmd=RCOM`) or a type this version of glk does not know.
    Other,
}

impl MsgType {
    fn parse(s: &[u8]) -> MsgType {
        match s {
            b"REQUEST" => MsgType::Request,
            b"CONVERT" => MsgType::Convert,
            b"UNLOCK" => MsgType::Unlock,
            b"CANCEL" => MsgType::Cancel,
            b"REQUEST_REPLY" => MsgType::RequestReply,
            b"CONVERT_REPLY" => MsgType::ConvertReply,
            b"UNLOCK_REPLY" => MsgType::UnlockReply,
            b"CANCEL_REPLY" => MsgType::CancelReply,
            b"GRANT" => MsgType::Grant,
            b"BAST" => MsgType::Bast,
            b"LOOKUP" => MsgType::Lookup,
            b"REMOVE" => MsgType::Remove,
            b"LOOKUP_REPLY" => MsgType::LookupReply,
            b"PURGE" => MsgType::Purge,
            _ => MsgType::Other,
        }
    }

    /// The kernel's name (`REQUEST`, `GRANT`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MsgType::Request => "REQUEST",
            MsgType::Convert => "CONVERT",
            MsgType::Unlock => "UNLOCK",
            MsgType::Cancel => "CANCEL",
            MsgType::RequestReply => "REQUEST_REPLY",
            MsgType::ConvertReply => "CONVERT_REPLY",
            MsgType::UnlockReply => "UNLOCK_REPLY",
            MsgType::CancelReply => "CANCEL_REPLY",
            MsgType::Grant => "GRANT",
            MsgType::Bast => "BAST",
            MsgType::Lookup => "LOOKUP",
            MsgType::Remove => "REMOVE",
            MsgType::LookupReply => "LOOKUP_REPLY",
            MsgType::Purge => "PURGE",
            MsgType::Other => "OTHER",
        }
    }
}

/// The `DLM_LKF_*` flag names the lock events print, bit by bit.
const LKF: [&str; 20] = [
    "NOQUEUE",
    "CANCEL",
    "CONVERT",
    "VALBLK",
    "QUECVT",
    "IVVALBLK",
    "CONVDEADLK",
    "PERSISTENT",
    "NODLCKWT",
    "NODLCKBLK",
    "EXPEDITE",
    "NOQUEUEBAST",
    "HEADQUE",
    "NOORDER",
    "ORPHAN",
    "ALTPR",
    "ALTCW",
    "FORCEUNLOCK",
    "TIMEOUT",
    "",
];

/// `DLM_LKF_NOQUEUE`: fail at once rather than wait.
pub const LKF_NOQUEUE: u32 = 0x1;
/// `DLM_LKF_CONVERT`: a conversion of a held lock.
pub const LKF_CONVERT: u32 = 0x4;

/// The names of the lock flags set in `flags`, `|`-joined as the kernel prints them.
pub fn lkf_names(flags: u32) -> String {
    let mut out = String::new();
    for (bit, name) in LKF.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        if flags & 1 << bit != 0 {
            if !out.is_empty() {
                out.push('|');
            }
            out.push_str(name);
        }
    }
    out
}

/// Serialises lock flags as [`lkf_names`] gives them.
fn lkf_serialize<S: serde::Serializer>(flags: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&lkf_names(*flags))
}

/// Lock flags from their names (`NOQUEUE|CONVERT|VALBLK`); a name glk does not know sets
/// no bit.
fn lkf(s: &[u8]) -> u32 {
    s.split(|&b| b == b'|')
        .filter_map(|name| {
            LKF.iter()
                .position(|f| !f.is_empty() && f.as_bytes() == name)
        })
        .fold(0, |acc, bit| acc | 1 << bit)
}

/// One DLM message as `dlm_send_message` / `dlm_recv_message` print it (and, with
/// `rcom` set, the header of a recovery message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The receiving node (printed since the kernel after 6.2 that added `dst`).
    pub dst: Option<u32>,
    /// The sender's sequence number towards `dst`.
    pub seq: u32,
    /// The lockspace id (`h_lockspace`, the lock events' `ls_id`).
    pub ls_id: u32,
    /// The sending node (`h_nodeid`).
    pub from: u32,
    /// Message length in bytes.
    pub len: u32,
    /// A recovery (`RCOM`) message rather than a lock message.
    pub rcom: bool,
    /// The lock message type (`Other` for recovery messages).
    pub mtype: MsgType,
    /// The lock's id on the sending side's view (`m_lkid`, the owner's `lkb_id`).
    pub lkid: u32,
    /// The lock's id on the other side (`m_remid`).
    pub remid: u32,
    /// The requesting process (`m_pid`).
    pub pid: u32,
    /// `m_nodeid` (the node a LOOKUP_REPLY names as master, or the lock's owner).
    pub nodeid: u32,
    /// `m_grmode`: the granted mode, when the message carries one.
    pub grmode: Option<DlmMode>,
    /// `m_rqmode`: the requested mode, when the message carries one.
    pub rqmode: Option<DlmMode>,
    /// `m_bastmode`: the mode a blocking AST asks for.
    pub bastmode: Option<DlmMode>,
    /// `m_result` (0, or -EAGAIN and the like in replies).
    pub result: i32,
    /// The resource, where the event names it (`res_name`, or `m_extra` for the types
    /// whose extra is the name: REQUEST, LOOKUP, REMOVE).
    pub res: Resource,
}

impl serde::Serialize for Message {
    /// glk's JSON fields, in order: `ls_id`, `msg_type` (`RCOM` for a recovery message),
    /// `from`, `dst`, `seq`, `length`, `lkid`, `remid`, `m_pid`, `m_nodeid`, the three modes
    /// and `result` (the resource leads the object).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("Message", 14)?;
        m.serialize_field("ls_id", &self.ls_id)?;
        m.serialize_field(
            "msg_type",
            if self.rcom {
                "RCOM"
            } else {
                self.mtype.as_str()
            },
        )?;
        m.serialize_field("from", &self.from)?;
        m.serialize_field("dst", &self.dst)?;
        m.serialize_field("seq", &self.seq)?;
        m.serialize_field("length", &self.len)?;
        m.serialize_field("lkid", &self.lkid)?;
        m.serialize_field("remid", &self.remid)?;
        m.serialize_field("m_pid", &self.pid)?;
        m.serialize_field("m_nodeid", &self.nodeid)?;
        m.serialize_field("grmode", &self.grmode)?;
        m.serialize_field("rqmode", &self.rqmode)?;
        m.serialize_field("bastmode", &self.bastmode)?;
        m.serialize_field("result", &self.result)?;
        m.end()
    }
}

/// A `dlm_plock_read` / `dlm_plock_write` body (POSIX lock requests from user space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Plock {
    /// The filesystem's id.
    pub fsid: u32,
    /// The inode number.
    pub number: u64,
    /// The lock owner (a process, or an open file description for OFD locks).
    pub owner: u64,
    /// The operation (`DLM_PLOCK_OP_*`: lock, unlock, get, cancel).
    pub optype: i32,
    /// An exclusive (write) lock.
    pub ex: bool,
    /// The caller waits for the lock (F_SETLKW).
    pub wait: bool,
    /// The requesting process.
    #[serde(rename = "plock_pid")]
    pub pid: u32,
    /// The requesting node.
    pub nodeid: u32,
    /// The result.
    pub rv: i32,
    /// The first byte of the range.
    pub start: u64,
    /// The last byte of the range.
    pub end: u64,
}

/// A decoded `dlm:*` event.
///
/// Serialised as the fields of glk's JSON object for the event, in order: the name and the
/// resource are left out (they lead the object), lock flags as their `|`-joined names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum DlmEvent {
    /// `dlm_lock()` called: a new request or a conversion (`flags` has CONVERT).
    LockStart {
        /// The lockspace id.
        ls_id: u32,
        /// The lock's id on this node.
        lkb_id: u32,
        /// The mode requested.
        mode: DlmMode,
        /// `DLM_LKF_*` flags.
        #[serde(serialize_with = "lkf_serialize")]
        flags: u32,
        /// The resource.
        #[serde(skip)]
        res: Resource,
    },
    /// `dlm_lock()` returned (the grant comes later, with [`DlmEvent::Ast`]).
    LockEnd {
        /// The lockspace id.
        ls_id: u32,
        /// The lock's id on this node.
        lkb_id: u32,
        /// The mode requested.
        mode: DlmMode,
        /// `DLM_LKF_*` flags.
        #[serde(serialize_with = "lkf_serialize")]
        flags: u32,
        /// The error `dlm_lock()` returned (0: queued).
        error: i32,
        /// The resource.
        #[serde(skip)]
        res: Resource,
    },
    /// A blocking AST delivered to this lock's owner: another request wants `mode`.
    Bast {
        /// The lockspace id.
        ls_id: u32,
        /// The lock's id on this node.
        lkb_id: u32,
        /// The mode the other request wants.
        mode: DlmMode,
        /// The resource.
        #[serde(skip)]
        res: Resource,
    },
    /// The completion AST: the request (or unlock) finished with `status`.
    Ast {
        /// The lockspace id.
        ls_id: u32,
        /// The lock's id on this node.
        lkb_id: u32,
        /// `DLM_SBF_*` flags (demoted, value block invalid, alternate mode).
        sb_flags: u8,
        /// 0, or the error the request ended with (-EAGAIN, -DLM_EUNLOCK...).
        status: i32,
        /// The resource.
        #[serde(skip)]
        res: Resource,
    },
    /// `dlm_unlock()` called.
    UnlockStart {
        /// The lockspace id.
        ls_id: u32,
        /// The lock's id on this node.
        lkb_id: u32,
        /// `DLM_LKF_*` flags.
        #[serde(serialize_with = "lkf_serialize")]
        flags: u32,
        /// The resource.
        #[serde(skip)]
        res: Resource,
    },
    /// `dlm_unlock()` returned.
    UnlockEnd {
        /// The lockspace id.
        ls_id: u32,
        /// The lock's id on this node.
        lkb_id: u32,
        /// `DLM_LKF_*` flags.
        #[serde(serialize_with = "lkf_serialize")]
        flags: u32,
        /// The error `dlm_unlock()` returned.
        error: i32,
        /// The resource.
        #[serde(skip)]
        res: Resource,
    },
    /// Bytes sent to a node by the lowcomms layer.
    Send {
        /// The node sent to.
        nodeid: u32,
        /// Bytes sent, or the error.
        ret: i32,
    },
    /// Bytes received from a node by the lowcomms layer.
    Recv {
        /// The node received from.
        nodeid: u32,
        /// Bytes received, or the error.
        ret: i32,
    },
    /// `dlm_send_message`: a lock message sent to another node.
    SendMessage(Message),
    /// `dlm_recv_message`: a lock message received from another node.
    RecvMessage(Message),
    /// `dlm_send_rcom`: a recovery message sent.
    SendRcom(Message),
    /// `dlm_recv_rcom`: a recovery message received.
    RecvRcom(Message),
    /// `dlm_plock_read`: a POSIX lock request read by dlm_controld.
    PlockRead(Plock),
    /// `dlm_plock_write`: its answer written back to the kernel.
    PlockWrite(Plock),
}

impl DlmEvent {
    /// The event's position in [`DLM_EVENTS`].
    pub fn index(&self) -> usize {
        match self {
            DlmEvent::LockStart { .. } => 0,
            DlmEvent::LockEnd { .. } => 1,
            DlmEvent::Bast { .. } => 2,
            DlmEvent::Ast { .. } => 3,
            DlmEvent::UnlockStart { .. } => 4,
            DlmEvent::UnlockEnd { .. } => 5,
            DlmEvent::Send { .. } => 6,
            DlmEvent::Recv { .. } => 7,
            DlmEvent::SendMessage(_) => 8,
            DlmEvent::RecvMessage(_) => 9,
            DlmEvent::SendRcom(_) => 10,
            DlmEvent::RecvRcom(_) => 11,
            DlmEvent::PlockRead(_) => 12,
            DlmEvent::PlockWrite(_) => 13,
        }
    }

    /// The event name without `dlm_`.
    pub fn name(&self) -> &'static str {
        DLM_EVENTS[self.index()]
    }

    /// The resource the event names.
    pub fn resource(&self) -> Resource {
        match *self {
            DlmEvent::LockStart { res, .. }
            | DlmEvent::LockEnd { res, .. }
            | DlmEvent::Bast { res, .. }
            | DlmEvent::Ast { res, .. }
            | DlmEvent::UnlockStart { res, .. }
            | DlmEvent::UnlockEnd { res, .. } => res,
            DlmEvent::SendMessage(m)
            | DlmEvent::RecvMessage(m)
            | DlmEvent::SendRcom(m)
            | DlmEvent::RecvRcom(m) => m.res,
            _ => Resource::None,
        }
    }

    /// The glock of the event's resource, when it is one.
    pub fn glock(&self) -> Option<GlockId> {
        self.resource().glock()
    }

    /// The lockspace id of the event (`ls_id` of the lock events, `h_lockspace` of the
    /// messages); None for the events of no one lockspace (lowcomms sends and receives,
    /// POSIX lock requests).
    pub fn ls_id(&self) -> Option<u32> {
        match self {
            DlmEvent::SendMessage(m)
            | DlmEvent::RecvMessage(m)
            | DlmEvent::SendRcom(m)
            | DlmEvent::RecvRcom(m) => Some(m.ls_id),
            e => e.lock().map(|(ls_id, _)| ls_id),
        }
    }

    /// The lock (`ls_id`, `lkb_id`) of the lock events.
    pub fn lock(&self) -> Option<(u32, u32)> {
        match *self {
            DlmEvent::LockStart { ls_id, lkb_id, .. }
            | DlmEvent::LockEnd { ls_id, lkb_id, .. }
            | DlmEvent::Bast { ls_id, lkb_id, .. }
            | DlmEvent::Ast { ls_id, lkb_id, .. }
            | DlmEvent::UnlockStart { ls_id, lkb_id, .. }
            | DlmEvent::UnlockEnd { ls_id, lkb_id, .. } => Some((ls_id, lkb_id)),
            _ => None,
        }
    }
}

/// The `key=value` words of a body, in order.
fn fields(body: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    body.split(|&b| b == b' ')
        .filter(|w| !w.is_empty())
        .filter_map(|w| {
            let eq = memchr::memchr(b'=', w)?;
            // 6.1's rcom events print `seq=%u,`.
            let v = &w[eq + 1..];
            Some((&w[..eq], v.strip_suffix(b",").unwrap_or(v)))
        })
}

fn u32_dec(v: &[u8]) -> Option<u32> {
    parse_u64(v).and_then(|n| u32::try_from(n).ok())
}

fn u32_hex(v: &[u8]) -> Option<u32> {
    parse_hex_u64(v).and_then(|n| u32::try_from(n).ok())
}

fn i32_dec(v: &[u8]) -> Option<i32> {
    match v.strip_prefix(b"-") {
        Some(d) => parse_u64(d).and_then(|n| i32::try_from(n).ok()).map(|n| -n),
        None => parse_u64(v).and_then(|n| i32::try_from(n).ok()),
    }
}

/// The fields of every lock event (absent: `None`).
#[derive(Default)]
struct LockFields {
    ls_id: Option<u32>,
    lkb_id: Option<u32>,
    mode: Option<DlmMode>,
    flags: Option<u32>,
    error: Option<i32>,
    sb_flags: Option<u8>,
    sb_status: Option<i32>,
    res: Option<Resource>,
}

fn lock_fields(body: &[u8]) -> Option<LockFields> {
    let mut f = LockFields::default();
    for (k, v) in fields(body) {
        match k {
            b"ls_id" => f.ls_id = Some(u32_dec(v)?),
            b"lkb_id" => f.lkb_id = Some(u32_hex(v)?),
            b"mode" => f.mode = Some(DlmMode::parse(v)?),
            b"flags" => f.flags = Some(lkf(v)),
            b"error" => f.error = Some(i32_dec(v)?),
            b"sb_flags" => {
                f.sb_flags = Some(v.split(|&b| b == b'|').fold(0u8, |acc, n| {
                    acc | match n {
                        b"DEMOTED" => 1,
                        b"VALNOTVALID" => 2,
                        b"ALTMODE" => 4,
                        _ => 0,
                    }
                }))
            }
            b"sb_status" => f.sb_status = Some(i32_dec(v)?),
            b"res_name" => f.res = Some(Resource::from_hex(v)),
            _ => {}
        }
    }
    Some(f)
}

fn message(body: &[u8]) -> Option<Message> {
    let (mut dst, mut seq, mut ls, mut from, mut len) = (None, None, None, None, None);
    let (mut rcom, mut mtype) = (false, MsgType::Other);
    let (mut lkid, mut remid, mut pid, mut nodeid, mut result) = (0, 0, 0, 0, 0);
    let (mut grmode, mut rqmode, mut bastmode) = (None, None, None);
    let (mut res, mut extra) = (Resource::None, None);
    for (k, v) in fields(body) {
        match k {
            b"dst" => dst = Some(u32_dec(v)?),
            // `seq` before the kernel that added `dst` (6.1), `h_seq` since.
            b"h_seq" | b"seq" => seq = Some(u32_dec(v)?),
            b"h_lockspace" => ls = Some(u32_dec(v)?),
            b"h_nodeid" => from = Some(u32_dec(v)?),
            b"h_length" => len = Some(u32_dec(v)?),
            b"h_cmd" => rcom = v == b"RCOM",
            b"m_type" => mtype = MsgType::parse(v),
            b"m_lkid" => lkid = u32_dec(v)?,
            b"m_remid" => remid = u32_dec(v)?,
            b"m_pid" => pid = u32_dec(v)?,
            b"m_nodeid" => nodeid = u32_dec(v)?,
            b"m_result" => result = i32_dec(v)?,
            b"m_grmode" => grmode = DlmMode::parse(v),
            b"m_rqmode" => rqmode = DlmMode::parse(v),
            b"m_bastmode" => bastmode = DlmMode::parse(v),
            b"m_extra" => extra = Some(v),
            b"res_name" => res = Resource::from_hex(v),
            _ => {}
        }
    }
    if res == Resource::None
        && matches!(mtype, MsgType::Request | MsgType::Lookup | MsgType::Remove)
    {
        if let Some(x) = extra {
            res = Resource::from_hex(x);
        }
    }
    Some(Message {
        dst,
        seq: seq?,
        ls_id: ls?,
        from: from?,
        len: len.unwrap_or(0),
        rcom,
        mtype,
        lkid,
        remid,
        pid,
        nodeid,
        grmode,
        rqmode,
        bastmode,
        result,
        res,
    })
}

fn plock(body: &[u8]) -> Option<Plock> {
    let mut p = Plock {
        fsid: 0,
        number: 0,
        owner: 0,
        optype: 0,
        ex: false,
        wait: false,
        pid: 0,
        nodeid: 0,
        rv: 0,
        start: 0,
        end: 0,
    };
    let mut seen = false;
    for (k, v) in fields(body) {
        match k {
            b"fsid" => p.fsid = u32_dec(v)?,
            b"number" => {
                p.number = parse_hex_u64(v)?;
                seen = true;
            }
            b"owner" => p.owner = parse_hex_u64(v)?,
            b"optype" => p.optype = i32_dec(v)?,
            b"ex" => p.ex = v != b"0",
            b"wait" => p.wait = v != b"0",
            b"pid" => p.pid = u32_dec(v)?,
            b"nodeid" => p.nodeid = u32_dec(v)?,
            b"rv" => p.rv = i32_dec(v)?,
            b"start" => p.start = parse_hex_u64(v)?,
            b"end" => p.end = parse_hex_u64(v)?,
            _ => {}
        }
    }
    seen.then_some(p)
}

/// Decodes the body of `dlm_NAME` (`name` without `dlm_`); `None` when it matches no
/// version's format.
pub fn decode(name: &[u8], body: &[u8]) -> Option<DlmEvent> {
    let lock = |body| -> Option<(u32, u32, LockFields)> {
        let f = lock_fields(body)?;
        Some((f.ls_id?, f.lkb_id?, f))
    };
    let res = |f: &LockFields| f.res.unwrap_or_default();
    Some(match name {
        b"lock_start" => {
            let (ls_id, lkb_id, f) = lock(body)?;
            DlmEvent::LockStart {
                ls_id,
                lkb_id,
                mode: f.mode?,
                flags: f.flags.unwrap_or(0),
                res: res(&f),
            }
        }
        b"lock_end" => {
            let (ls_id, lkb_id, f) = lock(body)?;
            DlmEvent::LockEnd {
                ls_id,
                lkb_id,
                mode: f.mode?,
                flags: f.flags.unwrap_or(0),
                error: f.error?,
                res: res(&f),
            }
        }
        b"bast" => {
            let (ls_id, lkb_id, f) = lock(body)?;
            DlmEvent::Bast {
                ls_id,
                lkb_id,
                mode: f.mode?,
                res: res(&f),
            }
        }
        b"ast" => {
            let (ls_id, lkb_id, f) = lock(body)?;
            DlmEvent::Ast {
                ls_id,
                lkb_id,
                sb_flags: f.sb_flags.unwrap_or(0),
                status: f.sb_status?,
                res: res(&f),
            }
        }
        b"unlock_start" => {
            let (ls_id, lkb_id, f) = lock(body)?;
            DlmEvent::UnlockStart {
                ls_id,
                lkb_id,
                flags: f.flags.unwrap_or(0),
                res: res(&f),
            }
        }
        b"unlock_end" => {
            let (ls_id, lkb_id, f) = lock(body)?;
            DlmEvent::UnlockEnd {
                ls_id,
                lkb_id,
                flags: f.flags.unwrap_or(0),
                error: f.error?,
                res: res(&f),
            }
        }
        b"send" | b"recv" => {
            let (mut nodeid, mut ret) = (None, None);
            for (k, v) in fields(body) {
                match k {
                    b"nodeid" => nodeid = Some(u32_dec(v)?),
                    b"ret" => ret = Some(i32_dec(v)?),
                    _ => {}
                }
            }
            let (nodeid, ret) = (nodeid?, ret?);
            if name == b"send" {
                DlmEvent::Send { nodeid, ret }
            } else {
                DlmEvent::Recv { nodeid, ret }
            }
        }
        b"send_message" => DlmEvent::SendMessage(message(body)?),
        b"recv_message" => DlmEvent::RecvMessage(message(body)?),
        b"send_rcom" => DlmEvent::SendRcom(message(body)?),
        b"recv_rcom" => DlmEvent::RecvRcom(message(body)?),
        b"plock_read" => DlmEvent::PlockRead(plock(body)?),
        b"plock_write" => DlmEvent::PlockWrite(plock(body)?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RES: &str = "202020202020203220202020202020202020203431303163";

    #[test]
    fn resource_names_map_to_glocks() {
        assert_eq!(
            Resource::from_hex(RES.as_bytes()),
            Resource::Glock(GlockId::new(2, 0x4101c))
        );
        assert_eq!(
            Resource::from_hex(format!("0x{RES}").as_bytes()).glock(),
            Some(GlockId::new(2, 0x4101c))
        );
        assert_eq!(Resource::from_hex(b""), Resource::None);
        assert_eq!(Resource::from_hex(b"0x"), Resource::None);
        // Not a glock name: still one resource, the same each time.
        let a = Resource::from_hex(b"6d79726573");
        assert!(matches!(a, Resource::Other(_)));
        assert_eq!(a, Resource::from_hex(b"6D79726573"));
        assert_ne!(a, Resource::from_hex(b"6d79726574"));
        assert!(matches!(Resource::from_hex(b"zz"), Resource::Other(_)));
    }

    #[test]
    fn lock_events() {
        let b = format!(
            "ls_id=1039675946 lkb_id=b2 mode=EX flags=NOQUEUE|CONVERT|VALBLK res_name={RES}"
        );
        let Some(DlmEvent::LockStart {
            ls_id,
            lkb_id,
            mode,
            flags,
            res,
        }) = decode(b"lock_start", b.as_bytes())
        else {
            panic!()
        };
        assert_eq!((ls_id, lkb_id, mode), (1039675946, 0xb2, DlmMode::EX));
        assert_eq!(flags, LKF_NOQUEUE | LKF_CONVERT | 0x8);
        assert_eq!(res.glock(), Some(GlockId::new(2, 0x4101c)));
        let b = format!("ls_id=1 lkb_id=1 mode=NL flags= error=-11 res_name={RES}");
        assert!(matches!(
            decode(b"lock_end", b.as_bytes()),
            Some(DlmEvent::LockEnd {
                error: -11,
                flags: 0,
                ..
            })
        ));
        let b = format!("ls_id=1 lkb_id=22 sb_flags=DEMOTED|ALTMODE sb_status=0 res_name={RES}");
        assert!(matches!(
            decode(b"ast", b.as_bytes()),
            Some(DlmEvent::Ast {
                lkb_id: 0x22,
                sb_flags: 5,
                status: 0,
                ..
            })
        ));
        // A body without its lock id is not this event.
        assert_eq!(decode(b"bast", b"ls_id=1 mode=PR"), None);
        assert_eq!(decode(b"lock_start", b"ls_id=1 lkb_id=zz mode=PR"), None);
        assert_eq!(decode(b"nosuch", b"ls_id=1 lkb_id=1"), None);
    }

    #[test]
    fn messages_with_and_without_dst() {
        let with = format!(
            "dst=2 h_seq=366 h_version=3.2 h_lockspace=1039675946 h_nodeid=1 h_length=112 h_cmd=MSG \
             m_type=REQUEST m_nodeid=4294967295 m_pid=475 m_lkid=136 m_remid=0 m_parent_lkid=0 \
             m_parent_remid=0 m_exflags= m_sbflags= m_flags= m_lvbseq=0 m_hash=1 m_status=0 \
             m_grmode=IV m_rqmode=EX m_bastmode=NL m_asts=3 m_result=0 m_extra=0x{RES}"
        );
        let Some(DlmEvent::RecvMessage(m)) = decode(b"recv_message", with.as_bytes()) else {
            panic!()
        };
        assert_eq!((m.dst, m.seq, m.from, m.lkid), (Some(2), 366, 1, 136));
        assert_eq!((m.mtype, m.rqmode), (MsgType::Request, Some(DlmMode::EX)));
        // REQUEST's extra is the resource name.
        assert_eq!(m.res.glock(), Some(GlockId::new(2, 0x4101c)));
        let without = with
            .replacen("dst=2 ", "", 1)
            .replace("m_type=REQUEST", "m_type=GRANT");
        let Some(DlmEvent::SendMessage(m)) = decode(b"send_message", without.as_bytes()) else {
            panic!()
        };
        // GRANT's extra is the lock value block, not a name.
        assert_eq!(
            (m.dst, m.mtype, m.res),
            (None, MsgType::Grant, Resource::None)
        );
        // 6.1: no dst, `seq=` (with a comma in the rcom events).
        let old = "seq=49 h_version=3.2 h_lockspace=1039675946 h_nodeid=2 h_length=120 h_cmd=MSG \
                   m_type=CONVERT m_nodeid=1 m_pid=277 m_lkid=33 m_remid=63 m_parent_lkid=0 \
                   m_parent_remid=0 m_exflags=CONVERT|VALBLK|QUECVT m_sbflags= m_flags= m_lvbseq=1 \
                   m_hash=197874923 m_status=2 m_grmode=PR m_rqmode=EX m_bastmode=NL m_asts=3 \
                   m_result=0 m_extra=0x0000";
        let Some(DlmEvent::RecvMessage(m)) = decode(b"recv_message", old.as_bytes()) else {
            panic!()
        };
        assert_eq!(
            (m.dst, m.seq, m.from, m.mtype, m.lkid, m.remid),
            (None, 49, 2, MsgType::Convert, 33, 63)
        );
        let rcom61 = "seq=3, h_version=3.2 h_lockspace=1 h_nodeid=2 h_length=48 h_cmd=RCOM \
                      rc_type=STATUS rc_result=0 rc_id=1 rc_seq=2 rc_seq_reply=0 rc_buf=0x";
        assert!(
            matches!(decode(b"recv_rcom", rcom61.as_bytes()), Some(DlmEvent::RecvRcom(m)) if m.seq == 3)
        );
        let rcom = "dst=2 h_seq=0 h_version=3.2 h_lockspace=1 h_nodeid=1 h_length=48 h_cmd=RCOM \
                    rc_type=NAMES rc_result=0 rc_id=1 rc_seq=2 rc_seq_reply=0 rc_buf=0x";
        assert!(
            matches!(decode(b"send_rcom", rcom.as_bytes()), Some(DlmEvent::SendRcom(m)) if m.rcom)
        );
        assert!(matches!(
            decode(b"recv", b"nodeid=2 ret=-11"),
            Some(DlmEvent::Recv {
                nodeid: 2,
                ret: -11
            })
        ));
    }
}
