//! Small text formatting helpers shared by the commands.

/// A duration in microseconds as a short human string: `850.0us`, `12.3ms`, `9.93s`, `4m05s`,
/// `2h01m`.
pub fn micros(us: u64) -> String {
    nanos(us.saturating_mul(1000))
}

/// A duration in nanoseconds as a short human string.
pub fn nanos(ns: u64) -> String {
    let us = ns / 1000;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if us < 1_000 {
        format!("{:.1}us", ns as f64 / 1e3)
    } else if us < 1_000_000 {
        format!("{:.1}ms", us as f64 / 1e3)
    } else if us < 60_000_000 {
        format!("{:.2}s", us as f64 / 1e6)
    } else if us < 3_600_000_000 {
        let s = us / 1_000_000;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = us / 60_000_000;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}

/// Nanoseconds since the epoch (0 before 1970).
pub fn unix_nanos(t: std::time::SystemTime) -> u128 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Seconds since the epoch with microsecond precision.
pub fn unix_secs(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// UTC `YYYY-MM-DD HH:MM:SSZ` for a time (no time-zone database needed).
pub fn utc(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn durations() {
        assert_eq!(nanos(999), "999ns");
        assert_eq!(micros(850), "850.0us");
        assert_eq!(micros(12_300), "12.3ms");
        assert_eq!(micros(9_928_000), "9.93s");
        assert_eq!(micros(245_000_000), "4m05s");
        assert_eq!(micros(2_368_172_000), "39m28s");
        assert_eq!(micros(7_260_000_000), "2h01m");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_323_771);
        assert_eq!(utc(t), "2026-11-22 05:02:51Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(utc(leap), "2000-02-29 00:00:00Z");
    }
}
