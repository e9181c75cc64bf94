//! Typed records → DataFrames. One frame per kind, every one with a `node` column; the
//! schema of each is documented in the README ("Frames").

use std::io;

use glockparse::dlm_locks;
use glockparse::DlmMode;
use glockparse::{Diagnostics, Glock, GlockReader};
use polars::prelude::*;
use traceparse::{Decoded, DlmEvent, Gfs2Event};

use bundle::{Captures, NodeCapture, Snapshot};

/// The eight DLM statistics as frame columns, in the kernel's order (`gfs2_lkstats`).
pub(crate) const STAT_COLUMNS: [&str; 8] = [
    "srtt_ns",
    "srttvar_ns",
    "srttb_ns",
    "srttvarb_ns",
    "sirt_ns",
    "sirtvar_ns",
    "dcount",
    "qcount",
];

/// The frame kinds, in export order.
pub const KINDS: [&str; 6] = [
    "glocks",
    "holders",
    "events",
    "glstats",
    "sbstats",
    "dlm_locks",
];

/// Every frame of a set of captures.
pub struct Frames {
    pub glocks: DataFrame,
    pub holders: DataFrame,
    pub events: DataFrame,
    pub glstats: DataFrame,
    pub sbstats: DataFrame,
    pub dlm_locks: DataFrame,
    pub diagnostics: Diagnostics,
}

impl Frames {
    pub fn get(&self, kind: &str) -> Option<&DataFrame> {
        Some(match kind {
            "glocks" => &self.glocks,
            "holders" => &self.holders,
            "events" => &self.events,
            "glstats" => &self.glstats,
            "sbstats" => &self.sbstats,
            "dlm_locks" => &self.dlm_locks,
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

#[derive(Default)]
struct GlockCols {
    snap: SnapCols,
    glock: Vec<String>,
    gltype: Vec<String>,
    number: Vec<u64>,
    state: Vec<&'static str>,
    target: Vec<&'static str>,
    demote_state: Vec<&'static str>,
    demote_us: Vec<u64>,
    flags: Vec<String>,
    refs: Vec<i64>,
    holders: Vec<u32>,
    waiters: Vec<u32>,
    inode_size: Vec<Option<u64>>,
    file_type: Vec<Option<&'static str>>,
}

#[derive(Default)]
struct HolderCols {
    snap: SnapCols,
    glock: Vec<String>,
    gltype: Vec<String>,
    role: Vec<&'static str>,
    pid: Vec<i64>,
    comm: Vec<String>,
    state: Vec<&'static str>,
    flags: Vec<String>,
    caller: Vec<String>,
    error: Vec<i64>,
    line: Vec<u64>,
}

impl GlockCols {
    fn push(&mut self, node: &str, s: &Snapshot, g: &Glock, h: &mut HolderCols) {
        let id = g.id.to_string();
        let t = g.glock_type().name().into_owned();
        self.snap.push(node, s);
        self.glock.push(id.clone());
        self.gltype.push(t.clone());
        self.number.push(g.id.number);
        self.state.push(g.state.as_str());
        self.target.push(g.target.as_str());
        self.demote_state.push(g.demote_state.as_str());
        self.demote_us.push(g.demote_us);
        self.flags.push(g.flags.to_string());
        self.refs.push(g.refs);
        self.holders.push(g.granted_count() as u32);
        self.waiters.push(g.waiter_count() as u32);
        self.inode_size.push(g.inode.as_ref().map(|i| i.size));
        self.file_type.push(g.inode.as_ref().map(|i| i.file_type()));
        for x in &g.holders {
            h.snap.push(node, s);
            h.glock.push(id.clone());
            h.gltype.push(t.clone());
            h.role.push(if x.is_waiting() {
                "waiter"
            } else if x.is_granted() {
                "holder"
            } else {
                "queued"
            });
            h.pid.push(x.pid);
            h.comm.push(x.comm.to_string());
            h.state.push(x.state.as_str());
            h.flags.push(x.flags.to_string());
            h.caller.push(x.caller.to_string());
            h.error.push(x.error);
            h.line.push(x.line);
        }
    }

    fn frame(self) -> PolarsResult<DataFrame> {
        let mut c = self.snap.columns();
        c.extend([
            col("glock", self.glock),
            col("type", self.gltype),
            col("number", self.number),
            col("state", self.state),
            col("target", self.target),
            col("demote_state", self.demote_state),
            col("demote_us", self.demote_us),
            col("flags", self.flags),
            col("refs", self.refs),
            col("holders", self.holders),
            col("waiters", self.waiters),
            col("inode_size", self.inode_size),
            col("file_type", self.file_type),
        ]);
        DataFrame::new_infer_height(c)
    }
}

impl HolderCols {
    fn frame(self) -> PolarsResult<DataFrame> {
        let mut c = self.snap.columns();
        c.extend([
            col("glock", self.glock),
            col("type", self.gltype),
            col("role", self.role),
            col("pid", self.pid),
            col("comm", self.comm),
            col("state", self.state),
            col("flags", self.flags),
            col("caller", self.caller),
            col("error", self.error),
            col("line", self.line),
        ]);
        DataFrame::new_infer_height(c)
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
    srtt_ns: Vec<Option<i64>>,
    srttvar_ns: Vec<Option<i64>>,
    srttb_ns: Vec<Option<i64>>,
    srttvarb_ns: Vec<Option<i64>>,
    sirt_ns: Vec<Option<i64>>,
    sirtvar_ns: Vec<Option<i64>>,
    dcount: Vec<Option<i64>>,
    qcount: Vec<Option<i64>>,
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
            (None, Some(_)) | (None, None) => match std::str::from_utf8(line.event) {
                Ok(e) => self.event.push(e),
                Err(_) => self.event.push(&text(line.event)),
            },
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
        let (mut from, mut to, mut target, mut state, mut flags) = (None, None, None, None, None);
        let (mut remote, mut queue) = (None, None);
        let mut lt = None;
        let mut flags_text: Option<String> = None;
        match ev {
            Some(Gfs2Event::GlockStateChange {
                from: f,
                to: t,
                target: tg,
                flags: fl,
                ..
            }) => {
                (from, to, target, flags) = (
                    Some(f.as_str()),
                    Some(t.as_str()),
                    Some(tg.as_str()),
                    Some(*fl),
                );
            }
            Some(Gfs2Event::DemoteRq {
                from: f,
                to: t,
                flags: fl,
                remote: r,
                ..
            }) => {
                (from, to, flags, remote) = (Some(f.as_str()), Some(t.as_str()), Some(*fl), *r);
            }
            Some(Gfs2Event::GlockPut {
                state: st,
                flags: fl,
                ..
            }) => {
                (state, flags) = (Some(st.as_str()), Some(*fl));
            }
            Some(Gfs2Event::Promote { state: st, .. }) => state = Some(st.as_str()),
            Some(Gfs2Event::GlockQueue {
                queue: q,
                state: st,
                ..
            }) => {
                (state, queue) = (Some(st.as_str()), Some(*q));
            }
            Some(Gfs2Event::GlockLockTime(l)) => lt = Some(*l),
            _ => {}
        }
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
        self.srtt_ns.push(lt.map(|l| l.srtt));
        self.srttvar_ns.push(lt.map(|l| l.srttvar));
        self.srttb_ns.push(lt.map(|l| l.srttb));
        self.srttvarb_ns.push(lt.map(|l| l.srttvarb));
        self.sirt_ns.push(lt.map(|l| l.sirt));
        self.sirtvar_ns.push(lt.map(|l| l.sirtvar));
        self.dcount.push(lt.map(|l| l.dcount));
        self.qcount.push(lt.map(|l| l.qcount));
        match std::str::from_utf8(line.body) {
            Ok(b) => self.body.push(b),
            Err(_) => self.body.push(&text(line.body)),
        }
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ns.is_empty()
    }

    /// The frame, in the documented `events` schema.
    pub fn frame(self) -> PolarsResult<DataFrame> {
        DataFrame::new_infer_height(vec![
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
            col("srtt_ns", self.srtt_ns),
            col("srttvar_ns", self.srttvar_ns),
            col("srttb_ns", self.srttb_ns),
            col("srttvarb_ns", self.srttvarb_ns),
            col("sirt_ns", self.sirt_ns),
            col("sirtvar_ns", self.sirtvar_ns),
            col("dcount", self.dcount),
            col("qcount", self.qcount),
            col("ls_id", self.ls_id),
            col("lkb_id", self.lkb_id),
            col("mode", self.mode),
            col("msg_type", self.msg_type),
            col("src_node", self.src_node),
            col("dst_node", self.dst_node),
            col("seq", self.seq),
            self.body.column("body"),
        ])
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

fn read_trace(
    path: &std::path::Path,
    node: &str,
    ev: &mut EventCols,
    diag: &mut Diagnostics,
) -> io::Result<()> {
    traceparse::reader::for_each_decoded(path, diag, |d| {
        ev.push(node, &d);
        true
    })
    .map(drop)
}

/// Reads every file of every node into frames.
pub fn load(caps: &Captures) -> io::Result<Frames> {
    load_with(caps, true)
}

/// Reads the snapshots of every node into frames, leaving the events frame empty: the
/// analyses read traces in one pass of their own ([`crate::analyze::trace`]).
pub fn load_snapshots(caps: &Captures) -> io::Result<Frames> {
    load_with(caps, false)
}

fn load_with(caps: &Captures, traces: bool) -> io::Result<Frames> {
    let mut c = Cols::default();
    let mut diag = Diagnostics::default();
    for n in &caps.nodes {
        load_node(n, &mut c, &mut diag)?;
        for t in n.traces.iter().filter(|_| traces) {
            read_trace(t, &n.node, &mut c.events, &mut diag)?;
        }
    }
    Ok(Frames {
        glocks: c.glocks.frame().map_err(to_polars)?,
        holders: c.holders.frame().map_err(to_polars)?,
        events: c.events.frame().map_err(to_polars)?,
        glstats: c.glstats.frame().map_err(to_polars)?,
        sbstats: c.sbstats.frame().map_err(to_polars)?,
        dlm_locks: c.dlm.frame().map_err(to_polars)?,
        diagnostics: diag,
    })
}

/// The column builders of every frame.
#[derive(Default)]
struct Cols {
    glocks: GlockCols,
    holders: HolderCols,
    events: EventCols,
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
    fn push(&mut self, node: &str, s: &Snapshot) {
        self.node.push(node.to_string());
        self.snapshot.push(s.index);
        self.time_unix.push(s.time_unix);
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
    /// srtt, srttvar, srttb, srttvarb, sirt, sirtvar, dcount, qcount.
    values: [Vec<i64>; 8],
}

impl GlStatCols {
    fn frame(self) -> PolarsResult<DataFrame> {
        let mut c = self.snap.columns();
        c.push(col("glock", self.glock));
        c.push(col("type", self.gltype));
        for (name, v) in STAT_COLUMNS.into_iter().zip(self.values) {
            c.push(col(name, v));
        }
        DataFrame::new_infer_height(c)
    }
}

#[derive(Default)]
struct SbStatCols {
    snap: SnapCols,
    gltype: Vec<String>,
    cpu: Vec<u32>,
    stat: Vec<&'static str>,
    value: Vec<i64>,
}

impl SbStatCols {
    fn frame(self) -> PolarsResult<DataFrame> {
        let mut c = self.snap.columns();
        c.push(col("type", self.gltype));
        c.push(col("cpu", self.cpu));
        c.push(col("stat", self.stat));
        c.push(col("value", self.value));
        DataFrame::new_infer_height(c)
    }
}

#[derive(Default)]
struct DlmCols {
    snap: SnapCols,
    glock: Vec<Option<String>>,
    gltype: Vec<Option<String>>,
    resource: Vec<String>,
    lkid: Vec<u64>,
    nodeid: Vec<u64>,
    owner_nodeid: Vec<Option<u64>>,
    master_nodeid: Vec<u64>,
    master_copy: Vec<bool>,
    pid: Vec<u64>,
    status: Vec<String>,
    grmode: Vec<Option<&'static str>>,
    rqmode: Vec<Option<&'static str>>,
    age_us: Vec<u64>,
    line: Vec<u64>,
}

impl DlmCols {
    fn push(
        &mut self,
        node: &str,
        local_nodeid: Option<u64>,
        s: &Snapshot,
        l: &dlm_locks::DlmLock,
    ) {
        self.snap.push(node, s);
        self.glock.push(l.glock.map(|g| g.to_string()));
        self.gltype
            .push(l.glock.map(|g| g.glock_type().name().into_owned()));
        self.owner_nodeid.push(if l.is_master_copy() {
            Some(l.nodeid)
        } else {
            local_nodeid
        });
        self.resource.push(l.resource.clone());
        self.lkid.push(l.id);
        self.nodeid.push(l.nodeid);
        self.master_nodeid.push(l.master_nodeid);
        self.master_copy.push(l.is_master_copy());
        self.pid.push(l.pid);
        self.status.push(l.status.name());
        let named = |m: DlmMode| (m != DlmMode::IV).then(|| m.as_str());
        self.grmode.push(named(l.grmode));
        self.rqmode.push(named(l.rqmode));
        self.age_us.push(l.age_us);
        self.line.push(l.line);
    }

    fn frame(self) -> PolarsResult<DataFrame> {
        let mut c = self.snap.columns();
        c.extend([
            col("glock", self.glock),
            col("type", self.gltype),
            col("resource", self.resource),
            col("lkid", self.lkid),
            col("nodeid", self.nodeid),
            col("owner_nodeid", self.owner_nodeid),
            col("master_nodeid", self.master_nodeid),
            col("master_copy", self.master_copy),
            col("pid", self.pid),
            col("status", self.status),
            col("grmode", self.grmode),
            col("rqmode", self.rqmode),
            col("age_us", self.age_us),
            col("line", self.line),
        ]);
        DataFrame::new_infer_height(c)
    }
}

fn load_node(n: &NodeCapture, c: &mut Cols, diag: &mut Diagnostics) -> io::Result<()> {
    for s in &n.snapshots {
        if let Some(p) = &s.glocks {
            let mut r = GlockReader::open(p)?;
            let mut g = Glock::default();
            while r.next_into(&mut g) {
                c.glocks.push(&n.node, s, &g, &mut c.holders);
            }
            diag.merge(r.diagnostics());
        }
        if let Some(p) = &s.glstats {
            let (v, d) = gfs2stats::glstats::read_path(p)?;
            diag.merge(&d);
            for x in v {
                c.glstats.snap.push(&n.node, s);
                c.glstats.glock.push(x.glock.to_string());
                c.glstats
                    .gltype
                    .push(x.glock.glock_type().name().into_owned());
                let vals = [
                    x.srtt, x.srttvar, x.srttb, x.srttvarb, x.sirt, x.sirtvar, x.dcount, x.qcount,
                ];
                for (col, v) in c.glstats.values.iter_mut().zip(vals) {
                    col.push(v);
                }
            }
        }
        if let Some(p) = &s.sbstats {
            let (v, d) = gfs2stats::sbstats::read_path(p)?;
            diag.merge(&d);
            for (t, ts) in &v.types {
                for stat in gfs2stats::Stat::ALL {
                    for (i, val) in ts.get(stat).iter().enumerate() {
                        c.sbstats.snap.push(&n.node, s);
                        c.sbstats.gltype.push(t.name().into_owned());
                        c.sbstats
                            .cpu
                            .push(v.cpus.get(i).copied().unwrap_or(i as u32));
                        c.sbstats.stat.push(stat.name());
                        c.sbstats.value.push(*val);
                    }
                }
            }
        }
        if let Some(p) = &s.dlm_locks {
            let (v, d) = dlm_locks::read(glockparse::input::open(p)?, &p.display().to_string());
            diag.merge(&d);
            for l in v {
                c.dlm.push(&n.node, n.nodeid, s, &l);
            }
        }
    }
    Ok(())
}
