//! The real `toolgate` binary on files and standard input.

mod docs;
mod gateway_durability;
mod gateway_sched;
mod suite_agent;
mod suites;

use assert_cmd::Command;

fn fixture(relative: &str) -> String {
    format!(
        "{}/../../tests/fixtures/{relative}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn toolgate() -> Command {
    Command::cargo_bin("toolgate").unwrap()
}

#[test]
fn detect_prints_the_calls_of_a_file() {
    let out = toolgate()
        .args([
            "detect",
            &fixture("openai-chat/nonstream-parallel-weather-stock.json"),
        ])
        .assert()
        .success();
    let found: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(found["format"], "openai_chat");
    assert_eq!(found["calls"][1]["name"], "get_stock_price");
    assert_eq!(found["calls"][1]["arguments"]["ticker"], "AAPL");
    assert!(found["calls"][1].get("raw_arguments").is_none());
}

#[test]
fn detect_reads_standard_input_and_fails_on_garbage() {
    let out = toolgate()
        .arg("detect")
        .write_stdin("this is not a payload")
        .assert()
        .code(1);
    let found: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(found["violations"][0]["code"], "malformed_payload");
}

#[test]
fn detect_flags_bad_arguments() {
    let body = r#"{"name":"transfer","arguments":"{\"to\":\"a\",\"to\":\"b\"}"}"#;
    let out = toolgate()
        .args(["detect", "-"])
        .write_stdin(body)
        .assert()
        .code(1);
    let found: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(found["calls"][0]["error"]["code"], "duplicate_argument_key");
    assert!(found["calls"][0]["arguments"].is_null());
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let out = toolgate()
        .args(["detect", "/nonexistent/payload.json"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(stderr.starts_with("toolgate: cannot read"), "{stderr}");
}

/// A policy file in a fresh temporary directory.
fn policy_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn verdict(out: &assert_cmd::assert::Assert) -> serde_json::Value {
    serde_json::from_slice(&out.get_output().stdout).expect("the verdict is JSON")
}

fn stderr(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

const WEATHER_POLICY: &str = "\
tools:
  - type: function
    function:
      name: GetWeatherArgs
      parameters:
        type: object
        properties: {city: {type: string}, country: {type: string}, units: {enum: [c, f]}}
        required: [city]
  - type: function
    function:
      name: get_stock_price
      parameters: {type: object, properties: {ticker: {type: string}, exchange: {type: string}}}
expected: [GetWeatherArgs, get_stock_price]
";

#[test]
fn check_passes_a_capture_against_its_policy() {
    let policy = policy_file("weather.yaml", WEATHER_POLICY);
    let out = toolgate()
        .args(["check", "--policy"])
        .arg(&policy)
        .arg(fixture("openai-chat/nonstream-parallel-weather-stock.json"))
        .assert()
        .success();
    let verdict = verdict(&out);
    assert_eq!(verdict["passed"], true);
    assert_eq!(verdict["label"], "pass");
    assert_eq!(verdict["score"], 1.0);
    assert_eq!(
        verdict["actual_tools"],
        serde_json::json!(["GetWeatherArgs", "get_stock_price"])
    );
    assert_eq!(verdict["calls"][1]["arguments"]["ticker"], "AAPL");
}

#[test]
fn check_reads_standard_input_and_prints_the_documented_verdict() {
    let policy = policy_file(
        "expected.json",
        r#"{"expected": ["search_database", "send_email"]}"#,
    );
    let payload = r#"{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"search_database","arguments":"{\"table\":\"users\"}"}}]}}]}"#;
    let out = toolgate()
        .args(["check", "--compact", "--policy"])
        .arg(&policy)
        .arg("-")
        .write_stdin(payload)
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout);
    assert_eq!(stdout.lines().count(), 1, "--compact prints one line");
    let expected: serde_json::Value = serde_json::json!({
      "passed": false,
      "label": "fail",
      "score": 0.5,
      "reasoning": "Missing expected tools: send_email",
      "calls": [{"index": 0, "id": "call_1", "name": "search_database",
                 "arguments": {"table": "users"}, "format": "openai_chat",
                 "valid": true, "violations": []}],
      "violations": [{"code": "missing_expected_tools", "call": null,
                      "tool": "send_email", "path": null,
                      "message": "Missing expected tools: send_email: expected a call of 'send_email' (the policy expects search_database, send_email); the agent called 'search_database'"}],
      "failures": ["Missing expected tools: send_email"],
      "actual_tools": ["search_database"],
      "expected_tools": ["search_database", "send_email"]
    });
    assert_eq!(verdict(&out), expected);
}

#[test]
fn check_fails_garbage_input_with_a_verdict_not_a_crash() {
    for garbage in [
        "",
        "not json at all",
        "{\"choices\": [",
        "\u{0}\u{1}\u{2}",
        "[[[[[[[[[[[[",
    ] {
        let out = toolgate()
            .args(["check", "-"])
            .write_stdin(garbage)
            .assert()
            .code(1);
        let verdict = verdict(&out);
        assert_eq!(verdict["passed"], false, "{garbage:?}");
        assert_eq!(verdict["score"], 0.0, "{garbage:?}");
        assert_eq!(
            verdict["violations"][0]["code"], "malformed_payload",
            "{garbage:?}"
        );
    }
}

#[test]
fn check_results_and_require_calls_flags() {
    let conversation = r#"[{"role":"assistant","tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"call_9","content":"fabricated"}]"#;
    toolgate()
        .args(["check", "-"])
        .write_stdin(conversation)
        .assert()
        .success();
    let out = toolgate()
        .args(["check", "--results", "-"])
        .write_stdin(conversation)
        .assert()
        .code(1);
    assert_eq!(
        verdict(&out)["violations"][0]["code"],
        "result_unknown_call_id"
    );

    let text_only = r#"{"choices":[{"message":{"role":"assistant","content":"Hello"}}]}"#;
    toolgate()
        .args(["check", "-"])
        .write_stdin(text_only)
        .assert()
        .success();
    let out = toolgate()
        .args(["check", "--require-calls", "-"])
        .write_stdin(text_only)
        .assert()
        .code(1);
    assert_eq!(verdict(&out)["reasoning"], "no tool calls found");
}

#[test]
fn check_phase_picks_what_is_judged() {
    let policy = policy_file(
        "phase.yaml",
        "forbidden: [delete_user]\nexpected: [search]\n",
    );
    let policy = policy.to_str().unwrap();
    // A past turn with a forbidden call, then its result and a new question.
    let conversation = r#"[{"role":"user","content":"clean up"},
        {"role":"assistant","tool_calls":[{"id":"call_0","type":"function",
         "function":{"name":"delete_user","arguments":"{\"id\":1}"}}]},
        {"role":"tool","tool_call_id":"call_0","content":"refused"},
        {"role":"user","content":"ok"}]"#;
    let run = |phase: &str| {
        toolgate()
            .args(["check", "--policy", policy, "--phase", phase, "-"])
            .write_stdin(conversation)
            .assert()
    };
    // The request phase links results; the past call is not judged again.
    run("request").success();
    let codes = |out: &assert_cmd::assert::Assert| -> Vec<String> {
        verdict(out)["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["code"].as_str().unwrap().to_owned())
            .collect()
    };
    // The response phase judges the call, not the expectations.
    assert_eq!(codes(&run("response").code(1)), ["forbidden"]);
    // The trajectory judges everything.
    assert_eq!(
        codes(&run("trajectory").code(1)),
        [
            "forbidden",
            "missing_expected_tools",
            "used_forbidden_tools"
        ]
    );
    // A bad result in a request is refused.
    let fabricated =
        conversation.replace(r#""tool_call_id":"call_0""#, r#""tool_call_id":"call_9""#);
    let out = toolgate()
        .args(["check", "--policy", policy, "--phase", "request", "-"])
        .write_stdin(fabricated)
        .assert()
        .code(1);
    assert_eq!(
        verdict(&out)["violations"][0]["code"],
        "result_unknown_call_id"
    );
    toolgate()
        .args(["check", "--phase", "everything", "-"])
        .write_stdin("{}")
        .assert()
        .code(2);
}

#[test]
fn check_with_a_bad_policy_is_exit_2_with_one_line() {
    let cases = [
        (
            "unknown.yaml",
            "alowed_functions: [a]\n",
            "the closest known key is `allowed_functions`",
        ),
        (
            "schema.json",
            r#"{"schema": {"create_order": {"type": "objekt"}}}"#,
            "tool 'create_order' has an invalid schema",
        ),
        ("broken.yaml", "tools: [\n", "not valid YAML"),
        ("list.yaml", "- a\n- b\n", "a policy must be a mapping"),
    ];
    for (name, text, needle) in cases {
        let policy = policy_file(name, text);
        let out = toolgate()
            .args(["check", "--policy"])
            .arg(&policy)
            .arg(fixture("openai-chat/nonstream-parallel-weather-stock.json"))
            .assert()
            .code(2);
        assert!(
            out.get_output().stdout.is_empty(),
            "{name}: no verdict on a policy error"
        );
        let stderr = stderr(&out);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.starts_with("toolgate: "), "{name}: {stderr}");
        assert!(stderr.contains(needle), "{name}: {stderr}");
    }
    let out = toolgate()
        .args(["check", "--policy", "/nonexistent/policy.yaml", "-"])
        .write_stdin("{}")
        .assert()
        .code(2);
    assert!(stderr(&out).contains("cannot read"));
}

#[test]
fn policy_lint_reports_every_problem_at_once() {
    let policy = policy_file(
        "many.yaml",
        "alowed_functions: [a]\nminTools: two\nschema: {x: {type: nope}}\nnormalize: {strip: true}\n",
    );
    let out = toolgate()
        .args(["policy", "lint"])
        .arg(&policy)
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for needle in [
        "unknown key `alowed_functions`",
        "minTools: must be a whole number",
        "tool 'x' has an invalid schema",
        "normalize.strip: unknown key `strip`",
        "4 problems",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }

    let good = policy_file("good.yaml", WEATHER_POLICY);
    let out = toolgate()
        .args(["policy", "lint"])
        .arg(&good)
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).ends_with(": ok\n"));

    toolgate()
        .args(["policy", "lint", "/nonexistent/policy.yaml"])
        .assert()
        .code(2);
}

/// A hosted tool beside a schema of the user's is a warning: lint prints it
/// and exits 0, and `check` still runs and applies the schema.
#[test]
fn policy_lint_prints_warnings_and_check_still_runs() {
    let policy = policy_file(
        "hosted.yaml",
        "tools:\n  - {type: bash_20250124, name: bash}\nschema: {bash: {type: object, required: [command]}}\n",
    );
    let out = toolgate()
        .args(["policy", "lint"])
        .arg(&policy)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.contains(
            "schema.bash: warning: tool 'bash' is declared as the hosted tool `bash_20250124`"
        ),
        "{stdout}"
    );
    assert!(stdout.ends_with(": ok, 1 warning\n"), "{stdout}");

    let out = toolgate()
        .args(["check", "--policy"])
        .arg(&policy)
        .arg("-")
        .write_stdin(r#"[{"name": "bash", "arguments": {"restart": true}}]"#)
        .assert()
        .code(1);
    assert_eq!(verdict(&out)["violations"][0]["code"], "schema_violation");

    let both = policy_file(
        "both.yaml",
        "tools:\n  - {type: bash_20250124, name: bash}\nschema: {bash: {type: object}}\nmax_tools: x\n",
    );
    let out = toolgate()
        .args(["policy", "lint"])
        .arg(&both)
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.ends_with("1 problem, 1 warning\n"), "{stdout}");
}

#[test]
fn usage_errors_are_exit_2() {
    toolgate()
        .args(["check", "--no-such-flag"])
        .assert()
        .code(2);
    toolgate().args(["policy"]).assert().code(2);
}

#[test]
fn check_caller_gives_roles_and_rules_their_caller() {
    let policy = policy_file(
        "access.yaml",
        "roles: {support: {allow: [get_customer]}}\n\
         rules:\n  - {tool: get_customer, when: \"args.customer_id in caller.customer_ids\"}\n",
    );
    let caller = policy_file(
        "caller.json",
        r#"{"id": "support-bot", "roles": ["support"], "attributes": {"customer_ids": ["c-1"]}}"#,
    );
    let call = |customer: &str| {
        format!(r#"[{{"name": "get_customer", "arguments": {{"customer_id": "{customer}"}}}}]"#)
    };
    let run = |with_caller: bool, customer: &str| {
        let mut cmd = toolgate();
        cmd.args(["check", "--policy"]).arg(&policy);
        if with_caller {
            cmd.arg("--caller").arg(&caller);
        }
        cmd.arg("-").write_stdin(call(customer)).assert()
    };
    run(true, "c-1").success();
    let out = run(true, "c-2").code(1);
    assert_eq!(
        verdict(&out)["violations"][0]["code"],
        "unauthorized_argument"
    );
    let out = run(false, "c-1").code(1);
    assert_eq!(verdict(&out)["violations"][0]["code"], "unauthorized_role");

    let bad = policy_file("bad-caller.json", r#"{"name": "x"}"#);
    let out = toolgate()
        .args(["check", "--caller"])
        .arg(&bad)
        .arg("-")
        .write_stdin("[]")
        .assert()
        .code(2);
    assert!(stderr(&out).contains("a caller is"), "{}", stderr(&out));
}

const TRACE_OK: &str = r#"[{"name": "search", "arguments": {"q": "rust"}}]"#;
const TRACE_BAD: &str = r#"[{"name": "drop_table", "arguments": {}}]"#;

#[test]
fn eval_prints_a_summary_writes_json_and_gates_ci() {
    let policy = policy_file("eval-policy.yaml", "allowed_functions: [search]\n");
    let dataset = policy_file(
        "traces.jsonl",
        &format!("{TRACE_OK}\n{TRACE_BAD}\nnot json\n{TRACE_OK}\n{TRACE_OK}\n"),
    );
    let summary_path = dataset.with_file_name("summary.json");
    let out_path = dataset.with_file_name("verdicts.jsonl");
    let report_path = dataset.with_file_name("report.html");
    let out = toolgate()
        .args(["eval", "--policy"])
        .arg(&policy)
        .arg(&dataset)
        .arg("--report")
        .arg(&report_path)
        .arg("--json")
        .arg(&summary_path)
        .arg("--out")
        .arg(&out_path)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for needle in [
        "traces       4",
        "pass rate    60.0%",
        "drop_table",
        "not_allowed",
        "line 2",
        "line 3",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary_path).unwrap()).unwrap();
    assert_eq!(summary["traces"], 4);
    assert_eq!(summary["passed"], 3);
    // The line that is not JSON counts as a failed trace: 3 of 5.
    assert_eq!(summary["pass_rate"], 0.6);
    assert_eq!(summary["bad_lines"], 1);
    assert_eq!(summary["bad_line_samples"][0]["line"], 3);
    assert_eq!(summary["tools"]["drop_table"]["invalid"], 1);
    let html = std::fs::read_to_string(&report_path).unwrap();
    let start = html.find(r#"id="toolgate-summary">"#).unwrap() + r#"id="toolgate-summary">"#.len();
    let end = start + html[start..].find("</script>").unwrap();
    let embedded: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    for key in [
        "traces",
        "passed",
        "pass_rate",
        "mean_score",
        "calls",
        "invalid_calls",
        "tools",
        "codes",
    ] {
        assert_eq!(
            embedded[key], summary[key],
            "the report's {key} is the summary's"
        );
    }
    let verdicts = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(verdicts.lines().count(), 5);

    let gate = |flag: &str, value: &str| {
        toolgate()
            .args(["eval", "--policy"])
            .arg(&policy)
            .arg(&dataset)
            .args([flag, value])
            .assert()
    };
    gate("--min-pass-rate", "0.6").success();
    let out = gate("--min-pass-rate", "0.75").code(1);
    assert!(
        stderr(&out).contains(
            "pass rate 0.600 is below --min-pass-rate 0.75 (1 line that held no trace counts as failed)"
        ),
        "{}",
        stderr(&out)
    );
    gate("--min-score", "0.6").success();
    gate("--min-score", "0.7").code(1);
    gate("--min-score", "2").code(2);

    let out = toolgate()
        .args(["eval", "--strict", "--policy"])
        .arg(&policy)
        .arg(&dataset)
        .assert()
        .code(2);
    assert!(
        stderr(&out).contains("line 3: not_json"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn eval_out_keeps_input_order_over_many_batches_of_standard_input() {
    // About 1.5 MB: several batches, read from a pipe.
    let pad = "z".repeat(400);
    let line = |n: usize| match n {
        n if n % 500 == 0 => TRACE_BAD.to_owned(),
        _ => format!(r#"[{{"name": "search", "arguments": {{"q": "{pad}"}}}}]"#),
    };
    let mut lines: Vec<String> = (1..=3500).map(line).collect();
    let policy = policy_file("many-policy.yaml", "allowed_functions: [search]\n");
    let out_path = policy.with_file_name("many-verdicts.jsonl");
    let run = |lines: &[String], strict: bool| {
        let mut command = toolgate();
        command.args(["eval", "-", "--policy"]).arg(&policy);
        command.arg("--out").arg(&out_path);
        if strict {
            command.arg("--strict");
        }
        command.write_stdin(lines.join("\n")).assert()
    };
    let out = run(&lines, false).success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.contains("traces       3500  (3493 passed, 7 failed)"),
        "{stdout}"
    );
    let numbers = |text: &str| -> Vec<u64> {
        text.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["line"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let written = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(numbers(&written), (1..=3500).collect::<Vec<u64>>());

    lines[2999] = "not json".to_owned();
    let out = run(&lines, true).code(2);
    assert!(
        stderr(&out).contains("line 3000: not_json"),
        "{}",
        stderr(&out)
    );
    let written = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(
        numbers(&written),
        (1..=3000).collect::<Vec<u64>>(),
        "--out holds every line up to the bad one"
    );
}

#[test]
fn eval_reads_standard_input_and_refuses_bad_policies() {
    let out = toolgate()
        .args(["eval", "-"])
        .write_stdin(format!("{TRACE_OK}\n{TRACE_BAD}\n"))
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("traces       2"));
    let bad = policy_file("bad-eval-policy.yaml", "expectd: [a]\n");
    let out = toolgate()
        .args(["eval", "--policy"])
        .arg(&bad)
        .arg("-")
        .write_stdin(TRACE_OK)
        .assert()
        .code(2);
    assert!(stderr(&out).contains("the closest known key is `expected`"));
    toolgate()
        .args(["eval", "/nonexistent/traces.jsonl"])
        .assert()
        .code(2);
}

#[test]
fn eval_fails_a_dataset_without_a_single_trace() {
    let policy = policy_file("empty-policy.yaml", "allowed_functions: [search]\n");
    for (name, text, says) in [
        ("empty.jsonl", "", "holds no trace to evaluate: it is empty"),
        (
            "blank.jsonl",
            "\n\n",
            "holds no trace to evaluate: it is empty",
        ),
        (
            "garbage.jsonl",
            "not json\n{\"unrelated\": 1}\n",
            "none of its 2 lines holds a trace",
        ),
    ] {
        let dataset = policy_file(name, text);
        let out = toolgate()
            .args(["eval", "--policy"])
            .arg(&policy)
            .arg(&dataset)
            .assert()
            .code(1);
        assert!(stderr(&out).contains(says), "{name}: {}", stderr(&out));
    }
}

#[test]
fn eval_writes_junit_provenance_and_a_comparison_with_a_baseline() {
    let policy = policy_file("junit-policy.yaml", "allowed_functions: [search]\n");
    let ok: serde_json::Value = serde_json::from_str(TRACE_OK).unwrap();
    let bad: serde_json::Value = serde_json::from_str(TRACE_BAD).unwrap();
    let rows = [
        serde_json::json!({"id": "t-1", "name": "lookup", "output": ok}).to_string(),
        serde_json::json!({"name": "refund flow", "input": "hi", "output": bad}).to_string(),
        "not json".to_owned(),
        TRACE_OK.to_owned(),
    ];
    let dataset = policy_file("rows.jsonl", &rows.join("\n"));
    let junit = dataset.with_file_name("eval.xml");
    let first = dataset.with_file_name("first.json");
    toolgate()
        .args(["eval", "--policy"])
        .arg(&policy)
        .arg(&dataset)
        .arg("--junit")
        .arg(&junit)
        .arg("--json")
        .arg(&first)
        .assert()
        .success();
    let xml = std::fs::read_to_string(&junit).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    assert_eq!((report.tests, report.failures, report.errors), (4, 1, 1));
    let names: Vec<&str> = report.test_suites[0]
        .test_cases
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["t-1", "refund flow", "line 3", "line 4"]);

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&first).unwrap()).unwrap();
    let provenance = &summary["provenance"];
    assert_eq!(provenance["toolgate_version"], env!("CARGO_PKG_VERSION"));
    let text = std::fs::read(&policy).unwrap();
    assert_eq!(
        provenance["policy"]["sha256"],
        format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&text))
    );
    assert_eq!(
        provenance["dataset"]["bytes"],
        std::fs::metadata(&dataset).unwrap().len()
    );
    assert_eq!(
        provenance["dataset"]["xxh3_128"].as_str().unwrap().len(),
        32
    );
    assert!(provenance["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "--junit"));
    assert!(provenance["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(!summary["tools"]
        .as_object()
        .unwrap()
        .contains_key("refund flow"));
    assert_eq!(summary["failing"][0]["name"], "refund flow");

    // The same dataset with its bad trace fixed, against the first run.
    let fixed = [rows[0].clone(), TRACE_OK.to_owned(), TRACE_OK.to_owned()];
    let dataset = policy_file("rows-fixed.jsonl", &fixed.join("\n"));
    let second = dataset.with_file_name("second.json");
    let report_path = dataset.with_file_name("second.html");
    let out = toolgate()
        .args(["eval", "--policy"])
        .arg(&policy)
        .arg(&dataset)
        .arg("--baseline")
        .arg(&first)
        .arg("--json")
        .arg(&second)
        .arg("--report")
        .arg(&report_path)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("against the baseline"), "{stdout}");
    assert!(
        stdout.contains("pass rate       50.0% -> 100.0%  (+50.0 points)"),
        "{stdout}"
    );
    assert!(stdout.contains("code not_allowed"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&second).unwrap()).unwrap();
    assert_eq!(summary["baseline"]["codes"][0]["code"], "not_allowed");
    assert_eq!(summary["baseline"]["codes"][0]["direction"], "better");
    let html = std::fs::read_to_string(&report_path).unwrap();
    assert!(html.contains("Against the baseline"));
    assert!(html.contains("About this run"));

    let missing = dataset.with_file_name("no-such-baseline.json");
    let out = toolgate()
        .args(["eval", "--policy"])
        .arg(&policy)
        .arg(&dataset)
        .arg("--baseline")
        .arg(&missing)
        .assert()
        .code(2);
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

#[test]
fn policy_schema_and_completions_print() {
    let out = toolgate().args(["policy", "schema"]).assert().success();
    let schema: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema["properties"]["allowed_functions"].is_object());
    assert!(schema["properties"]["minTools"].is_object());
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = toolgate().args(["completions", shell]).assert().success();
        let script = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(script.contains("toolgate"), "{shell}");
        assert!(
            script.contains("min-pass-rate"),
            "{shell}: the eval flags are completed"
        );
    }
    toolgate().args(["completions", "tcsh"]).assert().code(2);
}
