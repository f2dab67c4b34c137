//! Fixed windows per limit and key, kept in memory: one gateway process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use toolgate::policy::access::RateLimit;

/// Past this many keys, expired windows are dropped before a new key is
/// added; past twice this, a new key is refused (counted as over the limit)
/// so an argument-keyed limit cannot grow memory without bound.
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Default)]
pub(crate) struct MemoryCounter {
    windows: Mutex<HashMap<(usize, String), (Instant, u64)>>,
}

impl MemoryCounter {
    pub(crate) fn hit(&self, limit: usize, rule: &RateLimit, key: &str) -> Result<u64, String> {
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

    /// Give back one call counted under `limit` and `key`.
    pub(crate) fn undo(&self, limit: usize, key: &str) {
        if let Ok(mut windows) = self.windows.lock() {
            if let Some((_, count)) = windows.get_mut(&(limit, key.to_owned())) {
                *count = count.saturating_sub(1);
            }
        }
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
}
