//! Typed records → DataFrames. One frame per kind, every one with a `node` column; the
//! schema of each is documented in the README ("Frames").

use std::io;

use analysis::snapshots::{At, Dlm, GlStatRow, GlockRow, Hold, SbStatRow, Snapshots};
use glockparse::{Diagnostics, LkStats};
use polars::prelude::*;
use traceparse::line::Naming;
use traceparse::{Decoded, DlmEvent, Gfs2Event};

use bundle::Captures;

/// The frame kinds, in export order.
pub const KINDS: [&str; 7] = [
    "glocks",
    "holders",
    "events",
    "glstats",
    "sbstats",
    "dlm_locks",
    "nodes",
];

/// Every frame of a set of captures.
pub struct Frames {
    /// Every glock of every snapshot.
    pub glocks: DataFrame,
    /// Every holder line.
    pub holders: DataFrame,
    /// Every trace event.
    pub events: DataFrame,
    /// Every glstats line.
    pub glstats: DataFrame,
    /// Every sbstats value.
    pub sbstats: DataFrame,
    /// Every DLM lock.
    pub dlm_locks: DataFrame,
    /// Every node: its DLM node id, kernel release, snapshots and trace events.
    pub nodes: DataFrame,
    /// What could not be read.
    pub diagnostics: Diagnostics,
}

impl Frames {
    /// A frame by its kind's name ([`KINDS`]).
    pub fn get(&self, kind: &str) -> Option<&DataFrame> {
        Some(match kind {
            "glocks" => &self.glocks,
            "holders" => &self.holders,
            "events" => &self.events,
            "glstats" => &self.glstats,
            "sbstats" => &self.sbstats,
            "dlm_locks" => &self.dlm_locks,
            "nodes" => &self.nodes,
            _ => return None,
        })
    }
}

fn to_polars(e: PolarsError) -> io::Error {
    io::Error::other(e.to_string())
}

fn col<T, V>(name: &str, v: V) -> Column
where
    Series: NamedFrom<V, T>,
    T: ?Sized,
{
    Series::new(name.into(), v).into_column()
}

/// A snapshot frame's column builder, each column declared once: `field: Type = "name" <-
/// value`, the value computed from the row bound to the name given after `as`. The frame
/// begins with the snapshot columns ([`SnapCols`]), then these, in order.
macro_rules! snapshot_table {
    (
        $(#[$doc:meta])*
        $cols:ident of $row:ty as $r:ident {
            $($field:ident: $ty:ty = $name:literal <- $val:expr,)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Default)]
        struct $cols {
            snap: SnapCols,
            $($field: Vec<$ty>,)*
        }

        impl $cols {
            fn push(&mut self, $r: &$row) {
                self.snap.push(&$r.at);
                $(self.$field.push($val);)*
            }

            fn frame(self) -> PolarsResult<DataFrame> {
                let mut c = self.snap.columns();
                c.extend([$(col($name, self.$field)),*]);
                DataFrame::new_infer_height(c)
            }
        }
    };
}

snapshot_table! {
    /// The `glocks` frame.
    GlockCols of GlockRow as g {
        glock: String = "glock" <- g.glock.to_string(),
        gltype: String = "type" <- g.glock.glock_type().name().into_owned(),
        number: u64 = "number" <- g.glock.number,
        state: &'static str = "state" <- g.state.as_str(),
        target: &'static str = "target" <- g.target.as_str(),
        demote_state: &'static str = "demote_state" <- g.demote_state.as_str(),
        demote_us: u64 = "demote_us" <- g.demote_us,
        flags: String = "flags" <- g.flags.to_string(),
        refs: i64 = "refs" <- g.refs,
        holders: u32 = "holders" <- g.holders,
        waiters: u32 = "waiters" <- g.waiters,
        inode_size: Option<u64> = "inode_size" <- g.inode_size,
        file_type: Option<&'static str> = "file_type" <- g.file_type,
    }
}

snapshot_table! {
    /// The `holders` frame.
    HolderCols of Hold as h {
        glock: String = "glock" <- h.glock.to_string(),
        gltype: String = "type" <- h.glock.glock_type().name().into_owned(),
        role: &'static str = "role" <- h.role.as_str(),
        pid: i64 = "pid" <- h.pid,
        comm: String = "comm" <- h.comm.to_string(),
        state: &'static str = "state" <- h.state.as_str(),
        flags: String = "flags" <- h.flags.to_string(),
        caller: String = "caller" <- h.caller.to_string(),
        error: i64 = "error" <- h.error,
        line: u64 = "line" <- h.line,
    }
}

/// A string column appended in place: no `String` per row.
#[derive(Default)]
struct StrCol(Option<StringChunkedBuilder>);

impl StrCol {
    fn builder(&mut self) -> &mut StringChunkedBuilder {
        self.0
            .get_or_insert_with(|| StringChunkedBuilder::new(PlSmallStr::EMPTY, 1 << 12))
    }

    fn push(&mut self, v: &str) {
        self.builder().append_value(v);
    }

    fn push_opt(&mut self, v: Option<&str>) {
        self.builder().append_option(v);
    }

    fn column(mut self, name: &str) -> Column {
        let b = self
            .0
            .take()
            .unwrap_or_else(|| StringChunkedBuilder::new(PlSmallStr::EMPTY, 0));
        let mut ca = b.finish();
        ca.rename(name.into());
        ca.into_series().into_column()
    }
}

/// Builds the `events` frame from decoded trace lines (also used by `glk trace -o
/// FILE.parquet`).
#[derive(Default)]
pub struct EventCols {
    node: StrCol,
    ts_ns: Vec<u64>,
    cpu: Vec<Option<u32>>,
    comm: StrCol,
    pid: Vec<i64>,
    event: StrCol,
    dev: StrCol,
    glock: StrCol,
    gltype: StrCol,
    from: Vec<Option<&'static str>>,
    to: Vec<Option<&'static str>>,
    target: Vec<Option<&'static str>>,
    state: Vec<Option<&'static str>>,
    flags: StrCol,
    remote: Vec<Option<bool>>,
    queue: Vec<Option<bool>>,
    status: Vec<Option<i64>>,
    tdiff_ns: Vec<Option<i64>>,
    /// The eight statistics of lock_time events, in the order of [`LkStats::NAMES`].
    stats: [Vec<Option<i64>>; 8],
    ls_id: Vec<Option<u32>>,
    lkb_id: Vec<Option<u32>>,
    mode: Vec<Option<&'static str>>,
    msg_type: Vec<Option<&'static str>>,
    src_node: Vec<Option<u32>>,
    dst_node: Vec<Option<u32>>,
    seq: Vec<Option<u32>>,
    body: StrCol,
    /// Reused to format ids and flags.
    buf: String,
}

impl EventCols {
    /// Adds an event line (headers and lost-event lines are not events).
    pub fn push(&mut self, node: &str, d: &Decoded<'_>) {
        use std::fmt::Write as _;
        let (line, dev, ev, dlm) = match d {
            Decoded::Gfs2 { line, dev, event } => (line, Some(*dev), Some(event), None),
            Decoded::Dlm { line, event } => (line, None, None, Some(event)),
            Decoded::Other(line) | Decoded::Undecoded(line) => (line, None, None, None),
            _ => return,
        };
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        self.node.push(node);
        self.ts_ns.push(line.ts_ns);
        self.cpu.push(line.cpu);
        match std::str::from_utf8(line.comm) {
            Ok(c) => self.comm.push(c),
            Err(_) => self.comm.push(&text(line.comm)),
        }
        self.pid.push(line.pid);
        match (ev, dlm) {
            (Some(e), _) => self.event.push(e.name()),
            (None, Some(_)) | (None, None) => {
                match (line.naming, std::str::from_utf8(line.event)) {
                    (Naming::Named, Ok(e)) => self.event.push(e),
                    (Naming::Named, Err(_)) => self.event.push(&text(line.event)),
                    // A system call: its tracefs event name.
                    _ => self.event.push(&line.event_name()),
                }
            }
        }
        let mut opt_fmt = |col: &mut StrCol, v: Option<&dyn std::fmt::Display>| match v {
            Some(v) => {
                self.buf.clear();
                let _ = write!(self.buf, "{v}");
                col.push(&self.buf);
            }
            None => col.push_opt(None),
        };
        opt_fmt(
            &mut self.dev,
            dev.as_ref().map(|d| d as &dyn std::fmt::Display),
        );
        let g = ev
            .and_then(|e| e.glock())
            .or_else(|| dlm.and_then(|e| e.glock()));
        opt_fmt(
            &mut self.glock,
            g.as_ref().map(|g| g as &dyn std::fmt::Display),
        );
        self.gltype
            .push_opt(g.map(|g| g.glock_type().name()).as_deref());
        let EventGfs2Cols {
            from,
            to,
            target,
            state,
            flags,
            remote,
            queue,
            lt,
        } = ev.map(EventGfs2Cols::of).unwrap_or_default();
        let mut flags_text: Option<String> = None;
        let d = dlm.map(EventDlmCols::of).unwrap_or_default();
        if let Some(f) = d.flags {
            flags_text = Some(traceparse::dlm::lkf_names(f));
        }
        self.from.push(from);
        self.to.push(to);
        self.target.push(target);
        self.state.push(state);
        match &flags_text {
            Some(f) => self.flags.push(f),
            None => opt_fmt(
                &mut self.flags,
                flags.as_ref().map(|f| f as &dyn std::fmt::Display),
            ),
        }
        self.remote.push(remote);
        self.queue.push(queue);
        self.status.push(lt.map(|l| l.status).or(d.status));
        self.ls_id.push(d.ls_id);
        self.lkb_id.push(d.lkb_id);
        self.mode.push(d.mode);
        self.msg_type.push(d.msg_type);
        self.src_node.push(d.src_node);
        self.dst_node.push(d.dst_node);
        self.seq.push(d.seq);
        self.tdiff_ns.push(lt.map(|l| l.tdiff));
        let values = lt.map(|l| l.stats.values());
        for (i, col) in self.stats.iter_mut().enumerate() {
            col.push(values.map(|v| v[i]));
        }
        match std::str::from_utf8(line.body) {
            Ok(b) => self.body.push(b),
            Err(_) => self.body.push(&text(line.body)),
        }
    }

    /// Events added.
    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.ts_ns.is_empty()
    }

    /// The frame, in the documented `events` schema.
    pub fn frame(self) -> PolarsResult<DataFrame> {
        let mut columns = vec![
            self.node.column("node"),
            col("ts_ns", self.ts_ns),
            col("cpu", self.cpu),
            self.comm.column("comm"),
            col("pid", self.pid),
            self.event.column("event"),
            self.dev.column("dev"),
            self.glock.column("glock"),
            self.gltype.column("type"),
            col("from", self.from),
            col("to", self.to),
            col("target", self.target),
            col("state", self.state),
            self.flags.column("flags"),
            col("remote", self.remote),
            col("queue", self.queue),
            col("status", self.status),
            col("tdiff_ns", self.tdiff_ns),
        ];
        columns.extend(
            LkStats::NAMES
                .into_iter()
                .zip(self.stats)
                .map(|(name, v)| col(name, v)),
        );
        columns.extend([
            col("ls_id", self.ls_id),
            col("lkb_id", self.lkb_id),
            col("mode", self.mode),
            col("msg_type", self.msg_type),
            col("src_node", self.src_node),
            col("dst_node", self.dst_node),
            col("seq", self.seq),
            self.body.column("body"),
        ]);
        DataFrame::new_infer_height(columns)
    }
}

/// The `events` columns only gfs2 events fill.
#[derive(Default)]
struct EventGfs2Cols {
    from: Option<&'static str>,
    to: Option<&'static str>,
    target: Option<&'static str>,
    state: Option<&'static str>,
    flags: Option<traceparse::TraceFlags>,
    remote: Option<bool>,
    queue: Option<bool>,
    lt: Option<traceparse::LockTime>,
}

impl EventGfs2Cols {
    fn of(e: &Gfs2Event) -> EventGfs2Cols {
        let mut c = EventGfs2Cols::default();
        match e {
            Gfs2Event::GlockStateChange {
                from: f,
                to: t,
                target: tg,
                flags: fl,
                ..
            } => {
                (c.from, c.to, c.target, c.flags) = (
                    Some(f.as_str()),
                    Some(t.as_str()),
                    Some(tg.as_str()),
                    Some(*fl),
                );
            }
            Gfs2Event::DemoteRq {
                from: f,
                to: t,
                flags: fl,
                remote: r,
                ..
            } => {
                (c.from, c.to, c.flags, c.remote) =
                    (Some(f.as_str()), Some(t.as_str()), Some(*fl), *r);
            }
            Gfs2Event::GlockPut {
                state: st,
                flags: fl,
                ..
            } => {
                (c.state, c.flags) = (Some(st.as_str()), Some(*fl));
            }
            Gfs2Event::Promote { state: st, .. } => c.state = Some(st.as_str()),
            Gfs2Event::GlockQueue {
                queue: q,
                state: st,
                ..
            } => {
                (c.state, c.queue) = (Some(st.as_str()), Some(*q));
            }
            Gfs2Event::GlockLockTime(l) => c.lt = Some(*l),
            _ => {}
        }
        c
    }
}

/// The `events` columns only dlm events fill.
#[derive(Default)]
struct EventDlmCols {
    ls_id: Option<u32>,
    lkb_id: Option<u32>,
    mode: Option<&'static str>,
    msg_type: Option<&'static str>,
    src_node: Option<u32>,
    dst_node: Option<u32>,
    seq: Option<u32>,
    status: Option<i64>,
    flags: Option<u32>,
}

impl EventDlmCols {
    fn of(e: &DlmEvent) -> EventDlmCols {
        let mut c = EventDlmCols::default();
        if let Some((ls, lkb)) = e.lock() {
            (c.ls_id, c.lkb_id) = (Some(ls), Some(lkb));
        }
        match *e {
            DlmEvent::LockStart { mode, flags, .. } => {
                (c.mode, c.flags) = (Some(mode.as_str()), Some(flags));
            }
            DlmEvent::LockEnd {
                mode, flags, error, ..
            } => {
                (c.mode, c.flags, c.status) =
                    (Some(mode.as_str()), Some(flags), Some(error.into()));
            }
            DlmEvent::Bast { mode, .. } => c.mode = Some(mode.as_str()),
            DlmEvent::Ast { status, .. } => c.status = Some(status.into()),
            DlmEvent::UnlockStart { flags, .. } => c.flags = Some(flags),
            DlmEvent::UnlockEnd { flags, error, .. } => {
                (c.flags, c.status) = (Some(flags), Some(error.into()));
            }
            DlmEvent::Send { nodeid, ret } => {
                (c.dst_node, c.status) = (Some(nodeid), Some(ret.into()))
            }
            DlmEvent::Recv { nodeid, ret } => {
                (c.src_node, c.status) = (Some(nodeid), Some(ret.into()))
            }
            DlmEvent::SendMessage(m)
            | DlmEvent::RecvMessage(m)
            | DlmEvent::SendRcom(m)
            | DlmEvent::RecvRcom(m) => {
                c.ls_id = Some(m.ls_id);
                c.msg_type = Some(if m.rcom { "RCOM" } else { m.mtype.as_str() });
                (c.src_node, c.dst_node, c.seq) = (Some(m.from), m.dst, Some(m.seq));
                c.mode = m.rqmode.map(|m| m.as_str());
                c.status = Some(m.result.into());
            }
            DlmEvent::PlockRead(p) | DlmEvent::PlockWrite(p) => {
                (c.src_node, c.status) = (Some(p.nodeid), Some(p.rv.into()));
            }
        }
        c
    }
}

/// Adds the lines of trace `path` to `ev`, but the gfs2 and dlm events of filesystems
/// other than the one `fs` names.
fn read_trace(
    path: &std::path::Path,
    node: &str,
    fs: bundle::filesystems::FsIds,
    ev: &mut EventCols,
    diag: &mut Diagnostics,
) -> io::Result<()> {
    traceparse::reader::for_each_decoded(path, diag, |d| {
        if fs.keeps(&d) {
            ev.push(node, &d);
        }
        true
    })
    .map(drop)
}

/// Reads every file of every node into frames (a node's trace cut to its filesystem's
/// events, [`Captures::fs_ids_of`]).
pub fn load(caps: &Captures) -> io::Result<Frames> {
    let snaps = Snapshots::load(caps)?;
    let mut events = EventCols::default();
    let mut diag = snaps.diagnostics.clone();
    let mut nodes = NodeCols::default();
    for n in &caps.nodes {
        let before = events.len();
        let fs = caps.fs_ids_of(&n.node);
        for t in &n.traces {
            read_trace(t, &n.node, fs, &mut events, &mut diag)?;
        }
        nodes.push(n, (events.len() - before) as u64);
    }
    let mut f = frames(&snaps, events, diag).map_err(to_polars)?;
    f.nodes = nodes.frame().map_err(to_polars)?;
    Ok(f)
}

/// The `nodes` frame: one row per node of the captures.
#[derive(Default)]
struct NodeCols {
    node: Vec<String>,
    nodeid: Vec<Option<u64>>,
    kernel: Vec<Option<String>>,
    snapshots: Vec<u32>,
    time_unix: Vec<Option<f64>>,
    last_time_unix: Vec<Option<f64>>,
    events: Vec<u64>,
}

impl NodeCols {
    /// Node `n`, whose traces held `events` events.
    fn push(&mut self, n: &bundle::NodeCapture, events: u64) {
        let times = || n.snapshots.iter().filter_map(|s| s.time_unix);
        self.node.push(n.node.clone());
        self.nodeid.push(n.nodeid);
        self.kernel.push(n.kernel.clone());
        self.snapshots.push(n.snapshots.len() as u32);
        self.time_unix.push(times().reduce(f64::min));
        self.last_time_unix.push(times().reduce(f64::max));
        self.events.push(events);
    }

    fn frame(self) -> PolarsResult<DataFrame> {
        DataFrame::new_infer_height(vec![
            col("node", self.node),
            col("nodeid", self.nodeid),
            col("kernel", self.kernel),
            col("snapshots", self.snapshots),
            col("time_unix", self.time_unix),
            col("last_time_unix", self.last_time_unix),
            col("events", self.events),
        ])
    }
}

/// The frames of `snaps` and of the events in `events`.
pub fn frames(
    snaps: &Snapshots,
    events: EventCols,
    diagnostics: Diagnostics,
) -> PolarsResult<Frames> {
    let mut c = Cols::default();
    snaps.glocks.iter().for_each(|g| c.glocks.push(g));
    snaps.holders.iter().for_each(|h| c.holders.push(h));
    snaps.glstats.iter().for_each(|r| c.glstats.push(r));
    snaps.sbstats.iter().for_each(|r| c.sbstats.push(r));
    snaps.dlm.iter().for_each(|d| c.dlm.push(d));
    Ok(Frames {
        glocks: c.glocks.frame()?,
        holders: c.holders.frame()?,
        events: events.frame()?,
        glstats: c.glstats.frame()?,
        sbstats: c.sbstats.frame()?,
        dlm_locks: c.dlm.frame()?,
        nodes: NodeCols::default().frame()?,
        diagnostics,
    })
}

/// The column builders of every frame.
#[derive(Default)]
struct Cols {
    glocks: GlockCols,
    holders: HolderCols,
    glstats: GlStatCols,
    sbstats: SbStatCols,
    dlm: DlmCols,
}

/// Columns every snapshot frame starts with.
#[derive(Default)]
struct SnapCols {
    node: Vec<String>,
    snapshot: Vec<u32>,
    time_unix: Vec<Option<f64>>,
}

impl SnapCols {
    fn push(&mut self, at: &At) {
        self.node.push(at.node.clone());
        self.snapshot.push(at.snapshot);
        self.time_unix.push(at.time_unix);
    }

    fn columns(self) -> Vec<Column> {
        vec![
            col("node", self.node),
            col("snapshot", self.snapshot),
            col("time_unix", self.time_unix),
        ]
    }
}

#[derive(Default)]
struct GlStatCols {
    snap: SnapCols,
    glock: Vec<String>,
    gltype: Vec<String>,
    /// The eight statistics, in the order of [`LkStats::NAMES`].
    values: [Vec<i64>; 8],
}

impl GlStatCols {
    fn push(&mut self, r: &GlStatRow) {
        let x = &r.stat;
        self.snap.push(&r.at);
        self.glock.push(x.glock.to_string());
        self.gltype.push(x.glock.glock_type().name().into_owned());
        for (col, v) in self.values.iter_mut().zip(x.stats.values()) {
            col.push(v);
        }
    }

    fn frame(self) -> PolarsResult<DataFrame> {
        let mut c = self.snap.columns();
        c.push(col("glock", self.glock));
        c.push(col("type", self.gltype));
        for (name, v) in LkStats::NAMES.into_iter().zip(self.values) {
            c.push(col(name, v));
        }
        DataFrame::new_infer_height(c)
    }
}

snapshot_table! {
    /// The `sbstats` frame.
    SbStatCols of SbStatRow as r {
        gltype: String = "type" <- r.gltype.name().into_owned(),
        cpu: u32 = "cpu" <- r.cpu,
        stat: &'static str = "stat" <- r.stat.name(),
        value: i64 = "value" <- r.value,
    }
}

snapshot_table! {
    /// The `dlm_locks` frame.
    DlmCols of Dlm as l {
        glock: Option<String> = "glock" <- l.glock.map(|g| g.to_string()),
        gltype: Option<String> = "type" <- l.glock.map(|g| g.glock_type().name().into_owned()),
        resource: String = "resource" <- l.resource.clone(),
        lkid: u64 = "lkid" <- l.id,
        nodeid: u64 = "nodeid" <- l.nodeid,
        owner_nodeid: Option<u64> = "owner_nodeid" <- l.owner,
        master_nodeid: u64 = "master_nodeid" <- l.master_nodeid,
        master_copy: bool = "master_copy" <- l.is_master_copy(),
        pid: u64 = "pid" <- l.pid,
        status: String = "status" <- l.status.name(),
        grmode: Option<&'static str> = "grmode" <- l.granted().map(|m| m.as_str()),
        rqmode: Option<&'static str> = "rqmode" <- l.requested().map(|m| m.as_str()),
        age_us: u64 = "age_us" <- l.age_us,
        line: u64 = "line" <- l.line,
    }
}
