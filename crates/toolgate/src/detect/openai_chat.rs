//! OpenAI Chat Completions: `choices[].message`, `role: tool` results.
//! Calls in `tool_calls` are read by [`generic::tool_calls`], which also
//! reads the seed's bare `tool_calls` arrays.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::collect::Collector;
use crate::detect::document::{self, is_object, items, parse, Obj, Result};
use crate::model::Format;

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
}

/// `choices[]` of a response (or of one stream chunk): each message in turn.
pub(crate) fn choices(raw: &RawValue, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::OpenAiChat);
    for item in items(Some(raw))? {
        if !is_object(item) {
            continue;
        }
        let choice: Choice<'_> = parse(item)?;
        if let Some(message) = choice.message.or(choice.delta).filter(|m| is_object(m)) {
            document::message(&parse(message)?, out)?;
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
