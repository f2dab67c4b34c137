//! `audit.sqlite`, the embedded default: the SQLite index of the audit
//! log, in WAL mode, with the tables `audit_requests` and `audit_calls`.

use std::borrow::Cow;
use std::time::Duration;

use rusqlite::{params, Connection};
use serde::Deserialize;
use serde_json::value::RawValue;

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

/// The index `toolgate` and its users query: one row per request in
/// `audit_requests` (the whole record as JSON in `record`), its calls in
/// `audit_calls`, filled from the audit log. `audit_log_position` holds
/// where in the log the last record indexed ends, written in the same
/// transaction as the rows, so after a crash the index goes on from there
/// and takes each record exactly once.
///
/// Commits do not wait for the disk (`synchronous = NORMAL`): the log is
/// the durable record. A checkpoint ([`SqliteIndex::checkpoint`]) syncs
/// the index; only then are the log's indexed segments let go.
#[derive(Debug)]
pub(crate) struct SqliteIndex {
    conn: Connection,
}

const POSITION: &str = "
CREATE TABLE IF NOT EXISTS audit_log_position (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    position INTEGER NOT NULL
);
INSERT OR IGNORE INTO audit_log_position (id, position) VALUES (1, 0);
";

impl SqliteIndex {
    pub(crate) fn open(path: &str) -> Result<SqliteIndex, String> {
        let fail = |err: rusqlite::Error| format!("audit.sqlite `{path}`: {err}");
        let conn = Connection::open(path).map_err(fail)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(fail)?;
        conn.execute_batch(SCHEMA).map_err(fail)?;
        conn.execute_batch(POSITION).map_err(fail)?;
        // Checkpoints are the indexer's, between its commits.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(fail)?;
        // The indexes on request ids and keys take random pages: kept in
        // memory, an insert does not read them back from disk first.
        conn.pragma_update(None, "cache_size", -16_384)
            .map_err(fail)?;
        // After a checkpoint, a WAL larger than this is truncated.
        conn.pragma_update(None, "journal_size_limit", 64 << 20)
            .map_err(fail)?;
        Ok(SqliteIndex { conn })
    }

    /// Where in the log the last record indexed ends.
    pub(crate) fn position(&self) -> Result<u64, String> {
        let position: i64 = self
            .conn
            .query_row("SELECT position FROM audit_log_position", [], |row| {
                row.get(0)
            })
            .map_err(|err| format!("sqlite: {err}"))?;
        u64::try_from(position).map_err(|_| "sqlite: a negative log position".to_owned())
    }

    /// Index `records` (each the JSON of an [`super::AuditRecord`], as the
    /// log holds it), which end at log position `to`, in one transaction;
    /// `between` is called between two records.
    pub(crate) fn insert(
        &mut self,
        records: &[Vec<u8>],
        to: u64,
        mut between: impl FnMut(),
    ) -> Result<(), String> {
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
            for (n, json) in records.iter().enumerate() {
                if n > 0 {
                    between();
                }
                let text = std::str::from_utf8(json)
                    .map_err(|_| "an audit record in the log is not UTF-8".to_owned())?;
                let record: Row<'_> = serde_json::from_str(text)
                    .map_err(|err| format!("an audit record in the log cannot be read: {err}"))?;
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
                        record.violations.get(),
                        text,
                    ])
                    .map_err(fail)?;
                for c in &record.calls {
                    call.execute(params![
                        record.request_id,
                        i64::try_from(c.index).unwrap_or(i64::MAX),
                        c.id,
                        c.tool,
                        c.arguments.get(),
                        c.valid,
                        c.codes.join(","),
                        c.idempotency_key,
                    ])
                    .map_err(fail)?;
                }
            }
            // Cached as the inserts are: prepared once, not once a
            // transaction.
            tx.prepare_cached("UPDATE audit_log_position SET position = ?1")
                .map_err(fail)?
                .execute(params![i64::try_from(to).unwrap_or(i64::MAX)])
                .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }

    /// Copy the WAL into the database and sync it, without waiting for
    /// readers: true when everything committed is now on disk.
    pub(crate) fn checkpoint(&self) -> Result<bool, String> {
        let (busy, log, done): (i64, i64, i64) = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .map_err(|err| format!("sqlite: {err}"))?;
        Ok(busy == 0 && log == done)
    }
}

/// An audit record as the log holds it, borrowed where it can be.
#[derive(Deserialize)]
struct Row<'a> {
    #[serde(borrow)]
    request_id: Cow<'a, str>,
    time_ms: u64,
    #[serde(borrow)]
    route: Cow<'a, str>,
    #[serde(borrow)]
    caller: Option<Cow<'a, str>>,
    #[serde(borrow)]
    policy_hash: Cow<'a, str>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    stream: bool,
    #[serde(borrow)]
    outcome: Cow<'a, str>,
    #[serde(borrow)]
    stage: Cow<'a, str>,
    attempts: u32,
    #[serde(borrow)]
    calls: Vec<CallRow<'a>>,
    #[serde(borrow)]
    violations: &'a RawValue,
}

#[derive(Deserialize)]
struct CallRow<'a> {
    index: usize,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool: Cow<'a, str>,
    #[serde(borrow)]
    arguments: &'a RawValue,
    valid: bool,
    codes: Vec<String>,
    #[serde(borrow)]
    idempotency_key: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditRecord;

    fn record(n: usize) -> AuditRecord {
        AuditRecord::sample(n, 500)
    }

    fn json(record: &AuditRecord) -> Vec<u8> {
        serde_json::to_vec(record).unwrap()
    }

    /// Checkpoints between commits keep the WAL from growing with the
    /// number of records; every record stays readable, and the position
    /// moves with the rows.
    #[test]
    fn the_wal_stays_small_under_a_steady_stream_of_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.db");
        let mut index = SqliteIndex::open(path.to_str().unwrap()).unwrap();
        assert_eq!(index.position().unwrap(), 0);
        let batches = 300;
        for b in 0..batches {
            let batch: Vec<Vec<u8>> = (0..64).map(|i| json(&record(b * 64 + i))).collect();
            index.insert(&batch, (b as u64 + 1) * 1000, || {}).unwrap();
            if b % 20 == 0 {
                assert!(index.checkpoint().unwrap(), "no reader holds the WAL");
            }
        }
        let wal = std::fs::metadata(dir.path().join("audit.db-wal"))
            .unwrap()
            .len();
        assert!(wal < 16 << 20, "the WAL holds {wal} bytes");
        let count: i64 = index
            .conn
            .query_row("SELECT count(*) FROM audit_calls", [], |row| row.get(0))
            .unwrap();
        assert_eq!(usize::try_from(count).unwrap(), batches * 64);
        drop(index);
        let index = SqliteIndex::open(path.to_str().unwrap()).unwrap();
        assert_eq!(index.position().unwrap(), batches as u64 * 1000);
    }

    /// The columns hold what the record says, the JSON ones exactly as
    /// the record serializes them.
    #[test]
    fn rows_are_the_records_columns() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = SqliteIndex::open(dir.path().join("a.db").to_str().unwrap()).unwrap();
        let mut original = record(7);
        original.caller = Some("bot \"one\"".into());
        original.calls[0].codes = vec!["schema_violation", "forbidden"];
        original.violations = vec![crate::audit::AuditViolation {
            code: "forbidden",
            call: Some(0),
            tool: Some("get_weather".into()),
            path: None,
            message: "no".into(),
        }];
        index.insert(&[json(&original)], 1, || {}).unwrap();
        let (record, violations, caller): (String, String, String) = index
            .conn
            .query_row(
                "SELECT record, violations, caller FROM audit_requests",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap();
        assert_eq!(record.as_bytes(), json(&original));
        assert_eq!(
            violations,
            serde_json::to_string(&original.violations).unwrap()
        );
        assert_eq!(caller, "bot \"one\"");
        let (arguments, codes, key): (String, String, String) = index
            .conn
            .query_row(
                "SELECT arguments, codes, idempotency_key FROM audit_calls",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap();
        assert_eq!(arguments, original.calls[0].arguments.to_string());
        assert_eq!(codes, "schema_violation,forbidden");
        assert_eq!(Some(key), original.calls[0].idempotency_key);
    }
}
