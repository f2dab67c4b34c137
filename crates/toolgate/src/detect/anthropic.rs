//! Anthropic Messages: `tool_use`, `server_tool_use`, `mcp_tool_use` and
//! `tool_result` content blocks.

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{id_text, Obj};
use crate::model::{CallKind, Format};

/// One block whose `type` is `kind`.
pub(crate) fn block(b: &Obj<'_>, kind: &str, out: &mut Collector<'_>) {
    let id = id_text(b.id);
    if kind == "tool_result" {
        out.result(
            Format::Anthropic,
            b.tool_use_id.as_deref(),
            None,
            b.content,
            b.is_error.unwrap_or(false),
        );
        return;
    }
    let call_kind = if kind == "tool_use" {
        CallKind::Function
    } else {
        // Executed by Anthropic (web search, code execution) or by a remote
        // MCP server: named by the tool, checked like any call.
        CallKind::Hosted
    };
    out.call(
        Format::Anthropic,
        call_kind,
        id.as_deref(),
        b.name.as_deref().unwrap_or_default(),
        b.input.map_or(ArgSource::Absent, ArgSource::Inline),
    );
}
