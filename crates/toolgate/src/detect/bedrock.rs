//! Amazon Bedrock Converse: `{toolUse: {...}}` and `{toolResult: {...}}`
//! content blocks (`output.message` is read as a message).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{is_object, parse, Obj, Result};
use crate::model::{CallKind, Format};

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct ToolUse<'a> {
    #[serde(borrow)]
    toolUseId: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
}

/// One content block holding `toolUse` or `toolResult`.
pub(crate) fn block(b: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    if let Some(raw) = b.toolUse.filter(|r| is_object(r)) {
        let t: ToolUse<'_> = parse(raw)?;
        let kind = match t.kind.as_deref() {
            Some("server_tool_use") => CallKind::Hosted,
            _ => CallKind::Function,
        };
        out.call(
            Format::Bedrock,
            kind,
            t.toolUseId.as_deref(),
            t.name.as_deref().unwrap_or_default(),
            t.input.map_or(ArgSource::Absent, ArgSource::Inline),
        );
    }
    if let Some(raw) = b.toolResult.filter(|r| is_object(r)) {
        let t: ToolUse<'_> = parse(raw)?;
        out.result(
            Format::Bedrock,
            t.toolUseId.as_deref(),
            None,
            t.content,
            t.status.as_deref() == Some("error"),
        );
    }
    Ok(())
}
