//! Vercel AI SDK UI message streams (`data: {"type": "tool-input-start",
//! ...}`), and the SDK's `fullStream` parts, keyed by `toolCallId`.
//!
//! `tool-input-start` names a call, `tool-input-delta` streams its input
//! text, and `tool-input-available` gives the input object the SDK will
//! use: it is authoritative, and must hold the same value as the deltas
//! when there were any. `tool-output-available` and `tool-output-error` are
//! results. A call is complete when its input is available, when its output
//! or an approval request arrives, at the end of a step, at `[DONE]`, or
//! when the stream ends. Each `start-step` begins a turn.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::detect::stream::calls::Calls;
use crate::detect::stream::probe::{opt_string, string, value, Probe};
use crate::model::{CallKind, Format};

/// A part of the kinds real streams send most, as its short path reads it
/// ([`fast::vercel`](crate::detect::fast::vercel)): what
/// [`Decoder::event`] does with it.
#[derive(Debug, PartialEq)]
pub(crate) enum Light<'a> {
    /// A part that says nothing about calls: `start`, a text or reasoning
    /// part.
    Quiet,
    /// `start-step`.
    StartStep,
    /// `finish-step`.
    FinishStep,
    /// `finish`.
    Finish,
    /// `tool-input-start`: the call's id (empty for none), name, and
    /// whether the provider runs it.
    Start {
        id: Cow<'a, str>,
        name: Option<Cow<'a, str>>,
        hosted: bool,
    },
    /// `tool-input-delta`: a fragment of the call's input text (empty for
    /// none).
    Delta { id: Cow<'a, str>, delta: Text<'a> },
    /// `tool-input-available`: the call, and its input as written.
    Available {
        id: Cow<'a, str>,
        name: Option<Cow<'a, str>>,
        hosted: bool,
        input: Option<&'a str>,
    },
}

/// The part types that say nothing about calls and that the short path
/// takes: the start, text and reasoning parts.
pub(crate) const QUIET: [&str; 7] = [
    "start",
    "text-start",
    "text-delta",
    "text-end",
    "reasoning-start",
    "reasoning-delta",
    "reasoning-end",
];

/// A delta's text: decoded, or as its string literal is written (quotes
/// and escapes), to be decoded where it is kept, with no copy of its own.
#[derive(Debug)]
pub(crate) enum Text<'a> {
    Decoded(Cow<'a, str>),
    Literal(&'a str),
}

impl Text<'_> {
    /// Apply the text to `f`, decoded.
    fn with<T>(&self, f: impl FnOnce(&str) -> T) -> Option<T> {
        match self {
            Text::Decoded(text) => Some(f(text)),
            Text::Literal(literal) => crate::detect::node::with_unquoted(literal, f),
        }
    }
}

/// Two texts are the same when they decode to the same text.
impl PartialEq for Text<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.with(str::to_owned) == other.with(str::to_owned)
    }
}

/// Debug builds: what the general reading reads of a part of type `kind`
/// the short path took, as a [`Light`]; `None` for a kind it does not
/// take.
#[cfg(debug_assertions)]
pub(crate) fn light<'a>(p: &Probe<'a>, kind: &str) -> Result<Option<Light<'a>>> {
    let id = opt_string(p.toolCallId)?.unwrap_or_default();
    let hosted = is_hosted(p);
    Ok(Some(match kind {
        kind if QUIET.contains(&kind) => Light::Quiet,
        "start-step" => Light::StartStep,
        "finish-step" => Light::FinishStep,
        "finish" => Light::Finish,
        "tool-input-start" => Light::Start {
            id,
            name: opt_string(p.toolName)?,
            hosted,
        },
        "tool-input-delta" => Light::Delta {
            id,
            delta: Text::Decoded(
                opt_string(p.inputTextDelta.or(p.argsTextDelta))?.unwrap_or_default(),
            ),
        },
        "tool-input-available" => Light::Available {
            id,
            name: opt_string(p.toolName)?,
            hosted,
            input: p.input.or(p.args).map(RawValue::get),
        },
        _ => return Ok(None),
    }))
}

/// Reads Vercel AI SDK stream parts.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    calls: HashMap<String, usize>,
    /// The call looked up last, by its id: a call's deltas come one after
    /// the other, and the id is then compared rather than hashed. (A call
    /// once in `calls` stays, under the same ordinal.)
    last: Option<(String, usize)>,
}

type Result<T = ()> = std::result::Result<T, serde_json::Error>;

impl Decoder {
    pub(crate) fn event(&mut self, p: &Probe<'_>, kind: &str, cx: &mut Calls) -> Result {
        cx.saw(Format::VercelAi);
        let id = opt_string(p.toolCallId)?;
        let id = id.as_deref().unwrap_or_default();
        match kind {
            "start-step" => cx.next_turn(),
            "finish" | "abort" => {
                cx.end();
                self.done(cx);
            }
            "finish-step" => self.done(cx),
            "tool-input-start" | "tool-call-streaming-start" => {
                self.call(id, p, cx)?;
            }
            "tool-input-delta" | "tool-call-delta" => {
                let delta = opt_string(p.inputTextDelta.or(p.argsTextDelta))?;
                self.append(id, delta.as_deref().unwrap_or_default(), cx);
            }
            "tool-input-available" | "tool-input-error" | "tool-call" => {
                let call = self.call(id, p, cx)?;
                Self::available(call, p.input.or(p.args).map(RawValue::get), cx);
            }
            "tool-approval-request" => {
                if let Some(call) = self.find(id) {
                    cx.complete(call);
                }
            }
            "tool-output-available" | "tool-result" => {
                self.finished(id, cx);
                let name = opt_string(p.toolName)?;
                cx.result(
                    Format::VercelAi,
                    Some(id),
                    name.as_deref(),
                    value(p.output.or(p.result)),
                    false,
                );
            }
            "tool-output-error" | "tool-error" => {
                self.finished(id, cx);
                let name = opt_string(p.toolName)?;
                let text = p.errorText.map(error_text).transpose()?;
                cx.result(Format::VercelAi, Some(id), name.as_deref(), text, true);
            }
            _ => {}
        }
        Ok(())
    }

    /// A part its short path read: what [`event`](Self::event) does with
    /// it.
    pub(crate) fn light(&mut self, part: Light<'_>, cx: &mut Calls) {
        cx.saw(Format::VercelAi);
        match part {
            Light::Quiet => {}
            Light::StartStep => cx.next_turn(),
            Light::FinishStep => self.done(cx),
            Light::Finish => {
                cx.end();
                self.done(cx);
            }
            Light::Start { id, name, hosted } => {
                self.open(&id, name.as_deref(), hosted, cx);
            }
            Light::Delta { id, delta } => {
                // A literal decodes: the short path checked its escapes.
                let decoded = delta.with(|text| self.append(&id, text, cx));
                debug_assert!(decoded.is_some(), "{delta:?}");
            }
            Light::Available {
                id,
                name,
                hosted,
                input,
            } => {
                let call = self.open(&id, name.as_deref(), hosted, cx);
                Self::available(call, input, cx);
            }
        }
    }

    /// The call `id`, if it has started.
    fn find(&mut self, id: &str) -> Option<usize> {
        if let Some((last, call)) = &self.last {
            if last == id {
                return Some(*call);
            }
        }
        let call = *self.calls.get(id)?;
        let last = self.last.get_or_insert_with(|| (String::new(), call));
        last.0.clear();
        last.0.push_str(id);
        last.1 = call;
        Some(call)
    }

    /// A fragment of the input text of the call `id`.
    fn append(&mut self, id: &str, delta: &str, cx: &mut Calls) {
        match self.find(id) {
            Some(call) => cx.append(call, delta),
            None => cx.orphan(),
        }
    }

    /// The call's input is available (its JSON text, if given): final.
    fn available(call: Option<usize>, input: Option<&str>, cx: &mut Calls) {
        if let Some(call) = call {
            match input {
                Some(input) => cx.final_value(call, input),
                None => cx.touch(call),
            }
            cx.complete(call);
        }
    }

    /// `[DONE]`, or the end of a step: every call is complete.
    pub(crate) fn done(&mut self, cx: &mut Calls) {
        cx.complete_all(self.calls.values().copied());
    }

    /// The stream ended: every call is complete.
    pub(crate) fn close(&mut self, cx: &mut Calls) {
        self.done(cx);
    }

    /// The call `id`, started now if it is new; its name must not change.
    fn call(&mut self, id: &str, p: &Probe<'_>, cx: &mut Calls) -> Result<Option<usize>> {
        let name = opt_string(p.toolName)?;
        Ok(self.open(id, name.as_deref(), is_hosted(p), cx))
    }

    /// The call `id`, named `name`, started now if it is new.
    fn open(
        &mut self,
        id: &str,
        name: Option<&str>,
        hosted: bool,
        cx: &mut Calls,
    ) -> Option<usize> {
        if let Some(call) = self.find(id) {
            if let Some(name) = name {
                cx.set_name(call, name);
            }
            cx.touch(call);
            return Some(call);
        }
        let kind = if hosted {
            CallKind::Hosted
        } else {
            CallKind::Function
        };
        let call = cx.open(Format::VercelAi, kind, Some(id), name)?;
        self.calls.insert(id.to_owned(), call);
        Some(call)
    }

    /// The call `id` has an outcome: its input is final.
    fn finished(&mut self, id: &str, cx: &mut Calls) {
        if let Some(call) = self.find(id) {
            cx.complete(call);
        }
    }
}

/// Whether the provider runs the call (`providerExecuted: true`).
fn is_hosted(p: &Probe<'_>) -> bool {
    p.providerExecuted.is_some_and(|v| v.get() == "true")
}

/// `errorText` as the result's content.
fn error_text(raw: &RawValue) -> Result<Value> {
    Ok(string(raw)?.map_or(Value::Null, |text| Value::String(text.into_owned())))
}
