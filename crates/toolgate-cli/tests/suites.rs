//! `toolgate test`: the real binary runs suites against the mock agent of
//! `suite_agent.rs` on loopback. Seed 001's examples (each written as a
//! suite under `examples/suites/seed-001/`) run against every wire format
//! the agent streams; the feature suites are under `tests/suites/`.

use assert_cmd::Command;
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

use crate::suite_agent::Agent;

fn suite(relative: &str) -> String {
    format!("{}/../../{relative}", env!("CARGO_MANIFEST_DIR"))
}

/// `toolgate test SUITE ARGS...` with `env`; its exit code, stdout and
/// stderr.
fn run(file: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = Command::cargo_bin("toolgate").unwrap();
    command.arg("test").arg(suite(file)).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// `toolgate test SUITE ARGS...` with `env`, which must exit with `code`;
/// its stdout, or its stderr for exit 2 (when stdout must be empty).
fn expect(file: &str, args: &[&str], env: &[(&str, &str)], code: i32) -> String {
    let (status, stdout, stderr) = run(file, args, env);
    assert_eq!(status, code, "{file}:\n{stdout}{stderr}");
    if code == 2 {
        return stderr;
    }
    stdout
}

/// The ids of the lines that start with `PASS ` or `FAIL `, in order.
fn lines(stdout: &str, verdict: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix(verdict))
        .map(|rest| rest.split(' ').next().unwrap().to_owned())
        .collect()
}

/// The seed's examples whose `StreamParser` reads any format.
const SEED_SUITES_ANY_FORMAT: [(&str, &[&str]); 10] = [
    ("01-overview.json", &["calls-both-expected-tools"]),
    ("02-validate-expected-tools.json", &["success", "failure"]),
    (
        "03-forbid-dangerous-tools.json",
        &["safe-agent", "dangerous-agent"],
    ),
    (
        "04-validate-tool-count.json",
        &["within-bounds", "too-many", "none"],
    ),
    ("05-validate-tool-order.json", &["in-order", "out-of-order"]),
    (
        "06-validate-tool-arguments.json",
        &["matching-arguments", "other-arguments"],
    ),
    (
        "07-combined-validations.json",
        &["all-met", "argument-mismatch"],
    ),
    (
        "10-validate-multi-step-agent.json",
        &["steps-in-order", "steps-reversed"],
    ),
    ("12-tip-stream-parser.json", &["stream-to-validation"]),
    ("13-tip-order.json", &["sequential", "shuffled"]),
];

#[test]
fn seed_examples_run_against_every_wire_format() {
    let agent = Agent::start();
    let mut suites = SEED_SUITES_ANY_FORMAT.to_vec();
    suites.push(("15-tip-forbidden.json", &["harmless", "sends-money"]));
    for format in ["openai", "anthropic", "responses", "json"] {
        let url = agent.url(format);
        for (file, tests) in &suites {
            let stdout = expect(
                &format!("examples/suites/seed-001/{file}"),
                &[],
                &[("AI_API_URL", &url)],
                0,
            );
            assert_eq!(
                lines(&stdout, "PASS "),
                *tests,
                "{format} {file}:\n{stdout}"
            );
        }
    }
}

#[test]
fn seed_suites_as_written_pass_against_an_openai_stream() {
    let agent = Agent::start();
    let url = agent.url("openai");
    let stdout = expect(
        "examples/suites/seed-001/08-test-ai-agent-tool-usage.json",
        &[],
        &[("AI_API_URL", &url)],
        0,
    );
    assert_eq!(lines(&stdout, "PASS "), ["test-calendar-agent"]);
    assert!(
        stdout.contains("AI Agent Tool Test: 1 test, 1 passed, 0 failed"),
        "{stdout}"
    );

    // Without `tests`: one test, its pipeline at the top.
    let stdout = expect(
        "examples/suites/seed-001/09-ensure-safe-tool-usage.json",
        &[],
        &[("AI_URL", &url)],
        0,
    );
    assert_eq!(lines(&stdout, "PASS "), ["test-1"]);

    let stdout = expect(
        "examples/suites/seed-001/11-full-example.json",
        &[],
        &[("AI_API_URL", &url), ("API_KEY", "secret-key")],
        0,
    );
    assert_eq!(lines(&stdout, "PASS "), ["test-customer-query"]);
    assert_eq!(agent.requests(), 3);
}

#[test]
fn seed_suites_fail_on_a_bad_agent_with_the_assertion_and_its_value() {
    let agent = Agent::start();
    // The key is sent as a header: the agent refuses a wrong one.
    let stdout = expect(
        "examples/suites/seed-001/11-full-example.json",
        &[],
        &[("AI_API_URL", &agent.url("openai")), ("API_KEY", "wrong")],
        1,
    );
    assert!(stdout.starts_with("FAIL test-customer-query ("), "{stdout}");
    assert!(
        stdout.contains(
            "block 2 (StreamParser parse-stream): format `sse-openai` reads a text/event-stream body, and this body is not one"
        ),
        "{stdout}"
    );

    // An agent that deletes the account.
    let stdout = expect(
        "examples/suites/seed-001/09-ensure-safe-tool-usage.json",
        &[],
        &[("AI_URL", &agent.url("openai/reckless"))],
        1,
    );
    let line = stdout.lines().next().unwrap();
    assert!(line.starts_with("FAIL test-1 ("), "{line}");
    assert!(
        line.ends_with(
            "safety.passed: expected true, got false [block 3 (ValidateTools): tool call 'delete_account' is a forbidden tool; Used forbidden tools: delete_account]"
        ),
        "{line}"
    );

    // `sse-openai` refuses another provider's stream.
    let stdout = expect(
        "examples/suites/seed-001/08-test-ai-agent-tool-usage.json",
        &[],
        &[("AI_API_URL", &agent.url("anthropic"))],
        1,
    );
    assert!(
        stdout.contains(
            "format `sse-openai` expects an openai_chat stream, and this one is anthropic"
        ),
        "{stdout}"
    );
}

#[test]
fn an_unsupported_seed_block_is_refused_before_anything_runs() {
    let stderr = expect(
        "examples/suites/seed-001/14-tip-llm-judge.json",
        &[],
        &[],
        2,
    );
    assert!(
        stderr.contains("tests[0] (test-1).pipeline[1] (LLMJudge): unknown block `LLMJudge` (toolgate runs HttpRequest, StreamParser, ValidateTools)"),
        "{stderr}"
    );
    // The ValidateTools before it reads `toolCalls`, which nothing sets.
    assert!(stderr.contains("`${toolCalls}` is not set"), "{stderr}");
}

#[test]
fn every_operator_holds_and_fails_with_its_actual_value() {
    let agent = Agent::start();
    let stdout = expect(
        "tests/suites/operators.yaml",
        &["-j", "4"],
        &[("AGENT_URL", &agent.url("openai"))],
        1,
    );
    assert_eq!(
        lines(&stdout, "PASS "),
        ["every-operator-holds"],
        "{stdout}"
    );
    let reasoning = " [block 3 (ValidateTools): Missing expected tools: refund]";
    let expected = [
        ("eq-fails", "verdict.score: expected 1, got 0.67"),
        ("ne-fails", "verdict.passed: expected not false, got false"),
        ("gt-fails", "verdict.score: expected > 0.9, got 0.67"),
        ("gte-fails", "verdict.score: expected >= 0.68, got 0.67"),
        ("lt-fails", "response.status: expected < 200, got 200"),
        ("lte-fails", "response.status: expected <= 199, got 200"),
        (
            "contains-fails",
            "verdict.actualTools: expected to contain \"refund\", got [\"search_orders\",\"send_email\"]",
        ),
        ("matches-fails", "parsed.text: expected to match /^Sorry/, got \"On it, one moment.\""),
        (
            "value-fails",
            "verdict.failures: expected [\"Missing expected tools: send_email\"], got [\"Missing expected tools: refund\"]",
        ),
        (
            "missing-path-fails",
            "verdict.calls.5.name: expected \"search_orders\", got nothing (no value at this path)",
        ),
    ];
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert_eq!(failed.len(), expected.len(), "{stdout}");
    for (line, (id, message)) in failed.iter().zip(expected) {
        assert!(line.starts_with(&format!("FAIL {id} (")), "{line}");
        assert!(
            line.ends_with(&format!("): {message}{reasoning}")),
            "{line}"
        );
    }
}

#[test]
fn variables_come_from_the_environment_the_context_and_earlier_outputs() {
    let agent = Agent::start();
    let stdout = expect(
        "tests/suites/variables.yaml",
        &[],
        &[
            ("AGENT_BASE", &agent.url("anthropic")),
            ("ORDER_ID", "12345"),
            ("API_KEY", "secret-key"),
        ],
        0,
    );
    assert_eq!(lines(&stdout, "PASS "), ["references-everywhere"]);

    // The same suite, another order id: the config compiled from the
    // environment when the block runs now expects what the agent did not
    // send.
    let stdout = expect(
        "tests/suites/variables.yaml",
        &[],
        &[
            ("AGENT_BASE", &agent.url("anthropic")),
            ("ORDER_ID", "777"),
            ("API_KEY", "secret-key"),
        ],
        1,
    );
    assert!(
        stdout.contains(
            "check.passed: expected true, got false (and 1 more) [block 3 (ValidateTools): Tool 'search_orders' arg 'order_id' mismatch]"
        ),
        "{stdout}"
    );
}

#[test]
fn a_base_policy_applies_and_a_block_config_overrides_it() {
    let agent = Agent::start();
    for format in ["openai", "anthropic", "responses", "json"] {
        let stdout = expect(
            "tests/suites/base-policy.yaml",
            &[],
            &[("AGENT_URL", &agent.url(format))],
            0,
        );
        assert_eq!(
            lines(&stdout, "PASS "),
            [
                "base-policy-applies",
                "config-overrides-the-base",
                "schema-of-the-base-policy",
                "the-raw-body-read-by-validate-tools"
            ],
            "{format}:\n{stdout}"
        );
    }
}

#[test]
fn an_unset_variable_stops_the_suite_before_any_request() {
    let agent = Agent::start();
    let stderr = expect(
        "tests/suites/unset.yaml",
        &[],
        &[("AGENT_URL", &agent.url("openai"))],
        2,
    );
    assert!(
        stderr.contains("tests[1] (reads-an-unset-variable).pipeline[0] (HttpRequest): `${env.TOOLGATE_TEST_UNSET_KEY}`: the environment variable TOOLGATE_TEST_UNSET_KEY is not set"),
        "{stderr}"
    );
    assert_eq!(agent.requests(), 0);

    // The context's own references are checked the same way.
    let stderr = expect("tests/suites/mixed.json", &[], &[], 2);
    assert!(
        stderr.contains(
            "context.AGENT: `${env.AGENT_URL}`: the environment variable AGENT_URL is not set"
        ),
        "{stderr}"
    );
}

#[test]
fn failing_tests_exit_1_and_the_junit_file_says_why() {
    let agent = Agent::start();
    let dir = std::env::temp_dir().join(format!("toolgate-junit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junit = dir.join("suite.xml");
    let stdout = expect(
        "tests/suites/mixed.json",
        &["--junit", junit.to_str().unwrap()],
        &[("AGENT_URL", &agent.url("openai"))],
        1,
    );
    assert_eq!(lines(&stdout, "PASS "), ["passes"]);
    assert_eq!(
        lines(&stdout, "FAIL "),
        [
            "misses-a-tool",
            "broken-stream",
            "no-assertions-verdict-fails"
        ]
    );
    assert!(
        stdout.contains("mixed: 4 tests, 1 passed, 3 failed"),
        "{stdout}"
    );

    let xml = std::fs::read_to_string(&junit).unwrap();
    let report = Report::deserialize_from_str(&xml).unwrap();
    assert_eq!((report.tests, report.failures, report.errors), (4, 2, 1));
    let cases = &report.test_suites[0].test_cases;
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "passes",
            "misses-a-tool",
            "broken-stream",
            "no-assertions-verdict-fails"
        ]
    );
    assert!(matches!(cases[0].status, TestCaseStatus::Success { .. }));
    let TestCaseStatus::NonSuccess {
        kind: NonSuccessKind::Failure,
        message: Some(message),
        description: Some(description),
        ..
    } = &cases[1].status
    else {
        panic!("{:?}", cases[1].status)
    };
    assert_eq!(message.as_str(), "check.passed: expected true, got false");
    assert_eq!(
        description.as_str(),
        "check.passed: expected true, got false\n\
         check.score: expected > 0.9, got 0.5\n\
         reasoning: block 3 (ValidateTools): Missing expected tools: send_email"
    );
    let TestCaseStatus::NonSuccess {
        kind: NonSuccessKind::Error,
        message: Some(message),
        ..
    } = &cases[2].status
    else {
        panic!("{:?}", cases[2].status)
    };
    assert!(
        message.as_str().starts_with(
            "block 2 (StreamParser): call 0 'search_orders': malformed_arguments (not_json)"
        ),
        "{message:?}"
    );
    let TestCaseStatus::NonSuccess {
        kind: NonSuccessKind::Failure,
        message: Some(message),
        ..
    } = &cases[3].status
    else {
        panic!("{:?}", cases[3].status)
    };
    assert_eq!(message.as_str(), "safety.passed: expected true, got false");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jobs_run_tests_at_once_and_print_them_in_order() {
    let agent = Agent::start();
    // The agent answers only once all four requests are in at once, and the
    // first test's answer comes last.
    let stdout = expect(
        "tests/suites/gather.yaml",
        &["-j", "4"],
        &[("AGENT_URL", &agent.url("openai"))],
        0,
    );
    assert_eq!(
        lines(&stdout, "PASS "),
        ["first", "second", "third", "fourth"]
    );
    assert_eq!(agent.requests(), 4);

    // A finished test waiting for a slow one before it frees its place.
    let agent = Agent::start();
    let stdout = expect(
        "tests/suites/slow-first.yaml",
        &["-j", "3"],
        &[("AGENT_URL", &agent.url("openai"))],
        0,
    );
    assert_eq!(
        lines(&stdout, "PASS "),
        ["waits-for-the-pair", "quick", "pair-one", "pair-two"]
    );
}

#[test]
fn filter_runs_only_the_tests_it_names() {
    let agent = Agent::start();
    let env = [("AGENT_URL", agent.url("json"))];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let stdout = expect("tests/suites/mixed.json", &["--filter", "passes"], &env, 0);
    assert_eq!(lines(&stdout, "PASS "), ["passes"]);
    assert_eq!(agent.requests(), 1);
    // By name too.
    let stdout = expect("tests/suites/mixed.json", &["--filter", "forgets"], &env, 1);
    assert_eq!(lines(&stdout, "FAIL "), ["misses-a-tool"]);
    let stderr = expect(
        "tests/suites/mixed.json",
        &["--filter", "nothing-like-it"],
        &env,
        2,
    );
    assert!(
        stderr.contains("no test's id or name contains `nothing-like-it`"),
        "{stderr}"
    );
}

#[test]
fn answers_are_read_within_their_bounds() {
    let agent = Agent::start();
    let stdout = expect(
        "tests/suites/bounds.yaml",
        &[],
        &[("AGENT_URL", &agent.url("openai"))],
        1,
    );
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert!(
        failed[0].ends_with(
            "block 1 (HttpRequest): the response body is larger than max_body_bytes (100 bytes)"
        ),
        "{stdout}"
    );
    assert!(failed[1].starts_with("FAIL too-slow ("), "{stdout}");
    assert!(failed[1].contains("block 1 (HttpRequest): "), "{stdout}");
    assert!(
        failed[1].contains("timed out") || failed[1].contains("no whole answer"),
        "{stdout}"
    );
    assert!(
        failed[2].ends_with(
            r#"block 2 (StreamParser): the agent answered with an error: {"error": {"message": "bad key"}}"#
        ),
        "{stdout}"
    );
    assert!(
        failed[3].ends_with(
            r#"block 1 (StreamParser): the answer is in no format toolgate reads (it starts `{"reply":"Done, I deleted it."}`)"#
        ),
        "{stdout}"
    );
    assert_eq!(failed.len(), 4, "{stdout}");
}

#[test]
fn a_suite_with_mistakes_reports_every_one_and_exits_2() {
    let stderr = expect("tests/suites/invalid-shape.yaml", &[], &[], 2);
    assert!(
        stderr.contains(
            "invalid-shape.yaml: tests[0].pipeline[0].inputs: unknown field `inputs`, expected one of `id`, `block`, `input`, `config`, `output`"
        ),
        "{stderr}"
    );

    let stderr = expect("tests/suites/invalid.yaml", &[], &[], 2);
    let at = "tests[0] (more-typos)";
    for problem in [
        format!("{at}.pipeline[0] (HttpRequset): unknown block `HttpRequset`; did you mean `HttpRequest`?"),
        format!("{at}.pipeline[1] (StreamParser): unknown format `sse-gemini`; the formats are auto, sse-openai, sse-anthropic, sse-responses"),
        format!("{at}.pipeline[2] (ValidateTools): `config` is not a valid policy: alowed_functions: unknown key `alowed_functions`; the closest known key is `allowed_functions`"),
        format!("{at}.assertions.check.score: unknown operator `gtt`; the closest is `gt`"),
        format!("{at}.assertions: `chek.passed`: no block output or context entry is named `chek`"),
    ] {
        assert!(stderr.contains(&problem), "{problem}\nnot in\n{stderr}");
    }
}
