//! The assistant's text in an answer: from each stream event (OpenAI Chat
//! `delta.content`, Anthropic `text_delta`, Responses
//! `response.output_text.delta`, Gemini `parts[].text`) or from a whole
//! answer (`message.content`, `content[]` text blocks, `output[]` message
//! items, Gemini and Bedrock parts). Calls are never read here: the
//! library reads them.

use serde_json::Value;
use toolgate::Format;

/// Append the text of one event's data to `text`; note its format.
pub(crate) fn from_event(data: &[u8], text: &mut String, seen: &mut Option<Format>) {
    let Ok(event) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(choices) = event.get("choices").and_then(Value::as_array) {
        seen.get_or_insert(Format::OpenAiChat);
        for choice in choices {
            push(text, choice.pointer("/delta/content"));
        }
    } else if kind.starts_with("response.") {
        seen.get_or_insert(Format::OpenAiResponses);
        if kind == "response.output_text.delta" {
            push(text, event.get("delta"));
        }
    } else if matches!(
        kind,
        "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "ping"
    ) {
        seen.get_or_insert(Format::Anthropic);
        if kind == "content_block_delta"
            && event.pointer("/delta/type").and_then(Value::as_str) == Some("text_delta")
        {
            push(text, event.pointer("/delta/text"));
        }
    } else if let Some(candidates) = event.get("candidates").and_then(Value::as_array) {
        seen.get_or_insert(Format::Gemini);
        gemini(candidates, text);
    }
}

/// Append the text of a whole answer to `text`.
pub(crate) fn from_document(document: &Value, text: &mut String) {
    if let Some(choices) = document.get("choices").and_then(Value::as_array) {
        for choice in choices {
            content(choice.pointer("/message/content"), text);
        }
    } else if let Some(output) = document.get("output").and_then(Value::as_array) {
        for item in output {
            if item.get("type").and_then(Value::as_str) == Some("message") {
                content(item.get("content"), text);
            }
        }
    } else if let Some(candidates) = document.get("candidates").and_then(Value::as_array) {
        gemini(candidates, text);
    } else if let Some(message) = document.pointer("/output/message") {
        content(message.get("content"), text);
    } else if document.get("role").is_some() || document.get("type").is_some() {
        content(document.get("content"), text);
    }
}

/// A `content` that is a string, or a list of text blocks (`text`,
/// `output_text`, Bedrock `{text}`).
fn content(value: Option<&Value>, text: &mut String) {
    match value {
        Some(Value::String(part)) => text.push_str(part),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                let kind = block.get("type").and_then(Value::as_str);
                if matches!(kind, None | Some("text" | "output_text")) {
                    push(text, block.get("text"));
                }
            }
        }
        _ => {}
    }
}

fn gemini(candidates: &[Value], text: &mut String) {
    for candidate in candidates {
        if let Some(parts) = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
        {
            for part in parts {
                push(text, part.get("text"));
            }
        }
    }
}

fn push(text: &mut String, value: Option<&Value>) {
    if let Some(Value::String(part)) = value {
        text.push_str(part);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_text_of_each_format() {
        let mut text = String::new();
        let mut seen = None;
        from_event(
            br#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            &mut text,
            &mut seen,
        );
        from_event(
            br#"{"choices":[{"delta":{"content":"lo"}}]}"#,
            &mut text,
            &mut seen,
        );
        assert_eq!((text.as_str(), seen), ("Hello", Some(Format::OpenAiChat)));

        let (mut text, mut seen) = (String::new(), None);
        from_event(
            br#"{"type":"message_start","message":{}}"#,
            &mut text,
            &mut seen,
        );
        from_event(
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            &mut text,
            &mut seen,
        );
        from_event(
            br#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            &mut text,
            &mut seen,
        );
        assert_eq!((text.as_str(), seen), ("Hi", Some(Format::Anthropic)));

        let (mut text, mut seen) = (String::new(), None);
        from_event(
            br#"{"type":"response.output_text.delta","delta":"Yo"}"#,
            &mut text,
            &mut seen,
        );
        assert_eq!((text.as_str(), seen), ("Yo", Some(Format::OpenAiResponses)));

        let mut text = String::new();
        from_document(
            &json!({"content": [{"type": "text", "text": "A"}, {"type": "tool_use", "name": "x"}], "role": "assistant"}),
            &mut text,
        );
        from_document(
            &json!({"choices": [{"message": {"content": "B"}}]}),
            &mut text,
        );
        from_document(
            &json!({"output": [{"type": "message", "content": [{"type": "output_text", "text": "C"}]}]}),
            &mut text,
        );
        assert_eq!(text, "ABC");
    }
}
