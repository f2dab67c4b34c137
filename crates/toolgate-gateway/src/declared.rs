//! Compiled request tools, shared by the requests that declare the same
//! list. An agent sends its whole tool list with every request; compiling
//! each tool's JSON Schema again per request (for the request check, the
//! stream's name check and the response check) would cost more than the
//! check itself. Entries are keyed by the exact JSON text of the list, so
//! two lists share an entry only when they are the same.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use toolgate::{DeclaredTools, Policy};

/// Tool lists kept compiled.
const MAX_LISTS: usize = 256;
/// Bytes of tool-list text kept as keys, all entries together.
const MAX_KEY_BYTES: usize = 16 << 20;

#[derive(Debug, Default)]
pub(crate) struct DeclaredCache {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    compiled: HashMap<Vec<u8>, Arc<DeclaredTools>>,
    order: VecDeque<Vec<u8>>,
    key_bytes: usize,
}

impl DeclaredCache {
    /// The compiled form of `tools`; `None` when the request declares none.
    pub(crate) fn get(&self, policy: &Policy, tools: &[Value]) -> Option<Arc<DeclaredTools>> {
        if tools.is_empty() {
            return None;
        }
        let Ok(key) = serde_json::to_vec(tools) else {
            return Some(Arc::new(policy.declare(tools)));
        };
        if let Some(found) = self
            .inner
            .lock()
            .ok()
            .and_then(|entries| entries.compiled.get(&key).cloned())
        {
            return Some(found);
        }
        let compiled = Arc::new(policy.declare(tools));
        if key.len() <= MAX_KEY_BYTES / 4 {
            if let Ok(mut entries) = self.inner.lock() {
                entries.insert(key, Arc::clone(&compiled));
            }
        }
        Some(compiled)
    }
}

impl Entries {
    fn insert(&mut self, key: Vec<u8>, compiled: Arc<DeclaredTools>) {
        if self.compiled.contains_key(&key) {
            return;
        }
        while self.order.len() >= MAX_LISTS || self.key_bytes + key.len() > MAX_KEY_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.key_bytes -= old.len();
            self.compiled.remove(&old);
        }
        self.key_bytes += key.len();
        self.order.push_back(key.clone());
        self.compiled.insert(key, compiled);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_same_list_is_compiled_once_and_lists_are_told_apart() {
        let policy = Policy::default();
        let cache = DeclaredCache::default();
        let a = vec![json!({"name": "a", "parameters": {"type": "object"}})];
        let b = vec![json!({"name": "b", "parameters": {"type": "object"}})];
        let first = cache.get(&policy, &a).unwrap();
        assert!(Arc::ptr_eq(&first, &cache.get(&policy, &a).unwrap()));
        assert!(!Arc::ptr_eq(&first, &cache.get(&policy, &b).unwrap()));
        assert!(cache.get(&policy, &[]).is_none());
        for n in 0..MAX_LISTS + 10 {
            let list = vec![json!({"name": format!("t{n}"), "parameters": {"type": "object"}})];
            cache.get(&policy, &list);
        }
        let entries = cache.inner.lock().unwrap();
        assert_eq!(entries.compiled.len(), MAX_LISTS);
        assert_eq!(entries.order.len(), MAX_LISTS);
    }
}
