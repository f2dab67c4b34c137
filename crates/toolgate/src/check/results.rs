//! Are the tool results an application sends back linked to real calls?
//! Each names a call id the conversation issued, once, with the call's tool
//! name where it carries one, and content the format allows; and no call is
//! left without a result when the conversation moves on.

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::model::{Answers, CallKind, ContentShape, Format, Link, ToolCall, ToolResult};
use crate::verdict::{Violation, ViolationCode};

/// What the linkage needs of a detection besides its calls and results.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Linkage {
    /// The last turn with calls, if the conversation did not move on.
    pub(crate) pending: Option<usize>,
    /// The payload continues a conversation the provider keeps.
    pub(crate) continues: bool,
    /// Every result must name its call's tool (seed 004).
    pub(crate) require_names: bool,
    /// Calls past `max_calls` were not read: a result may answer one of
    /// them, and a turn may hold more calls than were read. Only what a
    /// result says of itself is checked.
    pub(crate) cut: bool,
}

/// Link each result to a call of the turn it answers (seed 004: a turn's
/// results answer that same turn's calls), then find the calls left
/// without a result.
pub(crate) fn check(calls: &[ToolCall], results: &[ToolResult], link: Linkage) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut by_turn: FxHashMap<usize, Vec<&ToolCall>> = FxHashMap::default();
    for call in calls {
        by_turn.entry(call.turn).or_default().push(call);
    }
    // Call index -> the result that answered it.
    let mut answered: FxHashMap<usize, usize> = FxHashMap::default();
    for result in results {
        link_one(calls, &by_turn, result, link, &mut answered, &mut out);
    }
    if !link.cut {
        missing(calls, &answered, link.pending, &mut out);
    }
    out
}

/// Link one result to the call it answers, or say why it cannot be.
fn link_one(
    calls: &[ToolCall],
    by_turn: &FxHashMap<usize, Vec<&ToolCall>>,
    result: &ToolResult,
    link: Linkage,
    answered: &mut FxHashMap<usize, usize>,
    out: &mut Vec<Violation>,
) {
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
                .map(|c| c.name.to_string())
                .or_else(|| named.map(str::to_owned)),
            path: None,
            message,
        });
    };
    let id = result.call_id.as_deref().filter(|id| !id.is_empty());
    let linkable = said_of_itself(result, id, named, out);
    if link.cut || !linkable {
        // Past `max_calls` a result may answer a call that was not read.
        return;
    }
    if result.format == Format::Mcp {
        // JSON-RPC links a result to its request by id, in any order.
        if let Some(id) = id {
            if !calls
                .iter()
                .any(|c| c.format == Format::Mcp && c.id.as_deref() == Some(id))
            {
                push(
                    out,
                    ViolationCode::ResultUnknownCallId,
                    None,
                    format!("tool result #{at} answers call id '{id}', which no tool call has"),
                );
            }
        }
        return;
    }
    let turn = match result.answers {
        Answers::Turn(turn) => Some(turn),
        // Calls the provider keeps: not ours to see.
        Answers::Earlier if link.continues => return,
        Answers::Earlier | Answers::Nothing => None,
    };
    let candidates = turn
        .and_then(|t| by_turn.get(&t))
        .map_or(&[][..], Vec::as_slice);
    let what = match id {
        Some(id) => format!("call id '{id}'"),
        None => format!("tool '{}'", named.unwrap_or_default()),
    };
    let matching = |call: &&&ToolCall| match id {
        Some(id) => call.id.as_deref() == Some(id),
        None => Some(call.name.as_str()) == named,
    };
    let Some(&first) = candidates.iter().find(matching) else {
        let message = unknown(calls, at, &what, id, named);
        push(out, ViolationCode::ResultUnknownCallId, None, message);
        return;
    };
    // By name, each call of that tool takes one result, in order.
    let call = match id {
        Some(_) => first,
        None => candidates
            .iter()
            .filter(matching)
            .find(|c| !answered.contains_key(&c.index))
            .copied()
            .unwrap_or(first),
    };
    if let Some(earlier) = answered.get(&call.index) {
        push(
            out,
            ViolationCode::ResultDuplicateCallId,
            Some(call),
            format!("tool result #{at} answers {what} again (tool result #{earlier} already did)"),
        );
        return;
    }
    answered.insert(call.index, at);
    let wrong_name = named.filter(|name| *name != call.name);
    if let Some(name) = wrong_name {
        let message = format!(
            "tool result #{at} names tool '{name}', but {what} was to '{}'",
            call.name
        );
        push(out, ViolationCode::ResultNameMismatch, Some(call), message);
    } else if named.is_none() && link.require_names && !call.name.trim().is_empty() {
        let message = format!(
            "tool result #{at} does not name its call's tool '{}'",
            call.name
        );
        push(out, ViolationCode::ResultMissingName, Some(call), message);
    }
}

/// What a result says of itself, whatever calls there are: content its
/// format does not allow, no call id (or name) where it links by one.
/// Returns whether it can be linked.
fn said_of_itself(
    result: &ToolResult,
    id: Option<&str>,
    named: Option<&str>,
    out: &mut Vec<Violation>,
) -> bool {
    let fault = |code, message| Violation {
        code,
        call: None,
        tool: named.map(str::to_owned),
        path: None,
        message,
    };
    if !content_fits(result) {
        out.push(fault(
            ViolationCode::ResultBadContent,
            format!(
                "tool result #{} has no content, or content its format does not allow",
                result.index
            ),
        ));
    }
    if result.format == Format::Mcp {
        // JSON-RPC links a result to its request by its own id, if any.
        return true;
    }
    match unlinkable(result, id, named) {
        Some((code, message)) => {
            out.push(fault(code, message));
            false
        }
        None => true,
    }
}

/// Why a result's call is not among the calls of the turn it answers.
fn unknown(
    calls: &[ToolCall],
    at: usize,
    what: &str,
    id: Option<&str>,
    named: Option<&str>,
) -> String {
    let elsewhere = calls.iter().any(|call| match id {
        Some(id) => call.id.as_deref() == Some(id),
        None => Some(call.name.as_str()) == named,
    });
    if elsewhere {
        format!("tool result #{at} answers {what}, which is a call of another turn than the one it answers")
    } else if id.is_some() {
        format!("tool result #{at} answers {what}, which no earlier tool call has")
    } else {
        format!("tool result #{at} answers {what}, which no earlier call named")
    }
}

/// Why a result cannot be linked at all: no call id where the format
/// links by id, no name where it links by name (Gemini, legacy
/// `role: function`).
fn unlinkable(
    result: &ToolResult,
    id: Option<&str>,
    named: Option<&str>,
) -> Option<(ViolationCode, String)> {
    let at = result.index;
    let missing_name = (
        ViolationCode::ResultMissingName,
        format!("tool result #{at} has no tool name"),
    );
    if result.format == Format::Gemini && named.is_none() {
        // Gemini's `functionResponse` always names its function.
        return Some(missing_name);
    }
    match (id, result.link, named) {
        (Some(_), _, _) | (None, Link::Name, Some(_)) => None,
        (None, Link::Name, None) => Some(missing_name),
        (None, Link::Id, _) => Some((
            ViolationCode::ResultMissingCallId,
            format!("tool result #{at} does not say which call it answers (no call id)"),
        )),
    }
}

/// A call left without a result when the conversation moved on; in the
/// last turn, still open, a call left unanswered beside answered ones.
fn missing(
    calls: &[ToolCall],
    answered: &FxHashMap<usize, usize>,
    pending: Option<usize>,
    out: &mut Vec<Violation>,
) {
    let owed = |call: &&ToolCall| call.kind != CallKind::Hosted && call.format != Format::Mcp;
    let pending_started = pending.is_some_and(|turn| {
        calls
            .iter()
            .filter(owed)
            .any(|c| c.turn == turn && answered.contains_key(&c.index))
    });
    for call in calls.iter().filter(owed) {
        if answered.contains_key(&call.index) {
            continue;
        }
        let open = Some(call.turn) == pending;
        if open && !pending_started {
            continue;
        }
        let message = if open {
            format!(
                "tool call '{}' got no result, though other calls of its turn did",
                call.name
            )
        } else {
            format!(
                "tool call '{}' got no result before the next turn",
                call.name
            )
        };
        out.push(Violation::call(
            ViolationCode::ResultMissing,
            call.index,
            &call.name,
            message,
        ));
    }
}

/// Whether a result's content has a shape its format allows.
fn content_fits(result: &ToolResult) -> bool {
    let blocks = |items: &Vec<Value>| {
        items
            .iter()
            .all(|item| item.get("type").is_some_and(Value::is_string))
    };
    let content = result.content.as_ref().filter(|c| !c.is_null());
    match result.shape {
        ContentShape::OfFormat => {}
        ContentShape::Text => return content.is_some_and(Value::is_string),
        ContentShape::OptionalText => return content.is_none_or(Value::is_string),
        ContentShape::Screenshot => {
            return content.and_then(|c| c.get("type")).and_then(Value::as_str)
                == Some("computer_screenshot")
        }
        ContentShape::Objects => {
            return content
                .and_then(Value::as_array)
                .is_some_and(|items| items.iter().all(Value::is_object))
        }
    }
    match (result.format, &result.content) {
        (Format::Anthropic, None) => true,
        (_, None | Some(Value::Null)) => false,
        (Format::OpenAiResponses, Some(Value::Object(approval))) => is_approval(approval),
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

/// The content of a Responses `mcp_approval_response`: its decision, a
/// boolean `approve`.
fn is_approval(content: &serde_json::Map<String, Value>) -> bool {
    content.len() == 2
        && content.get("type").and_then(Value::as_str) == Some("mcp_approval_response")
        && content.get("approve").is_some_and(Value::is_boolean)
}
