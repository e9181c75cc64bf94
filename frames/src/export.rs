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
/// [`crate::parquet`]), atomically (see [`bundle::atomic`]).
pub fn write_parquet(df: &DataFrame, path: &Path) -> io::Result<()> {
    let mut out = AtomicFile::create(path)?;
    let named = |e: PolarsError| io::Error::other(format!("{}: {e}", path.display()));
    let mut w = Writer::new(out.file(), df.schema()).map_err(named)?;
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
        let nodes = df
            .column("node")
            .map_err(|e| io::Error::other(e.to_string()))?;
        let mut names: Vec<String> = nodes
            .str()
            .map_err(|e| io::Error::other(e.to_string()))?
            .iter()
            .flatten()
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        for node in names {
            let mask = nodes
                .str()
                .map_err(|e| io::Error::other(e.to_string()))?
                .equal(node.as_str());
            let part = df
                .filter(&mask)
                .and_then(|d| d.drop("node"))
                .map_err(|e| io::Error::other(e.to_string()))?;
            let d = dir
                .join(format!("kind={kind}"))
                .join(format!("node={}", partition_value(&node)));
            std::fs::create_dir_all(&d)?;
            let path = d.join("part-0.parquet");
            write_parquet(&part, &path)?;
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

#[cfg(test)]
mod tests {
    use super::partition_value;

    /// What a Hive reader does with a partition value: `%XX` back to the character.
    fn decode(v: &str) -> String {
        let mut out = String::new();
        let mut rest = v;
        while let Some(i) = rest.find('%') {
            out.push_str(&rest[..i]);
            let code = u8::from_str_radix(&rest[i + 1..i + 3], 16).expect("two hex digits");
            out.push(char::from(code));
            rest = &rest[i + 3..];
        }
        out.push_str(rest);
        out
    }

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
