//! The Responses API's tool loop keeps the conversation upstream: a
//! follow-up names `previous_response_id` (or a `conversation`) and sends
//! only the results. The gateway remembers the calls of each Responses
//! answer it released, by response and by conversation, so those results
//! are linked to real calls like any other; results that answer calls
//! this gateway did not release (another replica, a restart) are refused,
//! as results with unknown ids are.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use toolgate::{Answers, Arguments, CallKind, Detection, Format, ToolCall, Verdict};

/// Calls remembered, all responses together; the oldest response is
/// forgotten first.
const MAX_CALLS: usize = 200_000;

/// The calls a follow-up may answer: each one's id and tool name.
pub(crate) type Earlier = Vec<(String, String)>;
type Released = Earlier;

#[derive(Debug, Default)]
pub(crate) struct ReleasedCalls {
    inner: Mutex<Remembered>,
}

#[derive(Debug, Default)]
struct Remembered {
    by_response: HashMap<String, Released>,
    order: VecDeque<String>,
    calls: usize,
}

impl ReleasedCalls {
    /// Remember the calls of a released response, for a follow-up that
    /// names it as `previous_response_id`.
    pub(crate) fn remember_response(&self, response_id: &str, verdict: &Verdict) {
        self.remember(format!("response:{response_id}"), verdict, false);
    }

    /// Remember the calls of the last response released in a
    /// conversation, for the next request in it: they replace those of the
    /// response before.
    pub(crate) fn remember_conversation(&self, conversation: &str, verdict: &Verdict) {
        self.remember(format!("conversation:{conversation}"), verdict, true);
    }

    /// The calls a Responses request may answer: those of the response it
    /// continues, or of the last one released in its conversation.
    pub(crate) fn earlier(
        &self,
        previous_response_id: Option<&str>,
        conversation: Option<&str>,
    ) -> Option<Earlier> {
        match (previous_response_id, conversation) {
            (Some(id), _) => self.get(&format!("response:{id}")),
            (None, Some(id)) => self.get(&format!("conversation:{id}")),
            (None, None) => None,
        }
    }

    /// Remember `verdict`'s calls under `key`. A response without calls
    /// is remembered only where it replaces (a conversation moved on).
    /// Each entry costs its calls plus one against the bound.
    fn remember(&self, key: String, verdict: &Verdict, replace: bool) {
        let calls: Released = verdict
            .calls
            .iter()
            .filter_map(|c| Some((c.id.clone()?, c.name.clone())))
            .collect();
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let inner = &mut *inner;
        if calls.is_empty() && !(replace && inner.by_response.contains_key(&key)) {
            return;
        }
        inner.calls += calls.len() + 1;
        match inner.by_response.insert(key.clone(), calls) {
            Some(replaced) => inner.calls -= replaced.len() + 1,
            None => inner.order.push_back(key),
        }
        while inner.calls > MAX_CALLS {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some(forgotten) = inner.by_response.remove(&old) {
                inner.calls -= forgotten.len() + 1;
            }
        }
    }

    fn get(&self, key: &str) -> Option<Released> {
        self.inner.lock().ok()?.by_response.get(key).cloned()
    }
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
        name: name.clone(),
        kind: CallKind::Function,
        arguments: Arguments::Object(serde_json::Map::new()),
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
    fn memory_is_bounded_by_calls_and_the_oldest_go_first() {
        let verdict = toolgate::Policy::default().check(
            br#"[{"id": "c1", "name": "a", "arguments": {}}, {"id": "c2", "name": "b", "arguments": {}}]"#,
        );
        let released = ReleasedCalls::default();
        for n in 0..MAX_CALLS / 3 + 10 {
            released.remember_response(&format!("resp_{n}"), &verdict);
        }
        assert!(released.earlier(Some("resp_0"), None).is_none());
        let last = released
            .earlier(Some(&format!("resp_{}", MAX_CALLS / 3 + 9)), None)
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
