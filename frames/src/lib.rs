//! glk's polars layer: capture bundles are read into DataFrames with a documented schema
//! (one per kind, each with a `node` column), analyses are functions from frames to
//! report structs, and frames are exported as Hive-partitioned Parquet.

pub mod analyze;
pub mod build;
pub mod export;
pub mod findings;
pub mod parquet;

pub use build::{load, load_snapshots, EventCols, Frames, KINDS};
pub use bundle::{discover, Captures, NodeCapture};
pub use glockparse::Diagnostics;
pub use polars::error::PolarsError;
