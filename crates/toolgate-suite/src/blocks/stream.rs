//! `StreamParser`: an agent's answer (a `text/event-stream` body or a
//! whole JSON body) read into its `text` and its `toolCalls`.
//!
//! The calls are read by the library's own stream reader
//! ([`toolgate::Assembler`]) and its whole-body reader
//! ([`toolgate::detect_with`]), so fragments are assembled exactly as
//! `toolgate check` and the gateway assemble them; the text is read from
//! the same events. A stream that cannot be read, the agent's own error
//! event, or a call whose arguments cannot be read fails the block (fail
//! closed): a `ValidateTools` with `from` on the raw body gives the
//! verdict with its violation codes instead.

use serde_json::{json, Map, Value};
use toolgate::detect::sse;
use toolgate::{Arguments, Assembler, CallKind, Detection, Format, Framing, StreamEvent};

use crate::blocks::{config_map, known_keys, text};
use crate::template::Scope;

/// The fields a `StreamParser` gives.
pub(crate) const OUTPUTS: [&str; 3] = ["text", "toolCalls", "format"];

/// Which stream a `StreamParser` expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamFormat {
    /// Any stream or whole body toolgate reads.
    Auto,
    /// `sse-openai`: OpenAI Chat Completions chunks.
    OpenAi,
    /// `sse-anthropic`: Anthropic Messages events.
    Anthropic,
    /// `sse-responses`: OpenAI Responses events.
    Responses,
}

impl StreamFormat {
    const NAMES: [&'static str; 4] = ["auto", "sse-openai", "sse-anthropic", "sse-responses"];

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "auto" => StreamFormat::Auto,
            "sse-openai" => StreamFormat::OpenAi,
            "sse-anthropic" => StreamFormat::Anthropic,
            "sse-responses" => StreamFormat::Responses,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            StreamFormat::Auto => "auto",
            StreamFormat::OpenAi => "sse-openai",
            StreamFormat::Anthropic => "sse-anthropic",
            StreamFormat::Responses => "sse-responses",
        }
    }

    fn wire(self) -> Option<Format> {
        match self {
            StreamFormat::Auto => None,
            StreamFormat::OpenAi => Some(Format::OpenAiChat),
            StreamFormat::Anthropic => Some(Format::Anthropic),
            StreamFormat::Responses => Some(Format::OpenAiResponses),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct StreamParser {
    /// What to read (`${response.body}`).
    input: Value,
    format: StreamFormat,
}

impl StreamParser {
    pub(crate) fn compile(input: Option<&Value>, config: Option<&Value>) -> Result<Self, String> {
        let Some(input) = input else {
            return Err(
                "a StreamParser needs `input`, the body to read (`\"${response.body}\"`)".into(),
            );
        };
        let config = config_map(config)?;
        known_keys("config", &config, &["format"])?;
        let format = match config.get("format") {
            None => StreamFormat::Auto,
            Some(Value::String(name)) => StreamFormat::parse(name).ok_or_else(|| {
                format!(
                    "unknown format `{name}`; the formats are {}",
                    StreamFormat::NAMES.join(", ")
                )
            })?,
            Some(other) => return Err(format!("`config.format` must be a string, not {other}")),
        };
        Ok(StreamParser {
            input: input.clone(),
            format,
        })
    }

    pub(crate) fn input(&self) -> &Value {
        &self.input
    }

    pub(crate) fn run(
        &self,
        scope: &Scope<'_>,
        limits: &toolgate::Limits,
    ) -> Result<Value, String> {
        let body = match scope.resolve(&self.input)? {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let is_sse = sse::looks_like_sse(&body);
        let (found, text, seen) = if is_sse {
            read_stream(&body, limits)?
        } else if self.format == StreamFormat::Auto {
            if toolgate::detect::is_upstream_error(body.as_bytes()) {
                return Err(format!(
                    "the agent answered with an error: {}",
                    start(&body, 300)
                ));
            }
            let read = read_whole(&body, limits);
            if read.0.format.is_none() && read.0.calls.is_empty() && read.0.violations.is_empty() {
                return Err(format!(
                    "the answer is in no format toolgate reads (it starts `{}`)",
                    start(&body, 60)
                ));
            }
            read
        } else {
            return Err(format!(
                "format `{}` reads a text/event-stream body, and this body is not one (it starts `{}`); `format: auto` reads whole JSON answers too",
                self.format.name(),
                start(&body, 60)
            ));
        };
        if let Some(violation) = found.violations.first() {
            return Err(format!(
                "the answer cannot be read ({}): {}",
                violation.code.as_str(),
                violation.message
            ));
        }
        let format = found.format.or(seen);
        if let Some(wanted) = self.format.wire() {
            if format != Some(wanted) {
                return Err(format!(
                    "format `{}` expects an {wanted} stream, and this one is {}",
                    self.format.name(),
                    format.map_or("in no known format".to_owned(), |f| f.to_string())
                ));
            }
        }
        let mut calls = Vec::with_capacity(found.calls.len());
        for call in &found.calls {
            calls.push(seed_call(call)?);
        }
        let mut out = Map::new();
        out.insert("text".into(), Value::String(text));
        out.insert("toolCalls".into(), Value::Array(calls));
        out.insert(
            "format".into(),
            format.map_or(Value::Null, |f| Value::String(f.as_str().to_owned())),
        );
        Ok(Value::Object(out))
    }
}

/// The first `chars` characters of a body, for messages.
fn start(body: &str, chars: usize) -> String {
    let text = body.trim();
    let cut: String = text.chars().take(chars).collect();
    if cut.len() < text.len() {
        format!("{cut}...")
    } else {
        cut
    }
}

/// An event stream: calls assembled by the library, text from each event.
fn read_stream(
    body: &str,
    limits: &toolgate::Limits,
) -> Result<(Detection, String, Option<Format>), String> {
    let mut assembler = Assembler::new(Framing::Sse, *limits);
    let mut events = assembler.push(body.as_bytes());
    events.extend(assembler.close());
    let mut text = String::new();
    let mut seen = None;
    for event in &events {
        if let StreamEvent::Frame { raw, .. } = event {
            if let Some(data) = sse::event_data(raw) {
                text::from_event(&data, &mut text, &mut seen);
            }
        }
    }
    if assembler.errored() {
        return Err("the agent's stream ended with its own error event".into());
    }
    Ok((assembler.finish(), text, seen))
}

/// A whole body (one JSON document, or JSON lines).
fn read_whole(body: &str, limits: &toolgate::Limits) -> (Detection, String, Option<Format>) {
    let found = toolgate::detect_with(body.as_bytes(), limits);
    let mut text = String::new();
    let mut seen = None;
    match serde_json::from_str::<Value>(body) {
        Ok(document) => text::from_document(&document, &mut text),
        Err(_) => {
            for line in body.lines().filter(|line| !line.trim().is_empty()) {
                text::from_event(line.as_bytes(), &mut text, &mut seen);
            }
        }
    }
    (found, text, seen)
}

/// One call in seed 001's shape (`{id, name, args}`); a custom tool's text
/// input in the Responses shape, which keeps it text.
fn seed_call(call: &toolgate::ToolCall) -> Result<Value, String> {
    let mut out = match (&call.arguments, call.kind) {
        (Arguments::Object(args), CallKind::Function | CallKind::Hosted) => {
            json!({"name": call.name, "args": args})
        }
        (Arguments::Text(input), _) => {
            json!({"type": "custom_tool_call", "name": call.name, "input": input})
        }
        (Arguments::Object(args), CallKind::Custom) => {
            json!({"type": "custom_tool_call", "name": call.name, "input": Value::Object((**args).clone()).to_string()})
        }
        (Arguments::Invalid(err), _) => {
            return Err(format!(
                "call {} '{}': {} ({}): {}",
                call.index,
                call.name,
                err.code.as_str(),
                serde_json::to_value(err.reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                err.message
            ))
        }
    };
    if let (Some(id), Value::Object(map)) = (&call.id, &mut out) {
        let key = if map.contains_key("type") {
            "call_id"
        } else {
            "id"
        };
        map.insert(key.into(), Value::String(id.clone()));
    }
    Ok(out)
}
