//! Bytes to tool calls: find the wire format, then read every call and
//! result in order.
//!
//! [`detect`] takes a whole body: one JSON document (a response, a request,
//! a message, a message list, an array of calls), a `text/event-stream`
//! body, or a sequence of JSON documents (JSON lines, Bedrock ConverseStream
//! events). [`Assembler`] reads a stream chunk by chunk for the gateway.
//! Nothing here panics on bad input: it becomes a [`Violation`].

pub mod args;
mod collect;
mod cursor;
mod declarations;
mod document;
mod fast;
pub mod limits;
mod mcp;
mod node;
mod positions;
pub mod sse;
pub mod stream;
mod views;
// Arguments' compact form, and how the Python bindings write it.
#[doc(hidden)]
pub mod tape;

use serde::Serialize;

pub(crate) use self::args::json_type;
pub use self::args::{parse_arguments, parse_object};
use self::collect::Collector;
pub use self::declarations::ToolDeclarations;
#[doc(hidden)]
pub use self::fast::agrees as fast_path_agrees;
pub use self::limits::{Limits, MAX_ENVELOPE_OBJECTS};
use self::node::Node;
pub use self::stream::{Assembler, StreamEvent};
use crate::model::{Format, Framing, ToolCall, ToolResult};
use crate::verdict::{Violation, ViolationCode};

/// What [`detect`] found in a payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    /// The wire format of the payload (of its first recognised part);
    /// `None` when nothing was recognised.
    pub format: Option<Format>,
    pub framing: Framing,
    /// Every tool call, in order.
    pub calls: Vec<ToolCall>,
    /// Every tool result, in order.
    pub results: Vec<ToolResult>,
    /// The tool declarations of a request in the payload (its `tools`), as
    /// sent, kept as their JSON text: a check reads and compiles them
    /// ([`Policy::declare_sent`](crate::Policy::declare_sent)) and merges
    /// them with the policy's.
    #[serde(skip_serializing_if = "ToolDeclarations::is_empty")]
    pub tools: ToolDeclarations,
    /// Problems with the payload as a whole (`malformed_payload`,
    /// `input_limit_exceeded`). Problems with one call's arguments are on
    /// the call.
    pub violations: Vec<Violation>,
    /// The last turn with calls, when nothing moved the conversation on
    /// after it: its calls may still be waiting for their results. Every
    /// other turn with calls is closed.
    #[serde(skip)]
    pub pending: Option<usize>,
    /// The payload continues a conversation the provider keeps
    /// (`previous_response_id`, `conversation`): its first results may
    /// answer calls it does not hold.
    #[serde(skip)]
    pub continues: bool,
    /// How many calls the payload holds, counting those past `max_calls`
    /// that were not read.
    #[serde(skip)]
    pub calls_seen: usize,
}

impl Detection {
    /// No payload-level violation and every call's arguments readable.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty() && self.calls.iter().all(|c| c.arguments.error().is_none())
    }
}

/// Read the tool calls and results of a payload, with the default limits.
#[must_use]
pub fn detect(bytes: &[u8]) -> Detection {
    detect_with(bytes, &Limits::default())
}

/// Read the tool calls and results of a payload within `limits`.
#[must_use]
pub fn detect_with(bytes: &[u8], limits: &Limits) -> Detection {
    read(bytes, Collector::new(limits), limits)
}

/// [`detect_with`] for a caller that only judges what is found
/// ([`Policy::judge`](crate::Policy::judge), which reads no call's
/// `raw_arguments`): every call's `raw_arguments` is left empty, and an
/// `arguments` string is read onto its tape without being decoded too.
#[must_use]
#[inline(never)] // (a stage of its own in bench/callgrind_split.py)
pub fn detect_to_judge(bytes: &[u8], limits: &Limits) -> Detection {
    let mut out = Collector::new(limits);
    out.raw_arguments = collect::RawArguments::Unwanted;
    let mut found = read(bytes, out, limits);
    for call in &mut found.calls {
        call.raw_arguments = String::new();
    }
    found
}

fn read(bytes: &[u8], mut out: Collector<'_>, limits: &Limits) -> Detection {
    if bytes.len() > limits.max_payload_bytes {
        out.violation(
            ViolationCode::InputLimitExceeded,
            format!(
                "the payload is {} bytes, more than max_payload_bytes ({})",
                bytes.len(),
                limits.max_payload_bytes
            ),
        );
        return out.finish(Framing::Json);
    }
    let Some(text) = node::utf8(bytes) else {
        out.violation(
            ViolationCode::MalformedPayload,
            "the payload is not UTF-8 text",
        );
        return out.finish(Framing::Json);
    };
    // A byte order mark marks the file's encoding, not its content.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = text.trim_start();
    let max_depth = limits.max_depth.min(limits::HARD_MAX_DEPTH);
    // A model's answer of the short path's shape, read straight into its
    // calls; debug builds read it the general way too, and compare.
    if body.starts_with('{') && !out.is_census() {
        if let Some(answer) = fast::answer::read(body, max_depth) {
            #[cfg(debug_assertions)]
            let twin = out.clone();
            answer.record(&mut out);
            let found = out.finish(Framing::Json);
            #[cfg(debug_assertions)]
            assert_eq!(
                found,
                read_body(body, twin, limits),
                "the short path read {body} as the general readers do"
            );
            return found;
        }
    }
    read_body(body, out, limits)
}

/// [`read`] of a body that is UTF-8 text within the size bound, with no
/// byte order mark or whitespace before it, by the general readers.
pub(crate) fn read_body(body: &str, mut out: Collector<'_>, limits: &Limits) -> Detection {
    // The fast path, for a document within the depth bound; anything else
    // is read again the reference way.
    if body.starts_with(['{', '[']) {
        let read = views::with(|arena| {
            let root = fast::document(body, arena, limits.max_depth.min(limits::HARD_MAX_DEPTH))?;
            document::read_root(&root, &mut out);
            // An array in which no element holds a key of the table is no
            // array of events either.
            Some(match &root {
                Node::List(items) => items
                    .iter()
                    .any(|item| matches!(item, Node::Object(o) if o.has_keys())),
                _ => true,
            })
        });
        match read {
            Some(false) => return out.finish(Framing::Json),
            Some(true) => return whole_document(body, out, limits),
            None => {}
        }
    }
    // A sequence of documents (JSON lines, Bedrock ConverseStream events)
    // is a stream: it goes to the assembler before the payload's nesting is
    // scanned, and is bounded event by event, as an event stream is.
    let root = match body
        .starts_with(['{', '['])
        .then(|| document::parse_whole(body))
    {
        Some(Err(document::NotOne::Sequence)) => {
            return stream::read_whole_text(body.as_bytes(), body, Framing::JsonSequence, limits);
        }
        Some(Ok(root)) => Some(Ok(root)),
        Some(Err(document::NotOne::Invalid(err))) => Some(Err(err)),
        None => None,
    };
    // One document (parsed within the parser's own nesting bound), or a
    // body that is no event stream, is bounded as a whole before it is
    // read; an event stream is bounded event by event, by the assembler.
    if root.is_some() || !sse::looks_like_sse(body) {
        if let Some(message) = limits::too_deep(body.as_bytes(), limits, "the payload") {
            out.violation(ViolationCode::InputLimitExceeded, message);
            return out.finish(Framing::Json);
        }
    }
    match (root, body.as_bytes().first()) {
        (Some(Ok(root)), _) => {
            document::read_root(&root, &mut out);
            whole_document(body, out, limits)
        }
        (Some(Err(err)), _) => {
            out.violation(code_of(&err), json_error_message("the payload", &err));
            out.finish(Framing::Json)
        }
        (None, None) => {
            out.violation(ViolationCode::MalformedPayload, "the payload is empty");
            out.finish(Framing::Json)
        }
        (None, Some(_)) if sse::looks_like_sse(body) => {
            stream::read_whole_text(body.as_bytes(), body, Framing::Sse, limits)
        }
        (None, Some(_)) => {
            // A JSON scalar (`null`, `42`, `"text"`) holds no call.
            if document::read(body, &mut out).is_err() {
                out.violation(
                    ViolationCode::MalformedPayload,
                    "the payload is neither JSON nor a text/event-stream body",
                );
            }
            out.finish(Framing::Json)
        }
    }
}

/// What a body read as one whole document holds. One stream event on its
/// own (a single line of a Bedrock ConverseStream, one Anthropic event) is
/// a stream of one; an array of events, a stream of them: read that way
/// when read as a document it holds nothing.
fn whole_document(body: &str, mut out: Collector<'_>, limits: &Limits) -> Detection {
    if !(out.holds_nothing() && (out.format().is_none() || body.starts_with('['))) {
        return out.finish(Framing::Json);
    }
    if body.starts_with('{') && out.format().is_none() {
        // An object of no known shape whose values hold calls under keys
        // of its own (a LangGraph update keyed by node name): its values
        // are read, never skipped.
        if let Err(err) = document::unknown_keys(body, &mut out) {
            out.violation(code_of(&err), json_error_message("the payload", &err));
        }
        if !out.holds_nothing() {
            return out.finish(Framing::Json);
        }
    }
    let events = match serde_json::from_str::<Vec<&serde_json::value::RawValue>>(body) {
        Ok(list) => list.iter().map(|e| e.get()).collect::<Vec<_>>().join("\n"),
        Err(_) => body.to_owned(),
    };
    let one = stream::read_whole_text(events.as_bytes(), &events, Framing::JsonSequence, limits);
    let found = !one.calls.is_empty() || !one.results.is_empty();
    if found || (one.format.is_some() && out.format().is_none()) {
        return one;
    }
    out.finish(Framing::Json)
}

/// Whether a whole JSON body is a provider's error carrying no call: an
/// OpenAI Chat, Gemini or Responses `{"error": {...}}` (with nothing else
/// that holds a call or a result), an Anthropic or Responses `{"type":
/// "error", ...}`. The shapes are those of a stream's own error
/// ([`StreamEvent::UpstreamError`]). For labelling an upstream's answer;
/// what passes is the verdict's to say.
#[must_use]
pub fn is_upstream_error(body: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text).trim();
    if !stream::is_error_shape(text) {
        return false;
    }
    let found = detect(text.as_bytes());
    found.calls.is_empty()
        && found.calls_seen == 0
        && found.results.is_empty()
        && found.violations.is_empty()
}

/// `input_limit_exceeded` for nesting past the parser's bound, else
/// `malformed_payload`.
pub(crate) fn code_of(err: &serde_json::Error) -> ViolationCode {
    let text = err.to_string();
    if text.starts_with("recursion limit exceeded") || text.starts_with(limits::TOO_MANY_OBJECTS) {
        ViolationCode::InputLimitExceeded
    } else {
        ViolationCode::MalformedPayload
    }
}

/// A message for a JSON error that names the position, never the content.
pub(crate) fn json_error_message(what: &str, err: &serde_json::Error) -> String {
    let position = format!("line {} column {}", err.line(), err.column());
    let text = err.to_string();
    if text.starts_with("recursion limit exceeded") {
        let levels = if text.contains("envelope") {
            limits::MAX_ENVELOPE_DEPTH
        } else {
            limits::HARD_MAX_DEPTH
        };
        return format!("{what} nests deeper than {levels} levels ({position})");
    }
    if text.starts_with(limits::TOO_MANY_OBJECTS) {
        return format!(
            "{what} holds more than {} objects of its envelope (messages, content blocks, calls) ({position})",
            limits::MAX_ENVELOPE_OBJECTS
        );
    }
    if err.is_eof() {
        return format!("{what} is not valid JSON: it ends early ({position})");
    }
    // serde's messages for typed reads can quote the value they met; only
    // the ones that name a field (a key, not a value) are kept.
    let reason = text.split(" at line ").next().unwrap_or_default();
    if err.is_data()
        && (reason.starts_with("duplicate field")
            || reason.starts_with("missing field")
            || reason.starts_with("the key `"))
    {
        return format!("{what} is not a valid tool-call payload: {reason} ({position})");
    }
    if err.is_data() {
        return format!(
            "{what} is not a valid tool-call payload: a value has the wrong type ({position})"
        );
    }
    format!("{what} is not valid JSON ({position})")
}
