//! Anthropic Messages streams: `message_start`, `content_block_start`
//! (`tool_use`, `server_tool_use`, `mcp_tool_use`), `content_block_delta`
//! (`input_json_delta`; text and thinking deltas pass through),
//! `content_block_stop`, `message_delta`, `message_stop`, `ping`.
//!
//! Blocks are keyed by `index` within one message: a second `message_start`
//! begins a new message (and turn) whose blocks are never merged with the
//! earlier ones. A call's input is its `partial_json` fragments joined (none
//! at all means `{}`), or the block's own `input` when no fragment came. A
//! block never closed by `content_block_stop` (a stream cut by
//! `max_tokens`, or spliced) is incomplete: its input cannot be trusted.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::stream::calls::Calls;
use crate::detect::stream::probe::{opt_index, opt_string, value, Probe};
use crate::model::{CallKind, Format};

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<&'a RawValue>,
}

/// What a content block of the current message is.
#[derive(Debug, Clone, Copy)]
enum Open {
    Call(usize),
    /// A call past `max_calls`.
    Untracked,
}

/// Reads Anthropic stream events.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    blocks: HashMap<u64, Open>,
    messages: usize,
}

type Result<T = ()> = std::result::Result<T, serde_json::Error>;

/// What the events of a stream say, but for a `tool_result` block's start
/// (rare in a model's stream): read by serde here ([`light`]), or by the
/// short path ([`fast::block`](crate::detect::fast::block)), applied the
/// same way ([`Decoder::light`]).
#[derive(Debug, PartialEq)]
pub(crate) enum Light<'a> {
    /// `message_start`.
    MessageStart,
    /// `content_block_start`: the block's index, and the call it opens
    /// (`None` for a block that is no call: text, thinking).
    Start {
        index: u64,
        call: Option<StartCall<'a>>,
    },
    /// `content_block_delta`: the block's index and, for an
    /// `input_json_delta`, its fragment (empty for `null` or none).
    Delta {
        index: u64,
        json: Option<Cow<'a, str>>,
    },
    /// `content_block_stop`.
    Stop { index: u64 },
    /// `message_stop`.
    MessageStop,
    /// An event that says nothing about calls: `ping`, `message_delta`,
    /// a type of no Messages stream.
    Quiet,
}

/// A block that opens a call.
#[derive(Debug)]
pub(crate) struct StartCall<'a> {
    pub(crate) kind: CallKind,
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) name: Option<Cow<'a, str>>,
    /// The block's own `input`, the call's when no fragment comes.
    pub(crate) input: Option<&'a RawValue>,
}

impl PartialEq for StartCall<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.id == other.id
            && self.name == other.name
            && self.input.map(RawValue::get) == other.input.map(RawValue::get)
    }
}

/// What an event of type `kind` says, read by serde; `None` for a block
/// start that opens a `tool_result` or holds no block (`null`), which the
/// decoder reads itself.
pub(crate) fn light<'a>(p: &Probe<'a>, kind: &str) -> Result<Option<Light<'a>>> {
    Ok(Some(match kind {
        "message_start" => Light::MessageStart,
        "content_block_start" => {
            let index = opt_index(p.index)?.unwrap_or(0);
            let Some(block) = p.content_block.filter(|b| b.get() != "null") else {
                return Ok(None);
            };
            let block: Block<'a> = serde_json::from_str(block.get())?;
            let kind = match block.kind.as_deref() {
                Some("tool_use") => CallKind::Function,
                // Run by Anthropic (web search, code execution) or by a
                // remote MCP server: checked like any call.
                Some("server_tool_use" | "mcp_tool_use") => CallKind::Hosted,
                Some("tool_result") => return Ok(None),
                _ => return Ok(Some(Light::Start { index, call: None })),
            };
            let call = StartCall {
                kind,
                id: block.id,
                name: block.name,
                input: block.input,
            };
            Light::Start {
                index,
                call: Some(call),
            }
        }
        "content_block_delta" => {
            let index = opt_index(p.index)?.unwrap_or(0);
            let mut json = None;
            if let Some(delta) = p.delta.filter(|d| d.get() != "null") {
                let delta: Delta<'a> = serde_json::from_str(delta.get())?;
                if delta.kind.as_deref() == Some("input_json_delta") {
                    json = Some(opt_string(delta.partial_json)?.unwrap_or_default());
                }
            }
            Light::Delta { index, json }
        }
        "content_block_stop" => Light::Stop {
            index: opt_index(p.index)?.unwrap_or(0),
        },
        "message_stop" => Light::MessageStop,
        _ => Light::Quiet,
    }))
}

impl Decoder {
    pub(crate) fn event(&mut self, p: &Probe<'_>, kind: &str, cx: &mut Calls) -> Result {
        cx.saw(Format::Anthropic);
        if let Some(light) = light(p, kind)? {
            self.light(&light, cx);
            return Ok(());
        }
        // A block start [`light`] leaves: a tool result, or no block.
        let index = opt_index(p.index)?.unwrap_or(0);
        if let Some(block) = p.content_block.filter(|b| b.get() != "null") {
            let block: Block<'_> = serde_json::from_str(block.get())?;
            self.replace(index, cx);
            cx.result(
                Format::Anthropic,
                block.tool_use_id.as_deref(),
                None,
                value(block.content),
                block.is_error.unwrap_or(false),
            );
        }
        Ok(())
    }

    /// Apply what an event says.
    pub(crate) fn light(&mut self, event: &Light<'_>, cx: &mut Calls) {
        match event {
            Light::MessageStart => {
                self.end_message(cx);
                if self.messages > 0 {
                    cx.next_turn();
                }
                self.messages += 1;
            }
            Light::Start { index, call } => {
                self.replace(*index, cx);
                if let Some(call) = call {
                    self.open(*index, call, cx);
                }
            }
            Light::Delta {
                index,
                json: Some(fragment),
            } => match self.blocks.get(index) {
                Some(Open::Call(call)) => cx.append(*call, fragment),
                Some(Open::Untracked) => cx.untracked(),
                None => cx.orphan(),
            },
            Light::Stop { index } => {
                if let Some(Open::Call(call)) = self.blocks.get(index) {
                    cx.complete(*call);
                }
            }
            Light::MessageStop => {
                cx.end();
                self.end_message(cx);
            }
            Light::Delta { json: None, .. } | Light::Quiet => {}
        }
    }

    /// The stream ended: open blocks are incomplete.
    pub(crate) fn close(&mut self, cx: &mut Calls) {
        self.end_message(cx);
    }

    /// A block starts at `index`: a call still open there is in conflict.
    fn replace(&mut self, index: u64, cx: &mut Calls) {
        if let Some(Open::Call(call)) = self.blocks.remove(&index) {
            if !cx.is_complete(call) {
                cx.conflict(call, "a second content block starts at this index");
                cx.complete(call);
            }
        }
    }

    /// A block that opens a call starts at `index`.
    fn open(&mut self, index: u64, block: &StartCall<'_>, cx: &mut Calls) {
        let Some(call) = cx.open(
            Format::Anthropic,
            block.kind,
            block.id.as_deref(),
            block.name.as_deref(),
        ) else {
            self.blocks.insert(index, Open::Untracked);
            return;
        };
        if let Some(input) = block.input {
            cx.default_value(call, input);
        }
        self.blocks.insert(index, Open::Call(call));
    }

    /// The message is over: a call still open is incomplete.
    fn end_message(&mut self, cx: &mut Calls) {
        let mut calls: Vec<usize> = self
            .blocks
            .values()
            .filter_map(|open| match open {
                Open::Call(call) => Some(*call),
                Open::Untracked => None,
            })
            .collect();
        calls.sort_unstable();
        for call in calls {
            cx.incomplete(call);
        }
        self.blocks.clear();
    }
}
