//! The data-driven conformance suite: every case in tests/conformance/*.yaml
//! is a policy, a payload and what the verdict must say. Each case runs;
//! every mismatch is reported at once. A case that is known to fail says so
//! (`known_failure: why`) and must keep failing until it is fixed: nothing
//! is skipped silently.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toolgate::{Caller, CheckOptions, Phase, Policy, Verdict, ViolationCode};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// A mapping (the policy's keys) or text (YAML or JSON, read as a file).
    #[serde(default)]
    policy: Option<Value>,
    /// The payload as a JSON value ...
    #[serde(default)]
    payload: Option<Value>,
    /// ... or as raw text (SSE, garbage, exact bytes).
    #[serde(default)]
    payload_text: Option<String>,
    /// ... or a capture under tests/fixtures.
    #[serde(default)]
    payload_fixture: Option<String>,
    #[serde(default)]
    results: bool,
    #[serde(default)]
    require_calls: bool,
    /// `response`, `request` or `trajectory` (the default), as `check
    /// --phase` reads it.
    #[serde(default)]
    phase: Option<String>,
    /// `{id, roles, attributes}`, as `check --caller` reads it.
    #[serde(default)]
    caller: Option<Caller>,
    expect: Expect,
    #[serde(default)]
    known_failure: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// The policy does not load; every string must appear in the problems.
    #[serde(default)]
    policy_error: Option<Vec<String>>,
    #[serde(default)]
    passed: Option<bool>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    score: Option<f64>,
    /// The codes of `violations`, in order.
    #[serde(default)]
    codes: Option<Vec<String>>,
    /// `failures`, exactly.
    #[serde(default)]
    failures: Option<Vec<String>>,
    /// The `message` of each violation, in order.
    #[serde(default)]
    messages: Option<Vec<String>>,
    #[serde(default)]
    reasoning: Option<String>,
    /// The `tool` of each violation, in order.
    #[serde(default)]
    tools: Option<Vec<Option<String>>>,
    /// The `path` of each violation, in order.
    #[serde(default)]
    paths: Option<Vec<Option<String>>>,
    /// The `arguments` of each call, in order (after `normalize`).
    #[serde(default)]
    arguments: Option<Vec<Value>>,
    /// `valid` of each call, in order.
    #[serde(default)]
    valid: Option<Vec<bool>>,
    /// Strings that must appear in no message (argument values).
    #[serde(default)]
    never_says: Option<Vec<String>>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests")
}

fn cases() -> Vec<(String, Case)> {
    let dir = root().join("conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/conformance")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("case file");
        let cases: Vec<Case> =
            serde_saphyr::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", file.display()));
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        all.extend(
            cases
                .into_iter()
                .map(|case| (format!("{stem}: {}", case.name), case)),
        );
    }
    all
}

fn load_policy(case: &Case) -> Result<Policy, Vec<String>> {
    let dir = root().join("conformance");
    let loaded = match &case.policy {
        None => Ok(Policy::default()),
        Some(Value::String(text)) => Policy::from_text(text, Some(&dir)),
        Some(value) => Policy::from_value(value, Some(&dir)),
    };
    loaded.map_err(|err| err.problems().iter().map(ToString::to_string).collect())
}

fn payload(case: &Case) -> Vec<u8> {
    match (&case.payload, &case.payload_text, &case.payload_fixture) {
        (Some(value), None, None) => serde_json::to_vec(value).unwrap(),
        (None, Some(text), None) => text.clone().into_bytes(),
        (None, None, Some(file)) => {
            std::fs::read(root().join("fixtures").join(file)).expect("fixture")
        }
        _ => panic!(
            "{}: give exactly one of payload, payload_text, payload_fixture",
            case.name
        ),
    }
}

fn options(case: &Case) -> CheckOptions<'_> {
    CheckOptions {
        results: case.results,
        require_calls: case.require_calls,
        caller: case.caller.as_ref(),
        phase: case
            .phase
            .as_deref()
            .map_or(Phase::Trajectory, |p| p.parse().expect("a phase")),
        ..CheckOptions::default()
    }
}

/// Every way the verdict differs from the case's expectations.
fn mismatches(case: &Case) -> Vec<String> {
    let mut wrong = Vec::new();
    let expect = &case.expect;
    let policy = match (load_policy(case), &expect.policy_error) {
        (Ok(_), Some(want)) => {
            return vec![format!("the policy loaded, expected problems {want:?}")]
        }
        (Err(problems), Some(want)) => {
            for needle in want {
                if !problems.iter().any(|p| p.contains(needle.as_str())) {
                    wrong.push(format!("no problem says {needle:?}: {problems:#?}"));
                }
            }
            return wrong;
        }
        (Err(problems), None) => return vec![format!("the policy does not load: {problems:#?}")],
        (Ok(policy), None) => policy,
    };
    let verdict = policy.check_with(&payload(case), options(case));
    let json = serde_json::to_value(&verdict).unwrap();
    compare(
        &mut wrong,
        "passed",
        expect.passed.as_ref(),
        &verdict.passed,
    );
    compare(
        &mut wrong,
        "label",
        expect.label.as_ref(),
        &json["label"].as_str().unwrap_or_default().to_owned(),
    );
    if let Some(score) = expect.score {
        if (score - verdict.score).abs() > 1e-9 {
            wrong.push(format!("score: expected {score}, got {}", verdict.score));
        }
    }
    let codes: Vec<String> = verdict
        .violations
        .iter()
        .map(|v| v.code.as_str().to_owned())
        .collect();
    compare(&mut wrong, "codes", expect.codes.as_ref(), &codes);
    compare(
        &mut wrong,
        "failures",
        expect.failures.as_ref(),
        &verdict.failures,
    );
    compare(
        &mut wrong,
        "reasoning",
        expect.reasoning.as_ref(),
        &verdict.reasoning,
    );
    let messages: Vec<String> = verdict
        .violations
        .iter()
        .map(|v| v.message.clone())
        .collect();
    compare(&mut wrong, "messages", expect.messages.as_ref(), &messages);
    let tools: Vec<Option<String>> = verdict.violations.iter().map(|v| v.tool.clone()).collect();
    compare(&mut wrong, "tools", expect.tools.as_ref(), &tools);
    let paths: Vec<Option<String>> = verdict.violations.iter().map(|v| v.path.clone()).collect();
    compare(&mut wrong, "paths", expect.paths.as_ref(), &paths);
    let arguments: Vec<Value> = json["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["arguments"].clone())
        .collect();
    compare(
        &mut wrong,
        "arguments",
        expect.arguments.as_ref(),
        &arguments,
    );
    let valid: Vec<bool> = verdict.calls.iter().map(|c| c.valid).collect();
    compare(&mut wrong, "valid", expect.valid.as_ref(), &valid);
    for secret in expect.never_says.iter().flatten() {
        if said(&verdict, secret) {
            wrong.push(format!("a message echoes {secret:?}"));
        }
    }
    if !wrong.is_empty() {
        wrong.push(format!(
            "verdict: {}",
            serde_json::to_string_pretty(&json).unwrap()
        ));
    }
    wrong
}

fn said(verdict: &Verdict, secret: &str) -> bool {
    verdict
        .violations
        .iter()
        .any(|v| v.message.contains(secret))
        || verdict.failures.iter().any(|f| f.contains(secret))
        || verdict.reasoning.contains(secret)
}

fn compare<T: PartialEq + std::fmt::Debug>(
    wrong: &mut Vec<String>,
    what: &str,
    expected: Option<&T>,
    got: &T,
) {
    if let Some(expected) = expected {
        if got != expected {
            wrong.push(format!("{what}: expected {expected:?}, got {got:?}"));
        }
    }
}

#[test]
fn every_case_holds() {
    let mut report = Vec::new();
    let mut ran = 0;
    for (name, case) in cases() {
        ran += 1;
        let wrong = mismatches(&case);
        match (&case.known_failure, wrong.is_empty()) {
            (None, true) | (Some(_), false) => {}
            (None, false) => report.push(format!("FAIL {name}\n  {}", wrong.join("\n  "))),
            (Some(why), true) => report.push(format!(
                "FIXED {name} (known failure: {why}); remove the marker"
            )),
        }
    }
    assert!(ran >= 50, "only {ran} conformance cases");
    assert!(
        report.is_empty(),
        "{} of {ran} cases:\n{}",
        report.len(),
        report.join("\n")
    );
}

/// Codes no case of this suite can produce, each with the reason: they
/// come from a gateway's state, not from a payload, and the gateway's MCP
/// tests (crates/toolgate-gateway/tests/mcp.rs, tests/mcp) hold their cases.
const PENDING_CODES: [(&str, &str); 2] = [
    (
        "tool_definition_changed",
        "needs the pin store of `toolgate serve` or `toolgate mcp`",
    ),
    (
        "result_schema_violation",
        "needs a tool's outputSchema from an MCP server's tools/list",
    ),
];

#[test]
fn every_code_key_and_wording_has_a_case() {
    let cases = cases();
    let codes: BTreeSet<String> = cases
        .iter()
        .flat_map(|(_, case)| case.expect.codes.iter().flatten().cloned())
        .collect();
    for code in ViolationCode::ALL {
        let pending = PENDING_CODES.iter().any(|(c, _)| *c == code.as_str());
        assert!(
            codes.contains(code.as_str()) != pending,
            "code {code}: {}",
            if pending {
                "has a case now; remove it from PENDING_CODES"
            } else {
                "has no case"
            }
        );
    }
    let keys: BTreeSet<String> = cases
        .iter()
        .filter_map(|(_, case)| case.policy.as_ref()?.as_object())
        .flat_map(|policy| policy.keys().cloned())
        .collect();
    for key in [
        "tools",
        "tools_file",
        "allowed_functions",
        "forbidden",
        "required_params",
        "schema",
        "expected",
        "order",
        "min_tools",
        "minTools",
        "max_tools",
        "maxTools",
        "validate_args",
        "validateArgs",
        "require_calls",
        "validate_formats",
        "normalize",
        "input_limits",
        "gateway",
        "audit",
        "mcp",
    ] {
        assert!(keys.contains(key), "policy key {key} has no case");
    }
    let failures: Vec<&String> = cases
        .iter()
        .flat_map(|(_, case)| case.expect.failures.iter().flatten())
        .collect();
    for wording in [
        "Missing expected tools: ",
        "Used forbidden tools: ",
        "Too few tools: ",
        "Too many tools: ",
        "Tool order incorrect",
        "' mismatch",
        "is not an allowed tool",
        "do not match its schema: ",
        "no tool calls found",
    ] {
        assert!(
            failures.iter().any(|f| f.contains(wording)),
            "wording {wording:?} has no case"
        );
    }
}
