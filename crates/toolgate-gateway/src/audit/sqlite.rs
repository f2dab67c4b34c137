//! The embedded default: a SQLite file in WAL mode with `synchronous =
//! FULL`, so a committed record survives a crash of the process or the
//! machine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::{params, Connection};

use super::{AuditRecord, AuditStore};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit_requests (
    request_id  TEXT NOT NULL,
    time_ms     INTEGER NOT NULL,
    route       TEXT NOT NULL,
    caller      TEXT,
    policy_hash TEXT NOT NULL,
    model       TEXT,
    stream      INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    stage       TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    violations  TEXT NOT NULL,
    record      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_requests_request_id ON audit_requests(request_id);
CREATE TABLE IF NOT EXISTS audit_calls (
    request_id      TEXT NOT NULL,
    call_index      INTEGER NOT NULL,
    call_id         TEXT,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,
    valid           INTEGER NOT NULL,
    codes           TEXT NOT NULL,
    idempotency_key TEXT
);
CREATE INDEX IF NOT EXISTS audit_calls_request_id ON audit_calls(request_id);
CREATE INDEX IF NOT EXISTS audit_calls_idempotency_key ON audit_calls(idempotency_key);
";

/// Records in `audit_requests`, one row per request (the whole record as
/// JSON in `record`), and their calls in `audit_calls`.
///
/// The WAL is checkpointed by a thread of its own every
/// half second (`PASSIVE`: it never blocks the writer), not by
/// the commit that happens to cross SQLite's page threshold, so no request
/// waits for a checkpoint.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    /// Set when the store is dropped: the checkpoint thread stops.
    closed: Arc<AtomicBool>,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Relaxed);
    }
}

/// How often the WAL is copied back into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

impl SqliteStore {
    pub fn open(path: &str) -> Result<SqliteStore, String> {
        let fail = |err: rusqlite::Error| format!("audit.sqlite `{path}`: {err}");
        let conn = Connection::open(path).map_err(fail)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(fail)?;
        conn.execute_batch(SCHEMA).map_err(fail)?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(fail)?;
        let checkpoints = Connection::open(path).map_err(fail)?;
        checkpoints
            .busy_timeout(std::time::Duration::from_secs(1))
            .map_err(fail)?;
        let closed = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&closed);
        std::thread::Builder::new()
            .name("toolgate-audit-checkpoint".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(CHECKPOINT_EVERY);
                    if let Err(err) = checkpoints.execute_batch("PRAGMA wal_checkpoint(PASSIVE);") {
                        tracing::warn!(error = %err, "audit checkpoint failed");
                    }
                }
            })
            .map_err(|err| {
                format!("audit.sqlite `{path}`: cannot start the checkpoint thread: {err}")
            })?;
        Ok(SqliteStore { conn, closed })
    }
}

impl AuditStore for SqliteStore {
    fn write(&mut self, batch: &[AuditRecord]) -> Result<(), String> {
        let fail = |err: rusqlite::Error| format!("sqlite: {err}");
        let tx = self.conn.transaction().map_err(fail)?;
        {
            let mut request = tx
                .prepare_cached(
                    "INSERT INTO audit_requests (request_id, time_ms, route, caller, policy_hash, model, stream, outcome, stage, attempts, violations, record)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )
                .map_err(fail)?;
            let mut call = tx
                .prepare_cached(
                    "INSERT INTO audit_calls (request_id, call_index, call_id, tool, arguments, valid, codes, idempotency_key)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(fail)?;
            for record in batch {
                let json = serde_json::to_string(record).map_err(|e| e.to_string())?;
                let violations =
                    serde_json::to_string(&record.violations).map_err(|e| e.to_string())?;
                request
                    .execute(params![
                        record.request_id,
                        i64::try_from(record.time_ms).unwrap_or(i64::MAX),
                        record.route,
                        record.caller,
                        record.policy_hash,
                        record.model,
                        record.stream,
                        record.outcome,
                        record.stage,
                        record.attempts,
                        violations,
                        json,
                    ])
                    .map_err(fail)?;
                for c in &record.calls {
                    call.execute(params![
                        record.request_id,
                        i64::try_from(c.index).unwrap_or(i64::MAX),
                        c.id,
                        c.tool,
                        c.arguments.to_string(),
                        c.valid,
                        c.codes.join(","),
                        c.idempotency_key,
                    ])
                    .map_err(fail)?;
                }
            }
        }
        tx.commit().map_err(fail)
    }
}
