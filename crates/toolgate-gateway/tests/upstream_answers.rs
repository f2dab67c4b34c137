//! What the upstream answers, beyond a plain 200 JSON or SSE body: each
//! rule checked from outside, on every route.
//!
//! - The gateway asks for `Accept-Encoding: identity` and decodes gzip,
//!   deflate, br and zstd (alone, chained, in any case): the client gets
//!   the decoded answer, with no `Content-Encoding`.
//! - An upstream error that carries no call (a non-2xx body, a 200
//!   `{"error": ...}` body, a stream's own error event) reaches the client
//!   as the upstream sent it, never renamed `guardrails_violation`.
//! - Headers the gateway owns (`x-toolgate-*`) never come from the
//!   upstream.
//! - A Responses `mcp_approval_request` is a call; an
//!   `mcp_approval_response` for an id the gateway never released is
//!   refused before the upstream sees it.
//! - A whole JSON body labelled `text/event-stream`, and a stream event the
//!   gateway cannot read, are blocked.
//! - A blocked stream's code does not depend on how the upstream's bytes
//!   are cut into chunks.
//!
//! Each test runs all its cases and reports every failing one at once.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::support::answers::{error_object, leak_problems, type_and_code, Received};
use crate::support::{
    client, gateway, key, sse_event, Coding, Reply, Route, Running, Upstream, KEYS, REPLY_TAG,
    REQUEST_ID,
};

const SSE: Option<&str> = Some("text/event-stream");
const JSON: Option<&str> = Some("application/json");
const POLICY: &str = "forbidden: [delete_user]";
/// The comment that carries a released stream's keys.
const KEYS_COMMENT: &str = ": x-toolgate-idempotency-keys: ";

/// A request kind: a whole answer, or a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Whole,
    Stream,
}

const KINDS: [Kind; 2] = [Kind::Whole, Kind::Stream];

impl Kind {
    fn request(self, route: Route) -> String {
        match self {
            Kind::Whole => route.request(),
            Kind::Stream => route.stream_request(),
        }
    }
}

/// POST `body` on `route` with these headers (and the reply tag), and read
/// the whole answer.
async fn send(
    http: &reqwest::Client,
    gw: &Running,
    route: Route,
    tag: &str,
    body: String,
    headers: &[(&str, &str)],
) -> Received {
    let mut request = http
        .post(gw.url(route.path()))
        .header("content-type", "application/json")
        .header(REPLY_TAG, tag);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Received::read(request.body(body).send().await.unwrap()).await
}

/// Assert that no case failed; list them all.
fn assert_none_failed(what: &str, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{what}: {} failing case(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// A released stream's text without its keys comment, and the keys.
fn without_keys_comment(text: &str) -> (String, Option<String>) {
    let Some(at) = text.find(KEYS_COMMENT) else {
        return (text.to_owned(), None);
    };
    let end = at + text[at..].find('\n').map_or(text.len() - at, |n| n + 1);
    let keys = text[at + KEYS_COMMENT.len()..end].trim_end().to_owned();
    (format!("{}{}", &text[..at], &text[end..]), Some(keys))
}

// ---------------------------------------------------------------------
// Content codings
// ---------------------------------------------------------------------

#[tokio::test]
async fn the_gateway_asks_the_upstream_for_identity() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    for route in Route::ALL {
        for kind in KINDS {
            let tag = format!("{route:?}-{kind:?}");
            let content = match kind {
                Kind::Whole => vec![route.text("Hello.")],
                Kind::Stream => route.events("Hello.", &[]),
            };
            let content_type = if kind == Kind::Whole { JSON } else { SSE };
            upstream.reply_to(
                &tag,
                Reply::coded(200, content_type, &Coding::NONE, &content),
            );
            // What an SDK's HTTP client sends.
            let headers = [("accept-encoding", "gzip, deflate, br, zstd")];
            send(&http, &gw, route, &tag, kind.request(route), &headers).await;
            let seen = upstream.seen_tagged(&tag);
            let asked: Vec<String> = seen[0]
                .headers
                .get_all("accept-encoding")
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect();
            if asked != ["identity"] {
                failures.push(format!(
                    "{route:?} {kind:?}: Accept-Encoding sent upstream: {asked:?}"
                ));
            }
        }
    }
    assert_none_failed("Accept-Encoding: identity upstream", &failures);
}

#[tokio::test]
async fn compressed_valid_answers_reach_the_client_decoded() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let weather = ("get_weather", r#"{"city":"Paris"}"#);
    let mut failures = Vec::new();
    for route in Route::ALL {
        for kind in KINDS {
            // Each coding a client can read (`none` and `identity` the
            // controls) must reach it decoded.
            for coding in Coding::ALL.iter().filter(|c| c.readable()) {
                let case = format!("{route:?} {kind:?} {}", coding.name);
                let tag = case.replace(' ', "-");
                let request_id = format!("decoded-{}", tag.replace(", ", "-").replace(',', ""));
                let request_id: String = request_id
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                let (content, content_type) = match kind {
                    Kind::Whole => (vec![route.calls(&[weather])], JSON),
                    Kind::Stream => (route.events("Let me check.", &[weather]), SSE),
                };
                upstream.reply_to(&tag, Reply::coded(200, content_type, coding, &content));
                let headers = [
                    (REQUEST_ID, request_id.as_str()),
                    ("accept-encoding", "gzip, deflate, br, zstd"),
                ];
                let got = send(&http, &gw, route, &tag, kind.request(route), &headers).await;
                let expected_key = key(&request_id, "get_weather", &json!({"city": "Paris"}));
                let mut wrong = Vec::new();
                if got.status != 200 {
                    wrong.push(format!("status {}", got.status));
                }
                match got.content_encoding() {
                    None => {}
                    Some(ce) if coding.label == Some("identity") && ce == "identity" => {}
                    Some(ce) => wrong.push(format!("Content-Encoding: {ce}")),
                }
                let plain = String::from_utf8(content.concat()).unwrap();
                match (kind, got.decoded()) {
                    (_, Err(why)) => wrong.push(format!("the client cannot decode it: {why}")),
                    (Kind::Whole, Ok(body)) => {
                        if body != plain.as_bytes() {
                            wrong.push(format!(
                                "body is not the decoded answer: {}",
                                String::from_utf8_lossy(&body)
                            ));
                        }
                        if got.header(KEYS).as_deref() != Some(expected_key.as_str()) {
                            wrong.push(format!("keys header {:?}", got.header(KEYS)));
                        }
                    }
                    (Kind::Stream, Ok(body)) => {
                        if !got.is_sse() {
                            wrong.push(format!("content type {:?}", got.content_type()));
                        }
                        let (events, keys) = without_keys_comment(&String::from_utf8_lossy(&body));
                        if events != plain {
                            wrong.push(format!("stream is not the decoded answer: {events:?}"));
                        }
                        if keys.as_deref() != Some(expected_key.as_str()) {
                            wrong.push(format!("keys comment {keys:?}"));
                        }
                    }
                }
                if !wrong.is_empty() {
                    failures.push(format!("{case}: {}", wrong.join("; ")));
                }
            }
        }
    }
    assert_none_failed("valid coded answers, decoded for the client", &failures);
}

/// Codings whose bodies may come in several members.
const MEMBERED: [Coding; 6] = [
    Coding::GZIP,
    Coding::DEFLATE,
    Coding::BR,
    Coding::ZSTD,
    Coding::GZIP_BR,
    Coding::DEFLATE_ZSTD_CASE,
];

/// `body` in three pieces.
fn thirds(body: &[u8]) -> Vec<Vec<u8>> {
    let third = body.len() / 3;
    vec![
        body[..third].to_vec(),
        body[third..2 * third].to_vec(),
        body[2 * third..].to_vec(),
    ]
}

#[tokio::test]
async fn every_member_of_a_coded_answer_is_decoded() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    for route in Route::ALL {
        for coding in MEMBERED {
            for kind in KINDS {
                let case = format!("{route:?} {kind:?} {}", coding.name);
                let tag = case.replace([' ', ','], "-");
                // A whole body in three members sent at once; a stream
                // with each event a member, sent as it comes.
                let (content, wire, content_type) = match kind {
                    Kind::Whole => {
                        let body = route.text("Hello from several members.");
                        let wire = vec![coding.encode_members(&thirds(&body)).concat()];
                        (body, wire, JSON)
                    }
                    Kind::Stream => {
                        let events = route.events("Hello from several members.", &[]);
                        (events.concat(), coding.encode_members(&events), SSE)
                    }
                };
                upstream.reply_to(&tag, Reply::labelled(200, content_type, &coding, wire));
                let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
                let mut wrong = Vec::new();
                if got.status != 200 {
                    wrong.push(format!("status {}", got.status));
                }
                if got.decoded().ok().as_deref() != Some(&content[..]) {
                    wrong.push(format!(
                        "the answer is not the content [got {}]",
                        got.text()
                    ));
                }
                // A forbidden call in the last member is found and blocked.
                let tag = format!("{tag}-forbidden");
                let body = route.calls(&[("delete_user", &forbidden_args())]);
                let wire = vec![coding.encode_members(&thirds(&body)).concat()];
                upstream.reply_to(&tag, Reply::labelled(200, JSON, &coding, wire));
                let got = send(&http, &gw, route, &tag, Kind::Whole.request(route), &[]).await;
                if got.status != 400 || !got.text().contains("\"forbidden\"") {
                    wrong.push(format!(
                        "the forbidden call is not blocked [got {} {}]",
                        got.status,
                        got.text()
                    ));
                }
                // Bytes after the last member that are no member: blocked,
                // never cut off and released.
                let tag = format!("{tag}-trailing");
                let mut wire = coding.encode_whole(&route.text("Hello."));
                wire.extend_from_slice(b"not a member at all");
                upstream.reply_to(&tag, Reply::labelled(200, JSON, &coding, vec![wire]));
                let got = send(&http, &gw, route, &tag, Kind::Whole.request(route), &[]).await;
                if got.status != 400 || !got.text().contains("malformed_payload") {
                    wrong.push(format!(
                        "trailing bytes are not refused [got {} {}]",
                        got.status,
                        got.text()
                    ));
                }
                if !wrong.is_empty() {
                    failures.push(format!("{case}: {}", wrong.join("; ")));
                }
            }
        }
    }
    assert_none_failed("coded answers in several members", &failures);
}

// ---------------------------------------------------------------------
// Upstream errors pass as sent
// ---------------------------------------------------------------------

/// A provider's own error body for `status`.
fn provider_error(route: Route, status: u16) -> Vec<u8> {
    let (openai, anthropic) = match status {
        400 => (
            ("invalid_request_error", "Invalid value for 'max_tokens'."),
            ("invalid_request_error", "max_tokens: must be at least 1"),
        ),
        401 => (
            ("invalid_request_error", "Incorrect API key provided."),
            ("authentication_error", "invalid x-api-key"),
        ),
        429 => (
            (
                "requests",
                "Rate limit reached for gpt-4o on requests per min.",
            ),
            (
                "rate_limit_error",
                "Number of requests has exceeded your rate limit.",
            ),
        ),
        529 => (
            ("server_error", "Overloaded"),
            ("overloaded_error", "Overloaded"),
        ),
        _ => (
            (
                "server_error",
                "The server had an error while processing your request.",
            ),
            ("api_error", "Internal server error"),
        ),
    };
    let body = if route.is_openai() {
        json!({"error": {"message": openai.1, "type": openai.0, "param": null, "code": null}})
    } else {
        json!({"type": "error", "error": {"type": anthropic.0, "message": anthropic.1},
            "request_id": "req_011CUpstream"})
    };
    body.to_string().into_bytes()
}

/// Check that `got` is exactly what the upstream sent: `status`, the
/// decoded `body`, no `Content-Encoding`, the content type, and no
/// guardrails error.
fn as_sent(
    got: &Received,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    wrong: &mut Vec<String>,
) {
    if got.status != status {
        wrong.push(format!("status {} (sent {status})", got.status));
    }
    if let Some(ce) = got.content_encoding() {
        wrong.push(format!("Content-Encoding: {ce}"));
    }
    if let Some(content_type) = content_type {
        if got.content_type().as_deref() != Some(content_type) {
            wrong.push(format!("content type {:?}", got.content_type()));
        }
    }
    match got.decoded() {
        Err(why) => wrong.push(format!("the client cannot decode it: {why}")),
        Ok(received) if received != body => {
            let text = String::from_utf8_lossy(&received);
            let renamed = if text.contains("guardrails_violation") {
                " (renamed guardrails_violation)"
            } else {
                ""
            };
            wrong.push(format!("body changed{renamed}: {text}"));
        }
        Ok(_) => {}
    }
}

#[tokio::test]
async fn upstream_errors_without_calls_pass_with_their_status_and_body() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    for route in Route::ALL {
        let mut statuses = vec![400, 401, 429, 500, 503];
        if route == Route::Messages {
            statuses.push(529);
        }
        for kind in KINDS {
            for &status in &statuses {
                for coding in [Coding::NONE, Coding::GZIP] {
                    let case = format!("{route:?} {kind:?} {status} {}", coding.name);
                    let tag = case.replace(' ', "-");
                    let body = provider_error(route, status);
                    let reply = Reply::coded(status, JSON, &coding, std::slice::from_ref(&body));
                    upstream.reply_to(&tag, reply);
                    let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
                    let mut wrong = Vec::new();
                    as_sent(&got, status, JSON, &body, &mut wrong);
                    if !wrong.is_empty() {
                        failures.push(format!("{case}: {}", wrong.join("; ")));
                    }
                }
            }
            // The provider's JSON error labelled as a stream: read as the
            // JSON it is, passed with its status and labels.
            let tag = format!("{route:?}-{kind:?}-json-as-sse");
            let body = provider_error(route, 429);
            upstream.reply_to(
                &tag,
                Reply::coded(429, SSE, &Coding::NONE, std::slice::from_ref(&body)),
            );
            let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
            let mut wrong = Vec::new();
            as_sent(&got, 429, SSE, &body, &mut wrong);
            if !wrong.is_empty() {
                failures.push(format!(
                    "{route:?} {kind:?} 429 JSON labelled text/event-stream: {}",
                    wrong.join("; ")
                ));
            }
        }
    }
    let outcomes: Vec<Value> = gw
        .audit_records()
        .iter()
        .map(|r| r["outcome"].clone())
        .collect();
    if outcomes.iter().any(|o| o != "upstream_error") {
        failures.push(format!("audit outcomes {outcomes:?}"));
    }
    assert_none_failed("upstream errors passed as sent", &failures);
}

/// Bodies of an error status the gateway cannot read, each holding a
/// forbidden call with [`SECRET`] in it, with their content types and
/// codings.
fn unreadable_error_bodies(
    route: Route,
) -> Vec<(&'static str, Option<&'static str>, Coding, Vec<u8>)> {
    let call = route.calls(&[("delete_user", &forbidden_args())]);
    let text = String::from_utf8(call.clone()).unwrap();
    let utf16: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let truncated = call[..call.len() - 3].to_vec();
    // The same object twice over: a duplicate key at the top.
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    let duplicated = format!("{{{inner},{inner}}}").into_bytes();
    let html = format!("<html><body><pre>{text}</pre></body></html>").into_bytes();
    vec![
        (
            "UTF-16 JSON",
            Some("application/json; charset=utf-16"),
            Coding::NONE,
            utf16,
        ),
        ("truncated JSON", JSON, Coding::NONE, truncated),
        ("duplicate keys", JSON, Coding::NONE, duplicated),
        (
            "HTML around JSON",
            Some("text/html"),
            Coding::NONE,
            html.clone(),
        ),
        ("HTML labelled a stream", SSE, Coding::NONE, html),
        (
            "plain text",
            Some("text/plain"),
            Coding::NONE,
            b"upstream connect error or disconnect/reset before headers".to_vec(),
        ),
        ("an unknown coding", JSON, Coding::COMPRESS, call),
    ]
}

#[tokio::test]
async fn an_error_body_the_gateway_cannot_read_is_withheld_with_its_status() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    let mut cases = 0;
    for route in Route::ALL {
        for kind in KINDS {
            for (name, content_type, coding, body) in unreadable_error_bodies(route) {
                let tag = format!("{route:?}-{kind:?}-{}", name.replace(' ', "-"));
                let wire = coding.encode(std::slice::from_ref(&body)).concat();
                upstream.reply_to(
                    &tag,
                    Reply::labelled(500, content_type, &coding, vec![wire.clone()]),
                );
                let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
                cases += 1;
                let mut wrong = Vec::new();
                if got.status != 500 {
                    wrong.push(format!("status {}", got.status));
                }
                let text = got.text();
                if text.contains(SECRET) || text.contains("delete_user") {
                    wrong.push("bytes of the body reached the client".to_owned());
                }
                let received: Value = serde_json::from_slice(&got.decoded().unwrap_or_default())
                    .unwrap_or(Value::Null);
                let (kind_of, _) = type_and_code(
                    route,
                    &error_object(route, &received, false).unwrap_or(Value::Null),
                );
                if kind_of != "upstream_error" {
                    wrong.push(format!("error type {kind_of:?}"));
                }
                let shown = content_type.unwrap_or("none");
                let length = format!("{} bytes", wire.len());
                if !text.contains("could not read")
                    || !text.contains(shown)
                    || !text.contains(&length)
                {
                    wrong.push(format!(
                        "the message does not say 500, `{shown}` and {length}"
                    ));
                }
                if !wrong.is_empty() {
                    failures.push(format!("{tag}: {} [got {text}]", wrong.join("; ")));
                }
            }
        }
    }
    let records = gw.audit_records();
    if records.len() != cases || records.iter().any(|r| r["outcome"] != "upstream_error") {
        let outcomes: Vec<&Value> = records.iter().map(|r| &r["outcome"]).collect();
        failures.push(format!("{cases} cases, audit outcomes {outcomes:?}"));
    }
    assert_none_failed("unreadable error bodies", &failures);
}

#[tokio::test]
async fn a_200_error_body_passes_as_sent() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    let openai = json!({"error": {"message": "The server had an error while processing your request.",
        "type": "server_error", "param": null, "code": null}});
    let anthropic = json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}});
    for route in Route::ALL {
        let mut bodies = vec![("{\"error\": ...}", openai.to_string())];
        if route == Route::Messages {
            bodies.push(("Anthropic's error", anthropic.to_string()));
        }
        for kind in KINDS {
            for (name, body) in &bodies {
                let tag = format!("{route:?}-{kind:?}-{}", name.len());
                let body = body.clone().into_bytes();
                upstream.reply_to(
                    &tag,
                    Reply::coded(200, JSON, &Coding::NONE, std::slice::from_ref(&body)),
                );
                let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
                let mut wrong = Vec::new();
                as_sent(&got, 200, JSON, &body, &mut wrong);
                if !wrong.is_empty() {
                    failures.push(format!(
                        "{route:?} {kind:?} 200 {name}: {}",
                        wrong.join("; ")
                    ));
                }
            }
        }
    }
    assert_none_failed("200 error bodies passed as sent", &failures);
}

/// A provider's own stream error event, after `seq` events.
fn stream_error_event(route: Route, seq: usize) -> Vec<u8> {
    match route {
        Route::Chat => sse_event(
            None,
            &json!({"error": {"message": "The server had an error while processing your request. Sorry about that!",
                "type": "server_error", "param": null, "code": null}}),
        ),
        Route::Responses => sse_event(
            Some("error"),
            &json!({"type": "error", "code": "server_error",
                "message": "The server had an error while processing your request.", "param": null,
                "sequence_number": seq}),
        ),
        Route::Messages => sse_event(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    }
}

/// The route's stream up to and including its first text, then the
/// provider's own error event: the model started to answer, then failed.
fn text_then_error(route: Route) -> Vec<Vec<u8>> {
    let events = route.events("The answer is", &[]);
    // Chat: the role chunk, the text chunk. Responses: response.created,
    // output_item.added, output_text.delta. Messages: message_start,
    // content_block_start, content_block_delta.
    let text_events = if route == Route::Chat { 2 } else { 3 };
    let mut out: Vec<Vec<u8>> = events.into_iter().take(text_events).collect();
    out.push(stream_error_event(route, text_events));
    out
}

#[tokio::test]
async fn a_stream_error_event_after_text_passes_as_sent() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    for route in Route::ALL {
        for coding in [Coding::NONE, Coding::GZIP] {
            let case = format!("{route:?} {}", coding.name);
            let tag = case.replace(' ', "-");
            let events = text_then_error(route);
            upstream.reply_to(&tag, Reply::coded(200, SSE, &coding, &events));
            let got = send(&http, &gw, route, &tag, route.stream_request(), &[]).await;
            let mut wrong = Vec::new();
            as_sent(&got, 200, None, &events.concat(), &mut wrong);
            if !got.is_sse() {
                wrong.push(format!("content type {:?}", got.content_type()));
            }
            if !wrong.is_empty() {
                failures.push(format!("{case}: {}", wrong.join("; ")));
            }
        }
    }
    assert_none_failed("stream error events passed as sent", &failures);
}

#[tokio::test]
async fn a_stream_error_event_that_carries_a_call_is_blocked() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let args = forbidden_args();
    let mut failures = Vec::new();
    for route in Route::ALL {
        let call_id = "call_err";
        // The provider's own error event, with a call beside its error.
        let (name, carrying) = match route {
            Route::Chat => (
                None,
                json!({"error": {"message": "x", "type": "server_error",
                "param": null, "code": null}, "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": call_id, "type": "function",
                 "function": {"name": "delete_user", "arguments": args}}]}}]}),
            ),
            Route::Responses => (
                Some("error"),
                json!({"type": "error", "code": "server_error",
                "message": "x", "param": null, "output_index": 1, "item": {"type": "function_call",
                "id": "fc_1", "call_id": call_id, "name": "delete_user", "arguments": args}}),
            ),
            Route::Messages => (
                Some("error"),
                json!({"type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"}, "index": 1,
                "content_block": {"type": "tool_use", "id": call_id, "name": "delete_user",
                "input": {"user_id": SECRET}}}),
            ),
        };
        // And one whose error object holds the call.
        let nested = match route {
            Route::Chat => json!({"error": {"message": "x", "type": "server_error",
                "details": {"tool_calls": [{"id": call_id, "type": "function",
                "function": {"name": "delete_user", "arguments": args}}]}}}),
            Route::Responses => json!({"type": "error", "error": {"type": "server_error",
                "message": "x", "item": {"type": "function_call", "call_id": call_id,
                "name": "delete_user", "arguments": args}}}),
            Route::Messages => json!({"type": "error", "error": {"type": "overloaded_error",
                "message": "Overloaded", "content": [{"type": "tool_use", "id": call_id,
                "name": "delete_user", "input": {"user_id": SECRET}}]}}),
        };
        for (at, event) in [sse_event(name, &carrying), sse_event(name, &nested)]
            .into_iter()
            .enumerate()
        {
            let case = format!("{route:?} #{at}");
            let tag = case.replace(' ', "-");
            let mut events: Vec<Vec<u8>> = text_then_error(route);
            events.pop();
            events.push(event);
            upstream.reply_to(&tag, Reply::coded(200, SSE, &Coding::NONE, &events));
            let got = send(&http, &gw, route, &tag, route.stream_request(), &[]).await;
            let needles = [("tool name", "delete_user"), ("argument value", SECRET)];
            let (mut wrong, error) = leak_problems(route, &got, &needles, &[SECRET]);
            match error {
                Some(error) => {
                    let (kind, _) = type_and_code(route, &error);
                    if kind != "guardrails_violation" {
                        wrong.push(format!("ended by {kind}"));
                    }
                }
                None => wrong.push("not blocked".to_owned()),
            }
            if !wrong.is_empty() {
                failures.push(format!("{case}: {} [got {}]", wrong.join("; "), got.text()));
            }
        }
        // A plain error with details that name no call part passes.
        let tag = format!("{route:?}-plain-details");
        let plain = match route {
            Route::Chat => json!({"error": {"message": "filtered", "type": "invalid_request_error",
                "param": "prompt", "code": "content_filter",
                "innererror": {"code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {"hate": {"filtered": true, "severity": "high"}}}}}),
            Route::Responses => json!({"type": "error", "code": "server_error", "message": "x",
                "param": null, "sequence_number": 3}),
            Route::Messages => json!({"type": "error", "error": {"type": "overloaded_error",
                "message": "Overloaded", "details": null}, "request_id": "req_1"}),
        };
        let mut events: Vec<Vec<u8>> = text_then_error(route);
        events.pop();
        events.push(sse_event(name, &plain));
        upstream.reply_to(&tag, Reply::coded(200, SSE, &Coding::NONE, &events));
        let got = send(&http, &gw, route, &tag, route.stream_request(), &[]).await;
        let mut wrong = Vec::new();
        as_sent(&got, 200, None, &events.concat(), &mut wrong);
        if !wrong.is_empty() {
            failures.push(format!("{tag}: {}", wrong.join("; ")));
        }
    }
    assert_none_failed("stream error events carrying a call", &failures);
}

#[tokio::test]
async fn an_anthropic_overloaded_error_reaches_the_client_as_sent() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let route = Route::Messages;
    let mut failures = Vec::new();
    let overloaded =
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    // Whole, and a stream request the upstream refuses before streaming.
    for kind in KINDS {
        let tag = format!("529-{kind:?}");
        upstream.reply_to(
            &tag,
            Reply::coded(529, JSON, &Coding::NONE, &[overloaded.to_vec()]),
        );
        let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
        let mut wrong = Vec::new();
        as_sent(&got, 529, JSON, overloaded, &mut wrong);
        if !wrong.is_empty() {
            failures.push(format!("529 on a {kind:?} request: {}", wrong.join("; ")));
        }
    }
    // Mid-stream, after text.
    let events = text_then_error(route);
    upstream.reply_to("mid-stream", Reply::coded(200, SSE, &Coding::NONE, &events));
    let got = send(&http, &gw, route, "mid-stream", route.stream_request(), &[]).await;
    let text = got.text();
    let last = text
        .rsplit("\n\n")
        .find(|e| !e.is_empty())
        .unwrap_or_default();
    if !last.contains("overloaded_error") || text.contains("guardrails_violation") {
        failures.push(format!(
            "mid-stream overloaded_error: the stream ends with {last:?}"
        ));
    }
    assert_none_failed("Anthropic overloaded_error", &failures);
}

// ---------------------------------------------------------------------
// Headers the gateway owns
// ---------------------------------------------------------------------

/// A case of the test below: its name, the request kind, the upstream's
/// status, content type and content, and whether it holds a call.
type OwnedCase = (
    &'static str,
    Kind,
    u16,
    Option<&'static str>,
    Vec<Vec<u8>>,
    bool,
);

/// Headers an upstream has no business setting.
const FORGED: [(&str, &str); 3] = [
    (KEYS, "forged-key-0000"),
    ("X-Toolgate-Verdict", "passed"),
    ("x-toolgate-policy-hash", "0000"),
];

#[tokio::test]
async fn headers_the_gateway_owns_never_come_from_the_upstream() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let weather = ("get_weather", r#"{"city":"Paris"}"#);
    let mut failures = Vec::new();
    for route in Route::ALL {
        // (case, kind, status, content type, content, holds a call)
        let cases: Vec<OwnedCase> = vec![
            (
                "text",
                Kind::Whole,
                200,
                JSON,
                vec![route.text("Hello.")],
                false,
            ),
            (
                "a valid call",
                Kind::Whole,
                200,
                JSON,
                vec![route.calls(&[weather])],
                true,
            ),
            (
                "an error",
                Kind::Whole,
                503,
                JSON,
                vec![provider_error(route, 503)],
                false,
            ),
            (
                "text",
                Kind::Stream,
                200,
                SSE,
                route.events("Hello.", &[]),
                false,
            ),
            (
                "a valid call",
                Kind::Stream,
                200,
                SSE,
                route.events("Hi.", &[weather]),
                true,
            ),
        ];
        for (name, kind, status, content_type, content, call) in cases {
            let case = format!("{route:?} {kind:?} {name}");
            let tag = case.replace(' ', "-");
            let request_id = format!("owned-{}", tag.replace(' ', "-"));
            let mut reply = Reply::coded(status, content_type, &Coding::NONE, &content);
            for (header, value) in FORGED {
                reply = reply.with_header(header, value);
            }
            upstream.reply_to(&tag, reply);
            let headers = [(REQUEST_ID, request_id.as_str())];
            let got = send(&http, &gw, route, &tag, kind.request(route), &headers).await;
            let mut wrong = Vec::new();
            let expected_key = key(&request_id, "get_weather", &json!({"city": "Paris"}));
            let mut owned = got.toolgate_headers();
            if call && kind == Kind::Whole {
                // The gateway's own keys header: exactly its key.
                owned.retain(|name| name != KEYS);
                let keys: Vec<String> = got
                    .headers
                    .get_all(KEYS)
                    .iter()
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                    .collect();
                if keys != [expected_key.clone()] {
                    wrong.push(format!("{KEYS}: {keys:?}"));
                }
            }
            if !owned.is_empty() {
                let values: Vec<String> = owned
                    .iter()
                    .map(|name| format!("{name}: {}", got.header(name).unwrap_or_default()))
                    .collect();
                wrong.push(format!("passed from the upstream: {}", values.join(", ")));
            }
            if call && kind == Kind::Stream {
                let (_, keys) = without_keys_comment(&got.text());
                if keys.as_deref() != Some(expected_key.as_str()) {
                    wrong.push(format!("keys comment {keys:?}"));
                }
            }
            if !wrong.is_empty() {
                failures.push(format!("{case}: {}", wrong.join("; ")));
            }
        }
    }
    assert_none_failed("x-toolgate-* headers from the upstream", &failures);
}

/// Comment lines an upstream may use to forge the keys comment, in
/// spellings an SSE client or a person may still read as one.
const FORGED_COMMENTS: [&str; 6] = [
    "\u{feff}: x-toolgate-idempotency-keys: forged-bom",
    ":\u{b}x-toolgate-idempotency-keys: forged-vt",
    ":\u{a0}x-toolgate-idempotency-keys: forged-nbsp",
    ":\u{2003}X-TOOLGATE-IDEMPOTENCY-KEYS: forged-emspace",
    "\u{feff}:\u{200b}x-toolgate-idempotency-keys: forged-zwsp",
    ":\tx_toolgate_idempotency_keys: forged-underscore",
];

#[tokio::test]
async fn forged_keys_comments_in_any_spelling_never_reach_the_client() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let weather = ("get_weather", r#"{"city":"Paris"}"#);
    let mut failures = Vec::new();
    for route in Route::ALL {
        for (name, calls) in [("text", vec![]), ("a call", vec![weather])] {
            for (at, forged) in FORGED_COMMENTS.iter().enumerate() {
                let case = format!("{route:?} {name} #{at}");
                let tag = case.replace(' ', "-");
                let mut events = route.events("Hello.", &calls);
                // First in the stream; and, where a byte order mark is no
                // mark (past the start: a line the gateway refuses), in an
                // event of its own and before the last event.
                events[0].splice(0..0, format!("{forged}\n").into_bytes());
                if !forged.starts_with('\u{feff}') {
                    events.insert(1, format!("{forged}\n\n").into_bytes());
                    let last = events.len() - 1;
                    events[last].splice(0..0, format!("{forged}\r\n").into_bytes());
                }
                upstream.reply_to(&tag, Reply::coded(200, SSE, &Coding::NONE, &events));
                let request_id = format!("forged-{tag}");
                let headers = [(REQUEST_ID, request_id.as_str())];
                let got = send(
                    &http,
                    &gw,
                    route,
                    &tag,
                    Kind::Stream.request(route),
                    &headers,
                )
                .await;
                let text = got.text();
                let mut wrong = Vec::new();
                if text.contains("forged-") {
                    wrong.push("a forged comment reached the client".to_owned());
                }
                let comments = text.matches(KEYS_COMMENT).count();
                if comments != usize::from(!calls.is_empty()) {
                    wrong.push(format!("{comments} keys comment(s)"));
                }
                if !wrong.is_empty() {
                    failures.push(format!("{case}: {} [got {text:?}]", wrong.join("; ")));
                }
            }
        }
    }
    assert_none_failed("forged keys comments", &failures);
}

// ---------------------------------------------------------------------
// MCP approvals on the Responses route
// ---------------------------------------------------------------------

const MCP_SECRET: &str = "u-mcp-5c1e";

fn mcp_approval_request(id: &str, name: &str, args: &str) -> Value {
    json!({"type": "mcp_approval_request", "id": id, "server_label": "crm", "name": name,
        "arguments": args})
}

fn mcp_body(response_id: &str, item: &Value) -> Vec<u8> {
    json!({"id": response_id, "object": "response", "created_at": 1, "model": "gpt-4o",
        "status": "completed", "output": [item]})
    .to_string()
    .into_bytes()
}

/// A Responses stream whose one output item is `item`.
fn mcp_events(response_id: &str, item: &Value) -> Vec<Vec<u8>> {
    let response = |status: &str, output: Value| {
        json!({"id": response_id, "object": "response", "created_at": 1, "model": "gpt-4o",
            "status": status, "output": output})
    };
    let mut seq = 0;
    let mut event = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        sse_event(Some(name), &data)
    };
    vec![
        event(
            "response.created",
            json!({"response": response("in_progress", json!([]))}),
        ),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": item}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ),
        event(
            "response.completed",
            json!({"response": response("completed", json!([item]))}),
        ),
    ]
}

#[tokio::test]
async fn a_forbidden_mcp_approval_request_is_blocked_whole_and_streamed() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let route = Route::Responses;
    let args = format!(r#"{{"user_id":"{MCP_SECRET}"}}"#);
    let item = mcp_approval_request("mcpr_1", "delete_user", &args);
    let mut failures = Vec::new();
    for kind in KINDS {
        let tag = format!("mcp-{kind:?}");
        let reply = match kind {
            Kind::Whole => Reply::coded(200, JSON, &Coding::NONE, &[mcp_body("resp_mcp1", &item)]),
            Kind::Stream => Reply::coded(200, SSE, &Coding::NONE, &mcp_events("resp_mcp1", &item)),
        };
        upstream.reply_to(&tag, reply);
        let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
        let needles = [
            ("tool name", "delete_user"),
            ("argument value", MCP_SECRET),
            ("approval request", "mcp_approval_request"),
        ];
        let (mut wrong, error) = leak_problems(route, &got, &needles, &[MCP_SECRET]);
        if let Some(error) = error {
            let (kind, code) = type_and_code(route, &error);
            if kind != "guardrails_violation" || code != "forbidden" {
                wrong.push(format!(
                    "blocked as {kind}/{code}, not guardrails_violation/forbidden"
                ));
            }
        }
        if kind == Kind::Whole && got.status != 400 {
            wrong.push(format!("status {}", got.status));
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{kind:?}: {} [got {}]",
                wrong.join("; "),
                got.text()
            ));
        }
    }
    assert_none_failed("mcp_approval_request with a forbidden tool", &failures);
}

/// A Responses request that approves each of `ids`, as OpenAI's MCP guide
/// sends it: the approvals alone, after `previous` (or after a user turn
/// when there is none).
fn approving(ids: &[&str], previous: Option<&str>, stream: bool) -> String {
    let mut input: Vec<Value> = ids
        .iter()
        .map(|id| json!({"type": "mcp_approval_response", "approval_request_id": id, "approve": true}))
        .collect();
    let mut request = json!({"model": "gpt-4o"});
    match previous {
        Some(previous) => request["previous_response_id"] = json!(previous),
        None => input.insert(0, json!({"role": "user", "content": "Delete my account."})),
    }
    request["input"] = Value::Array(input);
    if stream {
        request["stream"] = json!(true);
    }
    request.to_string()
}

/// A gateway that released `resp_mcp_ok`, whose one output item is an
/// approval request `mcpr_ok` for an allowed tool.
async fn released_approval_request(http: &reqwest::Client) -> (Upstream, Running) {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let route = Route::Responses;
    let item = mcp_approval_request("mcpr_ok", "lookup_order", r#"{"order_id":"o-7"}"#);
    let body = mcp_body("resp_mcp_ok", &item);
    upstream.reply_to("first", Reply::coded(200, JSON, &Coding::NONE, &[body]));
    let first = send(http, &gw, route, "first", route.request(), &[]).await;
    assert_eq!(
        first.status,
        200,
        "the approval request is released: {}",
        first.text()
    );
    (upstream, gw)
}

#[tokio::test]
async fn an_approval_for_an_mcp_request_never_released_is_refused_before_the_upstream() {
    let http = client();
    let (upstream, gw) = released_approval_request(&http).await;
    let route = Route::Responses;
    let mut failures = Vec::new();
    let cases: [(&str, &[&str], Option<&str>); 3] = [
        ("no previous response", &["mcpr_x"], None),
        (
            "an unknown previous response",
            &["mcpr_x"],
            Some("resp_never_released"),
        ),
        // The released request approved, and one it never saw.
        (
            "a released previous response",
            &["mcpr_ok", "mcpr_x"],
            Some("resp_mcp_ok"),
        ),
    ];
    for (name, ids, previous) in cases {
        for kind in KINDS {
            let tag = format!("approve-{kind:?}-{}", name.replace(' ', "-"));
            // Were it to get there, the upstream would answer text.
            upstream.reply_to(
                &tag,
                Reply::coded(200, JSON, &Coding::NONE, &[route.text("Done.")]),
            );
            let request = approving(ids, previous, kind == Kind::Stream);
            let got = send(&http, &gw, route, &tag, request, &[]).await;
            let mut wrong = Vec::new();
            let reached = upstream.seen_tagged(&tag).len();
            if reached != 0 {
                wrong.push(format!("the upstream received {reached} request(s)"));
            }
            if got.status != 400 {
                wrong.push(format!("status {}", got.status));
            }
            let body: Value =
                serde_json::from_slice(&got.decoded().unwrap_or_default()).unwrap_or(Value::Null);
            if body["error"]["type"] != "guardrails_violation"
                || body["error"]["code"] != "result_unknown_call_id"
            {
                let error = &body["error"];
                wrong.push(format!("answered {}/{}", error["type"], error["code"]));
            }
            if !wrong.is_empty() {
                failures.push(format!("{kind:?}, {name}: {}", wrong.join("; ")));
            }
        }
    }
    assert_none_failed("mcp_approval_response for an unknown id", &failures);
}

#[tokio::test]
async fn an_approval_for_a_released_mcp_request_reaches_the_upstream() {
    // The control for the refusal above: the approval of the id the
    // gateway released goes through.
    let http = client();
    let (upstream, gw) = released_approval_request(&http).await;
    let route = Route::Responses;
    upstream.reply_to(
        "approve",
        Reply::coded(200, JSON, &Coding::NONE, &[route.text("Done.")]),
    );
    let request = approving(&["mcpr_ok"], Some("resp_mcp_ok"), false);
    let got = send(&http, &gw, route, "approve", request, &[]).await;
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(upstream.seen_tagged("approve").len(), 1);
}

/// The approval requests a stream released are remembered as a whole
/// answer's are, however its events spell the item's type (here once
/// with `\u0061` for the first letter of `approval`): the follow-up that
/// approves one reaches the upstream, one that approves an id never
/// released does not.
#[tokio::test]
async fn an_approval_for_a_request_released_in_a_stream_reaches_the_upstream() {
    let http = client();
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let route = Route::Responses;
    for (n, escaped) in [false, true].into_iter().enumerate() {
        let (id, response) = (format!("mcpr_s{n}"), format!("resp_mcp_s{n}"));
        let item = mcp_approval_request(&id, "lookup_order", r#"{"order_id":"o-7"}"#);
        let events: Vec<Vec<u8>> = mcp_events(&response, &item)
            .into_iter()
            .map(|event| {
                let text = String::from_utf8(event).unwrap();
                if escaped {
                    text.replace("mcp_approval_request", r"mcp_\u0061pproval_request")
                } else {
                    text
                }
                .into_bytes()
            })
            .collect();
        let first = format!("stream-{n}");
        upstream.reply_to(&first, Reply::coded(200, SSE, &Coding::NONE, &events));
        let got = send(&http, &gw, route, &first, route.stream_request(), &[]).await;
        assert_eq!(got.status, 200, "{}", got.text());
        assert!(
            got.text().contains(&id) && !got.text().contains("guardrails_violation"),
            "the approval request is released in the stream: {}",
            got.text()
        );
        for (tag, approves, reaches) in [
            (format!("stranger-{n}"), "mcpr_never_released", false),
            (format!("approve-{n}"), id.as_str(), true),
        ] {
            upstream.reply_to(
                &tag,
                Reply::coded(200, JSON, &Coding::NONE, &[route.text("Done.")]),
            );
            let request = approving(&[approves], Some(&response), false);
            let got = send(&http, &gw, route, &tag, request, &[]).await;
            assert_eq!(
                upstream.seen_tagged(&tag).len(),
                usize::from(reaches),
                "approving {approves} after {response} (escaped: {escaped}): status {}, {}",
                got.status,
                got.text()
            );
            assert_eq!(got.status == 200, reaches, "{}", got.text());
        }
    }
}

// ---------------------------------------------------------------------
// Streams the gateway cannot read as a stream
// ---------------------------------------------------------------------

const SECRET: &str = "u-stream-9d2b";

fn forbidden_args() -> String {
    format!(r#"{{"user_id":"{SECRET}"}}"#)
}

#[tokio::test]
async fn a_whole_json_body_labelled_event_stream_is_blocked() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let args = forbidden_args();
    let mut failures = Vec::new();
    for route in Route::ALL {
        let tag = format!("{route:?}-json-as-sse");
        let body = route.calls(&[("delete_user", &args)]);
        upstream.reply_to(&tag, Reply::coded(200, SSE, &Coding::NONE, &[body]));
        let got = send(&http, &gw, route, &tag, route.stream_request(), &[]).await;
        let needles = [("tool name", "delete_user"), ("argument value", SECRET)];
        let (mut wrong, error) = leak_problems(route, &got, &needles, &[SECRET]);
        if let Some(error) = error {
            let (kind, _) = type_and_code(route, &error);
            if kind != "guardrails_violation" {
                wrong.push(format!("an error of type {kind}, not guardrails_violation"));
            }
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{route:?}: {} [got {:?}]",
                wrong.join("; "),
                got.text()
            ));
        }
    }
    assert_none_failed("JSON bodies labelled text/event-stream", &failures);
}

/// An event that starts a forbidden call and breaks off mid-JSON.
fn broken_call_event(route: Route) -> Vec<u8> {
    let text = match route {
        Route::Chat => format!(
            r#"data: {{"id":"chatcmpl-events","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"call_0","type":"function","function":{{"name":"delete_user","arguments":"{{\"user_id\":\"{SECRET}"#
        ),
        Route::Responses => format!(
            r#"event: response.output_item.added
data: {{"type":"response.output_item.added","output_index":1,"item":{{"type":"function_call","id":"fc_0","call_id":"call_0","name":"delete_user","arguments":"{{\"user_id\":\"{SECRET}"#
        ),
        Route::Messages => format!(
            r#"event: content_block_start
data: {{"type":"content_block_start","index":1,"content_block":{{"type":"tool_use","id":"toolu_0","name":"delete_user","input":{{"user_id":"{SECRET}"#
        ),
    };
    format!("{text}\n\n").into_bytes()
}

#[tokio::test]
async fn a_stream_event_the_gateway_cannot_read_is_blocked() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    for route in Route::ALL {
        let tag = format!("{route:?}-unreadable");
        let mut events = route.events("Let me check.", &[]);
        let end = events.split_off(events.len() - 2);
        events.push(broken_call_event(route));
        events.extend(end);
        upstream.reply_to(&tag, Reply::coded(200, SSE, &Coding::NONE, &events));
        let got = send(&http, &gw, route, &tag, route.stream_request(), &[]).await;
        let needles = [("tool name", "delete_user"), ("argument value", SECRET)];
        let (wrong, _) = leak_problems(route, &got, &needles, &[SECRET]);
        if !wrong.is_empty() {
            failures.push(format!(
                "{route:?}: {} [got {:?}]",
                wrong.join("; "),
                got.text()
            ));
        }
    }
    assert_none_failed("unreadable stream events", &failures);
}

// ---------------------------------------------------------------------
// A blocked stream's code, however the bytes are cut
// ---------------------------------------------------------------------

/// The same stream cut into chunks in many ways: event by event, all at
/// once, fixed sizes down to one byte, every event split at one offset,
/// and every event split inside the tool name.
fn chunkings(events: &[Vec<u8>]) -> Vec<(String, Vec<Vec<u8>>)> {
    let whole = events.concat();
    let mut out = vec![
        ("event by event".to_owned(), events.to_vec()),
        ("all at once".to_owned(), vec![whole.clone()]),
    ];
    for size in [1, 2, 3, 5, 7, 8, 13, 16, 31, 64, 100, 256] {
        let chunks = whole.chunks(size).map(<[u8]>::to_vec).collect();
        out.push((format!("{size} byte(s) a chunk"), chunks));
    }
    let split = |event: &Vec<u8>, at: usize| -> Vec<Vec<u8>> {
        let at = at.min(event.len());
        [event[..at].to_vec(), event[at..].to_vec()]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect()
    };
    for at in [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233] {
        let chunks = events.iter().flat_map(|event| split(event, at)).collect();
        out.push((format!("each event split at byte {at}"), chunks));
    }
    for inside in [1, 3, 6, 10] {
        let chunks = events
            .iter()
            .flat_map(|event| {
                let name = event.windows(11).position(|w| w == b"delete_user");
                match name {
                    Some(at) => split(event, at + inside),
                    None => vec![event.clone()],
                }
            })
            .collect();
        out.push((format!("split at byte {inside} of the tool name"), chunks));
    }
    out
}

async fn block_codes_under_chunkings(policy: &str, expected: &str) {
    let upstream = Upstream::start().await;
    let gw = gateway(policy, &upstream).await;
    let http = client();
    let args = forbidden_args();
    let mut failures = Vec::new();
    for route in Route::ALL {
        let events = route.events("Let me check.", &[("delete_user", &args)]);
        let mut codes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, chunks) in chunkings(&events) {
            let tag = format!("{route:?}-{name}").replace(' ', "-");
            upstream.reply_to(&tag, Reply::labelled(200, SSE, &Coding::NONE, chunks));
            let got = send(&http, &gw, route, &tag, route.stream_request(), &[]).await;
            let needles = [("tool name", "delete_user"), ("argument value", SECRET)];
            let (wrong, error) = leak_problems(route, &got, &needles, &[SECRET]);
            let outcome = match error {
                Some(error) if wrong.is_empty() => {
                    let (kind, code) = type_and_code(route, &error);
                    format!("{kind}/{code}")
                }
                _ => wrong.join("; "),
            };
            codes.entry(outcome).or_default().push(name);
        }
        let want = format!("guardrails_violation/{expected}");
        for (outcome, names) in codes {
            if outcome != want {
                failures.push(format!("{route:?}: {outcome} under: {}", names.join(", ")));
            }
        }
    }
    assert_none_failed(
        &format!("`{policy}`: every chunking must end in guardrails_violation/{expected}"),
        &failures,
    );
}

#[tokio::test]
async fn a_blocked_stream_is_forbidden_however_its_bytes_are_chunked() {
    block_codes_under_chunkings(POLICY, "forbidden").await;
}

#[tokio::test]
async fn a_blocked_stream_is_not_allowed_however_its_bytes_are_chunked() {
    block_codes_under_chunkings("allowed_functions: [get_weather]", "not_allowed").await;
}

#[tokio::test]
async fn a_blocked_streams_verdict_and_record_do_not_depend_on_its_chunking() {
    let upstream = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let args = forbidden_args();
    let mut failures = Vec::new();
    // An event the gateway cannot read (a line that is no SSE field, data
    // that is not JSON), then a forbidden call: the stream is blocked at
    // that event, whether the call arrives in the same chunk or not.
    let bad_events: [&[u8]; 2] = [b"foo: bar\ndata: {\"x\":1}\n\n", b"data: {\"x\":\n\n"];
    for route in Route::ALL {
        for (at, bad) in bad_events.iter().enumerate() {
            let mut events = route.events("Let me check.", &[("delete_user", &args)]);
            events.insert(1, bad.to_vec());
            let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (name, chunks) in chunkings(&events) {
                let tag = format!("{route:?}-{at}-{name}").replace(' ', "-");
                let request_id = format!("chunking-{tag}");
                upstream.reply_to(&tag, Reply::labelled(200, SSE, &Coding::NONE, chunks));
                let headers = [(REQUEST_ID, request_id.as_str())];
                let got = send(&http, &gw, route, &tag, route.stream_request(), &headers).await;
                let (_, error) = leak_problems(route, &got, &[], &[SECRET]);
                let verdict = error.map(|e| e["verdict"].clone()).unwrap_or_default();
                let record = gw
                    .audit_records()
                    .into_iter()
                    .find(|r| r["request_id"] == request_id.as_str())
                    .unwrap_or_default();
                if record["outcome"] != "blocked" || !verdict["reasoning"].is_string() {
                    failures.push(format!(
                        "{tag}: not blocked and audited [got {}]",
                        got.text()
                    ));
                }
                let outcome = json!({
                    "reasoning": verdict["reasoning"],
                    "calls": verdict["calls"],
                    "audit": [record["outcome"], record["calls"], record["violations"]],
                });
                seen.entry(outcome.to_string()).or_default().push(name);
            }
            if seen.len() != 1 {
                let outcomes: Vec<String> = seen
                    .iter()
                    .map(|(outcome, names)| format!("{outcome} under {}", names.join(", ")))
                    .collect();
                failures.push(format!("{route:?} #{at}:\n    {}", outcomes.join("\n    ")));
            }
        }
    }
    assert_none_failed("verdicts under chunkings", &failures);
}

/// The gateway sends each request to the upstream it is configured with
/// and nowhere else: a redirect is the upstream's answer, passed to the
/// client with its status and body, never followed (following it would
/// send the request, its conversation and its headers to wherever the
/// `Location` points, and release an answer from there).
#[tokio::test]
async fn an_upstream_redirect_is_answered_not_followed() {
    let upstream = Upstream::start().await;
    let elsewhere = Upstream::start().await;
    let gw = gateway(POLICY, &upstream).await;
    let http = client();
    let mut failures = Vec::new();
    for route in Route::ALL {
        for kind in KINDS {
            for status in [301, 302, 303, 307, 308] {
                let case = format!("{route:?} {kind:?} {status}");
                let tag = case.replace(' ', "-");
                let body = br#"{"error": {"message": "moved"}}"#.to_vec();
                let location = format!("{}{}", elsewhere.url(), route.path());
                let reply = Reply::coded(status, JSON, &Coding::NONE, std::slice::from_ref(&body))
                    .with_header("location", &location);
                upstream.reply_to(&tag, reply);
                let got = send(&http, &gw, route, &tag, kind.request(route), &[]).await;
                let mut wrong = Vec::new();
                as_sent(&got, status, JSON, &body, &mut wrong);
                if !elsewhere.seen_tagged(&tag).is_empty() {
                    wrong.push("the redirect was followed".to_owned());
                }
                if !wrong.is_empty() {
                    failures.push(format!("{case}: {}", wrong.join("; ")));
                }
            }
        }
    }
    assert_none_failed("upstream redirects", &failures);
    assert!(
        elsewhere.seen().is_empty(),
        "the place redirected to was asked"
    );
}
