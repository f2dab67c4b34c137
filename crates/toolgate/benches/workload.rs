//! The check workload written by `bench/workload.py`: a policy, one OpenAI
//! Chat Completions response a line, and what each one should be found to
//! hold. Read from `$TOOLGATE_WORKLOAD`, else `target/workload` in the
//! workspace.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

pub(crate) struct Workload {
    pub(crate) dir: PathBuf,
    pub(crate) policy: toolgate::Policy,
    pub(crate) payloads: Vec<Vec<u8>>,
    /// Per payload, the violation code it must fail with; `None`: it passes.
    pub(crate) expected: Vec<Option<String>>,
}

impl Workload {
    pub(crate) fn load() -> Workload {
        let dir = std::env::var_os("TOOLGATE_WORKLOAD").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/workload"),
            PathBuf::from,
        );
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).unwrap_or_else(|err| {
                panic!(
                    "{}: {err}; generate it with `python3 bench/workload.py {}`",
                    path.display(),
                    dir.display()
                )
            })
        };
        let payloads: Vec<Vec<u8>> = read("payloads.jsonl")
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let expected: Vec<Option<String>> = read("defects.jsonl")
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                let record: Value = serde_json::from_slice(line).expect("defects.jsonl");
                record["code"].as_str().map(str::to_owned)
            })
            .collect();
        assert_eq!(
            payloads.len(),
            expected.len(),
            "payloads and defects differ"
        );
        let policy = toolgate::Policy::load(dir.join("policy.yaml")).expect("policy.yaml");
        Workload {
            dir,
            policy,
            payloads,
            expected,
        }
    }

    /// The declared tools' `parameters`, by name, as written in the policy.
    pub(crate) fn tool_schemas(&self) -> Vec<(String, Value)> {
        let text = std::fs::read_to_string(self.dir.join("policy.yaml")).expect("policy.yaml");
        let policy: Value = serde_saphyr::from_str(&text).expect("policy.yaml is YAML");
        policy["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|tool| {
                let function = &tool["function"];
                let name = function["name"].as_str().expect("name").to_owned();
                (name, function["parameters"].clone())
            })
            .collect()
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.payloads.iter().map(|p| p.len() as u64).sum()
    }
}

// The naive pipeline users write, the bench's baseline.

/// One validator per tool, compiled once, formats asserted.
pub(crate) fn naive_validators(workload: &Workload) -> HashMap<String, jsonschema::Validator> {
    workload
        .tool_schemas()
        .into_iter()
        .map(|(name, schema)| {
            let validator = jsonschema::options()
                .should_validate_formats(true)
                .build(&schema)
                .expect("a valid schema");
            (name, validator)
        })
        .collect()
}

/// The naive pipeline: how many calls are invalid (an unknown tool, or
/// arguments that do not parse or do not validate), or `None` when the body
/// is not JSON. Every call is checked, as toolgate does.
pub(crate) fn naive_check(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &[u8],
) -> Option<usize> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let mut invalid = 0;
    for choice in value.get("choices")?.as_array()? {
        let Some(calls) = choice
            .get("message")
            .and_then(|message| message.get("tool_calls"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        for call in calls {
            let function = call.get("function");
            let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
            let text = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let arguments = if text.is_empty() {
                Ok(Value::Object(Map::new()))
            } else {
                serde_json::from_str::<Value>(text)
            };
            let valid = match (name.and_then(|name| validators.get(name)), arguments) {
                (Some(validator), Ok(arguments)) => validator.is_valid(&arguments),
                _ => false,
            };
            invalid += usize::from(!valid);
        }
    }
    Some(invalid)
}
