//! Compiled request tools, shared by the requests that declare the same
//! list. An agent sends its whole tool list with every request; reading
//! and compiling each tool's JSON Schema again per request (for the
//! request check, the stream's name check and the response check) would
//! cost more than the check itself.
//!
//! Entries are keyed by the lists' JSON text exactly as the request sent
//! it ([`ToolDeclarations::as_str`]): a request finds its entry by hashing
//! that text and comparing it byte for byte with the entry's, and its
//! list is read and compiled only when no entry holds the same text. Two
//! lists share an entry only when they are the same bytes; the same tools
//! written with their keys in another order, or with other white space,
//! are another entry, compiled on their own.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use toolgate::{DeclaredTools, Policy, ToolDeclarations};

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
    compiled: HashMap<Arc<str>, Arc<DeclaredTools>>,
    order: VecDeque<Arc<str>>,
    key_bytes: usize,
}

/// The compiled form of a request's tools, and how it was found.
pub(crate) struct Found {
    pub(crate) declared: Arc<DeclaredTools>,
    /// An entry held the same text: nothing was read or compiled.
    pub(crate) reused: bool,
}

impl DeclaredCache {
    /// The compiled form of `tools`; `None` when the request declares none.
    pub(crate) fn get(&self, policy: &Policy, tools: &ToolDeclarations) -> Option<Found> {
        if tools.is_empty() {
            return None;
        }
        let key = tools.as_str();
        if let Some(declared) = self
            .inner
            .lock()
            .ok()
            .and_then(|entries| entries.compiled.get(key).cloned())
        {
            return Some(Found {
                declared,
                reused: true,
            });
        }
        let declared = Arc::new(policy.declare_sent(tools));
        if key.len() <= MAX_KEY_BYTES / 4 {
            if let Ok(mut entries) = self.inner.lock() {
                entries.insert(key, Arc::clone(&declared));
            }
        }
        Some(Found {
            declared,
            reused: false,
        })
    }
}

impl Entries {
    fn insert(&mut self, key: &str, compiled: Arc<DeclaredTools>) {
        if self.compiled.contains_key(key) {
            return;
        }
        while self.order.len() >= MAX_LISTS || self.key_bytes + key.len() > MAX_KEY_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.key_bytes -= old.len();
            self.compiled.remove(&old);
        }
        let key: Arc<str> = Arc::from(key);
        self.key_bytes += key.len();
        self.order.push_back(Arc::clone(&key));
        self.compiled.insert(key, compiled);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate::detect;

    use super::*;

    /// The tools a chat request declares, as detection hands them over.
    fn sent(tools: &serde_json::Value) -> ToolDeclarations {
        let request =
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools});
        detect(request.to_string().as_bytes()).tools
    }

    fn tool(name: &str, schema: &serde_json::Value) -> serde_json::Value {
        json!([{"type": "function", "function": {"name": name, "parameters": schema}}])
    }

    #[test]
    fn the_same_list_is_compiled_once_and_lists_are_told_apart() {
        let policy = Policy::default();
        let cache = DeclaredCache::default();
        let a = sent(&tool("a", &json!({"type": "object"})));
        let b = sent(&tool("b", &json!({"type": "object"})));
        let first = cache.get(&policy, &a).unwrap();
        assert!(!first.reused);
        let again = cache.get(&policy, &a).unwrap();
        assert!(again.reused);
        assert!(Arc::ptr_eq(&first.declared, &again.declared));
        let other = cache.get(&policy, &b).unwrap();
        assert!(!other.reused);
        assert!(!Arc::ptr_eq(&first.declared, &other.declared));
        assert!(cache.get(&policy, &ToolDeclarations::default()).is_none());
        for n in 0..MAX_LISTS + 10 {
            let list = sent(&tool(&format!("t{n}"), &json!({"type": "object"})));
            cache.get(&policy, &list);
        }
        let entries = cache.inner.lock().unwrap();
        assert_eq!(entries.compiled.len(), MAX_LISTS);
        assert_eq!(entries.order.len(), MAX_LISTS);
        let kept: usize = entries.order.iter().map(|k| k.len()).sum();
        assert_eq!(entries.key_bytes, kept);
    }

    #[test]
    fn lists_that_differ_in_one_schema_detail_or_only_in_spelling_never_share_an_entry() {
        let policy = Policy::default();
        let cache = DeclaredCache::default();
        let short =
            json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}}});
        let long =
            json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 6}}});
        let a = cache.get(&policy, &sent(&tool("t", &short))).unwrap();
        let b = cache.get(&policy, &sent(&tool("t", &long))).unwrap();
        assert!(
            !b.reused,
            "a list that differs in one schema detail is compiled on its own"
        );
        assert!(!Arc::ptr_eq(&a.declared, &b.declared));
        // The same list written with other white space or key order: another
        // entry, never a wrong one.
        let spaced = detect(
            br#"{"model": "m", "messages": [], "tools": [ {"type": "function", "function": {"name": "t", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}}}}} ]}"#,
        )
        .tools;
        let spaced = cache.get(&policy, &spaced).unwrap();
        assert!(!spaced.reused);
        assert!(!Arc::ptr_eq(&a.declared, &spaced.declared));
        assert!(
            cache
                .get(&policy, &sent(&tool("t", &short)))
                .unwrap()
                .reused
        );
        assert!(cache.get(&policy, &sent(&tool("t", &long))).unwrap().reused);
    }
}
