//! The audit trail: one [`AuditRecord`] per checked request, committed
//! before the response is released. If it cannot be committed, the request
//! fails (503) and nothing is released.
//!
//! Records go to one writer thread that owns the [`AuditStore`] and commits
//! every record waiting in one transaction (group commit): each request
//! still waits for its own durable commit, but many requests share one
//! `fsync`. Stores: SQLite (the default; WAL, `synchronous = FULL`), JSON
//! lines (`audit.jsonl`, each batch written then `fsync`ed) and PostgreSQL
//! (`audit.postgres`, shared by replicas).

mod jsonl;
mod postgres;
mod sqlite;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use toolgate::policy::AuditSettings;
use toolgate::{Arguments, Verdict};

pub use self::jsonl::JsonlStore;
pub use self::postgres::PostgresStore;
pub use self::sqlite::SqliteStore;
use crate::config::ConfigError;

/// Where records are committed. `write` commits the whole batch durably or
/// fails; it runs on the writer thread.
pub trait AuditStore: Send + std::fmt::Debug {
    fn write(&mut self, batch: &[AuditRecord]) -> Result<(), String>;
}

/// Most records committed in one transaction.
const MAX_BATCH: usize = 512;
/// Records waiting for the writer before requests wait to enqueue.
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
                tool: call.name.clone(),
                arguments: match &call.arguments {
                    Arguments::Object(map) => Value::Object(map.clone()),
                    Arguments::Text(text) => Value::String(text.clone()),
                    Arguments::Invalid(_) => Value::Null,
                },
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

type Job = (AuditRecord, oneshot::Sender<Result<(), String>>);

/// The handle requests commit through.
#[derive(Debug)]
pub struct Audit {
    sender: mpsc::Sender<Job>,
    redact: Vec<String>,
    open: Arc<AtomicBool>,
}

impl Audit {
    /// Start the writer thread for `store`.
    #[must_use]
    pub fn spawn(mut store: Box<dyn AuditStore>, redact: Vec<String>) -> Audit {
        let (sender, mut receiver) = mpsc::channel::<Job>(QUEUE);
        let open = Arc::new(AtomicBool::new(true));
        let flag = Arc::clone(&open);
        let spawned = std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || {
                let mut batch: Vec<AuditRecord> = Vec::with_capacity(MAX_BATCH);
                let mut waiting: Vec<oneshot::Sender<Result<(), String>>> =
                    Vec::with_capacity(MAX_BATCH);
                while let Some((record, reply)) = receiver.blocking_recv() {
                    batch.push(record);
                    waiting.push(reply);
                    while batch.len() < MAX_BATCH {
                        match receiver.try_recv() {
                            Ok((record, reply)) => {
                                batch.push(record);
                                waiting.push(reply);
                            }
                            Err(_) => break,
                        }
                    }
                    let outcome = store.write(&batch);
                    if let Err(err) = &outcome {
                        tracing::error!(error = %err, records = batch.len(), "audit write failed");
                    }
                    for reply in waiting.drain(..) {
                        let _ = reply.send(outcome.clone());
                    }
                    batch.clear();
                }
                flag.store(false, Ordering::SeqCst);
            });
        if spawned.is_err() {
            open.store(false, Ordering::SeqCst);
        }
        Audit {
            sender,
            redact,
            open,
        }
    }

    /// Redact `record`, commit it, and return once it is durable.
    pub async fn commit(&self, mut record: AuditRecord) -> Result<(), String> {
        record.redact(&self.redact);
        let (reply, answer) = oneshot::channel();
        self.sender
            .send((record, reply))
            .await
            .map_err(|_| "the audit writer has stopped".to_owned())?;
        answer
            .await
            .map_err(|_| "the audit writer has stopped".to_owned())?
    }

    /// Whether the writer thread runs.
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }
}

/// The store the policy's `audit` section names: SQLite by default.
pub fn open(settings: &AuditSettings) -> Result<Box<dyn AuditStore>, ConfigError> {
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
    if let Some(url) = &settings.postgres {
        return Ok(Box::new(PostgresStore::open(url).map_err(ConfigError)?));
    }
    if let Some(path) = &settings.jsonl {
        return Ok(Box::new(JsonlStore::open(path).map_err(ConfigError)?));
    }
    let path = settings.sqlite.as_deref().unwrap_or("toolgate-audit.db");
    Ok(Box::new(SqliteStore::open(path).map_err(ConfigError)?))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn redaction_reaches_every_depth_and_only_listed_keys() {
        let mut value = json!({"password": "p", "user": {"api_key": "k", "name": "n"},
                               "list": [{"password": 1}], "keep": "v"});
        redact_value(&mut value, &["password".into(), "api_key".into()]);
        assert_eq!(
            value,
            json!({"password": "[REDACTED]", "user": {"api_key": "[REDACTED]", "name": "n"},
                   "list": [{"password": "[REDACTED]"}], "keep": "v"})
        );
    }
}
