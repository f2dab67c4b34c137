//! `audit.postgres`: records shared by every gateway replica, in the same
//! two tables as the SQLite store (`audit_requests`, `audit_calls`), with
//! the record, arguments and violations as `jsonb`. A batch is one
//! transaction; PostgreSQL's own `synchronous_commit` (on by default) makes
//! its commit durable before any of its requests is released. A broken
//! connection fails that batch and is opened again for the next.

use postgres::{Client, NoTls};

use super::{AuditRecord, AuditStore};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit_requests (
    request_id  TEXT NOT NULL,
    time_ms     BIGINT NOT NULL,
    route       TEXT NOT NULL,
    caller      TEXT,
    policy_hash TEXT NOT NULL,
    model       TEXT,
    stream      BOOLEAN NOT NULL,
    outcome     TEXT NOT NULL,
    stage       TEXT NOT NULL,
    attempts    BIGINT NOT NULL,
    violations  JSONB NOT NULL,
    record      JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_requests_request_id ON audit_requests(request_id);
CREATE TABLE IF NOT EXISTS audit_calls (
    request_id      TEXT NOT NULL,
    call_index      BIGINT NOT NULL,
    call_id         TEXT,
    tool            TEXT NOT NULL,
    arguments       JSONB NOT NULL,
    valid           BOOLEAN NOT NULL,
    codes           TEXT NOT NULL,
    idempotency_key TEXT
);
CREATE INDEX IF NOT EXISTS audit_calls_request_id ON audit_calls(request_id);
CREATE INDEX IF NOT EXISTS audit_calls_idempotency_key ON audit_calls(idempotency_key);
";

pub struct PostgresStore {
    url: String,
    client: Option<Client>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connect and create the tables if they are missing. The client runs
    /// its own runtime, so it is built on a thread of its own (this may be
    /// called from inside the gateway's runtime).
    pub fn open(url: &str) -> Result<PostgresStore, String> {
        let url = url.to_owned();
        std::thread::spawn(move || {
            let mut store = PostgresStore { url, client: None };
            store.client()?;
            Ok(store)
        })
        .join()
        .map_err(|_| "audit.postgres: the connection thread failed".to_owned())?
    }

    fn client(&mut self) -> Result<&mut Client, String> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            let mut config: postgres::Config = self
                .url
                .parse()
                .map_err(|err| format!("audit.postgres: not a connection URL: {err}"))?;
            if config.get_connect_timeout().is_none() {
                // A store that does not answer fails the batch, not the
                // gateway's every request for minutes.
                config.connect_timeout(std::time::Duration::from_secs(5));
            }
            let mut client = config
                .connect(NoTls)
                .map_err(|err| format!("audit.postgres: cannot connect: {err}"))?;
            client
                .batch_execute(SCHEMA)
                .map_err(|err| format!("audit.postgres: cannot create the tables: {err}"))?;
            self.client = Some(client);
        }
        self.client
            .as_mut()
            .ok_or_else(|| "audit.postgres: no connection".to_owned())
    }
}

impl AuditStore for PostgresStore {
    fn write(&mut self, batch: &[AuditRecord]) -> Result<(), String> {
        let fail = |err: postgres::Error| format!("audit.postgres: {err}");
        let client = self.client()?;
        let mut tx = client.transaction().map_err(fail)?;
        let request = tx
            .prepare(
                "INSERT INTO audit_requests (request_id, time_ms, route, caller, policy_hash, model, stream, outcome, stage, attempts, violations, record)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .map_err(fail)?;
        let call = tx
            .prepare(
                "INSERT INTO audit_calls (request_id, call_index, call_id, tool, arguments, valid, codes, idempotency_key)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .map_err(fail)?;
        for record in batch {
            let json = serde_json::to_value(record).map_err(|e| e.to_string())?;
            let violations = serde_json::to_value(&record.violations).map_err(|e| e.to_string())?;
            tx.execute(
                &request,
                &[
                    &record.request_id,
                    &i64::try_from(record.time_ms).unwrap_or(i64::MAX),
                    &record.route,
                    &record.caller,
                    &record.policy_hash,
                    &record.model,
                    &record.stream,
                    &record.outcome,
                    &record.stage,
                    &i64::from(record.attempts),
                    &violations,
                    &json,
                ],
            )
            .map_err(fail)?;
            for c in &record.calls {
                tx.execute(
                    &call,
                    &[
                        &record.request_id,
                        &i64::try_from(c.index).unwrap_or(i64::MAX),
                        &c.id,
                        &c.tool,
                        &c.arguments,
                        &c.valid,
                        &c.codes.join(","),
                        &c.idempotency_key,
                    ],
                )
                .map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)
    }
}
