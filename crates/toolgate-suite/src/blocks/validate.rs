//! `ValidateTools`: the library's verdict on the calls found at `from`,
//! with seed 001's `actualTools` and `expectedTools` beside the verdict's
//! own keys (`passed`, `score`, `failures`, `reasoning`, `violations`, ...).
//!
//! `config` takes seed 001's keys (`expected`, `forbidden`, `minTools`,
//! `maxTools`, `order`, `validateArgs`) and any other policy key; they
//! replace the same keys of the suite's base `policy`. A config without
//! references is compiled once, when the suite loads.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};
use toolgate::Policy;

use crate::blocks::config_map;
use crate::path;
use crate::template::{self, Reference, Scope, Target};

/// The fields a `ValidateTools` gives: the verdict's, and seed 001's
/// spellings of two of them.
pub(crate) const OUTPUTS: [&str; 11] = [
    "passed",
    "label",
    "score",
    "reasoning",
    "calls",
    "violations",
    "failures",
    "actual_tools",
    "expected_tools",
    "actualTools",
    "expectedTools",
];

/// Where the calls are.
#[derive(Debug, Clone)]
enum Source {
    /// `input.from`: a dotted path into earlier outputs or the context.
    From(Reference),
    /// Any other `input`: the payload itself (`{"toolCalls": [...]}`,
    /// `"${response.body}"`).
    Payload(Value),
}

#[derive(Debug, Clone)]
pub(crate) struct ValidateTools {
    source: Source,
    /// The base policy's keys with `config`'s in their place.
    policy_value: Value,
    /// Compiled at load, when the keys hold no reference.
    policy: Option<Arc<Policy>>,
}

/// The suite's base policy: its keys, and where a `tools_file` is read.
#[derive(Debug, Clone, Default)]
pub(crate) struct BasePolicy {
    pub(crate) keys: Map<String, Value>,
    pub(crate) dir: Option<std::path::PathBuf>,
}

/// The seed spellings of policy keys, for merging a block's `config` over
/// the base policy (a `minTools` replaces a `min_tools`).
fn canonical(key: &str) -> &str {
    match key {
        "minTools" => "min_tools",
        "maxTools" => "max_tools",
        "validateArgs" => "validate_args",
        "requireResultNames" => "require_result_names",
        other => other,
    }
}

impl ValidateTools {
    pub(crate) fn compile(
        input: Option<&Value>,
        config: Option<&Value>,
        base: &BasePolicy,
    ) -> Result<Self, String> {
        let source = match input {
            None => Source::From(reference("toolCalls")?),
            Some(Value::Object(map)) if map.contains_key("from") => {
                for key in map.keys() {
                    if key != "from" && key != "as" {
                        return Err(format!(
                            "unknown key `input.{key}`; `input` is {{\"from\": \"path.to.calls\", \"as\": \"toolCalls\"}}"
                        ));
                    }
                }
                if let Some(name) = map.get("as") {
                    if name != "toolCalls" {
                        return Err(format!(
                            "`input.as` names what the block receives, which is `toolCalls`, not {name}"
                        ));
                    }
                }
                match map.get("from") {
                    Some(Value::String(from)) => Source::From(reference(from)?),
                    _ => return Err("`input.from` must be a dotted path (\"toolCalls\")".into()),
                }
            }
            Some(other) => Source::Payload(other.clone()),
        };
        let config = config_map(config)?;
        let mut keys = base.keys.clone();
        for key in config.keys() {
            keys.retain(|known, _| canonical(known) != canonical(key));
        }
        keys.extend(config);
        let policy_value = Value::Object(keys);
        let policy = if template::has_references(&policy_value) {
            template::references(&policy_value)?;
            None
        } else {
            Some(Arc::new(compile_policy(
                &policy_value,
                base.dir.as_deref(),
            )?))
        };
        Ok(ValidateTools {
            source,
            policy_value,
            policy,
        })
    }

    /// The reference `from` reads, for the loader's checks.
    pub(crate) fn calls_reference(&self) -> Option<&Reference> {
        match &self.source {
            Source::From(reference) => Some(reference),
            Source::Payload(_) => None,
        }
    }

    /// What the loader checks for references: the payload and the config.
    pub(crate) fn templates(&self) -> Vec<&Value> {
        match &self.source {
            Source::From(_) => vec![&self.policy_value],
            Source::Payload(payload) => vec![payload, &self.policy_value],
        }
    }

    pub(crate) fn run(&self, scope: &Scope<'_>, base_dir: Option<&Path>) -> Result<Value, String> {
        let payload = match &self.source {
            Source::From(reference) => scope.get(reference)?,
            Source::Payload(payload) => scope.resolve(payload)?,
        };
        let bytes = match payload {
            Value::String(text) => text.into_bytes(),
            other => other.to_string().into_bytes(),
        };
        let compiled;
        let policy = if let Some(policy) = &self.policy {
            policy.as_ref()
        } else {
            let value = scope.resolve(&self.policy_value)?;
            compiled = compile_policy(&value, base_dir)?;
            &compiled
        };
        let verdict = policy.check(&bytes);
        let mut out = serde_json::to_value(&verdict).map_err(|err| err.to_string())?;
        if let Value::Object(map) = &mut out {
            map.insert(
                "actualTools".into(),
                serde_json::json!(verdict.actual_tools),
            );
            map.insert(
                "expectedTools".into(),
                serde_json::json!(verdict.expected_tools),
            );
        }
        Ok(out)
    }
}

fn reference(from: &str) -> Result<Reference, String> {
    let segments = path::split(from).ok_or_else(|| format!("`{from}` is not a dotted path"))?;
    let target = match segments.as_slice() {
        [env, name] if env == "env" => Target::Env(name.clone()),
        _ => Target::Name(segments),
    };
    Ok(Reference {
        text: from.to_owned(),
        target,
    })
}

fn compile_policy(value: &Value, base_dir: Option<&Path>) -> Result<Policy, String> {
    Policy::from_value(value, base_dir).map_err(|err| {
        let problems: Vec<String> = err
            .problems()
            .iter()
            .filter(|problem| problem.is_error())
            .map(ToString::to_string)
            .collect();
        format!("`config` is not a valid policy: {}", problems.join("; "))
    })
}
