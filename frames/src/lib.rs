//! glk's polars layer, for the analyst's workstation: the typed rows of
//! [`analysis::snapshots`] and decoded trace events as DataFrames with a documented schema
//! (one per kind, each with a `node` column), exported as Hive-partitioned Parquet.
//! The analyses themselves live in the `analysis` crate, without polars.

#![forbid(unsafe_code)]

pub mod build;
pub mod export;
pub mod parquet;

pub use build::{frames, load, EventCols, Frames, KINDS};
pub use bundle::{discover, Captures, NodeCapture};
pub use glockparse::Diagnostics;
pub use polars::error::PolarsError;
