//! What one request carries from its check to its answer: the route, the
//! caller, the request's tools, and the steps every answer goes through:
//! judge, seal (audit, then keys), release or fail.

use std::sync::Arc;
use std::time::Instant;

use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use toolgate::{
    Caller, CheckOptions, DeclaredTools, Detection, Framing, Phase, RateCounter, ToolDeclarations,
    Verdict, Violation, ViolationCode,
};

use crate::audit::{now_ms, AuditRecord};
use crate::error::Failure;
use crate::follow_up::ApprovalItems;
use crate::limits::Tally;
use crate::providers::Provider;
use crate::request::REQUEST_ID;
use crate::{idempotency, Gateway};

/// What became of an answer, in its audit record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Released,
    Blocked,
    /// The upstream's own error, carrying no call, passed as sent.
    UpstreamError,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Released => "released",
            Outcome::Blocked => "blocked",
            Outcome::UpstreamError => "upstream_error",
        }
    }
}

/// One request's context.
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
    /// A Responses request's `conversation` id.
    pub(crate) conversation: Option<String>,
    pub(crate) started: Instant,
}

impl Exchange {
    pub(crate) fn new(provider: Provider, request_id: String, query: Option<&str>) -> Exchange {
        Exchange {
            provider,
            request_id,
            caller: None,
            model: None,
            stream: false,
            declared: None,
            query: query.map(str::to_owned),
            conversation: None,
            started: Instant::now(),
        }
    }

    pub(crate) fn route(&self) -> &'static str {
        self.provider.label()
    }

    /// Judge the calls of an answer (or a whole stream) against the policy
    /// and the request's tools (`Phase::Response`), counting rate limits
    /// for a passing one.
    pub(crate) fn judge(&self, gw: &Gateway, mut detection: Detection) -> Verdict {
        let began = Instant::now();
        // The request's tools, not whatever the answer echoes.
        detection.tools.clear();
        let judge = || {
            let tally = Tally::new(&gw.counters);
            let verdict = gw.policy.judge(detection, self.options(Some(&tally)));
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

    /// What an answer that was not released held, for its record: judged
    /// without counting limits.
    pub(crate) fn describe(&self, gw: &Gateway, mut detection: Detection) -> Verdict {
        detection.tools.clear();
        gw.policy.judge(detection, self.options(None))
    }

    fn options<'s>(&'s self, counter: Option<&'s dyn RateCounter>) -> CheckOptions<'s> {
        CheckOptions {
            caller: self.caller.as_ref(),
            counter,
            // The gateway forwards the arguments as the model wrote them.
            as_written: true,
            declared: self.declared.as_deref(),
            phase: Phase::Response,
            ..CheckOptions::default()
        }
    }

    /// The verdict of an answer that cannot be read.
    pub(crate) fn unreadable(&self, gw: &Gateway, why: String) -> Verdict {
        let detection = Detection {
            format: None,
            framing: Framing::Json,
            calls: Vec::new(),
            results: Vec::new(),
            tools: ToolDeclarations::default(),
            violations: vec![Violation::payload(ViolationCode::MalformedPayload, why)],
            pending: None,
            continues: false,
            calls_seen: 0,
        };
        self.judge(gw, detection)
    }

    /// Commit the record of `verdict`; a failed write fails the request.
    pub(crate) async fn audit(
        &self,
        gw: &Gateway,
        verdict: &Verdict,
        keys: &[String],
        outcome: Outcome,
        stage: &'static str,
        attempts: u32,
    ) -> Result<(), Failure> {
        let record = AuditRecord {
            request_id: self.request_id.clone(),
            time_ms: now_ms(),
            route: self.route(),
            caller: self.caller.as_ref().map(|c| c.id.clone()),
            policy_hash: gw.policy_hash.clone(),
            model: self.model.clone(),
            stream: self.stream,
            outcome: outcome.label(),
            stage,
            attempts,
            calls: Vec::new(),
            violations: Vec::new(),
        };
        gw.audit
            .commit(record.with_verdict(verdict, keys))
            .await
            .map_err(Failure::AuditUnavailable)
    }

    /// Commit the record of the upstream's own error, carrying no call.
    pub(crate) async fn upstream_error(
        &self,
        gw: &Gateway,
        verdict: &Verdict,
        attempts: u32,
    ) -> Result<(), Failure> {
        self.audit(
            gw,
            verdict,
            &[],
            Outcome::UpstreamError,
            "response",
            attempts,
        )
        .await
    }

    /// Commit the record of a failing verdict (of the request or of an
    /// answer): the request's failure, `Blocked` unless the record cannot
    /// be written.
    pub(crate) async fn block(
        &self,
        gw: &Gateway,
        verdict: Verdict,
        stage: &'static str,
        attempts: u32,
    ) -> Failure {
        match self
            .audit(gw, &verdict, &[], Outcome::Blocked, stage, attempts)
            .await
        {
            Ok(()) => Failure::Blocked(Box::new(verdict)),
            Err(failure) => failure,
        }
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
        if !verdict.passed {
            return Err(self.block(gw, verdict, "response", attempts).await);
        }
        let keys: Vec<String> = verdict
            .calls
            .iter()
            .map(|call| idempotency::key(&self.request_id, &call.name, &call.arguments))
            .collect();
        self.audit(gw, &verdict, &keys, Outcome::Released, "response", attempts)
            .await?;
        Ok((verdict, keys))
    }

    /// A released Responses answer: remember its calls for the follow-up
    /// that sends their results (`json` is the body, or the stream event
    /// that carries the response's id), and its approval requests
    /// (`items`, searched for only when a call may be one), bound to the
    /// caller.
    pub(crate) fn remember(
        &self,
        gw: &Gateway,
        verdict: &Verdict,
        json: Option<&[u8]>,
        items: impl FnOnce() -> ApprovalItems,
    ) {
        if self.provider != Provider::OpenAiResponses {
            return;
        }
        let caller = self.caller.as_ref().map(|c| c.id.as_str());
        if let Some(id) = json.and_then(crate::follow_up::response_id) {
            gw.released.remember_response(&id, verdict, caller);
        }
        if let Some(conversation) = &self.conversation {
            gw.released
                .remember_conversation(conversation, verdict, caller);
        }
        if crate::follow_up::may_ask_approval(verdict) {
            gw.released.remember_approvals(&items(), caller);
        }
    }

    /// A Responses answer was read (`json`: its body, or the stream event
    /// that carries its id): bind its id to the caller, released or not,
    /// since the upstream keeps it either way.
    pub(crate) fn bind(&self, gw: &Gateway, json: &[u8]) {
        let Some(caller) = self.caller.as_ref() else {
            return;
        };
        if self.provider != Provider::OpenAiResponses {
            return;
        }
        let id = crate::follow_up::response_id(json);
        gw.released.bind(id.as_deref(), None, Some(&caller.id));
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
