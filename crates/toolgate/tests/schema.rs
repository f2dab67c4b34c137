//! The policy's JSON Schema (`toolgate policy schema`) against the loader:
//! every policy of the repository that loads (the examples, the SDK
//! tests' and every conformance case's) is valid under the schema, and
//! every one the loader refuses for an unknown key is refused by it too.
//! That the schema names exactly the loader's keys is held by
//! construction (it is generated from the loader's key tables) and by the
//! unit tests beside it.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&toolgate::policy::json_schema()).expect("the schema compiles")
}

/// Every policy file in `examples/` and `tests/` (YAML named `policy*`).
fn policy_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("policy"))
                && path.extension().is_some_and(|e| e == "yaml" || e == "json")
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo().join("examples"), &mut files);
    walk(&repo().join("tests/sdk"), &mut files);
    files.sort();
    files
}

/// Every conformance case's policy, with whether the loader refuses it and
/// why.
fn conformance_policies() -> Vec<(String, Value, Option<Vec<String>>)> {
    let dir = repo().join("tests/conformance");
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let cases: Vec<Value> =
            serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for case in cases {
            let Some(policy) = case.get("policy").cloned() else {
                continue;
            };
            let name = format!("{}: {}", file.display(), case["name"]);
            let error = case["expect"]
                .get("policy_error")
                .map(|e| serde_json::from_value(e.clone()).unwrap());
            out.push((name, policy, error));
        }
    }
    out
}

fn errors(validator: &jsonschema::Validator, policy: &Value) -> Vec<String> {
    validator
        .iter_errors(policy)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn every_policy_file_of_the_repository_is_valid_under_the_schema() {
    let validator = validator();
    let files = policy_files();
    assert!(files.len() >= 12, "the examples' policies: {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let value: Value = serde_saphyr::from_str(&text).unwrap();
        toolgate::Policy::load(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let wrong = errors(&validator, &value);
        assert!(wrong.is_empty(), "{}: {wrong:#?}", file.display());
    }
}

#[test]
fn the_schema_accepts_what_loads_and_refuses_unknown_keys() {
    let validator = validator();
    let (mut loaded, mut unknown) = (0, 0);
    for (name, policy, error) in conformance_policies() {
        let base = repo().join("tests/conformance");
        let loads = toolgate::Policy::from_value(&policy, Some(&base)).is_ok();
        let wrong = errors(&validator, &policy);
        if loads {
            loaded += 1;
            assert!(
                wrong.is_empty(),
                "{name} loads, but the schema refuses it: {wrong:#?}"
            );
        }
        if error
            .iter()
            .flatten()
            .any(|e| e.contains("unknown key") || e.contains("unknown field"))
        {
            unknown += 1;
            assert!(
                !wrong.is_empty(),
                "{name}: the loader refuses an unknown key, the schema does not"
            );
        }
    }
    assert!(loaded > 100, "{loaded} conformance policies load");
    assert!(unknown > 0, "some conformance cases hold an unknown key");
}

#[test]
fn the_schema_refuses_a_misspelt_key_wherever_the_loader_does() {
    let validator = validator();
    for policy in [
        json!({"alowed_functions": ["a"]}),
        json!({"normalize": {"strip_empty": true}}),
        json!({"input_limits": {"max_bytes": 1}}),
        json!({"gateway": {"upstreem": "http://x"}}),
        json!({"audit": {"sqlite3": "a.db"}}),
        json!({"callers": [{"id": "a", "role": ["x"]}]}),
        json!({"roles": {"support": {"allows": ["a"]}}}),
        json!({"rules": [{"tool": "a", "when": "true", "msg": "x"}]}),
        json!({"limits": [{"tool": "a", "max": 1, "per": "1m", "per_caller": true}]}),
        json!({"max_tools": 1, "maxTools": 2}),
    ] {
        assert!(
            toolgate::Policy::from_value(&policy, None).is_err(),
            "the loader refuses {policy}"
        );
        assert!(
            !errors(&validator, &policy).is_empty(),
            "the schema refuses {policy}"
        );
    }
    // Every key the loader accepts, with a value of its type, is valid.
    let full = json!({
        "$schema": "./toolgate-policy.schema.json",
        "tools": [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}],
        "allowed_functions": ["search"], "forbidden": "drop", "required_params": {"search": ["q"]},
        "schema": {"search": {"type": "object"}}, "expected": "search", "order": ["search"],
        "minTools": 0, "max_tools": 3, "validateArgs": {"search": {"q": "x"}}, "require_calls": true,
        "validate_formats": false, "requireResultNames": true,
        "normalize": {"strip_empty_values": true, "strip_placeholder_strings": true, "placeholder_strings": ["n/a"]},
        "input_limits": {"max_payload_bytes": 1000, "max_depth": 10, "max_calls": 5, "max_argument_bytes": 100},
        "callers": [{"id": "bot", "key_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "roles": ["support"], "attributes": {"org": "x"}}],
        "roles": {"support": {"allow": ["search"], "forbid": ["drop"]}},
        "rules": [{"tool": "search", "when": "args.q != ''", "message": "q is empty"}],
        "caller_header": "X-Toolgate-Caller",
        "limits": [{"tool": "search", "max": 10, "per": "1m", "by": "arg:q"}],
        "limits_backend": "memory",
        "gateway": {"upstream": "http://127.0.0.1:9", "upstream_key": "${env.KEY}", "listen": "127.0.0.1:0",
                    "on_violation": "retry", "max_retries": 1, "max_request_bytes": 10, "max_response_bytes": 10,
                    "connect_timeout": 1, "upstream_timeout": 2.5, "header_read_timeout": 3, "body_read_timeout": 4},
        "audit": {"sqlite": "a.db", "jsonl": "a.jsonl", "postgres": "postgres://x", "redact": ["password"]}
    });
    toolgate::Policy::from_value(&full, None).unwrap();
    let wrong = errors(&validator, &full);
    assert!(wrong.is_empty(), "{wrong:#?}");
}
