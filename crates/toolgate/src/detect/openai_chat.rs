//! OpenAI Chat Completions: `choices[].message` (or `delta`), `role: tool`
//! results. Calls in `tool_calls` are read by [`generic::tool_calls`], which
//! also reads the seed's bare `tool_calls` arrays.
//!
//! [`generic::tool_calls`]: crate::detect::generic

use crate::detect::collect::Collector;
use crate::detect::document::{self, get, Obj, Objects, Result};
use crate::model::Format;

/// `choices[]` of a response (or of one stream chunk): each message in turn.
pub(crate) fn choices(choices: &Objects<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::OpenAiChat);
    for choice in choices.iter() {
        if let Some(message) = get(&choice.message).or_else(|| get(&choice.delta)) {
            document::message(message, out)?;
        }
    }
    Ok(())
}

/// A `role: tool` (or legacy `role: function`) message: one result.
pub(crate) fn result(o: &Obj<'_>, out: &mut Collector<'_>) {
    out.result(
        Format::OpenAiChat,
        o.tool_call_id.as_deref(),
        o.name.as_deref(),
        o.content,
        false,
    );
}
