//! The Responses API's tool loop keeps the conversation upstream: a
//! follow-up names `previous_response_id` (or a `conversation`) and sends
//! only the results. The gateway remembers the calls of each Responses
//! answer it released, by response and by conversation, so those results
//! are linked to real calls like any other; results that answer calls
//! this gateway did not release (another replica, a restart) are refused,
//! as results with unknown ids are.
//!
//! What is remembered is bound to the caller it was released to (when the
//! policy lists callers): a follow-up from another caller is refused. And
//! every `mcp_approval_request` released is remembered by its id, with
//! what it asks: an `mcp_approval_response` must answer one of those,
//! released to the same caller, whatever request items the client puts
//! beside it (a copy it sends must ask exactly what was released).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::Value;
use toolgate::{Answers, Arguments, CallKind, Detection, Format, ToolCall, Verdict};

/// Calls remembered, all responses together; the oldest response is
/// forgotten first.
const MAX_CALLS: usize = 200_000;

/// Approval requests remembered; the oldest is forgotten first.
const MAX_APPROVALS: usize = 100_000;

/// How deep the search for approval items goes into a document.
const MAX_ITEM_DEPTH: usize = 64;

/// The calls a follow-up may answer: each one's id and tool name.
pub(crate) type Earlier = Vec<(String, String)>;

/// A follow-up that continues what was released to another caller.
#[derive(Debug)]
pub(crate) struct OtherCaller;

#[derive(Debug, Default)]
pub(crate) struct ReleasedCalls {
    inner: Mutex<Remembered>,
}

#[derive(Debug)]
struct Released {
    /// The caller it was released to (`None`: the policy lists none).
    caller: Option<String>,
    calls: Earlier,
}

#[derive(Debug)]
struct Approval {
    caller: Option<String>,
    /// What the request asks: its server, tool and arguments.
    asks: String,
}

#[derive(Debug, Default)]
struct Remembered {
    by_response: HashMap<String, Released>,
    order: VecDeque<String>,
    calls: usize,
    approvals: HashMap<String, Approval>,
    approval_order: VecDeque<String>,
}

impl ReleasedCalls {
    /// Remember the calls of a released response, for a follow-up that
    /// names it as `previous_response_id`.
    pub(crate) fn remember_response(
        &self,
        response_id: &str,
        verdict: &Verdict,
        caller: Option<&str>,
    ) {
        self.remember(format!("response:{response_id}"), verdict, caller, false);
    }

    /// Remember the calls of the last response released in a
    /// conversation, for the next request in it: they replace those of the
    /// response before.
    pub(crate) fn remember_conversation(
        &self,
        conversation: &str,
        verdict: &Verdict,
        caller: Option<&str>,
    ) {
        self.remember(
            format!("conversation:{conversation}"),
            verdict,
            caller,
            true,
        );
    }

    /// Remember the approval requests of a released answer (`items`, from
    /// [`approval_items`]), each bound to `caller`.
    pub(crate) fn remember_approvals(&self, items: &ApprovalItems, caller: Option<&str>) {
        if items.requests.is_empty() {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let inner = &mut *inner;
        for (id, asks) in &items.requests {
            let approval = Approval {
                caller: caller.map(str::to_owned),
                asks: asks.clone(),
            };
            if inner.approvals.insert(id.clone(), approval).is_none() {
                inner.approval_order.push_back(id.clone());
            }
        }
        while inner.approvals.len() > MAX_APPROVALS {
            let Some(old) = inner.approval_order.pop_front() else {
                break;
            };
            inner.approvals.remove(&old);
        }
    }

    /// Whether the approval request `id` was released to `caller`, asking
    /// what `copies` (the request items the client sent with this id, if
    /// any) ask.
    pub(crate) fn approvable(&self, id: &str, caller: Option<&str>, copies: &[&str]) -> bool {
        let Ok(inner) = self.inner.lock() else {
            return false;
        };
        inner.approvals.get(id).is_some_and(|approval| {
            approval.caller.as_deref() == caller && copies.iter().all(|c| *c == approval.asks)
        })
    }

    /// The calls a Responses request may answer: those of the response it
    /// continues, or of the last one released in its conversation; an
    /// error when that was released to another caller.
    pub(crate) fn earlier(
        &self,
        previous_response_id: Option<&str>,
        conversation: Option<&str>,
        caller: Option<&str>,
    ) -> Result<Option<Earlier>, OtherCaller> {
        let mut found = None;
        if let Some(id) = conversation {
            found = self.get(&format!("conversation:{id}"), caller)?;
        }
        if let Some(id) = previous_response_id {
            found = self.get(&format!("response:{id}"), caller)?;
        }
        Ok(found)
    }

    /// Remember `verdict`'s calls under `key`. A response without calls
    /// is remembered only where it replaces (a conversation moved on), or
    /// to bind it to its caller. Each entry costs its calls plus one
    /// against the bound.
    fn remember(&self, key: String, verdict: &Verdict, caller: Option<&str>, replace: bool) {
        let calls: Earlier = verdict
            .calls
            .iter()
            .filter_map(|c| Some((c.id.clone()?, c.name.to_string())))
            .collect();
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let inner = &mut *inner;
        if calls.is_empty()
            && caller.is_none()
            && !(replace && inner.by_response.contains_key(&key))
        {
            return;
        }
        inner.calls += calls.len() + 1;
        let released = Released {
            caller: caller.map(str::to_owned),
            calls,
        };
        match inner.by_response.insert(key.clone(), released) {
            Some(replaced) => inner.calls -= replaced.calls.len() + 1,
            None => inner.order.push_back(key),
        }
        inner.evict();
    }

    /// Bind a response the gateway has seen (released or not: the
    /// upstream keeps it either way), or a conversation a request names,
    /// to `caller`, unless it is bound already: a follow-up from another
    /// caller is then refused. Nothing when the policy lists no callers.
    pub(crate) fn bind(
        &self,
        response_id: Option<&str>,
        conversation: Option<&str>,
        caller: Option<&str>,
    ) {
        let Some(caller) = caller else {
            return;
        };
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let keys = [
            response_id.map(|id| format!("response:{id}")),
            conversation.map(|id| format!("conversation:{id}")),
        ];
        for key in keys.into_iter().flatten() {
            if inner.by_response.contains_key(&key) {
                continue;
            }
            let bound = Released {
                caller: Some(caller.to_owned()),
                calls: Vec::new(),
            };
            inner.by_response.insert(key.clone(), bound);
            inner.order.push_back(key);
            inner.calls += 1;
        }
        inner.evict();
    }

    fn get(&self, key: &str, caller: Option<&str>) -> Result<Option<Earlier>, OtherCaller> {
        let Ok(inner) = self.inner.lock() else {
            return Ok(None);
        };
        match inner.by_response.get(key) {
            None => Ok(None),
            Some(released) if released.caller.as_deref() != caller => Err(OtherCaller),
            Some(released) if released.calls.is_empty() => Ok(None),
            Some(released) => Ok(Some(released.calls.clone())),
        }
    }
}

impl Remembered {
    /// Forget the oldest entries past the bound.
    fn evict(&mut self) {
        while self.calls > MAX_CALLS {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(forgotten) = self.by_response.remove(&old) {
                self.calls -= forgotten.calls.len() + 1;
            }
        }
    }
}

/// The MCP approval items of a JSON document, wherever they sit in it.
#[derive(Debug, Default)]
pub(crate) struct ApprovalItems {
    /// Each `mcp_approval_request`: its `id`, and what it asks (its
    /// server, tool and arguments, as JSON).
    pub(crate) requests: Vec<(String, String)>,
    /// The `approval_request_id` of each `mcp_approval_response` (`None`
    /// when it is not a string).
    pub(crate) responses: Vec<Option<String>>,
}

/// The approval items of `json` (nothing when it is not JSON).
pub(crate) fn approval_items(json: &[u8]) -> ApprovalItems {
    let mut items = ApprovalItems::default();
    items.add_json(json);
    items
}

/// Whether `json` may hold an approval item: one spells `approval` in its
/// type, or escapes it with `\u`; a document with neither holds none, and
/// need not be read. (A vectorized search: every Responses request,
/// answer and held stream event is looked through.)
pub(crate) fn may_hold_approval(json: &[u8]) -> bool {
    let mentions = |needle: &[u8]| memchr::memmem::find(json, needle).is_some();
    mentions(b"approval") || mentions(b"\\u")
}

impl ApprovalItems {
    /// Add the approval items of the JSON document `json` (none when it
    /// is not JSON), read only when it may hold one.
    pub(crate) fn add_json(&mut self, json: &[u8]) {
        if !may_hold_approval(json) {
            return;
        }
        if let Ok(value) = serde_json::from_slice::<Value>(json) {
            self.add(&value, 0);
        }
    }

    /// Add the approval items of `value`.
    pub(crate) fn add(&mut self, value: &Value, depth: usize) {
        if depth > MAX_ITEM_DEPTH {
            return;
        }
        match value {
            Value::Array(values) => {
                for value in values {
                    self.add(value, depth + 1);
                }
            }
            Value::Object(object) => {
                match object.get("type").and_then(Value::as_str) {
                    Some("mcp_approval_request") => {
                        let asks = serde_json::to_string(&[
                            object.get("server_label"),
                            object.get("name"),
                            object.get("arguments"),
                        ])
                        .unwrap_or_default();
                        let id = object.get("id").and_then(Value::as_str).unwrap_or_default();
                        self.requests.push((id.to_owned(), asks));
                    }
                    Some("mcp_approval_response") => self.responses.push(
                        object
                            .get("approval_request_id")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    ),
                    _ => {}
                }
                for value in object.values() {
                    self.add(value, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// Whether a verdict's calls may hold an approval request (a call of the
/// Responses API), so that its answer is worth searching for them.
pub(crate) fn may_ask_approval(verdict: &Verdict) -> bool {
    verdict
        .calls
        .iter()
        .any(|c| c.format == Format::OpenAiResponses)
}

/// Put the calls of the previous response before everything the request
/// holds, so its results link to them.
pub(crate) fn link(detection: &mut Detection, earlier: &[(String, String)]) {
    for call in &mut detection.calls {
        call.turn += 1;
    }
    for result in &mut detection.results {
        result.turn += 1;
        result.answers = match result.answers {
            // The results the request opens with answer the calls released.
            Answers::Earlier => Answers::Turn(0),
            Answers::Turn(turn) => Answers::Turn(turn + 1),
            Answers::Nothing => Answers::Nothing,
        };
    }
    detection.pending = detection.pending.map(|turn| turn + 1);
    let first = detection.calls.len();
    let injected = earlier.iter().enumerate().map(|(at, (id, name))| ToolCall {
        index: first + at,
        id: Some(id.clone()),
        name: name.as_str().into(),
        kind: CallKind::Function,
        arguments: Arguments::Object(serde_json::Map::new().into()),
        raw_arguments: "{}".to_owned(),
        format: Format::OpenAiResponses,
        turn: 0,
    });
    let mut calls: Vec<ToolCall> = injected.collect();
    calls.append(&mut detection.calls);
    detection.calls = calls;
}

/// The `id` of a Responses answer: of the whole body, or of the
/// `response` a stream event carries (`response.created`).
pub(crate) fn response_id(json: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Inner {
        id: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Outer {
        id: Option<String>,
        response: Option<Inner>,
    }
    let outer: Outer = serde_json::from_slice(json).ok()?;
    outer.id.or(outer.response.and_then(|r| r.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_bodies_and_stream_events() {
        assert_eq!(
            response_id(br#"{"id":"resp_1","output":[]}"#).as_deref(),
            Some("resp_1")
        );
        assert_eq!(
            response_id(br#"{"type":"response.created","response":{"id":"resp_2"}}"#).as_deref(),
            Some("resp_2")
        );
        assert_eq!(response_id(b"[]"), None);
    }

    #[test]
    fn approval_items_are_found_wherever_they_are_and_however_spelled() {
        let items = approval_items(
            br#"{"input": [{"role": "user", "content": [{"type": "mcp_approval_request", "id": "a", "name": "t", "arguments": "{}", "server_label": "s"}]},
                {"type": "mcp\u005fapproval_response", "approval_request_id": "a", "approve": true},
                {"type": "mcp_\u0061pproval_response", "approval_request_id": 7}]}"#,
        );
        assert_eq!(items.requests.len(), 1);
        assert_eq!(items.requests[0].0, "a");
        assert_eq!(items.responses, [Some("a".to_owned()), None]);
        assert!(approval_items(br#"{"input": "no items here"}"#)
            .responses
            .is_empty());
    }

    #[test]
    fn memory_is_bounded_by_calls_and_the_oldest_go_first() {
        let verdict = toolgate::Policy::default().check(
            br#"[{"id": "c1", "name": "a", "arguments": {}}, {"id": "c2", "name": "b", "arguments": {}}]"#,
        );
        let released = ReleasedCalls::default();
        for n in 0..MAX_CALLS / 3 + 10 {
            released.remember_response(&format!("resp_{n}"), &verdict, None);
        }
        assert!(released
            .earlier(Some("resp_0"), None, None)
            .unwrap()
            .is_none());
        let last = released
            .earlier(Some(&format!("resp_{}", MAX_CALLS / 3 + 9)), None, None)
            .unwrap()
            .unwrap();
        assert_eq!(
            last,
            [
                ("c1".to_owned(), "a".to_owned()),
                ("c2".to_owned(), "b".to_owned())
            ]
        );
        let inner = released.inner.lock().unwrap();
        assert!(inner.calls <= MAX_CALLS);
        assert_eq!(inner.calls, inner.by_response.len() * 3);
    }
}
