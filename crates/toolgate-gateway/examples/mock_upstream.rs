//! A fast local stand-in for the OpenAI and Anthropic APIs, for the README
//! demo, the SDK tests and the load benchmark.
//!
//! ```sh
//! cargo run -p toolgate-gateway --example mock_upstream -- 127.0.0.1:9000
//! ```
//!
//! `POST /v1/chat/completions`, `/v1/responses` and `/v1/messages` answer in
//! each API's wire format (a whole body, or a `text/event-stream` when the
//! request says `"stream": true`). The request's `model` picks the answer:
//!
//! - `text`: a text-only answer;
//! - `valid` (or anything else): text, then a call `get_weather` with
//!   `{"city": "Paris"}`;
//! - `invalid`: a call `get_weather` with `{"town": "Paris"}` (no `city`);
//! - `forbidden`: a call `delete_user` with `{"user_id": "u-1"}`;
//! - `parallel-one-bad`: `get_weather` `{"city": "Paris"}` and
//!   `delete_user` in one turn.
//!
//! A request whose last message is a tool result gets a text answer (the
//! model read the result, or toolgate's feedback). Streams send each event
//! as its own chunk, `MOCK_PAUSE_MS` apart (default 0).

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use axum::Router;
use serde_json::{json, Value};

#[derive(Clone, Copy)]
enum Api {
    Chat,
    Responses,
    Messages,
}

#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Text,
    Valid,
    Invalid,
    Forbidden,
    ParallelOneBad,
}

impl Answer {
    fn of(request: &Value) -> Answer {
        if answers_a_tool_result(request) {
            return Answer::Text;
        }
        match request.get("model").and_then(Value::as_str).unwrap_or("") {
            "text" => Answer::Text,
            "invalid" => Answer::Invalid,
            "forbidden" => Answer::Forbidden,
            "parallel-one-bad" => Answer::ParallelOneBad,
            _ => Answer::Valid,
        }
    }

    /// `(id, name, arguments)` of each call.
    fn calls(self) -> Vec<(&'static str, &'static str, Value)> {
        let weather = ("call_1", "get_weather", json!({"city": "Paris"}));
        match self {
            Answer::Text => vec![],
            Answer::Valid => vec![weather],
            Answer::Invalid => vec![("call_1", "get_weather", json!({"town": "Paris"}))],
            Answer::Forbidden => vec![("call_1", "delete_user", json!({"user_id": "u-1"}))],
            Answer::ParallelOneBad => vec![
                weather,
                ("call_2", "delete_user", json!({"user_id": "u-1"})),
            ],
        }
    }
}

const TEXT: [&str; 3] = ["Let me ", "check that ", "for you."];

fn answers_a_tool_result(request: &Value) -> bool {
    let last = request
        .get("messages")
        .or_else(|| request.get("input"))
        .and_then(Value::as_array)
        .and_then(|items| items.last());
    let Some(last) = last else { return false };
    last.get("role").and_then(Value::as_str) == Some("tool")
        || last.get("type").and_then(Value::as_str) == Some("function_call_output")
        || last
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            })
}

fn body(api: Api, answer: Answer) -> Value {
    let calls = answer.calls();
    let text: String = TEXT.concat();
    match api {
        Api::Chat => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"id": id, "type": "function",
                           "function": {"name": name, "arguments": args.to_string()}})
                })
                .collect();
            let mut message = json!({"role": "assistant", "content": text, "refusal": null});
            if !tool_calls.is_empty() {
                message["tool_calls"] = Value::Array(tool_calls);
            }
            json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 1_700_000_000,
                   "model": "mock", "choices": [{"index": 0, "message": message, "logprobs": null,
                   "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})
        }
        Api::Responses => {
            let mut output = vec![
                json!({"type": "message", "id": "msg_mock", "status": "completed",
                "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}),
            ];
            for (id, name, args) in &calls {
                output.push(
                    json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id,
                    "name": name, "arguments": args.to_string(), "status": "completed"}),
                );
            }
            json!({"id": "resp_mock", "object": "response", "created_at": 1_700_000_000,
                   "status": "completed", "model": "mock", "output": output,
                   "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
                   "usage": {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20,
                             "input_tokens_details": {"cached_tokens": 0},
                             "output_tokens_details": {"reasoning_tokens": 0}}})
        }
        Api::Messages => {
            let mut content = vec![json!({"type": "text", "text": text})];
            for (id, name, args) in &calls {
                content.push(json!({"type": "tool_use", "id": id, "name": name, "input": args}));
            }
            json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": "mock",
                   "content": content,
                   "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
                   "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 10}})
        }
    }
}

fn sse(event: Option<&str>, data: &Value) -> Vec<u8> {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n").into_bytes(),
        None => format!("data: {data}\n\n").into_bytes(),
    }
}

/// Split a JSON text in two, as models stream arguments.
fn halves(text: &str) -> (&str, &str) {
    let mut at = text.len() / 2;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    text.split_at(at)
}

fn events(api: Api, answer: Answer) -> Vec<Vec<u8>> {
    match api {
        Api::Chat => chat_events(answer),
        Api::Responses => responses_events(answer),
        Api::Messages => messages_events(answer),
    }
}

fn chat_events(answer: Answer) -> Vec<Vec<u8>> {
    let calls = answer.calls();
    let mut out = Vec::new();
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_700_000_000,
               "model": "mock", "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    };
    out.push(sse(
        None,
        &chunk(json!({"role": "assistant", "content": ""}), Value::Null),
    ));
    for part in TEXT {
        out.push(sse(None, &chunk(json!({"content": part}), Value::Null)));
    }
    for (at, (id, name, args)) in calls.iter().enumerate() {
        let text = args.to_string();
        let (a, b) = halves(&text);
        out.push(sse(
            None,
            &chunk(
                json!({"tool_calls": [{"index": at, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ),
        ));
        for part in [a, b] {
            out.push(sse(
                None,
                &chunk(
                    json!({"tool_calls": [{"index": at, "function": {"arguments": part}}]}),
                    Value::Null,
                ),
            ));
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push(sse(None, &chunk(json!({}), json!(finish))));
    out.push(b"data: [DONE]\n\n".to_vec());
    out
}

fn responses_events(answer: Answer) -> Vec<Vec<u8>> {
    let calls = answer.calls();
    let mut out = Vec::new();
    let whole = body(Api::Responses, answer);
    let mut seq = 0;
    let mut event = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        sse(Some(name), &data)
    };
    let mut created = whole.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    out.push(event("response.created", json!({"response": created})));
    out.push(event("response.output_item.added", json!({"output_index": 0,
        "item": {"type": "message", "id": "msg_mock", "status": "in_progress", "role": "assistant", "content": []}})));
    out.push(event(
        "response.content_part.added",
        json!({"item_id": "msg_mock", "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": "", "annotations": []}}),
    ));
    for part in TEXT {
        out.push(event(
            "response.output_text.delta",
            json!({"item_id": "msg_mock", "output_index": 0,
            "content_index": 0, "delta": part, "logprobs": []}),
        ));
    }
    out.push(event(
        "response.output_text.done",
        json!({"item_id": "msg_mock", "output_index": 0, "content_index": 0,
               "text": TEXT.concat(), "logprobs": []}),
    ));
    out.push(event(
        "response.content_part.done",
        json!({"item_id": "msg_mock", "output_index": 0, "content_index": 0,
               "part": whole["output"][0]["content"][0]}),
    ));
    out.push(event(
        "response.output_item.done",
        json!({"output_index": 0, "item": whole["output"][0]}),
    ));
    for (at, (id, name, args)) in calls.iter().enumerate() {
        let index = at + 1;
        let item_id = format!("fc_{id}");
        out.push(event("response.output_item.added", json!({"output_index": index,
            "item": {"type": "function_call", "id": item_id, "call_id": id, "name": name, "arguments": "", "status": "in_progress"}})));
        let text = args.to_string();
        let (a, b) = halves(&text);
        for part in [a, b] {
            out.push(event(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id,
                "output_index": index, "delta": part}),
            ));
        }
        out.push(event(
            "response.function_call_arguments.done",
            json!({"item_id": item_id,
            "output_index": index, "arguments": text, "name": name}),
        ));
        out.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": whole["output"][index]}),
        ));
    }
    out.push(event("response.completed", json!({"response": whole})));
    out
}

fn messages_events(answer: Answer) -> Vec<Vec<u8>> {
    let calls = answer.calls();
    let mut out = Vec::new();
    let mut start = body(Api::Messages, answer);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    out.push(sse(
        Some("message_start"),
        &json!({"type": "message_start", "message": start}),
    ));
    out.push(sse(
        Some("content_block_start"),
        &json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}}),
    ));
    for part in TEXT {
        out.push(sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": part}}),
        ));
    }
    out.push(sse(
        Some("content_block_stop"),
        &json!({"type": "content_block_stop", "index": 0}),
    ));
    for (at, (id, name, args)) in calls.iter().enumerate() {
        let index = at + 1;
        out.push(sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ));
        let text = args.to_string();
        let (a, b) = halves(&text);
        for part in [a, b] {
            out.push(sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": part}}),
            ));
        }
        out.push(sse(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    out.push(sse(
        Some("message_delta"),
        &json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}}),
    ));
    out.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
    out
}

fn handle(api: Api, pause: Duration, request: &[u8]) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(request) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let answer = Answer::of(&request);
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        let chunks = events(api, answer);
        let stream = futures_util::stream::unfold(chunks.into_iter(), move |mut rest| async move {
            let chunk = rest.next()?;
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            Some((Ok::<_, std::convert::Infallible>(Bytes::from(chunk)), rest))
        });
        return (
            [(header::CONTENT_TYPE, "text/event-stream")],
            Body::from_stream(stream),
        )
            .into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        body(api, answer).to_string(),
    )
        .into_response()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9000".to_owned());
    let pause = Duration::from_millis(
        std::env::var("MOCK_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    );
    let app = Router::new()
        .route(
            "/v1/chat/completions",
            post(move |b: Bytes| async move { handle(Api::Chat, pause, &b) }),
        )
        .route(
            "/v1/responses",
            post(move |b: Bytes| async move { handle(Api::Responses, pause, &b) }),
        )
        .route(
            "/v1/messages",
            post(move |b: Bytes| async move { handle(Api::Messages, pause, &b) }),
        );
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    eprintln!(
        "mock upstream: listening on http://{}",
        listener.local_addr()?
    );
    // Each event leaves at once, as from a real API: without TCP_NODELAY,
    // an event written while the last one waits for its ACK is held until
    // the client's delayed ACK (up to 40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await
}
