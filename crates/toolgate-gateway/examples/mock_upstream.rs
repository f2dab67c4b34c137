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
//!
//! Request headers change how it answers (toolgate passes the client's
//! headers upstream, so an SDK's `extra_headers` reach the mock):
//!
//! - `x-mock-encoding: gzip|x-gzip|deflate|br|zstd` (or a list such as
//!   `gzip, br`, applied in order): the answer is compressed with it and
//!   labelled `Content-Encoding: <value>`, whatever the request's
//!   `Accept-Encoding` says; a stream is flushed after every event;
//! - `x-mock-error: overloaded`: the provider's own overloaded error
//!   instead of an answer, HTTP 529 on `/v1/messages` (Anthropic's
//!   `overloaded_error`), 503 on the OpenAI routes (`server_error`);
//! - `x-mock-status: N`: the answer (or the error) with status `N`;
//! - `x-mock-stream-error: overloaded`: a stream that sends its text, then
//!   the provider's own stream error event (Anthropic `event: error` with
//!   `overloaded_error`, Chat Completions `data: {"error": ...}`, Responses
//!   `event: error` with `{"type": "error", ...}`), then ends.

use std::io::Write;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
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

/// How the request's `x-mock-*` headers change the answer.
struct Twists {
    /// The `Content-Encoding` label and the codecs it names, in order.
    encoding: Option<(String, Vec<Codec>)>,
    status: Option<StatusCode>,
    /// `x-mock-error: overloaded`.
    overloaded: bool,
    /// `x-mock-stream-error: overloaded`.
    stream_overloaded: bool,
}

impl Twists {
    fn read(headers: &HeaderMap) -> Result<Twists, String> {
        let text = |name: &str| {
            headers
                .get(name)
                .map(|v| {
                    v.to_str()
                        .map(str::trim)
                        .map_err(|_| format!("{name}: not text"))
                })
                .transpose()
        };
        let encoding = match text("x-mock-encoding")? {
            None => None,
            Some(label) => {
                let codecs = label
                    .split(',')
                    .map(|name| match name.trim().to_ascii_lowercase().as_str() {
                        "gzip" | "x-gzip" => Ok(Codec::Gzip),
                        "deflate" => Ok(Codec::Deflate),
                        "br" => Ok(Codec::Br),
                        "zstd" => Ok(Codec::Zstd),
                        other => Err(format!("x-mock-encoding: unknown coding `{other}`")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some((label.to_owned(), codecs))
            }
        };
        let status = match text("x-mock-status")? {
            None => None,
            Some(code) => Some(
                code.parse::<u16>()
                    .ok()
                    .and_then(|n| StatusCode::from_u16(n).ok())
                    .ok_or_else(|| format!("x-mock-status: `{code}` is no status"))?,
            ),
        };
        let kind = |name: &str| match text(name)? {
            None => Ok(false),
            Some("overloaded") => Ok(true),
            Some(other) => Err(format!("{name}: unknown error `{other}`")),
        };
        Ok(Twists {
            encoding,
            status,
            overloaded: kind("x-mock-error")?,
            stream_overloaded: kind("x-mock-stream-error")?,
        })
    }
}

/// One compression algorithm of `x-mock-encoding`.
#[derive(Clone, Copy)]
enum Codec {
    Gzip,
    /// HTTP's `deflate`: the zlib format.
    Deflate,
    Br,
    Zstd,
}

/// A streaming compressor writing into memory.
enum Encoder {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Deflate(flate2::write::ZlibEncoder<Vec<u8>>),
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    fn new(codec: Codec) -> std::io::Result<Encoder> {
        let level = flate2::Compression::fast();
        Ok(match codec {
            Codec::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(Vec::new(), level)),
            Codec::Deflate => Encoder::Deflate(flate2::write::ZlibEncoder::new(Vec::new(), level)),
            Codec::Br => Encoder::Br(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                4096,
                5,
                20,
            ))),
            Codec::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(Vec::new(), 3)?),
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Encoder::Gzip(e) => e,
            Encoder::Deflate(e) => e,
            Encoder::Br(e) => e.as_mut(),
            Encoder::Zstd(e) => e,
        }
    }

    fn output(&mut self) -> &mut Vec<u8> {
        match self {
            Encoder::Gzip(e) => e.get_mut(),
            Encoder::Deflate(e) => e.get_mut(),
            Encoder::Br(e) => e.get_mut(),
            Encoder::Zstd(e) => e.get_mut(),
        }
    }

    /// Compress `bytes`, flush, and take what came out.
    fn push(&mut self, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        self.writer().write_all(bytes)?;
        self.writer().flush()?;
        Ok(std::mem::take(self.output()))
    }

    /// Compress `bytes`, end the coded stream, and take what came out.
    fn finish(mut self, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        self.writer().write_all(bytes)?;
        match self {
            Encoder::Gzip(e) => e.finish(),
            Encoder::Deflate(e) => e.finish(),
            Encoder::Br(e) => Ok(e.into_inner()),
            Encoder::Zstd(e) => e.finish(),
        }
    }
}

/// `chunks` coded with `codecs` in order, each flushed, the codings' ends
/// in the last.
fn encode(codecs: &[Codec], chunks: Vec<Vec<u8>>) -> std::io::Result<Vec<Vec<u8>>> {
    let mut encoders = codecs
        .iter()
        .map(|&c| Encoder::new(c))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let mut bytes = chunk;
        for encoder in &mut encoders {
            bytes = encoder.push(&bytes)?;
        }
        out.push(bytes);
    }
    let mut end = Vec::new();
    for encoder in encoders {
        end = encoder.finish(&end)?;
    }
    match out.last_mut() {
        Some(last) => last.extend_from_slice(&end),
        None => out.push(end),
    }
    Ok(out)
}

const OVERLOADED_OPENAI: &str = "The server is overloaded or not ready yet.";

/// The provider's own overloaded error: its status and body.
fn overloaded(api: Api) -> (StatusCode, Value) {
    match api {
        Api::Chat | Api::Responses => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"error": {"message": OVERLOADED_OPENAI, "type": "server_error", "param": null, "code": null}}),
        ),
        Api::Messages => (
            StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                   "request_id": "req_mock"}),
        ),
    }
}

/// The text events of a stream, then the provider's own error event.
fn overloaded_events(api: Api) -> Vec<Vec<u8>> {
    let mut out = events(api, Answer::Text);
    // Up to the last text delta: the model started to answer, then failed.
    let text = match api {
        // The role chunk, three text chunks.
        Api::Chat => 4,
        // response.created, output_item.added, content_part.added, three deltas.
        Api::Responses => 6,
        // message_start, content_block_start, three deltas.
        Api::Messages => 5,
    };
    out.truncate(text);
    out.push(match api {
        Api::Chat => sse(
            None,
            &json!({"error": {"message": OVERLOADED_OPENAI, "type": "server_error", "param": null, "code": null}}),
        ),
        Api::Responses => sse(
            Some("error"),
            &json!({"type": "error", "code": "server_error", "message": OVERLOADED_OPENAI,
                    "param": null, "sequence_number": text}),
        ),
        Api::Messages => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    });
    out
}

fn handle(api: Api, pause: Duration, headers: &HeaderMap, request: &[u8]) -> Response {
    let twists = match Twists::read(headers) {
        Ok(twists) => twists,
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
    };
    let Ok(request) = serde_json::from_slice::<Value>(request) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let answer = Answer::of(&request);
    let stream = request.get("stream").and_then(Value::as_bool) == Some(true);
    let (mut status, content_type, chunks) = if twists.overloaded {
        let (status, body) = overloaded(api);
        (
            status,
            "application/json",
            vec![body.to_string().into_bytes()],
        )
    } else if stream {
        let chunks = if twists.stream_overloaded {
            overloaded_events(api)
        } else {
            events(api, answer)
        };
        (StatusCode::OK, "text/event-stream", chunks)
    } else {
        let body = body(api, answer).to_string().into_bytes();
        (StatusCode::OK, "application/json", vec![body])
    };
    if let Some(forced) = twists.status {
        status = forced;
    }
    let mut chunks = chunks;
    let mut response_headers = HeaderMap::new();
    response_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some((label, codecs)) = &twists.encoding {
        chunks = match encode(codecs, chunks) {
            Ok(chunks) => chunks,
            Err(err) => {
                return (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response()
            }
        };
        if let Ok(value) = HeaderValue::from_str(label) {
            response_headers.insert(header::CONTENT_ENCODING, value);
        }
    }
    let body = if stream && !twists.overloaded {
        let stream = futures_util::stream::unfold(chunks.into_iter(), move |mut rest| async move {
            let chunk = rest.next()?;
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            Some((Ok::<_, std::convert::Infallible>(Bytes::from(chunk)), rest))
        });
        Body::from_stream(stream)
    } else {
        Body::from(chunks.concat())
    };
    (status, response_headers, body).into_response()
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
            post(move |h: HeaderMap, b: Bytes| async move { handle(Api::Chat, pause, &h, &b) }),
        )
        .route(
            "/v1/responses",
            post(
                move |h: HeaderMap, b: Bytes| async move { handle(Api::Responses, pause, &h, &b) },
            ),
        )
        .route(
            "/v1/messages",
            post(move |h: HeaderMap, b: Bytes| async move { handle(Api::Messages, pause, &h, &b) }),
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
