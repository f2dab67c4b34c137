//! Rate limits across requests: fixed windows per limit and key, kept in
//! memory (one gateway process). A turn's calls are counted while it is
//! checked ([`Tally`]) and given back if the turn is blocked: a limit
//! counts calls that run, not attempts.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use toolgate::policy::access::RateLimit;
use toolgate::RateCounter;

/// Past this many keys, expired windows are dropped before a new key is
/// added; past twice this, a new key is refused (counted as over the limit)
/// so an argument-keyed limit cannot grow memory without bound.
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Default)]
pub(crate) struct MemoryCounter {
    windows: Mutex<HashMap<(usize, String), (Instant, u64)>>,
}

impl RateCounter for MemoryCounter {
    fn hit(&self, limit: usize, rule: &RateLimit, key: &str) -> Result<u64, String> {
        let now = Instant::now();
        let mut windows = self
            .windows
            .lock()
            .map_err(|_| "the rate-limit table is poisoned".to_owned())?;
        if let Some((start, count)) = windows.get_mut(&(limit, key.to_owned())) {
            if now.duration_since(*start) >= rule.per {
                *start = now;
                *count = 0;
            }
            *count += 1;
            return Ok(*count);
        }
        if windows.len() >= MAX_KEYS {
            windows.retain(|_, (start, _)| now.duration_since(*start) < rule.per);
            if windows.len() >= 2 * MAX_KEYS {
                return Err("too many rate-limit keys".to_owned());
            }
        }
        windows.insert((limit, key.to_owned()), (now, 1));
        Ok(1)
    }
}

impl MemoryCounter {
    /// Give back one call counted under `limit` and `key`.
    fn undo(&self, limit: usize, key: &str) {
        if let Ok(mut windows) = self.windows.lock() {
            if let Some((_, count)) = windows.get_mut(&(limit, key.to_owned())) {
                *count = count.saturating_sub(1);
            }
        }
    }
}

/// The counts of one check, remembered so that a blocked turn gives them
/// back.
#[derive(Debug)]
pub(crate) struct Tally<'a> {
    counter: &'a MemoryCounter,
    hits: Mutex<Vec<(usize, String)>>,
}

impl<'a> Tally<'a> {
    pub(crate) fn new(counter: &'a MemoryCounter) -> Self {
        Tally {
            counter,
            hits: Mutex::new(Vec::new()),
        }
    }

    /// The turn was blocked: none of its calls runs.
    pub(crate) fn give_back(self) {
        let hits = self.hits.into_inner().unwrap_or_default();
        for (limit, key) in hits {
            self.counter.undo(limit, &key);
        }
    }
}

impl RateCounter for Tally<'_> {
    fn hit(&self, limit: usize, rule: &RateLimit, key: &str) -> Result<u64, String> {
        let seen = self.counter.hit(limit, rule, key)?;
        if let Ok(mut hits) = self.hits.lock() {
            hits.push((limit, key.to_owned()));
        }
        Ok(seen)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toolgate::policy::access::LimitKey;

    use super::*;

    fn rule(max: u64, per: Duration) -> RateLimit {
        RateLimit {
            tool: "t".into(),
            max,
            per,
            by: LimitKey::Caller,
        }
    }

    #[test]
    fn counts_per_key_and_resets_with_the_window() {
        let rule = rule(2, Duration::from_millis(50));
        let counter = MemoryCounter::default();
        assert_eq!(counter.hit(0, &rule, "a"), Ok(1));
        assert_eq!(counter.hit(0, &rule, "a"), Ok(2));
        assert_eq!(counter.hit(0, &rule, "b"), Ok(1));
        assert_eq!(counter.hit(1, &rule, "a"), Ok(1));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(counter.hit(0, &rule, "a"), Ok(1));
    }

    #[test]
    fn a_blocked_turn_gives_its_counts_back() {
        let rule = rule(1, Duration::from_secs(60));
        let counter = MemoryCounter::default();
        let tally = Tally::new(&counter);
        assert_eq!(tally.hit(0, &rule, "a"), Ok(1));
        tally.give_back();
        let tally = Tally::new(&counter);
        assert_eq!(tally.hit(0, &rule, "a"), Ok(1));
        drop(tally);
        assert_eq!(counter.hit(0, &rule, "a"), Ok(2));
    }
}
