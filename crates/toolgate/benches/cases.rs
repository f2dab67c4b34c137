//! The payloads the detect benchmark reads: one capture per wire format
//! and framing, plus a synthetic long agent trajectory.

use std::path::Path;

/// One capture per format and framing, plus a synthetic long conversation.
pub(crate) const CASES: [(&str, &str); 16] = [
    (
        "openai_chat",
        "openai-chat/nonstream-parallel-weather-stock.json",
    ),
    (
        "openai_chat_long_args",
        "openai-chat/nonstream-mistral-long-unicode-args.json",
    ),
    (
        "openai_chat_sse",
        "openai-chat/stream-parallel-weather-stock.sse",
    ),
    (
        "openai_responses",
        "openai-responses/nonstream-reasoning-5-parallel-calls.json",
    ),
    (
        "openai_responses_sse",
        "openai-responses/stream-parallel-two-calls.sse",
    ),
    (
        "anthropic",
        "anthropic/nonstream-text-and-4-parallel-tool-use.json",
    ),
    ("anthropic_sse", "anthropic/stream-text-then-tool-use.sse"),
    (
        "anthropic_conversation",
        "conversations/anthropic-4-parallel-tool-results.json",
    ),
    ("bedrock", "bedrock/converse-text-then-tool.json"),
    (
        "bedrock_stream",
        "bedrock/converse-stream-text-then-tool.jsonl",
    ),
    ("gemini", "gemini/nonstream-parallel-no-arg-calls.json"),
    (
        "gemini_sse_partial_args",
        "gemini/stream-sse-partial-args-nested-unicode.sse",
    ),
    (
        "vercel_ai",
        "vercel-ai/ai-sdk-parallel-tool-calls-multi-round.json",
    ),
    ("mcp", "mcp/tools-call-request.json"),
    (
        "openai_chat_conversation",
        "conversations/openai-chat-two-sequential-tool-calls.json",
    ),
    ("synthetic_agent_trajectory", ""),
];

pub(crate) fn load(relative: &str) -> Vec<u8> {
    if relative.is_empty() {
        return trajectory();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    std::fs::read(root.join(relative)).expect("fixture")
}

/// An OpenAI Chat request of 40 turns: assistant calls with nested
/// arguments, tool results, user messages; about 20 KB.
fn trajectory() -> Vec<u8> {
    let mut messages = vec![serde_json::json!({"role": "system", "content": "You are an agent."})];
    for turn in 0..40 {
        let args = serde_json::json!({
            "query": format!("orders for customer c-{turn}"),
            "filters": {"status": ["open", "late"], "limit": 10 + turn, "since": "2026-01-01T00:00:00Z"},
            "fields": ["id", "total", "currency"]
        });
        messages.push(
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("call_{turn}"), "type": "function",
                 "function": {"name": "search_orders", "arguments": args.to_string()}}
            ]}),
        );
        messages.push(
            serde_json::json!({"role": "tool", "tool_call_id": format!("call_{turn}"),
            "content": "[{\"id\":\"o-1\",\"total\":12.5,\"currency\":\"EUR\"}]"}),
        );
        messages.push(serde_json::json!({"role": "user", "content": "next one, please"}));
    }
    serde_json::to_vec(&serde_json::json!({"model": "gpt-4o", "messages": messages})).unwrap()
}
