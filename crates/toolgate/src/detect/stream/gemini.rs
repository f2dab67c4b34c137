//! Google Gemini streams: `candidates[].content.parts[]` chunks.
//!
//! A `functionCall` part usually holds a whole call (`name`, `args`, maybe
//! `id`; no `args` means `{}`). Vertex can also stream the arguments: a part
//! `{name, willContinue: true}` starts the call, parts with `partialArgs`
//! (JSON path and value, see [`json_path`](super::json_path)) carry its
//! arguments, and the first part without `willContinue: true` (often an
//! empty `functionCall: {}`) ends it. A stream may end without that last
//! part: the call is then complete at the candidate's `finishReason` or at
//! the end of the stream. `functionResponse` parts are results.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use smallvec::SmallVec;

use crate::detect::args::parse_object;
use crate::detect::node::Raw;
use crate::detect::stream::calls::Calls;
use crate::detect::stream::json_path::{Fragment, Tree};
use crate::detect::stream::probe::{is_object, value, Probe};
use crate::detect::tape::Tape;
use crate::model::{CallKind, Format};

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct Candidate<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    finishReason: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow)]
    parts: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct Part<'a> {
    #[serde(borrow)]
    functionCall: Option<&'a RawValue>,
    #[serde(borrow)]
    function_call: Option<&'a RawValue>,
    #[serde(borrow)]
    functionResponse: Option<&'a RawValue>,
    #[serde(borrow)]
    function_response: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct FunctionCall<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
    #[serde(borrow)]
    partialArgs: Option<Vec<Fragment<'a>>>,
    willContinue: Option<bool>,
    #[serde(borrow)]
    response: Option<&'a RawValue>,
}

/// An event of the shape real Gemini streams send most, as its short
/// path reads it ([`fast::gemini`](crate::detect::fast::gemini)): each
/// candidate's number, its whole calls and whether it finishes; no
/// streamed call, no result. The calls of all candidates are kept in one
/// list, each candidate saying how many of them are its own, so that
/// reading an event moves no candidate with its calls inside.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Light<'a> {
    pub(crate) candidates: SmallVec<[LightCandidate; 1]>,
    /// The whole calls of the candidates, in order: the first
    /// candidate's, then the next's.
    pub(crate) calls: SmallVec<[WholeCall<'a>; 4]>,
}

/// A candidate of a [`Light`] event.
#[derive(Debug, PartialEq)]
pub(crate) struct LightCandidate {
    pub(crate) index: Option<u64>,
    /// How many of the event's [`calls`](Light::calls), after those of
    /// the candidates before it, are its own.
    pub(crate) calls: usize,
    /// It has a `finishReason` (not `null`).
    pub(crate) finish: bool,
}

/// A `functionCall` part holding a whole call, named.
#[derive(Debug)]
pub(crate) struct WholeCall<'a> {
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) name: Cow<'a, str>,
    /// Its `args`, as written (`None`: no `args`).
    pub(crate) args: Option<Raw<'a>>,
    /// `args` read onto its tape in passing by the short path, when the
    /// tape's reader took it: the tape the collector reads of `args`.
    pub(crate) tape: Option<Tape>,
}

/// Two readings of a call are the same when they say the same id, name
/// and arguments text (the tape is what the collector reads of the text).
impl PartialEq for WholeCall<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.name == other.name && self.args == other.args
    }
}

/// Debug builds: what the general reading reads of an event the short path
/// took, as a [`Light`]; `None` when it holds anything else (a streamed
/// call, a result, a call without a name).
#[cfg(debug_assertions)]
pub(crate) fn light<'a>(probe: &Probe<'a>) -> Result<Option<Light<'a>>> {
    let Some(candidates) = probe.candidates.filter(|c| c.get() != "null") else {
        return Ok(None);
    };
    let read: Vec<Candidate<'a>> = serde_json::from_str(candidates.get())?;
    let mut light = Light::default();
    for candidate in read {
        let before = light.calls.len();
        if let Some(content) = candidate.content.filter(|c| is_object(c)) {
            let content: Content<'a> = serde_json::from_str(content.get())?;
            for part in content.parts.iter().flatten().filter(|p| is_object(p)) {
                let part: Part<'a> = serde_json::from_str(part.get())?;
                if part.function_call.is_some_and(is_object)
                    || part.functionResponse.is_some_and(is_object)
                    || part.function_response.is_some_and(is_object)
                {
                    return Ok(None);
                }
                let Some(call) = part.functionCall.filter(|c| is_object(c)) else {
                    continue;
                };
                let f: FunctionCall<'a> = serde_json::from_str(call.get())?;
                let name = f.name.filter(|n| !n.is_empty());
                if f.willContinue == Some(true) || f.partialArgs.is_some() {
                    return Ok(None);
                }
                let Some(name) = name else {
                    return Ok(None);
                };
                light.calls.push(WholeCall {
                    id: f.id,
                    name,
                    args: f.args.map(Raw::from),
                    tape: None,
                });
            }
        }
        light.candidates.push(LightCandidate {
            index: candidate.index,
            calls: light.calls.len() - before,
            finish: candidate.finishReason.is_some_and(|r| r.get() != "null"),
        });
    }
    Ok(Some(light))
}

/// A call whose arguments are being streamed.
#[derive(Debug)]
struct Streaming {
    /// `None` when the call is past `max_calls`.
    call: Option<usize>,
    tree: Tree,
    /// A fragment failed: the rest are ignored.
    failed: bool,
}

/// Reads Gemini chunks.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The streamed call of each candidate.
    streaming: HashMap<u64, Streaming>,
}

type Result<T = ()> = std::result::Result<T, serde_json::Error>;

impl Decoder {
    pub(crate) fn event(&mut self, probe: &Probe<'_>, cx: &mut Calls) -> Result {
        cx.saw(Format::Gemini);
        let Some(candidates) = probe.candidates.filter(|c| c.get() != "null") else {
            return Ok(());
        };
        let candidates: Vec<Candidate<'_>> = serde_json::from_str(candidates.get())?;
        for (position, candidate) in candidates.iter().enumerate() {
            let number = candidate.index.unwrap_or(position as u64);
            if let Some(content) = candidate.content.filter(|c| is_object(c)) {
                let content: Content<'_> = serde_json::from_str(content.get())?;
                for part in content.parts.iter().flatten().filter(|p| is_object(p)) {
                    let part: Part<'_> = serde_json::from_str(part.get())?;
                    if let Some(call) = part.functionCall.or(part.function_call) {
                        if is_object(call) {
                            self.function_call(number, &serde_json::from_str(call.get())?, cx);
                        }
                    }
                    if let Some(response) = part.functionResponse.or(part.function_response) {
                        if is_object(response) {
                            let r: FunctionCall<'_> = serde_json::from_str(response.get())?;
                            cx.result(
                                Format::Gemini,
                                r.id.as_deref(),
                                r.name.as_deref(),
                                value(r.response),
                                false,
                            );
                        }
                    }
                }
            }
            if candidate.finishReason.is_some_and(|r| r.get() != "null") {
                cx.end();
                self.end(number, cx);
            }
        }
        Ok(())
    }

    /// An event its short path read: what [`event`](Self::event) does
    /// with it, in the same order.
    pub(crate) fn light(&mut self, event: &mut Light<'_>, cx: &mut Calls) {
        cx.saw(Format::Gemini);
        let mut calls = event.calls.drain(..);
        for (position, candidate) in event.candidates.iter().enumerate() {
            let number = candidate.index.unwrap_or(position as u64);
            for f in calls.by_ref().take(candidate.calls) {
                // A whole call.
                self.end(number, cx);
                let id = f.id.as_deref();
                if let Some(call) = cx.open(Format::Gemini, CallKind::Function, id, Some(&f.name)) {
                    if let Some(args) = f.args {
                        cx.default_read(call, args, f.tape);
                    }
                    cx.complete(call);
                }
            }
            if candidate.finish {
                cx.end();
                self.end(number, cx);
            }
        }
    }

    /// The stream ended: streamed calls are complete with what came.
    pub(crate) fn close(&mut self, cx: &mut Calls) {
        let mut candidates: Vec<u64> = self.streaming.keys().copied().collect();
        candidates.sort_unstable();
        for candidate in candidates {
            self.end(candidate, cx);
        }
    }

    fn function_call(&mut self, candidate: u64, f: &FunctionCall<'_>, cx: &mut Calls) {
        let continues = f.willContinue == Some(true);
        let name = f.name.as_deref().filter(|n| !n.is_empty());
        let streamed = continues || f.partialArgs.is_some() || (name.is_none() && f.args.is_none());
        if !streamed {
            // A whole call.
            self.end(candidate, cx);
            if let Some(call) = cx.open(Format::Gemini, CallKind::Function, f.id.as_deref(), name) {
                if let Some(args) = f.args {
                    cx.default_value(call, args);
                }
                cx.complete(call);
            }
            return;
        }
        if name.is_some() {
            // A new streamed call: any other one of this candidate is over.
            self.end(candidate, cx);
            self.start(candidate, f, name, cx);
        } else if f.partialArgs.is_some() && !self.streaming.contains_key(&candidate) {
            // Arguments for a call never started: keep them, nameless.
            self.start(candidate, f, None, cx);
        }
        let args_again = name.is_none() && f.args.is_some_and(|a| a.get() != "null");
        if let Some(stream) = self.streaming.get_mut(&candidate) {
            match stream.call {
                Some(call) => {
                    cx.touch(call);
                    if args_again && !stream.failed {
                        // Whole arguments in a later chunk of a streamed
                        // call: two readings of its arguments.
                        stream.failed = true;
                        cx.fail(
                            call,
                            crate::detect::stream::json_path::conflict(
                                "a later chunk of a streamed call sends its args whole",
                            ),
                        );
                    }
                    for fragment in f.partialArgs.iter().flatten() {
                        if stream.failed {
                            break;
                        }
                        if let Err(err) = stream.tree.apply(fragment, cx.limits()) {
                            stream.failed = true;
                            cx.fail(call, err);
                        }
                    }
                }
                None => cx.untracked(),
            }
        } else if f.partialArgs.is_some() {
            cx.untracked();
        }
        if !continues {
            self.end(candidate, cx);
        }
    }

    fn start(&mut self, candidate: u64, f: &FunctionCall<'_>, name: Option<&str>, cx: &mut Calls) {
        let call = cx.open(Format::Gemini, CallKind::Function, f.id.as_deref(), name);
        let mut stream = Streaming {
            call,
            tree: Tree::default(),
            failed: false,
        };
        if let (Some(call), Some(args)) = (call, f.args.filter(|a| a.get() != "null")) {
            // Arguments sent whole with the name, then continued by path.
            match parse_object(args.get(), cx.limits()) {
                Ok(map) => stream.tree.seed(map),
                Err(err) => {
                    stream.failed = true;
                    cx.fail(call, err);
                }
            }
        }
        self.streaming.insert(candidate, stream);
    }

    /// The streamed call of `candidate`, if any, is complete.
    fn end(&mut self, candidate: u64, cx: &mut Calls) {
        let Some(stream) = self.streaming.remove(&candidate) else {
            return;
        };
        if let Some(call) = stream.call {
            if !stream.failed {
                cx.final_text(call, &stream.tree.text());
            }
            cx.complete(call);
        }
    }
}
