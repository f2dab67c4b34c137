//! Counts in Redis, shared by every gateway replica: one key per limit and
//! counted value, `INCR`ed and given its window's expiry on first use, in
//! one script so that no replica sees a key without its expiry. A key names
//! the limit by its rule (tool, max, window, what it counts by), so
//! replicas share a count whenever their rules are the same, whatever else
//! their policy files say; and it holds a hash of the counted value (a
//! caller id, an argument's JSON), never the value itself.

use std::sync::Mutex;
use std::time::Duration;

use redis::{Client, Connection, Script};
use sha2::{Digest, Sha256};
use toolgate::policy::access::RateLimit;

use crate::config::ConfigError;

/// How long a count may take before it counts as past the limit.
const TIMEOUT: Duration = Duration::from_millis(500);
/// Idle connections kept.
const IDLE: usize = 64;

const HIT: &str = r"
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
";

const UNDO: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0
";

pub(crate) struct RedisCounter {
    client: Client,
    idle: Mutex<Vec<Connection>>,
    hit: Script,
    undo: Script,
}

impl std::fmt::Debug for RedisCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCounter").finish_non_exhaustive()
    }
}

impl RedisCounter {
    /// Connect to `url` and check that it answers.
    pub(crate) fn open(url: &str) -> Result<RedisCounter, ConfigError> {
        let fail = |err: redis::RedisError| ConfigError(format!("limits_backend: {err}"));
        let client = Client::open(url).map_err(fail)?;
        let counter = RedisCounter {
            client,
            idle: Mutex::new(Vec::new()),
            hit: Script::new(HIT),
            undo: Script::new(UNDO),
        };
        let mut conn = counter
            .connection()
            .map_err(|err| ConfigError(format!("limits_backend: cannot reach Redis: {err}")))?;
        redis::cmd("PING")
            .query::<String>(&mut conn)
            .map_err(fail)?;
        counter.put_back(conn);
        Ok(counter)
    }

    fn connection(&self) -> Result<Connection, String> {
        if let Some(conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(conn);
        }
        let conn = self
            .client
            .get_connection_with_timeout(TIMEOUT)
            .map_err(|err| err.to_string())?;
        conn.set_read_timeout(Some(TIMEOUT))
            .map_err(|err| err.to_string())?;
        conn.set_write_timeout(Some(TIMEOUT))
            .map_err(|err| err.to_string())?;
        Ok(conn)
    }

    fn put_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < IDLE {
                idle.push(conn);
            }
        }
    }

    fn key(rule: &RateLimit, key: &str) -> String {
        let mut hash = Sha256::new();
        hash.update(format!(
            "{}\n{}\n{}\n{:?}\n",
            rule.tool,
            rule.max,
            rule.per.as_millis(),
            rule.by
        ));
        hash.update(key.as_bytes());
        format!("toolgate:limit:{}", &hex::encode(hash.finalize())[..40])
    }

    pub(crate) fn hit(&self, rule: &RateLimit, key: &str) -> Result<u64, String> {
        let mut conn = self.connection()?;
        let window = u64::try_from(rule.per.as_millis()).unwrap_or(u64::MAX);
        let counted: Result<u64, _> = self
            .hit
            .key(Self::key(rule, key))
            .arg(window)
            .invoke(&mut conn);
        match counted {
            Ok(n) => {
                self.put_back(conn);
                Ok(n)
            }
            // The connection may be broken: dropped, not reused.
            Err(err) => Err(format!("redis: {err}")),
        }
    }

    pub(crate) fn undo(&self, rule: &RateLimit, key: &str) {
        let Ok(mut conn) = self.connection() else {
            return;
        };
        let undone: Result<i64, _> = self.undo.key(Self::key(rule, key)).invoke(&mut conn);
        match undone {
            Ok(_) => self.put_back(conn),
            Err(err) => tracing::warn!(error = %err, "cannot give a rate-limit count back"),
        }
    }
}
