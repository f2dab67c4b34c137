//! A mock agent on loopback for `toolgate test`: `POST
//! /{format}/{behaviour}/chat` (or `/{format}/chat`, behaviour `ok`)
//! answers with a call of each tool the request declares (`tools[].name`),
//! in order, as
//!
//! - `openai`: an OpenAI Chat Completions stream: each call's id and name
//!   on its first fragment, its arguments split across three deltas;
//! - `anthropic`: an Anthropic Messages stream (`input_json_delta`s);
//! - `responses`: an OpenAI Responses stream;
//! - `json`: a whole Chat Completions answer.
//!
//! Behaviours: `ok`; `partial` (the first declared tool only); `reversed`;
//! `reckless` (a `delete_account` call first); `wrongargs` (other argument
//! values); `slow` (like `ok`, 300 ms late); `broken` (a stream that ends in
//! the middle of the first call's arguments); `gather-K` (held until four `gather`
//! requests are in at once, then answered K × 100 ms later); `pair`
//! (held until two `pair` requests are in at once); `after-pair` (held,
//! uncounted, until two `pair` requests are in). A held request that is
//! never released gets HTTP 503 after 10 s. A request without tools gets text only.
//! A request with an `Authorization` header other than `Bearer
//! secret-key` gets HTTP 401. Every request is counted.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

/// A running mock agent.
pub(crate) struct Agent {
    pub(crate) addr: SocketAddr,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    requests: AtomicUsize,
    gathered: AtomicUsize,
}

impl Agent {
    /// Start an agent on a free loopback port, on a thread of its own.
    pub(crate) fn start() -> Agent {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let state = Arc::clone(&counts);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let app = Router::new()
                    .route("/{format}/chat", post(ok).get(ok))
                    .route("/{format}/{behaviour}/chat", post(answer).get(answer))
                    .with_state(state);
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        Agent { addr, counts }
    }

    /// `http://127.0.0.1:PORT/{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// Requests received so far.
    pub(crate) fn requests(&self) -> usize {
        self.counts.requests.load(Ordering::SeqCst)
    }
}

async fn ok(
    State(count): State<Arc<Counts>>,
    Path(format): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(&count, &format, "ok", &headers, &body).await
}

async fn answer(
    State(count): State<Arc<Counts>>,
    Path((format, behaviour)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(&count, &format, &behaviour, &headers, &body).await
}

async fn respond(
    count: &Counts,
    format: &str,
    behaviour: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    count.requests.fetch_add(1, Ordering::SeqCst);
    // How many requests must be in together, and whether this one counts.
    let gather = match behaviour {
        "pair" => Some((2, true)),
        "after-pair" => Some((2, false)),
        _ if behaviour.starts_with("gather-") => Some((4, true)),
        _ => None,
    };
    if let Some((together, counts)) = gather {
        if counts {
            count.gathered.fetch_add(1, Ordering::SeqCst);
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while count.gathered.load(Ordering::SeqCst) < together {
            if tokio::time::Instant::now() > deadline {
                return (StatusCode::SERVICE_UNAVAILABLE, "alone").into_response();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    if let Some(k) = behaviour.strip_prefix("gather-") {
        let k: u64 = k.parse().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(100 * k)).await;
    }
    if let Some(auth) = headers.get(header::AUTHORIZATION) {
        if auth != "Bearer secret-key" {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"error": {"message": "bad key"}}"#,
            )
                .into_response();
        }
    }
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            tool.get("name")
                .or_else(|| tool.pointer("/function/name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    match behaviour {
        "partial" => names.truncate(1),
        "reversed" => names.reverse(),
        "reckless" => names.insert(0, "delete_account".into()),
        "slow" => tokio::time::sleep(Duration::from_millis(300)).await,
        _ => {}
    }
    let calls: Vec<(String, String, String)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let args = arguments(name, behaviour == "wrongargs").to_string();
            (format!("call_{}", i + 1), name.clone(), args)
        })
        .collect();
    let (content_type, mut text) = match format {
        "openai" => ("text/event-stream", openai(&calls)),
        "anthropic" => ("text/event-stream", anthropic(&calls)),
        "responses" => ("text/event-stream", responses(&calls)),
        "json" => ("application/json", whole(&calls)),
        _ => return (StatusCode::NOT_FOUND, "no such format").into_response(),
    };
    if behaviour == "broken" {
        // The stream ends after the first fragment of the first call's
        // arguments, between two events.
        let cut = text.find("\"arguments\":\"{").unwrap_or(0);
        let cut = text[cut..]
            .find("\n\n")
            .map_or(text.len(), |end| cut + end + 2);
        text.truncate(cut);
    }
    ([(header::CONTENT_TYPE, content_type)], text).into_response()
}

const TEXT: [&str; 2] = ["On it", ", one moment."];

fn arguments(name: &str, wrong: bool) -> Value {
    match (name, wrong) {
        ("search_orders", false) => json!({"order_id": "12345"}),
        ("search_orders", true) => json!({"order_id": "99999"}),
        ("search_database", false) => json!({"table": "users", "limit": 10}),
        ("search_database", true) => json!({"table": "orders", "limit": 5}),
        ("search_users", false) => json!({"limit": 10}),
        ("search_users", true) => json!({"limit": 50}),
        ("send_email", _) => json!({"to": "user@example.com", "subject": "Your order"}),
        ("search_calendar", _) => json!({"date": "tomorrow"}),
        ("create_event", _) => json!({"title": "Meeting", "start": "14:00"}),
        ("delete_account", _) => json!({"user_id": "u-1"}),
        _ => json!({"step": name}),
    }
}

/// Three pieces of a text, cut at character boundaries.
fn thirds(text: &str) -> [&str; 3] {
    let cut = |mut at: usize| {
        while !text.is_char_boundary(at) {
            at += 1;
        }
        at
    };
    let (a, b) = (cut(text.len() / 3), cut(2 * text.len() / 3));
    [&text[..a], &text[a..b], &text[b..]]
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

fn openai(calls: &[(String, String, String)]) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
               "model": "mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut out = sse(
        None,
        &chunk(json!({"role": "assistant", "content": ""}), Value::Null),
    );
    for part in TEXT {
        out += &sse(None, &chunk(json!({"content": part}), Value::Null));
    }
    for (at, (id, name, args)) in calls.iter().enumerate() {
        out += &sse(
            None,
            &chunk(
                json!({"tool_calls": [{"index": at, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ),
        );
        for part in thirds(args) {
            out += &sse(
                None,
                &chunk(
                    json!({"tool_calls": [{"index": at, "function": {"arguments": part}}]}),
                    Value::Null,
                ),
            );
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out += &sse(None, &chunk(json!({}), json!(finish)));
    out + "data: [DONE]\n\n"
}

fn anthropic(calls: &[(String, String, String)]) -> String {
    let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "mock",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}});
    let mut out = sse(
        Some("message_start"),
        &json!({"type": "message_start", "message": message}),
    );
    out += &sse(
        Some("content_block_start"),
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for part in TEXT {
        out += &sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}),
        );
    }
    out += &sse(
        Some("content_block_stop"),
        &json!({"type": "content_block_stop", "index": 0}),
    );
    for (at, (id, name, args)) in calls.iter().enumerate() {
        let index = at + 1;
        out += &sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        for part in thirds(args) {
            out += &sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
            );
        }
        out += &sse(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": index}),
        );
    }
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    out += &sse(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 10}}),
    );
    out + &sse(Some("message_stop"), &json!({"type": "message_stop"}))
}

fn responses(calls: &[(String, String, String)]) -> String {
    let text = TEXT.concat();
    let message = json!({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]});
    let mut output = vec![message.clone()];
    for (id, name, args) in calls {
        output.push(
            json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id,
            "name": name, "arguments": args, "status": "completed"}),
        );
    }
    let whole = json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "model": "mock", "output": output});
    let mut seq = 0;
    let mut out = String::new();
    let mut event = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        out += &sse(Some(name), &data);
    };
    let mut created = whole.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    event("response.created", json!({"response": created}));
    event(
        "response.output_item.added",
        json!({"output_index": 0, "item": {"type": "message", "id": "msg_1",
            "status": "in_progress", "role": "assistant", "content": []}}),
    );
    for part in TEXT {
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": part}),
        );
    }
    event(
        "response.output_item.done",
        json!({"output_index": 0, "item": message}),
    );
    for (at, (id, name, args)) in calls.iter().enumerate() {
        let index = at + 1;
        let item_id = format!("fc_{id}");
        event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"type": "function_call", "id": item_id,
                "call_id": id, "name": name, "arguments": "", "status": "in_progress"}}),
        );
        for part in thirds(args) {
            event(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": part}),
            );
        }
        event(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": index, "arguments": args}),
        );
        event(
            "response.output_item.done",
            json!({"output_index": index, "item": whole["output"][index]}),
        );
    }
    event("response.completed", json!({"response": whole}));
    out
}

fn whole(calls: &[(String, String, String)]) -> String {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": TEXT.concat()});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "mock",
        "choices": [{"index": 0, "message": message,
            "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}]})
    .to_string()
}
