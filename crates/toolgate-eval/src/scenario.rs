//! One line of a dataset: a payload, or `{"output": <payload>, "policy":
//! {...}}` whose policy keys override the base policy for that scenario.
//! Overrides of the expectation keys reuse the compiled base policy; any
//! other key compiles the merged policy once and keeps it (a bounded cache).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use memchr::memmem;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use toolgate::policy::Expectations;
use toolgate::{detect_with, CheckOptions, Policy, Verdict};

use crate::summary::BadLine;

/// Most merged policies kept compiled at once.
const CACHE: usize = 256;

/// The base policy, and the policies scenarios derive from it.
#[derive(Debug)]
pub struct Evaluator {
    base: Policy,
    /// The base policy's keys, for merging overrides.
    base_value: Value,
    base_dir: Option<PathBuf>,
    merged: Mutex<HashMap<String, Arc<Policy>>>,
    options: Options,
    /// Finds `"policy"` in a line: only such a line can be a scenario.
    policy_key: memmem::Finder<'static>,
}

/// How every trace is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Also check tool results (`check --results`).
    pub results: bool,
    /// A trace without calls fails.
    pub require_calls: bool,
    /// What to judge (a trajectory, unless told otherwise).
    pub phase: toolgate::Phase,
}

/// What became of one line.
#[derive(Debug)]
pub enum Outcome {
    /// A blank line: not a trace.
    Blank,
    Verdict(Verdict),
    Bad(BadLine),
}

impl Evaluator {
    /// `base_value` is the policy's text as a value (`{}` for no policy).
    pub fn new(
        base_value: Value,
        base_dir: Option<PathBuf>,
        options: Options,
    ) -> Result<Self, toolgate::PolicyError> {
        let base = Policy::from_value(&base_value, base_dir.as_deref())?;
        Ok(Evaluator {
            base,
            base_value,
            base_dir,
            merged: Mutex::new(HashMap::new()),
            options,
            policy_key: memmem::Finder::new(b"\"policy\""),
        })
    }

    /// The base policy.
    #[must_use]
    pub fn policy(&self) -> &Policy {
        &self.base
    }

    /// Check one line (1-based `line`).
    #[must_use]
    pub fn line(&self, line: u64, text: &[u8]) -> Outcome {
        let trimmed = text.trim_ascii();
        if trimmed.is_empty() {
            return Outcome::Blank;
        }
        let options = CheckOptions {
            results: self.options.results,
            require_calls: self.options.require_calls,
            caller: None,
            counter: None,
            as_written: false,
            declared: None,
            phase: self.options.phase,
        };
        // Only a line naming `"policy"` can be a scenario with overrides.
        if self.policy_key.find(trimmed).is_some() {
            if let Some(scenario) = Scenario::read(trimmed) {
                return self.scenario(line, &scenario, options);
            }
        }
        verdict(line, trimmed, &self.base, self.base.expectations(), options)
    }

    fn scenario(&self, line: u64, scenario: &Scenario<'_>, options: CheckOptions<'_>) -> Outcome {
        let payload = scenario.output.get().as_bytes();
        let Some(overrides) = scenario.policy.as_ref().filter(|o| !o.is_empty()) else {
            return verdict(line, payload, &self.base, self.base.expectations(), options);
        };
        match self.base.override_expectations(overrides) {
            Some(Ok(expect)) => return verdict(line, payload, &self.base, &expect, options),
            Some(Err(err)) => return bad(line, "bad_policy", &err.to_string()),
            None => {}
        }
        match self.merged(overrides) {
            Ok(policy) => verdict(line, payload, &policy, policy.expectations(), options),
            Err(err) => bad(line, "bad_policy", &err.to_string()),
        }
    }

    /// The base policy with `overrides` replacing its keys, compiled once.
    fn merged(&self, overrides: &Map<String, Value>) -> Result<Arc<Policy>, toolgate::PolicyError> {
        let key = serde_json::to_string(overrides).unwrap_or_default();
        if let Some(found) = self
            .merged
            .lock()
            .ok()
            .and_then(|cache| cache.get(&key).cloned())
        {
            return Ok(found);
        }
        let mut value = self.base_value.clone();
        if let Value::Object(map) = &mut value {
            for (k, v) in overrides {
                map.insert(k.clone(), v.clone());
            }
        }
        let policy = Arc::new(Policy::from_value(&value, self.base_dir.as_deref())?);
        if let Ok(mut cache) = self.merged.lock() {
            if cache.len() < CACHE {
                cache.insert(key, Arc::clone(&policy));
            }
        }
        Ok(policy)
    }
}

/// Judge one payload: a verdict, or a bad line when it holds no payload.
fn verdict(
    line: u64,
    payload: &[u8],
    policy: &Policy,
    expect: &Expectations,
    options: CheckOptions<'_>,
) -> Outcome {
    let detection = detect_with(payload, policy.limits());
    if detection.format.is_none() && detection.calls.is_empty() {
        let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(payload).is_ok();
        let message = detection
            .violations
            .first()
            .map_or("no payload", |v| v.message.as_str())
            .to_owned();
        return bad(
            line,
            if is_json { "no_payload" } else { "not_json" },
            &message,
        );
    }
    Outcome::Verdict(policy.judge_expecting(detection, options, expect))
}

fn bad(line: u64, kind: &str, message: &str) -> Outcome {
    Outcome::Bad(BadLine {
        line,
        kind: kind.to_owned(),
        message: message.to_owned(),
    })
}

/// `{"output": <payload>, "policy": {...}}`, other keys ignored.
#[derive(Deserialize)]
struct Scenario<'a> {
    #[serde(borrow)]
    output: &'a RawValue,
    #[serde(default)]
    policy: Option<Map<String, Value>>,
}

impl<'a> Scenario<'a> {
    fn read(text: &'a [u8]) -> Option<Self> {
        serde_json::from_slice(text).ok()
    }
}
