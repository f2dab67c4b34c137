//! Streams: text passes through as it arrives; tool calls are held.
//!
//! The upstream's `text/event-stream` goes through an
//! [`Assembler`](toolgate::Assembler) chunk by chunk. Each whole event is
//! forwarded at once when it concerns no call and nothing is held before
//! it (so the client sees events in their order); from the first event
//! that concerns a call, everything is held. A call whose name alone is
//! refused stops the stream at once. When the upstream ends, the whole
//! stream is checked: if it passes, the record is committed, then the held
//! events are released, the last one carrying the idempotency keys in an
//! SSE comment (`: x-toolgate-idempotency-keys: k1,k2`) and in an HTTP
//! trailer; if not, the held events are dropped and one
//! `guardrails_violation` error event ends the stream. No fragment of a
//! blocked call is ever sent.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use tokio::sync::mpsc;
use toolgate::{Assembler, Framing, StreamEvent, Violation, ViolationCode};

use crate::error::Failure;
use crate::follow_up;
use crate::providers::Provider;
use crate::proxy::{release_whole, Exchange, IDEMPOTENCY_KEYS};
use crate::request;
use crate::Gateway;

/// Frames waiting for the client; small, so a slow client slows the
/// upstream read instead of growing memory.
const CLIENT_QUEUE: usize = 64;

type Sender = mpsc::Sender<Result<Frame<Bytes>, Infallible>>;

pub(crate) async fn run(
    gw: Arc<Gateway>,
    exchange: &Exchange,
    upstream_headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failure> {
    let asked = Instant::now();
    let mut upstream = request::send(&gw, exchange, upstream_headers, body).await?;
    gw.metrics.upstream(exchange.route(), asked.elapsed());
    let status = upstream.status();
    let mut headers = request::client_headers(upstream.headers());
    let is_sse = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        });
    if !status.is_success() || !is_sse {
        // An error, or a whole body where a stream was asked for: read and
        // check it whole.
        let deadline = tokio::time::Instant::from_std(asked) + gw.config.upstream_timeout;
        let answer =
            request::read_response(&mut upstream, gw.config.max_response_bytes, deadline).await?;
        return release_whole(&gw, exchange, status, headers, answer).await;
    }
    exchange.tag(&mut headers);
    headers.insert(
        axum::http::header::TRAILER,
        HeaderValue::from_static(IDEMPOTENCY_KEYS),
    );
    let (sender, mut receiver) = mpsc::channel(CLIENT_QUEUE);
    let exchange = exchange.clone();
    tokio::spawn(async move {
        pump(&gw, &exchange, upstream, &sender).await;
    });
    let body = http_body_util::StreamBody::new(futures_util::stream::poll_fn(move |cx| {
        receiver.poll_recv(cx)
    }));
    let mut response = Response::new(axum::body::Body::new(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

/// Why reading the upstream stopped.
enum End {
    /// The stream ended (`cut`: before its own last event), or a call was
    /// refused early: judge what came.
    Judge { cut: bool },
    /// The upstream failed or stalled: nothing held is released.
    Failed(Failure),
    /// The client went away: stop.
    ClientGone,
}

/// Read the upstream, forward what may pass, hold the rest, then release
/// or block.
async fn pump(gw: &Gateway, exchange: &Exchange, mut upstream: reqwest::Response, out: &Sender) {
    let mut assembler = Assembler::new(Framing::Sse, *gw.policy.limits());
    let mut held: Vec<Vec<u8>> = Vec::new();
    // The Responses answer's id (its first event), for follow-ups.
    let mut response: Option<Vec<u8>> = None;
    let max = gw.config.max_response_bytes;
    let mut received = 0usize;
    let end = loop {
        let chunk = match tokio::time::timeout(gw.config.upstream_timeout, upstream.chunk()).await {
            Err(_) => break End::Failed(Failure::UpstreamTimeout),
            Ok(Err(err)) if err.is_timeout() => break End::Failed(Failure::UpstreamTimeout),
            Ok(Err(err)) => {
                break End::Failed(Failure::UpstreamUnavailable(request::upstream_reason(&err)))
            }
            Ok(Ok(chunk)) => chunk,
        };
        received = received.saturating_add(chunk.as_ref().map_or(0, Bytes::len));

        let events = match &chunk {
            Some(bytes) => assembler.push(bytes),
            None => assembler.close(),
        };
        let mut refused = false;
        for event in events {
            match event {
                StreamEvent::Frame { raw, hold, .. } => {
                    if response.is_none() && exchange.provider == Provider::OpenAiResponses {
                        response = follow_up::event_data(&raw)
                            .filter(|data| follow_up::response_id(data).is_some());
                    }
                    if hold || !held.is_empty() {
                        held.push(raw);
                    } else if out.send(Ok(Frame::data(Bytes::from(raw)))).await.is_err() {
                        break;
                    }
                }
                StreamEvent::CallNamed { name, .. } => {
                    refused |= gw
                        .policy
                        .name_violation(exchange.declared.as_deref(), &name)
                        .is_some();
                }
                // The upstream's own error: `ended()` is now true, so the
                // stream is judged, not cut.
                StreamEvent::CallComplete { .. } | StreamEvent::UpstreamError => {}
            }
        }
        if out.is_closed() {
            break End::ClientGone;
        }
        if refused || assembler.has_violation() {
            break End::Judge { cut: false };
        }
        if chunk.is_none() {
            break End::Judge {
                cut: !assembler.ended(),
            };
        }
        if received > max {
            break End::Failed(Failure::UpstreamTooLarge { max });
        }
    };
    let failure = match end {
        End::ClientGone => return,
        End::Failed(failure) => failure,
        End::Judge { cut } => {
            let mut detection = assembler.finish();
            if cut {
                // The body ended before the stream's own last event: what it
                // held of a call may be a prefix of what the model wrote.
                detection
                    .violations
                    .push(Violation::payload(ViolationCode::MalformedPayload, CUT));
            }
            let mut verdict = exchange.judge(gw, detection);
            if cut {
                last_the_cut(&mut verdict);
            }
            match exchange.seal(gw, verdict, 1).await {
                Err(failure) => failure,
                Ok((verdict, keys)) => {
                    if let Some(event) = &response {
                        exchange.remember(gw, &verdict, event);
                    }
                    release(gw, exchange, held, &keys, out).await;
                    return;
                }
            }
        }
    };
    drop(upstream);
    exchange.count_failure(gw, &failure);
    let event = exchange.provider.error_event(&failure);
    let _ = out.send(Ok(Frame::data(Bytes::from(event)))).await;
}

/// Send the held events, the last one with the keys in a comment, then the
/// keys as a trailer.
async fn release(
    gw: &Gateway,
    exchange: &Exchange,
    mut held: Vec<Vec<u8>>,
    keys: &[String],
    out: &Sender,
) {
    if !keys.is_empty() {
        let comment = format!(": {IDEMPOTENCY_KEYS}: {}\n", keys.join(","));
        let last = held
            .iter()
            .rposition(|raw| has_data(raw))
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
        if out.send(Ok(Frame::data(Bytes::from(raw)))).await.is_err() {
            return;
        }
    }
    if !keys.is_empty() {
        let mut trailers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&keys.join(",")) {
            trailers.insert(HeaderName::from_static(IDEMPOTENCY_KEYS), value);
            let _ = out.send(Ok(Frame::trailers(trailers))).await;
        }
    }
    gw.metrics
        .released(exchange.route(), exchange.started.elapsed());
}

/// Why a stream that ended early is blocked.
const CUT: &str = "the stream ended before its last event";

/// Report the cut after the reasons the stream's content gives, so the
/// first code (the OpenAI `code`) says what was wrong with the calls when
/// something was.
fn last_the_cut(verdict: &mut toolgate::Verdict) {
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

/// Whether an event's bytes hold a `data` field.
fn has_data(raw: &[u8]) -> bool {
    data_lines(raw).next().is_some()
}

/// The values of an event's `data` fields, in order: a line's field name
/// runs to its first colon (any case, leading blanks skipped, as the
/// assembler's framer reads it), and one space after the colon is not part
/// of the value.
pub(crate) fn data_lines(raw: &[u8]) -> impl Iterator<Item = &[u8]> {
    raw.split(|&b| b == b'\n' || b == b'\r').filter_map(|line| {
        let line = line.trim_ascii_start();
        let colon = line.iter().position(|&b| b == b':').unwrap_or(line.len());
        if !line[..colon].eq_ignore_ascii_case(b"data") {
            return None;
        }
        let value = line.get(colon + 1..).unwrap_or_default();
        Some(value.strip_prefix(b" ").unwrap_or(value))
    })
}
