//! Properties of the check: the fast paths agree with the detailed ones, and
//! every verdict keeps its promises whatever the input.

use proptest::prelude::*;
use serde_json::{json, Value};
use toolgate::policy::schema::ArgumentSchema;
use toolgate::{CheckOptions, Policy};

/// JSON values of the kinds tool arguments hold.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|n| json!(n)),
        "[a-z@.:/0-9 -]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("a@example.com"),
            Just("2024-05-01"),
            Just("2024-05-01T10:00:00Z"),
            Just("https://x.io")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    json_tree(leaf.boxed(), "[a-z]{1,6}")
}

/// JSON values made of `leaf`s, in arrays and in objects whose keys match
/// `key` (a regex), three levels deep at most.
pub(crate) fn json_tree(
    leaf: BoxedStrategy<Value>,
    key: &'static str,
) -> impl Strategy<Value = Value> {
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key, inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schemas() -> Vec<ArgumentSchema> {
    [
        json!({"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"enum": ["c", "f"]},
            "when": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
            "n": {"type": "integer", "minimum": 0, "maximum": 100},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}},
            "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "b": {"not": {"type": "null"}}, "c": {"$ref": "#/$defs/c"}},
            "$defs": {"c": {"type": "object", "properties": {"d": {"pattern": "^[a-z]+$"}}}},
            "patternProperties": {"^x": {"type": "boolean"}}}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "dependencies": {"a": ["b"]}, "if": {"required": ["c"]}, "then": {"required": ["d"]}}),
        json!({"type": "object", "minProperties": 1, "maxProperties": 4,
            "propertyNames": {"pattern": "^[a-m]"},
            "dependentRequired": {"a": ["b"]},
            "properties": {
                "a": {"const": {"b": [1, 2.5, null]}},
                "b": {"enum": [1, 1.5, "x", true, null, [1], {"c": 1}]},
                "c": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": 1000},
                "d": {"type": "array", "contains": {"type": "object"}, "minContains": 1,
                      "uniqueItems": true, "prefixItems": [{"type": "integer"}]},
                "e": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "object",
                      "required": ["a", "b", "c"]}]}},
            "unevaluatedProperties": {"type": ["string", "integer", "array"]}}),
    ]
    .iter()
    .map(|schema| ArgumentSchema::compile(schema, true).unwrap())
    .collect()
}

const POLICY: &str = r#"
tools:
  - type: function
    function:
      name: get_weather
      parameters: {type: object, properties: {city: {type: string}}, required: [city]}
  - {type: function, function: {name: ping}}
allowed_functions: [get_weather, ping, search]
forbidden: [delete_user]
required_params: {search: [query]}
expected: [get_weather]
order: [get_weather, search]
max_tools: 3
validate_args: {get_weather: {city: Paris}}
normalize: {strip_empty_values: true, strip_placeholder_strings: true}
rules:
  - {tool: search, when: "size(args.query) < 50"}
limits:
  - {tool: "*", max: 2, per: 1m, by: global}
"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// `passes` (no detail) and `failures` (every detail) agree.
    #[test]
    fn schema_fast_path_agrees_with_the_detailed_path(value in json_value()) {
        for schema in schemas() {
            prop_assert_eq!(schema.passes(&value), schema.failures(&value).is_empty());
        }
    }

    /// Arguments read onto a tape pass a schema exactly when their
    /// `serde_json` object does.
    #[test]
    fn schemas_judge_a_tape_as_they_judge_its_object(value in json_value()) {
        let Value::Object(_) = value else { return Ok(()) };
        let text = value.to_string();
        // Written from the tape, and from the object built from it.
        let limits = toolgate::Limits::default();
        let on_tape = toolgate::detect::parse_arguments(&text, &limits);
        let built = toolgate::detect::parse_arguments(&text, &limits);
        prop_assert!(built.as_object().is_some());
        prop_assert_eq!(serde_json::to_string(&on_tape).unwrap(), serde_json::to_string(&built).unwrap());
        for schema in schemas() {
            if let Some(on_tape) = schema.passes_on_tape(&text) {
                prop_assert_eq!(on_tape, schema.passes(&value), "{}", text);
            }
        }
    }

    /// `uniqueItems` judges an array on a tape as it judges the array
    /// built: items equal as JSON Schema compares them though written
    /// apart (`1` and `1.0`, members in another order), objects alike but
    /// for one value, short arrays and long (the crate compares pairwise
    /// up to 15 items, and hashes past).
    #[test]
    fn unique_items_are_judged_on_a_tape_as_on_the_object(
        picks in proptest::collection::vec(0..40_usize, 0..24)
    ) {
        const ALIKE: [&str; 13] = [
            "1", "1.0", "-0.5", "\"a\"", "\"b\"", "null", "true", "[1, \"a\"]",
            "[1.0, \"a\"]", "{\"x\": 1, \"y\": [2]}", "{\"y\": [2.0], \"x\": 1}", "{}",
            "{\"x\": 1, \"y\": [3]}",
        ];
        let items: Vec<String> = picks
            .iter()
            .map(|&pick| ALIKE.get(pick).map_or_else(|| pick.to_string(), |item| (*item).to_owned()))
            .collect();
        let text = format!("{{\"l\": [{}]}}", items.join(", "));
        let value: Value = serde_json::from_str(&text).unwrap();
        let schema = ArgumentSchema::compile(
            &json!({"type": "object", "properties": {"l": {"uniqueItems": true}}}),
            true,
        )
        .unwrap();
        prop_assert_eq!(schema.passes_on_tape(&text), Some(schema.passes(&value)), "{}", text);
    }

    /// Whatever the calls, the verdict keeps its promises.
    #[test]
    fn verdicts_keep_their_promises(
        calls in proptest::collection::vec(
            (prop_oneof![Just("get_weather"), Just("ping"), Just("search"), Just("Delete_User"), Just("x")],
             json_value()),
            0..6)
    ) {
        let policy = Policy::from_text(POLICY, None).unwrap();
        let payload: Vec<Value> = calls
            .iter()
            .map(|(name, args)| json!({"name": name, "arguments": args}))
            .collect();
        let bytes = serde_json::to_vec(&payload).unwrap();
        let verdict = policy.check_with(&bytes, CheckOptions { results: true, ..CheckOptions::default() });
        prop_assert_eq!(verdict.passed, verdict.violations.is_empty());
        prop_assert!((0.0..=1.0).contains(&verdict.score));
        prop_assert_eq!(verdict.passed, verdict.failures.is_empty());
        for call in &verdict.calls {
            prop_assert_eq!(call.valid, call.violations.is_empty());
            for violation in &call.violations {
                prop_assert!(verdict.violations.contains(violation));
            }
        }
        if verdict.passed {
            prop_assert!((verdict.score - 1.0).abs() < f64::EPSILON);
        }
        // What was checked is what the verdict reports as executing: the
        // reported arguments, checked again as written (no `normalize`, as
        // the gateway checks what it forwards), come back unchanged, and a
        // call that was valid is valid again. (Cleaning is seed 003's, which
        // keeps a container that only cleaning emptied, so cleaning twice
        // may clean more: the second check must not clean.)
        let readable: Vec<_> = verdict.calls.iter().filter(|c| c.arguments.as_object().is_some()).collect();
        let again: Vec<Value> = readable
            .iter()
            .map(|c| json!({"name": c.name, "arguments": serde_json::to_value(&c.arguments).unwrap()}))
            .collect();
        let second = policy.check_with(
            &serde_json::to_vec(&again).unwrap(),
            CheckOptions { as_written: true, ..CheckOptions::default() },
        );
        prop_assert_eq!(readable.len(), second.calls.len());
        for (first, second) in readable.iter().zip(&second.calls) {
            prop_assert_eq!(&first.arguments, &second.arguments);
            if first.valid {
                prop_assert!(second.valid, "{:?}", second.violations);
            }
        }
    }

    /// Any bytes give a verdict, never a panic.
    #[test]
    fn check_never_panics(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let policy = Policy::from_text(POLICY, None).unwrap();
        let verdict = policy.check(&body);
        prop_assert_eq!(verdict.passed, verdict.violations.is_empty());
    }
}

/// `as_written` (the gateway) checks arguments as the model wrote them:
/// `normalize` would clean a value the executor still receives.
#[test]
fn as_written_checks_the_arguments_without_normalize() {
    let policy = Policy::from_text(
        "normalize: {strip_placeholder_strings: true}\nschema: {get_weather: {type: object, properties: {unit: {enum: [c, f]}}}}",
        None,
    )
    .unwrap();
    let payload = br#"[{"name": "get_weather", "arguments": {"unit": "none"}}]"#;
    let cleaned = policy.check_with(payload, CheckOptions::default());
    assert!(cleaned.passed, "{cleaned:?}");
    assert_eq!(cleaned.calls[0].arguments.as_object().unwrap().len(), 0);
    let written = policy.check_with(
        payload,
        CheckOptions {
            as_written: true,
            ..CheckOptions::default()
        },
    );
    assert!(!written.passed);
    assert_eq!(written.violations[0].code.as_str(), "schema_violation");
    assert_eq!(
        written.calls[0].arguments.as_object().unwrap()["unit"],
        "none"
    );
}

/// Tools compiled once by `Policy::declare` give the verdict the payload's
/// own `tools` give, valid or not.
#[test]
fn declared_tools_compiled_once_judge_like_the_payloads_own() {
    let policy = Policy::from_text("forbidden: [drop_table]", None).unwrap();
    let request = serde_json::json!({
        "messages": [{"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"town\": \"Paris\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "unknown_tool", "arguments": "{}"}}]}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    });
    let bytes = serde_json::to_vec(&request).unwrap();
    let own = policy.check_with(&bytes, CheckOptions::default());
    let found = toolgate::detect(&bytes);
    let declared = policy.declare_sent(&found.tools);
    let reused = policy.check_with(
        &bytes,
        CheckOptions {
            declared: Some(&declared),
            ..CheckOptions::default()
        },
    );
    assert_eq!(own, reused);
    let codes: Vec<&str> = own.violations.iter().map(|v| v.code.as_str()).collect();
    assert_eq!(codes, ["schema_violation", "not_allowed"]);
    assert!(policy
        .name_violation(Some(&declared), "get_weather")
        .is_none());
    assert!(policy
        .name_violation(Some(&declared), "unknown_tool")
        .is_some());
    assert!(policy.name_violation(None, "drop_table").is_some());

    let bad = policy.declare(&[serde_json::json!({"name": "x", "parameters": {"type": 12}})]);
    assert_eq!(bad.violations()[0].code.as_str(), "invalid_tool_schema");
}

/// A request that declares a tool with the very parameters the policy
/// declares for it (an agent sending its own tool list through a gateway
/// that knows them) is checked once against them: each failure reported
/// once. Parameters that differ, even slightly, are both checked.
#[test]
fn a_request_declaring_the_policys_own_parameters_is_checked_once() {
    let parameters = json!({"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"], "additionalProperties": false});
    let policy = Policy::from_value(
        &json!({"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": parameters}}]}),
        None,
    )
    .unwrap();
    let call = |tools: Value| {
        let request = json!({
            "messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"town\": \"Paris\"}"}}]}],
            "tools": tools,
        });
        let verdict = policy.check(&serde_json::to_vec(&request).unwrap());
        verdict
            .violations
            .iter()
            .map(|v| {
                (
                    v.code.as_str().to_owned(),
                    v.path.clone().unwrap_or_default(),
                )
            })
            .collect::<Vec<_>>()
    };
    let same = json!([{"type": "function", "function": {"name": "get_weather", "parameters": parameters}}]);
    assert_eq!(
        call(same),
        [
            ("schema_violation".to_owned(), "/town".to_owned()),
            ("schema_violation".to_owned(), "/city".to_owned())
        ]
    );
    let mut looser = parameters.clone();
    looser["additionalProperties"] = json!(true);
    let other =
        json!([{"type": "function", "function": {"name": "get_weather", "parameters": looser}}]);
    // The policy's: `city` missing and `town` unexpected; the request's:
    // `city` missing.
    assert_eq!(call(other).len(), 3);
}

/// Seed 002's argument authorization, as `examples/argument-authorization`
/// writes it: a CEL `all` macro over the recipients. Every recipient inside
/// the organization passes; one outside is refused, never echoed.
#[test]
fn the_argument_authorization_example_refuses_an_external_recipient() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/argument-authorization");
    let policy = Policy::load(dir.join("policy.yaml")).unwrap();
    let internal = policy.check(&std::fs::read(dir.join("payload.json")).unwrap());
    assert!(internal.passed, "{internal:?}");
    let external = policy.check(&std::fs::read(dir.join("payload-fail.json")).unwrap());
    let codes: Vec<&str> = external
        .violations
        .iter()
        .map(|v| v.code.as_str())
        .collect();
    assert_eq!(codes, ["unauthorized_argument"]);
    assert_eq!(external.violations[0].path.as_deref(), Some("/to"));
    assert!(
        !external.reasoning.contains("rival-corp"),
        "{}",
        external.reasoning
    );
}

/// A verdict built for a tally is the whole verdict, less a passing one's
/// `reasoning`, `actual_tools` and `expected_tools`: a failing one is
/// whole.
#[test]
fn a_tallied_verdict_is_the_whole_less_what_a_tally_never_reads() {
    let policy =
        Policy::from_text("forbidden: [drop_table]\nexpected: [get_weather]\n", None).unwrap();
    let payloads: [&[u8]; 4] = [
        br#"[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#,
        br#"[{"name": "get_weather", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Oslo"}}]"#,
        br#"[{"name": "drop_table", "arguments": {}}]"#,
        br#"{"role": "assistant", "content": "no calls"}"#,
    ];
    let mut passed = 0;
    for payload in payloads {
        let whole = policy.check_with(payload, CheckOptions::default());
        let tallied = policy.check_with(
            payload,
            CheckOptions {
                passing: toolgate::Passing::Tallied,
                ..CheckOptions::default()
            },
        );
        let mut expected = whole.clone();
        if whole.passed {
            passed += 1;
            expected.reasoning.clear();
            expected.actual_tools.clear();
            expected.expected_tools.clear();
        }
        assert_eq!(tallied, expected, "{}", String::from_utf8_lossy(payload));
    }
    assert!(passed >= 2 && passed < payloads.len());
}
