//! `glk fleet`: questions over a fleet dataset (`glk export --dataset`), each one lazy
//! polars query over the dataset's Parquet files, run by polars' streaming engine one
//! cluster at a time: files are read in pieces, only the columns and rows a query needs,
//! so memory grows with one cluster's files, not with the rows (`bench fleet` measures it
//! at 10^8 events).
//!
//! - `hot`: glocks hot across captures, by cluster and filesystem (and node or kernel);
//! - `masters`: DLM round trips by the node that mastered the resource, per day or week;
//! - `storms`: glocks that had a demote storm in several captures, and which captures.
//!
//! A glock is known by its cluster, filesystem (`fs`, the lock table the capture names; null
//! where it does not) and number: glock numbers repeat between filesystems.

use std::io;
use std::path::{Path, PathBuf};

use clikit::args::{FleetArgs, FleetBy, FleetCommon, FleetPeriod, FleetQuery};
use polars::prelude::*;

/// Answers the question of `a` and prints the rows.
pub fn run(a: &FleetArgs) -> io::Result<()> {
    let t = std::time::Instant::now();
    let (common, order) = match &a.query {
        FleetQuery::Hot { common, .. } => (common, HOT_ORDER.as_slice()),
        FleetQuery::Masters { common, .. } => (common, MASTERS_ORDER.as_slice()),
        FleetQuery::Storms { common, .. } => (common, STORMS_ORDER.as_slice()),
    };
    let fleet = Dataset::open(common)?;
    // One cluster at a time: every question groups by cluster, so the answers of the
    // clusters together are the answer over the fleet, and a query holds at most one
    // cluster's files open (polars keeps each scanned file's metadata to the end).
    let mut parts = Vec::new();
    let mut lacking = None;
    for cluster in fleet.clusters()? {
        let d = fleet.only(&cluster);
        if let Some(why) = d.lacks(&a.query) {
            lacking = Some(why);
            continue;
        }
        let query = match &a.query {
            FleetQuery::Hot { by, .. } => hot(&d, *by)?,
            FleetQuery::Masters { period, .. } => masters(&d, *period)?,
            FleetQuery::Storms { min_demotes, .. } => storms(&d, *min_demotes)?,
        };
        parts.push(
            query
                .sort(order.to_vec(), descending(order))
                .limit(common.limit)
                .collect_with_engine(Engine::Streaming)
                .map(|r| r.unwrap_single().lazy())
                .map_err(polars_err)?,
        );
    }
    if parts.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{}: {}",
                fleet.dir.display(),
                lacking.unwrap_or_else(|| "the dataset has no cluster yet".into())
            ),
        ));
    }
    let df = concat(parts, UnionArgs::default())
        .and_then(|all| {
            all.sort(order.to_vec(), descending(order))
                .limit(common.limit)
                .collect()
        })
        .map_err(polars_err)?;
    let rows = Rows::of(&df)?;
    let mut out = io::stdout().lock();
    if common.json {
        rows.write_json(&mut out)?;
    } else {
        rows.write_table(&mut out)?;
    }
    eprintln!(
        "glk: {} rows in {:.2}s",
        df.height(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The order of each question's rows: most captures, then most demotes, then most
/// snapshots with waiters.
const HOT_ORDER: [&str; 3] = ["captures", "remote_demotes", "snapshots_with_waiters"];
/// Slowest first: by the 99th percentile, then the mean.
const MASTERS_ORDER: [&str; 2] = ["p99_ms", "mean_ms"];
/// Most captures, then most storm demotes.
const STORMS_ORDER: [&str; 2] = ["captures", "storm_demotes"];

fn polars_err(e: PolarsError) -> io::Error {
    io::Error::other(e.to_string())
}

/// A fleet dataset, checked against the version this glk writes; or one cluster of it.
#[derive(Clone)]
struct Dataset {
    dir: PathBuf,
    /// The clusters asked for (`--cluster`; none: all).
    wanted: Vec<String>,
    /// The one cluster queries read ([`Dataset::only`]): its name, and its directories'
    /// name (`cluster=…`).
    cluster: Option<(String, String)>,
}

impl Dataset {
    /// The dataset of `c`: its manifest must name glk's format and this version.
    fn open(c: &FleetCommon) -> io::Result<Dataset> {
        let path = c.dataset.join(frames::export::MANIFEST);
        let text = std::fs::read(&path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "{}: {e} (a fleet dataset is the DIR of glk export --dataset DIR)",
                    path.display()
                ),
            )
        })?;
        let doc: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a glk dataset manifest: {e}", path.display()),
            )
        })?;
        let version = doc["version"].as_u64();
        if doc["format"] != "glk-dataset" || version != Some(frames::export::DATASET_VERSION.into())
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: a dataset of format {} version {}; this glk reads glk-dataset version {}",
                    path.display(),
                    doc["format"],
                    version.map_or_else(|| "?".into(), |v| v.to_string()),
                    frames::export::DATASET_VERSION
                ),
            ));
        }
        // An absolute local path: polars would read `s3://…`-like names from the network.
        let dir = std::fs::canonicalize(&c.dataset)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", c.dataset.display())))?;
        Ok(Dataset {
            dir,
            wanted: c.cluster.clone(),
            cluster: None,
        })
    }

    /// The clusters of the dataset (those asked for), by name.
    fn clusters(&self) -> io::Result<Vec<(String, String)>> {
        let mut found = std::collections::BTreeMap::new();
        for table in frames::KINDS {
            let dir = self.dir.join(format!("table={table}"));
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let dir_name = e.file_name().to_string_lossy().into_owned();
                if let Some(enc) = dir_name.strip_prefix("cluster=") {
                    found.insert(frames::export::partition_name(enc), dir_name.clone());
                }
            }
        }
        if let Some(missing) = self.wanted.iter().find(|w| !found.contains_key(*w)) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: no cluster {} in this dataset (it has {})",
                    self.dir.display(),
                    glockparse::quote::quote(missing.as_bytes(), 100),
                    found
                        .keys()
                        .map(|k| glockparse::quote::quote(k.as_bytes(), 100))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(found
            .into_iter()
            .filter(|(name, _)| self.wanted.is_empty() || self.wanted.contains(name))
            .collect())
    }

    /// The dataset's cluster `c` (from [`Dataset::clusters`]) alone.
    fn only(&self, c: &(String, String)) -> Dataset {
        Dataset {
            cluster: Some(c.clone()),
            ..self.clone()
        }
    }

    /// Whether table `table` has a file yet (of the one cluster, when there is one).
    fn has(&self, table: &str) -> bool {
        fn any_parquet(d: &Path, depth: u32) -> bool {
            std::fs::read_dir(d).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    let p = e.path();
                    if depth > 0 && p.is_dir() {
                        any_parquet(&p, depth - 1)
                    } else {
                        p.extension().is_some_and(|x| x == "parquet")
                    }
                })
            })
        }
        let dir = self.dir.join(format!("table={table}"));
        match &self.cluster {
            Some((_, dir_name)) => any_parquet(&dir.join(dir_name), 1),
            None => any_parquet(&dir, 2),
        }
    }

    /// What the cluster lacks for question `q`, when it lacks something.
    fn lacks(&self, q: &FleetQuery) -> Option<String> {
        let name = self.cluster.as_ref().map_or("", |(n, _)| n.as_str());
        let name = glockparse::quote::quote(name.as_bytes(), 100);
        let no_trace = || {
            format!("cluster {name}: no trace events (captures with a trace: glk capture --trace)")
        };
        match q {
            FleetQuery::Hot { .. } => (!self.has("events") && !self.has("glocks"))
                .then(|| format!("cluster {name}: neither trace events nor glocks snapshots")),
            FleetQuery::Storms { .. } => (!self.has("events")).then(no_trace),
            FleetQuery::Masters { .. } => {
                if !self.has("events") {
                    Some(no_trace())
                } else if !self.has("dlm_locks") || !self.has("nodes") {
                    Some(format!(
                        "cluster {name}: no DLM lock dumps, which name each resource's master"
                    ))
                } else {
                    None
                }
            }
        }
    }

    /// A lazy scan of table `table` with its partitions, `cluster` and `node`, as strings;
    /// only the one cluster's files are read, when there is one.
    fn scan(&self, table: &str) -> io::Result<LazyFrame> {
        let partitions: Schema = [
            Field::new("cluster".into(), DataType::String),
            Field::new("node".into(), DataType::String),
        ]
        .into_iter()
        .collect();
        let args = ScanArgsParquet {
            hive_options: HiveOptions {
                enabled: Some(true),
                hive_start_idx: 0,
                schema: Some(Arc::new(partitions)),
                try_parse_dates: false,
            },
            // The directory is walked, never read as a glob pattern.
            glob: false,
            ..ScanArgsParquet::default()
        };
        let dir = self.dir.join(format!("table={table}"));
        let dir = dir.to_str().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a UTF-8 path", dir.display()),
            )
        })?;
        let lf = LazyFrame::scan_parquet(PlRefPath::new(dir), args).map_err(polars_err)?;
        // A predicate on a partition: polars skips the other clusters' files unread.
        Ok(match &self.cluster {
            Some((name, _)) => lf.filter(col("cluster").eq(lit(name.as_str()))),
            None => lf,
        })
    }

    /// One column of the `nodes` table (`kernel`, `time_unix`...) for each node of each
    /// capture, with the keys that join it: cluster, node, capture.
    fn per_node(&self, column: &str) -> io::Result<LazyFrame> {
        Ok(self
            .scan("nodes")?
            .select([col("cluster"), col("node"), col("capture"), col(column)]))
    }
}

/// How many whole `by` there are in `x` (both at least 0): integer division, which
/// polars' `floor_div` would do with a feature that rebuilds it.
fn whole(x: Expr, by: i64) -> Expr {
    (x.cast(DataType::Float64) / lit(by as f64)).cast(DataType::Int64)
}

fn keys(names: &[&str]) -> Vec<Expr> {
    names.iter().map(|n| col(*n)).collect()
}

/// Descending on every column of `by`.
fn descending(by: &[&str]) -> SortMultipleOptions {
    SortMultipleOptions::default()
        .with_order_descending_multi(vec![true; by.len()])
        .with_nulls_last(true)
        .with_maintain_order(true)
}

/// The columns that place a row's glock: the cluster, filesystem, node and capture it was
/// seen in, the glock and its type.
const GLOCK_SEEN: [&str; 6] = ["cluster", "fs", "node", "capture", "glock", "type"];

/// The remote demote requests of the traces (`demote_rq` with `remote`).
fn remote_demotes(d: &Dataset) -> io::Result<LazyFrame> {
    let mut columns = keys(&GLOCK_SEEN);
    columns.push(col("ts_ns"));
    Ok(d.scan("events")?
        .filter(
            col("event")
                .eq(lit("demote_rq"))
                .and(col("remote").eq(lit(true))),
        )
        .select(columns))
}

/// `hot`: per cluster, filesystem and glock (and node or kernel), the captures in which
/// other nodes asked for it (remote demote requests) or in which a snapshot saw it with
/// waiters, the glocks hot in the most captures first.
fn hot(d: &Dataset, by: Option<FleetBy>) -> io::Result<LazyFrame> {
    // One row per remote demote and per snapshot with waiters, in one shape.
    let shape = |lf: LazyFrame, demote: bool| {
        let mut columns = keys(&GLOCK_SEEN);
        columns.extend([
            lit(u32::from(demote)).alias("demote"),
            if demote {
                lit(NULL).cast(DataType::UInt32).alias("waiters")
            } else {
                col("waiters").cast(DataType::UInt32)
            },
        ]);
        lf.select(columns)
    };
    let mut parts = Vec::new();
    if d.has("events") {
        parts.push(shape(remote_demotes(d)?, true));
    }
    if d.has("glocks") {
        parts.push(shape(
            d.scan("glocks")?.filter(col("waiters").gt(lit(0))),
            false,
        ));
    }
    let extra = match by {
        None => None,
        Some(FleetBy::Node) => Some("node"),
        Some(FleetBy::Kernel) => Some("kernel"),
    };
    let group: Vec<&str> = ["cluster", "fs"]
        .into_iter()
        .chain(extra)
        .chain(["glock"])
        .collect();
    let on = keys(&["cluster", "node", "capture"]);
    let kernels = d.per_node("kernel")?;
    let mut aggs = vec![
        col("type").first(),
        col("capture").n_unique().alias("captures"),
        col("demote").sum().alias("remote_demotes"),
        col("waiters").count().alias("snapshots_with_waiters"),
        col("waiters")
            .max()
            .fill_null(lit(0u32))
            .alias("most_waiters"),
    ];
    if extra != Some("node") {
        aggs.push(
            col("node")
                .unique()
                .sort(SortOptions::default())
                .alias("nodes"),
        );
    }
    if extra != Some("kernel") {
        aggs.push(
            col("kernel")
                .drop_nulls()
                .unique()
                .sort(SortOptions::default())
                .alias("kernels"),
        );
    }
    Ok(concat(parts, UnionArgs::default())
        .map_err(polars_err)?
        .join(kernels, on.clone(), on, JoinArgs::new(JoinType::Left))
        .group_by(keys(&group))
        .agg(aggs))
}

/// `masters`: per cluster, master node and period, the DLM round trips (`lock_time`
/// events' `tdiff`) of gfs2 lock requests whose resource another node mastered, slowest
/// (99th percentile) first.
fn masters(d: &Dataset, period: FleetPeriod) -> io::Result<LazyFrame> {
    let nodes = d.per_node("time_unix")?;
    let by_capture = ["cluster", "node", "capture"];
    // Who mastered each glock's resource, as each node's DLM dump of that capture saw it
    // (0 in a dump: the node itself).
    let mastered = d
        .scan("dlm_locks")?
        .filter(col("glock").is_not_null())
        .group_by(keys(&["cluster", "node", "capture", "glock"]))
        // The same in every dump unless recovery moved it; max() keeps the answer the same
        // from run to run.
        .agg([col("master_nodeid").max()]);
    let secs = match period {
        FleetPeriod::Day => 86_400i64,
        FleetPeriod::Week => 7 * 86_400,
    };
    // Weeks start on Monday: 1970-01-01 was a Thursday, three days after one.
    let shift = match period {
        FleetPeriod::Day => 0i64,
        FleetPeriod::Week => 3 * 86_400,
    };
    let on = keys(&by_capture);
    let glock_on = keys(&["cluster", "node", "capture", "glock"]);
    Ok(d.scan("events")?
        .filter(
            col("event")
                .eq(lit("glock_lock_time"))
                .and(col("tdiff_ns").is_not_null()),
        )
        .select([
            col("cluster"),
            col("node"),
            col("capture"),
            col("glock"),
            col("tdiff_ns"),
        ])
        .join(
            mastered,
            glock_on.clone(),
            glock_on,
            JoinArgs::new(JoinType::Inner),
        )
        // 0: the node mastered the resource itself; its requests made no round trip.
        .filter(col("master_nodeid").neq(lit(0u64)))
        .join(nodes, on.clone(), on, JoinArgs::new(JoinType::Left))
        .with_columns([
            col("master_nodeid").alias("master"),
            (whole(col("time_unix") + lit(shift as f64), secs) * lit(secs) - lit(shift))
                .alias("period_start"),
        ])
        .group_by(keys(&["cluster", "master", "period_start"]))
        .agg([
            len().alias("requests"),
            col("node").n_unique().alias("requesters"),
            col("capture").n_unique().alias("captures"),
            (col("tdiff_ns").cast(DataType::Float64).mean() / lit(1e6)).alias("mean_ms"),
            (col("tdiff_ns")
                .cast(DataType::Float64)
                .quantile(lit(0.5), QuantileMethod::Linear)
                / lit(1e6))
            .alias("p50_ms"),
            (col("tdiff_ns")
                .cast(DataType::Float64)
                .quantile(lit(0.99), QuantileMethod::Linear)
                / lit(1e6))
            .alias("p99_ms"),
            (col("tdiff_ns").max().cast(DataType::Float64) / lit(1e6)).alias("max_ms"),
        ]))
}

/// `storms`: per cluster, filesystem and glock, the captures in which it had a demote storm
/// (at least `min_demotes` remote demote requests within one second of one node's trace
/// clock), the glocks that stormed in the most captures first.
fn storms(d: &Dataset, min_demotes: u32) -> io::Result<LazyFrame> {
    let storm_keys = [
        "cluster", "fs", "capture", "node", "glock", "type", "second",
    ];
    Ok(remote_demotes(d)?
        .with_column(whole(col("ts_ns"), 1_000_000_000).alias("second"))
        .group_by(keys(&storm_keys))
        .agg([len().alias("demotes")])
        .filter(col("demotes").gt_eq(lit(min_demotes)))
        .group_by(keys(&["cluster", "fs", "glock", "type"]))
        .agg([
            col("capture").n_unique().alias("captures"),
            col("node").n_unique().alias("nodes"),
            len().alias("storm_seconds"),
            col("demotes").sum().alias("storm_demotes"),
            col("demotes").max().alias("peak_per_second"),
            col("capture")
                .unique()
                .sort(SortOptions::default())
                .alias("capture_ids"),
        ]))
}

/// A result's rows as JSON values, for both outputs.
struct Rows {
    names: Vec<String>,
    rows: Vec<Vec<serde_json::Value>>,
}

impl Rows {
    fn of(df: &DataFrame) -> io::Result<Rows> {
        let names: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        let mut rows = Vec::with_capacity(df.height());
        for i in 0..df.height() {
            let row = df
                .columns()
                .iter()
                .map(|c| {
                    let v = c.get(i).map_err(polars_err)?;
                    Ok(match (c.name().as_str(), v.extract::<i64>()) {
                        // Periods print as the day they start (UTC).
                        ("period_start", Some(secs)) => day(secs).into(),
                        _ => json(&v),
                    })
                })
                .collect::<io::Result<Vec<_>>>()?;
            rows.push(row);
        }
        Ok(Rows { names, rows })
    }

    fn write_json(&self, out: &mut impl io::Write) -> io::Result<()> {
        for r in &self.rows {
            let obj: serde_json::Map<String, serde_json::Value> =
                self.names.iter().cloned().zip(r.iter().cloned()).collect();
            writeln!(out, "{}", serde_json::Value::Object(obj))?;
        }
        Ok(())
    }

    /// Aligned columns; lists as their values joined by commas; text quoted where it holds
    /// control characters.
    fn write_table(&self, out: &mut impl io::Write) -> io::Result<()> {
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(cell).collect())
            .collect();
        let widths: Vec<usize> = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                cells
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([n.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |out: &mut dyn io::Write, vals: &[String]| -> io::Result<()> {
            let mut s = String::new();
            for (i, (v, w)) in vals.iter().zip(&widths).enumerate() {
                if i + 1 == vals.len() {
                    s.push_str(v);
                } else {
                    s.push_str(&format!("{v:<w$}  "));
                }
            }
            writeln!(out, "{}", s.trim_end())
        };
        line(out, &self.names)?;
        for r in &cells {
            line(out, r)?;
        }
        Ok(())
    }
}

/// The UTC day `secs` after the epoch falls on: `2026-11-23`.
fn day(secs: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    clikit::fmt::utc(at).chars().take(10).collect()
}

/// A cell's value as JSON.
fn json(v: &AnyValue<'_>) -> serde_json::Value {
    use serde_json::Value;
    match v {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::from(*b),
        AnyValue::String(s) => Value::from(*s),
        AnyValue::StringOwned(s) => Value::from(s.as_str()),
        AnyValue::List(s) => Value::Array(s.iter().map(|v| json(&v)).collect()),
        AnyValue::Float32(f) => round(f64::from(*f)),
        AnyValue::Float64(f) => round(*f),
        v => match v.extract::<i64>() {
            Some(i) => Value::from(i),
            None => v
                .extract::<u64>()
                .map_or_else(|| Value::from(v.to_string()), Value::from),
        },
    }
}

/// Milliseconds to the microsecond.
fn round(f: f64) -> serde_json::Value {
    serde_json::Number::from_f64((f * 1e3).round() / 1e3)
        .map_or(serde_json::Value::Null, Into::into)
}

/// A value as a table cell.
fn cell(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "-".into(),
        Value::String(s) => glockparse::quote::quote(s.as_bytes(), 200),
        Value::Array(a) => a.iter().map(cell).collect::<Vec<_>>().join(","),
        v => v.to_string(),
    }
}
