//! Typed rows read back out of the snapshot frames, for the analyses that join holders and
//! DLM locks.

use polars::prelude::*;

use crate::build::Frames;

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
    /// The resource's master (0: the node whose dump this is).
    pub master_nodeid: u64,
    /// Microseconds in its current queue (how long a waiting lock has waited).
    pub age_us: u64,
    /// Its line in the dump.
    pub line: u64,
}

fn strs<'a>(df: &'a DataFrame, name: &str) -> PolarsResult<Vec<Option<&'a str>>> {
    Ok(df.column(name)?.str()?.iter().collect())
}

fn owned(v: Option<&str>) -> Option<String> {
    v.map(str::to_string)
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
    let master: Vec<Option<u64>> = df.column("master_nodeid")?.u64()?.iter().collect();
    let age: Vec<Option<u64>> = df.column("age_us")?.u64()?.iter().collect();
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
                master_nodeid: master[i]?,
                age_us: age[i].unwrap_or(0),
                line: line[i].unwrap_or(0),
            })
        })
        .collect())
}
