//! What the engine's tests share: adding captures to a fleet dataset, and UTC days.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// `glk-engine export CAPTURE... --dataset DIR --cluster NAME`: its stderr.
pub fn add(dir: &Path, cluster: &str, captures: &[&Path]) -> String {
    let mut args: Vec<&OsStr> = captures.iter().map(|c| c.as_os_str()).collect();
    args.extend([OsStr::new("--cluster"), OsStr::new(cluster)]);
    export_to(dir, &args).1
}

/// `glk-engine export ARGS --dataset DIR`, which must succeed: its standard output and
/// standard error.
pub fn export_to(dir: &Path, args: &[&OsStr]) -> (String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_glk-engine"))
        .arg("export")
        .args(args)
        .arg("--dataset")
        .arg(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    (String::from_utf8_lossy(&o.stdout).into_owned(), err)
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD` of the UTC day that `secs` (at least 0) after the epoch falls on.
pub fn utc_day(secs: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs as u64);
    clikit::fmt::utc(at)[..10].to_string()
}

/// The weekday of `YYYY-MM-DD`, Monday 0.
pub fn weekday(day: &str) -> i64 {
    let d: Vec<i64> = day.split('-').map(|x| x.parse().unwrap()).collect();
    // 1970-01-01 was a Thursday (3).
    (days_from_civil(d[0], d[1], d[2]) + 3).rem_euclid(7)
}
