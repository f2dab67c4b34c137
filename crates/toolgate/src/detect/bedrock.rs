//! Amazon Bedrock Converse: `{toolUse: {...}}` and `{toolResult: {...}}`
//! content blocks (`output.message` is read as a message).

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{get, Obj};
use crate::model::{CallKind, Format};

/// One content block holding `toolUse` or `toolResult`.
pub(crate) fn block(b: &Obj<'_>, out: &mut Collector<'_>) {
    if let Some(t) = get(&b.toolUse) {
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
    if let Some(t) = get(&b.toolResult) {
        out.result(
            Format::Bedrock,
            t.toolUseId.as_deref(),
            None,
            t.content,
            t.status.as_deref() == Some("error"),
        );
    }
}
