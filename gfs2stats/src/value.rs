//! Statistic values as the kernel prints them: `%llu` on current kernels, `%lld` on old
//! ones. Both are kept as `i64`; a `%llu` value above `i64::MAX` (a wall-clock step during
//! a DLM request) wraps negative, exactly as the kernel's own `(long long)` cast shows it
//! in the `gfs2_glock_lock_time` tracepoint.

use glockparse::num::{parse_i64, parse_u64};

pub fn parse(s: &[u8]) -> Option<i64> {
    if s.first() == Some(&b'-') {
        parse_i64(s)
    } else {
        parse_u64(s).map(|v| v as i64)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn signed_and_unsigned() {
        assert_eq!(super::parse(b"-5"), Some(-5));
        assert_eq!(super::parse(b"18446744073709551615"), Some(-1));
        assert_eq!(super::parse(b"12"), Some(12));
        assert_eq!(super::parse(b"x"), None);
    }
}
