//! The audit trail: one [`AuditRecord`] per checked request, committed
//! before the response is released. If it cannot be committed, the request
//! fails (503) and nothing is released.
//!
//! Records go to one writer thread that owns the [`AuditStore`] and commits
//! every record waiting as one group: each request still waits for its own
//! durable commit, but many requests share one write and one sync. Stores:
//!
//! - `audit.sqlite` (the default): the records are appended to a log
//!   ([`log`]), each group one sequential write and one `fdatasync`, and
//!   the SQLite file is an index filled from the log behind the requests
//!   by a thread of its own ([`index`]), caught up from the log after a
//!   crash;
//! - `audit.jsonl`: JSON lines, each group written then `fdatasync`ed;
//! - `audit.postgres`: one transaction per group in the PostgreSQL that
//!   replicas share (whose own WAL makes its commit durable; a local log
//!   in front of it would leave records a client saw on one replica's disk
//!   only, out of the other replicas' sight).
//!
//! Requests wait for the writers in a bounded [`queue`]: when it is full,
//! or the writers have stopped, a record is refused at once and its
//! request fails closed.

mod index;
mod jsonl;
pub(crate) mod log;
mod pipeline;
mod postgres;
mod queue;
mod sqlite;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use toolgate::policy::AuditSettings;
use toolgate::Verdict;

pub use self::jsonl::JsonlStore;
pub use self::postgres::PostgresStore;
use self::queue::{Queue, Stopped, MAX_BATCH};
use crate::config::ConfigError;
use crate::metrics::AuditMetrics;

/// Where records are committed. `write` commits the whole batch durably or
/// fails; it runs on the writer thread.
pub trait AuditStore: Send + std::fmt::Debug {
    fn write(&mut self, batch: &[AuditRecord]) -> Result<(), String>;
}

/// Records waiting for the writers past which records are refused.
const QUEUE: usize = 8192;

/// One checked request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRecord {
    pub request_id: String,
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// `chat_completions`, `responses`, `messages`.
    pub route: &'static str,
    pub caller: Option<String>,
    /// SHA-256 of the policy file.
    pub policy_hash: String,
    pub model: Option<String>,
    pub stream: bool,
    /// `released`, `blocked`, or `upstream_error` (the upstream's own
    /// error, carrying no call, passed to the client as sent).
    pub outcome: &'static str,
    /// Which side was checked last: `request` or `response`.
    pub stage: &'static str,
    /// Upstream attempts (more than one with `on_violation: retry`).
    pub attempts: u32,
    pub calls: Vec<AuditCall>,
    pub violations: Vec<AuditViolation>,
}

/// One tool call of the last response checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditCall {
    pub index: usize,
    pub id: Option<String>,
    pub tool: String,
    /// As checked, with the keys of `audit.redact` replaced.
    pub arguments: Value,
    pub valid: bool,
    pub codes: Vec<&'static str>,
    /// Set on released calls.
    pub idempotency_key: Option<String>,
}

/// One violation: its code and where, and its message (messages never
/// hold argument values).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditViolation {
    pub code: &'static str,
    pub call: Option<usize>,
    pub tool: Option<String>,
    pub path: Option<String>,
    pub message: String,
}

impl AuditRecord {
    /// This record with the calls and violations of `verdict`: each call
    /// as checked, a released one with its idempotency key from `keys`
    /// (in call order).
    #[must_use]
    pub fn with_verdict(mut self, verdict: &Verdict, keys: &[String]) -> AuditRecord {
        let released = self.outcome == "released";
        self.calls = verdict
            .calls
            .iter()
            .enumerate()
            .map(|(at, call)| AuditCall {
                index: call.index,
                id: call.id.clone(),
                tool: call.name.to_string(),
                // Written straight from the arguments' tape: the object,
                // the text, or null when they could not be read.
                arguments: serde_json::to_value(&call.arguments).unwrap_or(Value::Null),
                valid: call.valid,
                codes: call.violations.iter().map(|v| v.code.as_str()).collect(),
                idempotency_key: keys.get(at).filter(|_| released).cloned(),
            })
            .collect();
        self.violations = verdict
            .violations
            .iter()
            .map(|v| AuditViolation {
                code: v.code.as_str(),
                call: v.call,
                tool: v.tool.clone(),
                path: v.path.clone(),
                message: v.message.clone(),
            })
            .collect();
        self
    }

    /// Replace the value of every argument key listed in `keys`, at any
    /// depth, by `"[REDACTED]"`.
    pub fn redact(&mut self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        for call in &mut self.calls {
            redact_value(&mut call.arguments, keys);
        }
    }
}

#[cfg(test)]
impl AuditRecord {
    /// A released record of one `get_weather` call, numbered `n`, its
    /// arguments padded with `pad` bytes.
    pub(crate) fn sample(n: usize, pad: usize) -> AuditRecord {
        AuditRecord {
            request_id: format!("r-{n}"),
            time_ms: 0,
            route: "chat_completions",
            caller: None,
            policy_hash: "0".repeat(64),
            model: Some("m".into()),
            stream: false,
            outcome: "released",
            stage: "response",
            attempts: 1,
            calls: vec![AuditCall {
                index: 0,
                id: Some(format!("call-{n}")),
                tool: "get_weather".into(),
                arguments: serde_json::json!({"city": "Paris", "pad": "x".repeat(pad)}),
                valid: true,
                codes: vec![],
                idempotency_key: Some(format!("{n:064}")),
            }],
            violations: vec![],
        }
    }
}

fn redact_value(value: &mut Value, keys: &[String]) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if keys.iter().any(|k| k == key) {
                    *inner = Value::String("[REDACTED]".to_owned());
                } else {
                    redact_value(inner, keys);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                redact_value(item, keys);
            }
        }
        _ => {}
    }
}

/// The handle requests commit through.
#[derive(Debug)]
pub struct Audit {
    queue: Arc<Queue>,
    redact: Vec<String>,
    /// The log of `audit.sqlite`, whose index may be behind.
    log: Option<Arc<log::Shared>>,
    /// The log's writers, which may let a request commit on its own
    /// thread.
    pipeline: Option<Arc<pipeline::Pipeline>>,
}

impl Drop for Audit {
    fn drop(&mut self) {
        // The writers finish the records waiting, then stop.
        self.queue.close();
    }
}

impl Audit {
    /// The audit the policy's `audit` section names: `audit.sqlite` (the
    /// default, `toolgate-audit.db`) as a log beside it
    /// (`<audit.sqlite>-log/`) and the index; `audit.jsonl` or
    /// `audit.postgres` committed directly.
    pub fn open(settings: &AuditSettings, metrics: &AuditMetrics) -> Result<Audit, ConfigError> {
        let set = [
            settings.sqlite.is_some(),
            settings.jsonl.is_some(),
            settings.postgres.is_some(),
        ];
        if set.iter().filter(|&&s| s).count() > 1 {
            return Err(ConfigError(
                "audit: set one of sqlite, jsonl and postgres, not several".to_owned(),
            ));
        }
        let redact = settings.redact.clone();
        if let Some(url) = &settings.postgres {
            let store = PostgresStore::open(url).map_err(ConfigError)?;
            return Ok(Audit::spawn(Box::new(store), redact, metrics));
        }
        if let Some(path) = &settings.jsonl {
            let store = JsonlStore::open(path).map_err(ConfigError)?;
            return Ok(Audit::spawn(Box::new(store), redact, metrics));
        }
        let path = settings.sqlite.as_deref().unwrap_or("toolgate-audit.db");
        let index = sqlite::SqliteIndex::open(path).map_err(ConfigError)?;
        let position = index.position().map_err(ConfigError)?;
        let log = log::LogStore::open(&log_dir(path), position).map_err(ConfigError)?;
        let shared = log.shared();
        index::spawn(Arc::clone(&shared), index, metrics.clone()).map_err(ConfigError)?;
        let queue = Queue::new(QUEUE);
        let pipeline = pipeline::spawn(log, &queue, metrics)
            .map_err(|err| ConfigError(format!("cannot start the audit writers: {err}")))?;
        Ok(Audit {
            queue,
            redact,
            log: Some(shared),
            pipeline: Some(pipeline),
        })
    }

    /// Commit to `store` directly, on a writer thread of its own.
    #[must_use]
    pub fn spawn(store: Box<dyn AuditStore>, redact: Vec<String>, metrics: &AuditMetrics) -> Audit {
        Audit::start(store, redact, metrics, QUEUE)
    }

    fn start(
        store: Box<dyn AuditStore>,
        redact: Vec<String>,
        metrics: &AuditMetrics,
        capacity: usize,
    ) -> Audit {
        let queue = Queue::new(capacity);
        let writer = Arc::clone(&queue);
        let metrics = metrics.clone();
        let spawned = std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || write_groups(store, &writer, &metrics));
        if spawned.is_err() {
            queue.stopped();
        }
        Audit {
            queue,
            redact,
            log: None,
            pipeline: None,
        }
    }

    /// Redact `record`, commit it, and return once it is durable. Refused
    /// at once when the writers have stopped or the queue is full.
    pub async fn commit(&self, mut record: AuditRecord) -> Result<(), String> {
        record.redact(&self.redact);
        if let Some(answer) = self.pipeline.as_ref().and_then(|p| p.at_once(&record)) {
            return durable(answer).await;
        }
        let (reply, answer) = oneshot::channel();
        self.queue.push(record, reply)?;
        durable(answer).await
    }

    /// Whether the writers run.
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.queue.is_open()
    }

    /// Block until the SQLite index holds every record durable now (at
    /// once for the stores without an index); an error when the index
    /// cannot take them.
    pub fn caught_up(&self) -> Result<(), String> {
        self.log.as_ref().map_or(Ok(()), |log| log.caught_up())
    }
}

/// The outcome a writer sends: whether the record is durable.
async fn durable(answer: oneshot::Receiver<Result<(), String>>) -> Result<(), String> {
    answer
        .await
        .map_err(|_| "the audit writer has stopped".to_owned())?
}

/// The writer thread of a store committed directly: each group written
/// with one `store.write`, then each of its requests gets the outcome.
fn write_groups(mut store: Box<dyn AuditStore>, queue: &Arc<Queue>, metrics: &AuditMetrics) {
    // However the writer ends, a panic included, the queue stops taking
    // records and fails those waiting.
    let _stopped = Stopped(Arc::clone(queue));
    let mut batch: Vec<AuditRecord> = Vec::with_capacity(MAX_BATCH);
    let mut waiting = Vec::with_capacity(MAX_BATCH);
    while queue.group(&mut batch, &mut waiting) {
        let began = std::time::Instant::now();
        let outcome = store.write(&batch);
        metrics.group(batch.len(), began.elapsed());
        if let Err(err) = &outcome {
            tracing::error!(error = %err, records = batch.len(), "audit write failed");
        }
        for reply in waiting.drain(..) {
            let _ = reply.send(outcome.clone());
        }
    }
}

/// The log directory of the SQLite index at `path`.
fn log_dir(path: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{path}-log"))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests;
