//! A bounded string interner: holder comms and callers repeat across thousands of
//! records, so each distinct string is allocated once and shared.

use std::collections::HashMap;
use std::sync::Arc;

/// Past this many distinct strings the table is emptied, so adversarial input cannot
/// grow memory without bound.
const MAX_ENTRIES: usize = 65_536;

#[derive(Default)]
pub struct Interner {
    map: HashMap<Box<[u8]>, Arc<str>>,
}

impl Interner {
    pub fn intern(&mut self, bytes: &[u8]) -> Arc<str> {
        if let Some(s) = self.map.get(bytes) {
            return Arc::clone(s);
        }
        if self.map.len() >= MAX_ENTRIES {
            self.map.clear();
        }
        let s: Arc<str> = Arc::from(String::from_utf8_lossy(bytes).as_ref());
        self.map.insert(bytes.into(), Arc::clone(&s));
        s
    }
}
