//! How every live tracefs test begins.

use std::sync::{Mutex, MutexGuard};

use tracepipe::Tracefs;

/// Tests share one tracefs mount: they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// This machine's tracefs, held for `test` alone until the guard drops; `None` when not
/// root (the test then says it was skipped, or fails under CI).
pub fn tracefs(test: &str) -> Option<(MutexGuard<'static, ()>, Tracefs)> {
    let serial = alone(test)?;
    Some((serial, Tracefs::locate(true).unwrap()))
}

/// tracefs for `test` alone until the guard drops, not yet located; `None` when not root.
pub fn alone(test: &str) -> Option<MutexGuard<'static, ()>> {
    if !testdata::as_root(test, "live tracefs tests need root") {
        return None;
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}
