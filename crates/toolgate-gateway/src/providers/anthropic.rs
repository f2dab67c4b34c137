//! Anthropic Messages: `{"type": "error", "error": {...}}` bodies, and
//! blocked turns sent back as `tool_result` blocks with `is_error`.

use serde_json::{json, Map, Value};
use toolgate::{ToolCall, Verdict};

use super::{feedback, verdict_json};
use crate::error::Failure;

pub(super) fn error_body(failure: &Failure) -> Value {
    let mut error = Map::new();
    error.insert("type".into(), Value::String(failure.kind().to_owned()));
    error.insert("message".into(), Value::String(failure.message()));
    if failure.verdict().is_some() {
        error.insert("verdict".into(), verdict_json(failure));
    }
    json!({"type": "error", "error": error})
}

pub(super) fn retry(request: &mut Value, response: &Value, verdict: &Verdict) -> bool {
    let Some(content) = response.get("content").and_then(Value::as_array) else {
        return false;
    };
    let ids: Vec<&str> = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter_map(|block| block.get("id").and_then(Value::as_str))
        .collect();
    if ids.is_empty() {
        return false;
    }
    let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) else {
        return false;
    };
    messages.push(json!({"role": "assistant", "content": content}));
    messages.push(results(&ids, verdict));
    true
}

/// The user turn answering each blocked call with why it did not run.
fn results(ids: &[&str], verdict: &Verdict) -> Value {
    let results: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({
                "type": "tool_result",
                "tool_use_id": id,
                "is_error": true,
                "content": feedback(verdict, id),
            })
        })
        .collect();
    json!({"role": "user", "content": results})
}

pub(super) fn retry_calls(request: &mut Value, calls: &[ToolCall], verdict: &Verdict) -> bool {
    let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) else {
        return false;
    };
    let content: Vec<Value> = calls
        .iter()
        .map(|call| {
            let input = call.arguments.as_object().map_or_else(
                || Value::Object(Map::new()),
                |map| Value::Object(map.clone()),
            );
            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
        })
        .collect();
    messages.push(json!({"role": "assistant", "content": content}));
    let ids: Vec<&str> = calls.iter().filter_map(|c| c.id.as_deref()).collect();
    messages.push(results(&ids, verdict));
    true
}
