//! Cross-node causality (`glk analyze`: clock_alignment, dlm_latency, handoffs,
//! demote_causes, `--timeline`) on three real two-node captures with gfs2 and dlm events:
//! `dlmev612` (6.12, `date` markers), `handoff-6.1` and `handoff-6.12` (glk capture, glk
//! markers). Every reconstructed hand-off is checked against the raw trace lines, parsed
//! here with plain string splitting, independently of glk's decoders.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{elements, glock_of_gfs2, i64_of, str_of};

const FIXTURES: [&str; 3] = ["real/dlmev612", "real/handoff-6.1", "real/handoff-6.12"];

fn analyze(fixture: &str, extra: &[&str]) -> serde_json::Value {
    analyze_dir(&testdata::path(fixture), extra)
}

/// `glk analyze DIR --json --limit 0 EXTRA...`.
fn analyze_dir(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![std::ffi::OsStr::new("analyze"), dir.as_os_str()];
    args.extend(
        ["--json", "--limit", "0"]
            .iter()
            .chain(extra)
            .map(std::ffi::OsStr::new),
    );
    common::glk_json(&args)
}

/// A node's trace text, decompressed.
fn trace_text(fixture: &str, node: &str) -> String {
    common::fixture_text(&format!("{fixture}/{node}/trace_pipe.txt.xz"))
}

/// One raw trace line: timestamp (µs), event name, `key=value` fields.
struct Raw {
    us: u64,
    event: String,
    fields: HashMap<String, String>,
}

fn raw(fixture: &str, node: &str) -> Vec<Raw> {
    trace_text(fixture, node)
        .lines()
        .filter_map(|l| {
            let after = l.split("] ").nth(1)?;
            let mut words = after.split_whitespace().skip_while(|w| !w.ends_with(':'));
            let ts = words.next()?.trim_end_matches(':');
            let event = words.next()?.trim_end_matches(':').to_string();
            let (secs, micros) = ts.split_once('.')?;
            let us = secs.parse::<u64>().ok()? * 1_000_000 + micros.parse::<u64>().ok()?;
            let fields = words
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.trim_end_matches(',').to_string()))
                .collect();
            Some(Raw { us, event, fields })
        })
        .collect()
}

/// The glock (`2/4101c`) of a hex resource name, as lock_dlm names glocks (`%8x%16x`).
fn glock(res: &str) -> String {
    let res = res.trim_start_matches("0x");
    let bytes: Vec<u8> = (0..res.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&res[i..i + 2], 16).unwrap())
        .collect();
    let name = String::from_utf8(bytes).unwrap();
    format!("{}/{}", name[..8].trim(), name[8..].trim())
}

/// The raw gfs2 lines of a node with their times (µs).
fn gfs2_lines(fixture: &str, node: &str) -> Vec<(u64, String)> {
    trace_text(fixture, node)
        .lines()
        .filter(|l| l.contains(": gfs2_"))
        .filter_map(|l| {
            let ts = l
                .split("] ")
                .nth(1)?
                .split_whitespace()
                .find(|w| w.ends_with(':'))?;
            let (a, b) = ts.trim_end_matches(':').split_once('.')?;
            Some((
                a.parse::<u64>().ok()? * 1_000_000 + b.parse::<u64>().ok()?,
                l.to_string(),
            ))
        })
        .collect()
}

/// `NODE@SECS.MICROS` → (node, µs).
fn at(e: &serde_json::Value) -> (String, u64) {
    let (n, t) = e.as_str().unwrap().split_once('@').unwrap();
    let (s, us) = t.split_once('.').unwrap();
    (
        n.to_string(),
        s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap(),
    )
}

fn find<'a>(lines: &'a [Raw], us: u64, event: &str, res_glock: &str) -> Vec<&'a Raw> {
    lines
        .iter()
        .filter(|l| l.us == us && l.event == event)
        .filter(|l| {
            l.fields
                .get("res_name")
                .is_some_and(|r| glock(r) == res_glock)
        })
        .collect()
}

/// The lock id (`lkb_id`) of hand-off `h`'s one `event` line at `us`: the line
/// [`find`] finds for its glock, in its DLM mode (fixture `fx`).
fn lock_of<'a>(
    fx: &str,
    h: &serde_json::Value,
    lines: &'a [Raw],
    us: u64,
    event: &str,
) -> &'a String {
    let mut v = find(lines, us, event, h["glock"].as_str().unwrap());
    v.retain(|l| l.fields["mode"] == h["mode"]);
    assert_eq!(v.len(), 1, "{fx}: {event} at {us} of {h}");
    &v[0].fields["lkb_id"]
}

fn compatible(a: &str, b: &str) -> bool {
    // The DLM compatibility matrix over NL CR CW PR PW EX.
    let i = |m: &str| {
        ["NL", "CR", "CW", "PR", "PW", "EX"]
            .iter()
            .position(|x| *x == m)
            .unwrap()
    };
    const M: [[bool; 6]; 6] = [
        [true, true, true, true, true, true],
        [true, true, true, true, true, false],
        [true, true, true, false, false, false],
        [true, true, false, true, false, false],
        [true, true, false, false, false, false],
        [true, false, false, false, false, false],
    ];
    M[i(a)][i(b)]
}

#[test]
fn every_handoff_is_in_the_raw_events() {
    for fx in FIXTURES {
        let v = analyze(fx, &[]);
        let traces: BTreeMap<String, Vec<Raw>> = ["n1", "n2"]
            .iter()
            .map(|n| (n.to_string(), raw(fx, n)))
            .collect();
        let gfs2: BTreeMap<String, Vec<(u64, String)>> = ["n1", "n2"]
            .iter()
            .map(|n| (n.to_string(), gfs2_lines(fx, n)))
            .collect();
        let offset: HashMap<String, i64> = elements(&v["clock_alignment"])
            .map(|a| (str_of(a, "node"), i64_of(a, "offset_ns")))
            .collect();
        let handoffs = v["handoffs"].as_array().unwrap();
        assert!(handoffs.len() > 100, "{fx}: {} hand-offs", handoffs.len());
        for h in handoffs {
            check_handoff(fx, h, &traces, &gfs2, &offset);
        }
        check_demote_causes(fx, &v, &traces, handoffs.len());
    }
}

/// One hand-off against the raw events: its four evidence lines are real events of the
/// right kind, glock and mode, in order on the aligned clock.
fn check_handoff(
    fx: &str,
    h: &serde_json::Value,
    traces: &BTreeMap<String, Vec<Raw>>,
    gfs2: &BTreeMap<String, Vec<(u64, String)>>,
    offset: &HashMap<String, i64>,
) {
    let g = h["glock"].as_str().unwrap();
    let mode = h["mode"].as_str().unwrap();
    let ev = h["evidence"].as_array().unwrap();
    assert_eq!(ev.len(), 4, "{fx} {h}");
    let (rn, req_us) = at(&ev[0]);
    let (hn, bast_us) = at(&ev[1]);
    let (hn2, rel_us) = at(&ev[2]);
    let (rn2, grant_us) = at(&ev[3]);
    assert_eq!(
        (rn.as_str(), hn.as_str()),
        (
            h["requester_node"].as_str().unwrap(),
            h["holder_node"].as_str().unwrap()
        )
    );
    assert_eq!((&rn2, &hn2), (&rn, &hn));
    assert_ne!(rn, hn);
    let (rt, ht) = (&traces[&rn], &traces[&hn]);
    // The request: dlm_lock_start of this glock for this mode.
    let lkb = lock_of(fx, h, rt, req_us, "dlm_lock_start");
    // The grant: the dlm_ast of the same lock, status 0.
    assert!(
        find(rt, grant_us, "dlm_ast", g)
            .iter()
            .any(|l| &l.fields["lkb_id"] == lkb && l.fields["sb_status"] == "0"),
        "{fx}: grant of {h}"
    );
    // No other completion of that lock between request and grant.
    assert!(!rt.iter().any(|l| l.us > req_us
        && l.us < grant_us
        && l.event == "dlm_ast"
        && &l.fields["lkb_id"] == lkb
        && l.fields.get("res_name").is_some_and(|r| glock(r) == g)));
    // The bast on the holder wants the request's mode.
    let hlkb = lock_of(fx, h, ht, bast_us, "dlm_bast");
    // The release: the same lock converted to a compatible mode, or unlocked.
    assert!(
        find(ht, rel_us, "dlm_lock_start", g)
            .iter()
            .any(|l| &l.fields["lkb_id"] == hlkb && compatible(&l.fields["mode"], mode))
            || find(ht, rel_us, "dlm_unlock_start", g)
                .iter()
                .any(|l| &l.fields["lkb_id"] == hlkb),
        "{fx}: release of {h}"
    );
    assert!(bast_us <= rel_us && req_us < grant_us);
    // Holder hops sum to bast → release; cross-node hops use the offsets.
    let (w, k) = (
        h["holder_wait_ns"].as_u64().unwrap(),
        h["holder_work_ns"].as_u64().unwrap(),
    );
    assert_eq!(w + k, (rel_us - bast_us) * 1000, "{fx} {h}");
    let o = offset[&hn] - offset[&rn];
    assert_eq!(
        h["request_to_bast_ns"].as_i64().unwrap(),
        (bast_us as i64 - req_us as i64) * 1000 + o
    );
    assert_eq!(
        h["release_to_grant_ns"].as_i64().unwrap(),
        (grant_us as i64 - rel_us as i64) * 1000 - o
    );
    // The bast lies between request and grant on the aligned clock, within the
    // uncertainty.
    let u = h["uncertainty_ns"].as_i64().unwrap();
    assert!(h["request_to_bast_ns"].as_i64().unwrap() >= -u);
    assert!(h["release_to_grant_ns"].as_i64().unwrap() >= -u);
    // The first waiter: a gfs2_glock_queue of this glock on the requester.
    if let Some(q) = h["queue_ns"].as_u64() {
        let queued = req_us - q / 1000;
        assert!(
            rt.iter()
                .any(|l| l.us == queued && l.event == "gfs2_glock_queue" && l.fields.is_empty()),
            "{fx}: queue of {h}"
        );
        assert!(gfs2[&rn].iter().any(|(us, line)| *us == queued
            && line.contains("gfs2_glock_queue")
            && line.contains(" queue ")
            && glock_of_gfs2(line) == g));
    }
    if let Some(p) = h["grant_to_promote_ns"].as_u64() {
        let promote = grant_us + p / 1000;
        assert!(
            rt.iter()
                .any(|l| l.us == promote && l.event == "gfs2_promote"),
            "{fx} {h}"
        );
    }
}

/// Every blocking AST is counted once in demote_causes, by node and glock, and each
/// hand-off is one attributed demote.
fn check_demote_causes(
    fx: &str,
    v: &serde_json::Value,
    traces: &BTreeMap<String, Vec<Raw>>,
    handoffs: usize,
) {
    // Every bast is counted once in demote_causes, by node and glock.
    let mut raw_basts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (n, t) in traces {
        for l in t.iter().filter(|l| l.event == "dlm_bast") {
            *raw_basts
                .entry((n.clone(), glock(&l.fields["res_name"])))
                .or_default() += 1;
        }
    }
    let mut causes: BTreeMap<(String, String), u64> = BTreeMap::new();
    for c in v["demote_causes"].as_array().unwrap() {
        assert_eq!(c["source"], "dlm_bast");
        *causes
            .entry((
                c["node"].as_str().unwrap().into(),
                c["glock"].as_str().unwrap().into(),
            ))
            .or_default() += c["count"].as_u64().unwrap();
        // In a two-node cluster the cause, when found, is the other node.
        if let Some(by) = c["caused_by_node"].as_str() {
            assert_ne!(by, c["node"].as_str().unwrap());
        }
    }
    assert_eq!(causes, raw_basts, "{fx}");
    let attributed: u64 = elements(&v["demote_causes"])
        .filter(|c| !c["caused_by_node"].is_null())
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(attributed, handoffs as u64);
}

/// Requests (lock_start → its ast, unlocks excluded) and which sent a REQUEST/CONVERT
/// message for their lock before the grant (remotely mastered), from the raw lines.
fn raw_requests(t: &[Raw]) -> (u64, u64) {
    let mut open: HashMap<String, bool> = HashMap::new();
    let mut unlocking: HashMap<String, ()> = HashMap::new();
    let (mut all, mut remote) = (0, 0);
    for l in t {
        match l.event.as_str() {
            "dlm_lock_start" => {
                open.insert(l.fields["lkb_id"].clone(), false);
            }
            "dlm_unlock_start" => {
                unlocking.insert(l.fields["lkb_id"].clone(), ());
            }
            "dlm_send_message"
                if l.fields.get("h_cmd").is_some_and(|c| c == "MSG")
                    && matches!(l.fields["m_type"].as_str(), "REQUEST" | "CONVERT") =>
            {
                let lkb = format!("{:x}", l.fields["m_lkid"].parse::<u32>().unwrap());
                if let Some(r) = open.get_mut(&lkb) {
                    *r = true;
                }
            }
            "dlm_ast" => {
                let lkb = &l.fields["lkb_id"];
                if unlocking.remove(lkb).is_some() {
                    continue;
                }
                if let Some(r) = open.remove(lkb) {
                    all += 1;
                    remote += u64::from(r);
                }
            }
            _ => {}
        }
    }
    (all, remote)
}

#[test]
fn dlm_latency_by_master_counts_the_raw_requests() {
    for fx in FIXTURES {
        let v = analyze(fx, &[]);
        for n in ["n1", "n2"] {
            let (all, remote) = raw_requests(&raw(fx, n));
            let rows: Vec<&serde_json::Value> = elements(&v["dlm_latency"])
                .filter(|r| r["node"] == n && r["measure"] == "request_to_grant")
                .collect();
            let count = |f: &dyn Fn(&serde_json::Value) -> bool| -> u64 {
                rows.iter()
                    .filter(|r| f(r))
                    .map(|r| r["count"].as_u64().unwrap())
                    .sum()
            };
            assert_eq!(count(&|_| true), all, "{fx} {n}");
            assert_eq!(count(&|r| r["master"] == "remote"), remote, "{fx} {n}");
            // A remote master is the other node; a local one this node.
            for r in &rows {
                match r["master"].as_str().unwrap() {
                    "remote" => assert_ne!(r["master_node"], n),
                    "local" => assert_eq!(r["master_node"], n),
                    _ => assert!(r["master_node"].is_null()),
                }
                assert!(r["p50_ns"].as_u64() <= r["p99_ns"].as_u64());
                assert!(r["p99_ns"].as_u64() <= r["max_ns"].as_u64());
            }
            // gfs2's tdiff of the same replies: one per gfs2_glock_lock_time line that
            // follows a grant.
            assert!(count(&|_| true) > 0);
        }
        // Unblocked remote requests from n2 cross the 25 ms link; unblocked local ones on
        // n1 do not: the split shows the two peaks.
        let p50 = |node: &str, master: &str| {
            elements(&v["dlm_latency"])
                .find(|r| {
                    r["node"] == node
                        && r["master"] == master
                        && r["measure"] == "request_to_grant"
                        && r["conversion"] == "up"
                        && r["blocked"] == false
                })
                .map(|r| r["p50_ns"].as_u64().unwrap())
        };
        assert!(p50("n1", "local").unwrap() < 5_000_000, "{fx}");
        // Up-conversions from n2 to n1's resources cross the 25 ms link both ways.
        assert!(p50("n2", "remote").unwrap() > 25_000_000, "{fx}");
    }
}

#[test]
fn clocks_are_aligned_within_what_the_messages_allow() {
    for fx in FIXTURES {
        let v = analyze(fx, &[]);
        let a = v["clock_alignment"].as_array().unwrap();
        assert_eq!(a.len(), 2);
        let (n1, n2) = (&a[0], &a[1]);
        assert_eq!(n2["method"], "messages", "{fx}");
        assert_eq!(n2["reference"], "n1");
        // Half the shortest round trip: n2's 25 ms of delay one way, more than 5 ms either way.
        let rel = n2["relative_uncertainty_ns"].as_i64().unwrap();
        assert!((12_500_000..20_000_000).contains(&rel), "{fx}: {rel}");
        // Every message matched in the raw lines arrives after it left, on the aligned
        // clocks, within the uncertainty.
        let (o1, o2) = (
            n1["offset_ns"].as_i64().unwrap(),
            n2["offset_ns"].as_i64().unwrap(),
        );
        let key = |l: &Raw| {
            let f = &l.fields;
            let seq = f.get("h_seq").or(f.get("seq")).unwrap().clone();
            (
                f["h_nodeid"].clone(),
                seq,
                f["m_type"].clone(),
                f["m_lkid"].clone(),
            )
        };
        let msgs = |n: &str, ev: &str| -> HashMap<(String, String, String, String), u64> {
            raw(fx, n)
                .iter()
                .filter(|l| l.event == ev && l.fields.get("h_cmd").is_some_and(|c| c == "MSG"))
                .map(|l| (key(l), l.us))
                .collect()
        };
        let mut checked = 0;
        for (from, to, of, ot) in [("n1", "n2", o1, o2), ("n2", "n1", o2, o1)] {
            let sent = msgs(from, "dlm_send_message");
            for (k, r) in msgs(to, "dlm_recv_message") {
                if let Some(s) = sent.get(&k) {
                    checked += 1;
                    let (s, r) = (*s as i64 * 1000 + of, r as i64 * 1000 + ot);
                    assert!(
                        r + rel >= s,
                        "{fx}: message {k:?} received before it was sent"
                    );
                }
            }
        }
        assert!(checked > 1000, "{fx}: {checked}");
        let (m1, m2) = (
            n1["messages"].as_array().unwrap(),
            n2["messages"].as_array().unwrap(),
        );
        assert_eq!(m1, &[0, 0]);
        assert!(m2[0].as_u64().unwrap() + m2[1].as_u64().unwrap() > 1000);
        if fx.contains("handoff") {
            // glk's markers bound n1's offset from both sides; the lab VMs' wall clocks
            // (from the host RTC at boot) disagree by far more than the messages allow.
            assert_eq!(n1["method"], "markers");
            assert_eq!(n1["trace_clock"], "local");
            assert!(n1["uncertainty_ns"].as_u64().unwrap() < 5_000_000);
            assert_eq!(n1["markers"], serde_json::json!([2, 2]));
            let d = n2["wall_clock_disagreement_ns"].as_i64().unwrap();
            assert!(d.unsigned_abs() > 50_000_000, "{fx}: {d}");
        } else {
            // `date` into trace_marker: lower bounds only.
            assert_eq!(n1["method"], "markers_lower_bound");
            assert_eq!(n1["markers"], serde_json::json!([14, 0]));
        }
    }
}

/// Slices on one track (pid, tid) nest or follow each other, never overlap in part:
/// Perfetto's JSON importer does not take partly overlapping slices (they are dropped or
/// drawn wrong). Times in whole nanoseconds, as Perfetto keeps them.
fn assert_slices_nest(events: &[serde_json::Value]) -> usize {
    let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    /// A slice: start and end (ns) and name.
    type Slice = (i64, i64, String);
    let mut tracks: HashMap<(u64, u64), Vec<Slice>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let (start, name) = (ns(&e["ts"]), e["name"].as_str().unwrap().to_string());
        let end = start + ns(&e["dur"]);
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        tracks.entry(key).or_default().push((start, end, name));
    }
    let mut checked = 0;
    for (key, mut slices) in tracks {
        // Outer slices first where two start together.
        slices.sort_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<&Slice> = Vec::new();
        for s in &slices {
            while open.last().is_some_and(|o| o.1 <= s.0) {
                open.pop();
            }
            if let Some(o) = open.last() {
                assert!(
                    s.1 <= o.1,
                    "track {key:?}: {s:?} overlaps {o:?} without nesting"
                );
            }
            open.push(s);
            checked += 1;
        }
    }
    checked
}

#[test]
fn every_timeline_nests_its_slices() {
    for fx in ["real/handoff-6.12", "real/handoff-6.1", "real/dlmev612"] {
        let (_dir, path) = testdata::scratch_file("timeline.json");
        analyze(fx, &["--timeline", path.to_str().unwrap()]);
        let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let slices = assert_slices_nest(t["traceEvents"].as_array().unwrap());
        assert!(slices > 0, "{fx}: no slices");
    }
}

#[test]
fn the_timeline_binds_every_arrow_to_a_slice() {
    let (_dir, path) = testdata::scratch_file("timeline.json");
    let v = analyze("real/handoff-6.12", &["--timeline", path.to_str().unwrap()]);
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let slices: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let waits = slices
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("wait "))
        .count();
    assert_eq!(waits, v["handoffs"].as_array().unwrap().len());
    let mut starts: HashMap<u64, &serde_json::Value> = HashMap::new();
    let mut finishes = 0;
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        // Perfetto binds a flow point to the slice enclosing it on the same track.
        let ts = e["ts"].as_f64().unwrap();
        assert!(
            slices.iter().any(|s| s["pid"] == e["pid"]
                && s["tid"] == e["tid"]
                && s["ts"].as_f64().unwrap() <= ts
                && ts <= s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap()),
            "unbound flow point {e}"
        );
        if e["ph"] == "s" {
            starts.insert(e["id"].as_u64().unwrap(), e);
        } else {
            finishes += 1;
            let s = starts[&e["id"].as_u64().unwrap()];
            assert_ne!(s["pid"], e["pid"], "a hand-off arrow crosses nodes");
        }
    }
    assert_eq!(finishes, starts.len());
    assert_eq!(starts.len(), 2 * waits);
    for s in &slices {
        assert!(s["dur"].as_f64().unwrap() >= 0.0, "{s}");
    }
    // Named processes (nodes) and threads (glocks).
    assert!(events
        .iter()
        .any(|e| e["name"] == "process_name" && e["args"]["name"] == "node n2"));
    assert!(events.iter().any(|e| e["name"] == "thread_name"
        && e["args"]["name"].as_str().unwrap().starts_with("glock 2/")));
}

/// A trace twice as long with every DLM message key repeated (the same trace again,
/// shifted past its end: the same sequence numbers and lock ids, as after a reconnect):
/// messages still pair in order, so the clocks align as tightly and every hand-off is
/// found twice.
#[test]
fn repeated_message_keys_pair_in_order() {
    let fx = "real/handoff-6.12";
    let once = analyze(fx, &[]);
    let dir = tempfile::tempdir().unwrap();
    for n in ["n1", "n2"] {
        let text = trace_text(fx, n);
        let shift = |l: &str, by: u64| -> String {
            // `  comm-pid  [000] .....    87.642597: event: ...`
            let Some(colon) = l.find(": ") else {
                return l.to_string();
            };
            let head = &l[..colon];
            let at = head.rfind(' ').unwrap() + 1;
            let (s, us) = head[at..].split_once('.').unwrap();
            let t = s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap() + by;
            format!(
                "{}{}.{:06}{}",
                &head[..at],
                t / 1_000_000,
                t % 1_000_000,
                &l[colon..]
            )
        };
        let out = dir.path().join(n);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::copy(
            testdata::path(&format!("{fx}/{n}/nodeid")),
            out.join("nodeid"),
        )
        .unwrap();
        let mut both = String::new();
        // The clock markers once: a second set, shifted, would say the clock jumped.
        for by in [0, 1_000_000_000] {
            for l in text.lines().filter(|l| by == 0 || !l.contains("glkmark")) {
                both.push_str(&shift(l, by));
                both.push('\n');
            }
        }
        std::fs::write(out.join("trace_pipe.txt"), both).unwrap();
    }
    let twice = analyze_dir(dir.path(), &[]);
    let n2 = |v: &serde_json::Value, k: &str| v["clock_alignment"][1][k].clone();
    assert_eq!(n2(&twice, "method"), "messages");
    assert_eq!(
        n2(&twice, "relative_uncertainty_ns"),
        n2(&once, "relative_uncertainty_ns")
    );
    assert_eq!(n2(&twice, "offset_ns"), n2(&once, "offset_ns"));
    let count = |v: &serde_json::Value| v["handoffs"].as_array().unwrap().len();
    assert_eq!(count(&twice), 2 * count(&once));
    let m = |v: &serde_json::Value| n2(v, "messages").as_array().unwrap()[0].as_u64().unwrap();
    assert_eq!(m(&twice), 2 * m(&once));
}

/// Without dlm events (kernels before 5.16, or not traced) the demotes are gfs2's remote
/// `gfs2_demote_rq`, attributed to the node waiting for the glock's state change at the
/// time: dlmev612 with its dlm lines removed (its wall clocks were synchronised, so the
/// `date` markers align the nodes to within their spread).
#[test]
fn without_dlm_events_gfs2_demotes_are_attributed() {
    let dir = tempfile::tempdir().unwrap();
    let mut remote = 0;
    for n in ["n1", "n2"] {
        let text = trace_text("real/dlmev612", n);
        let kept: String = text
            .lines()
            .filter(|l| !l.contains(": dlm_"))
            .flat_map(|l| [l, "\n"])
            .collect();
        remote += kept
            .lines()
            .filter(|l| l.contains("gfs2_demote_rq") && l.ends_with(" remote"))
            .count();
        std::fs::create_dir_all(dir.path().join(n)).unwrap();
        std::fs::write(dir.path().join(n).join("trace_pipe.txt"), kept).unwrap();
    }
    let v = analyze_dir(dir.path(), &[]);
    assert_eq!(v["clock_alignment"][1]["method"], "markers_lower_bound");
    assert!(v["handoffs"].as_array().unwrap().is_empty());
    assert!(v["dlm_latency"].as_array().unwrap().is_empty());
    let causes = v["demote_causes"].as_array().unwrap();
    let total: u64 = causes.iter().map(|c| c["count"].as_u64().unwrap()).sum();
    assert_eq!(total as usize, remote);
    let mut attributed = 0;
    for c in causes {
        assert_eq!(c["source"], "gfs2_demote_rq");
        if let Some(by) = c["caused_by_node"].as_str() {
            assert_ne!(by, c["node"].as_str().unwrap());
            attributed += c["count"].as_u64().unwrap();
        }
    }
    assert!(attributed * 10 >= total * 9, "{attributed} of {total}");
}
