//! Answers that the golden reports only repeat, checked against the raw fixtures by code
//! that shares nothing with the analyses: plain string splitting of the trace and glocks
//! files, each rule written out again from its documentation (the README's analyze
//! section). Ping-pong, slow-DLM outliers, growing glock counts and unbalanced glocks.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{elements, glock_of_gfs2, str_of, u64_of};

/// `glk analyze --json --limit 0` of a fixture directory.
fn report(rel: &str) -> serde_json::Value {
    report_of(&testdata::path(rel))
}

/// Each node directory's trace lines of one event (`gfs2_glock_queue`...).
fn events(rel: &str, event: &str) -> BTreeMap<String, Vec<String>> {
    let needle = format!(" {event}: ");
    let mut out = BTreeMap::new();
    for node in nodes(rel) {
        let text = common::fixture_text(&format!("{rel}/{node}/trace_pipe.txt.xz"));
        let lines = text
            .lines()
            .filter(|l| l.contains(&needle))
            .map(str::to_string)
            .collect();
        out.insert(node, lines);
    }
    out
}

/// The node directories of a capture.
fn nodes(rel: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(testdata::path(rel))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The word after `key` in a line (`state` → `NL` in `state NL to PR`).
fn after<'a>(line: &'a str, key: &str) -> &'a str {
    line.split(key)
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
}

/// Strength of a DLM mode, as the README orders them: NL < CR < CW, PR < PW < EX.
fn strength(mode: &str) -> u8 {
    match mode {
        "CR" => 1,
        "CW" | "PR" => 2,
        "PW" => 3,
        "EX" => 4,
        _ => 0,
    }
}

/// (node, glock) → (queued, dequeued) from the `gfs2_glock_queue` lines.
fn queue_counts(rel: &str) -> BTreeMap<(String, String), (u64, u64)> {
    let mut counts: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for (node, lines) in events(rel, "gfs2_glock_queue") {
        for l in lines {
            let e = counts.entry((node.clone(), glock_of_gfs2(&l))).or_default();
            match l.split_whitespace().rev().nth(1) {
                Some("queue") => e.0 += 1,
                Some("dequeue") => e.1 += 1,
                other => panic!("{other:?} in {l}"),
            }
        }
    }
    counts
}

#[test]
fn unbalanced_glocks_are_the_queues_left_without_a_dequeue() {
    for rel in [
        "real/dlm2-6.1",
        "real/handoff-6.12",
        "real/dlmev612",
        "real/mount-holds-5.10",
    ] {
        let want: BTreeSet<(String, String, u64, u64)> = queue_counts(rel)
            .into_iter()
            .filter(|(_, (q, d))| q > d)
            .map(|((n, g), (q, d))| (n, g, q, d))
            .collect();
        let r = report(rel);
        let got: BTreeSet<(String, String, u64, u64)> =
            elements(&r["stuck_and_leaks"]["unbalanced"])
                .map(|u| {
                    (
                        str_of(u, "node"),
                        str_of(u, "glock"),
                        u64_of(u, "queued"),
                        u64_of(u, "dequeued"),
                    )
                })
                .collect();
        assert_eq!(got, want, "{rel}");
        // The iopen glocks, counted per node, come after the others.
        let mut iopen: BTreeMap<String, u64> = BTreeMap::new();
        for (node, ..) in want.iter().filter(|(_, g, ..)| g.starts_with("5/")) {
            *iopen.entry(node.clone()).or_default() += 1;
        }
        let held = &r["stuck_and_leaks"]["iopen_held"];
        assert_eq!(held, &serde_json::json!(iopen), "{rel}");
        let kinds: Vec<bool> = elements(&r["stuck_and_leaks"]["unbalanced"])
            .map(|u| str_of(u, "glock").starts_with("5/"))
            .collect();
        assert!(kinds.is_sorted(), "{rel}: an iopen glock before another");
        // Each names the command that queued it: that of the pid's last queue line.
        let comm_of = queue_comms(rel);
        for u in elements(&r["stuck_and_leaks"]["unbalanced"]) {
            let node = str_of(u, "node");
            let want: Vec<String> = elements(&u["pids"])
                .map(|p| {
                    let pid = p.as_i64().unwrap().to_string();
                    match comm_of.get(&(node.clone(), pid.clone())) {
                        Some(c) => format!("pid {pid} [{c}]"),
                        None => format!("pid {pid}"),
                    }
                })
                .collect();
            assert!(!want.is_empty(), "{rel} {node}: no pid");
            assert_eq!(u["queued_by"], serde_json::json!(want), "{rel} {node}");
        }
        parties_are_the_last_snapshots(rel, &r, &comm_of);
    }
}

/// Each unbalanced glock of `r` names the holders, then the waiters, of its node's last
/// glocks file, a process that had ended by the command in `comm_of`.
fn parties_are_the_last_snapshots(
    rel: &str,
    r: &serde_json::Value,
    comm_of: &BTreeMap<(String, String), String>,
) {
    let last: BTreeMap<String, LastSnapshot> = nodes(rel)
        .into_iter()
        .map(|n| (n.clone(), last_snapshot(rel, &n)))
        .collect();
    for u in elements(&r["stuck_and_leaks"]["unbalanced"]) {
        let (node, glock) = (str_of(u, "node"), str_of(u, "glock"));
        let snap = &last[&node];
        let lines = snap.lines.get(&glock).map(Vec::as_slice).unwrap_or(&[]);
        let mut want_cites = Vec::new();
        let mut want = (Vec::new(), Vec::new());
        for flag in ['H', 'W'] {
            for h in lines.iter().filter(|h| h.flags.contains(flag)) {
                assert!(
                    !(flag == 'W' && h.flags.contains('H')),
                    "{node} {glock} {h:?}"
                );
                want_cites.push(format!("{node}/{}:{}", snap.file, h.line));
                let side = if flag == 'H' {
                    &mut want.0
                } else {
                    &mut want.1
                };
                side.push(h);
            }
        }
        let cites: Vec<String> = elements(&u["cites"])
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        assert_eq!(cites, want_cites, "{rel} {node} {glock}");
        for (key, want) in [("holders", &want.0), ("waiters", &want.1)] {
            let got: Vec<&str> = elements(&u[key]).map(|h| h.as_str().unwrap()).collect();
            assert_eq!(got.len(), want.len(), "{rel} {node} {glock} {key}");
            for (g, h) in got.iter().zip(want) {
                assert!(g.ends_with(&format!(" {} {}", h.state, h.caller)), "{g}");
                // A process the glocks file says had ended is named by the command its
                // pid last queued a holder under in the trace, when it did.
                let queued_as = (h.comm == "(ended)")
                    .then(|| comm_of.get(&(node.clone(), h.pid.clone())))
                    .flatten();
                match queued_as {
                    Some(c) => assert!(
                        g.starts_with(&format!(
                            "pid {} [(ended)] (queued as {c} in the trace) ",
                            h.pid
                        )),
                        "{rel} {node} {glock}: {g}"
                    ),
                    None => assert!(!g.contains(" (queued as "), "{rel} {node}: {g}"),
                }
            }
        }
    }
}

/// (node, pid) → the command of that pid's last `gfs2_glock_queue … queue` line.
fn queue_comms(rel: &str) -> BTreeMap<(String, String), String> {
    let mut comm_of = BTreeMap::new();
    for (node, lines) in events(rel, "gfs2_glock_queue") {
        for l in lines
            .iter()
            .filter(|l| l.split_whitespace().rev().nth(1) == Some("queue"))
        {
            let task = l.split(" [").next().unwrap().trim();
            let (comm, pid) = task.rsplit_once('-').unwrap();
            if comm != "<...>" {
                comm_of.insert((node.clone(), pid.to_string()), comm.to_string());
            }
        }
    }
    comm_of
}

/// A trace that began before `mount` (5.10): every glock left queued that is not an iopen
/// glock was queued by the mount (its pid as the job recorded it, `$!`), and is held in the
/// last snapshot by that pid, which has ended.
#[test]
fn the_mounts_own_holds_are_named_for_the_mount() {
    let rel = "real/mount-holds-5.10";
    let r = report(rel);
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for u in elements(&r["stuck_and_leaks"]["unbalanced"]) {
        let (node, glock) = (str_of(u, "node"), str_of(u, "glock"));
        if glock.starts_with("5/") {
            continue;
        }
        let pid = common::fixture_text(&format!("{rel}/{node}/mount.pid"));
        let pid = pid.trim();
        assert_eq!(
            u["queued_by"],
            serde_json::json!([format!("pid {pid} [mount]")]),
            "{node} {glock}"
        );
        let holders: Vec<&str> = elements(&u["holders"])
            .map(|h| h.as_str().unwrap())
            .collect();
        assert_eq!(holders.len(), 1, "{node} {glock}");
        let ended = format!("pid {pid} [(ended)] (queued as mount in the trace) ");
        assert!(
            holders[0].starts_with(&ended),
            "{node} {glock}: {}",
            holders[0]
        );
        *per_node.entry(node).or_default() += 1;
    }
    // The live lock, the node's journal inode and journal glock, and its system inodes.
    assert_eq!(per_node.len(), 2, "{per_node:?}");
    assert!(per_node.values().all(|n| *n >= 4), "{per_node:?}");
}

/// A node's last glocks file: its name, and per glock its holder lines, by plain splitting.
struct LastSnapshot {
    file: String,
    lines: BTreeMap<String, Vec<HolderLine>>,
}

/// ` H: s:SH f:H e:0 p:426 [mount] gfs2_fill_super+0x811/0xd80 [gfs2]`, split.
#[derive(Debug)]
struct HolderLine {
    line: usize,
    flags: String,
    state: String,
    pid: String,
    comm: String,
    caller: String,
}

/// The `glocks.N` of `rel/node` with the largest N.
fn last_snapshot(rel: &str, node: &str) -> LastSnapshot {
    let (_, (file, text)) = glocks_snapshots(rel, node).pop_last().unwrap();
    LastSnapshot {
        file,
        lines: holder_lines(&text),
    }
}

/// A glocks file's holder lines per glock, by plain splitting.
fn holder_lines(text: &str) -> BTreeMap<String, Vec<HolderLine>> {
    let mut lines: BTreeMap<String, Vec<_>> = BTreeMap::new();
    let mut glock = String::new();
    for (i, l) in text.lines().enumerate() {
        if let Some(rest) = l.strip_prefix("G:") {
            glock = after(rest, "n:")
                .parse::<glockparse::GlockId>()
                .unwrap()
                .to_string();
        } else if let Some(rest) = l.trim_start().strip_prefix("H:") {
            let (head, caller) = rest.split_once("] ").unwrap();
            let line = HolderLine {
                line: i + 1,
                flags: after(rest, "f:").to_string(),
                state: after(rest, "s:").to_string(),
                pid: after(rest, "p:").to_string(),
                comm: head.split_once(" [").unwrap().1.to_string(),
                caller: caller.to_string(),
            };
            lines.entry(glock.clone()).or_default().push(line);
        }
    }
    lines
}

#[test]
fn dlm2_unbalanced_glocks_are_iopen_glocks_still_held_at_the_end() {
    // The 1012 unbalanced glocks of dlm2-6.1 are true to the rule, and every one is an
    // iopen glock (type 5) queued once more than dequeued whose holder is still granted
    // in the node's last glocks snapshot: an open or cached inode, held as long as it is,
    // not a leak.
    let r = report("real/dlm2-6.1");
    let unbalanced = r["stuck_and_leaks"]["unbalanced"].as_array().unwrap();
    assert_eq!(unbalanced.len(), 1012);
    let mut held: BTreeSet<(String, String)> = BTreeSet::new();
    for node in nodes("real/dlm2-6.1") {
        let last = last_snapshot("real/dlm2-6.1", &node);
        assert_eq!(last.file, "glocks.5");
        for (glock, lines) in last.lines {
            if lines.iter().any(|h| h.flags.contains('H')) {
                held.insert((node.clone(), glock));
            }
        }
    }
    for u in unbalanced {
        let (node, glock) = (u["node"].as_str().unwrap(), u["glock"].as_str().unwrap());
        assert!(glock.starts_with("5/"), "{node} {glock}");
        assert_eq!(u["balance"], 1, "{node} {glock}");
        assert!(
            held.contains(&(node.to_string(), glock.to_string())),
            "{node} {glock} not held in the last snapshot"
        );
    }
}

/// `glk analyze --json --limit 0` of any directory.
fn report_of(dir: &std::path::Path) -> serde_json::Value {
    report_with(dir, &[])
}

/// `glk analyze --json --limit 0 EXTRA...` of any directory.
fn report_with(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let args = [std::ffi::OsStr::new("analyze"), dir.as_os_str()];
    let limits = ["--json", "--limit", "0"].map(std::ffi::OsStr::new);
    let extra: Vec<&std::ffi::OsStr> = extra.iter().map(std::ffi::OsStr::new).collect();
    common::glk_json(&[&args[..], &limits[..], &extra[..]].concat())
}

/// Per node directory of `dir` (or `dir` itself, node ""): glock types whose `G:` count
/// grows from each `glocks.N` to the next over at least three snapshots.
fn growing_in(dir: &std::path::Path) -> BTreeSet<(String, String, Vec<u64>)> {
    let mut node_dirs: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    node_dirs.sort();
    if node_dirs.is_empty() {
        node_dirs.push(dir.to_path_buf());
    }
    let mut want = BTreeSet::new();
    for d in &node_dirs {
        let mut files: Vec<(u32, std::path::PathBuf)> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let i = name.strip_prefix("glocks.")?.parse().ok()?;
                Some((i, e.path()))
            })
            .collect();
        files.sort();
        let mut per_type: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (i, (_, f)) in files.iter().enumerate() {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut glockparse::input::open(f).unwrap(), &mut text)
                .unwrap();
            for l in text.lines().filter(|l| l.starts_with("G:")) {
                let id: glockparse::GlockId = after(l, "n:").parse().unwrap();
                let v = per_type
                    .entry(id.glock_type().name().into_owned())
                    .or_insert_with(|| vec![0; files.len()]);
                v[i] += 1;
            }
        }
        let node = if d == dir {
            String::new()
        } else {
            d.file_name().unwrap().to_string_lossy().into_owned()
        };
        for (t, counts) in per_type {
            if counts.len() >= 3 && counts.windows(2).all(|w| w[1] > w[0]) {
                want.insert((node.clone(), t, counts));
            }
        }
    }
    want
}

/// The report's growing glock types (node "" for a one-node capture without node
/// directories).
fn growing_reported(r: &serde_json::Value, one_node: bool) -> BTreeSet<(String, String, Vec<u64>)> {
    elements(&r["stuck_and_leaks"]["growing"])
        .map(|g| {
            let node = if one_node {
                ""
            } else {
                g["node"].as_str().unwrap()
            };
            (
                node.to_string(),
                g["type"].as_str().unwrap().to_string(),
                serde_json::from_value(g["counts"].clone()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn growing_types_are_counts_that_only_grow_over_three_snapshots() {
    for rel in [
        "real/dlm2-6.1",
        "real/handoff-6.1",
        "real/dlmev612",
        "real/nolock-6.1",
    ] {
        let dir = testdata::path(rel);
        let want = growing_in(&dir);
        let got = growing_reported(&report_of(&dir), nodes(rel).is_empty());
        assert_eq!(got, want, "{rel}");
    }
    // No real capture grew: one that does, made of a real glocks file written once, twice
    // and three times over (every type's count grows 1x, 2x, 3x).
    let (scratch, node) = testdata::scratch_file("n1");
    std::fs::create_dir(&node).unwrap();
    let text = common::fixture_text("real/dlm2-6.1/n1/glocks.0");
    for i in 0..3 {
        std::fs::write(node.join(format!("glocks.{i}")), text.repeat(i + 1)).unwrap();
    }
    let want = growing_in(scratch.path());
    assert!(want.len() >= 3, "{want:?}");
    assert_eq!(growing_reported(&report_of(scratch.path()), false), want);
}

/// (node, glock) → give-up-and-regain cycles: a remote demote request, then a state change
/// to a weaker mode, then one to a stronger mode again.
fn cycles(rel: &str) -> BTreeMap<(String, String), (u64, BTreeSet<String>)> {
    let mut out: BTreeMap<(String, String), (u64, BTreeSet<String>)> = BTreeMap::new();
    for node in nodes(rel) {
        let text = common::fixture_text(&format!("{rel}/{node}/trace_pipe.txt.xz"));
        // (demoted, lowered) per glock.
        let mut state: BTreeMap<String, (bool, bool)> = BTreeMap::new();
        for l in text.lines() {
            let demote = l.contains(" gfs2_demote_rq: ") && l.ends_with(" remote");
            let change = l.contains(" gfs2_glock_state_change: ");
            if !demote && !change {
                continue;
            }
            let g = glock_of_gfs2(l);
            let s = state.entry(g.clone()).or_default();
            if demote {
                s.0 = true;
                continue;
            }
            let (from, to) = (after(l, " state "), after(l, " to "));
            if s.0 && strength(to) < strength(from) {
                *s = (false, true);
            } else if s.1 && strength(to) > strength(from) {
                s.1 = false;
                let e = out.entry((node.clone(), g)).or_default();
                e.0 += 1;
                e.1.insert(to.to_string());
            }
        }
    }
    out
}

#[test]
fn ping_pong_is_two_nodes_giving_a_glock_up_and_regaining_it() {
    for rel in ["real/dlm2-6.1", "real/handoff-6.12", "real/dlmev612"] {
        let mut per_glock: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for ((node, glock), (n, _)) in cycles(rel) {
            per_glock.entry(glock).or_default().insert(node, n);
        }
        // At least 3 cycles (the default) on each of at least two nodes.
        let want: BTreeMap<String, BTreeMap<String, u64>> = per_glock
            .into_iter()
            .filter(|(_, c)| c.values().filter(|n| **n >= 3).count() >= 2)
            .collect();
        let r = report(rel);
        let got: BTreeMap<String, BTreeMap<String, u64>> = elements(&r["ping_pong"])
            .map(|p| {
                (
                    p["glock"].as_str().unwrap().to_string(),
                    serde_json::from_value(p["cycles"].clone()).unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{rel}");
        if rel == "real/dlm2-6.1" {
            assert_eq!(got.len(), 4, "{got:?}");
        }
    }
}

/// The `q` quantile of sorted values, nearest rank.
fn quantile(v: &[u64], q: f64) -> u64 {
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

#[test]
fn slow_dlm_outliers_have_a_p99_ten_times_their_types_median() {
    for rel in ["real/dlm2-6.1", "real/handoff-6.1", "real/dlmev612"] {
        let mut per_glock: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (_, lines) in events(rel, "gfs2_glock_lock_time") {
            for l in lines {
                let tdiff: i64 = after(&l, "tdiff:").parse().unwrap();
                if let Ok(t) = u64::try_from(tdiff) {
                    per_glock.entry(glock_of_gfs2(&l)).or_default().push(t);
                }
            }
        }
        let mut per_type: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (g, v) in &mut per_glock {
            v.sort_unstable();
            let t = g.split('/').next().unwrap().to_string();
            per_type.entry(t).or_default().extend(v.iter().copied());
        }
        let median: BTreeMap<String, u64> = per_type
            .into_iter()
            .map(|(t, mut v)| {
                v.sort_unstable();
                (t, quantile(&v, 0.5))
            })
            .collect();
        let want: BTreeSet<String> = per_glock
            .iter()
            .filter(|(g, v)| {
                let m = median[g.split('/').next().unwrap()];
                m > 0 && quantile(v, 0.99) >= 10 * m
            })
            .map(|(g, _)| g.clone())
            .collect();
        let r = report(rel);
        let got: BTreeSet<String> = elements(&r["slow_dlm"])
            .filter(|s| s["outlier"] == true)
            .map(|s| s["glock"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, want, "{rel}");
    }
}

/// Each waiter of the glocks files (a `W` holder line), judged by plain splitting as the
/// README's part 7 says: a waiter in the run of the node's snapshots through its last is
/// `stuck` once it has waited at least `--stuck-after` by the snapshots' clock (the `time.N`
/// of the run's first and last) or by its DLM request's queue age (the longest a last dump
/// gives a waiting lock of its node, glock and pid), `waiting` otherwise; the snapshots
/// before that run saw a wait that ended, `progressed`. One waiter is its node, glock, pid
/// and call site; a holder line without a pid (`p:0`, flocks on 6.12) is the DLM lock's.
/// The report must give each waiter's span and DLM age as found here, too.
#[test]
fn waiters_are_judged_by_the_one_stuck_rule() {
    let mut verdicts = BTreeSet::new();
    for rel in [
        "real/dlm2-6.1",
        "real/flock-deadlock-6.12/wait",
        "real/flock-deadlock-6.12/deadlock",
        "real/deadlock-family-6.12/capture",
        "real/deadlock-family-5.10/capture",
        "real/deadlock-family-6.12/plain-12s",
        "real/deadlock-family-6.12/plain-50s",
        "real/doctor-deadlock-6.12",
        "real/handoff-6.12",
        "real/handoff-6.1",
    ] {
        for after in [None, Some(5.0), Some(0.5)] {
            let threshold = after.unwrap_or(30.0);
            let r = match after {
                None => report(rel),
                Some(a) => report_with(&testdata::path(rel), &["--stuck-after", &a.to_string()]),
            };
            let nodeid: BTreeMap<String, u64> = elements(&r["nodes"])
                .filter(|n| n["nodeid"].is_u64())
                .map(|n| (str_of(n, "node"), u64_of(n, "nodeid")))
                .collect();
            let dlm = last_dlm_waits(rel, &nodeid);
            let want: Verdicts = nodes(rel)
                .iter()
                .flat_map(|node| judged(rel, node, nodeid.get(node), &dlm, threshold))
                .collect();
            let s = &r["stuck_and_leaks"];
            assert_eq!(s["stuck_after_secs"], threshold, "{rel}");
            let got: Verdicts = ["stuck", "waiting", "progressed"]
                .iter()
                .flat_map(|k| elements(&s[*k]))
                .map(|w| {
                    (
                        str_of(w, "node"),
                        str_of(w, "glock"),
                        str_of(w, "verdict"),
                        u64_of(w, "first_snapshot"),
                        u64_of(w, "last_snapshot"),
                        w["span_secs"].as_f64().map(|s| (s * 1e3).round() as i64),
                        w["dlm_age_us"].as_u64(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{rel} --stuck-after {threshold}");
            for k in ["stuck", "waiting", "progressed"] {
                assert!(elements(&s[k]).all(|w| w["verdict"] == *k), "{rel} {k}");
            }
            verdicts.extend(want.into_iter().map(|w| (threshold.to_string(), w.2)));
        }
    }
    // Each verdict occurs at the default threshold and at each other.
    for threshold in ["30", "5", "0.5"] {
        let at = verdicts.iter().filter(|v| v.0 == threshold).count();
        assert_eq!(at, 3, "--stuck-after {threshold}: {verdicts:?}");
    }
}

/// Waiters' verdicts: (node, glock, verdict, first snapshot, last snapshot, the snapshots'
/// span in ms, the DLM age in µs).
type Verdicts = BTreeSet<(String, String, String, u64, u64, Option<i64>, Option<u64>)>;

/// The verdicts of the waiters of `rel/node` by the rule above, with `nodeid` its DLM node
/// id, `dlm` the waiting locks of every node's last dump ([`last_dlm_waits`]).
fn judged(
    rel: &str,
    node: &str,
    nodeid: Option<&u64>,
    dlm: &[(u64, String, String, u64)],
    threshold: f64,
) -> Verdicts {
    let mut seen: BTreeMap<(String, String, String), BTreeSet<u64>> = BTreeMap::new();
    let snaps = glocks_snapshots(rel, node);
    for (n, (_, text)) in &snaps {
        for (glock, lines) in holder_lines(text) {
            for h in lines.into_iter().filter(|h| h.flags.contains('W')) {
                let key = (glock.clone(), h.pid, h.caller);
                seen.entry(key).or_default().insert(*n);
            }
        }
    }
    let dir = testdata::path(&format!("{rel}/{node}"));
    let time = |n: u64| {
        let t = std::fs::read_to_string(dir.join(format!("time.{n}")));
        t.ok().map(|t| t.trim().parse::<f64>().unwrap())
    };
    let all: Vec<u64> = snaps.keys().copied().collect();
    let mut out = Verdicts::new();
    for ((glock, pid, _), s) in seen {
        let run = all.iter().rev().take_while(|x| s.contains(x)).count();
        let (before, through) = all.split_at(all.len() - run);
        let ended: Vec<u64> = before.iter().filter(|x| s.contains(x)).copied().collect();
        if let (Some(a), Some(b)) = (ended.first(), ended.last()) {
            let verdict = "progressed".into();
            out.insert((node.into(), glock.clone(), verdict, *a, *b, None, None));
        }
        if run == 0 {
            continue;
        }
        let (a, b) = (through[0], through[run - 1]);
        let span = match (run, time(a), time(b)) {
            (2.., Some(ta), Some(tb)) => Some(tb - ta),
            _ => None,
        };
        let age_us = nodeid.and_then(|id| {
            dlm.iter()
                .filter(|d| d.0 == *id && d.1 == glock && (pid == "0" || d.2 == pid))
                .map(|d| d.3)
                .max()
        });
        let age = age_us.map(|us| us as f64 / 1e6);
        let stuck = [span, age].into_iter().flatten().any(|w| w >= threshold);
        let verdict = if stuck { "stuck" } else { "waiting" };
        let span_ms = span.map(|s| (s * 1e3).round() as i64);
        out.insert((node.into(), glock, verdict.into(), a, b, span_ms, age_us));
    }
    out
}

/// The DLM locks waiting (a status other than granted, 2) in each node's last lock dump,
/// by plain splitting: (the asking node's id, the glock, the pid, µs in the queue). A
/// master copy (flags `0x10000`) is asked by the dump's `nodeid`; any other lock by the
/// dumping node.
fn last_dlm_waits(rel: &str, nodeid: &BTreeMap<String, u64>) -> Vec<(u64, String, String, u64)> {
    let mut out = Vec::new();
    for node in nodes(rel) {
        let dir = testdata::path(&format!("{rel}/{node}"));
        let last = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name == "dlm_locks" || name.starts_with("dlm_locks."))
            .max_by_key(|name| name.rsplit('.').next().unwrap().parse::<u64>().unwrap_or(0));
        let Some(last) = last else { continue };
        let text = common::fixture_text(&format!("{rel}/{node}/{last}"));
        // id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len r_name
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f[7] == "2" {
                continue;
            }
            let master_copy = u64::from_str_radix(f[6], 16).unwrap() & 0x10000 != 0;
            let asker = match master_copy {
                true => f[1].parse().unwrap(),
                false => match nodeid.get(&node) {
                    Some(id) => *id,
                    None => continue,
                },
            };
            out.push((
                asker,
                dlm_resource(line),
                f[3].to_string(),
                f[10].parse().unwrap(),
            ));
        }
    }
    out
}

/// The glock a DLM dump line's resource names: `"       6           60818"` → `6/60818`.
fn dlm_resource(line: &str) -> String {
    let name: Vec<&str> = line.split('"').nth(1).unwrap().split_whitespace().collect();
    format!("{}/{}", name[0], name[1])
}

/// The glocks snapshots of `rel/node`: N → the file's name and text.
fn glocks_snapshots(rel: &str, node: &str) -> BTreeMap<u64, (String, String)> {
    std::fs::read_dir(testdata::path(&format!("{rel}/{node}")))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // `glocks.N` (plain or compressed) of a capture; a plain copy's `glocks` is one
            // snapshot, 0.
            let n = match name.strip_prefix("glocks")? {
                "" => 0,
                rest => rest.strip_prefix('.')?.split('.').next()?.parse().ok()?,
            };
            let text = common::fixture_text(&format!("{rel}/{node}/{name}"));
            Some((n, (name, text)))
        })
        .collect()
}

/// Each DLM lock waiting in a node's last dump cites its line (pid, a status other than
/// granted, the glock's resource, the age in microseconds), and part 7's text gives each
/// waiter still waiting at the end the longest age any last dump shows for its request
/// (same glock, node id and pid).
#[test]
fn dlm_waits_cite_their_lines_and_age_the_waiters() {
    for rel in [
        "real/doctor-deadlock-6.12",
        "real/flock-deadlock-6.12/deadlock",
    ] {
        let r = report(rel);
        let s = &r["stuck_and_leaks"];
        let waits: Vec<&serde_json::Value> = elements(&s["dlm_waits"]).collect();
        assert!(!waits.is_empty(), "{rel}");
        for d in &waits {
            let cite = str_of(d, "cite");
            let (file, n) = cite.rsplit_once(':').unwrap();
            let text = common::fixture_text(&format!("{rel}/{file}"));
            let line = text.lines().nth(n.parse::<usize>().unwrap() - 1).unwrap();
            // id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len r_name
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f[3], d["pid"].to_string(), "{cite}: {line}");
            assert_ne!(f[7], "2", "{cite}: {line}");
            assert_eq!(f[10], d["age_us"].to_string(), "{cite}: {line}");
            assert_eq!(dlm_resource(line), str_of(d, "glock"), "{cite}: {line}");
        }
        let nodeid: BTreeMap<String, u64> = elements(&r["nodes"])
            .map(|n| (str_of(n, "node"), u64_of(n, "nodeid")))
            .collect();
        let out = common::glk_text(&[
            std::ffi::OsStr::new("analyze"),
            testdata::path(rel).as_os_str(),
        ]);
        let mut aged = 0;
        for w in elements(&s["stuck"]).chain(elements(&s["waiting"])) {
            let (node, glock) = (str_of(w, "node"), str_of(w, "glock"));
            let longest = waits
                .iter()
                .filter(|d| str_of(d, "glock") == glock && d["pid"] == w["pid"])
                .filter(|d| d["owner_nodeid"] == nodeid[&node])
                .max_by_key(|d| u64_of(d, "age_us"));
            let line = out
                .lines()
                .find(|l| l.contains(&format!(" {node} {glock} pid {} ", w["pid"])))
                .unwrap_or_else(|| panic!("{rel}: no line for {w}"));
            match longest {
                Some(d) => {
                    let cite = format!(" ({})", str_of(d, "cite"));
                    assert!(line.contains("; its DLM request has waited "), "{line}");
                    assert!(line.ends_with(&cite), "{line}");
                    aged += 1;
                }
                None => assert!(!line.contains("its DLM request"), "{line}"),
            }
        }
        assert!(aged >= 2, "{rel}");
    }
}
