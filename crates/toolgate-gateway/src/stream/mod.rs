//! Streams: text passes through as it arrives; tool calls, and the last
//! event, are held.
//!
//! The upstream's `text/event-stream`, decoded, goes through the library's
//! [`Assembler`] event by event, the read stopping at the first event it
//! refuses (so what is read does not depend on how the bytes were
//! chunked). Each whole event is forwarded at once when it concerns no
//! call, is not the stream's last (Chat `[DONE]`, `message_stop`,
//! `response.completed`, an error event) and nothing is held before it
//! (so the client sees events in their order); from the first event that
//! concerns a call, or that cannot be read, everything is held. A call
//! whose name alone is refused stops the read at that event. When the
//! upstream ends, the whole stream is judged: if it passes, the record is
//! committed, then the held events are released, the last one carrying
//! the idempotency keys in an SSE comment (`: x-toolgate-idempotency-keys:
//! k1,k2`) and in an HTTP trailer; if not, the held events are dropped
//! and, with `on_violation: retry`, the model is asked again and its new
//! answer continues the same stream ([`splice`]; a Responses stream is
//! held whole until its verdict instead, so the client reads the passing
//! attempt as one response); a retry the upstream answers with its own
//! error ends the stream with that error; else one `guardrails_violation`
//! error event ends the stream. The upstream's own error event, carrying
//! no call, ends the stream as the upstream sent it, once its record is
//! committed. No fragment of a blocked call is ever sent.

mod splice;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use serde_json::Value;
use tokio::sync::mpsc;
use toolgate::detect::sse;
use toolgate::policy::OnViolation;
use toolgate::{Assembler, Framing, StreamEvent, ToolCall, Verdict, Violation, ViolationCode};

use self::splice::Splice;
use crate::error::Failure;
use crate::exchange::Exchange;
use crate::follow_up::ApprovalItems;
use crate::upstream::{self, Answer, Read};
use crate::whole::{Checked, ErrorAnswer, Sent, IDEMPOTENCY_KEYS};
use crate::Gateway;

/// Frames waiting for the client; small, so a slow client slows the
/// upstream read instead of growing memory.
const CLIENT_QUEUE: usize = 64;

type Sender = mpsc::Sender<Result<Frame<Bytes>, Infallible>>;

/// Answer a stream request whose upstream answered with a stream: the
/// response starts now; its body is written as the upstream's is read.
///
/// The pump that reads the upstream runs inside the response body, polled
/// by the connection's own task whenever the client's side is ready for
/// more: an event the upstream sends reaches the client's socket without
/// waking a second task, and a client that goes away drops the pump with
/// the body.
pub(crate) fn run(gw: Arc<Gateway>, exchange: &Exchange, answer: Answer, sent: Sent) -> Response {
    let status = answer.status;
    let mut headers = answer.headers.clone();
    exchange.tag(&mut headers);
    headers.insert(header::TRAILER, HeaderValue::from_static(IDEMPOTENCY_KEYS));
    let (sender, mut receiver) = mpsc::channel(CLIENT_QUEUE);
    let exchange = exchange.clone();
    let mut pumping = Some(Box::pin(async move {
        let mut client = Client {
            out: sender,
            splice: Splice::new(exchange.provider, retries(&gw) > 0),
        };
        pump(&gw, &exchange, answer, &sent, &mut client).await;
    }));
    let body = http_body_util::StreamBody::new(futures_util::stream::poll_fn(move |cx| {
        // The pump first: it fills the queue as far as the upstream has
        // sent; when it is done, its end of the queue is dropped and the
        // body ends once the queue is empty.
        if let Some(pump) = pumping.as_mut() {
            if pump.as_mut().poll(cx).is_ready() {
                pumping = None;
            }
        }
        receiver.poll_recv(cx)
    }));
    let mut response = Response::new(axum::body::Body::new(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Whether each answer's events are all held until its verdict: a
/// Responses stream the policy may ask again.
fn holds_whole(gw: &Gateway, exchange: &Exchange) -> bool {
    exchange.provider.keeps_responses() && retries(gw) > 0
}

/// How many times a blocked stream may be sent back to the model.
fn retries(gw: &Gateway) -> u32 {
    let settings = gw.policy.gateway();
    if settings.on_violation == OnViolation::Retry {
        settings.max_retries
    } else {
        0
    }
}

/// The client's end of the stream, and what it has seen.
struct Client {
    out: Sender,
    splice: Splice,
}

impl Client {
    /// Send one frame; false when the client went away.
    async fn send(&mut self, raw: Vec<u8>) -> bool {
        self.splice.sent(&raw);
        self.out
            .send(Ok(Frame::data(Bytes::from(raw))))
            .await
            .is_ok()
    }
}

/// How reading one upstream answer ended.
enum Ending {
    /// Judged: the verdict, the frames held, the calls (kept to ask again
    /// when the policy retries) and the Responses event with the
    /// response's id.
    Judged {
        verdict: Verdict,
        held: Vec<Vec<u8>>,
        calls: Vec<ToolCall>,
        response: Option<Vec<u8>>,
    },
    /// The upstream's own error event, carrying no call: sent as it came
    /// (when it was not sent at once) once its record is written.
    UpstreamError(Verdict, Option<Vec<u8>>),
    /// The upstream failed, stalled, or sent what cannot be read.
    Failed(Failure),
    /// The client went away: stop.
    ClientGone,
}

/// Read each answer, asking again while the policy allows, then release
/// or block.
async fn pump(gw: &Gateway, exchange: &Exchange, first: Answer, sent: &Sent, client: &mut Client) {
    let mut answer = first;
    let mut request: Option<Value> = None;
    let mut attempts = 1u32;
    let failure = loop {
        // A Responses stream the policy may ask again is held whole until
        // its verdict: the client sees the passing attempt's response
        // only, one coherent response (its id, items and numbers), as the
        // SDKs require; other routes continue the stream the client has.
        let whole = holds_whole(gw, exchange);
        match read(
            gw,
            exchange,
            &mut answer,
            client,
            attempts > 1 && !whole,
            whole,
        )
        .await
        {
            Ending::ClientGone => return,
            Ending::Failed(failure) => break failure,
            Ending::UpstreamError(verdict, error) => {
                let recorded = exchange.upstream_error(gw, &verdict, attempts).await;
                match recorded {
                    Ok(()) => {
                        gw.metrics
                            .upstream_error(exchange.route(), exchange.started.elapsed());
                        if let Some(error) = error {
                            let _ = client.send(error).await;
                        }
                        return;
                    }
                    Err(failure) => break failure,
                }
            }
            Ending::Judged {
                verdict,
                held,
                calls,
                response,
            } => {
                if !verdict.passed && attempts <= retries(gw) {
                    let approvals = approval_requests(&held);
                    match again(
                        gw,
                        exchange,
                        sent,
                        &mut request,
                        &calls,
                        &approvals,
                        &verdict,
                    )
                    .await
                    {
                        Err(failure) => break failure,
                        Ok(None) => {}
                        Ok(Some(next)) if next.status.is_success() && next.is_event_stream() => {
                            drop(held);
                            answer = next;
                            attempts += 1;
                            continue;
                        }
                        Ok(Some(next)) => {
                            match answered_whole(gw, exchange, next, attempts + 1, client).await {
                                Some(Ok(())) => return,
                                Some(Err(failure)) => break failure,
                                // An answer the stream cannot continue with:
                                // the turn the client has is blocked.
                                None => {}
                            }
                        }
                    }
                }
                match exchange.seal(gw, verdict, attempts).await {
                    Err(failure) => break failure,
                    Ok((verdict, keys)) => {
                        exchange
                            .remember(gw, &verdict, response.as_deref(), || approval_items(&held));
                        release(held, &keys, client).await;
                        gw.metrics
                            .released(exchange.route(), exchange.started.elapsed());
                        return;
                    }
                }
            }
        }
    };
    exchange.count_failure(gw, &failure);
    let event = exchange.provider.error_event(&failure);
    let _ = client.send(event).await;
}

/// Ask the model again with its errors: its answer, whatever it is;
/// `None` when the turn cannot be sent back.
async fn again(
    gw: &Gateway,
    exchange: &Exchange,
    sent: &Sent,
    request: &mut Option<Value>,
    calls: &[ToolCall],
    approvals: &[Value],
    verdict: &Verdict,
) -> Result<Option<Answer>, Failure> {
    let Some(body) = sent.again(request, |request| {
        exchange
            .provider
            .retry_calls(request, calls, approvals, verdict)
    }) else {
        return Ok(None);
    };
    tracing::debug!(request_id = %exchange.request_id, "sending the violations back to the model");
    upstream::send(gw, exchange, sent.headers.clone(), body)
        .await
        .map(Some)
}

/// A retry answered whole (an error status, or not a stream): the
/// upstream's own error, carrying no call, ends the stream as an error
/// event holding what it sent (or, when it cannot be read, the gateway's
/// `upstream_error`), audited `upstream_error`; a call in it is blocked.
/// `None`: a 2xx answer that is neither, which the stream cannot continue
/// with.
async fn answered_whole(
    gw: &Gateway,
    exchange: &Exchange,
    mut answer: Answer,
    attempts: u32,
    client: &mut Client,
) -> Option<Result<(), Failure>> {
    let read = match Checked::read(gw, exchange, &mut answer).await {
        Ok(read) => read,
        Err(failure) => return Some(Err(failure)),
    };
    let error = if answer.status.is_success() {
        let body = read.body.as_deref().unwrap_or_default();
        let is_error = read.verdict.calls.is_empty()
            && read.verdict.passed
            && toolgate::detect::is_upstream_error(body);
        if !is_error {
            if read.verdict.passed {
                return None;
            }
            return Some(Err(exchange
                .block(gw, read.verdict, "response", attempts)
                .await));
        }
        ErrorAnswer::AsSent
    } else {
        match read.error_status(&answer) {
            Some(error) => error,
            None => {
                return Some(Err(exchange
                    .block(gw, read.verdict, "response", attempts)
                    .await))
            }
        }
    };
    if let Err(failure) = exchange.upstream_error(gw, &read.verdict, attempts).await {
        return Some(Err(failure));
    }
    let event = match error {
        ErrorAnswer::AsSent => {
            let sse = read.is_sse();
            let body = read.body.unwrap_or_default();
            if sse {
                upstream::disowned(body.to_vec())
            } else {
                exchange.provider.upstream_error_event(&body)
            }
        }
        ErrorAnswer::Withheld(failure) => exchange.provider.error_event(&failure),
    };
    gw.metrics
        .upstream_error(exchange.route(), exchange.started.elapsed());
    let _ = client.send(event).await;
    Some(Ok(()))
}

/// Read one upstream answer: forward what may pass, hold the rest, judge.
/// A retried answer (`spliced`) is rewritten to continue the stream the
/// client has before it is read; `hold_all` holds every event until the
/// verdict.
async fn read(
    gw: &Gateway,
    exchange: &Exchange,
    answer: &mut Answer,
    client: &mut Client,
    spliced: bool,
    hold_all: bool,
) -> Ending {
    // The size is bounded here, by `max_response_bytes` on the bytes
    // received; the assembler's own bound leaves room for a retry's
    // rewritten events.
    let limits = toolgate::Limits {
        max_payload_bytes: gw.config.max_response_bytes.saturating_mul(2),
        ..gw.answer_limits()
    };
    let mut assembler = Assembler::new(Framing::Sse, limits);
    let mut framer = sse::Framer::new(usize::MAX);
    if spliced {
        client.splice.begin();
    }
    let mut held: Vec<Vec<u8>> = Vec::new();
    // The Responses answer's id (its first event), for follow-ups.
    let mut response: Option<Vec<u8>> = None;
    let max = gw.config.max_response_bytes;
    let mut received = 0usize;
    let refused = |name: &str| {
        gw.policy
            .name_violation(exchange.declared.as_deref(), name)
            .is_some()
    };
    let mut calls = Vec::new();
    let cut = loop {
        let chunk = match answer.chunk(gw.config.upstream_timeout).await {
            Ok(chunk) => chunk,
            Err(Read::Failed(failure)) => return Ending::Failed(failure),
            Err(Read::Unreadable(why)) => {
                return Ending::Judged {
                    verdict: exchange.unreadable(gw, why),
                    held: Vec::new(),
                    calls: Vec::new(),
                    response: None,
                }
            }
        };
        received = received.saturating_add(chunk.as_ref().map_or(0, Bytes::len));
        if received > max {
            // Nothing of the chunk that goes past the bound is read.
            return Ending::Failed(Failure::UpstreamTooLarge { max });
        }
        let events = next_events(
            &mut assembler,
            &mut framer,
            client,
            chunk.as_deref(),
            spliced,
            refused,
        );
        // Whether the last frame went to the client at once.
        let mut last = false;
        for event in events {
            match event {
                StreamEvent::Frame { raw, hold, .. } => {
                    let raw = upstream::disowned(raw);
                    if response.is_none() && exchange.provider.keeps_responses() {
                        response = sse::event_data(&raw)
                            .filter(|data| crate::follow_up::response_id(data).is_some());
                        if let Some(data) = &response {
                            exchange.bind(gw, data);
                        }
                    }
                    // The stream's last event waits for the record: a
                    // client that has it believes the answer complete.
                    if hold_all
                        || hold
                        || !held.is_empty()
                        || exchange.provider.is_final_event(&raw)
                    {
                        held.push(raw);
                        last = false;
                    } else {
                        last = true;
                        if !client.send(raw).await {
                            return Ending::ClientGone;
                        }
                    }
                }
                StreamEvent::UpstreamError => {
                    // The error event is the last frame, sent once its
                    // record is written; if it was held behind a call,
                    // that call is not released.
                    let error = if last { None } else { held.pop() };
                    return upstream_error(gw, exchange, assembler, error, response);
                }
                StreamEvent::CallNamed { .. } | StreamEvent::CallComplete { .. } => {}
            }
        }
        if client.out.is_closed() {
            return Ending::ClientGone;
        }
        if assembler.halted() || assembler.has_violation() {
            break false;
        }
        if chunk.is_none() {
            break !assembler.ended();
        }
    };
    Ending::Judged {
        verdict: judged(gw, exchange, assembler, cut, &mut calls),
        held,
        calls,
        response,
    }
}

/// What one more chunk of the upstream's answer (`None`: its end) tells:
/// each of its events read in turn (first rewritten to continue the
/// client's stream when `spliced`), up to the first that the assembler
/// refuses, so that what is read does not depend on how the upstream's
/// bytes were cut into chunks.
fn next_events(
    assembler: &mut Assembler,
    framer: &mut sse::Framer,
    client: &mut Client,
    chunk: Option<&[u8]>,
    spliced: bool,
    mut refused: impl FnMut(&str) -> bool,
) -> Vec<StreamEvent> {
    let mut whole_events = Vec::new();
    // Unbounded framer: it cannot refuse; the bytes are bounded by
    // `max_response_bytes` as they are received.
    let _ = framer.push(chunk.unwrap_or_default(), &mut whole_events);
    if chunk.is_none() {
        framer.finish(&mut whole_events);
    }
    let mut events = Vec::new();
    for event in whole_events {
        let raw = if spliced {
            client.splice.rewrite_event(&event)
        } else {
            event.raw
        };
        events.extend(assembler.push_until(&raw, &mut refused));
        if assembler.halted() || assembler.has_violation() {
            return events;
        }
    }
    if chunk.is_none() {
        events.extend(assembler.close());
    }
    events
}

/// How a stream ended by the upstream's own error event (`error`, when it
/// was held) ends: as that error, or blocked when the event carries more
/// than an error (a call, or anything else the gateway reads).
fn upstream_error(
    gw: &Gateway,
    exchange: &Exchange,
    assembler: Assembler,
    error: Option<Vec<u8>>,
    response: Option<Vec<u8>>,
) -> Ending {
    if let Some(data) = error.as_deref().and_then(sse::event_data) {
        if !exchange.provider.is_plain_error(&data) || !toolgate::detect::is_upstream_error(&data) {
            return Ending::Judged {
                verdict: error_with_a_call(gw, exchange, &data),
                held: Vec::new(),
                calls: Vec::new(),
                response,
            };
        }
    }
    let verdict = exchange.describe(gw, assembler.finish());
    Ending::UpstreamError(verdict, error)
}

/// The verdict of an error event that carries more than an error (a call,
/// a result, keys no error event has): its calls judged, and it refused
/// in any case.
fn error_with_a_call(gw: &Gateway, exchange: &Exchange, data: &[u8]) -> Verdict {
    let mut detection = toolgate::detect_with(data, &gw.answer_limits());
    detection.violations.push(Violation::payload(
        ViolationCode::MalformedPayload,
        "the upstream's error event carries more than an error (a tool call, or keys no error event has)",
    ));
    let mut verdict = exchange.judge(gw, detection);
    // What was wrong with the calls first, as for a cut stream.
    if let Some(at) = verdict
        .violations
        .iter()
        .position(|v| v.code == ViolationCode::MalformedPayload && v.call.is_none())
    {
        let moved = verdict.violations.remove(at);
        verdict.violations.push(moved);
    }
    verdict
}

/// The verdict of a stream read to its end (`cut`: before its own last
/// event) or to a refused name; its calls are kept in `calls` when the
/// policy may ask again.
fn judged(
    gw: &Gateway,
    exchange: &Exchange,
    assembler: Assembler,
    cut: bool,
    calls: &mut Vec<ToolCall>,
) -> Verdict {
    let mut detection = assembler.finish();
    if cut {
        // The body ended before the stream's own last event: what it held
        // of a call may be a prefix of what the model wrote.
        detection
            .violations
            .push(Violation::payload(ViolationCode::MalformedPayload, CUT));
    }
    if retries(gw) > 0 {
        calls.clone_from(&detection.calls);
    }
    let mut verdict = exchange.judge(gw, detection);
    if cut {
        last_the_cut(&mut verdict);
    }
    verdict
}

/// The approval requests among the held events, found before they are
/// released: an event that spells no approval is not read
/// ([`ApprovalItems::add_json`]).
fn approval_items(held: &[Vec<u8>]) -> ApprovalItems {
    let mut items = ApprovalItems::default();
    for data in held.iter().filter_map(|raw| sse::event_data(raw)) {
        items.add_json(&data);
    }
    items
}

/// The Responses `mcp_approval_request` items among the held events (each
/// once, as last sent), to send back with the model's errors.
fn approval_requests(held: &[Vec<u8>]) -> Vec<Value> {
    let mut items: Vec<Value> = Vec::new();
    for data in held.iter().filter_map(|raw| sse::event_data(raw)) {
        if !crate::follow_up::may_hold_approval(&data) {
            continue;
        }
        let Ok(event) = serde_json::from_slice::<Value>(&data) else {
            continue;
        };
        let output = event["response"]["output"].as_array().into_iter().flatten();
        for item in std::iter::once(&event["item"]).chain(output) {
            if item["type"] != "mcp_approval_request" {
                continue;
            }
            items.retain(|seen| seen["id"] != item["id"]);
            items.push(item.clone());
        }
    }
    items
}

/// Send the held events, the last one with the keys in a comment, then the
/// keys as a trailer.
async fn release(mut held: Vec<Vec<u8>>, keys: &[String], client: &mut Client) {
    if !keys.is_empty() {
        let comment = format!(": {IDEMPOTENCY_KEYS}: {}\n", keys.join(","));
        let last = held
            .iter()
            .rposition(|raw| sse::event_data(raw).is_some())
            .or(held.len().checked_sub(1));
        match last {
            Some(at) => {
                let raw = &mut held[at];
                // A frame may start with the LF that ended the previous
                // event's CR: the comment goes after it.
                let start = usize::from(raw.first() == Some(&b'\n'));
                raw.splice(start..start, comment.into_bytes());
            }
            None => held.push(format!("{comment}\n").into_bytes()),
        }
    }
    for raw in held {
        if !client.send(raw).await {
            return;
        }
    }
    if !keys.is_empty() {
        let mut trailers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&keys.join(",")) {
            trailers.insert(HeaderName::from_static(IDEMPOTENCY_KEYS), value);
            let _ = client.out.send(Ok(Frame::trailers(trailers))).await;
        }
    }
}

/// Why a stream that ended early is blocked.
const CUT: &str = "the stream ended before its last event";

/// Report the cut after the reasons the stream's content gives, so the
/// first code (the OpenAI `code`) says what was wrong with the calls when
/// something was.
fn last_the_cut(verdict: &mut Verdict) {
    let cut = |v: &Violation| v.code == ViolationCode::MalformedPayload && v.message == CUT;
    if let Some(at) = verdict.violations.iter().position(cut) {
        let moved = verdict.violations.remove(at);
        verdict.violations.push(moved);
    }
    if let Some(at) = verdict.failures.iter().position(|f| f == CUT) {
        let moved = verdict.failures.remove(at);
        verdict.failures.push(moved);
    }
    verdict.reasoning = verdict.failures.join("; ");
}
