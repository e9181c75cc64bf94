//! Recording durations for percentiles with bounded memory: exact samples while there are
//! few (most glocks have a handful), an HDR histogram (3 significant digits, sized to the
//! largest value seen) once there are many. Thousands of glocks then cost kilobytes, not
//! a fixed-range histogram each.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Samples kept exactly before switching to a histogram.
pub const EXACT_LIMIT: usize = 1024;
/// Largest value recorded as itself (one hour in ns); longer ones are recorded as this.
pub const MAX_NS: u64 = 3_600_000_000_000;

/// Percentiles of a set of durations, ns.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Distribution {
    /// Durations measured.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Mean, ns.
    pub mean_ns: f64,
}

#[derive(Debug, Clone)]
enum Store {
    Exact(Vec<u64>),
    Hist(Box<Histogram<u64>>),
}

/// The nearest-rank `q` quantile of `sorted` (ascending, not empty): the smallest value
/// with at least a `q` share of the values at or below it. glk's one percentile rule.
pub fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// The power-of-two bucket of `v`: `i` such that `2^i <= v < 2^(i+1)` (0 counts as 1).
pub fn log2_bucket(v: u64) -> usize {
    63 - v.max(1).leading_zeros() as usize
}

/// Durations in ns; see the module docs.
#[derive(Debug, Clone)]
pub struct Recorder(Store);

impl Default for Recorder {
    fn default() -> Self {
        Recorder(Store::Exact(Vec::new()))
    }
}

/// Records into an auto-resizing histogram (`saturating_record` would clamp to the current
/// range instead of growing it).
fn put(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

fn new_hist() -> Histogram<u64> {
    let mut h = Histogram::new(3).expect("3 significant digits is valid");
    h.auto(true);
    h
}

impl Recorder {
    /// Records one duration.
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(1, MAX_NS);
        match &mut self.0 {
            Store::Exact(s) if s.len() < EXACT_LIMIT => s.push(v),
            Store::Exact(s) => {
                let mut h = new_hist();
                for x in s.iter() {
                    put(&mut h, *x);
                }
                put(&mut h, v);
                self.0 = Store::Hist(Box::new(h));
            }
            Store::Hist(h) => put(h, v),
        }
    }

    /// Durations recorded.
    pub fn len(&self) -> u64 {
        match &self.0 {
            Store::Exact(s) => s.len() as u64,
            Store::Hist(h) => h.len(),
        }
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds another recorder's samples.
    pub fn merge(&mut self, other: &Recorder) {
        match &other.0 {
            Store::Exact(s) => {
                for v in s {
                    self.record(*v);
                }
            }
            Store::Hist(o) => {
                if let Store::Exact(s) = &self.0 {
                    let mut h = new_hist();
                    for x in s {
                        put(&mut h, *x);
                    }
                    self.0 = Store::Hist(Box::new(h));
                }
                if let Store::Hist(h) = &mut self.0 {
                    // Both auto-resize, so adding cannot fail on range.
                    let _ = h.add(o.as_ref());
                }
            }
        }
    }

    /// Sample counts per power of two: entry `i` counts durations in `[2^i, 2^(i+1))` ns
    /// (64 entries; the histogram's buckets are finer, so a sample lands in the bucket of
    /// the value it was rounded to).
    pub fn log2_counts(&self) -> [u64; 64] {
        let mut out = [0u64; 64];
        match &self.0 {
            Store::Exact(s) => s.iter().for_each(|v| out[log2_bucket(*v)] += 1),
            Store::Hist(h) => {
                for x in h.iter_recorded() {
                    out[log2_bucket(x.value_iterated_to())] += x.count_at_value();
                }
            }
        }
        out
    }

    /// Nearest-rank percentiles (exact while samples are kept).
    pub fn distribution(&self) -> Distribution {
        match &self.0 {
            Store::Exact(s) if s.is_empty() => Distribution::default(),
            Store::Exact(s) => {
                let mut v = s.clone();
                v.sort_unstable();
                let q = |q: f64| nearest_rank(&v, q);
                Distribution {
                    count: v.len() as u64,
                    p50_ns: q(0.5),
                    p90_ns: q(0.9),
                    p99_ns: q(0.99),
                    max_ns: *v.last().expect("non-empty"),
                    mean_ns: v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64,
                }
            }
            Store::Hist(h) => Distribution {
                count: h.len(),
                p50_ns: h.value_at_quantile(0.5),
                p90_ns: h.value_at_quantile(0.9),
                p99_ns: h.value_at_quantile(0.99),
                max_ns: h.max(),
                mean_ns: h.mean(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_is_the_smallest_value_with_the_share_at_or_below() {
        assert_eq!(nearest_rank(&[10, 20], 0.5), 10);
        assert_eq!(nearest_rank(&[10, 20], 0.51), 20);
        assert_eq!(nearest_rank(&[5], 0.0), 5);
        let v: Vec<u64> = (1..=91).collect();
        // 1% of 91 is under one value: the p99 is the maximum.
        assert_eq!(nearest_rank(&v, 0.99), 91);
        assert_eq!(nearest_rank(&v, 0.9), 82);
        assert_eq!(nearest_rank(&v, 1.0), 91);
    }

    #[test]
    fn log2_counts_exact_and_histogram() {
        let mut r = Recorder::default();
        for v in [1, 2, 3, 1000, 1023, 1024] {
            r.record(v);
        }
        let c = r.log2_counts();
        assert_eq!((c[0], c[1], c[9], c[10]), (1, 2, 2, 1));
        let mut big = Recorder::default();
        for i in 0..(EXACT_LIMIT as u64 + 10) {
            big.record(1_000_000 + i % 1000);
        }
        let c = big.log2_counts();
        assert_eq!(c.iter().sum::<u64>(), EXACT_LIMIT as u64 + 10);
        assert_eq!(c[19], EXACT_LIMIT as u64 + 10);
    }

    #[test]
    fn exact_then_histogram_agree() {
        let mut small = Recorder::default();
        for v in 1..=100u64 {
            small.record(v * 1000);
        }
        let d = small.distribution();
        assert_eq!(
            (d.count, d.p50_ns, d.p99_ns, d.max_ns),
            (100, 50_000, 99_000, 100_000)
        );
        let mut big = Recorder::default();
        for v in 1..=100_000u64 {
            big.record(v * 1000);
        }
        let d = big.distribution();
        assert_eq!(d.count, 100_000);
        assert!(
            (d.p50_ns as f64 - 50_000_000.0).abs() / 50_000_000.0 < 0.001,
            "{d:?}"
        );
        assert!((d.p99_ns as f64 - 99_000_000.0).abs() / 99_000_000.0 < 0.001);
        let mut m = Recorder::default();
        m.merge(&small);
        m.merge(&big);
        assert_eq!(m.len(), 100_100);
        assert_eq!(Recorder::default().distribution(), Distribution::default());
    }
}
