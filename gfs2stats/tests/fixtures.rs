//! glstats, sbstats and lock-time distributions on the real captures, checked against
//! values computed here from the raw text and against PCP's golden output.

use std::collections::HashMap;

use gfs2stats::lock_time::{distribution, LockTimes};
use gfs2stats::{glstats, sbstats, Stat};
use glockparse::GlockType;

fn text(rel: &str) -> String {
    testdata::text(rel)
}

/// The number after `key` in `line`, allowing the glstats space after the colon.
fn field(line: &str, key: &str) -> i64 {
    line.split(key)
        .nth(1)
        .unwrap()
        .trim_start()
        .split([' ', '/'])
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn glstats_files_match_their_text() {
    let files = testdata::files("", |n| n.starts_with("glstats"));
    assert!(files.len() >= 15, "{}", files.len());
    for f in files {
        let (stats, d) = glstats::read_path(&f).unwrap();
        assert!(d.is_clean(), "{}: {:?}", f.display(), d.first_errors);
        let t = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(stats.len(), lines.len());
        for (s, l) in stats.iter().zip(&lines) {
            assert_eq!(s.stats.dcount, field(l, "dcnt:"));
            assert_eq!(s.stats.qcount, field(l, "qcnt:"));
            assert_eq!(s.stats.srttb, field(l, "rttb:"));
            assert_eq!(s.stats.sirt, field(l, "irt:"));
            assert_eq!(
                s.glock.to_string(),
                l.split("n:").nth(1).unwrap().split(' ').next().unwrap()
            );
        }
        let nolock = f.to_string_lossy().contains("nolock") || f.to_string_lossy().contains("pcp");
        let timing: i64 = stats
            .iter()
            .map(|s| s.stats.srtt + s.stats.srttb + s.stats.sirt + s.stats.dcount)
            .sum();
        if nolock {
            assert_eq!(
                timing,
                0,
                "lock_nolock makes no DLM requests: {}",
                f.display()
            );
        }
    }
    // The DLM cluster's glocks made real requests with non-zero round trips.
    let (s, _) = glstats::read_path(&testdata::path("real/dlm2-6.1/n1/glstats.2")).unwrap();
    assert!(
        s.iter()
            .filter(|s| s.stats.dcount > 0 && s.stats.srttb > 0)
            .count()
            > 100
    );
}

#[test]
fn sbstats_layouts_and_pcp_golden_values() {
    for (rel, cpus) in [
        ("real/dlm2-6.1/n1/sbstats.4", 1),
        ("real/nolock-6.1/sbstats.2", 2),
        (
            "public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/sbstats",
            4,
        ),
    ] {
        let (sb, d) = sbstats::read_path(&testdata::path(rel)).unwrap();
        assert!(d.is_clean(), "{rel}: {:?}", d.first_errors);
        assert_eq!(d.records, 81, "{rel}: header + 10 types x 8 rows");
        assert_eq!(sb.cpus.len(), cpus, "{rel}");
        assert_eq!(sb.types.len(), 10);
        // Independent sums of each row's numbers.
        for line in text(rel).lines().skip(1) {
            let (label, vals) = line.split_once(':').unwrap();
            let mut w = label.split_whitespace();
            let (t, s) = (w.next().unwrap(), w.next().unwrap());
            let sum: i64 = vals
                .split_whitespace()
                .map(|v| v.parse::<i64>().unwrap())
                .sum();
            let gt = if t == "nondisk" {
                GlockType::Trans
            } else {
                GlockType::from_name(t).unwrap()
            };
            let stat = Stat::ALL.into_iter().find(|x| x.name() == s).unwrap();
            assert_eq!(sb.types[&gt].sum(stat), sum, "{rel} {t} {s}");
        }
    }
    // PCP's qa/654.out records each gfs2.sbstats.TYPE.STAT as the sum over CPUs.
    let golden = text("public/pcp-gfs2-root-001/pcp-654.out");
    let (sb, _) = sbstats::read_path(&testdata::path(
        "public/pcp-gfs2-root-001/001/gfs2/debugfsdir/loop0/sbstats",
    ))
    .unwrap();
    let mut checked = 0;
    let lines: Vec<&str> = golden.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.strip_prefix("gfs2.sbstats.") else {
            continue;
        };
        let name = rest.split(' ').next().unwrap();
        let (t, s) = name.split_once('.').unwrap();
        let Some(v) = lines[i..(i + 6).min(lines.len())]
            .iter()
            .find_map(|x| x.split(" value ").nth(1))
        else {
            continue;
        };
        let gt = if t == "nondisk" {
            GlockType::Trans
        } else {
            GlockType::from_name(t).unwrap()
        };
        let stat = Stat::ALL.into_iter().find(|x| x.name() == s).unwrap();
        assert_eq!(
            sb.types[&gt].sum(stat),
            v.trim().parse::<i64>().unwrap(),
            "{name}"
        );
        checked += 1;
    }
    assert_eq!(checked, 80);
}

#[test]
fn lock_time_distributions_and_classification() {
    for node in ["n1", "n2"] {
        let rel = format!("real/dlm2-6.1/{node}/trace_pipe.txt.xz");
        let t = text(&rel);
        let mut lt = LockTimes::default();
        for l in t.lines() {
            if let Ok(traceparse::Decoded::Gfs2 { event, .. }) =
                traceparse::decode_line(l.as_bytes())
            {
                lt.add(&event);
            }
        }
        lt.finish();
        let (mut all, blocking, nonblocking) = classify_from_text(node, &t);
        let total: u64 = lt.per_type.values().map(|h| h.all.len()).sum();
        assert_eq!(total, all.len() as u64, "{node}");
        let b: u64 = lt.per_type.values().map(|h| h.blocking.len()).sum();
        let nb: u64 = lt.per_type.values().map(|h| h.nonblocking.len()).sum();
        assert_eq!((b, nb), (blocking as u64, nonblocking as u64), "{node}");
        assert!(
            lt.by_stats > 1000 && lt.by_flags > 500,
            "{node}: both methods used"
        );
        percentiles_agree(node, &lt, &mut all);
    }
}

/// Each reply's class, found from the text on its own: the `b` flag of the glock's next
/// state change, else which stats pair changed since its previous reply, else
/// non-blocking for an unlock reply. Returns every tdiff and the blocking and non-blocking
/// counts.
fn classify_from_text(node: &str, t: &str) -> (Vec<u64>, usize, usize) {
    let mut all: Vec<u64> = Vec::new();
    let mut prev: HashMap<String, (String, String)> = HashMap::new();
    let mut pending: HashMap<String, Vec<(u64, Option<bool>)>> = HashMap::new();
    let (mut blocking, mut nonblocking) = (0usize, 0usize);
    let mut tally = |b: bool| if b { blocking += 1 } else { nonblocking += 1 };
    for l in t.lines() {
        if l.contains("gfs2_glock_lock_time:") {
            let g = testdata::trace_glock(l).to_string();
            let v: u64 = l
                .split("tdiff:")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let pair = |k: &str| {
                l.split(k)
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_string()
            };
            let now = (pair(" srtt:"), pair(" srttb:"));
            let by_stats = match prev.get(&g) {
                Some(p) if p.0 != now.0 && p.1 == now.1 => Some(false),
                Some(p) if p.0 == now.0 && p.1 != now.1 => Some(true),
                _ if l.contains("status:-65538 ") => Some(false),
                _ => None,
            };
            prev.insert(g.clone(), now);
            all.push(v);
            pending.entry(g).or_default().push((v, by_stats));
        } else if l.contains("gfs2_glock_state_change:") {
            let g = testdata::trace_glock(l);
            if let Some(vs) = pending.remove(g) {
                let letters = l
                    .split("flags:")
                    .nth(1)
                    .unwrap()
                    .split("0x")
                    .next()
                    .unwrap();
                for (_, by_stats) in vs {
                    let by_flag = letters.contains('b');
                    // The two ways never disagree on this capture.
                    assert!(by_stats.is_none_or(|s| s == by_flag), "{node}: {l}");
                    tally(by_flag);
                }
            }
        }
    }
    for (_, by_stats) in pending.into_values().flatten() {
        if let Some(b) = by_stats {
            tally(b);
        }
    }
    (all, blocking, nonblocking)
}

/// The merged distribution's percentiles agree with exact nearest-rank ones (to HDR's 3
/// significant digits once there are more samples than are kept exactly).
fn percentiles_agree(node: &str, lt: &LockTimes, all: &mut [u64]) {
    all.sort_unstable();
    let exact = |q: f64| all[((q * all.len() as f64).ceil() as usize).max(1) - 1];
    let mut merged = gfs2stats::dist::Recorder::default();
    for h in lt.per_type.values() {
        merged.merge(&h.all);
    }
    let d = distribution(&merged);
    for (q, got) in [(0.5, d.p50_ns), (0.99, d.p99_ns), (1.0, d.max_ns)] {
        let want = exact(q) as f64;
        assert!(
            (got as f64 - want).abs() <= want * 0.001 + 1.0,
            "{node} q{q}: {got} vs {want}"
        );
    }
}
