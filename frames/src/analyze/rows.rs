//! Typed rows read back out of the frames, for the analyses that walk events in order.

use polars::prelude::*;

use crate::build::Frames;

/// One locking event.
#[derive(Debug, Clone)]
pub struct Ev {
    pub node: String,
    pub ts_ns: u64,
    pub pid: i64,
    pub event: String,
    pub glock: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub state: Option<String>,
    pub flags: Option<String>,
    pub remote: Option<bool>,
    pub queue: Option<bool>,
    pub lock_time: Option<[i64; 10]>,
}

/// One holder line of a snapshot.
#[derive(Debug, Clone)]
pub struct Hold {
    pub node: String,
    pub snapshot: u32,
    pub glock: String,
    pub role: String,
    pub pid: i64,
    pub comm: String,
    pub state: String,
    pub caller: String,
    /// Its `H:` line in the glocks file.
    pub line: u64,
}

/// One DLM lock of a snapshot.
#[derive(Debug, Clone)]
pub struct Dlm {
    pub node: String,
    pub snapshot: u32,
    pub glock: String,
    pub owner_nodeid: Option<u64>,
    pub pid: u64,
    pub status: String,
    pub grmode: Option<String>,
    pub rqmode: Option<String>,
    /// Its line in the dump.
    pub line: u64,
}

fn strs<'a>(df: &'a DataFrame, name: &str) -> PolarsResult<Vec<Option<&'a str>>> {
    Ok(df.column(name)?.str()?.iter().collect())
}

fn owned(v: Option<&str>) -> Option<String> {
    v.map(str::to_string)
}

/// The locking events (those with a glock), per node in trace order.
pub fn events(f: &Frames) -> PolarsResult<Vec<Ev>> {
    let df = &f.events;
    let node = strs(df, "node")?;
    let glock = strs(df, "glock")?;
    let event = strs(df, "event")?;
    let from = strs(df, "from")?;
    let to = strs(df, "to")?;
    let state = strs(df, "state")?;
    let flags = strs(df, "flags")?;
    let ts: Vec<Option<u64>> = df.column("ts_ns")?.u64()?.iter().collect();
    let pid: Vec<Option<i64>> = df.column("pid")?.i64()?.iter().collect();
    let remote: Vec<Option<bool>> = df.column("remote")?.bool()?.iter().collect();
    let queue: Vec<Option<bool>> = df.column("queue")?.bool()?.iter().collect();
    let lt_cols = ["status", "tdiff_ns"]
        .into_iter()
        .chain(crate::build::STAT_COLUMNS);
    let mut lt: Vec<Vec<Option<i64>>> = Vec::new();
    for c in lt_cols {
        lt.push(df.column(c)?.i64()?.iter().collect());
    }
    debug_assert_eq!(lt.len(), 10);
    let mut out = Vec::new();
    for i in 0..df.height() {
        let Some(g) = glock[i] else { continue };
        let lock_time = match lt[1][i] {
            Some(_) => {
                let mut a = [0i64; 10];
                for (k, col) in lt.iter().enumerate() {
                    a[k] = col[i].unwrap_or(0);
                }
                Some(a)
            }
            None => None,
        };
        out.push(Ev {
            node: node[i].unwrap_or("").to_string(),
            ts_ns: ts[i].unwrap_or(0),
            pid: pid[i].unwrap_or(0),
            event: event[i].unwrap_or("").to_string(),
            glock: g.to_string(),
            from: owned(from[i]),
            to: owned(to[i]),
            state: owned(state[i]),
            flags: owned(flags[i]),
            remote: remote[i],
            queue: queue[i],
            lock_time,
        });
    }
    Ok(out)
}

pub fn holders(f: &Frames) -> PolarsResult<Vec<Hold>> {
    let df = &f.holders;
    let node = strs(df, "node")?;
    let glock = strs(df, "glock")?;
    let role = strs(df, "role")?;
    let comm = strs(df, "comm")?;
    let state = strs(df, "state")?;
    let caller = strs(df, "caller")?;
    let snap: Vec<Option<u32>> = df.column("snapshot")?.u32()?.iter().collect();
    let pid: Vec<Option<i64>> = df.column("pid")?.i64()?.iter().collect();
    let line: Vec<Option<u64>> = df.column("line")?.u64()?.iter().collect();
    Ok((0..df.height())
        .map(|i| Hold {
            node: node[i].unwrap_or("").to_string(),
            snapshot: snap[i].unwrap_or(0),
            glock: glock[i].unwrap_or("").to_string(),
            role: role[i].unwrap_or("").to_string(),
            pid: pid[i].unwrap_or(0),
            comm: comm[i].unwrap_or("").to_string(),
            state: state[i].unwrap_or("").to_string(),
            caller: caller[i].unwrap_or("").to_string(),
            line: line[i].unwrap_or(0),
        })
        .collect())
}

pub fn dlm(f: &Frames) -> PolarsResult<Vec<Dlm>> {
    let df = &f.dlm_locks;
    let node = strs(df, "node")?;
    let glock = strs(df, "glock")?;
    let status = strs(df, "status")?;
    let gr = strs(df, "grmode")?;
    let rq = strs(df, "rqmode")?;
    let snap: Vec<Option<u32>> = df.column("snapshot")?.u32()?.iter().collect();
    let owner: Vec<Option<u64>> = df.column("owner_nodeid")?.u64()?.iter().collect();
    let pid: Vec<Option<u64>> = df.column("pid")?.u64()?.iter().collect();
    let line: Vec<Option<u64>> = df.column("line")?.u64()?.iter().collect();
    Ok((0..df.height())
        .filter_map(|i| {
            Some(Dlm {
                node: node[i]?.to_string(),
                snapshot: snap[i]?,
                glock: glock[i]?.to_string(),
                owner_nodeid: owner[i],
                pid: pid[i]?,
                status: status[i]?.to_string(),
                grmode: owned(gr[i]),
                rqmode: owned(rq[i]),
                line: line[i].unwrap_or(0),
            })
        })
        .collect())
}
