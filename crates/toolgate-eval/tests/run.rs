//! Runs over small datasets: counts, overrides, bad lines, order, layouts.

use std::io::Cursor;

use serde_json::{json, Value};
use toolgate_eval::{run_dataset, Evaluator, Options, RunError, Sinks, Summary};

const GOOD: &str = r#"{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{\"q\":\"rust\"}"}}]}}]}"#;
const UNKNOWN: &str = r#"[{"name":"delete_all","arguments":{}}]"#;

fn policy() -> Value {
    json!({"allowed_functions": ["search", "send_email"], "required_params": {"search": ["q"]}})
}

fn run_with(
    policy: Value,
    dataset: &str,
    json_document: bool,
    out: Option<&mut Vec<u8>>,
    strict: bool,
) -> Result<Summary, RunError> {
    let evaluator = Evaluator::new(policy, None, Options::default()).unwrap();
    let mut progress = |_| {};
    let sinks = Sinks {
        out: out.map(|o| o as &mut dyn std::io::Write),
        progress: &mut progress,
        strict,
    };
    run_dataset(
        &evaluator,
        "test",
        Cursor::new(dataset.as_bytes().to_vec()),
        json_document,
        sinks,
    )
}

fn run(dataset: &str) -> Summary {
    run_with(policy(), dataset, false, None, false).unwrap()
}

#[test]
fn counts_traces_calls_tools_and_codes() {
    let dataset = format!("{GOOD}\n{UNKNOWN}\n\n{GOOD}\n");
    let s = run(&dataset);
    assert_eq!((s.traces, s.passed, s.failed), (3, 2, 1));
    assert!((s.pass_rate - 2.0 / 3.0).abs() < 1e-9);
    assert!((s.mean_score - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!((s.calls, s.invalid_calls), (3, 1));
    assert_eq!(s.tools["search"].calls, 2);
    assert_eq!(s.tools["delete_all"].invalid, 1);
    assert_eq!(s.tools["delete_all"].codes["not_allowed"], 1);
    assert_eq!(s.codes["not_allowed"].count, 1);
    assert_eq!(s.codes["not_allowed"].traces, 1);
    assert_eq!(s.score_histogram[10], 2);
    assert_eq!(s.score_histogram[0], 1);
    assert_eq!(s.failing.len(), 1);
    assert_eq!(s.failing[0].line, 2, "line numbers count blank lines");
    assert_eq!(s.worst[0].line, 2);
    assert!(s.failing[0].reasoning.contains("delete_all"));
}

#[test]
fn bad_lines_are_counted_with_their_numbers_and_never_abort() {
    let dataset =
        format!("{GOOD}\nthis is not json\n{{\"unrelated\": true}}\n{GOOD}\n{{\"choices\": [\n");
    let s = run(&dataset);
    assert_eq!(s.traces, 2);
    assert_eq!(s.bad_lines, 3);
    let kinds: Vec<(u64, &str)> = s
        .bad_line_samples
        .iter()
        .map(|b| (b.line, b.kind.as_str()))
        .collect();
    assert_eq!(kinds, [(2, "not_json"), (3, "no_payload"), (5, "not_json")]);

    let err = run_with(policy(), &dataset, false, None, true).unwrap_err();
    assert!(matches!(err, RunError::Strict { line: 2, .. }), "{err}");
}

#[test]
fn scenario_overrides_apply_to_their_line_only() {
    let scenario = |policy: Value| {
        json!({"output": serde_json::from_str::<Value>(GOOD).unwrap(), "policy": policy})
            .to_string()
    };
    let dataset = [
        // An expectation override: the compiled policy is reused.
        scenario(json!({"expected": ["search", "send_email"]})),
        // The same payload without overrides passes.
        GOOD.to_owned(),
        // Another key: the merged policy is compiled (and forbids search).
        scenario(json!({"forbidden": ["search"]})),
        // An override that is not a valid policy is a bad line.
        scenario(json!({"expected": 7})),
        scenario(json!({"validateArgs": {"search": {"q": "rust"}}, "minTools": 1})),
    ]
    .join("\n");
    let mut out = Vec::new();
    let s = run_with(policy(), &dataset, false, Some(&mut out), false).unwrap();
    assert_eq!((s.traces, s.passed, s.bad_lines), (4, 2, 1));
    assert_eq!(s.bad_line_samples[0].kind, "bad_policy");
    assert_eq!(s.bad_line_samples[0].line, 4);
    assert_eq!(s.codes["missing_expected_tools"].count, 1);
    assert_eq!(s.codes["forbidden"].count, 1);

    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    for (at, line) in lines.iter().enumerate() {
        assert_eq!(line["line"], at + 1, "--out keeps input order");
    }
    assert_eq!(
        lines[0]["verdict"]["failures"][0],
        "Missing expected tools: send_email"
    );
    assert_eq!(
        lines[0]["verdict"]["expected_tools"],
        json!(["search", "send_email"])
    );
    assert_eq!(lines[1]["verdict"]["passed"], true);
    assert_eq!(lines[3]["error"]["kind"], "bad_policy");
    assert_eq!(lines[4]["verdict"]["passed"], true);
}

#[test]
fn json_arrays_and_single_documents() {
    let array = format!("[\n  {GOOD},\n  {UNKNOWN}\n]\n");
    let s = run(&array);
    assert_eq!((s.traces, s.passed), (2, 1));
    assert_eq!(s.failing[0].line, 2, "array elements are numbered from 1");
    let s = run_with(policy(), GOOD, true, None, false).unwrap();
    assert_eq!(s.traces, 1);
    // A JSON-lines file whose lines are message lists is still JSON lines.
    let lists = format!("{UNKNOWN}\n{UNKNOWN}\n");
    assert_eq!(run(&lists).traces, 2);
}

#[test]
fn many_batches_keep_line_order() {
    let mut dataset = String::new();
    for i in 0..5000 {
        dataset.push_str(if i % 1000 == 999 { UNKNOWN } else { GOOD });
        dataset.push('\n');
    }
    let s = run(&dataset);
    assert_eq!(s.traces, 5000);
    let lines: Vec<u64> = s.failing.iter().map(|r| r.line).collect();
    assert_eq!(lines, [1000, 2000, 3000, 4000, 5000]);
}

#[test]
fn invented_tool_names_cannot_grow_the_summary() {
    let lines: Vec<String> = (0..(toolgate_eval::aggregate::MAX_TOOLS + 50))
        .map(|i| format!("[{{\"name\":\"tool_{i}\",\"arguments\":{{}}}}]"))
        .collect();
    let dataset = lines.join("\n");
    let s = run_with(json!({}), &dataset, false, None, false).unwrap();
    assert_eq!(s.tools.len(), toolgate_eval::aggregate::MAX_TOOLS + 1);
    assert_eq!(s.tools[toolgate_eval::aggregate::OTHER_TOOLS].calls, 50);
}

#[test]
fn lines_split_across_reads_and_line_ends_read_alike() {
    let dataset = format!("{GOOD}\r\n{UNKNOWN}\n\n{GOOD}\r\nnot json\n{GOOD}");
    let whole = run(&dataset);
    for capacity in [1, 7, 64, 4096] {
        let evaluator = Evaluator::new(policy(), None, Options::default()).unwrap();
        let mut progress = |_| {};
        let sinks = Sinks {
            out: None,
            progress: &mut progress,
            strict: false,
        };
        let reader =
            std::io::BufReader::with_capacity(capacity, Cursor::new(dataset.as_bytes().to_vec()));
        let mut summary = run_dataset(&evaluator, "test", reader, false, sinks).unwrap();
        summary.seconds = whole.seconds;
        assert_eq!(summary, whole, "reads of {capacity} bytes");
    }
    assert_eq!((whole.traces, whole.bad_lines), (4, 1));
    assert_eq!(whole.bad_line_samples[0].line, 5);
    assert_eq!(whole.failing[0].line, 2);
}

#[test]
fn overrides_shared_by_many_lines_apply_alike_and_past_the_cache() {
    let scenario = |policy: &str| format!(r#"{{"output": {GOOD}, "policy": {policy}}}"#);
    let kinds = [
        r#"{"expected": ["search", "send_email"]}"#,
        r#"{"forbidden": ["search"]}"#,
        r#"{"expected": 7}"#,
        "{}",
        "null",
    ];
    let mut lines: Vec<String> = (0..500).map(|i| scenario(kinds[i % kinds.len()])).collect();
    // More distinct overrides than the cache keeps.
    lines.extend((1..=300).map(|n| scenario(&format!(r#"{{"min_tools": {n}}}"#))));
    let s = run(&lines.join("\n"));
    assert_eq!(s.bad_lines, 100);
    assert!(s.bad_line_samples.iter().all(|b| b.kind == "bad_policy"));
    assert_eq!(s.codes["missing_expected_tools"].count, 100);
    assert_eq!(s.codes["forbidden"].count, 100);
    assert_eq!(s.codes["too_few_tools"].count, 299);
    assert_eq!((s.traces, s.passed), (700, 201));
}
