//! Across refreshes: since when each waiter has been seen waiting, and which are new.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use glockparse::GlockId;

use super::Snapshot;

/// A waiter's identity across refreshes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WaiterKey {
    /// The index of the input.
    pub input: usize,
    /// The glock waited for.
    pub glock: GlockId,
    /// The waiter's pid.
    pub pid: i64,
    /// The waiter's call site.
    pub caller: Arc<str>,
}

impl WaiterKey {
    /// The key of holder `h` of glock `g` in input `input`.
    pub fn of(input: usize, g: &glockparse::Glock, h: &glockparse::Holder) -> WaiterKey {
        WaiterKey {
            input,
            glock: g.id,
            pid: h.pid,
            caller: h.caller.clone(),
        }
    }
}

/// How long a waiter has been seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitAge {
    /// When glk first saw it waiting.
    pub first_seen: SystemTime,
    /// Seconds from the first refresh that saw it to this one.
    pub seen_secs: f64,
    /// Refreshes in a row that saw it.
    pub refreshes: u64,
    /// First seen in this refresh (and not in the very first refresh).
    pub new: bool,
}

/// Waiters seen across refreshes.
#[derive(Default)]
pub struct WaitTracker {
    seen: HashMap<WaiterKey, (SystemTime, u64)>,
    /// Per (input, glock): since when glk has seen it with waiters.
    glocks: HashMap<(usize, GlockId), SystemTime>,
    refreshes: u64,
}

impl WaitTracker {
    /// Since when each (input, glock) has been seen with waiters, as of the last update.
    pub fn seen_waiting(&self) -> &HashMap<(usize, GlockId), SystemTime> {
        &self.glocks
    }

    /// Records the waiters of `snap`; forgets waiters no longer there.
    pub fn update(&mut self, snap: &Snapshot) -> HashMap<WaiterKey, WaitAge> {
        self.refreshes += 1;
        let mut next = HashMap::new();
        let mut ages = HashMap::new();
        let mut glocks = HashMap::new();
        for s in &snap.shown {
            if s.glock.waiter_count() > 0 {
                let since = self
                    .glocks
                    .get(&(s.input, s.glock.id))
                    .copied()
                    .unwrap_or(snap.taken);
                glocks.insert((s.input, s.glock.id), since);
            }
            for w in s.glock.waiters() {
                let key = WaiterKey::of(s.input, &s.glock, w);
                let (first, n) = self.seen.get(&key).copied().unwrap_or((snap.taken, 0));
                let age = WaitAge {
                    first_seen: first,
                    seen_secs: snap
                        .taken
                        .duration_since(first)
                        .map_or(0.0, |d| d.as_secs_f64()),
                    refreshes: n + 1,
                    new: n == 0 && self.refreshes > 1,
                };
                next.insert(key.clone(), (first, n + 1));
                ages.insert(key, age);
            }
        }
        self.seen = next;
        self.glocks = glocks;
        ages
    }
}
