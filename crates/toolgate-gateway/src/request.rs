//! The request side: read the body within its bound, check the tool
//! results it sends back, and pass it upstream with the right headers.

use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

use toolgate::{detect_with, Caller, CheckOptions, DeclaredTools, Phase, Verdict};

use crate::error::Failure;
use crate::providers::Provider;
use crate::proxy::Exchange;
use crate::Gateway;

/// The request id header: taken from the client, or generated.
pub(crate) const REQUEST_ID: &str = "x-request-id";

/// Read a body of at most `max` bytes.
pub(crate) async fn read_body(body: axum::body::Body, max: usize) -> Result<Bytes, Failure> {
    match http_body_util::Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => {
            Err(Failure::RequestTooLarge { max })
        }
        Err(_) => Err(Failure::BadRequest(
            "the request body could not be read".to_owned(),
        )),
    }
}

/// The client's `X-Request-Id` when it is a sane token (visible ASCII, at
/// most 200 bytes), else a new UUID.
pub(crate) fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|id| !id.is_empty() && id.len() <= 200 && id.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
}

/// The keys of a request the gateway reads itself; the rest goes upstream
/// as sent.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Envelope {
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) model: Option<Value>,
    /// A Responses follow-up: the conversation so far is kept upstream.
    #[serde(default)]
    pub(crate) previous_response_id: Option<String>,
}

impl Envelope {
    pub(crate) fn read(body: &[u8]) -> Result<Envelope, Failure> {
        if !body.trim_ascii_start().starts_with(b"{") {
            return Err(Failure::BadRequest(
                "the request body must be a JSON object".to_owned(),
            ));
        }
        serde_json::from_slice(body).map_err(|err| {
            Failure::BadRequest(format!(
                "the request body is not a valid request: {}",
                toolgate_json_reason(&err)
            ))
        })
    }

    pub(crate) fn model(&self) -> Option<String> {
        match &self.model {
            Some(Value::String(model)) => Some(model.clone()),
            _ => None,
        }
    }
}

/// A serde error's reason without the value it may quote.
fn toolgate_json_reason(err: &serde_json::Error) -> String {
    let at = format!("line {} column {}", err.line(), err.column());
    let text = err.to_string();
    if text.starts_with("duplicate field") {
        let field = text.split('`').nth(1).unwrap_or_default();
        format!("duplicate key `{field}` ({at})")
    } else if err.is_data() {
        format!("`stream` must be true or false and `previous_response_id` a string ({at})")
    } else {
        format!("not valid JSON ({at})")
    }
}

/// What the request declared and whether it may go upstream.
pub(crate) struct RequestCheck {
    /// The request's `tools`, compiled, merged with the policy's when its
    /// response is checked.
    pub(crate) declared: Option<Arc<DeclaredTools>>,
}

/// Check what the request sends back: every tool result answers a call the
/// conversation made, once, with its name; the request's own tool
/// declarations are valid; the payload is readable and within its bounds.
/// The calls of earlier turns were checked when they were made.
/// `earlier` holds the calls of the response a Responses follow-up
/// continues (`previous_response_id`), which its results answer.
pub(crate) fn check(
    gw: &Gateway,
    body: &[u8],
    caller: Option<&Caller>,
    earlier: Option<&[(String, String)]>,
) -> Result<RequestCheck, Box<Verdict>> {
    let policy = &*gw.policy;
    let mut detection = detect_with(body, policy.limits());
    // Results for calls this gateway never released are refused, even
    // when the request says the provider keeps the conversation.
    detection.continues = false;
    if let Some(earlier) = earlier {
        crate::follow_up::link(&mut detection, earlier);
    }
    let declared = gw.declared.get(policy, &detection.tools);
    let options = CheckOptions {
        caller,
        declared: declared.as_deref(),
        phase: Phase::Request,
        ..CheckOptions::default()
    };
    let verdict = policy.judge(detection, options);
    if verdict.passed {
        Ok(RequestCheck { declared })
    } else {
        Err(Box::new(verdict))
    }
}

/// Headers never forwarded: hop-by-hop ones, those the client library sets
/// again, and `accept-encoding` (the gateway must read the body it checks).
fn dropped(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
            | "accept-encoding"
    )
}

/// The headers sent upstream: the client's, less the dropped ones and the
/// trusted caller header, with the upstream key when one is configured.
pub(crate) fn upstream_headers(
    gw: &Gateway,
    provider: Provider,
    headers: &HeaderMap,
    request_id: &str,
) -> HeaderMap {
    let caller_header = gw.policy.access().caller_header.as_deref();
    let mut out = HeaderMap::with_capacity(headers.len() + 2);
    for (name, value) in headers {
        if dropped(name) || caller_header.is_some_and(|h| name.as_str().eq_ignore_ascii_case(h)) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if gw.config.upstream_key.is_some() || crate::caller::by_key(&gw.policy) {
        // The upstream's key replaces the client's; a caller's toolgate key
        // never leaves the gateway.
        out.remove(header::AUTHORIZATION);
        out.remove("x-api-key");
    }
    if let Some((name, value)) = gw
        .config
        .upstream_key
        .as_deref()
        .and_then(|key| provider.key_header(key))
    {
        out.insert(name, value);
    }
    // The body is the JSON that was checked, whatever the client called it.
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(request_id) {
        out.insert(REQUEST_ID, value);
    }
    out
}

/// Response headers passed to the client: the upstream's, less hop-by-hop
/// ones and the length (the gateway frames the body itself).
pub(crate) fn client_headers(upstream: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(upstream.len() + 2);
    for (name, value) in upstream {
        if dropped(name) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Send `body` upstream; the headers of its answer within the timeout.
pub(crate) async fn send(
    gw: &Gateway,
    exchange: &Exchange,
    headers: HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, Failure> {
    let mut url = format!("{}{}", gw.config.upstream, exchange.provider.path());
    if let Some(query) = exchange.query.as_deref().filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(query);
    }
    let sent = gw.client.post(url).headers(headers).body(body).send();
    match tokio::time::timeout(gw.config.upstream_timeout, sent).await {
        Err(_) => Err(Failure::UpstreamTimeout),
        Ok(Err(err)) if err.is_timeout() => Err(Failure::UpstreamTimeout),
        Ok(Err(err)) => Err(Failure::UpstreamUnavailable(upstream_reason(&err))),
        Ok(Ok(response)) => Ok(response),
    }
}

/// Why the upstream failed, without the URL's credentials or query.
pub(crate) fn upstream_reason(err: &reqwest::Error) -> String {
    if err.is_connect() {
        "cannot connect".to_owned()
    } else if err.is_body() || err.is_decode() {
        "the response broke off".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

/// The whole body of `response`, within `max` bytes and the deadline.
pub(crate) async fn read_response(
    response: &mut reqwest::Response,
    max: usize,
    deadline: tokio::time::Instant,
) -> Result<Bytes, Failure> {
    if response
        .content_length()
        .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > max))
    {
        return Err(Failure::UpstreamTooLarge { max });
    }
    let mut body = bytes::BytesMut::new();
    loop {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(Failure::UpstreamTimeout),
            Ok(Err(err)) if err.is_timeout() => return Err(Failure::UpstreamTimeout),
            Ok(Err(err)) => return Err(Failure::UpstreamUnavailable(upstream_reason(&err))),
            Ok(Ok(None)) => return Ok(body.freeze()),
            Ok(Ok(Some(chunk))) => {
                if body.len() + chunk.len() > max {
                    return Err(Failure::UpstreamTooLarge { max });
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}
