//! Parquet export: `DIR/kind=KIND/node=NODE/part-0.parquet`, Hive-partitioned so pandas,
//! polars, pyarrow, DuckDB, Spark and Trino read one node or the whole cluster as one
//! dataset. The partition columns (`kind`, `node`) live in the paths, not in the files.

use std::io;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::build::{Frames, KINDS};

use crate::parquet::Writer;
use bundle::atomic::AtomicFile;

/// Writes `df` as a zstd-compressed Parquet file with plain string columns (see
/// [`crate::parquet`]), atomically (see [`bundle::atomic`]); its `Int64` columns named in
/// `timestamps` (µs since the epoch) as timestamps.
pub fn write_parquet(df: &DataFrame, path: &Path, timestamps: &[&str]) -> io::Result<()> {
    let mut out = AtomicFile::create(path)?;
    let named = |e: PolarsError| io::Error::other(format!("{}: {e}", path.display()));
    let mut w = Writer::with_timestamps(out.file(), df.schema(), timestamps).map_err(named)?;
    w.write(df).map_err(named)?;
    w.finish().map_err(named)?;
    out.commit()
}

/// A Parquet file written one row group at a time, so memory holds one batch, not the
/// whole output; it appears under its name only when [`ParquetStream::finish`] succeeds.
pub struct ParquetStream {
    out: AtomicFile,
    /// Writes through a second handle on `out`'s temporary file.
    writer: Option<Writer<std::fs::File>>,
    rows: usize,
}

impl ParquetStream {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> io::Result<ParquetStream> {
        Ok(ParquetStream {
            out: AtomicFile::create(path)?,
            writer: None,
            rows: 0,
        })
    }

    /// Appends `df` as one or more row groups. Every batch must have the first's schema.
    pub fn write(&mut self, df: &DataFrame) -> io::Result<()> {
        let path = self.out.path().to_path_buf();
        let named = |e: PolarsError| io::Error::other(format!("{}: {e}", path.display()));
        if self.writer.is_none() {
            let f = self.out.file().try_clone()?;
            self.writer = Some(Writer::new(f, df.schema()).map_err(named)?);
        }
        if let Some(w) = &mut self.writer {
            w.write(df).map_err(named)?;
        }
        self.rows += df.height();
        Ok(())
    }

    /// Writes the footer and renames the file into place. `empty` gives the schema of a
    /// file no batch was written to.
    pub fn finish(mut self, empty: impl FnOnce() -> PolarsResult<DataFrame>) -> io::Result<usize> {
        let path = self.out.path().to_path_buf();
        let named = |e: PolarsError| io::Error::other(format!("{}: {e}", path.display()));
        if self.writer.is_none() {
            self.write(&empty().map_err(named)?)?;
        }
        if let Some(w) = self.writer.take() {
            w.finish().map_err(named)?;
        }
        self.out.commit()?;
        Ok(self.rows)
    }
}

/// A partition value safe as a path component: every ASCII character other than letters,
/// digits and `-_.` as `%XX` (a superset of what Hive escapes: `/`, `=`, `%`, control
/// characters...), every other character as it is, as Hive leaves it. Readers (Spark,
/// DuckDB, pyarrow, polars) decode `%XX` back; a value is never mistaken for another.
fn partition_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if c.is_ascii() && !(c.is_ascii_alphanumeric() || "-_.".contains(c)) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The value a partition directory's name stands for: `partition_value` undone (`%XX`
/// back to its ASCII character; anything else as it is).
pub fn partition_name(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut rest = encoded;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(u8::is_ascii);
        match code {
            Some(c) => {
                out.push(char::from(c));
                rest = &rest[i + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// One written file.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The frame's kind.
    pub kind: &'static str,
    /// The node.
    pub node: String,
    /// Rows written.
    pub rows: usize,
    /// The file.
    pub path: PathBuf,
}

/// Writes every non-empty frame, split by node.
pub fn export(frames: &Frames, dir: &Path) -> io::Result<Vec<Written>> {
    let mut out = Vec::new();
    for kind in KINDS {
        let df = frames.get(kind).expect("known kind");
        if df.height() == 0 {
            continue;
        }
        for (node, part) in by_node(df)? {
            let d = dir
                .join(format!("kind={kind}"))
                .join(format!("node={}", partition_value(&node)));
            std::fs::create_dir_all(&d)?;
            let path = d.join("part-0.parquet");
            write_parquet(&part, &path, &[])?;
            out.push(Written {
                kind,
                node,
                rows: part.height(),
                path,
            });
        }
    }
    Ok(out)
}

/// The version of a dataset's layout and columns ([`dataset`]); a dataset written by
/// another version is refused, never mixed. Version 2 added the `nodes` table; version 3
/// the `fs` column.
pub const DATASET_VERSION: u32 = 3;

/// The file that says what a dataset holds: its format, version, partitions and each
/// table's columns with their types.
pub const MANIFEST: &str = "_glk_dataset.json";

/// One capture for [`dataset`]: the cluster it belongs to, its id, which names its files
/// (the same capture exported again replaces them), and its filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetCapture {
    /// The cluster's name.
    pub cluster: String,
    /// The capture's id (letters, digits, `-`).
    pub id: String,
    /// The lock table `CLUSTER:FS` of the GFS2 filesystem the capture is of, when it says:
    /// glock numbers repeat between filesystems, so a cluster's glocks are told apart by
    /// it.
    pub fs: Option<String>,
}

/// Adds every non-empty frame of one capture to the dataset at `dir`:
/// `DIR/table=KIND/cluster=CLUSTER/node=NODE/capture-ID.parquet`, Hive-partitioned so that
/// DuckDB, polars, pyarrow and Spark read every capture of the fleet as one table per kind.
/// Files of other captures are never rewritten; this capture's are replaced. Each file adds
/// to its frame's columns `capture` (the id), `fs` (the lock table, null where the capture
/// does not say) and, for snapshot frames, `time`: `time_unix` as a Parquet timestamp in
/// microseconds, UTC (`time_unix` keeps the seconds as recorded; events keep only `ts_ns`,
/// the node's trace clock, which is no wall time).
pub fn dataset(frames: &Frames, dir: &Path, capture: &DatasetCapture) -> io::Result<Vec<Written>> {
    let tables = KINDS
        .iter()
        .map(|kind| {
            let df = frames.get(kind).expect("known kind");
            Ok((
                *kind,
                with_dataset_columns(df, capture).map_err(io::Error::other)?,
            ))
        })
        .collect::<io::Result<Vec<(&str, DataFrame)>>>()?;
    // The manifest first: a dataset of other columns is refused before any file is written.
    std::fs::create_dir_all(dir)?;
    let manifest = Manifest::check(dir, &tables)?;
    let mut out = Vec::new();
    for (kind, df) in tables.iter().filter(|(_, df)| df.height() > 0) {
        for (node, part) in by_node(df)? {
            let d = dir
                .join(format!("table={kind}"))
                .join(format!("cluster={}", partition_value(&capture.cluster)))
                .join(format!("node={}", partition_value(&node)));
            std::fs::create_dir_all(&d)?;
            let path = d.join(format!("capture-{}.parquet", capture.id));
            write_parquet(&part, &path, &["time"])?;
            out.push(Written {
                kind,
                node,
                rows: part.height(),
                path,
            });
        }
    }
    manifest.write()?;
    Ok(out)
}

/// `df` with the dataset's columns: `capture`, `fs`, and `time` (µs since the epoch)
/// where the frame has `time_unix`.
fn with_dataset_columns(df: &DataFrame, capture: &DatasetCapture) -> PolarsResult<DataFrame> {
    let mut df = df.clone();
    let height = df.height();
    if let Ok(secs) = df.column("time_unix").and_then(|c| c.f64().cloned()) {
        let micros: Int64Chunked = secs
            .iter()
            .map(|s| s.map(|s| (s * 1e6).round() as i64))
            .collect();
        df.with_column(micros.with_name("time".into()).into_column())?;
    }
    let ids = StringChunked::full("capture".into(), &capture.id, height);
    df.with_column(ids.into_column())?;
    let fs: StringChunked = std::iter::repeat_n(capture.fs.as_deref(), height).collect();
    df.with_column(fs.with_name("fs".into()).into_column())?;
    Ok(df)
}

/// `df`'s rows per node, without the `node` column (a partition), in node order.
fn by_node(df: &DataFrame) -> io::Result<Vec<(String, DataFrame)>> {
    let err = |e: PolarsError| io::Error::other(e.to_string());
    let nodes = df.column("node").map_err(err)?.str().map_err(err)?.clone();
    let mut names: Vec<String> = nodes.iter().flatten().map(str::to_string).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|node| {
            let part = df
                .filter(&nodes.equal(node.as_str()))
                .and_then(|d| d.drop("node"))
                .map_err(err)?;
            Ok((node, part))
        })
        .collect()
}

/// A dataset's manifest ([`MANIFEST`]): its text for these tables, and whether the
/// dataset has it yet.
struct Manifest {
    path: PathBuf,
    text: String,
    exists: bool,
}

impl Manifest {
    /// The manifest of `tables` for the dataset at `dir`: an error when the dataset has one
    /// that says otherwise (another version or other columns), since a dataset never mixes
    /// files of two schemas.
    fn check(dir: &Path, tables: &[(&str, DataFrame)]) -> io::Result<Manifest> {
        let mut text = String::from("{\n  \"format\": \"glk-dataset\",\n");
        text.push_str(&format!("  \"version\": {DATASET_VERSION},\n"));
        text.push_str("  \"partitions\": [\"table\", \"cluster\", \"node\"],\n  \"tables\": {");
        for (i, (kind, df)) in tables.iter().enumerate() {
            let cols: Vec<String> = df
                .schema()
                .iter()
                .filter(|(name, _)| name.as_str() != "node")
                .map(|(name, dtype)| {
                    let ty = if name.as_str() == "time" {
                        "timestamp[us, UTC]".to_string()
                    } else {
                        dtype.to_string()
                    };
                    format!("[\"{name}\", \"{ty}\"]")
                })
                .collect();
            let sep = if i == 0 { "" } else { "," };
            text.push_str(&format!("{sep}\n    \"{kind}\": [{}]", cols.join(", ")));
        }
        text.push_str("\n  }\n}\n");
        let path = dir.join(MANIFEST);
        let exists = match std::fs::read_to_string(&path) {
            Ok(old) if old == text => true,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: this dataset was written with other columns (another glk \
                         version); write this capture to a new dataset",
                        path.display()
                    ),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        };
        Ok(Manifest { path, text, exists })
    }

    /// Writes the manifest where the dataset has none yet.
    fn write(&self) -> io::Result<()> {
        if self.exists {
            return Ok(());
        }
        let mut out = AtomicFile::create(&self.path)?;
        std::io::Write::write_all(out.file(), self.text.as_bytes())?;
        out.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::{partition_name as decode, partition_value};

    #[test]
    fn partition_values_are_path_components_that_decode_back() {
        let values = [
            "n1",
            "node-2.example_com",
            ")",
            "\u{129}", // ĩ: U+0129, whose low byte is that of ')'
            "a/b",
            "x=y",
            "100%",
            "tab\there",
            "nul\0",
            "..",
            "Ωμέγα",
            "emoji \u{1F600}",
        ];
        let encoded: Vec<String> = values.iter().map(|v| partition_value(v)).collect();
        for (v, e) in values.iter().zip(&encoded) {
            assert!(
                !e.contains('/') && !e.contains('\0') && !e.contains('='),
                "{v:?} -> {e:?}"
            );
            assert_eq!(&decode(e), v, "{v:?} -> {e:?}");
        }
        assert_eq!(partition_value(")"), "%29");
        assert_eq!(partition_value("\u{129}"), "\u{129}");
        let mut distinct = encoded.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), encoded.len(), "{encoded:?}");
    }
}
