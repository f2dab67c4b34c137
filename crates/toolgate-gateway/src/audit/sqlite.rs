//! The embedded default: a SQLite file in WAL mode with `synchronous =
//! FULL`, so a committed record survives a crash of the process or the
//! machine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
/// SQLite's automatic checkpoint runs inside the commit that crosses its
/// page threshold, making that batch's requests wait for it. Here a thread
/// of its own checkpoints instead: every [`CHECKPOINT_EVERY`] a `PASSIVE`
/// pass copies the WAL into the database without blocking the writer; a
/// `PASSIVE` pass alone never catches up with a steady writer, so once the
/// WAL holds more than [`RESTART_PAGES`] a `RESTART` pass copies the few
/// pages left (briefly holding the writer) and lets the WAL start over.
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

/// How often the checkpoint thread runs.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);
/// WAL pages past which the WAL is made to start over (about 32 MiB).
const RESTART_PAGES: i64 = 8192;

impl SqliteStore {
    pub fn open(path: &str) -> Result<SqliteStore, String> {
        let fail = |err: rusqlite::Error| format!("audit.sqlite `{path}`: {err}");
        let conn = Connection::open(path).map_err(fail)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(fail)?;
        conn.execute_batch(SCHEMA).map_err(fail)?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(fail)?;
        // The indexes on request ids and keys take random pages: kept in
        // memory, an insert does not read them back from disk first. Not
        // larger: every commit walks the cache to trim it to the file.
        conn.pragma_update(None, "cache_size", -16_384)
            .map_err(fail)?;
        // After a checkpoint, a WAL larger than this is truncated.
        conn.pragma_update(None, "journal_size_limit", 64 << 20)
            .map_err(fail)?;
        let checkpoints = Connection::open(path).map_err(fail)?;
        checkpoints
            .busy_timeout(Duration::from_secs(5))
            .map_err(fail)?;
        let closed = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&closed);
        std::thread::Builder::new()
            .name("toolgate-audit-checkpoint".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(CHECKPOINT_EVERY);
                    if let Err(err) = checkpoint(&checkpoints) {
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

/// One pass of the checkpoint thread.
fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    let pages: i64 = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))?;
    if pages > RESTART_PAGES {
        conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditCall, AuditRecord};

    fn record(n: usize) -> AuditRecord {
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
                arguments: serde_json::json!({"city": "Paris", "pad": "x".repeat(500)}),
                valid: true,
                codes: vec![],
                idempotency_key: Some(format!("{n:064}")),
            }],
            violations: vec![],
        }
    }

    /// The writer's own checkpoints keep the WAL from growing with the
    /// number of records, and every record stays readable.
    #[test]
    fn the_wal_stays_small_under_a_steady_stream_of_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.db");
        let mut store = SqliteStore::open(path.to_str().unwrap()).unwrap();
        let batches = 300;
        for b in 0..batches {
            let batch: Vec<AuditRecord> = (0..64).map(|i| record(b * 64 + i)).collect();
            store.write(&batch).unwrap();
            if b % 20 == 0 {
                std::thread::sleep(CHECKPOINT_EVERY);
            }
        }
        std::thread::sleep(CHECKPOINT_EVERY * 2);
        let wal = std::fs::metadata(dir.path().join("audit.db-wal"))
            .unwrap()
            .len();
        assert!(wal < 16 << 20, "the WAL holds {wal} bytes");
        let count: i64 = store
            .conn
            .query_row("SELECT count(*) FROM audit_calls", [], |row| row.get(0))
            .unwrap();
        assert_eq!(usize::try_from(count).unwrap(), batches * 64);
    }
}
