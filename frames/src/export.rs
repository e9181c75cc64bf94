//! Parquet export: `DIR/kind=KIND/node=NODE/part-0.parquet`, Hive-partitioned so pandas,
//! polars, pyarrow, DuckDB, Spark and Trino read one node or the whole cluster as one
//! dataset. The partition columns (`kind`, `node`) live in the paths, not in the files.

use std::io;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::build::{Frames, KINDS};

/// Writes `df` as a zstd-compressed Parquet file.
pub fn write_parquet(df: &mut DataFrame, path: &Path) -> io::Result<()> {
    let f = std::fs::File::create(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    polars_io::parquet::write::ParquetWriter::new(f)
        .with_compression(polars_io::parquet::write::ParquetCompression::Zstd(None))
        .finish(df)
        .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    Ok(())
}

/// A partition value safe as a path component (Hive escapes the same characters).
fn partition_value(v: &str) -> String {
    v.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c.to_string()
            } else {
                format!("%{:02X}", c as u32 & 0xff)
            }
        })
        .collect()
}

/// One written file.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub kind: &'static str,
    pub node: String,
    pub rows: usize,
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
            let mut part = df
                .filter(&mask)
                .and_then(|d| d.drop("node"))
                .map_err(|e| io::Error::other(e.to_string()))?;
            let d = dir
                .join(format!("kind={kind}"))
                .join(format!("node={}", partition_value(&node)));
            std::fs::create_dir_all(&d)?;
            let path = d.join("part-0.parquet");
            write_parquet(&mut part, &path)?;
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
