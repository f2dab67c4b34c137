//! Rate limits across requests (docs/policy.md, "Who may call what"): counted in memory for
//! one gateway process (`limits_backend: memory`, the default), or in Redis
//! shared by every replica (`limits_backend: redis://host:port`). A turn's
//! calls are counted while it is checked ([`Tally`]) and given back if the
//! turn is blocked: a limit counts calls that run, not attempts. A counter
//! that cannot answer counts as past the limit: fail closed.

mod memory;
mod redis;

use std::sync::Mutex;

use toolgate::policy::access::RateLimit;
use toolgate::RateCounter;

use self::memory::MemoryCounter;
use self::redis::RedisCounter;
use crate::config::ConfigError;

/// Where the counts live.
#[derive(Debug)]
pub(crate) enum Counters {
    Memory(MemoryCounter),
    Redis(Box<RedisCounter>),
}

impl Counters {
    /// The backend `limits_backend` names.
    pub(crate) fn open(backend: Option<&str>) -> Result<Counters, ConfigError> {
        match backend {
            None | Some("memory") => Ok(Counters::Memory(MemoryCounter::default())),
            Some(url) if url.starts_with("redis://") || url.starts_with("rediss://") => {
                RedisCounter::open(url).map(|c| Counters::Redis(Box::new(c)))
            }
            Some(other) => Err(ConfigError(format!(
                "limits_backend `{other}`: use `memory` or a redis:// URL"
            ))),
        }
    }

    /// Whether counting goes over the network (and may block a thread).
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self, Counters::Redis(_))
    }

    fn hit(&self, limit: usize, rule: &RateLimit, key: &str) -> Result<u64, String> {
        match self {
            Counters::Memory(counter) => counter.hit(limit, rule, key),
            Counters::Redis(counter) => counter.hit(rule, key),
        }
    }

    fn undo(&self, limit: usize, rule: &RateLimit, key: &str) {
        match self {
            Counters::Memory(counter) => counter.undo(limit, key),
            Counters::Redis(counter) => counter.undo(rule, key),
        }
    }
}

/// The counts of one check, remembered so that a blocked turn gives them
/// back.
#[derive(Debug)]
pub(crate) struct Tally<'a> {
    counters: &'a Counters,
    hits: Mutex<Vec<(usize, RateLimit, String)>>,
}

impl<'a> Tally<'a> {
    pub(crate) fn new(counters: &'a Counters) -> Self {
        Tally {
            counters,
            hits: Mutex::new(Vec::new()),
        }
    }

    /// The turn was blocked: none of its calls runs.
    pub(crate) fn give_back(self) {
        let hits = self.hits.into_inner().unwrap_or_default();
        for (limit, rule, key) in hits {
            self.counters.undo(limit, &rule, &key);
        }
    }
}

impl RateCounter for Tally<'_> {
    fn hit(&self, limit: usize, rule: &RateLimit, key: &str) -> Result<u64, String> {
        let seen = self.counters.hit(limit, rule, key)?;
        if let Ok(mut hits) = self.hits.lock() {
            hits.push((limit, rule.clone(), key.to_owned()));
        }
        Ok(seen)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toolgate::policy::access::LimitKey;

    use super::*;

    #[test]
    fn a_blocked_turn_gives_its_counts_back() {
        let rule = RateLimit {
            tool: "t".into(),
            max: 1,
            per: Duration::from_secs(60),
            by: LimitKey::Caller,
        };
        let counters = Counters::open(None).unwrap();
        let tally = Tally::new(&counters);
        assert_eq!(tally.hit(0, &rule, "a"), Ok(1));
        tally.give_back();
        let tally = Tally::new(&counters);
        assert_eq!(tally.hit(0, &rule, "a"), Ok(1));
        drop(tally);
        assert_eq!(counters.hit(0, &rule, "a"), Ok(2));
        assert!(Counters::open(Some("memcached://x")).is_err());
    }
}
