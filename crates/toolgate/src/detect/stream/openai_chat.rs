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
//!
//! A chunk is read into a [`Chunk`], what it says in order, then applied
//! to the calls: read by serde here, or by the short path
//! ([`fast::chunk`](crate::detect::fast::chunk)) for the chunks real
//! streams send, applied the same way.

use std::borrow::Cow;
use std::collections::HashMap;

use smallvec::SmallVec;

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

/// What one chunk says, in the order it says it: for each choice, the
/// call fragments of its delta, its legacy `function_call`, and whether
/// it finished.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Chunk<'a> {
    pub(crate) choices: SmallVec<[ChoiceDelta<'a>; 1]>,
}

/// One choice of a chunk.
#[derive(Debug, PartialEq)]
pub(crate) struct ChoiceDelta<'a> {
    /// Its `index`, else its position in the list.
    pub(crate) number: u64,
    /// `delta.tool_calls`, in order.
    pub(crate) fragments: SmallVec<[Fragment<'a>; 1]>,
    /// `delta.function_call`.
    pub(crate) legacy: Option<Fragment<'a>>,
    /// A `finish_reason` other than `null`.
    pub(crate) finished: bool,
}

/// One fragment of a call.
#[derive(Debug, PartialEq)]
pub(crate) struct Fragment<'a> {
    /// `tool_calls[].index` (none for the legacy `function_call`).
    pub(crate) index: Option<u64>,
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) name: Option<Cow<'a, str>>,
    pub(crate) kind: CallKind,
    /// The arguments fragment (empty when there is none); `None` when it
    /// could not be read, which ends the chunk's reading there, after the
    /// call is opened or found.
    pub(crate) arguments: Option<Cow<'a, str>>,
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

/// The choices of a chunk read by serde; `None` when the event has no
/// `choices` (or `null`), or when it is a whole completion
/// (`choices[].message`, no delta), not a chunk.
fn choices<'a>(probe: &Probe<'a>) -> Result<Option<Vec<Choice<'a>>>> {
    if !has_choices(probe) {
        return Ok(None);
    }
    let choices = probe.choices.map_or("null", RawValue::get);
    let choices: Vec<Choice<'a>> = serde_json::from_str(choices)?;
    let whole =
        choices.iter().all(|c| c.delta.is_none()) && choices.iter().any(|c| c.message.is_some());
    Ok((!whole).then_some(choices))
}

/// What a chunk's choices say, read into `chunk` in order; after an
/// error, `chunk` holds what was read before it.
fn read_choices<'a>(choices: &[Choice<'a>], chunk: &mut Chunk<'a>) -> Result {
    for (position, choice) in choices.iter().enumerate() {
        chunk.choices.push(ChoiceDelta {
            number: choice.index.unwrap_or(position as u64),
            fragments: SmallVec::new(),
            legacy: None,
            finished: false,
        });
        let read = chunk.choices.last_mut().expect("a choice was just added");
        if let Some(delta) = choice.delta.filter(|d| d.get() != "null") {
            let delta: Delta<'a> = serde_json::from_str(delta.get())?;
            for raw in delta.tool_calls.iter().flatten() {
                let fragment: ToolCallDelta<'a> = serde_json::from_str(raw.get())?;
                read_tool_call(&fragment, &mut read.fragments)?;
            }
            if let Some(function) = delta.function_call.filter(|f| f.get() != "null") {
                let function: Function<'a> = serde_json::from_str(function.get())?;
                let name = opt_string(function.name)?;
                let arguments = fragment(function.arguments);
                read.legacy = Some(Fragment {
                    index: None,
                    id: None,
                    name,
                    kind: CallKind::Function,
                    arguments: arguments.as_ref().ok().cloned(),
                });
                arguments?;
            }
        }
        read.finished = choice.finish_reason.is_some_and(|r| r.get() != "null");
    }
    Ok(())
}

/// One `tool_calls` element, added to `out`.
fn read_tool_call<'a>(f: &ToolCallDelta<'a>, out: &mut SmallVec<[Fragment<'a>; 1]>) -> Result {
    let id = opt_string(f.id)?;
    let kind = opt_string(f.kind)?;
    let (name, arguments, call_kind) = match (&f.function, &f.custom) {
        (_, Some(custom)) => (custom.name, custom.input, CallKind::Custom),
        (Some(function), None) => (function.name, function.arguments, CallKind::Function),
        (None, None) if kind.as_deref() == Some("custom") => (None, None, CallKind::Custom),
        (None, None) => (None, None, CallKind::Function),
    };
    let name = opt_string(name)?;
    let arguments = fragment(arguments);
    out.push(Fragment {
        index: f.index,
        id,
        name,
        kind: call_kind,
        arguments: arguments.as_ref().ok().cloned(),
    });
    arguments.map(drop)
}

/// What a chunk says, read by serde: `Ok(None)` when it is no chunk (see
/// [`choices`]). For debug builds' comparison with the short path.
#[cfg(debug_assertions)]
pub(crate) fn read<'a>(probe: &Probe<'a>) -> Result<Option<Chunk<'a>>> {
    let mut chunk = Chunk::default();
    match choices(probe)? {
        Some(choices) => read_choices(&choices, &mut chunk)?,
        None if has_choices(probe) => return Ok(None),
        None => {}
    }
    Ok(Some(chunk))
}

/// Whether the event has `choices` other than `null`.
fn has_choices(probe: &Probe<'_>) -> bool {
    probe.choices.is_some_and(|c| c.get() != "null")
}

impl Decoder {
    /// Read one chunk. `false` when it is not a chunk but a whole completion
    /// (`choices[].message`), for the document readers.
    pub(crate) fn event(&mut self, probe: &Probe<'_>, cx: &mut Calls) -> Result<bool> {
        let choices = match choices(probe)? {
            Some(choices) => choices,
            None if has_choices(probe) => return Ok(false),
            None => {
                cx.saw(Format::OpenAiChat);
                return Ok(true);
            }
        };
        cx.saw(Format::OpenAiChat);
        let mut chunk = Chunk::default();
        let read = read_choices(&choices, &mut chunk);
        self.apply(&chunk, cx);
        read.map(|()| true)
    }

    /// Apply what a chunk says, in order: a chunk read in full, or what
    /// was read of it before an error.
    pub(crate) fn apply(&mut self, chunk: &Chunk<'_>, cx: &mut Calls) {
        for choice in &chunk.choices {
            for fragment in &choice.fragments {
                self.tool_call(choice.number, fragment, cx);
            }
            if let Some(legacy) = &choice.legacy {
                self.legacy(choice.number, legacy, cx);
            }
            if choice.finished {
                cx.end();
                self.complete_choice(choice.number, cx);
            }
        }
    }

    /// `data: [DONE]`: every call is complete.
    pub(crate) fn done(&mut self, cx: &mut Calls) {
        cx.complete_all(self.calls.values().copied());
    }

    /// The stream ended: every call is complete.
    pub(crate) fn close(&mut self, cx: &mut Calls) {
        self.done(cx);
    }

    fn tool_call(&mut self, choice: u64, f: &Fragment<'_>, cx: &mut Calls) {
        let id = f.id.as_deref();
        let name = f.name.as_deref();
        let key = match (f.index, id) {
            (Some(index), _) => Some(Key::Index(index)),
            (None, Some(id)) if !id.is_empty() => Some(Key::Id(id.to_owned())),
            (None, _) => None,
        };
        let known = match &key {
            Some(key) => self.calls.get(&(choice, key.clone())).copied(),
            None => self.last.get(&choice).copied(),
        };
        let call = if let Some(call) = known {
            if let Some(id) = id {
                cx.set_id(call, id);
            }
            if let Some(name) = name {
                cx.set_name(call, name);
            }
            cx.set_kind(call, f.kind);
            call
        } else {
            let Some(call) = cx.open(Format::OpenAiChat, f.kind, id, name) else {
                return;
            };
            let key = key.unwrap_or(Key::Anonymous(call));
            self.calls.insert((choice, key), call);
            call
        };
        self.last.insert(choice, call);
        if let Some(arguments) = &f.arguments {
            cx.append(call, arguments);
        }
    }

    fn legacy(&mut self, choice: u64, f: &Fragment<'_>, cx: &mut Calls) {
        let name = f.name.as_deref();
        let call = if let Some(&call) = self.calls.get(&(choice, Key::Legacy)) {
            if let Some(name) = name {
                cx.set_name(call, name);
            }
            call
        } else {
            let Some(call) = cx.open(Format::OpenAiChat, CallKind::Function, None, name) else {
                return;
            };
            self.calls.insert((choice, Key::Legacy), call);
            call
        };
        if let Some(arguments) = &f.arguments {
            cx.append(call, arguments);
        }
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
