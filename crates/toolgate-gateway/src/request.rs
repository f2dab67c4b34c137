//! The client's side: read the request within its bounds, and check what
//! it sends back (its tool results, its tool declarations) before the
//! upstream sees it.

use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::Value;
use toolgate::{
    detect_with, Caller, CheckOptions, DeclaredTools, Format, Phase, Verdict, Violation,
    ViolationCode,
};

use crate::error::Failure;
use crate::follow_up::Earlier;
use crate::Gateway;

/// The request id header: taken from the client, or generated.
pub(crate) const REQUEST_ID: &str = "x-request-id";

/// Read a body of at most `max` bytes within `wait`.
pub(crate) async fn read_body(
    body: axum::body::Body,
    max: usize,
    wait: Duration,
) -> Result<Bytes, Failure> {
    let read = http_body_util::Limited::new(body, max).collect();
    match tokio::time::timeout(wait, read).await {
        Err(_) => Err(Failure::RequestTimeout),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(err)) if err.is::<http_body_util::LengthLimitError>() => {
            Err(Failure::RequestTooLarge { max })
        }
        Ok(Err(_)) => Err(Failure::BadRequest(
            "the request body could not be read".to_owned(),
        )),
    }
}

/// The client's `X-Request-Id` when it is a sane token (visible ASCII, at
/// most 200 bytes), else a [`new_request_id`].
pub(crate) fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|id| !id.is_empty() && id.len() <= 200 && id.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(new_request_id, str::to_owned)
}

/// A request id the gateway makes: a UUID, version 7, time-ordered, so the
/// audit index adds each request at the end of its `request_id` indexes
/// rather than at a random page of each (at 1000 requests a second, half
/// of what the index wrote to the disk).
pub(crate) fn new_request_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The keys of a request the gateway reads itself; the rest goes upstream
/// as sent.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Envelope {
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    model: Option<Value>,
    /// A Responses follow-up: the conversation so far is kept upstream.
    #[serde(default)]
    pub(crate) previous_response_id: Option<String>,
    /// A Responses conversation kept upstream: its id, or `{"id": ...}`.
    #[serde(default)]
    conversation: Option<Conversation>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Conversation {
    Id(String),
    Object { id: String },
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
                json_reason(&err)
            ))
        })
    }

    pub(crate) fn model(&self) -> Option<String> {
        match &self.model {
            Some(Value::String(model)) => Some(model.clone()),
            _ => None,
        }
    }

    pub(crate) fn conversation(&self) -> Option<String> {
        match &self.conversation {
            Some(Conversation::Id(id) | Conversation::Object { id }) => Some(id.clone()),
            None => None,
        }
    }
}

/// A serde error's reason without the value it may quote.
fn json_reason(err: &serde_json::Error) -> String {
    let at = format!("line {} column {}", err.line(), err.column());
    let text = err.to_string();
    if text.starts_with("duplicate field") {
        let field = text.split('`').nth(1).unwrap_or_default();
        format!("duplicate key `{field}` ({at})")
    } else if err.is_data() {
        format!("`stream` must be true or false, `previous_response_id` a string and `conversation` an id or an object with one ({at})")
    } else {
        format!("not valid JSON ({at})")
    }
}

/// Check what the request sends back (`Phase::Request`): every tool result
/// answers a call the conversation made, once, in its turn; the request's
/// own tool declarations are valid; the payload is readable and within
/// its bounds. The calls of earlier turns were checked when they were
/// made. `earlier` holds the calls this gateway released to the response
/// a Responses follow-up continues, which its first results answer; every
/// `mcp_approval_response` answers an approval request this gateway
/// released to this caller (`responses`: the route is the Responses API).
/// Passing, the request's tools, compiled, to check its answer with.
pub(crate) fn check(
    gw: &Gateway,
    body: &[u8],
    caller: Option<&Caller>,
    earlier: Option<&Earlier>,
    responses: bool,
) -> Result<Option<Arc<DeclaredTools>>, Box<Verdict>> {
    let policy = &*gw.policy;
    let mut detection = detect_with(body, policy.limits());
    // Results for calls this gateway never released are refused, even
    // when the request says the provider keeps the conversation.
    detection.continues = false;
    if let Some(earlier) = earlier {
        crate::follow_up::link(&mut detection, earlier);
    }
    if responses
        || detection
            .results
            .iter()
            .any(|r| r.format == Format::OpenAiResponses)
    {
        let caller = caller.map(|c| c.id.as_str());
        detection
            .violations
            .extend(unreleased_approvals(gw, body, caller));
    }
    // The policy keeps each tool list compiled, found again by its text.
    let declared = policy.declared(&detection.tools).map(|found| {
        gw.metrics.tool_list(found.reused);
        found.tools
    });
    let options = CheckOptions {
        caller,
        declared: declared.as_deref(),
        phase: Phase::Request,
        ..CheckOptions::default()
    };
    let verdict = policy.judge(detection, options);
    if verdict.passed {
        Ok(declared)
    } else {
        Err(Box::new(verdict))
    }
}

/// The request's `mcp_approval_response`s that answer no approval request
/// this gateway released to `caller`, or whose request the client sent
/// again asking something else: approval request items the client sends
/// never make an approval valid by themselves.
fn unreleased_approvals(gw: &Gateway, body: &[u8], caller: Option<&str>) -> Vec<Violation> {
    let items = crate::follow_up::approval_items(body);
    let mut refused = Vec::new();
    for (at, id) in items.responses.iter().enumerate() {
        let copies: Vec<&str> = items
            .requests
            .iter()
            .filter(|(request, _)| Some(request) == id.as_ref())
            .map(|(_, asks)| asks.as_str())
            .collect();
        if id
            .as_deref()
            .is_some_and(|id| gw.released.approvable(id, caller, &copies))
        {
            continue;
        }
        let message = match id {
            Some(id) => format!(
                "mcp_approval_response #{at} answers approval request id '{id}', which this gateway did not release to this caller"
            ),
            None => format!("mcp_approval_response #{at} names no approval request id"),
        };
        refused.push(Violation::payload(
            ViolationCode::ResultUnknownCallId,
            message,
        ));
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_request_id_is_a_time_ordered_uuid() {
        let none = HeaderMap::new();
        let ids: Vec<String> = (0..1000).map(|_| request_id(&none)).collect();
        for id in &ids {
            let uuid = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(uuid.get_version_num(), 7, "{id}");
        }
        // Made one after another, they sort in the order they were made.
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);

        let mut sent = HeaderMap::new();
        sent.insert(REQUEST_ID, "client-7".parse().unwrap());
        assert_eq!(request_id(&sent), "client-7");
        sent.insert(REQUEST_ID, "two words".parse().unwrap());
        assert_ne!(request_id(&sent), "two words");
    }
}
