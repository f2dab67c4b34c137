//! One proxied request: identify the caller, check the request, send it
//! upstream, check the response, audit, then release or block. Whole
//! bodies are handled here (with `on_violation: retry`); streams in
//! [`crate::stream`].

use std::sync::Arc;
use std::time::Instant;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;
use toolgate::policy::OnViolation;
use toolgate::{detect_with, Caller, CheckOptions, DeclaredTools, Detection, Phase, Verdict};

use crate::audit::{now_ms, AuditCall, AuditRecord, AuditViolation};
use crate::error::Failure;
use crate::limits::Tally;
use crate::providers::Provider;
use crate::request::{self, Envelope, REQUEST_ID};
use crate::{caller, idempotency, stream, Gateway};

/// The response header holding the released calls' idempotency keys,
/// comma-separated, in call order.
pub const IDEMPOTENCY_KEYS: &str = "x-toolgate-idempotency-keys";

/// What one request carries from its check to its response.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub(crate) provider: Provider,
    pub(crate) request_id: String,
    pub(crate) caller: Option<Caller>,
    pub(crate) model: Option<String>,
    pub(crate) stream: bool,
    /// The request's declared tools, compiled, merged with the policy's.
    pub(crate) declared: Option<Arc<DeclaredTools>>,
    /// The client's query string, passed upstream (`?api-version=...`).
    pub(crate) query: Option<String>,
    pub(crate) started: Instant,
}

impl Exchange {
    pub(crate) fn route(&self) -> &'static str {
        self.provider.label()
    }

    /// Check a response (or a whole stream) against the policy and the
    /// request's tools. Expectations (`expected`, `order`, ...) score
    /// trajectories in `check` and `eval`; the gateway judges the calls of
    /// an answer (`Phase::Response`).
    pub(crate) fn judge(&self, gw: &Gateway, mut detection: Detection) -> Verdict {
        let began = Instant::now();
        // The request's tools, not whatever the answer echoes.
        detection.tools.clear();
        let judge = || {
            let tally = Tally::new(&gw.counters);
            let options = CheckOptions {
                caller: self.caller.as_ref(),
                counter: Some(&tally),
                // The gateway forwards the arguments as the model wrote them.
                as_written: true,
                declared: self.declared.as_deref(),
                phase: Phase::Response,
                ..CheckOptions::default()
            };
            let verdict = gw.policy.judge(detection, options);
            if !verdict.passed {
                tally.give_back();
            }
            verdict
        };
        let limited = !gw.policy.access().limits.is_empty();
        let verdict = if limited && gw.counters.is_remote() {
            // Counting waits on Redis: let the runtime move other tasks off
            // this thread meanwhile.
            match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
                Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                    tokio::task::block_in_place(judge)
                }
                _ => judge(),
            }
        } else {
            judge()
        };
        gw.metrics.checked(self.route(), &verdict, began.elapsed());
        verdict
    }

    /// The idempotency key of each call of a passing verdict, in order.
    pub(crate) fn keys(&self, verdict: &Verdict) -> Vec<String> {
        verdict
            .calls
            .iter()
            .map(|call| idempotency::key(&self.request_id, &call.name, &call.arguments))
            .collect()
    }

    /// The audit record of this request.
    pub(crate) fn record(
        &self,
        gw: &Gateway,
        verdict: &Verdict,
        keys: &[String],
        stage: &'static str,
        attempts: u32,
    ) -> AuditRecord {
        let released = verdict.passed;
        AuditRecord {
            request_id: self.request_id.clone(),
            time_ms: now_ms(),
            route: self.route(),
            caller: self.caller.as_ref().map(|c| c.id.clone()),
            policy_hash: gw.policy_hash.clone(),
            model: self.model.clone(),
            stream: self.stream,
            outcome: if released { "released" } else { "blocked" },
            stage,
            attempts,
            calls: verdict
                .calls
                .iter()
                .enumerate()
                .map(|(at, call)| AuditCall {
                    index: call.index,
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: match &call.arguments {
                        toolgate::Arguments::Object(map) => Value::Object(map.clone()),
                        toolgate::Arguments::Text(text) => Value::String(text.clone()),
                        toolgate::Arguments::Invalid(_) => Value::Null,
                    },
                    valid: call.valid,
                    codes: call.violations.iter().map(|v| v.code.as_str()).collect(),
                    idempotency_key: if released {
                        keys.get(at).cloned()
                    } else {
                        None
                    },
                })
                .collect(),
            violations: verdict
                .violations
                .iter()
                .map(|v| AuditViolation {
                    code: v.code.as_str(),
                    call: v.call,
                    tool: v.tool.clone(),
                    path: v.path.clone(),
                    message: v.message.clone(),
                })
                .collect(),
        }
    }

    /// Commit the record of a verdict; a failed write fails the request.
    pub(crate) async fn audit(
        &self,
        gw: &Gateway,
        verdict: &Verdict,
        keys: &[String],
        stage: &'static str,
        attempts: u32,
    ) -> Result<(), Failure> {
        let record = self.record(gw, verdict, keys, stage, attempts);
        gw.audit
            .commit(record)
            .await
            .map_err(Failure::AuditUnavailable)
    }

    /// Commit the record of a checked answer. A passing verdict comes back
    /// with its calls' idempotency keys, ready to release; a failing one,
    /// or a record that cannot be written, is the request's failure.
    pub(crate) async fn seal(
        &self,
        gw: &Gateway,
        verdict: Verdict,
        attempts: u32,
    ) -> Result<(Verdict, Vec<String>), Failure> {
        let keys = if verdict.passed {
            self.keys(&verdict)
        } else {
            Vec::new()
        };
        self.audit(gw, &verdict, &keys, "response", attempts)
            .await?;
        if verdict.passed {
            Ok((verdict, keys))
        } else {
            Err(Failure::Blocked(Box::new(verdict)))
        }
    }

    /// A released Responses answer: remember its calls for the follow-up
    /// that sends their results (`json` is the body, or the stream event
    /// that carries the response's id).
    pub(crate) fn remember(&self, gw: &Gateway, verdict: &Verdict, json: &[u8]) {
        if self.provider == Provider::OpenAiResponses && !verdict.calls.is_empty() {
            if let Some(id) = crate::follow_up::response_id(json) {
                gw.released.remember(&id, verdict);
            }
        }
    }

    /// Count a request that ends in `failure`.
    pub(crate) fn count_failure(&self, gw: &Gateway, failure: &Failure) {
        let took = self.started.elapsed();
        match failure {
            Failure::Blocked(verdict) => gw.metrics.blocked(self.route(), verdict, took),
            other => gw.metrics.failed(self.route(), other.kind(), took),
        }
    }

    /// Record a failure in the metrics and answer it in the route's shape.
    pub(crate) fn fail(&self, gw: &Gateway, failure: &Failure) -> Response {
        self.count_failure(gw, failure);
        let mut response = self.provider.failure_response(failure);
        self.tag(response.headers_mut());
        response
    }

    /// The request id on every answer.
    pub(crate) fn tag(&self, headers: &mut HeaderMap) {
        if let Ok(value) = HeaderValue::from_str(&self.request_id) {
            headers.insert(REQUEST_ID, value);
        }
    }
}

/// `POST` on one of the proxied routes.
pub async fn handle(
    gw: Arc<Gateway>,
    provider: Provider,
    query: Option<&str>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let started = Instant::now();
    let mut exchange = Exchange {
        provider,
        request_id: request::request_id(&headers),
        caller: None,
        model: None,
        stream: false,
        declared: None,
        query: query.map(str::to_owned),
        started,
    };
    match run(&gw, &mut exchange, &headers, body).await {
        Ok(response) => response,
        Err(failure) => exchange.fail(&gw, &failure),
    }
}

async fn run(
    gw: &Arc<Gateway>,
    exchange: &mut Exchange,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<Response, Failure> {
    let body = request::read_body(body, gw.config.max_request_bytes).await?;
    exchange.caller = caller::identify(&gw.policy, headers)?;
    let envelope = Envelope::read(&body)?;
    exchange.model = envelope.model();
    exchange.stream = envelope.stream == Some(true);
    let earlier = match (&exchange.provider, &envelope.previous_response_id) {
        (Provider::OpenAiResponses, Some(id)) => gw.released.get(id),
        _ => None,
    };
    match request::check(gw, &body, exchange.caller.as_ref(), earlier.as_deref()) {
        Ok(checked) => exchange.declared = checked.declared,
        Err(verdict) => {
            exchange.audit(gw, &verdict, &[], "request", 0).await?;
            return Err(Failure::Blocked(verdict));
        }
    }
    let upstream_headers =
        request::upstream_headers(gw, exchange.provider, headers, &exchange.request_id);
    if exchange.stream {
        return stream::run(Arc::clone(gw), exchange, upstream_headers, body).await;
    }
    whole(gw, exchange, upstream_headers, body).await
}

/// A request whose answer is one body: send, check, retry if the policy
/// says so, then release or block.
async fn whole(
    gw: &Gateway,
    exchange: &Exchange,
    upstream_headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failure> {
    let settings = gw.policy.gateway();
    let mut sent = body;
    let mut request_value: Option<Value> = None;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let asked = Instant::now();
        let mut response =
            request::send(gw, exchange, upstream_headers.clone(), sent.clone()).await?;
        gw.metrics.upstream(exchange.route(), asked.elapsed());
        let deadline = tokio::time::Instant::from_std(asked) + gw.config.upstream_timeout;
        let status = response.status();
        let response_headers = request::client_headers(response.headers());
        let answer =
            request::read_response(&mut response, gw.config.max_response_bytes, deadline).await?;
        if !status.is_success() {
            // An upstream error carries no tool call: it passes as sent.
            return Ok(release(gw, exchange, status, response_headers, answer, &[]));
        }
        let verdict = exchange.judge(gw, detect_with(&answer, gw.policy.limits()));
        if !verdict.passed
            && settings.on_violation == OnViolation::Retry
            && attempts <= settings.max_retries
        {
            if request_value.is_none() {
                request_value = serde_json::from_slice(&sent).ok();
            }
            let answered: Option<Value> = serde_json::from_slice(&answer).ok();
            if let (Some(request), Some(answered)) = (request_value.as_mut(), answered) {
                if exchange.provider.retry(request, &answered, &verdict) {
                    tracing::debug!(request_id = %exchange.request_id, attempts, "sending the violations back to the model");
                    sent = Bytes::from(
                        serde_json::to_vec(request)
                            .map_err(|e| Failure::Internal(e.to_string()))?,
                    );
                    continue;
                }
            }
        }
        return settle(
            gw,
            exchange,
            verdict,
            attempts,
            status,
            response_headers,
            answer,
        )
        .await;
    }
}

/// Seal a checked whole answer, then release it.
async fn settle(
    gw: &Gateway,
    exchange: &Exchange,
    verdict: Verdict,
    attempts: u32,
    status: StatusCode,
    headers: HeaderMap,
    answer: Bytes,
) -> Result<Response, Failure> {
    let (verdict, keys) = exchange.seal(gw, verdict, attempts).await?;
    exchange.remember(gw, &verdict, &answer);
    Ok(release(gw, exchange, status, headers, answer, &keys))
}

/// The upstream's answer as it came, with the request id and the calls'
/// idempotency keys.
fn release(
    gw: &Gateway,
    exchange: &Exchange,
    status: StatusCode,
    mut headers: HeaderMap,
    body: Bytes,
    keys: &[String],
) -> Response {
    exchange.tag(&mut headers);
    if !keys.is_empty() {
        if let Ok(value) = HeaderValue::from_str(&keys.join(",")) {
            headers.insert(HeaderName::from_static(IDEMPOTENCY_KEYS), value);
        }
    }
    gw.metrics
        .released(exchange.route(), exchange.started.elapsed());
    let mut response = (status, body).into_response();
    *response.headers_mut() = headers;
    response
}

/// [`release`] for the stream module, when the upstream answered a stream
/// request with a whole body.
pub(crate) async fn release_whole(
    gw: &Gateway,
    exchange: &Exchange,
    status: StatusCode,
    headers: HeaderMap,
    answer: Bytes,
) -> Result<Response, Failure> {
    if !status.is_success() {
        return Ok(release(gw, exchange, status, headers, answer, &[]));
    }
    let verdict = exchange.judge(gw, detect_with(&answer, gw.policy.limits()));
    settle(gw, exchange, verdict, 1, status, headers, answer).await
}
