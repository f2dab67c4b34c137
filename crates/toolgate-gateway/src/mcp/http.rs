//! Streamable HTTP at `/mcp/<name>`: the 2025-11-25 protocol (`initialize`,
//! `Mcp-Session-Id`, SSE answers, the `GET` stream and its resumption with
//! `Last-Event-ID`, `DELETE` to end a session) and the stateless
//! 2026-07-28 protocol, whose `Mcp-Method` and `Mcp-Name` headers must
//! agree with the body (else `400` with JSON-RPC `-32020`).
//!
//! Every message of a request is checked by the server's [`McpGate`]
//! before it is sent; every message of the answer, whole or event by
//! event, before the client gets it. An answer the gateway cannot read
//! (not JSON-RPC, an SSE event of no known field, a body in no known
//! coding) is refused, never forwarded.

use std::convert::Infallible;
use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use bytes::Bytes;
use serde_json::{json, Value};
use toolgate::detect::sse::{Event, Framer};

use super::message::{self, Body, Message};
use super::{call, McpGate, Step, Who};
use crate::error::Failure;
use crate::request::{self, REQUEST_ID};
use crate::upstream::{self, Answer, Read};
use crate::{caller, Gateway};

/// The session header of the 2025-11-25 protocol.
const SESSION: &str = "mcp-session-id";
const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";
const VERSION: &str = "mcp-protocol-version";
/// The first protocol version whose requests carry `Mcp-Method`.
const MODERN: &str = "2026-07-28";
/// Most pages of its own `tools/list` the gateway reads.
const MAX_PAGES: usize = 100;
/// The idempotency keys of the calls a request released.
const IDEMPOTENCY_KEYS: &str = "x-toolgate-idempotency-keys";

/// `POST /mcp/<name>`.
pub(crate) async fn post(
    gw: Arc<Gateway>,
    name: String,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let Some(gate) = gw.mcp.by_name.get(&name).cloned() else {
        return unknown_server(&name);
    };
    let config = &gw.config;
    let bytes =
        match request::read_body(body, config.max_request_bytes, config.body_read_timeout).await {
            Ok(bytes) => bytes,
            Err(failure) => return failed(&failure, None),
        };
    let identity = match caller::identify(&gw.policy, &headers) {
        Ok(identity) => identity,
        Err(failure) => return failed(&failure, None),
    };
    let parsed = match Body::read(&bytes) {
        Ok(parsed) => parsed,
        Err(why) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                None,
                message::PARSE_ERROR,
                &format!("toolgate: {why}"),
            );
        }
    };
    if let Err(why) = headers_agree(&headers, &parsed) {
        let id = parsed.messages.first().and_then(|m| m.id.as_deref());
        return json_error(
            StatusCode::BAD_REQUEST,
            id,
            message::HEADER_MISMATCH,
            &format!("Header mismatch: {why}"),
        );
    }
    let who = Who {
        caller: identity.caller,
        request_id: request::request_id(&headers),
    };
    let scope = scope(&headers);
    let (forward, answers, keys) = match steps(
        &gw,
        &gate,
        &headers,
        identity.key_is_ours,
        &parsed,
        &who,
        &scope,
    )
    .await
    {
        Steps::Checked(forward, answers, keys) => (forward, answers, keys),
        Steps::Refused(mut response) => {
            tag(&mut response, &who.request_id);
            return response;
        }
    };
    if !answers.is_empty() {
        let mut response = refused(&gate, &scope, &forward, answers, parsed.batch);
        tag(&mut response, &who.request_id);
        return response;
    }
    let mut sent = upstream_headers(&gw, &headers, identity.key_is_ours);
    sent.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(&who.request_id) {
        sent.insert(REQUEST_ID, value);
    }
    let url = gate.url.clone().unwrap_or_default();
    let request = gw.client.post(url).headers(sent).body(Body::write(
        parsed.batch,
        &forward
            .into_iter()
            .map(|(text, _)| text)
            .collect::<Vec<_>>(),
    ));
    let answer = match send(&gw, request).await {
        Ok(answer) => answer,
        Err(failure) => return failed(&failure, Some(&who.request_id)),
    };
    let mut response = relay(gw, gate, answer, scope).await;
    tag(&mut response, &who.request_id);
    if !keys.is_empty() {
        if let Ok(value) = HeaderValue::from_str(&keys.join(",")) {
            response.headers_mut().insert(IDEMPOTENCY_KEYS, value);
        }
    }
    response
}

/// A refused message answers the whole request: in a batch, the others
/// are not sent either.
fn refused(
    gate: &McpGate,
    scope: &str,
    forward: &[(String, Option<String>)],
    answers: Vec<String>,
    batch: bool,
) -> Response {
    let not_sent = forward
        .iter()
        .filter_map(|(_, id)| id.as_deref())
        .map(|id| {
            gate.answered(scope, id);
            message::error(
                Some(id),
                message::INVALID_REQUEST,
                "toolgate: not sent, another message of this batch was refused",
                None,
            )
        });
    let all: Vec<String> = answers.into_iter().chain(not_sent).collect();
    json_response(StatusCode::OK, Body::write(batch, &all))
}

/// Each message of a request checked.
async fn steps(
    gw: &Gateway,
    gate: &McpGate,
    headers: &HeaderMap,
    key_is_ours: bool,
    parsed: &Body,
    who: &Who,
    scope: &str,
) -> Steps {
    let mut forward = Vec::with_capacity(parsed.messages.len());
    let mut answers = Vec::new();
    let mut keys = Vec::new();
    for message in &parsed.messages {
        let mut step = gate.on_client(gw, message, who, scope, false).await;
        if matches!(step, Step::List) {
            match own_list(gw, gate, headers, key_is_ours, message).await {
                Ok(()) => {}
                Err(ListFailure::Refused(response)) => {
                    forward
                        .iter()
                        .filter_map(|(_, id): &(String, Option<String>)| id.as_deref())
                        .for_each(|id| {
                            gate.answered(scope, id);
                        });
                    return Steps::Refused(response);
                }
                Err(ListFailure::Why(why)) => {
                    tracing::warn!(server = %gate.name, %why, "the gateway's own tools/list failed");
                }
            }
            step = gate.on_client(gw, message, who, scope, true).await;
        }
        match step {
            Step::Forward(text, key) => {
                forward.push((
                    text,
                    message
                        .id
                        .clone()
                        .filter(|_| message.kind == message::Kind::Request),
                ));
                keys.extend(key);
            }
            Step::Answer(text) => answers.push(text),
            Step::List => {}
        }
    }
    Steps::Checked(forward, answers, keys)
}

/// Each message of a request checked: what to send, what to answer
/// instead, and the idempotency keys of the calls released; or the
/// server's own refusal, which answers the whole request.
enum Steps {
    Checked(Vec<(String, Option<String>)>, Vec<String>, Vec<String>),
    Refused(Response),
}

/// `GET /mcp/<name>` (the 2025-11-25 stream) and `DELETE /mcp/<name>`.
pub(crate) async fn other(
    gw: Arc<Gateway>,
    name: String,
    method: Method,
    headers: HeaderMap,
) -> Response {
    let Some(gate) = gw.mcp.by_name.get(&name).cloned() else {
        return unknown_server(&name);
    };
    let identity = match caller::identify(&gw.policy, &headers) {
        Ok(identity) => identity,
        Err(failure) => return failed(&failure, None),
    };
    let scope = scope(&headers);
    let url = gate.url.clone().unwrap_or_default();
    let sent = upstream_headers(&gw, &headers, identity.key_is_ours);
    let request = gw.client.request(method.clone(), url).headers(sent);
    let answer = match send(&gw, request).await {
        Ok(answer) => answer,
        Err(failure) => return failed(&failure, None),
    };
    if method == Method::DELETE && answer.status.is_success() {
        gate.forget(&scope);
    }
    relay(gw, gate, answer, scope).await
}

fn unknown_server(name: &str) -> Response {
    json_error(
        StatusCode::NOT_FOUND,
        None,
        message::INVALID_REQUEST,
        &format!(
            "toolgate: no MCP server is named `{}` (see mcp.servers)",
            name.chars().take(64).collect::<String>()
        ),
    )
}

/// The scope requests are matched to answers in: the session, or this
/// request alone.
fn scope(headers: &HeaderMap) -> String {
    headers
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map_or_else(
            || format!("request:{}", uuid::Uuid::new_v4()),
            |s| format!("session:{s}"),
        )
}

/// The value of a header sent at most once; `Err` when sent twice or not
/// as text.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("the {name} header is sent more than once"));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| format!("the {name} header holds characters that are not visible ASCII"))
}

/// `Mcp-Name`'s value: `=?base64?...?=` decoded.
fn decoded(value: &str) -> Result<String, String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        None => Ok(value.to_owned()),
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| "the Mcp-Name header is not valid base64 of UTF-8".to_owned()),
    }
}

/// The 2026-07-28 headers against the body: `Mcp-Method` (required for
/// every request of that version) equals `method`; `Mcp-Name` (required
/// for `tools/call`, `resources/read`, `prompts/get`) equals
/// `params.name` or `params.uri`; `MCP-Protocol-Version` equals the
/// body's `_meta`. Headers sent with an older version are checked too:
/// a header that says one thing while the body says another is refused.
pub(crate) fn headers_agree(headers: &HeaderMap, body: &Body) -> Result<(), String> {
    let method = single(headers, METHOD)?;
    let name = single(headers, NAME)?.map(decoded).transpose()?;
    let version = single(headers, VERSION)?;
    let modern = version.is_some_and(|v| v >= MODERN);
    if body.batch {
        if modern || method.is_some() || name.is_some() {
            return Err(
                "a batch cannot carry Mcp-Method or Mcp-Name, and 2026-07-28 has no batches"
                    .to_owned(),
            );
        }
        return Ok(());
    }
    let message = &body.messages[0];
    let is_request = message.kind == message::Kind::Request;
    match (method, message.method.as_deref()) {
        (Some(header), Some(body)) if header != body => {
            return Err(format!(
                "Mcp-Method header value '{header}' does not match body value '{body}'"
            ));
        }
        (Some(header), None) => {
            return Err(format!(
                "Mcp-Method header value '{header}' is sent with a message that has no method"
            ));
        }
        (None, Some(_)) if modern && is_request => {
            return Err("the Mcp-Method header is missing".to_owned())
        }
        _ => {}
    }
    let params = message.params_object().unwrap_or_default();
    let named = matches!(
        message.method.as_deref(),
        Some("tools/call" | "prompts/get" | "resources/read")
    );
    let body_name = if named {
        params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
    } else {
        None
    };
    match (name.as_deref(), body_name) {
        (Some(header), Some(body)) if header != body => {
            return Err(format!(
                "Mcp-Name header value '{}' does not match body value '{}'",
                clip(header),
                clip(body)
            ));
        }
        (Some(header), None) => {
            return Err(format!(
                "Mcp-Name header value '{}' is sent with a message that names nothing",
                clip(header)
            ));
        }
        (None, Some(_)) if modern && is_request => {
            return Err("the Mcp-Name header is missing".to_owned())
        }
        _ => {}
    }
    if modern && is_request {
        let meta = params
            .get("_meta")
            .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
            .and_then(Value::as_str);
        if meta != version {
            return Err(format!(
                "MCP-Protocol-Version header value '{}' does not match the body's _meta protocolVersion",
                version.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

/// The headers sent to the server: the client's, less hop-by-hop ones,
/// the gateway's own, the trusted caller header and a toolgate caller
/// key; asking for no content coding.
fn upstream_headers(gw: &Gateway, headers: &HeaderMap, key_is_ours: bool) -> HeaderMap {
    let caller_header = gw.policy.access().caller_header.as_deref();
    let mut out = HeaderMap::with_capacity(headers.len() + 2);
    for (name, value) in headers {
        if upstream::hop(name)
            || upstream::owned(name)
            || caller_header.is_some_and(|h| name.as_str().eq_ignore_ascii_case(h))
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if key_is_ours {
        out.remove(header::AUTHORIZATION);
        out.remove("x-api-key");
    }
    out.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    out
}

async fn send(gw: &Gateway, request: reqwest::RequestBuilder) -> Result<Answer, Failure> {
    match tokio::time::timeout(gw.config.upstream_timeout, request.send()).await {
        Err(_) => Err(Failure::UpstreamTimeout),
        Ok(Err(err)) if err.is_timeout() => Err(Failure::UpstreamTimeout),
        Ok(Err(err)) => Err(Failure::UpstreamUnavailable(upstream::reason(&err))),
        Ok(Ok(response)) => Ok(Answer::read(response)),
    }
}

/// The server's answer, checked: whole, or event by event.
async fn relay(
    gw: Arc<Gateway>,
    gate: Arc<McpGate>,
    mut answer: Answer,
    scope: String,
) -> Response {
    let status = answer.status;
    let mut headers = answer.headers.clone();
    headers.remove(header::CONTENT_TYPE);
    if answer.is_event_stream() {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        let (sender, receiver) = tokio::sync::mpsc::channel::<Bytes>(16);
        tokio::spawn(async move { stream(gw, gate, answer, scope, sender).await });
        let body = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver
                .recv()
                .await
                .map(|chunk| (Ok::<_, Infallible>(chunk), receiver))
        });
        let mut response = Response::new(axum::body::Body::from_stream(body));
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        return response;
    }
    let deadline = tokio::time::Instant::now() + gw.config.upstream_timeout;
    let bytes = match answer.whole(gw.config.max_response_bytes, deadline).await {
        Ok(bytes) => bytes,
        Err(Read::Failed(failure)) => return failed(&failure, None),
        Err(Read::Unreadable(why)) => return unreadable(status, &why),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        return response;
    }
    let parsed = match Body::read(&bytes) {
        Ok(parsed) => parsed,
        Err(why) => {
            return unreadable(
                status,
                &format!("the server's answer is not JSON-RPC: {why}"),
            )
        }
    };
    let mut out = Vec::with_capacity(parsed.messages.len());
    for message in &parsed.messages {
        out.extend(gate.on_server(&gw, message, &scope).await);
    }
    let mut response = json_response(status, Body::write(parsed.batch, &out));
    for (name, value) in &headers {
        response.headers_mut().append(name.clone(), value.clone());
    }
    response
}

/// An SSE answer, event by event: an event without data (a priming event
/// with its id, a keep-alive) passes as sent; one whose message the gate
/// rewrites is sent again with the same `id` and `event`; one that cannot
/// be read ends the stream, unsent.
async fn stream(
    gw: Arc<Gateway>,
    gate: Arc<McpGate>,
    mut answer: Answer,
    scope: String,
    sender: tokio::sync::mpsc::Sender<Bytes>,
) {
    let max_event = gw.policy.limits().max_argument_bytes + (1 << 20);
    let mut framer = Framer::new(max_event);
    let mut events = Vec::new();
    loop {
        let chunk = match answer.chunk(gw.config.upstream_timeout).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                framer.finish(&mut events);
                let _ = forward(&gw, &gate, &scope, &sender, &mut events).await;
                return;
            }
            Err(_) => return,
        };
        if framer.push(&chunk, &mut events).is_err() {
            tracing::warn!(server = %gate.name, "an SSE event past the bound ended the stream");
            return;
        }
        if !forward(&gw, &gate, &scope, &sender, &mut events).await {
            return;
        }
    }
}

/// Send the events framed so far; false when the stream must end.
async fn forward(
    gw: &Gateway,
    gate: &McpGate,
    scope: &str,
    sender: &tokio::sync::mpsc::Sender<Bytes>,
    events: &mut Vec<Event>,
) -> bool {
    for event in events.drain(..) {
        let Some(out) = checked_event(gw, gate, scope, event).await else {
            tracing::warn!(server = %gate.name, "an SSE event toolgate cannot read ended the stream");
            return false;
        };
        if sender.send(out).await.is_err() {
            return false;
        }
    }
    true
}

async fn checked_event(gw: &Gateway, gate: &McpGate, scope: &str, event: Event) -> Option<Bytes> {
    if event.unknown_field {
        return None;
    }
    let Some(data) = &event.data else {
        return Some(Bytes::from(event.raw));
    };
    if data.iter().all(u8::is_ascii_whitespace) {
        return Some(Bytes::from(event.raw));
    }
    let parsed = Body::read(data).ok()?;
    let mut out = Vec::with_capacity(parsed.messages.len());
    let mut same = true;
    for message in &parsed.messages {
        match gate.on_server(gw, message, scope).await {
            Some(text) => {
                same &= text == message.raw;
                out.push(text);
            }
            None => same = false,
        }
    }
    if same && !parsed.batch {
        return Some(Bytes::from(event.raw));
    }
    let mut text = Vec::new();
    if let Some(id) = &event.id {
        text.extend_from_slice(b"id: ");
        text.extend_from_slice(id);
        text.push(b'\n');
    }
    if let Some(name) = &event.name {
        text.extend_from_slice(b"event: ");
        text.extend_from_slice(name);
        text.push(b'\n');
    }
    text.extend_from_slice(b"data: ");
    text.extend_from_slice(Body::write(parsed.batch, &out).as_bytes());
    text.extend_from_slice(b"\n\n");
    Some(Bytes::from(text))
}

/// The gateway's own `tools/list`, asked with the client's session and
/// protocol headers, its pages followed, into the catalog.
async fn own_list(
    gw: &Gateway,
    gate: &McpGate,
    headers: &HeaderMap,
    key_is_ours: bool,
    call: &Message,
) -> Result<(), ListFailure> {
    let mut sent = upstream_headers(gw, headers, key_is_ours);
    let params = call.params_object().unwrap_or_default();
    let meta = params.get("_meta").cloned().map(|mut meta| {
        if let Some(meta) = meta.as_object_mut() {
            meta.remove("progressToken");
            meta.remove(super::IDEMPOTENCY_META);
        }
        meta
    });
    sent.remove(NAME);
    let params_names: Vec<HeaderName> = sent
        .keys()
        .filter(|k| k.as_str().starts_with("mcp-param-"))
        .cloned()
        .collect();
    for name in params_names {
        sent.remove(name);
    }
    if sent.contains_key(METHOD) {
        sent.insert(METHOD, HeaderValue::from_static("tools/list"));
    }
    sent.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let mut cursor: Option<String> = None;
    for page in 0..MAX_PAGES {
        let id = format!("toolgate-list-{}-{page}", uuid::Uuid::new_v4());
        let mut params = json!({});
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        if let Some(meta) = &meta {
            params["_meta"] = meta.clone();
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
        let url = gate.url.clone().unwrap_or_default();
        let request = gw
            .client
            .post(url)
            .headers(sent.clone())
            .body(body.to_string());
        let mut answer = send(gw, request)
            .await
            .map_err(|f| ListFailure::Why(f.message()))?;
        let deadline = tokio::time::Instant::now() + gw.config.upstream_timeout;
        let bytes = answer
            .whole(gw.config.max_response_bytes, deadline)
            .await
            .map_err(|_| {
                ListFailure::Why("the server's tools/list answer could not be read".to_owned())
            })?;
        if !answer.status.is_success() {
            return Err(ListFailure::Refused(refusal(answer.status, &bytes)));
        }
        let wanted = Value::String(id).to_string();
        let message = answer_to(&bytes, answer.is_event_stream(), &wanted).ok_or_else(|| {
            ListFailure::Why("the server's tools/list answer holds no answer to it".to_owned())
        })?;
        cursor = call::learn(gate, gw, &message).map_err(ListFailure::Why)?;
        if cursor.is_none() {
            return Ok(());
        }
    }
    Err(ListFailure::Why(format!(
        "the server's tools/list has more than {MAX_PAGES} pages"
    )))
}

/// Why the gateway's own `tools/list` did not list the server's tools.
enum ListFailure {
    /// The server refused it (a session it has ended answers 404): the
    /// client's request gets that answer, as the server would have given it.
    Refused(Response),
    /// Anything else: the call is judged against what the gateway knows.
    Why(String),
}

/// A server's refusal, passed on: its status, and its body when that is a
/// JSON-RPC error answer (which carries no result); else the status alone.
fn refusal(status: StatusCode, bytes: &[u8]) -> Response {
    match Body::read(bytes) {
        Ok(body)
            if !body.batch
                && body
                    .messages
                    .iter()
                    .all(|m| m.kind == message::Kind::Response && m.result.is_none()) =>
        {
            json_response(status, String::from_utf8_lossy(bytes).into_owned())
        }
        _ => unreadable(status, "the server refused the request"),
    }
}

/// The response with id `wanted` in a JSON or SSE answer.
fn answer_to(bytes: &[u8], sse: bool, wanted: &str) -> Option<Message> {
    let documents: Vec<Vec<u8>> = if sse {
        let mut framer = Framer::new(usize::MAX);
        let mut events = Vec::new();
        framer.push(bytes, &mut events).ok()?;
        framer.finish(&mut events);
        events.into_iter().filter_map(|e| e.data).collect()
    } else {
        vec![bytes.to_vec()]
    };
    documents
        .iter()
        .filter_map(|doc| Body::read(doc).ok())
        .flat_map(|body| body.messages)
        .find(|m| m.kind == message::Kind::Response && m.id.as_deref() == Some(wanted))
}

fn json_response(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

fn json_error(status: StatusCode, id: Option<&str>, code: i64, why: &str) -> Response {
    json_response(status, message::error(id, code, why, None))
}

/// An answer the gateway cannot read: its status passes (a client learns
/// that a session ended from a 404), its bytes do not.
fn unreadable(status: StatusCode, why: &str) -> Response {
    let status = if status.is_success() {
        StatusCode::BAD_GATEWAY
    } else {
        status
    };
    json_error(
        status,
        None,
        message::INTERNAL_ERROR,
        &format!("toolgate: {why}; it was not passed on"),
    )
}

fn failed(failure: &Failure, request_id: Option<&str>) -> Response {
    let mut response = json_error(
        failure.status(),
        None,
        message::INTERNAL_ERROR,
        &failure.message(),
    );
    if let Some(id) = request_id {
        tag(&mut response, id);
    }
    response
}

fn tag(response: &mut Response, request_id: &str) {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pairs: &[(&'static str, &'static str)], body: &str) -> Result<(), String> {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers_agree(&headers, &Body::read(body.as_bytes()).unwrap())
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;

    #[test]
    fn modern_headers_must_agree_with_the_body() {
        let v = ("mcp-protocol-version", "2026-07-28");
        assert_eq!(
            check(
                &[v, ("mcp-method", "tools/call"), ("mcp-name", "get_weather")],
                CALL
            ),
            Ok(())
        );
        assert!(check(
            &[v, ("mcp-method", "tools/call"), ("mcp-name", "read_file")],
            CALL
        )
        .unwrap_err()
        .contains("does not match"));
        assert!(check(
            &[v, ("mcp-method", "tools/list"), ("mcp-name", "get_weather")],
            CALL
        )
        .is_err());
        assert!(check(&[v, ("mcp-method", "tools/call")], CALL)
            .unwrap_err()
            .contains("missing"));
        assert!(check(&[v, ("mcp-name", "get_weather")], CALL)
            .unwrap_err()
            .contains("missing"));
        // "get_weather" in the Base64 sentinel form.
        assert_eq!(
            check(
                &[
                    v,
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "=?base64?Z2V0X3dlYXRoZXI=?=")
                ],
                CALL
            ),
            Ok(())
        );
        assert!(check(
            &[
                ("mcp-protocol-version", "2026-08-01"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "get_weather")
            ],
            CALL
        )
        .is_err());
        // Older versions need no headers, but a header sent must agree.
        assert_eq!(
            check(&[("mcp-protocol-version", "2025-11-25")], CALL),
            Ok(())
        );
        assert!(check(
            &[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-name", "other")
            ],
            CALL
        )
        .is_err());
        assert!(check(
            &[
                ("mcp-method", "tools/call"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "get_weather")
            ],
            CALL
        )
        .is_err());
    }
}
