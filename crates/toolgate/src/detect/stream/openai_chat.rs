//! OpenAI Chat Completions chunks: `choices[].delta.tool_calls[]`.
//!
//! A call is keyed by its choice (`choices[].index`, for `n > 1`) and its
//! `index`. The id, type and name usually come only with the first
//! fragment; the arguments are split anywhere, even inside an escape or a
//! number. Providers differ: GLM repeats the id and type on every fragment,
//! Kimi sends the same call twice (arguments `""` then `"{}"`), others send
//! `arguments: null` or no arguments key at all. The same name or id again
//! is harmless (never concatenated); a different one fails closed. A call is
//! complete at its choice's `finish_reason`, at `[DONE]`, or when the
//! stream ends.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::stream::calls::Calls;
use crate::detect::stream::probe::{fragment, opt_string, Probe};
use crate::model::{CallKind, Format};

#[derive(Deserialize)]
struct Choice<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    finish_reason: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    tool_calls: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    function_call: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    function: Option<Function<'a>>,
    #[serde(borrow)]
    custom: Option<Custom<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Custom<'a> {
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
}

/// Which call of a choice a fragment belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// `tool_calls[].index`.
    Index(u64),
    /// A fragment without an index, keyed by its id.
    Id(String),
    /// The legacy `delta.function_call`.
    Legacy,
    /// A call that came with neither index nor id, by its ordinal.
    Anonymous(usize),
}

/// Reads OpenAI Chat chunks.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    calls: HashMap<(u64, Key), usize>,
    /// The last call of each choice, for fragments with neither index nor id.
    last: HashMap<u64, usize>,
}

type Result<T = ()> = std::result::Result<T, serde_json::Error>;

impl Decoder {
    /// Read one chunk. `false` when it is not a chunk but a whole completion
    /// (`choices[].message`), for the document readers.
    pub(crate) fn event(&mut self, probe: &Probe<'_>, cx: &mut Calls) -> Result<bool> {
        let Some(choices) = probe.choices.filter(|c| c.get() != "null") else {
            cx.saw(Format::OpenAiChat);
            return Ok(true);
        };
        let choices: Vec<Choice<'_>> = serde_json::from_str(choices.get())?;
        if choices.iter().all(|c| c.delta.is_none()) && choices.iter().any(|c| c.message.is_some())
        {
            return Ok(false);
        }
        cx.saw(Format::OpenAiChat);
        for (position, choice) in choices.iter().enumerate() {
            let number = choice.index.unwrap_or(position as u64);
            if let Some(delta) = choice.delta.filter(|d| d.get() != "null") {
                let delta: Delta<'_> = serde_json::from_str(delta.get())?;
                for raw in delta.tool_calls.iter().flatten() {
                    let fragment: ToolCallDelta<'_> = serde_json::from_str(raw.get())?;
                    self.tool_call(number, &fragment, cx)?;
                }
                if let Some(function) = delta.function_call.filter(|f| f.get() != "null") {
                    let function: Function<'_> = serde_json::from_str(function.get())?;
                    self.legacy(number, &function, cx)?;
                }
            }
            if choice.finish_reason.is_some_and(|r| r.get() != "null") {
                cx.end();
                self.complete_choice(number, cx);
            }
        }
        Ok(true)
    }

    /// `data: [DONE]`: every call is complete.
    pub(crate) fn done(&mut self, cx: &mut Calls) {
        cx.complete_all(self.calls.values().copied());
    }

    /// The stream ended: every call is complete.
    pub(crate) fn close(&mut self, cx: &mut Calls) {
        self.done(cx);
    }

    fn tool_call(&mut self, choice: u64, f: &ToolCallDelta<'_>, cx: &mut Calls) -> Result {
        let id = opt_string(f.id)?;
        let kind = opt_string(f.kind)?;
        let (name, arguments, call_kind) = match (&f.function, &f.custom) {
            (_, Some(custom)) => (custom.name, custom.input, CallKind::Custom),
            (Some(function), None) => (function.name, function.arguments, CallKind::Function),
            (None, None) if kind.as_deref() == Some("custom") => (None, None, CallKind::Custom),
            (None, None) => (None, None, CallKind::Function),
        };
        let name = opt_string(name)?;
        let key = match (f.index, id.as_deref()) {
            (Some(index), _) => Some(Key::Index(index)),
            (None, Some(id)) if !id.is_empty() => Some(Key::Id(id.to_owned())),
            (None, _) => None,
        };
        let known = match &key {
            Some(key) => self.calls.get(&(choice, key.clone())).copied(),
            None => self.last.get(&choice).copied(),
        };
        let call = if let Some(call) = known {
            if let Some(id) = &id {
                cx.set_id(call, id);
            }
            if let Some(name) = &name {
                cx.set_name(call, name);
            }
            cx.set_kind(call, call_kind);
            call
        } else {
            let Some(call) = cx.open(
                Format::OpenAiChat,
                call_kind,
                id.as_deref(),
                name.as_deref(),
            ) else {
                return Ok(());
            };
            let key = key.unwrap_or(Key::Anonymous(call));
            self.calls.insert((choice, key), call);
            call
        };
        self.last.insert(choice, call);
        append(call, arguments, cx)
    }

    fn legacy(&mut self, choice: u64, f: &Function<'_>, cx: &mut Calls) -> Result {
        let name = opt_string(f.name)?;
        let call = if let Some(&call) = self.calls.get(&(choice, Key::Legacy)) {
            if let Some(name) = &name {
                cx.set_name(call, name);
            }
            call
        } else {
            let Some(call) = cx.open(
                Format::OpenAiChat,
                CallKind::Function,
                None,
                name.as_deref(),
            ) else {
                return Ok(());
            };
            self.calls.insert((choice, Key::Legacy), call);
            call
        };
        append(call, f.arguments, cx)
    }

    fn complete_choice(&mut self, choice: u64, cx: &mut Calls) {
        let mut calls: Vec<usize> = self
            .calls
            .iter()
            .filter(|((c, _), _)| *c == choice)
            .map(|(_, &call)| call)
            .collect();
        calls.sort_unstable();
        for call in calls {
            cx.complete(call);
        }
    }
}

/// Append an `arguments` fragment (see [`fragment`]).
fn append(call: usize, arguments: Option<&RawValue>, cx: &mut Calls) -> Result {
    let text = fragment(arguments)?;
    cx.append(call, &text);
    Ok(())
}
