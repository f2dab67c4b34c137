//! OpenAI Responses streams: `response.*` events.
//!
//! `response.output_item.added` starts a call item (`function_call`,
//! `custom_tool_call`, or a hosted tool's `*_call`); argument deltas
//! (`response.function_call_arguments.delta`,
//! `response.custom_tool_call_input.delta`,
//! `response.mcp_call_arguments.delta`) carry its input, keyed by
//! `item_id` (or `output_index`). The final texts (the `.done` events, the
//! item of `response.output_item.done`, the items `response.completed`
//! repeats) must equal the deltas, or the call fails closed. A call that
//! `response.completed` lists but the stream never showed is added; a call
//! never finished when the stream ends is incomplete. A custom tool's input
//! is freeform text, never read as JSON. Items are read by the document
//! readers, so a call reads the same streamed or whole.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::positions::is_call_item_type;
use crate::detect::stream::calls::Calls;
use crate::detect::stream::probe::{opt_index, opt_string, string, Probe};
use crate::detect::stream::whole;
use crate::model::Format;

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    output: Option<Vec<&'a RawValue>>,
}

/// Reads Responses stream events.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    by_item: HashMap<String, usize>,
    by_index: HashMap<u64, usize>,
    /// Every call started, in order.
    opened: Vec<usize>,
}

type Result<T = ()> = std::result::Result<T, serde_json::Error>;

/// The events that make up most of a stream and say the least: an
/// arguments delta, and the response's own start. Read by serde here
/// ([`light`]), or by the short path
/// ([`fast::item`](crate::detect::fast::item)), applied the same way
/// ([`Decoder::light`]).
#[derive(Debug, PartialEq)]
pub(crate) enum Light<'a> {
    /// A call's arguments delta: the call's item id and output index,
    /// and the fragment (empty for `null` or none).
    Delta {
        item_id: Option<Cow<'a, str>>,
        output_index: Option<u64>,
        delta: Cow<'a, str>,
    },
    /// `response.created`, `.in_progress`, `.queued`, and a text delta
    /// (`response.output_text.delta`): nothing about calls.
    Quiet,
}

/// Whether events of type `kind` are [`Light`] ones.
pub(crate) fn is_light(kind: &str) -> bool {
    is_delta(kind)
        || is_text_delta(kind)
        || matches!(
            kind,
            "response.created" | "response.in_progress" | "response.queued"
        )
}

/// Whether events of type `kind` carry a delta of the answer's text (most
/// of a text answer's events), which says nothing about calls.
pub(crate) fn is_text_delta(kind: &str) -> bool {
    kind == "response.output_text.delta"
}

/// Whether events of type `kind` carry a call's arguments delta.
pub(crate) fn is_delta(kind: &str) -> bool {
    matches!(
        kind,
        "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta"
            | "response.mcp_call_arguments.delta"
    )
}

/// What an event of type `kind` says, read by serde, when it is a
/// [`Light`] one; `None` for the others.
pub(crate) fn light<'a>(p: &Probe<'a>, kind: &str) -> Result<Option<Light<'a>>> {
    if !is_light(kind) {
        return Ok(None);
    }
    let item_id = opt_string(p.item_id)?;
    let output_index = opt_index(p.output_index)?;
    if !is_delta(kind) {
        return Ok(Some(Light::Quiet));
    }
    let delta = opt_string(p.delta)?.unwrap_or_default();
    Ok(Some(Light::Delta {
        item_id,
        output_index,
        delta,
    }))
}

impl Decoder {
    /// Apply what a [`Light`] event says.
    pub(crate) fn light(&mut self, event: &Light<'_>, cx: &mut Calls) {
        if let Light::Delta {
            item_id,
            output_index,
            delta,
        } = event
        {
            match self.lookup(item_id.as_deref(), *output_index, cx) {
                Some(call) => cx.append(call, delta),
                None => cx.orphan(),
            }
        }
    }

    pub(crate) fn event(&mut self, p: &Probe<'_>, kind: &str, cx: &mut Calls) -> Result {
        cx.saw(Format::OpenAiResponses);
        if let Some(light) = light(p, kind)? {
            self.light(&light, cx);
            return Ok(());
        }
        let item_id = opt_string(p.item_id)?;
        let output_index = opt_index(p.output_index)?;
        match kind {
            "response.output_item.added" => {
                if let Some(item) = p.item {
                    self.added(item, output_index, cx)?;
                }
            }
            "response.function_call_arguments.done"
            | "response.custom_tool_call_input.done"
            | "response.mcp_call_arguments.done" => {
                let text = opt_string(p.arguments.or(p.input))?;
                let name = opt_string(p.name)?;
                match self.lookup(item_id.as_deref(), output_index, cx) {
                    Some(call) => {
                        if let Some(name) = &name {
                            // A name here that differs from the item's
                            // fails closed.
                            cx.set_name(call, name);
                        }
                        cx.final_text(call, text.as_deref().unwrap_or_default());
                        cx.complete(call);
                    }
                    None => cx.orphan(),
                }
            }
            "response.output_item.done" => {
                if let Some(item) = p.item {
                    self.done(item, output_index, false, cx)?;
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" | "response.done" => {
                // `response.done` closes the calls but is not the end of a
                // Responses stream.
                if kind != "response.done" {
                    cx.end();
                }
                if let Some(response) = p.response.filter(|r| r.get().starts_with('{')) {
                    let response: Response<'_> = serde_json::from_str(response.get())?;
                    for (position, item) in response.output.iter().flatten().enumerate() {
                        // The list repeats the items: found by id, and by
                        // position only when an item has none.
                        self.done(item, Some(position as u64), true, cx)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The stream ended: a call not finished is incomplete.
    pub(crate) fn close(&mut self, cx: &mut Calls) {
        for &call in &self.opened {
            cx.incomplete(call);
        }
    }

    fn added(&mut self, raw: &RawValue, output_index: Option<u64>, cx: &mut Calls) -> Result {
        let Some(CallItem { id: item_id }) = call_item(raw)? else {
            return Ok(());
        };
        let Some(found) = whole::item(raw, cx.limits())? else {
            return Ok(());
        };
        if let Some(previous) = self.lookup(item_id.as_deref(), output_index, cx) {
            // The same item (or position) started again: a client may keep
            // either.
            if !cx.is_complete(previous) {
                cx.conflict(previous, "the stream starts this call's item twice");
                cx.complete(previous);
            }
        }
        let Some(call) = cx.open(
            Format::OpenAiResponses,
            found.kind,
            found.id.as_deref(),
            Some(&found.name),
        ) else {
            return Ok(());
        };
        self.remember(call, item_id.as_deref(), output_index);
        // Whatever the item already holds comes before the deltas.
        cx.append(call, &found.raw_arguments);
        Ok(())
    }

    fn done(
        &mut self,
        raw: &RawValue,
        output_index: Option<u64>,
        id_first: bool,
        cx: &mut Calls,
    ) -> Result {
        let Some(CallItem { id: item_id }) = call_item(raw)? else {
            return Ok(());
        };
        let output_index = output_index.filter(|_| !(id_first && item_id.is_some()));
        let Some(found) = whole::item(raw, cx.limits())? else {
            return Ok(());
        };
        let call = if let Some(call) = self.lookup(item_id.as_deref(), output_index, cx) {
            call
        } else {
            let Some(call) = cx.open(Format::OpenAiResponses, found.kind, None, None) else {
                return Ok(());
            };
            self.remember(call, item_id.as_deref(), output_index);
            call
        };
        whole::adopt(call, &found, cx);
        Ok(())
    }

    fn remember(&mut self, call: usize, item_id: Option<&str>, output_index: Option<u64>) {
        self.opened.push(call);
        if let Some(id) = item_id {
            self.by_item.insert(id.to_owned(), call);
        }
        if let Some(index) = output_index {
            self.by_index.insert(index, call);
        }
    }

    /// The call an event names, by item id and output index. When the two
    /// name different calls, a client could apply the event to either: both
    /// fail closed.
    fn lookup(
        &self,
        item_id: Option<&str>,
        output_index: Option<u64>,
        cx: &mut Calls,
    ) -> Option<usize> {
        let by_item = item_id.and_then(|id| self.by_item.get(id)).copied();
        let by_index = output_index.and_then(|i| self.by_index.get(&i)).copied();
        match (by_item, by_index) {
            (Some(a), Some(b)) if a != b => {
                cx.conflict(
                    a,
                    "an event names this call by item id and another by output index",
                );
                cx.conflict(
                    b,
                    "an event names this call by output index and another by item id",
                );
                Some(a)
            }
            (Some(a), _) => Some(a),
            (None, b) => b,
        }
    }
}

/// An output item that is a call.
struct CallItem {
    /// Its item id (`fc_...`), not its call id.
    id: Option<String>,
}

/// The item, if it is a call (not its output, not a message).
fn call_item(raw: &RawValue) -> Result<Option<CallItem>> {
    if !raw.get().starts_with('{') {
        return Ok(None);
    }
    let item: Item<'_> = serde_json::from_str(raw.get())?;
    let kind: Option<Cow<'_, str>> = item.kind.and_then(|k| string(k).ok().flatten());
    match kind.as_deref() {
        Some(kind) if is_call_item_type(kind) => {}
        _ => return Ok(None),
    }
    let id = item
        .id
        .and_then(|id| string(id).ok().flatten())
        .map(Cow::into_owned);
    Ok(Some(CallItem { id }))
}
