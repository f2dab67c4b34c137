//! One line of a dataset: a payload, or `{"output": <payload>, "policy":
//! {...}}` whose policy keys override the base policy for that scenario.
//! Overrides of the expectation keys reuse the compiled base policy; any
//! other key compiles the merged policy. Either is compiled once for each
//! text of `policy` and kept (a bounded cache), so rows that share their
//! overrides share the work.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use memchr::memmem;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use toolgate::policy::Expectations;
use toolgate::{detect_with, CheckOptions, Policy, Verdict};

use crate::summary::BadLine;

/// Most texts of `policy` kept compiled at once.
const CACHE: usize = 256;

/// The base policy, and the policies scenarios derive from it.
#[derive(Debug)]
pub struct Evaluator {
    base: Policy,
    /// The base policy's keys, for merging overrides.
    base_value: Value,
    base_dir: Option<PathBuf>,
    /// What each text of `policy` compiled to.
    overrides: Mutex<FxHashMap<Box<str>, Arc<Override>>>,
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
            overrides: Mutex::new(FxHashMap::default()),
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
        let Some(raw) = scenario.policy else {
            return verdict(line, payload, &self.base, self.base.expectations(), options);
        };
        match &*self.compiled(raw) {
            Override::Base => verdict(line, payload, &self.base, self.base.expectations(), options),
            Override::Expect(expect) => verdict(line, payload, &self.base, expect, options),
            Override::Policy(policy) => {
                verdict(line, payload, policy, policy.expectations(), options)
            }
            Override::Bad(message) => bad(line, "bad_policy", message),
        }
    }

    /// What the overrides `raw` come to, compiled once for each text.
    fn compiled(&self, raw: &RawValue) -> Arc<Override> {
        let lock = || {
            self.overrides
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some(found) = lock().get(raw.get()) {
            return Arc::clone(found);
        }
        let compiled = Arc::new(self.compile(raw));
        let mut cache = lock();
        if cache.len() < CACHE {
            cache.insert(raw.get().into(), Arc::clone(&compiled));
        }
        compiled
    }

    fn compile(&self, raw: &RawValue) -> Override {
        let overrides = match serde_json::from_str::<Map<String, Value>>(raw.get()) {
            Ok(overrides) if overrides.is_empty() => return Override::Base,
            Ok(overrides) => overrides,
            Err(err) => return Override::Bad(err.to_string()),
        };
        match self.base.override_expectations(&overrides) {
            Some(Ok(expect)) => return Override::Expect(expect),
            Some(Err(err)) => return Override::Bad(err.to_string()),
            None => {}
        }
        // The base policy with `overrides` replacing its keys.
        let mut value = self.base_value.clone();
        if let Value::Object(map) = &mut value {
            map.extend(overrides);
        }
        match Policy::from_value(&value, self.base_dir.as_deref()) {
            Ok(policy) => Override::Policy(Box::new(policy)),
            Err(err) => Override::Bad(err.to_string()),
        }
    }
}

/// What a scenario's `policy` object comes to.
#[derive(Debug)]
enum Override {
    /// No keys: the base policy.
    Base,
    /// Expectation keys only: the base policy with these expectations.
    Expect(Expectations),
    /// Other keys: the base policy with them, compiled.
    Policy(Box<Policy>),
    /// Not a valid policy: the line is a bad line, with this message.
    Bad(String),
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

/// `{"output": <payload>, "policy": {...}}`, other keys ignored; the
/// policy is kept as written, the key of its compiled form.
#[derive(Deserialize)]
struct Scenario<'a> {
    #[serde(borrow)]
    output: &'a RawValue,
    #[serde(default, borrow)]
    policy: Option<&'a RawValue>,
}

impl<'a> Scenario<'a> {
    /// The scenario of a line; `None` when the line is not one (then it is
    /// read as a payload), as when its `policy` is not an object.
    fn read(text: &'a [u8]) -> Option<Self> {
        let scenario: Scenario<'a> = serde_json::from_slice(text).ok()?;
        let object = scenario.policy.is_none_or(|raw| raw.get().starts_with('{'));
        object.then_some(scenario)
    }
}
