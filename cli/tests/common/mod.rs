//! Helpers shared by glk's integration tests (each test file uses a part of them).
#![allow(dead_code)]

/// A fixture's text, decompressed (`rel` below the fixtures folder).
pub fn fixture_text(rel: &str) -> String {
    testdata::text(rel)
}

/// The glock of a gfs2 trace line: `glock 2:266268` → `2/4101c`.
pub fn glock_of_gfs2(line: &str) -> String {
    testdata::trace_glock(line)
        .parse::<glockparse::GlockId>()
        .unwrap()
        .to_string()
}

/// A lab run's `ls -i` of its lock files (`inodes.txt`): each file's name (the line's last
/// word) and inode number; other lines (`total N`) are passed over. A flock's glock is
/// `6/INODE` in hex.
pub fn inodes(path: &std::path::Path) -> std::collections::BTreeMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.last()?.to_string(), w.first()?.parse().ok()?))
        })
        .collect()
}

/// The lock table of each filesystem of a node of the two-filesystems fixture, read by
/// hand from its capture (`NODE/lab_data/NODE`, `NODE/lab_gfs/NODE`): keyed by device as
/// gfs2 events print it (`254,1`: the mount point's in `mountinfo`, the mount point the
/// table's `gfs2_sysfs.0` names) and by lockspace id as dlm events print it
/// (`ls_id=N`: the id `dlm_tool ls` lists for the name after the table's colon).
pub fn two_fs_tables(node: &str) -> std::collections::BTreeMap<String, String> {
    let root = testdata::path(&format!("real/two-filesystems-6.12/{node}"));
    let mut table_of = std::collections::BTreeMap::new();
    for fs in ["lab_data", "lab_gfs"] {
        let dir = root.join(fs).join(node);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let table = read("table").trim().to_string();
        let sysfs = read("gfs2_sysfs.0");
        let mount = sysfs
            .lines()
            .find_map(|l| l.strip_prefix("mount "))
            .unwrap();
        let mountinfo = read("mountinfo");
        let dev = mountinfo
            .lines()
            .map(|l| l.split(' ').collect::<Vec<_>>())
            .find(|w| w[4] == mount)
            .map(|w| w[2].replace(':', ","))
            .unwrap();
        let cluster = read("cluster.txt");
        let name = table.split(':').nth(1).unwrap();
        let mut lines = cluster
            .lines()
            .skip_while(|l| l.split_whitespace().collect::<Vec<_>>() != ["name", name]);
        let id = lines.nth(1).unwrap().split_whitespace().nth(1).unwrap();
        let id = u32::from_str_radix(id.trim_start_matches("0x"), 16).unwrap();
        table_of.insert(dev, table.clone());
        table_of.insert(format!("ls_id={id}"), table);
    }
    assert_eq!(table_of.len(), 4, "{table_of:?}");
    table_of
}

/// `glk ARGS`, which must succeed, and its standard output as one JSON document.
pub fn glk_json<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> serde_json::Value {
    serde_json::from_str(&glk_text(args)).unwrap()
}

/// `glk analyze --json --limit 0 --fs FS` of the fixtures `rels`, which must succeed.
pub fn analyze_fs(fs: &str, rels: &[String]) -> serde_json::Value {
    let mut args: Vec<std::ffi::OsString> = ["analyze", "--json", "--limit", "0", "--fs", fs]
        .iter()
        .map(Into::into)
        .collect();
    args.extend(rels.iter().map(|r| testdata::path(r).into_os_string()));
    glk_json(&args)
}

/// `glk ARGS`, which must succeed, and its standard output.
pub fn glk_text<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The element of JSON array `v` whose `key` is `want` (panics naming them when none is).
pub fn find<'a>(v: &'a serde_json::Value, key: &str, want: &str) -> &'a serde_json::Value {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .find(|x| x[key] == want)
        .unwrap_or_else(|| panic!("no element with {key} {want:?} in {v}"))
}

/// The elements of JSON array `v` (panics naming it when it is not an array).
pub fn elements(v: &serde_json::Value) -> std::slice::Iter<'_, serde_json::Value> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
}

/// The text in field `key` of `v` (panics naming them when it is not text).
pub fn str_of(v: &serde_json::Value, key: &str) -> String {
    let x = &v[key];
    x.as_str()
        .unwrap_or_else(|| panic!("{key} is not text: {x} in {v}"))
        .to_string()
}

/// The integer in field `key` of `v` (panics naming them when it is not one).
pub fn i64_of(v: &serde_json::Value, key: &str) -> i64 {
    let x = &v[key];
    x.as_i64()
        .unwrap_or_else(|| panic!("{key} is not an integer: {x} in {v}"))
}

/// The unsigned integer in field `key` of `v` (panics naming them when it is not one).
pub fn u64_of(v: &serde_json::Value, key: &str) -> u64 {
    let x = &v[key];
    x.as_u64()
        .unwrap_or_else(|| panic!("{key} is not an unsigned integer: {x} in {v}"))
}

/// A finding's evidence as (source, line) pairs.
pub fn evidence(f: &serde_json::Value) -> Vec<(String, u64)> {
    elements(&f["evidence"])
        .map(|e| (str_of(e, "source"), u64_of(e, "line")))
        .collect()
}

/// tracefs's mount point, when mounted (the first in the mount table, where glk works).
pub fn tracefs_dir() -> Option<std::path::PathBuf> {
    bundle::mounts::points_of(&bundle::mounts::of_this_process(), "tracefs")
        .into_iter()
        .next()
}

/// tracefs mounted for as long as a test holds it: the machine's mount, or one the test
/// made (source `glk-test`, which glk leaves as found), unmounted when dropped. A test that
/// looks into tracefs after glk ended holds it: glk unmounts a mount it made, and what
/// it may have left behind would not be seen.
pub struct HeldTracefs {
    /// The mount point.
    pub dir: std::path::PathBuf,
    made: bool,
}

/// Holds tracefs (as root): mounts it at /sys/kernel/tracing when it is not mounted.
pub fn hold_tracefs() -> HeldTracefs {
    if let Some(dir) = tracefs_dir() {
        return HeldTracefs { dir, made: false };
    }
    let dir = std::path::PathBuf::from("/sys/kernel/tracing");
    let s = std::process::Command::new("mount")
        .args(["-t", "tracefs", "glk-test"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(s.success(), "mount -t tracefs");
    HeldTracefs { dir, made: true }
}

impl Drop for HeldTracefs {
    fn drop(&mut self) {
        if self.made {
            let _ = std::process::Command::new("umount").arg(&self.dir).status();
        }
    }
}

/// A scratch directory named `glk-NAME-…` (removed when dropped).
pub fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("glk-{name}-"))
        .tempdir()
        .unwrap()
}

/// Live tracing tests share tracefs: they run one at a time.
static TRACING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Tracefs held for live test `test` alone until the guard drops; `None` when not root
/// (the test then says it was skipped, or fails under CI).
pub fn live_tracing(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    if !testdata::as_root(test, "live tracing needs root") {
        return None;
    }
    Some(TRACING.lock().unwrap_or_else(|e| e.into_inner()))
}

/// `glk doctor --json PATHS`, which must find something critical or an error (exit status
/// 3): its document.
pub fn doctor_with_findings<P: AsRef<std::ffi::OsStr>>(paths: &[P]) -> serde_json::Value {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_glk"))
        .args(["doctor", "--json"])
        .args(paths)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    serde_json::from_slice(&o.stdout).unwrap()
}
