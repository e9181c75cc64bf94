//! `glk exporter`: GFS2 glock and DLM metrics for Prometheus, read at scrape time from
//! debugfs, sysfs (and `corosync-quorumtool` for quorum), never from the mount point.
//!
//! The phases: [`collect`] reads the sources (each [`collect::Collector`] one kind) into
//! the families [`metrics`] defines, [`hub`] runs the collectors under deadlines and serves
//! one cached collection to every concurrent scrape, [`exposition`] writes the text
//! formats, [`serve`] answers HTTP(S) with the limits and authentication of [`web`], and
//! [`textfile`] writes `*.prom` files for node_exporter. It runs on cluster nodes: no polars, no async runtime.

#![forbid(unsafe_code)]

pub mod collect;
pub mod exposition;
pub mod hub;
pub mod metrics;
pub mod serve;
pub mod textfile;
pub mod web;
