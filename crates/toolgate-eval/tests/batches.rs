//! Runs over datasets of many batches (a batch reads 256 KiB): `--out` in
//! input order, bad lines and `--strict` wherever they fall, the rows a
//! line-by-line fold would keep, tool rows past the cap, read and write
//! errors, small reads, arrays.

use std::io::{self, Cursor, Read, Write};

use serde_json::{json, Value};
use toolgate_eval::summary::FAILING;
use toolgate_eval::{run_dataset, Evaluator, Options, RunError, Sinks, Summary};

/// A trace of `good` allowed calls and `bad` calls of an unknown tool,
/// padded so that a few thousand lines span several batches: it scores
/// `good / (good + bad)`.
fn trace(good: usize, bad: usize) -> String {
    let pad = "x".repeat(300);
    let calls: Vec<Value> = (0..good)
        .map(|_| json!({"name": "search", "arguments": {"q": pad}}))
        .chain((0..bad).map(|_| json!({"name": "delete_all", "arguments": {}})))
        .collect();
    Value::Array(calls).to_string()
}

fn policy() -> Value {
    json!({"allowed_functions": ["search"], "required_params": {"search": ["q"]}})
}

fn run(
    policy: Value,
    input: impl Read + Send,
    out: Option<&mut dyn Write>,
    strict: bool,
) -> Result<Summary, RunError> {
    let evaluator = Evaluator::new(policy, None, Options::default()).unwrap();
    let mut progress = |_| {};
    let sinks = Sinks {
        out: out.map(|out| -> &mut dyn Write { out }),
        junit: None,
        progress: &mut progress,
        strict,
    };
    run_dataset(&evaluator, "test", input, false, sinks)
}

fn out_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8(out.to_vec())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// 6000 lines: passing and failing traces, blank lines and lines that are
/// not JSON, each kind every few lines.
fn mixed() -> Vec<String> {
    (1..=6000)
        .map(|n| match n {
            n if n % 7 == 3 => "not json".to_owned(),
            n if n % 11 == 5 => String::new(),
            n if n % 13 == 0 => trace(0, 1),
            _ => trace(1, 0),
        })
        .collect()
}

#[test]
fn out_lines_and_bad_lines_keep_input_order_across_batches() {
    let lines = mixed();
    let mut out = Vec::new();
    let dataset = lines.join("\n");
    let s = run(policy(), Cursor::new(dataset), Some(&mut out), false).unwrap();
    let written = out_lines(&out);
    let numbered: Vec<(usize, &String)> =
        (1..).zip(&lines).filter(|(_, l)| !l.is_empty()).collect();
    assert_eq!(
        written.len(),
        numbered.len(),
        "one --out line a non-blank line"
    );
    for (line, (n, text)) in written.iter().zip(&numbered) {
        assert_eq!(line["line"], *n, "--out keeps input order");
        match text.as_str() {
            "not json" => assert_eq!(line["error"]["kind"], "not_json", "line {n}"),
            _ => assert_eq!(line["verdict"]["passed"], n % 13 != 0, "line {n}"),
        }
    }
    let bad: Vec<u64> = (1..=6000).filter(|n| n % 7 == 3).collect();
    assert_eq!(s.bad_lines, bad.len() as u64);
    let samples: Vec<u64> = s.bad_line_samples.iter().map(|b| b.line).collect();
    assert_eq!(samples, bad[..100], "the first bad lines, in order");
    let failing = numbered
        .iter()
        .filter(|(n, text)| n % 13 == 0 && text.as_str() != "not json")
        .count();
    assert_eq!(s.failed, failing as u64);
    assert_eq!(s.traces, (numbered.len() - bad.len()) as u64);
}

#[test]
fn strict_stops_at_the_first_bad_line_with_the_out_lines_before_it() {
    let mut lines = vec![trace(1, 0); 8000];
    lines[4320] = "not json".to_owned();
    lines[6000] = "not json either".to_owned();
    let mut out = Vec::new();
    let err = run(
        policy(),
        Cursor::new(lines.join("\n")),
        Some(&mut out),
        true,
    )
    .unwrap_err();
    assert!(matches!(err, RunError::Strict { line: 4321, .. }), "{err}");
    let written = out_lines(&out);
    assert_eq!(written.len(), 4321, "every line up to the bad one");
    assert_eq!(written[4319]["line"], 4320);
    assert_eq!(written[4320]["line"], 4321);
    assert_eq!(written[4320]["error"]["kind"], "not_json");
}

#[test]
fn failing_and_worst_rows_are_those_a_line_by_line_fold_keeps() {
    // 3000 traces scoring 0.5, then 100 scoring 0 once the failing table
    // is full, then passing traces.
    let lines: Vec<String> = (1..=5000)
        .map(|n| match n {
            ..=3000 => trace(1, 1),
            3001..=3100 => trace(0, 1),
            _ => trace(1, 0),
        })
        .collect();
    let s = run(policy(), Cursor::new(lines.join("\n")), None, false).unwrap();
    assert_eq!(s.failing.len(), FAILING);
    let first: Vec<u64> = s.failing.iter().map(|r| r.line).collect();
    assert_eq!(first, (1..=FAILING as u64).collect::<Vec<_>>());
    assert_eq!(s.failing_omitted, 3100 - FAILING as u64);
    let worst: Vec<(u64, f64)> = s.worst.iter().map(|r| (r.line, r.score)).collect();
    let want: Vec<(u64, f64)> = (3001..=3020).map(|line| (line, 0.0)).collect();
    assert_eq!(worst, want, "the lowest scores, first lines first");
    assert_eq!(s.worst[0].codes, ["not_allowed"]);
    assert_eq!(s.worst[0].tools, ["delete_all"]);
    assert!((s.mean_score - (3000.0 * 0.5 + 1900.0) / 5000.0).abs() < 1e-12);
}

#[test]
fn tool_rows_past_the_cap_go_to_the_names_seen_first_across_batches() {
    let pad = "y".repeat(300);
    let call = |name: String| json!([{"name": name, "arguments": {"pad": pad}}]).to_string();
    let mut lines: Vec<String> = (0..3000).map(|i| call(format!("tool_{i}"))).collect();
    lines.push(call("tool_5".to_owned()));
    lines.push(call("tool_2999".to_owned()));
    let s = run(json!({}), Cursor::new(lines.join("\n")), None, false).unwrap();
    let max = toolgate_eval::aggregate::MAX_TOOLS;
    assert_eq!(s.tools.len(), max + 1);
    assert_eq!(s.tools["tool_5"].calls, 2);
    assert!(s.tools.contains_key(&format!("tool_{}", max - 1)));
    assert!(!s.tools.contains_key(&format!("tool_{max}")));
    assert_eq!(
        s.tools[toolgate_eval::aggregate::OTHER_TOOLS].calls,
        3000 - max as u64 + 1
    );
}

/// Gives `text`, at most `step` bytes a read, then fails.
struct Failing {
    text: Cursor<Vec<u8>>,
    step: usize,
    fails: bool,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let step = buf.len().min(self.step);
        match self.text.read(&mut buf[..step])? {
            0 if self.fails => Err(io::Error::other("the disk went away")),
            n => Ok(n),
        }
    }
}

#[test]
fn small_reads_read_alike_and_a_read_error_stops_the_run() {
    let lines = mixed();
    let dataset = lines.join("\n").into_bytes();
    let whole = run(policy(), Cursor::new(dataset.clone()), None, false).unwrap();
    for step in [3, 1000] {
        let input = Failing {
            text: Cursor::new(dataset.clone()),
            step,
            fails: false,
        };
        let mut summary = run(policy(), input, None, false).unwrap();
        summary.seconds = whole.seconds;
        assert_eq!(summary, whole, "reads of {step} bytes");
    }
    let input = Failing {
        text: Cursor::new(dataset),
        step: 1 << 16,
        fails: true,
    };
    let err = run(policy(), input, None, false).unwrap_err();
    assert!(err.to_string().contains("the disk went away"), "{err}");
}

/// Takes `room` bytes, then fails.
struct Full {
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.room {
            return Err(io::Error::other("no space left"));
        }
        self.room -= buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_out_file_that_fills_up_stops_the_run() {
    let dataset = vec![trace(1, 0); 6000].join("\n");
    let mut out = Full { room: 1 << 20 };
    let err = run(policy(), Cursor::new(dataset), Some(&mut out), false).unwrap_err();
    assert!(err.to_string().contains("no space left"), "{err}");
}

#[test]
fn a_pretty_printed_array_of_many_batches_is_numbered_by_element() {
    let items: Vec<Value> = (1..=3000)
        .map(|n| serde_json::from_str(&trace(1, usize::from(n % 1000 == 0))).unwrap())
        .collect();
    let text = serde_json::to_string_pretty(&items).unwrap();
    let mut out = Vec::new();
    let s = run(policy(), Cursor::new(text), Some(&mut out), false).unwrap();
    assert_eq!((s.traces, s.failed), (3000, 3));
    let failing: Vec<u64> = s.failing.iter().map(|r| r.line).collect();
    assert_eq!(failing, [1000, 2000, 3000]);
    let written = out_lines(&out);
    assert_eq!(written.len(), 3000);
    assert!(written.iter().zip(1..).all(|(line, n)| line["line"] == n));
}
