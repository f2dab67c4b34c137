//! Vercel AI SDK: `tool-call` / `tool-result` parts of model messages,
//! `toolCalls` of a result, and `steps`.

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{self, is_array, Obj, Objects, Result};
use crate::model::{CallKind, Format};

/// One part whose `type` is `tool-call` or `tool-result`.
pub(crate) fn part(p: &Obj<'_>, kind: &str, out: &mut Collector<'_>) {
    let id = p.toolCallId.as_deref();
    let name = p.toolName.as_deref();
    if kind == "tool-result" {
        out.result(
            Format::VercelAi,
            id,
            name,
            p.output.or(p.content),
            p.isError.unwrap_or(false),
        );
        return;
    }
    out.call(
        Format::VercelAi,
        CallKind::Function,
        id,
        name.unwrap_or_default(),
        p.input
            .or(p.args)
            .map_or(ArgSource::Absent, ArgSource::Inline),
    );
}

/// `toolCalls[]` of a result: `{toolCallId, toolName, input | args}`.
pub(crate) fn tool_calls(calls: &Objects<'_>, out: &mut Collector<'_>) {
    out.saw(Format::VercelAi);
    for call in calls.iter() {
        part(call, "tool-call", out);
    }
}

/// `steps[]` of a multi-step result: each step's `content` (v5) or
/// `toolCalls` (v4) is a turn.
pub(crate) fn steps(steps: &Objects<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::VercelAi);
    for step in steps.iter() {
        out.next_turn(None);
        if let Some(content) = step.content.filter(|c| is_array(c)) {
            document::blocks(content, out, Format::VercelAi)?;
        } else if let Some(calls) = &step.toolCalls {
            tool_calls(calls, out);
        }
    }
    Ok(())
}
