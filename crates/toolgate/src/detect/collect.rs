//! The collector every reader writes into: it numbers calls and results,
//! parses arguments strictly and enforces the call-count limit.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::detect::args::parse_arguments;
use crate::detect::limits::{Limits, HARD_MAX_DEPTH};
use crate::detect::Detection;
use crate::model::{ArgumentError, Arguments, CallKind, Format, Framing, ToolCall, ToolResult};
use crate::verdict::{Violation, ViolationCode};

/// Where a call's arguments come from.
#[derive(Debug)]
pub(crate) enum ArgSource<'a> {
    /// JSON text: an OpenAI `arguments` string, concatenated stream fragments.
    Text(Cow<'a, str>),
    /// An inline JSON value: an object, a string holding JSON text, or null.
    Inline(&'a RawValue),
    /// No arguments key at all: `{}`.
    Absent,
    /// The freeform input of a custom tool.
    Freeform(Cow<'a, str>),
    /// Arguments already known to be bad (an incomplete or contradictory
    /// stream), with the raw text received so far.
    Invalid(ArgumentError, String),
}

/// Accumulates what a reader finds, in order.
#[derive(Debug)]
pub(crate) struct Collector<'l> {
    pub(crate) limits: &'l Limits,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
    violations: Vec<Violation>,
    format: Option<Format>,
    turn: usize,
    last_role: Option<&'static str>,
    over_call_limit: bool,
    /// Tool declarations of a request (`tools`), as sent.
    tools: Vec<Value>,
    /// How deep the document readers have recursed.
    depth: usize,
}

impl<'l> Collector<'l> {
    pub(crate) fn new(limits: &'l Limits) -> Self {
        Collector {
            limits,
            calls: Vec::new(),
            results: Vec::new(),
            violations: Vec::new(),
            format: None,
            turn: 0,
            last_role: None,
            over_call_limit: false,
            tools: Vec::new(),
            depth: 0,
        }
    }

    /// Record the tool declarations of a request (a `tools` array). An
    /// entry that is not an object is kept as it is: the check refuses it.
    pub(crate) fn declare_tools(&mut self, tools: &RawValue) {
        match serde_json::from_str::<Vec<Value>>(tools.get()) {
            Ok(list) => self.tools.extend(list),
            Err(_) => self.violation(
                ViolationCode::InputLimitExceeded,
                "the request's tool declarations are nested too deeply to read",
            ),
        }
    }

    /// Record that the payload is in `format`, even if it holds no call.
    pub(crate) fn saw(&mut self, format: Format) {
        self.format.get_or_insert(format);
    }

    /// Enter one level of nested reading. Past [`HARD_MAX_DEPTH`] levels,
    /// records `input_limit_exceeded` and returns false: the caller stops.
    pub(crate) fn descend(&mut self) -> bool {
        if self.depth >= HARD_MAX_DEPTH {
            if !self
                .violations
                .iter()
                .any(|v| v.code == ViolationCode::InputLimitExceeded)
            {
                self.violation(
                    ViolationCode::InputLimitExceeded,
                    format!("the payload nests deeper than {HARD_MAX_DEPTH} levels"),
                );
            }
            return false;
        }
        self.depth += 1;
        true
    }

    /// Leave a level entered with [`Collector::descend`].
    pub(crate) fn ascend(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    pub(crate) fn has_violations(&self) -> bool {
        !self.violations.is_empty()
    }

    /// The format recognised so far.
    pub(crate) fn format(&self) -> Option<Format> {
        self.format
    }

    /// A message from `role` starts. A new turn begins when the role changes
    /// (`None`: always), once something has been recorded: consecutive tool
    /// messages, or two assistant messages in a row, are one turn.
    pub(crate) fn next_turn(&mut self, role: Option<&str>) {
        let role = role.map(|r| match r {
            "assistant" | "model" => "assistant",
            "tool" | "function" => "tool",
            "user" => "user",
            "system" | "developer" => "system",
            _ => "other",
        });
        let changed = role.is_none() || role != self.last_role;
        if changed && (!self.calls.is_empty() || !self.results.is_empty()) {
            self.turn += 1;
        }
        self.last_role = role;
    }

    /// Record one call. Past `max_calls`, records one `input_limit_exceeded`
    /// violation and drops the rest.
    pub(crate) fn call(
        &mut self,
        format: Format,
        kind: CallKind,
        id: Option<&str>,
        name: &str,
        args: ArgSource<'_>,
    ) {
        self.saw(format);
        if self.calls.len() >= self.limits.max_calls {
            if !self.over_call_limit {
                self.over_call_limit = true;
                self.violations.push(too_many_calls(self.limits));
            }
            return;
        }
        let (arguments, raw_arguments) = self.arguments(kind, args);
        self.calls.push(ToolCall {
            index: self.calls.len(),
            id: id.map(str::to_owned),
            name: name.to_owned(),
            kind,
            arguments,
            raw_arguments,
            format,
            turn: self.turn,
        });
    }

    fn arguments(&self, kind: CallKind, args: ArgSource<'_>) -> (Arguments, String) {
        match args {
            ArgSource::Absent => (Arguments::Object(serde_json::Map::new()), String::new()),
            ArgSource::Freeform(text) if kind == CallKind::Custom => (
                Arguments::Text(text.clone().into_owned()),
                text.into_owned(),
            ),
            ArgSource::Text(text) | ArgSource::Freeform(text) => {
                (parse_arguments(&text, self.limits), text.into_owned())
            }
            ArgSource::Invalid(err, raw) => (Arguments::Invalid(err), raw),
            ArgSource::Inline(raw) => {
                let text = raw.get();
                match text.as_bytes().first() {
                    Some(b'"') => match serde_json::from_str::<Cow<'_, str>>(text) {
                        Ok(inner) => (parse_arguments(&inner, self.limits), inner.into_owned()),
                        // A `RawValue` is valid JSON, so this cannot fail;
                        // fail closed all the same.
                        Err(_) => (parse_arguments(text, self.limits), text.to_owned()),
                    },
                    Some(b'n') if text == "null" => {
                        (Arguments::Object(serde_json::Map::new()), String::new())
                    }
                    _ => (parse_arguments(text, self.limits), text.to_owned()),
                }
            }
        }
    }

    /// Record one tool result.
    pub(crate) fn result(
        &mut self,
        format: Format,
        call_id: Option<&str>,
        name: Option<&str>,
        content: Option<&RawValue>,
        is_error: bool,
    ) {
        self.saw(format);
        let content = content.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
        self.result_value(format, call_id, name, content, is_error);
    }

    /// Record one tool result whose content is already a value.
    pub(crate) fn result_value(
        &mut self,
        format: Format,
        call_id: Option<&str>,
        name: Option<&str>,
        content: Option<Value>,
        is_error: bool,
    ) {
        self.saw(format);
        self.results.push(ToolResult {
            index: self.results.len(),
            call_id: call_id.map(str::to_owned),
            name: name.map(str::to_owned),
            content,
            is_error,
            format,
            turn: self.turn,
        });
    }

    /// Record a violation of the payload as a whole.
    pub(crate) fn violation(&mut self, code: ViolationCode, message: impl Into<String>) {
        self.violations.push(Violation::payload(code, message));
    }

    pub(crate) fn finish(self, framing: Framing) -> Detection {
        // The payload's format is that of its first call or result: a message
        // list is only a container.
        let format = self
            .calls
            .first()
            .map(|c| c.format)
            .or_else(|| self.results.first().map(|r| r.format))
            .or(self.format);
        Detection {
            format,
            framing,
            calls: self.calls,
            results: self.results,
            tools: self.tools,
            violations: self.violations,
        }
    }
}

/// The violation for a payload with more than `max_calls` calls (shared
/// with the stream assembler, which tracks calls before collecting them).
pub(crate) fn too_many_calls(limits: &Limits) -> Violation {
    Violation::payload(
        ViolationCode::InputLimitExceeded,
        format!(
            "the payload holds more than max_calls ({}) tool calls",
            limits.max_calls
        ),
    )
}
