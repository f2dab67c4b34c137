//! Anthropic Messages: `{"type": "error", "error": {...}}` bodies, and
//! blocked turns sent back as `tool_result` blocks with `is_error`.

use serde_json::{json, Map, Value};
use toolgate::Verdict;

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
    messages.push(json!({"role": "user", "content": results}));
    true
}
