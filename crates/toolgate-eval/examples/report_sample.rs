//! Render a sample HTML report, to look at the report's layout:
//! `cargo run -p toolgate-eval --example report_sample -- /tmp/report.html [sample|big|empty|hostile]`.
//!
//! The sample is made up (a fixed pseudo-random run over a dozen tools), and
//! folded here, not by the crate's aggregation, so the report can be looked
//! at on its own.

use std::collections::BTreeMap;

use toolgate_eval::{BadLine, CodeStats, Summary, ToolStats, TraceRow};

const TOOLS: [(&str, u32); 12] = [
    ("search_web", 30),
    ("read_file", 22),
    ("write_file", 9),
    ("send_email", 8),
    ("run_sql", 7),
    ("http_get", 6),
    ("create_ticket", 5),
    ("get_weather", 4),
    ("calendar_create_event", 3),
    ("transfer_funds", 2),
    ("delete_record", 2),
    ("mcp__github__create_pull_request_review_comment", 2),
];

/// Call-level codes, with a message for a tool.
const CALL_CODES: [(&str, &str); 7] = [
    (
        "schema_violation",
        "arguments for tool '{}' are not valid: /limit: 500 is greater than the maximum of 100",
    ),
    (
        "missing_required_param",
        "tool call '{}' is missing required parameter 'query'",
    ),
    (
        "not_allowed",
        "tool '{}' is not allowed; allowed: search_web, read_file, send_email",
    ),
    (
        "unexpected_arguments",
        "tool '{}' takes no argument 'verbose'",
    ),
    (
        "malformed_arguments",
        "tool '{}' sent arguments that are not JSON: expected value at line 1 column 1",
    ),
    ("forbidden", "tool '{}' is forbidden by the policy"),
    (
        "unauthorized_argument",
        "tool call '{}': argument 'to' is outside the allowed values",
    ),
];

/// Trace-level codes.
const TRACE_CODES: [(&str, &str); 3] = [
    (
        "missing_expected_tools",
        "Missing expected tools: create_ticket",
    ),
    (
        "order_mismatch",
        "Tools were called out of order: expected read_file before write_file",
    ),
    ("too_many_tools", "Too many tool calls: 6, at most 4"),
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next()).unwrap_or(0) % n
    }
    fn tool(&mut self) -> &'static str {
        let total: u32 = TOOLS.iter().map(|t| t.1).sum();
        let mut pick = u32::try_from(self.next() % u64::from(total)).unwrap_or(0);
        for (name, weight) in TOOLS {
            if pick < weight {
                return name;
            }
            pick -= weight;
        }
        TOOLS[0].0
    }
}

/// Fold one trace into the summary.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn record(
    s: &mut Summary,
    line: u64,
    score: f64,
    names: Vec<String>,
    codes: &[&str],
    reasons: &[String],
) {
    s.traces += 1;
    let bucket = if score >= 1.0 {
        10
    } else {
        ((score * 10.0) as usize).min(9)
    };
    s.score_histogram[bucket] += 1;
    let mut distinct: Vec<&str> = codes.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    for code in codes {
        s.codes.entry((*code).to_owned()).or_default().count += 1;
    }
    for code in &distinct {
        if let Some(stats) = s.codes.get_mut(*code) {
            stats.traces += 1;
        }
    }
    if codes.is_empty() {
        s.passed += 1;
        return;
    }
    s.failed += 1;
    let row = TraceRow {
        line,
        id: None,
        name: None,
        score,
        passed: false,
        tools: names,
        codes: distinct.iter().map(|c| (*c).to_owned()).collect(),
        reasoning: reasons.join("; "),
    };
    if s.failing.len() < 2000 {
        s.failing.push(row.clone());
    } else {
        s.failing_omitted += 1;
    }
    let at = s.worst.partition_point(|kept| kept.score <= score);
    if at < 20 {
        s.worst.insert(at, row);
        s.worst.truncate(20);
    }
}

#[allow(clippy::cast_precision_loss)]
fn sample(traces: u64, fail_every: u64, seed: u64) -> Summary {
    let mut rng = Rng(seed);
    let mut s = Summary {
        dataset: "evals/support-agent/2024-06-traces.jsonl".into(),
        score_histogram: vec![0; 11],
        ..Summary::default()
    };
    let mut score_sum = 0.0;
    for line in 1..=traces {
        let calls = 1 + rng.below(4);
        let fails = line % fail_every == 3 || rng.below(40) == 0;
        let mut names = Vec::new();
        let mut invalid = 0;
        let mut codes: Vec<&str> = Vec::new();
        let mut reasons = Vec::new();
        for _ in 0..calls {
            let name = rng.tool();
            names.push(name.to_owned());
            let tool = s.tools.entry(name.to_owned()).or_default();
            tool.calls += 1;
            s.calls += 1;
            if fails && (invalid == 0 || rng.below(3) == 0) && rng.below(5) != 0 {
                let (code, message) =
                    CALL_CODES[rng.below(CALL_CODES.len()).min(rng.below(CALL_CODES.len()))];
                tool.invalid += 1;
                *tool.codes.entry(code.to_owned()).or_default() += 1;
                s.invalid_calls += 1;
                invalid += 1;
                codes.push(code);
                reasons.push(message.replace("{}", name));
            }
        }
        if fails && (invalid == 0 || rng.below(4) == 0) {
            let (code, message) = TRACE_CODES[rng.below(TRACE_CODES.len())];
            codes.push(code);
            reasons.push(message.to_owned());
        }
        let passed = codes.is_empty();
        let score = if passed {
            1.0
        } else {
            let valid = (calls - invalid) as f64 / calls as f64;
            ((valid * 0.8 + rng.below(20) as f64 / 100.0) * 100.0).round() / 100.0
        };
        let score = score.min(if passed { 1.0 } else { 0.95 });
        score_sum += score;
        record(&mut s, line, score, names, &codes, &reasons);
    }
    for tool in s.tools.values_mut() {
        tool.invalid_share = tool.invalid as f64 / tool.calls as f64;
    }
    s.pass_rate = s.passed as f64 / s.traces as f64;
    s.mean_score = score_sum / s.traces as f64;
    for (line, kind, message) in [
        (57, "not_json", "expected value at line 1 column 1"),
        (
            212,
            "no_payload",
            "no tool calls, messages or completion found in this JSON",
        ),
        (
            388,
            "bad_policy",
            "policy override: key 'expectd' is not a policy key; did you mean 'expected'?",
        ),
    ] {
        s.bad_lines += 1;
        s.bad_line_samples.push(BadLine {
            line,
            id: None,
            name: None,
            kind: kind.into(),
            message: message.into(),
        });
    }
    s.seconds = traces as f64 / 41_000.0;
    s
}

fn hostile() -> Summary {
    let evil = "<script>alert(1)</script>";
    let mut s = sample(60, 6, 7);
    s.dataset = format!("\"><img src=x onerror=alert(3)>{evil}");
    s.tools.insert(
        evil.into(),
        ToolStats {
            calls: 3,
            invalid: 3,
            invalid_share: 1.0,
            codes: BTreeMap::from([(evil.to_owned(), 3)]),
        },
    );
    s.codes.insert(
        evil.into(),
        CodeStats {
            count: 3,
            traces: 1,
        },
    );
    s.failing[0].reasoning = "</script><script>alert(2)</script> & 'quotes' \"too\"".into();
    s.failing[0].tools.push(evil.into());
    s
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "/tmp/report.html".into());
    let summary = match args.next().as_deref() {
        None | Some("sample") => sample(400, 9, 42),
        Some("big") => sample(250_000, 40, 1),
        Some("empty") => Summary {
            dataset: "-".into(),
            score_histogram: vec![0; 11],
            ..Summary::default()
        },
        Some("hostile") => hostile(),
        Some(other) => {
            eprintln!("unknown variant {other}: sample, big, empty or hostile");
            std::process::exit(2);
        }
    };
    std::fs::write(&path, toolgate_eval::report::html(&summary)).expect("write the report");
    eprintln!("wrote {path}");
}
