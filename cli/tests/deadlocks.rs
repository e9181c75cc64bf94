//! Deadlocks as programs make them (testdata/lab/deadlock-family.sh, on 6.12, 6.1 and 5.10,
//! and on 6.12 again with the locks' holders from fdinfo, `fdlocks.N`): cycles
//! of 2, 3 and 4 processes over two nodes with local and remote edges, one of them left to
//! orphans when `timeout` killed the processes that took the locks, a POSIX (fcntl) lock
//! cycle, a plain wait and a slow one, all in one capture. What waits for what is worked
//! out here from the raw files alone (`ps`, `/proc/locks`, glockfd, `dlm_tool plocks`, the
//! inode numbers), and glk's cycles, holders and findings are held to it.

mod common;
use common::elements;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

const FIXTURES: [&str; 4] = [
    "deadlock-family-6.12-fdlocks",
    "deadlock-family-6.12",
    "deadlock-family-6.1",
    "deadlock-family-5.10",
];

/// One wait: node, waiting pid, what it waits for (`6/N` or `posix 2/N`).
type Wait = (String, i64, String);

/// A process of `ps -eo pid,ppid,pgid,stat,wchan,comm`.
struct Ps {
    ppid: i64,
    stat: String,
    wchan: String,
    comm: String,
}

/// What one node's raw files say at one moment.
struct Truth {
    /// File name in /gfs/shared → inode number.
    inode: BTreeMap<String, u64>,
    ps: BTreeMap<i64, Ps>,
    /// pid → the flock glocks whose files it has open (glockfd).
    open: BTreeMap<i64, BTreeSet<String>>,
    /// Inode → the pid `/proc/locks` names as holding its flock.
    flock: BTreeMap<u64, i64>,
    /// The D-state tasks whose kernel stack is in `gfs2_glock_wait`.
    in_glock_wait: BTreeSet<i64>,
}

fn fixture(name: &str) -> Option<std::path::PathBuf> {
    let p = testdata::path(&format!("real/{name}"));
    p.is_dir().then_some(p)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn truth(dir: &Path, moment: &str, node: &str) -> Truth {
    let inode = common::inodes(&dir.join(format!("inodes-{node}.txt")));
    let ps = read(&dir.join(format!("truth-{moment}/{node}/ps.txt")))
        .lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((
                w[0].parse().ok()?,
                Ps {
                    ppid: w[1].parse().ok()?,
                    stat: w[3].into(),
                    wchan: w[4].into(),
                    comm: w[5..].join(" "),
                },
            ))
        })
        .collect();
    let mut open: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    let glockfd = dir.join(format!("plain-{moment}/{node}/glockfd"));
    if glockfd.exists() {
        for l in read(&glockfd).lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() == 3 && w[2].starts_with("6/") {
                open.entry(w[0].parse().unwrap())
                    .or_default()
                    .insert(w[2].to_string());
            }
        }
    } else {
        // Before 6.1 there is no glockfd: the job listed each locking process's open files
        // in /gfs/shared (`PID FILE`, from /proc/PID/fd).
        for l in read(&dir.join(format!("truth-{moment}/{node}/fds.txt"))).lines() {
            let (pid, file) = l.split_once(' ').unwrap();
            open.entry(pid.parse().unwrap())
                .or_default()
                .insert(format!("6/{:x}", inode[file]));
        }
    }
    // Who sleeps in a glock wait: the wait channel, or (where ps shows none, as on 5.10)
    // the kernel stack the job saved for each D-state task.
    let stacks = read(&dir.join(format!("truth-{moment}/{node}/stacks.txt")));
    let mut in_glock_wait = BTreeSet::new();
    let mut task = None;
    for l in stacks.lines() {
        if let Some(rest) = l.strip_prefix("== ") {
            task = rest
                .split_whitespace()
                .next()
                .and_then(|p| p.parse::<i64>().ok());
        } else if l.contains("gfs2_glock_wait") {
            in_glock_wait.extend(task);
        }
    }
    let flock = read(&dir.join(format!("truth-{moment}/{node}/proc-locks.txt")))
        .lines()
        .filter(|l| l.contains(" FLOCK "))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let ino = w[5].rsplit(':').next()?.parse().ok()?;
            Some((ino, w[4].parse().ok()?))
        })
        .collect();
    Truth {
        inode,
        ps,
        open,
        flock,
        in_glock_wait,
    }
}

impl Truth {
    fn flock_glock(&self, file: &str) -> String {
        format!("6/{:x}", self.inode[file])
    }

    /// The processes blocked in flock, each with the flock glock it waits for: the one of
    /// its open files' flock glocks that its parent does not have open (the others it
    /// inherited). Before any parent ends: an orphan's inherited files cannot be told apart.
    fn flock_waits(&self, node: &str) -> Vec<Wait> {
        let mut out = Vec::new();
        for (pid, p) in &self.ps {
            let waits = p.wchan == "gfs2_glock_wait" || self.in_glock_wait.contains(pid);
            if !(p.stat.starts_with('D') && waits) {
                continue;
            }
            assert_eq!(p.comm, "flock", "pid {pid} on {node}");
            let none = BTreeSet::new();
            let parent = self.open.get(&p.ppid).unwrap_or(&none);
            let own: Vec<&String> = self.open[pid].difference(parent).collect();
            assert_eq!(own.len(), 1, "pid {pid} on {node}: {own:?}");
            out.push((node.to_string(), *pid, own[0].clone()));
        }
        out
    }
}

/// The POSIX lock waits `dlm_tool plocks` shows (every node's dump holds all of them).
fn posix_waits(dir: &Path, moment: &str, names: &BTreeMap<i64, String>) -> Vec<Wait> {
    read(&dir.join(format!("truth-{moment}/n1/plocks.txt")))
        .lines()
        .filter(|l| l.ends_with(" WAITING"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let node = names[&w[4].parse::<i64>().unwrap()].clone();
            let ino: u64 = w[0].parse().unwrap();
            (node, w[6].parse().unwrap(), format!("posix 2/{ino:x}"))
        })
        .collect()
}

/// The node names by DLM node id, from the capture's `nodeid` files.
fn node_names(dir: &Path) -> BTreeMap<i64, String> {
    ["n1", "n2"]
        .iter()
        .map(|n| {
            let id = read(&dir.join(format!("capture/{n}/nodeid")))
                .trim()
                .parse()
                .unwrap();
            (id, n.to_string())
        })
        .collect()
}

/// Every wait of the moment, from the raw files of both nodes.
fn waits(dir: &Path, moment: &str) -> (Vec<Wait>, Truth, Truth) {
    let (t1, t2) = (truth(dir, moment, "n1"), truth(dir, moment, "n2"));
    let mut all = t1.flock_waits("n1");
    all.extend(t2.flock_waits("n2"));
    all.extend(posix_waits(dir, moment, &node_names(dir)));
    (all, t1, t2)
}

/// The waits of a cycle over `files`: those whose glock is one of theirs.
fn cycle_of(all: &[Wait], t: &Truth, files: &[&str]) -> BTreeSet<Wait> {
    let glocks: BTreeSet<String> = files
        .iter()
        .flat_map(|f| [t.flock_glock(f), format!("posix 2/{:x}", t.inode[*f])])
        .collect();
    all.iter()
        .filter(|w| glocks.contains(&w.2))
        .cloned()
        .collect()
}

/// glk's cycles as sets of waits.
fn glk_cycles(v: &Value) -> Vec<(BTreeSet<Wait>, String, Vec<u64>)> {
    elements(&v["cycles"])
        .map(|c| {
            let steps = elements(&c["steps"])
                .map(|s| {
                    (
                        s["node"].as_str().unwrap().to_string(),
                        s["pid"].as_i64().expect("every step names its process"),
                        s["waits_for"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let snaps = elements(&c["snapshots"])
                .map(|s| s.as_u64().unwrap())
                .collect();
            (steps, c["confidence"].as_str().unwrap().to_string(), snaps)
        })
        .collect()
}

fn analyze(dir: &Path, what: &str) -> Value {
    let nodes = [
        dir.join(format!("{what}/n1")),
        dir.join(format!("{what}/n2")),
    ];
    let mut args = vec![
        "analyze".to_string(),
        "--json".into(),
        "--limit".into(),
        "0".into(),
    ];
    args.extend(nodes.iter().map(|p| p.display().to_string()));
    common::glk_json(&args)
}

#[test]
fn every_cycle_of_the_family_is_found_with_its_processes() {
    for name in FIXTURES {
        let Some(dir) = fixture(name) else {
            panic!("fixture {name} is missing");
        };
        family(&dir);
    }
}

/// The same capture gives the same report, run after run. Every node's `dlm_tool plocks`
/// dump shows the cluster's POSIX waits, and a row cites the first dump read: that was the
/// first in a hash map's order, so about one run in two cited n2's dump instead of n1's.
#[test]
fn the_same_capture_gives_the_same_report_every_run() {
    for name in FIXTURES {
        let Some(dir) = fixture(name) else {
            panic!("fixture {name} is missing");
        };
        let first = analyze(&dir, "capture");
        for run in 2..=8 {
            let again = analyze(&dir, "capture");
            assert!(again == first, "{name}: run {run} differs from run 1");
        }
        let cites = elements(&first["cross_node"])
            .find(|c| c["glock"].as_str().is_some_and(|g| g.starts_with("posix")))
            .map(|c| c["cites"][0].clone());
        let cite = cites.unwrap_or_else(|| panic!("{name}: no POSIX wait"));
        assert!(cite.as_str().unwrap().contains("n1/plocks."), "{cite}");
    }
}

fn family(dir: &Path) {
    let (all, t1, _) = waits(dir, "12s");
    // The raw files show every waiter the job made: 2 + 3 + 4 flock waiters and 2 POSIX
    // waiters in the cycles, and n2's plain and slow waiters.
    assert_eq!(all.len(), 13, "{all:?}");
    let cycles: Vec<(&str, BTreeSet<Wait>)> = [
        ("cycle2", &["m", "n"][..]),
        ("cycle3", &["x", "y", "z"]),
        ("cycle4", &["a", "b", "c", "d"]),
        ("posix", &["p", "q"]),
    ]
    .into_iter()
    .map(|(name, files)| (name, cycle_of(&all, &t1, files)))
    .collect();
    for (name, want) in &cycles {
        let n = match *name {
            "cycle3" => 3,
            "cycle4" => 4,
            _ => 2,
        };
        assert_eq!(want.len(), n, "{name}: {want:?}");
    }
    // One capture over 38 s: every cycle, each once, with all its waits, in every snapshot
    // (the 3-cycle's owners change when timeout kills the outer flocks: the same deadlock).
    let v = analyze(dir, "capture");
    let got = glk_cycles(&v);
    assert_eq!(got.len(), 4, "{}", v["cycles"]);
    for (name, want) in &cycles {
        let (_, confidence, snaps) = got
            .iter()
            .find(|(steps, ..)| steps == want)
            .unwrap_or_else(|| panic!("{name}: {want:?} not among {}", v["cycles"]));
        assert_eq!(snaps, &[0, 1, 2], "{name}");
        // POSIX locks belong to their process; the 3-cycle's orphans keep their files.
        let sure = matches!(*name, "posix" | "cycle3");
        assert_eq!(
            confidence,
            if sure { "certain" } else { "likely" },
            "{name}"
        );
    }
    // The plain wait and the slow one are in no cycle.
    let in_cycles: BTreeSet<&String> = got.iter().flat_map(|c| c.0.iter().map(|w| &w.2)).collect();
    for f in ["w", "s"] {
        assert!(!in_cycles.contains(&t1.flock_glock(f)), "{f}");
    }
    orphans(dir, &v, &t1);
    contended_names_whom_part_5_names(dir, &v);
    slow_and_stuck(dir, &t1);
    plain_copies(dir, &cycles);
    top_shows_posix_waits(dir, &cycles[3].1);
    one_node_sees_the_posix_cycle(dir, &cycles[3].1);
    captures_side_by_side(dir, &t1, &cycles[1].1);
    top_names_the_local_holder(dir, &t1);
    top_names_the_remote_holder(dir);
}

/// glk top on both nodes' last snapshots: a waiter whose request waits behind a lock
/// granted to the other node waits for the process that holds that lock now. Where the
/// capture recorded fdinfo (`fdlocks.N`), that is a live process with the glock's file
/// open, also where the master's dump names the process that took the flock, ended since
/// (the 3-cycle's orphans); without it, the dump's process, as before.
fn top_names_the_remote_holder(dir: &Path) {
    let v = common::glk_json(&[
        "top".to_string(),
        "--json".into(),
        "--limit".into(),
        "0".into(),
        dir.join("capture/n1/glocks.2").display().to_string(),
        dir.join("capture/n2/glocks.2").display().to_string(),
    ]);
    let fdinfo = dir.join("capture/n1/fdlocks.2").exists();
    let late = [truth(dir, "50s", "n1"), truth(dir, "50s", "n2")];
    let (mut remote, mut heirs) = (0, 0);
    for g in elements(&v["glocks"]) {
        let Some([b]) = g["dlm"]["blockers"].as_array().map(Vec::as_slice) else {
            continue;
        };
        let node = b["node"].as_u64().unwrap();
        let words = g["waits_for"].as_str().unwrap();
        let pid: i64 = words
            .strip_prefix(&format!("node {node} pid "))
            .and_then(|r| r.strip_suffix(" EX"))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{}: {words}", g["glock"]));
        remote += 1;
        if !fdinfo {
            assert_eq!(Some(pid), b["pid"].as_i64(), "{}", g["glock"]);
            continue;
        }
        let t = &late[node as usize - 1];
        let glock = g["glock"].as_str().unwrap();
        assert!(t.ps.contains_key(&pid), "{glock}: pid {pid} has ended");
        assert!(t.open[&pid].contains(glock), "{glock}: pid {pid}");
        heirs += usize::from(Some(pid) != b["pid"].as_i64());
    }
    assert!(remote >= 4, "{remote} remote waits");
    assert!(
        !fdinfo || heirs >= 1,
        "no orphan's flock among the remote waits"
    );
}

/// glk top on n1's snapshots: the local wait on x waits for the process that took x (from
/// 6.1 the DLM names it, GL_NOPID in the glocks file, no command shown; before, the glocks
/// file names it with its command). Once it has ended: the orphan that holds x through the
/// file it inherited, the one that waits for y, where the capture recorded fdinfo
/// (`fdlocks.N`); without it, from 6.1 no process is named.
fn top_names_the_local_holder(dir: &Path, t1: &Truth) {
    let x = t1.flock_glock("x");
    let took_x = t1.flock[&t1.inode["x"]];
    let waits_for = |snap: u32| {
        let v = common::glk_json(&[
            "top".to_string(),
            "--json".into(),
            dir.join(format!("capture/n1/glocks.{snap}"))
                .display()
                .to_string(),
        ]);
        let g = elements(&v["glocks"])
            .find(|g| g["glock"] == x.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{x} not shown"));
        g["waits_for"].as_str().unwrap().to_string()
    };
    let gl_nopid = dir.join("capture/n1/glockfd.0").exists();
    let (with_comm, ended) = if gl_nopid {
        ("", "")
    } else {
        (" flock", " flock")
    };
    assert_eq!(waits_for(0), format!("here pid {took_x}{with_comm}"));
    if !dir.join("capture/n1/fdlocks.2").exists() {
        assert!(gl_nopid, "a capture before 6.1 without fdlocks.N");
        assert_eq!(waits_for(2), "here pid - (none)");
        return;
    }
    let late = truth(dir, "50s", "n1");
    let y = t1.flock_glock("y");
    let heir: Vec<i64> = late
        .open
        .iter()
        .filter(|(pid, open)| open.contains(&x) && open.contains(&y) && late.ps[pid].ppid == 1)
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(heir.len(), 1, "{heir:?}");
    assert_eq!(waits_for(2), format!("here pid {}{ended}", heir[0]));
}

/// Two captures of the same nodes given side by side (the later first): one node each,
/// its snapshots in time order, so the 3-cycle's local wait (n1's waiter on x, behind a
/// holder on n1: no DLM request, so no queue age) is stuck by the snapshots' clock over
/// both, and every file a finding cites is a real file.
fn captures_side_by_side(dir: &Path, t1: &Truth, cycle3: &BTreeSet<Wait>) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(["doctor", "--json"])
        .args(["late/n1", "late/n2", "capture/n1", "capture/n2"].map(|p| dir.join(p)))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let x = t1.flock_glock("x");
    let waiter = cycle3.iter().find(|w| w.2 == x).unwrap();
    let f = elements(&v["findings"])
        .find(|f| {
            f["code"] == "GLK-STUCK-WAITER"
                && f["glocks"][0] == x.as_str()
                && f["pids"][0] == waiter.1
        })
        .unwrap_or_else(|| panic!("no stuck finding for {waiter:?}: {}", v["findings"]));
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("on the same node") && title.contains("snapshots 0..4"),
        "{title}"
    );
    for e in f["evidence"].as_array().unwrap() {
        let src = e["source"].as_str().unwrap();
        assert!(Path::new(src).is_file(), "{src}");
    }
}

/// Every node's dlm_controld keeps the whole cluster's POSIX locks: one node's capture
/// alone shows the POSIX cycle, the other node named by its DLM node id.
fn one_node_sees_the_posix_cycle(dir: &Path, posix: &BTreeSet<Wait>) {
    let v = common::glk_json(&[
        "analyze".to_string(),
        "--json".into(),
        dir.join("capture/n1").display().to_string(),
    ]);
    let names = node_names(dir);
    let n2 = names
        .iter()
        .find(|(_, n)| *n == "n2")
        .map(|(id, _)| *id)
        .unwrap();
    let want: BTreeSet<Wait> = posix
        .iter()
        .map(|(node, pid, glock)| {
            let node = if node == "n2" {
                format!("node {n2}")
            } else {
                node.clone()
            };
            (node, *pid, glock.clone())
        })
        .collect();
    let got = glk_cycles(&v);
    assert_eq!(got.len(), 1, "{}", v["cycles"]);
    assert_eq!((&got[0].0, got[0].1.as_str()), (&want, "certain"));
}

/// glk top lists the POSIX lock waits (outside the glocks file) with who blocks each: the
/// other process of the POSIX cycle.
fn top_shows_posix_waits(dir: &Path, posix: &BTreeSet<Wait>) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(["top", "--json"])
        .arg(dir.join("capture/n1"))
        .arg(dir.join("capture/n2"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names = node_names(dir);
    let got: BTreeSet<Wait> = elements(&v["posix_waits"])
        .map(|w| {
            let r = &w["request"];
            let node = names[&r["nodeid"].as_i64().unwrap()].clone();
            (
                node,
                r["pid"].as_i64().unwrap(),
                w["resource"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(&got, posix);
    let pids: BTreeSet<i64> = posix.iter().map(|w| w.1).collect();
    for w in v["posix_waits"].as_array().unwrap() {
        let b = w["blockers"].as_array().unwrap();
        assert_eq!(b.len(), 1, "{w}");
        assert_ne!(b[0]["pid"], w["request"]["pid"]);
        assert!(pids.contains(&b[0]["pid"].as_i64().unwrap()), "{w}");
    }
}

/// After timeout killed the 3-cycle's outer flocks, their children hold the files: in the
/// last snapshot every holder glk names is a live process, and the 3-cycle's local edge
/// (n1's waiter on x behind n1's holder of x) names the orphan that keeps x open.
fn orphans(dir: &Path, v: &Value, t1: &Truth) {
    let (l1, l2) = (truth(dir, "50s", "n1"), truth(dir, "50s", "n2"));
    let x = t1.flock_glock("x");
    // The outer flock that took x is gone; /proc/locks still names it.
    let took_x = t1.flock[&t1.inode["x"]];
    assert!(!l1.ps.contains_key(&took_x), "{took_x} still runs");
    assert_eq!(l1.flock[&t1.inode["x"]], took_x);
    let keeper: Vec<i64> = l1
        .open
        .iter()
        .filter(|(pid, g)| g.contains(&x) && l1.ps[pid].ppid == 1 && g.len() == 2)
        .filter(|(_, g)| g.contains(&t1.flock_glock("y")))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(keeper.len(), 1, "{keeper:?}");
    let rows = v["local_waits"].as_array().unwrap();
    let last = rows
        .iter()
        .find(|r| {
            r["glock"] == x.as_str() && r["snapshots"].as_array().unwrap().contains(&2.into())
        })
        .unwrap_or_else(|| panic!("no local wait on {x} in the last snapshot: {rows:?}"));
    assert_eq!(last["holder_pid"], keeper[0], "{last}");
    // fdinfo shows who holds the flock through the open file, where the capture recorded
    // it (`fdlocks.N`); else glockfd who keeps the file open (6.1+).
    let source = if dir.join("capture/n1/fdlocks.2").exists() {
        "fdinfo"
    } else {
        "glockfd"
    };
    assert_eq!(last["holder_source"], source);
    assert_eq!(last["waiter_node"], "n1");
    // Nobody dead is named as a holder in the last snapshot.
    for r in v["cross_node"].as_array().unwrap().iter().chain(rows) {
        if !r["snapshots"].as_array().unwrap().contains(&2.into()) {
            continue;
        }
        let Some(pid) = r["holder_pid"].as_i64() else {
            continue;
        };
        let ps = if r["holder_node"] == "n1" {
            &l1.ps
        } else {
            &l2.ps
        };
        assert!(ps.contains_key(&pid), "{r}");
    }
}

/// glk analyze's contended flock glocks: every holder and waiter of the last snapshot that
/// had any is a process (GL_NOPID holders from 6.1 on, ended takers before, are named as
/// part 5 names them), cited at its `H:` line; in the capture's last snapshot, alive in the
/// job's own `ps` at 50 s with the glock's file open; where the glock has both a holder and
/// a waiter, they are the two sides of a part 5 row of that snapshot.
fn contended_names_whom_part_5_names(dir: &Path, v: &Value) {
    let late = [truth(dir, "50s", "n1"), truth(dir, "50s", "n2")];
    let rows: Vec<&Value> = elements(&v["cross_node"])
        .chain(elements(&v["local_waits"]))
        .collect();
    let (mut named, mut last) = (0, 0);
    for c in elements(&v["contended"]) {
        let glock = c["glock"].as_str().unwrap();
        if !glock.starts_with("6/") {
            continue;
        }
        let parties = elements(&c["holders"])
            .map(|h| ("holder", h))
            .chain(elements(&c["waiters"]).map(|w| ("waiter", w)));
        let (mut sides, mut snapshot) = (Vec::new(), None);
        for ((role, words), cite) in parties.zip(elements(&c["cites"])) {
            let words = words.as_str().unwrap();
            let (node, rest) = words.split_once(' ').unwrap();
            let pid: i64 = rest
                .strip_prefix("pid ")
                .and_then(|r| r.split(' ').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("{glock}: {words}"));
            // The cited line is this party's H: line.
            let (file, line) = cite.as_str().unwrap().rsplit_once(':').unwrap();
            let (cited_node, n) = file.split_once("/glocks.").unwrap();
            assert_eq!(cited_node, node, "{glock}: {words}");
            assert!(snapshot.is_none_or(|s| s == n), "{glock}: two snapshots");
            snapshot = Some(n);
            let text = read(&dir.join("capture").join(file));
            let h = text
                .lines()
                .nth(line.parse::<usize>().unwrap() - 1)
                .unwrap();
            let caller = h.rsplit_once("] ").map(|(_, c)| c).unwrap_or_default();
            assert!(
                h.starts_with(" H: ") && words.ends_with(caller),
                "{cite}: {h}"
            );
            if n == "2" {
                let t = &late[usize::from(node == "n2")];
                assert!(t.ps.contains_key(&pid), "{glock}: {words}: ended");
                assert!(t.open[&pid].contains(glock), "{glock}: {words}");
                last += 1;
            }
            sides.push((role, node, pid));
            named += 1;
        }
        if let ([("holder", hn, hp), ("waiter", wn, wp)], Some(n)) = (&sides[..], snapshot) {
            let n: u64 = n.parse().unwrap();
            let row = rows.iter().find(|r| {
                r["glock"] == glock
                    && r["waiter_node"] == *wn
                    && r["waiter_pid"] == *wp
                    && r["snapshots"].as_array().unwrap().contains(&n.into())
            });
            let row = row.unwrap_or_else(|| panic!("{glock}: no part 5 row for {wn} {wp}"));
            let holder = (row["holder_node"].as_str(), row["holder_pid"].as_i64());
            assert_eq!(holder, (Some(*hn), Some(*hp)), "{glock}");
        }
    }
    assert!(
        named >= 20 && last >= 16,
        "{named} parties named, {last} in the last snapshot"
    );
}

/// glk doctor: the plain wait is stuck (38 s of snapshots, and the DLM queue age in the
/// short late capture), the slow one is not; the cycles are critical (exit status 3).
fn slow_and_stuck(dir: &Path, t1: &Truth) {
    let (w, s) = (t1.flock_glock("w"), t1.flock_glock("s"));
    for what in ["capture", "late"] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
            .args(["doctor", "--json"])
            .arg(dir.join(format!("{what}/n1")))
            .arg(dir.join(format!("{what}/n2")))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(3), "{what}");
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let f = v["findings"].as_array().unwrap();
        let stuck = |g: &str| {
            f.iter().any(|x| {
                x["code"] == "GLK-STUCK-WAITER"
                    && x["glocks"].as_array().unwrap().contains(&g.into())
            })
        };
        assert!(stuck(&w), "{what}: the plain wait is stuck");
        // Each finding says which clock judged it: the capture over 38 s by its snapshots
        // and the DLM queue age, the short one by the queue age alone.
        let title = f
            .iter()
            .find(|x| x["code"] == "GLK-STUCK-WAITER" && x["glocks"][0] == w.as_str())
            .and_then(|x| x["title"].as_str())
            .unwrap();
        assert!(title.contains("the DLM queue age"), "{title}");
        assert_eq!(
            title.contains("the snapshots' clock"),
            what == "capture",
            "{title}"
        );
        assert!(!stuck(&s), "{what}: the slow wait is not stuck");
        let deadlocks = f.iter().filter(|x| x["code"] == "GLK-DEADLOCK").count();
        assert_eq!(deadlocks, 4, "{what}");
    }
    // The slow waiter was seen waiting, then moved.
    let v = analyze(dir, "capture");
    let progressed = v["stuck_and_leaks"]["progressed"].as_array().unwrap();
    assert!(
        progressed.iter().any(|p| p["glock"] == s.as_str()),
        "{progressed:?}"
    );
}

/// Copies made without glk (glocks, glockfd and the DLM dump, as support's procedures
/// take them; no process table, no /proc/locks): every flock cycle is still found, from
/// glockfd and the DLM dumps alone. A wait behind a holder on the same node has no DLM
/// request: where several processes with the file open may be its waiter, the cycle is
/// `possible` and names the one that closes it; once the takers have ended, the 3-cycle's
/// orphans are `certain`.
fn plain_copies(dir: &Path, cycles: &[(&str, BTreeSet<Wait>)]) {
    if !dir.join("plain-12s/n1/glockfd").exists() {
        return plain_copies_without_glockfd(dir, cycles);
    }
    let want = |name: &str| &cycles.iter().find(|c| c.0 == name).unwrap().1;
    for (moment, expect) in [
        (
            "12s",
            [
                ("cycle2", "likely"),
                ("cycle3", "possible"),
                ("cycle4", "possible"),
            ],
        ),
        (
            "50s",
            [
                ("cycle2", "likely"),
                ("cycle3", "certain"),
                ("cycle4", "possible"),
            ],
        ),
    ] {
        let v = analyze(dir, &format!("plain-{moment}"));
        let got = glk_cycles(&v);
        assert_eq!(got.len(), 3, "{moment}: {}", v["cycles"]);
        for (name, confidence) in expect {
            let c = got
                .iter()
                .find(|c| &c.0 == want(name))
                .unwrap_or_else(|| panic!("{moment} {name}: {}", v["cycles"]));
            assert_eq!(c.1, confidence, "{moment} {name}");
        }
    }
}

/// Copies made without glk before 6.1 (glocks and the DLM dump; no glockfd, no process
/// table): each flock is held by the process that took it and waited for by that
/// process's grandchild, and nothing in these files ties the two, so no cycle can be
/// closed. Every wait across nodes is still shown with its holder: the process the other
/// node's `/proc/locks` names.
fn plain_copies_without_glockfd(dir: &Path, cycles: &[(&str, BTreeSet<Wait>)]) {
    for moment in ["12s", "50s"] {
        let v = analyze(dir, &format!("plain-{moment}"));
        assert!(glk_cycles(&v).is_empty(), "{moment}: {}", v["cycles"]);
        let (t1, t2) = (truth(dir, moment, "n1"), truth(dir, moment, "n2"));
        let rows: BTreeSet<(String, i64, String, String, i64)> = elements(&v["cross_node"])
            .map(|r| {
                (
                    r["waiter_node"].as_str().unwrap().to_string(),
                    r["waiter_pid"].as_i64().unwrap(),
                    r["glock"].as_str().unwrap().to_string(),
                    r["holder_node"].as_str().unwrap().to_string(),
                    r["holder_pid"].as_i64().unwrap(),
                )
            })
            .collect();
        let mut remote = 0;
        for (node, pid, glock) in cycles.iter().flat_map(|c| &c.1) {
            let Some(ino) = glock.strip_prefix("6/") else {
                continue;
            };
            let ino = u64::from_str_radix(ino, 16).unwrap();
            let (other, there) = if node == "n1" {
                ("n2", &t2)
            } else {
                ("n1", &t1)
            };
            let Some(taker) = there.flock.get(&ino) else {
                continue;
            };
            remote += 1;
            let row = (node.clone(), *pid, glock.clone(), other.to_string(), *taker);
            assert!(rows.contains(&row), "{moment}: {row:?} not among {rows:?}");
        }
        // cycle2's 2, cycle3's 2 and cycle4's 2 waits across nodes.
        assert_eq!(remote, 6, "{moment}");
    }
}
