//! The debugfs `sbstats` file (the kernel docs' "lkstats"): per glock type, per CPU, eight
//! rows `srtt srttvar srttb srttvarb sirt sirtvar dlm queue`, after a header row listing the
//! possible CPUs. Each CPU column is that CPU's own smoothed estimate; counters (`dlm`,
//! `queue`) add up over CPUs, the smoothed means do not (see [`TypeStats::combined`]).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use glockparse::lines::{parse_records, Parsed};
use glockparse::{Diagnostics, GlockType};

use crate::value;

/// The eight statistics, in the kernel's row order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stat {
    /// Smoothed round trip of non-blocking requests.
    Srtt,
    /// Its mean deviation.
    Srttvar,
    /// Smoothed round trip of blocking requests.
    Srttb,
    /// Its mean deviation.
    Srttvarb,
    /// Smoothed time between DLM requests.
    Sirt,
    /// Its mean deviation.
    Sirtvar,
    /// DLM requests issued.
    Dlm,
    /// Holders queued.
    Queue,
}

impl Stat {
    /// Every statistic, in the kernel's row order.
    pub const ALL: [Stat; 8] = [
        Stat::Srtt,
        Stat::Srttvar,
        Stat::Srttb,
        Stat::Srttvarb,
        Stat::Sirt,
        Stat::Sirtvar,
        Stat::Dlm,
        Stat::Queue,
    ];

    /// The kernel's name of the row (`srtt`, `dcnt`...).
    pub fn name(self) -> &'static str {
        match self {
            Stat::Srtt => "srtt",
            Stat::Srttvar => "srttvar",
            Stat::Srttb => "srttb",
            Stat::Srttvarb => "srttvarb",
            Stat::Sirt => "sirt",
            Stat::Sirtvar => "sirtvar",
            Stat::Dlm => "dlm",
            Stat::Queue => "queue",
        }
    }

    fn parse(s: &str) -> Option<Stat> {
        Stat::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// sbstats labels types by `gfs2_gltype[ln_type + 1]`: lower-case names (`nondisk`,
/// `inode`...), read as glocks files name types ([`GlockType::from_name`]), never numbers.
fn type_from_label(s: &str) -> Option<GlockType> {
    let named = !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
    GlockType::from_name(s).filter(|_| named)
}

/// One type's eight rows, one value per CPU column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeStats {
    /// Each statistic's value per CPU, in the header's column order.
    pub per_cpu: BTreeMap<Stat, Vec<i64>>,
}

/// One type's statistics over all CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Combined {
    /// DLM requests, summed over CPUs.
    pub dlm: i64,
    /// Holders queued, summed over CPUs.
    pub queue: i64,
    /// Smoothed values averaged over the CPUs that have any DLM activity, weighted by each
    /// CPU's `dlm` count (an unweighted mean when no CPU counted a request), in ns.
    pub srtt: f64,
    /// Weighted like `srtt`.
    pub srttvar: f64,
    /// Weighted like `srtt`.
    pub srttb: f64,
    /// Weighted like `srtt`.
    pub srttvarb: f64,
    /// Weighted like `srtt`.
    pub sirt: f64,
    /// Weighted like `srtt`.
    pub sirtvar: f64,
}

impl TypeStats {
    /// One statistic's per-CPU values.
    pub fn get(&self, s: Stat) -> &[i64] {
        self.per_cpu.get(&s).map_or(&[], Vec::as_slice)
    }

    /// One statistic summed over CPUs.
    pub fn sum(&self, s: Stat) -> i64 {
        self.get(s).iter().fold(0i64, |a, v| a.saturating_add(*v))
    }

    /// Counters summed; smoothed means averaged, weighted by each CPU's DLM requests.
    pub fn combined(&self) -> Combined {
        let w: Vec<f64> = self
            .get(Stat::Dlm)
            .iter()
            .map(|v| (*v).max(0) as f64)
            .collect();
        let total: f64 = w.iter().sum();
        let avg = |s: Stat| {
            let v = self.get(s);
            if v.is_empty() {
                return 0.0;
            }
            if total > 0.0 {
                v.iter().zip(&w).map(|(x, w)| *x as f64 * w).sum::<f64>() / total
            } else {
                v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64
            }
        };
        Combined {
            dlm: self.sum(Stat::Dlm),
            queue: self.sum(Stat::Queue),
            srtt: avg(Stat::Srtt),
            srttvar: avg(Stat::Srttvar),
            srttb: avg(Stat::Srttb),
            srttvarb: avg(Stat::Srttvarb),
            sirt: avg(Stat::Sirt),
            sirtvar: avg(Stat::Sirtvar),
        }
    }
}

/// A whole sbstats file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SbStats {
    /// The CPU ids of the header row, in column order.
    pub cpus: Vec<u32>,
    /// Each glock type's statistics.
    pub types: BTreeMap<GlockType, TypeStats>,
}

/// One parsed line: the CPU header or a statistics row.
enum Row {
    Cpus(Vec<u32>),
    Stat(GlockType, Stat, Vec<i64>),
}

fn parse_row(line: &[u8]) -> Result<Row, String> {
    let text = String::from_utf8_lossy(line);
    let (label, values) = text.split_once(':').ok_or("expected TYPE STAT: values")?;
    let mut lw = label.split_whitespace();
    let (Some(tname), Some(sname), None) = (lw.next(), lw.next(), lw.next()) else {
        return Err("expected TYPE STAT: values".into());
    };
    let nums = values
        .split_whitespace()
        .map(|v| value::parse(v.as_bytes()).ok_or_else(|| format!("bad number {v:?}")))
        .collect::<Result<Vec<i64>, String>>()?;
    if tname == "type" && sname == "cpu" {
        return Ok(Row::Cpus(nums.iter().map(|v| *v as u32).collect()));
    }
    match (type_from_label(tname), Stat::parse(sname)) {
        (Some(t), Some(s)) => Ok(Row::Stat(t, s, nums)),
        _ => Err(format!("unknown row {tname} {sname}")),
    }
}

/// Reads an sbstats file. Rows whose value count differs from the header's CPU count are
/// kept for the columns they have and reported.
pub fn read<R: Read>(rdr: R, source: &str) -> (SbStats, Diagnostics) {
    let mut cpus: Vec<u32> = Vec::new();
    let (rows, d) = parse_records(rdr, source, |_, line| match parse_row(line) {
        Ok(Row::Cpus(c)) => {
            cpus.clone_from(&c);
            Parsed::Record(Row::Cpus(c))
        }
        Ok(Row::Stat(t, s, v)) if !cpus.is_empty() && v.len() != cpus.len() => {
            let m = format!("{} values for {} CPUs", v.len(), cpus.len());
            Parsed::Flawed(Row::Stat(t, s, v), m)
        }
        Ok(r) => Parsed::Record(r),
        Err(m) => Parsed::Bad(m),
    });
    let mut sb = SbStats::default();
    for r in rows {
        match r {
            Row::Cpus(c) => sb.cpus = c,
            Row::Stat(t, s, v) => {
                sb.types.entry(t).or_default().per_cpu.insert(s, v);
            }
        }
    }
    if sb.cpus.is_empty() && !sb.types.is_empty() {
        // No header: number the columns.
        let n = sb
            .types
            .values()
            .flat_map(|t| t.per_cpu.values())
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        sb.cpus = (0..n as u32).collect();
    }
    (sb, d)
}

/// Reads an sbstats (lkstats) file, compressed or not.
pub fn read_path(path: &Path) -> std::io::Result<(SbStats, Diagnostics)> {
    glockparse::input::read_path(path, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_columns_and_combination() {
        let text = "type            cpu:               0               1\n\
                    inode          srtt:             100             300\n\
                    inode           dlm:               1               3\n\
                    inode         queue:               5               5\n\
                    rgrp          queue:               2\n";
        let (sb, d) = read(text.as_bytes(), "t");
        assert_eq!(sb.cpus, vec![0, 1]);
        assert_eq!(d.errors, 1, "the short rgrp row is reported");
        let inode = &sb.types[&GlockType::Inode];
        assert_eq!(inode.get(Stat::Srtt), &[100, 300]);
        let c = inode.combined();
        assert_eq!((c.dlm, c.queue), (4, 10));
        assert_eq!(c.srtt, (100.0 * 1.0 + 300.0 * 3.0) / 4.0);
        assert_eq!(sb.types[&GlockType::Rgrp].sum(Stat::Queue), 2);
    }
}
