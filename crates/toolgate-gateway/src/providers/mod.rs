//! The routes' wire formats: where a route lives, how its errors look (so
//! the official SDKs raise their usual error), how its key is sent, and how
//! a blocked turn is sent back to the model (`on_violation: retry`).

mod anthropic;
mod openai;

use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{json, Value};
use toolgate::{CallKind, CallVerdict, ToolCall, Verdict};

use crate::error::Failure;

/// One of the proxied APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// `POST /v1/chat/completions`
    OpenAiChat,
    /// `POST /v1/responses`
    OpenAiResponses,
    /// `POST /v1/messages`
    Anthropic,
}

impl Provider {
    pub const ALL: [Provider; 3] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
    ];

    /// The route, which is also the path appended to the upstream.
    #[must_use]
    pub fn path(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "/v1/chat/completions",
            Provider::OpenAiResponses => "/v1/responses",
            Provider::Anthropic => "/v1/messages",
        }
    }

    /// The metric and audit label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "chat_completions",
            Provider::OpenAiResponses => "responses",
            Provider::Anthropic => "messages",
        }
    }

    /// The error body of `failure`, in the route's shape.
    #[must_use]
    pub fn error_body(self, failure: &Failure) -> Value {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => openai::error_body(failure),
            Provider::Anthropic => anthropic::error_body(failure),
        }
    }

    /// The HTTP answer for `failure`.
    #[must_use]
    pub fn failure_response(self, failure: &Failure) -> Response {
        let body = serde_json::to_vec(&self.error_body(failure)).unwrap_or_default();
        (
            failure.status(),
            [(header::CONTENT_TYPE, "application/json")],
            Bytes::from(body),
        )
            .into_response()
    }

    /// The stream event that replaces whatever was held when a stream is
    /// blocked or fails.
    #[must_use]
    pub fn error_event(self, failure: &Failure) -> Vec<u8> {
        let body = self.error_body(failure);
        let event = match self {
            Provider::OpenAiResponses => openai::responses_error_event(failure, body),
            Provider::OpenAiChat | Provider::Anthropic => body,
        };
        self.error_frame(&event)
    }

    /// The stream event that carries the upstream's own error body (one
    /// JSON document, carrying no call) to a client whose stream has
    /// begun: the body itself (`data: ...` on Chat, `event: error` on
    /// Anthropic, whose error body is its error event), or on Responses an
    /// `error` event with the body's `code`, `message` and `param` beside
    /// it.
    #[must_use]
    pub fn upstream_error_event(self, body: &[u8]) -> Vec<u8> {
        let body = body.strip_prefix("\u{feff}".as_bytes()).unwrap_or(body);
        let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let event = match self {
            Provider::OpenAiResponses => openai::responses_upstream_error_event(value),
            Provider::OpenAiChat | Provider::Anthropic => value,
        };
        self.error_frame(&event)
    }

    /// `event`, framed as the route's stream error event.
    fn error_frame(self, event: &Value) -> Vec<u8> {
        let data = serde_json::to_string(event).unwrap_or_default();
        match self {
            Provider::OpenAiChat => format!("data: {data}\n\n").into_bytes(),
            Provider::OpenAiResponses | Provider::Anthropic => {
                format!("event: error\ndata: {data}\n\n").into_bytes()
            }
        }
    }

    /// Whether a stream error event's data is the route's error and
    /// nothing else: an object with only the keys of the route's error
    /// event (Chat `error`; Anthropic `type`, `error`, `request_id`;
    /// Responses `type`, `code`, `message`, `param`, `sequence_number`,
    /// `error`), whose `error` object names nothing a call or its output
    /// is made of (its details, such as Azure's `innererror`, may nest).
    /// An error event that also carries an item, a content block or a
    /// choice is not passed as an error.
    #[must_use]
    pub fn is_plain_error(self, data: &[u8]) -> bool {
        let Ok(Value::Object(event)) = serde_json::from_slice::<Value>(data) else {
            return false;
        };
        let keys: &[&str] = match self {
            Provider::OpenAiChat => &["error"],
            Provider::Anthropic => &["type", "error", "request_id"],
            Provider::OpenAiResponses => &[
                "type",
                "code",
                "message",
                "param",
                "sequence_number",
                "error",
            ],
        };
        let plain = |value: &Value| !matches!(value, Value::Array(_) | Value::Object(_));
        event.keys().all(|key| keys.contains(&key.as_str()))
            && event
                .iter()
                .all(|(key, value)| key == "error" || plain(value))
            && match event.get("error") {
                None | Some(Value::Null) => self == Provider::OpenAiResponses,
                Some(Value::Object(error)) => !names_a_call_part(&Value::Object(error.clone()), 0),
                Some(_) => false,
            }
    }

    /// Whether an SSE event is the route's last of an answer (Chat
    /// `data: [DONE]`, Anthropic `message_stop`, Responses
    /// `response.completed`, `.incomplete` or `.failed`), or an error
    /// event (which ends it): a client that has it takes the answer for
    /// complete.
    #[must_use]
    pub fn is_final_event(self, raw: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Typed {
            #[serde(rename = "type")]
            kind: Option<Value>,
            error: Option<Value>,
        }
        let Some(data) = toolgate::detect::sse::event_data(raw) else {
            return false;
        };
        let finals: &[&str] = match self {
            Provider::OpenAiChat if data.trim_ascii() == b"[DONE]" => return true,
            Provider::OpenAiChat => &[],
            Provider::Anthropic => &["message_stop", "error"],
            Provider::OpenAiResponses => &[
                "response.completed",
                "response.incomplete",
                "response.failed",
                "error",
            ],
        };
        // Most events are text deltas: the JSON is read only when it may
        // name one (an escape may spell a name in other bytes).
        // (A vectorized search: every event of every stream is looked
        // through before it is passed on.)
        let mentions = |name: &[u8]| memchr::memmem::find(&data, name).is_some();
        if !mentions(b"error")
            && !mentions(b"\\")
            && !finals.iter().any(|name| mentions(name.as_bytes()))
        {
            return false;
        }
        let Ok(typed) = serde_json::from_slice::<Typed>(&data) else {
            return false;
        };
        match self {
            Provider::OpenAiChat => typed.error.is_some(),
            Provider::Anthropic | Provider::OpenAiResponses => typed
                .kind
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|kind| finals.contains(&kind)),
        }
    }

    /// Whether the upstream keeps this route's answers for follow-ups that
    /// name them (the Responses API).
    #[must_use]
    pub fn keeps_responses(self) -> bool {
        self == Provider::OpenAiResponses
    }

    /// The header that carries an API key to this upstream.
    #[must_use]
    pub fn key_header(self, key: &str) -> Option<(HeaderName, HeaderValue)> {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => Some((
                header::AUTHORIZATION,
                HeaderValue::from_str(&format!("Bearer {key}")).ok()?,
            )),
            Provider::Anthropic => Some((
                HeaderName::from_static("x-api-key"),
                HeaderValue::from_str(key).ok()?,
            )),
        }
    }

    /// Extend `request` with the blocked turn of `response` and, for each
    /// of its calls, a tool result telling the model what was wrong. False
    /// when the turn cannot be sent back (no call to answer, a shape we do
    /// not know): then the response is blocked.
    #[must_use]
    pub fn retry(self, request: &mut Value, response: &Value, verdict: &Verdict) -> bool {
        match self {
            Provider::OpenAiChat => openai::retry_chat(request, response, verdict),
            Provider::OpenAiResponses => openai::retry_responses(request, response, verdict),
            Provider::Anthropic => anthropic::retry(request, response, verdict),
        }
    }
}

impl Provider {
    /// Like [`Provider::retry`], for a streamed turn: the blocked turn is
    /// rebuilt from its calls as read (`approvals`: the Responses
    /// `mcp_approval_request` items the turn held, sent back as they came,
    /// each declined). False when one cannot be answered (no id where the
    /// route needs one, a provider-hosted call that asks no approval).
    #[must_use]
    pub fn retry_calls(
        self,
        request: &mut Value,
        calls: &[ToolCall],
        approvals: &[Value],
        verdict: &Verdict,
    ) -> bool {
        if calls.is_empty() {
            return false;
        }
        match self {
            Provider::OpenAiChat => openai::retry_chat_calls(request, calls, verdict),
            Provider::OpenAiResponses => {
                openai::retry_responses_calls(request, calls, approvals, verdict)
            }
            Provider::Anthropic => {
                if calls
                    .iter()
                    .any(|c| c.id.is_none() || c.kind == CallKind::Hosted)
                {
                    return false;
                }
                anthropic::retry_calls(request, calls, verdict)
            }
        }
    }
}

/// Whether `value` holds, at any depth (bounded), a key that a call, a
/// tool result or a model's output is made of.
fn names_a_call_part(value: &Value, depth: usize) -> bool {
    const PARTS: [&str; 16] = [
        "tool_calls",
        "function_call",
        "function",
        "arguments",
        "input",
        "name",
        "call_id",
        "content_block",
        "content",
        "item",
        "output",
        "choices",
        "delta",
        "message_delta",
        "tool_use",
        "parts",
    ];
    if depth > 32 {
        return true;
    }
    match value {
        Value::Object(object) => object.iter().any(|(key, value)| {
            PARTS.contains(&key.as_str()) || names_a_call_part(value, depth + 1)
        }),
        Value::Array(values) => values
            .iter()
            .any(|value| names_a_call_part(value, depth + 1)),
        _ => false,
    }
}

/// The tool result the model reads for the call with id `id`: why it was
/// blocked (violation messages name arguments and rules, never values), or
/// that it did not run because another call of its turn was blocked.
pub(crate) fn feedback(verdict: &Verdict, id: &str) -> String {
    let call = verdict
        .calls
        .iter()
        .find(|call| call.id.as_deref() == Some(id));
    feedback_on(verdict, call)
}

/// [`feedback`] for `call` (a call of the verdict), or for a call the
/// verdict does not name.
pub(crate) fn feedback_on(verdict: &Verdict, call: Option<&CallVerdict>) -> String {
    match call {
        Some(call) if !call.violations.is_empty() => {
            let reasons: Vec<&str> = call.violations.iter().map(|v| v.message.as_str()).collect();
            format!(
                "toolgate blocked this tool call; it did not run: {}. Correct the call and try again.",
                reasons.join("; ")
            )
        }
        _ if !verdict.violations.iter().any(|v| v.call.is_none()) => {
            "toolgate did not run this tool call because another call in the same turn was blocked; call it again if it is still needed.".to_owned()
        }
        _ => format!(
            "toolgate blocked this turn; no tool call ran: {}",
            verdict.reasoning
        ),
    }
}

/// The verdict as JSON for an error body.
pub(crate) fn verdict_json(failure: &Failure) -> Value {
    failure
        .verdict()
        .and_then(|v| serde_json::to_value(v).ok())
        .unwrap_or(Value::Null)
}

/// `{"role": .., "content": ..}` for a request whose input is a string.
pub(crate) fn user_text(text: &str) -> Value {
    json!({"role": "user", "content": text})
}
