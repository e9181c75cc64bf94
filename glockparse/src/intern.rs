//! A bounded string interner: holder comms and callers repeat across thousands of
//! records, so each distinct string is allocated once and shared.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Past this many distinct strings the table is emptied, so adversarial input cannot
/// grow memory without bound.
const MAX_ENTRIES: usize = 65_536;

/// FxHash (rustc's hasher): keys are short kernel strings, not attacker-chosen hash
/// flooding targets, and the table is bounded anyway.
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let v = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub struct Interner {
    map: HashMap<Box<[u8]>, Arc<str>, BuildHasherDefault<Fx>>,
    empty: Arc<str>,
}

impl Default for Interner {
    fn default() -> Interner {
        Interner {
            map: HashMap::default(),
            empty: Arc::from(""),
        }
    }
}

impl Interner {
    /// The shared empty string.
    pub fn empty(&self) -> Arc<str> {
        Arc::clone(&self.empty)
    }

    pub fn intern(&mut self, bytes: &[u8]) -> Arc<str> {
        if let Some(s) = self.map.get(bytes) {
            return Arc::clone(s);
        }
        if self.map.len() >= MAX_ENTRIES {
            self.map.clear();
        }
        // Quoted: a holder's comm is whatever name its program chose.
        let s: Arc<str> = Arc::from(crate::quote::plain(bytes).as_ref());
        self.map.insert(bytes.into(), Arc::clone(&s));
        s
    }
}
