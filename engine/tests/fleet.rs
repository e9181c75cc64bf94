//! `glk fleet` over a dataset of four captures in two clusters (three real ones, and one of
//! them again two days later as another capture: the same incident recurring), each answer
//! held to figures made here from the raw trace text and DLM dumps, without glk's parsers.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

/// The captures of the dataset: (cluster, directory).
struct Fleet {
    _scratch: tempfile::TempDir,
    dir: PathBuf,
    captures: Vec<(&'static str, PathBuf)>,
}

/// `real/handoff-6.12` again, its snapshots two days later: another capture.
fn recurring(scratch: &Path) -> PathBuf {
    let src = testdata::path("real/handoff-6.12");
    let out = scratch.join("handoff-again");
    for node in ["n1", "n2"] {
        std::fs::create_dir_all(out.join(node)).unwrap();
        for e in std::fs::read_dir(src.join(node)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let to = out.join(node).join(&name);
            if name.starts_with("time.") {
                let t: f64 = std::fs::read_to_string(e.path())
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                std::fs::write(to, format!("{:.6}\n", t + 2.0 * 86_400.0)).unwrap();
            } else if e.path().is_file() {
                std::os::unix::fs::symlink(e.path(), to).unwrap();
            }
        }
    }
    out
}

fn fleet() -> Fleet {
    let (scratch, dir) = testdata::scratch_file("fleet");
    let captures = vec![
        ("a", testdata::path("real/handoff-6.12")),
        ("a", recurring(scratch.path())),
        ("a", testdata::path("real/dlm2-6.1")),
        ("b", testdata::path("real/handoff-6.1")),
    ];
    for (cluster, c) in &captures {
        common::add(&dir, cluster, &[c]);
    }
    Fleet {
        _scratch: scratch,
        dir,
        captures,
    }
}

/// `glk-engine fleet ARGS DIR --json --limit 100000`: its rows.
fn ask(dir: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .arg("fleet")
        .arg(args[0])
        .arg(dir)
        .args(&args[1..])
        .args(["--json", "--limit", "100000"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A node's raw trace lines.
fn trace(node: &Path) -> Vec<String> {
    let out = Command::new("xz")
        .arg("-dc")
        .arg(node.join("trace_pipe.txt.xz"))
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `2:8762` (a tracepoint's glock, decimal) as the glocks file writes it: `2/223a`.
fn glock(tp: &str) -> String {
    let (t, n) = tp.split_once(':').unwrap();
    format!("{t}/{:x}", n.parse::<u64>().unwrap())
}

/// The word after `key` in `line`.
fn after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split(key).nth(1)?.split_whitespace().next()
}

/// The trace clock of a line, ns.
fn ts_ns(line: &str) -> u64 {
    let head = &line[..line.find(": ").unwrap()];
    let (s, us) = head.rsplit(' ').next().unwrap().split_once('.').unwrap();
    s.parse::<u64>().unwrap() * 1_000_000_000 + us.parse::<u64>().unwrap() * 1000
}

/// The remote demote requests of a capture's nodes: (node, glock, second).
fn remote_demotes(capture: &Path) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    for node in ["n1", "n2"] {
        for l in trace(&capture.join(node)) {
            if l.contains(" gfs2_demote_rq: ") && l.ends_with(" remote") {
                let g = glock(after(&l, " glock ").unwrap());
                out.push((node.to_string(), g, ts_ns(&l) / 1_000_000_000));
            }
        }
    }
    out
}

/// A row's cluster and glock.
fn cluster_glock(r: &serde_json::Value) -> (String, String) {
    (
        r["cluster"].as_str().unwrap().to_string(),
        r["glock"].as_str().unwrap().to_string(),
    )
}

/// The capture's id in the dataset is not known here; captures are told apart by their
/// index in [`Fleet::captures`].
type CaptureIx = usize;

#[test]
fn hot_glocks_are_counted_over_every_capture() {
    let f = fleet();
    // (cluster, glock) -> (remote demotes, captures with one)
    let mut want: BTreeMap<(String, String), (u64, BTreeSet<CaptureIx>)> = BTreeMap::new();
    for (i, (cluster, c)) in f.captures.iter().enumerate() {
        for (_, g, _) in remote_demotes(c) {
            let e = want.entry((cluster.to_string(), g)).or_default();
            e.0 += 1;
            e.1.insert(i);
        }
    }
    assert!(want.len() > 10, "{want:?}");
    let rows = ask(&f.dir, &["hot"]);
    let got: BTreeMap<(String, String), (u64, u64)> = rows
        .iter()
        .filter(|r| r["remote_demotes"].as_u64().unwrap() > 0)
        .map(|r| {
            (
                cluster_glock(r),
                (
                    r["remote_demotes"].as_u64().unwrap(),
                    r["captures"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    for (k, (n, caps)) in &want {
        let (gn, gcaps) = got.get(k).unwrap_or_else(|| panic!("{k:?} missing"));
        assert_eq!(*gn, *n, "{k:?}");
        // Captures also count those that saw the glock only with waiters.
        assert!(*gcaps >= caps.len() as u64, "{k:?}: {gcaps} < {caps:?}");
    }
    assert_eq!(got.len(), want.len());
    // Ordered by captures, then demotes.
    let order: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["captures"].as_u64().unwrap(),
                r["remote_demotes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] >= w[1]), "{order:?}");
    // Cluster a ran two kernels: split by kernel, each glock's demotes add up.
    let by_kernel = ask(&f.dir, &["hot", "--by", "kernel"]);
    let kernels: BTreeSet<&str> = by_kernel
        .iter()
        .filter(|r| r["cluster"] == "a")
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(
        kernels,
        BTreeSet::from(["6.1.0-56-amd64", "6.12.117+deb13-amd64"]),
        "{by_kernel:?}"
    );
    let mut summed: BTreeMap<(String, String), u64> = BTreeMap::new();
    for r in &by_kernel {
        *summed.entry(cluster_glock(r)).or_default() += r["remote_demotes"].as_u64().unwrap();
    }
    for (k, (n, _)) in &want {
        assert_eq!(summed[k], *n, "{k:?}");
    }
    // One cluster only; one the dataset does not have is named.
    let only_b = ask(&f.dir, &["hot", "--cluster", "b"]);
    assert!(!only_b.is_empty() && only_b.iter().all(|r| r["cluster"] == "b"));
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .args(["fleet", "hot"])
        .arg(&f.dir)
        .args(["--cluster", "c\x1b[2J"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no cluster c\\x1b[2J in this dataset (it has a, b)"),
        "{err}"
    );
}

#[test]
fn recurring_storms_name_the_captures_that_share_them() {
    let f = fleet();
    // (cluster, capture, node, glock, second) -> remote demotes
    let mut per_second: BTreeMap<(String, CaptureIx, String, String, u64), u64> = BTreeMap::new();
    for (i, (cluster, c)) in f.captures.iter().enumerate() {
        for (node, g, s) in remote_demotes(c) {
            *per_second
                .entry((cluster.to_string(), i, node, g, s))
                .or_default() += 1;
        }
    }
    // (cluster, glock) -> (captures, storm demotes, peak)
    let mut want: BTreeMap<(String, String), (BTreeSet<CaptureIx>, u64, u64)> = BTreeMap::new();
    for ((cluster, i, _, g, _), n) in per_second.into_iter().filter(|(_, n)| *n >= 5) {
        let e = want.entry((cluster, g)).or_default();
        e.0.insert(i);
        e.1 += n;
        e.2 = e.2.max(n);
    }
    assert!(!want.is_empty(), "the real captures hold demote storms");
    let rows = ask(&f.dir, &["storms"]);
    let got: BTreeMap<(String, String), (u64, u64, u64, usize)> = rows
        .iter()
        .map(|r| {
            (
                cluster_glock(r),
                (
                    r["captures"].as_u64().unwrap(),
                    r["storm_demotes"].as_u64().unwrap(),
                    r["peak_per_second"].as_u64().unwrap(),
                    r["capture_ids"].as_array().unwrap().len(),
                ),
            )
        })
        .collect();
    let want: BTreeMap<(String, String), (u64, u64, u64, usize)> = want
        .into_iter()
        .map(|(k, (caps, n, peak))| (k, (caps.len() as u64, n, peak, caps.len())))
        .collect();
    assert_eq!(got, want);
    // The recurring capture shares every storm of the first: those come first, in two.
    let shared: Vec<_> = rows.iter().filter(|r| r["captures"] == 2).collect();
    assert!(!shared.is_empty(), "{rows:?}");
    assert_eq!(rows[0]["captures"], 2);
    // A higher threshold keeps fewer.
    assert!(ask(&f.dir, &["storms", "--min-demotes", "50"]).len() < rows.len());
}

/// A node's DLM node id: `nodeid`, else `our_nodeid N` in dlm_controld.log.
fn nodeid(node: &Path) -> u64 {
    if let Ok(s) = std::fs::read_to_string(node.join("nodeid")) {
        return s.trim().parse().unwrap();
    }
    let log = std::fs::read_to_string(node.join("dlm_controld.log")).unwrap();
    after(&log, "our_nodeid ").unwrap().parse().unwrap()
}

/// Who masters each glock's resource in a node's DLM dumps (`r_nodeid`, 0: the node).
fn masters_seen(node: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(node).unwrap().flatten() {
        if !e.file_name().to_string_lossy().starts_with("dlm_locks.") {
            continue;
        }
        for l in std::fs::read_to_string(e.path()).unwrap().lines().skip(1) {
            let (head, name) = l.split_once('"').unwrap();
            let w: Vec<&str> = head.split_whitespace().collect();
            let n: Vec<&str> = name.trim_end_matches('"').split_whitespace().collect();
            let g = format!("{}/{}", n[0], n[1]);
            let m: u64 = w[11].parse().unwrap();
            let e = out.entry(g).or_insert(m);
            *e = (*e).max(m);
        }
    }
    out
}

/// The first snapshot time of a node, seconds.
fn first_time(node: &Path) -> f64 {
    std::fs::read_dir(node)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("time."))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .trim()
                .parse::<f64>()
                .unwrap()
        })
        .fold(f64::MAX, f64::min)
}

#[test]
fn slow_masters_are_the_round_trips_to_the_resources_master() {
    let f = fleet();
    // (cluster, master, day) -> round trips, ns
    let mut want: BTreeMap<(String, u64, i64), Vec<f64>> = BTreeMap::new();
    for (cluster, c) in &f.captures {
        for node in ["n1", "n2"] {
            let dir = c.join(node);
            let me = nodeid(&dir);
            let masters = masters_seen(&dir);
            let day = (first_time(&dir) as i64).div_euclid(86_400) * 86_400;
            for l in trace(&dir) {
                if !l.contains(" gfs2_glock_lock_time: ") {
                    continue;
                }
                let g = glock(after(&l, " glock ").unwrap());
                let Some(&m) = masters.get(&g) else { continue };
                let master = if m == 0 { me } else { m };
                if master != me {
                    let t: f64 = after(&l, "tdiff:").unwrap().parse().unwrap();
                    want.entry((cluster.to_string(), master, day))
                        .or_default()
                        .push(t);
                }
            }
        }
    }
    assert!(!want.is_empty());
    let rows = ask(&f.dir, &["masters", "--period", "day"]);
    let mut got = BTreeMap::new();
    for r in &rows {
        let day = r["period_start"].as_str().unwrap();
        got.insert(
            (
                r["cluster"].as_str().unwrap().to_string(),
                r["master"].as_u64().unwrap(),
                day.to_string(),
            ),
            r.clone(),
        );
    }
    assert_eq!(got.len(), want.len(), "{rows:?}");
    for ((cluster, master, day), mut ts) in want {
        let key = (cluster, master, common::utc_day(day));
        let r = got.get(&key).unwrap_or_else(|| panic!("{key:?} missing"));
        ts.sort_by(f64::total_cmp);
        let ms = |v: f64| (v / 1e6 * 1e3).round() / 1e3;
        let p99 = {
            let pos = 0.99 * (ts.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            ts[lo] + (ts[hi] - ts[lo]) * (pos - lo as f64)
        };
        assert_eq!(r["requests"].as_u64().unwrap(), ts.len() as u64, "{key:?}");
        assert_eq!(
            r["max_ms"].as_f64().unwrap(),
            ms(*ts.last().unwrap()),
            "{key:?}"
        );
        assert_eq!(r["p99_ms"].as_f64().unwrap(), ms(p99), "{key:?}");
        let mean = ts.iter().sum::<f64>() / ts.len() as f64;
        assert!(
            (r["mean_ms"].as_f64().unwrap() - ms(mean)).abs() <= 0.001,
            "{key:?}"
        );
    }
    // Slowest first.
    let p99: Vec<f64> = rows.iter().map(|r| r["p99_ms"].as_f64().unwrap()).collect();
    assert!(p99.windows(2).all(|w| w[0] >= w[1]), "{p99:?}");
    // Weeks start on Monday.
    for r in ask(&f.dir, &["masters"]) {
        let day = r["period_start"].as_str().unwrap();
        assert_eq!(common::weekday(day), 0, "{day} is no Monday");
    }
}

#[test]
fn a_directory_that_is_no_dataset_is_named() {
    let scratch = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .args(["fleet", "hot"])
        .arg(scratch.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("_glk_dataset.json") && err.contains("glk export --dataset"),
        "{err}"
    );
}

/// `glk-engine export INPUTS --fs FS EXTRA --dataset DIR`, which must succeed and say
/// that it added a capture of cluster `lab`'s `lab:FS`: its standard output.
fn export_fs<P: AsRef<OsStr>>(dir: &Path, inputs: &[P], fs: &str, extra: &[&str]) -> String {
    let mut args: Vec<&OsStr> = inputs.iter().map(AsRef::as_ref).collect();
    args.extend(
        ["--fs", fs]
            .into_iter()
            .chain(extra.iter().copied())
            .map(OsStr::new),
    );
    let (out, err) = common::export_to(dir, &args);
    let said = format!(" of cluster lab, lab:{fs}\n");
    assert!(err.contains(&said), "{err}");
    out
}

/// The lock table and device (`254,1`, as trace lines write it) of each filesystem of a
/// node of a capture of several (`NODE/FS/NODE/`), read by hand: the filesystem's mount
/// point from its `gfs2_sysfs.0`, the device mounted there from the node's `mountinfo`.
fn devices_by_table(node: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for fs_dir in std::fs::read_dir(node).unwrap().flatten() {
        let dir = fs_dir.path().join(node.file_name().unwrap());
        let Ok(table) = std::fs::read_to_string(dir.join("table")) else {
            continue;
        };
        let sysfs = std::fs::read_to_string(dir.join("gfs2_sysfs.0")).unwrap();
        let mount = after(&sysfs, "mount ").unwrap();
        let mountinfo = std::fs::read_to_string(dir.join("mountinfo")).unwrap();
        let line = mountinfo
            .lines()
            .find(|l| l.split_whitespace().nth(4) == Some(mount))
            .unwrap();
        let dev = line.split_whitespace().nth(2).unwrap().replace(':', ",");
        out.insert(table.trim().to_string(), dev);
    }
    out
}

/// A capture of two filesystems, exported once per filesystem into one cluster: the same
/// glock number of each is its own row (`fs`), each with the remote demotes of its own
/// device in the raw traces. The copy whose filesystems' snapshots share their times (as
/// a sos report's do) is still two captures: the second export replaces nothing. Without
/// --cluster, the lock table names the cluster.
#[test]
fn the_filesystems_of_a_cluster_are_told_apart() {
    let src = testdata::path("real/two-filesystems-6.12");
    let (scratch, dir) = testdata::scratch_file("fleet-fs");
    // Each filesystem's snapshot N at the time of lab:gfs's snapshot N.
    let copy = scratch.path().join("same-times");
    for node in ["n1", "n2"] {
        for fs in ["lab_gfs", "lab_data"] {
            let from = src.join(node).join(fs).join(node);
            let to = copy.join(node).join(fs).join(node);
            std::fs::create_dir_all(&to).unwrap();
            for e in std::fs::read_dir(&from).unwrap().flatten() {
                let name = e.file_name();
                let time_of = src.join(node).join("lab_gfs").join(node).join(&name);
                let target = if name.to_string_lossy().starts_with("time.") {
                    time_of
                } else {
                    e.path()
                };
                std::os::unix::fs::symlink(target, to.join(&name)).unwrap();
            }
        }
    }
    let nodes = [copy.join("n1"), copy.join("n2")];
    let nodes: Vec<&Path> = nodes.iter().map(PathBuf::as_path).collect();
    // The second without --cluster: its lock table names the cluster.
    for (fs, cluster) in [("gfs", &["--cluster", "lab"][..]), ("data", &[])] {
        export_fs(&dir, &nodes, fs, cluster);
    }
    // Two captures' files beside each other.
    let n1_events = dir.join("table=events/cluster=lab/node=n1");
    assert_eq!(std::fs::read_dir(&n1_events).unwrap().count(), 2);
    // (fs, glock) -> remote demotes, from the raw lines of each node's device of it.
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    for node in ["n1", "n2"] {
        let traces: Vec<PathBuf> = ["lab_gfs", "lab_data"]
            .iter()
            .map(|fs| src.join(node).join(fs).join(node))
            .filter(|d| d.join("trace_pipe.txt.xz").exists())
            .collect();
        assert_eq!(traces.len(), 1, "{node}: one trace");
        for (table, dev) in devices_by_table(&src.join(node)) {
            for l in trace(&traces[0]) {
                let head = format!(" gfs2_demote_rq: {dev} glock ");
                if l.contains(&head) && l.ends_with(" remote") {
                    let g = glock(after(&l, " glock ").unwrap());
                    *want.entry((table.clone(), g)).or_default() += 1;
                }
            }
        }
    }
    let hot = ("lab:gfs".to_string(), "2/1231".to_string());
    assert!(want.contains_key(&hot), "{want:?}");
    assert!(
        want.contains_key(&("lab:data".into(), "2/1231".into())),
        "{want:?}"
    );
    let got: BTreeMap<(String, String), u64> = ask(&dir, &["hot"])
        .iter()
        .filter(|r| r["remote_demotes"].as_u64().unwrap() > 0)
        .map(|r| {
            assert_eq!(r["cluster"], "lab");
            let key = (
                r["fs"].as_str().unwrap().to_string(),
                r["glock"].as_str().unwrap().to_string(),
            );
            (key, r["remote_demotes"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(got, want);
    // The storms of each filesystem are its own too.
    let storms: BTreeSet<String> = ask(&dir, &["storms", "--min-demotes", "2"])
        .iter()
        .filter(|r| r["glock"] == "2/1231")
        .map(|r| r["fs"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        storms,
        BTreeSet::from(["lab:data".into(), "lab:gfs".into()])
    );
    // A capture that names no lock table needs --cluster, and adds nothing without it.
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .arg("export")
        .arg(testdata::path("real/dlm2-6.1"))
        .args(["--dataset", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("give it with --cluster NAME"), "{err}");
    assert_eq!(std::fs::read_dir(&n1_events).unwrap().count(), 2);
    assert_eq!(
        std::fs::read_dir(dir.join("table=events")).unwrap().count(),
        1
    );
}

/// Each filesystem of the same sos reports (no snapshot time, so their captures' ids come
/// from the inputs and the filesystem) is a capture of its own, its `dlm_locks` rows every
/// lock line of its lockspace's `dlm_tool lockdebug` in each node's report; exported
/// again, a filesystem replaces only its own files.
#[test]
fn each_filesystem_of_sos_reports_is_a_capture_of_its_own() {
    let tarballs = testdata::files("real/two-filesystems-sos-6.12", |f| f.ends_with(".tar.gz"));
    assert_eq!(tarballs.len(), 2, "{tarballs:?}");
    let (_scratch, dir) = testdata::scratch_file("fleet-sos");
    // (fs, node) -> rows written to the dlm_locks table.
    let export = |ls: &str| -> BTreeMap<(String, String), u64> {
        export_fs(&dir, &tarballs, ls, &[])
            .lines()
            .filter(|l| l.contains("table=dlm_locks/"))
            .map(|l| {
                let rows = l.split_whitespace().next().unwrap().parse().unwrap();
                let node = after(l, "node=").unwrap().split('/').next().unwrap();
                ((ls.to_string(), node.to_string()), rows)
            })
            .collect()
    };
    let mut got = export("gfs");
    got.extend(export("data"));
    let mut want = BTreeMap::new();
    for (node, t) in ["n1", "n2"].iter().zip(&tarballs) {
        for ls in ["gfs", "data"] {
            let locks = testdata::sos_lockdebug_lines(t, ls) as u64;
            want.insert((ls.to_string(), node.to_string()), locks);
        }
    }
    assert_eq!(got, want);
    let files = || {
        std::fs::read_dir(dir.join("table=dlm_locks/cluster=lab/node=n1"))
            .unwrap()
            .count()
    };
    assert_eq!(files(), 2);
    export("gfs");
    assert_eq!(files(), 2);
}
