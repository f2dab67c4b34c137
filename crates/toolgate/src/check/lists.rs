//! Compiled request tool lists, kept by the policy for the payloads that
//! declare the same list. An agent sends its whole tool list with every
//! request, and the Responses API echoes it in every answer; reading and
//! compiling each tool's JSON Schema again for each payload would cost
//! several times the check itself.
//!
//! Entries are keyed by the list's JSON text exactly as the payload sent
//! it ([`ToolDeclarations::as_str`]): a payload finds its entry by hashing
//! that text and comparing it byte for byte with the entry's, and its list
//! is read and compiled only when no entry holds the same text. Two lists
//! share an entry only when they are the same bytes; the same tools
//! written with their keys in another order, or with other white space,
//! are another entry, compiled on their own. The entries are bounded in
//! number and in the bytes of their keys; the oldest go first.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap;

use super::DeclaredTools;
use crate::detect::ToolDeclarations;
use crate::policy::Policy;

/// Tool lists kept compiled.
const MAX_LISTS: usize = 256;
/// Bytes of tool-list text kept as keys, all entries together; a list
/// longer than a quarter of it is compiled each time, never kept.
const MAX_KEY_BYTES: usize = 16 << 20;

/// The compiled lists of one policy.
#[derive(Debug, Default)]
pub(crate) struct ToolLists {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    compiled: FxHashMap<Arc<str>, Arc<DeclaredTools>>,
    order: VecDeque<Arc<str>>,
    key_bytes: usize,
}

/// The compiled form of a payload's tools ([`Policy::declared`]).
#[derive(Debug, Clone)]
pub struct Declared {
    pub tools: Arc<DeclaredTools>,
    /// An entry held the same text: nothing was read or compiled.
    pub reused: bool,
}

impl ToolLists {
    /// The compiled form of `tools` for `policy`; `None` when the payload
    /// declares none.
    pub(crate) fn get(&self, policy: &Policy, tools: &ToolDeclarations) -> Option<Declared> {
        if tools.is_empty() {
            return None;
        }
        let key = tools.as_str();
        let kept = self.entries().compiled.get(key).cloned();
        if let Some(tools) = kept {
            return Some(Declared {
                tools,
                reused: true,
            });
        }
        let compiled = Arc::new(policy.declare_sent(tools));
        if key.len() <= MAX_KEY_BYTES / 4 {
            // The lists it pushes out are dropped once the lock is let go:
            // the other threads do not wait for their validators to go.
            let gone = self.entries().insert(key, Arc::clone(&compiled));
            drop(gone);
        }
        Some(Declared {
            tools: compiled,
            reused: false,
        })
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // An entry is inserted whole or not at all: a panic elsewhere
        // while the lock was held leaves nothing half made.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entries {
    /// Keep `compiled` for `key`, pushing out the oldest lists past the
    /// bounds; what was pushed out, to be dropped by the caller.
    fn insert(&mut self, key: &str, compiled: Arc<DeclaredTools>) -> Vec<Arc<DeclaredTools>> {
        let mut gone = Vec::new();
        if self.compiled.contains_key(key) {
            return gone;
        }
        while self.order.len() >= MAX_LISTS || self.key_bytes + key.len() > MAX_KEY_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.key_bytes -= old.len();
            gone.extend(self.compiled.remove(&old));
        }
        let key: Arc<str> = Arc::from(key);
        self.key_bytes += key.len();
        self.order.push_back(Arc::clone(&key));
        self.compiled.insert(key, compiled);
        gone
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::detect;

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
        let lists = ToolLists::default();
        let a = sent(&tool("a", &json!({"type": "object"})));
        let b = sent(&tool("b", &json!({"type": "object"})));
        let first = lists.get(&policy, &a).unwrap();
        assert!(!first.reused);
        let again = lists.get(&policy, &a).unwrap();
        assert!(again.reused);
        assert!(Arc::ptr_eq(&first.tools, &again.tools));
        let other = lists.get(&policy, &b).unwrap();
        assert!(!other.reused);
        assert!(!Arc::ptr_eq(&first.tools, &other.tools));
        assert!(lists.get(&policy, &ToolDeclarations::default()).is_none());
        for n in 0..MAX_LISTS + 10 {
            let list = sent(&tool(&format!("t{n}"), &json!({"type": "object"})));
            lists.get(&policy, &list);
        }
        let entries = lists.entries();
        assert_eq!(entries.compiled.len(), MAX_LISTS);
        assert_eq!(entries.order.len(), MAX_LISTS);
        let kept: usize = entries.order.iter().map(|k| k.len()).sum();
        assert_eq!(entries.key_bytes, kept);
    }

    /// A payload whose list is kept is judged as one whose list is
    /// compiled anew: the same verdict, the list's own violations
    /// (`invalid_tool_schema`, a list too deep to read) given each time,
    /// with chat requests and Responses answers (which echo the tools).
    #[test]
    fn a_kept_list_judges_as_a_list_compiled_anew() {
        let text = "tools:\n  - type: function\n    function:\n      name: get_weather\n      parameters: {type: object, properties: {city: {type: string}}, required: [city]}\n";
        let kept = Policy::from_text(text, None).unwrap();
        let fine = json!({"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}});
        let invalid = json!({"type": "function", "name": "broken", "parameters": {"type": 5}});
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "array", "items": deep});
        }
        let too_deep = json!({"type": "function", "name": "deep", "parameters": deep});
        let call = |name: &str, args: &str| json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name, "arguments": args, "status": "completed"});
        let mut payloads = Vec::new();
        for tools in [
            json!([fine]),
            json!([fine, invalid]),
            json!([too_deep, fine]),
        ] {
            for (name, args) in [
                ("lookup", r#"{"key": "k"}"#),
                ("lookup", "{}"),
                ("get_weather", r#"{"city": "Paris"}"#),
                ("broken", "{}"),
            ] {
                payloads.push(json!({"id": "resp_1", "object": "response", "status": "completed", "output": [call(name, args)], "tools": tools}));
                let chat = tools.as_array().unwrap().iter().map(|t| {
                    json!({"type": "function", "function": {"name": t["name"], "parameters": t["parameters"]}})
                }).collect::<Vec<_>>();
                payloads.push(json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}]}], "tools": chat}));
            }
        }
        for round in 0..3 {
            for payload in &payloads {
                let bytes = payload.to_string();
                let anew = Policy::from_text(text, None)
                    .unwrap()
                    .check(bytes.as_bytes());
                assert_eq!(kept.check(bytes.as_bytes()), anew, "round {round}: {bytes}");
            }
        }
        // Eight payloads a list, a Responses answer then a chat request
        // for each call: the second list declares an invalid tool (the chat
        // request fails with it, each time), the third one nested past the
        // depth a payload is read to.
        for _ in 0..2 {
            let verdict = kept.check(payloads[9].to_string().as_bytes());
            assert!(!verdict.passed, "{verdict:?}");
            let code = crate::ViolationCode::InvalidToolSchema;
            assert!(
                verdict.violations.iter().any(|v| v.code == code),
                "{verdict:?}"
            );
            assert!(!kept.check(payloads[17].to_string().as_bytes()).passed);
        }
    }

    #[test]
    fn lists_that_differ_in_one_schema_detail_or_only_in_spelling_never_share_an_entry() {
        let policy = Policy::default();
        let lists = ToolLists::default();
        let short =
            json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}}});
        let long =
            json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 6}}});
        let a = lists.get(&policy, &sent(&tool("t", &short))).unwrap();
        let b = lists.get(&policy, &sent(&tool("t", &long))).unwrap();
        assert!(
            !b.reused,
            "a list that differs in one schema detail is compiled on its own"
        );
        assert!(!Arc::ptr_eq(&a.tools, &b.tools));
        // The same list written with other white space or key order: another
        // entry, never a wrong one.
        let spaced = detect(
            br#"{"model": "m", "messages": [], "tools": [ {"type": "function", "function": {"name": "t", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}}}}} ]}"#,
        )
        .tools;
        let spaced = lists.get(&policy, &spaced).unwrap();
        assert!(!spaced.reused);
        assert!(!Arc::ptr_eq(&a.tools, &spaced.tools));
        assert!(
            lists
                .get(&policy, &sent(&tool("t", &short)))
                .unwrap()
                .reused
        );
        assert!(lists.get(&policy, &sent(&tool("t", &long))).unwrap().reused);
    }
}
