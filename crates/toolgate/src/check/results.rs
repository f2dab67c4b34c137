//! Are the tool results an application sends back linked to real calls?
//! Each names a call id the conversation issued, once, with the call's tool
//! name where it carries one, and content the format allows; and no call is
//! left without a result when the conversation moves on.

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::model::{CallKind, Format, ToolCall, ToolResult};
use crate::verdict::{Violation, ViolationCode};

pub(crate) fn check(calls: &[ToolCall], results: &[ToolResult]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut by_id: FxHashMap<&str, &ToolCall> = FxHashMap::default();
    for call in calls {
        if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) {
            by_id.entry(id).or_insert(call);
        }
    }
    // The first turn each tool was called in: Gemini links results by name.
    let mut first_turn: FxHashMap<&str, usize> = FxHashMap::default();
    for call in calls {
        first_turn.entry(call.name.as_str()).or_insert(call.turn);
    }
    let mut answered: FxHashMap<&str, usize> = FxHashMap::default();
    for result in results {
        let at = result.index;
        let named = result
            .name
            .as_deref()
            .filter(|name| !name.trim().is_empty());
        let push = |out: &mut Vec<Violation>, code, call: Option<&ToolCall>, message: String| {
            out.push(Violation {
                code,
                call: call.map(|c| c.index),
                tool: call
                    .map(|c| c.name.clone())
                    .or_else(|| named.map(str::to_owned)),
                path: None,
                message,
            });
        };
        if result.format == Format::Gemini && named.is_none() {
            push(
                &mut out,
                ViolationCode::ResultMissingName,
                None,
                format!("tool result #{at} has no tool name"),
            );
        }
        match result.call_id.as_deref().filter(|id| !id.is_empty()) {
            None if result.format == Format::Gemini => {
                // Gemini links results to calls by name.
                if let Some(name) = named {
                    if first_turn.get(name).is_none_or(|&turn| turn >= result.turn) {
                        push(
                            &mut out,
                            ViolationCode::ResultUnknownCallId,
                            None,
                            format!("tool result #{at} answers tool '{name}', which no earlier call named"),
                        );
                    }
                }
            }
            None => push(
                &mut out,
                ViolationCode::ResultMissingCallId,
                None,
                format!("tool result #{at} does not say which call it answers (no call id)"),
            ),
            Some(id) => match by_id
                .get(id)
                .filter(|call| call.turn < result.turn || call.format == Format::Mcp)
            {
                None => push(
                    &mut out,
                    ViolationCode::ResultUnknownCallId,
                    None,
                    format!(
                        "tool result #{at} answers call id '{id}', which no earlier tool call has"
                    ),
                ),
                Some(call) => {
                    if let Some(first) = answered.insert(id, at) {
                        push(
                            &mut out,
                            ViolationCode::ResultDuplicateCallId,
                            Some(call),
                            format!("tool result #{at} answers call id '{id}' again (tool result #{first} already did)"),
                        );
                    }
                    if let Some(name) = named.filter(|name| *name != call.name) {
                        push(
                            &mut out,
                            ViolationCode::ResultNameMismatch,
                            Some(call),
                            format!("tool result #{at} names tool '{name}', but call '{id}' was to '{}'", call.name),
                        );
                    }
                }
            },
        }
        if !content_fits(result) {
            push(
                &mut out,
                ViolationCode::ResultBadContent,
                None,
                format!("tool result #{at} has no content, or content its format does not allow"),
            );
        }
    }
    missing(calls, results, &mut out);
    out
}

/// A call left without a result before the next turn with calls. Results
/// are indexed by call id (or, without one, by tool name) first, so a long
/// conversation costs linear time.
fn missing(calls: &[ToolCall], results: &[ToolResult], out: &mut Vec<Violation>) {
    let mut turns: Vec<usize> = calls.iter().map(|c| c.turn).collect();
    turns.sort_unstable();
    turns.dedup();
    let mut by_id: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    let mut by_name: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    for result in results {
        match (result.call_id.as_deref(), result.name.as_deref()) {
            (Some(id), _) => by_id.entry(id).or_default().push(result.turn),
            (None, Some(name)) => by_name.entry(name).or_default().push(result.turn),
            (None, None) => {}
        }
    }
    for call in calls {
        if call.kind == CallKind::Hosted || call.format == Format::Mcp {
            continue;
        }
        let Some(&next) = turns.get(turns.partition_point(|&turn| turn <= call.turn)) else {
            continue;
        };
        let answers = match call.id.as_deref().filter(|id| !id.is_empty()) {
            Some(id) => by_id.get(id),
            None => by_name.get(call.name.as_str()),
        };
        let answered =
            answers.is_some_and(|turns| turns.iter().any(|&turn| turn > call.turn && turn < next));
        if !answered {
            out.push(Violation::call(
                ViolationCode::ResultMissing,
                call.index,
                &call.name,
                format!(
                    "tool call '{}' got no result before the next turn",
                    call.name
                ),
            ));
        }
    }
}

/// Whether a result's content has a shape its format allows.
fn content_fits(result: &ToolResult) -> bool {
    let blocks = |items: &Vec<Value>| {
        items
            .iter()
            .all(|item| item.get("type").is_some_and(Value::is_string))
    };
    match (result.format, &result.content) {
        (Format::Anthropic, None) => true,
        (_, None | Some(Value::Null)) => false,
        (Format::OpenAiChat | Format::OpenAiResponses | Format::Anthropic, Some(content)) => {
            match content {
                Value::String(_) => true,
                Value::Array(items) => blocks(items),
                _ => false,
            }
        }
        (Format::Mcp, Some(content)) => content.as_array().is_some_and(blocks),
        (Format::Bedrock, Some(content)) => content
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_object)),
        (Format::Gemini, Some(content)) => content.is_object(),
        (Format::VercelAi | Format::Generic, Some(_)) => true,
    }
}
