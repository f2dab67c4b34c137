//! The Responses API's tool loop keeps the conversation upstream: a
//! follow-up names `previous_response_id` and sends only the results. The
//! gateway remembers the calls of each Responses answer it released, so
//! those results are linked to real calls like any other; results that
//! answer calls this gateway did not release (another replica, a restart)
//! are refused, as results with unknown ids are.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use toolgate::{Answers, Arguments, CallKind, Detection, Format, ToolCall, Verdict};

/// Calls remembered, all responses together; the oldest response is
/// forgotten first.
const MAX_CALLS: usize = 200_000;

/// One released call: its id and tool name.
type Released = Vec<(String, String)>;

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
    /// Remember the calls of a released response.
    pub(crate) fn remember(&self, response_id: &str, verdict: &Verdict) {
        let calls: Released = verdict
            .calls
            .iter()
            .filter_map(|c| Some((c.id.clone()?, c.name.clone())))
            .collect();
        if calls.is_empty() {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let inner = &mut *inner;
        inner.calls += calls.len();
        match inner.by_response.insert(response_id.to_owned(), calls) {
            Some(replaced) => inner.calls -= replaced.len(),
            None => inner.order.push_back(response_id.to_owned()),
        }
        while inner.calls > MAX_CALLS {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some(forgotten) = inner.by_response.remove(&old) {
                inner.calls -= forgotten.len();
            }
        }
    }

    /// The calls of a response this gateway released.
    pub(crate) fn get(&self, response_id: &str) -> Option<Released> {
        self.inner
            .lock()
            .ok()?
            .by_response
            .get(response_id)
            .cloned()
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

/// The data of an SSE event's bytes (its `data` lines joined).
pub(crate) fn event_data(raw: &[u8]) -> Option<Vec<u8>> {
    let mut lines = crate::stream::data_lines(raw);
    let mut data = lines.next()?.to_vec();
    for line in lines {
        data.push(b'\n');
        data.extend_from_slice(line);
    }
    Some(data)
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
        assert_eq!(
            event_data(b"event: response.created\r\ndata: {\"a\":1}\r\n\r\n").as_deref(),
            Some(&b"{\"a\":1}"[..])
        );
        assert_eq!(event_data(b": keep-alive\n\n"), None);
    }

    #[test]
    fn memory_is_bounded_by_calls_and_the_oldest_go_first() {
        let verdict = toolgate::Policy::default().check(
            br#"[{"id": "c1", "name": "a", "arguments": {}}, {"id": "c2", "name": "b", "arguments": {}}]"#,
        );
        let released = ReleasedCalls::default();
        for n in 0..MAX_CALLS / 2 + 10 {
            released.remember(&format!("resp_{n}"), &verdict);
        }
        assert!(released.get("resp_0").is_none());
        let last = released
            .get(&format!("resp_{}", MAX_CALLS / 2 + 9))
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
        assert_eq!(inner.calls, inner.by_response.len() * 2);
    }
}
