//! Amazon Bedrock ConverseStream events, in the AWS SDK's JSON shape: one
//! object per event, keyed by the event type (`{"contentBlockDelta":
//! {...}}`).
//!
//! `contentBlockStart.start.toolUse` starts a call (`type:
//! "server_tool_use"` is a hosted one), `contentBlockDelta.delta.toolUse.
//! input` strings carry its input, `contentBlockStop` ends it. A server-side
//! `toolResult` block (`start.toolResult`, then `delta.toolResult` content
//! arrays) is a result. A block still open when its message stops or the
//! stream ends is incomplete: its input cannot be trusted.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::detect::stream::calls::Calls;
use crate::detect::stream::probe::{fragment, Probe};
use crate::model::{CallKind, Format};

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct Block<'a> {
    contentBlockIndex: Option<u64>,
    #[serde(borrow)]
    start: Option<Start<'a>>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct Start<'a> {
    #[serde(borrow)]
    toolUse: Option<ToolUse<'a>>,
    #[serde(borrow)]
    toolResult: Option<ToolUse<'a>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct Delta<'a> {
    #[serde(borrow)]
    toolUse: Option<ToolUse<'a>>,
    #[serde(borrow)]
    toolResult: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct ToolUse<'a> {
    #[serde(borrow)]
    toolUseId: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
}

/// What a content block of the current message is.
#[derive(Debug, Clone, Copy)]
enum Open {
    Call(usize),
    Result(usize),
    /// A call past `max_calls`.
    Untracked,
}

/// Reads Bedrock ConverseStream events.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    blocks: HashMap<u64, Open>,
    messages: usize,
}

type Result<T = ()> = std::result::Result<T, serde_json::Error>;

/// An event of the shape real Bedrock streams send, as its short path
/// reads it ([`fast::bedrock`](crate::detect::fast::bedrock)): what each of
/// its keys says, applied in the order [`Decoder::event`] applies them.
/// No result block.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Light<'a> {
    /// `messageStart`.
    pub(crate) message_start: bool,
    /// `contentBlockStart` with a `start`: its block's index, and the call
    /// its `toolUse` opens (`None`: the block is no call).
    pub(crate) start: Option<(u64, Option<StartCall<'a>>)>,
    /// `contentBlockDelta` with a `delta.toolUse`: its block's index, and
    /// the input fragment (empty for `null` or none).
    pub(crate) delta: Option<(u64, Cow<'a, str>)>,
    /// `contentBlockStop`: its block's index.
    pub(crate) stop: Option<u64>,
    /// `messageStop`.
    pub(crate) message_stop: bool,
}

/// A `toolUse` block start.
#[derive(Debug, PartialEq)]
pub(crate) struct StartCall<'a> {
    pub(crate) kind: CallKind,
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) name: Option<Cow<'a, str>>,
}

impl<'a> StartCall<'a> {
    fn of(tool: ToolUse<'a>) -> Self {
        StartCall {
            kind: match tool.kind.as_deref() {
                Some("server_tool_use") => CallKind::Hosted,
                _ => CallKind::Function,
            },
            id: tool.toolUseId,
            name: tool.name,
        }
    }
}

/// Debug builds: what the general reading reads of an event the short
/// path took, as a [`Light`]; `None` when it holds a result block.
#[cfg(debug_assertions)]
pub(crate) fn light<'a>(p: &Probe<'a>) -> Result<Option<Light<'a>>> {
    let mut light = Light {
        message_start: p.messageStart.is_some(),
        message_stop: p.messageStop.is_some(),
        ..Light::default()
    };
    if let Some(raw) = p.contentBlockStart {
        let block: Block<'a> = serde_json::from_str(raw.get())?;
        if let Some(start) = block.start {
            if start.toolResult.is_some() && start.toolUse.is_none() {
                return Ok(None);
            }
            let index = block.contentBlockIndex.unwrap_or(0);
            light.start = Some((index, start.toolUse.map(StartCall::of)));
        }
    }
    if let Some(raw) = p.contentBlockDelta {
        let block: Block<'a> = serde_json::from_str(raw.get())?;
        if let Some(delta) = block.delta {
            if delta.toolResult.is_some() {
                return Ok(None);
            }
            if let Some(tool) = delta.toolUse {
                let index = block.contentBlockIndex.unwrap_or(0);
                light.delta = Some((index, fragment(tool.input)?));
            }
        }
    }
    if let Some(raw) = p.contentBlockStop {
        let block: Block<'a> = serde_json::from_str(raw.get())?;
        light.stop = Some(block.contentBlockIndex.unwrap_or(0));
    }
    Ok(Some(light))
}

impl Decoder {
    pub(crate) fn event(&mut self, p: &Probe<'_>, cx: &mut Calls) -> Result {
        cx.saw(Format::Bedrock);
        if p.messageStart.is_some() {
            self.message_start(cx);
        }
        if let Some(raw) = p.contentBlockStart {
            self.start(serde_json::from_str(raw.get())?, cx);
        }
        if let Some(raw) = p.contentBlockDelta {
            self.delta(&serde_json::from_str(raw.get())?, cx)?;
        }
        if let Some(raw) = p.contentBlockStop {
            let block: Block<'_> = serde_json::from_str(raw.get())?;
            self.stop(block.contentBlockIndex.unwrap_or(0), cx);
        }
        if p.messageStop.is_some() {
            self.message_stop(cx);
        }
        Ok(())
    }

    /// An event its short path read: what [`event`](Self::event) does
    /// with it, in the same order.
    pub(crate) fn light(&mut self, event: Light<'_>, cx: &mut Calls) {
        cx.saw(Format::Bedrock);
        if event.message_start {
            self.message_start(cx);
        }
        if let Some((index, call)) = event.start {
            self.replace(index, cx);
            if let Some(call) = call {
                self.open(index, &call, cx);
            }
        }
        if let Some((index, input)) = event.delta {
            self.append(index, &input, cx);
        }
        if let Some(index) = event.stop {
            self.stop(index, cx);
        }
        if event.message_stop {
            self.message_stop(cx);
        }
    }

    /// The stream ended: open blocks are incomplete.
    pub(crate) fn close(&mut self, cx: &mut Calls) {
        self.end_message(cx);
    }

    fn message_start(&mut self, cx: &mut Calls) {
        self.end_message(cx);
        if self.messages > 0 {
            cx.next_turn();
        }
        self.messages += 1;
    }

    fn message_stop(&mut self, cx: &mut Calls) {
        cx.end();
        self.end_message(cx);
    }

    fn start(&mut self, block: Block<'_>, cx: &mut Calls) {
        let index = block.contentBlockIndex.unwrap_or(0);
        let Some(start) = block.start else {
            return;
        };
        self.replace(index, cx);
        if let Some(tool) = start.toolUse {
            self.open(index, &StartCall::of(tool), cx);
        } else if let Some(tool) = &start.toolResult {
            let handle = cx.result(
                Format::Bedrock,
                tool.toolUseId.as_deref(),
                None,
                None,
                tool.status.as_deref() == Some("error"),
            );
            self.blocks.insert(index, Open::Result(handle));
        }
    }

    /// A block starts at `index`: a call still open there is in conflict.
    fn replace(&mut self, index: u64, cx: &mut Calls) {
        if let Some(Open::Call(call)) = self.blocks.get(&index) {
            if !cx.is_complete(*call) {
                cx.conflict(*call, "a second content block starts at this index");
                cx.complete(*call);
            }
        }
    }

    fn open(&mut self, index: u64, call: &StartCall<'_>, cx: &mut Calls) {
        let open = cx.open(
            Format::Bedrock,
            call.kind,
            call.id.as_deref(),
            call.name.as_deref(),
        );
        self.blocks
            .insert(index, open.map_or(Open::Untracked, Open::Call));
    }

    fn delta(&mut self, block: &Block<'_>, cx: &mut Calls) -> Result {
        let index = block.contentBlockIndex.unwrap_or(0);
        let Some(delta) = &block.delta else {
            return Ok(());
        };
        if let Some(tool) = &delta.toolUse {
            self.append(index, &fragment(tool.input)?, cx);
        }
        if let Some(items) = &delta.toolResult {
            if let Some(Open::Result(handle)) = self.blocks.get(&index) {
                if let Some(result) = cx.result_mut(*handle) {
                    let content = result
                        .content
                        .get_or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(list) = content {
                        list.extend(
                            items
                                .iter()
                                .filter_map(|raw| serde_json::from_str::<Value>(raw.get()).ok()),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// A fragment of the input of the call at `index`.
    fn append(&mut self, index: u64, input: &str, cx: &mut Calls) {
        match self.blocks.get(&index) {
            Some(Open::Call(call)) => cx.append(*call, input),
            Some(_) => cx.untracked(),
            None => cx.orphan(),
        }
    }

    fn stop(&mut self, index: u64, cx: &mut Calls) {
        if let Some(Open::Call(call)) = self.blocks.get(&index) {
            cx.complete(*call);
        }
    }

    /// The message is over: a call still open is incomplete.
    fn end_message(&mut self, cx: &mut Calls) {
        let mut calls: Vec<usize> = self
            .blocks
            .values()
            .filter_map(|open| match open {
                Open::Call(call) => Some(*call),
                Open::Result(_) | Open::Untracked => None,
            })
            .collect();
        calls.sort_unstable();
        for call in calls {
            cx.incomplete(call);
        }
        self.blocks.clear();
    }
}
