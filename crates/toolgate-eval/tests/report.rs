//! The HTML report: the embedded summary, the numbers a reader sees,
//! escaping of untrusted strings, no network resources, empty summaries.

use std::collections::BTreeMap;

use toolgate_eval::report::html;
use toolgate_eval::{BadLine, CodeStats, Summary, ToolStats, TraceRow};

const JSON_OPEN: &str = r#"<script type="application/json" id="toolgate-summary">"#;

fn row(line: u64, score: f64, tools: &[&str], codes: &[&str], reasoning: &str) -> TraceRow {
    TraceRow {
        line,
        id: None,
        name: None,
        score,
        passed: false,
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        codes: codes.iter().map(|c| (*c).to_owned()).collect(),
        reasoning: reasoning.to_owned(),
    }
}

fn tool(calls: u64, invalid: u64, codes: &[(&str, u64)]) -> ToolStats {
    #[allow(clippy::cast_precision_loss)]
    let invalid_share = invalid as f64 / calls as f64;
    ToolStats {
        calls,
        invalid,
        invalid_share,
        codes: codes.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect(),
    }
}

fn sample() -> Summary {
    let failing = vec![
        row(
            3,
            0.0,
            &["delete_all"],
            &["not_allowed"],
            "tool 'delete_all' is not allowed",
        ),
        row(
            17,
            0.5,
            &["search", "search"],
            &["missing_required_param"],
            "tool call 'search' is missing required parameter 'q'",
        ),
    ];
    Summary {
        dataset: "runs/agent.jsonl".into(),
        traces: 1600,
        passed: 1400,
        failed: 200,
        pass_rate: 0.875,
        mean_score: 0.9125,
        calls: 2410,
        invalid_calls: 205,
        tools: BTreeMap::from([
            (
                "search".to_owned(),
                tool(
                    1204,
                    37,
                    &[("missing_required_param", 30), ("schema_violation", 7)],
                ),
            ),
            (
                "delete_all".to_owned(),
                tool(168, 168, &[("not_allowed", 168)]),
            ),
            ("send_email".to_owned(), tool(1038, 0, &[])),
        ]),
        codes: BTreeMap::from([
            (
                "not_allowed".to_owned(),
                CodeStats {
                    count: 168,
                    traces: 160,
                },
            ),
            (
                "missing_required_param".to_owned(),
                CodeStats {
                    count: 30,
                    traces: 28,
                },
            ),
            (
                "schema_violation".to_owned(),
                CodeStats {
                    count: 7,
                    traces: 7,
                },
            ),
        ]),
        score_histogram: vec![160, 0, 3, 0, 0, 30, 0, 7, 0, 0, 1400],
        worst: failing.clone(),
        failing,
        failing_omitted: 198,
        bad_lines: 2,
        bad_line_samples: vec![
            BadLine {
                line: 9,
                id: None,
                name: None,
                kind: "not_json".into(),
                message: "expected value at line 1 column 1".into(),
            },
            BadLine {
                line: 1234,
                id: None,
                name: None,
                kind: "no_payload".into(),
                message: "no tool calls found".into(),
            },
        ],
        seconds: 0.25,
        ..Summary::default()
    }
}

/// The summary embedded in the page, parsed back.
fn embedded(page: &str) -> Summary {
    let start = page.find(JSON_OPEN).expect("the summary block") + JSON_OPEN.len();
    let end = start
        + page[start..]
            .find("</script>")
            .expect("the block is closed");
    serde_json::from_str(&page[start..end]).expect("the block is JSON")
}

/// The page's text as a reader sees it: no tags, scripts or styles,
/// entities decoded, whitespace collapsed.
fn visible(page: &str) -> String {
    let mut text = String::new();
    let mut rest = page;
    while let Some(at) = rest.find('<') {
        text.push_str(&rest[..at]);
        text.push(' ');
        rest = &rest[at..];
        let skip_to = if rest.starts_with("<script") {
            "</script>"
        } else if rest.starts_with("<style") {
            "</style>"
        } else {
            ">"
        };
        let end = rest.find(skip_to).expect("tags are closed") + skip_to.len();
        rest = &rest[end..];
    }
    text.push_str(rest);
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every `src=`/`href=` value and CSS `url(...)` that reaches the network.
fn network_references(page: &str) -> Vec<String> {
    let lower = page.to_ascii_lowercase();
    let mut found = Vec::new();
    for attr in ["src=", "href=", "url(", "@import"] {
        for (at, _) in lower.match_indices(attr) {
            let value = lower[at + attr.len()..].trim_start_matches([' ', '"', '\'']);
            if attr == "@import"
                || value.starts_with("http:")
                || value.starts_with("https:")
                || value.starts_with("//")
            {
                found.push(page[at..(at + 60).min(page.len())].to_owned());
            }
        }
    }
    found
}

#[test]
fn the_embedded_json_reads_back_as_the_summary() {
    let summary = sample();
    let page = html(&summary);
    assert_eq!(embedded(&page), summary);
    assert_eq!(page.matches(JSON_OPEN).count(), 1);
}

#[test]
fn the_page_shows_the_totals() {
    let page = html(&sample());
    assert!(page.starts_with("<!doctype html>"));
    let text = visible(&page);
    for expected in [
        "runs/agent.jsonl",
        "Pass rate 87.5%",
        "Traces 1,600",
        "Mean score 0.912",
        "Calls checked 2,410",
        "Invalid calls 205",
        "Bad lines 2",
        "Run time 250 ms",
        // A bad line is a failed trace: 1,400 of 1,602 lines.
        "Passed 1,400 87.4%",
        "Failed 200 12.5%",
        "No trace 2 0.1%",
        "Lines 1,602",
        // 200 failed traces and 2 lines without one.
        "202 failed",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
}

#[test]
fn the_page_shows_the_tables() {
    let text = visible(&html(&sample()));
    for expected in [
        // Tools: worst first, with calls, invalid, share and top codes.
        "Tools 3 Tool Calls Invalid Share Top violation codes delete_all 168 168 100.0% not_allowed 168 \
         search 1,204 37 3.1% missing_required_param 30 schema_violation 7 send_email 1,038 0 0.0%",
        // The bar chart: invalid calls of the tool's calls.
        "delete_all 168 / 168 · 100.0%",
        "1 tool with no invalid calls",
        // Codes, by count.
        "not_allowed 168 160 10.0% missing_required_param 30 28 1.8%",
        "not_allowed 168 · 160 traces",
        // Failing traces, with the omitted ones noted.
        "Failing traces 200",
        "198 more are not in this report",
        "17 0.50 search ×2 missing_required_param tool call 'search' is missing required parameter 'q'",
        // Bad lines with their numbers.
        "Bad lines 2",
        "9 not_json expected value at line 1 column 1",
        // The histogram's counts.
        "1,400",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    assert!(text.contains("1234 no_payload no tool calls found"));
}

#[test]
fn hostile_strings_are_escaped() {
    let evil = "<script>alert(1)</script>";
    let mut summary = sample();
    summary.dataset = "\"><img src=x onerror=alert(3)>".into();
    summary.tools.insert(evil.into(), tool(2, 2, &[(evil, 2)]));
    summary
        .tools
        .insert("x\" onmouseover=\"alert(4)".into(), tool(1, 1, &[]));
    summary.codes.insert(
        evil.into(),
        CodeStats {
            count: 2,
            traces: 1,
        },
    );
    summary.failing[0].reasoning =
        "</script><script>alert(2)</script> <!-- & <img src=\"https://evil.test/x.png\">".into();
    summary.failing[0].tools.push(evil.into());
    summary.bad_line_samples[0].message = "</SCRIPT><script>alert(5)</script>".into();
    let page = html(&summary);

    let lower = page.to_ascii_lowercase();
    assert!(!lower.contains("<script>alert"), "a script got through");
    assert!(!lower.contains("<img"), "an element got through");
    assert!(!page.contains("\" onmouseover=\""), "an attribute got out");
    // Two script elements: the summary and the filter. The summary's block
    // closes once, at its end.
    assert_eq!(lower.matches("<script").count(), 2);
    assert_eq!(lower.matches("</script").count(), 2);
    assert_eq!(embedded(&page), summary);
    assert!(network_references(&page).is_empty());
    // The strings are shown, as text.
    let text = visible(&page);
    assert!(text.contains(evil));
    assert!(text.contains("\"><img src=x onerror=alert(3)>"));
    assert!(text.contains("</script><script>alert(2)</script> <!-- &"));
}

#[test]
fn the_page_fetches_nothing() {
    for summary in [sample(), Summary::default()] {
        let page = html(&summary);
        assert_eq!(network_references(&page), Vec::<String>::new());
        assert!(page.contains("default-src 'none'"), "a CSP forbids fetches");
        // No external stylesheet, script, font or image.
        let lower = page.to_ascii_lowercase();
        for tag in [
            "<link",
            "<img",
            "<iframe",
            "<object",
            "<embed",
            "@font-face",
        ] {
            assert!(!lower.contains(tag), "{tag}");
        }
    }
    assert_eq!(
        network_references(r#"<img src="https://x.test/a.png"><a href='//x.test'>"#).len(),
        2,
        "the check itself finds references"
    );
}

#[test]
fn an_empty_summary_renders() {
    let summary = Summary::default();
    let page = html(&summary);
    assert_eq!(embedded(&page), summary);
    let text = visible(&page);
    for expected in [
        "no traces",
        "Pass rate —",
        "No traces were scored.",
        "No tool calls were checked.",
        "No violations",
        "No failing traces.",
        "Every line held a trace.",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    assert!(!text.contains("NaN"));
}

#[test]
fn a_clean_run_says_so() {
    let summary = Summary {
        dataset: "-".into(),
        traces: 3,
        passed: 3,
        pass_rate: 1.0,
        mean_score: 1.0,
        calls: 4,
        tools: BTreeMap::from([("search".to_owned(), tool(4, 0, &[]))]),
        score_histogram: vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3],
        ..Summary::default()
    };
    let text = visible(&html(&summary));
    for expected in [
        "standard input",
        "all passed",
        "Pass rate 100.0%",
        "No invalid calls: all 4 calls to 1 tool were valid.",
        "No failing traces.",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
}

/// The riskiest tools show however rarely they were called, and a
/// forbidden call counts once in the violations chart.
#[test]
fn tools_rank_by_invalid_share_and_a_forbidden_call_counts_once() {
    let mut s = sample();
    for n in 0..20 {
        s.tools.insert(
            format!("busy_tool_{n:02}"),
            tool(5000, 50 + n, &[("schema_violation", 50 + n)]),
        );
    }
    s.tools.insert(
        "hallucinated_tool".into(),
        tool(2, 2, &[("not_allowed", 2)]),
    );
    s.codes.insert(
        "forbidden".into(),
        CodeStats {
            count: 9,
            traces: 9,
        },
    );
    s.codes.insert(
        "used_forbidden_tools".into(),
        CodeStats {
            count: 9,
            traces: 9,
        },
    );
    let ranked: Vec<&str> = s
        .tools_by_invalid_share()
        .iter()
        .map(|(n, _)| n.as_str())
        .take(2)
        .collect();
    assert_eq!(ranked, ["delete_all", "hallucinated_tool"]);
    let page = html(&s);
    let share_card = &page
        [page.find("Invalid share per tool").unwrap()..page.find("<h2>Violation codes").unwrap()];
    assert!(
        share_card.contains("hallucinated_tool"),
        "a tool called twice, both invalid, is among the riskiest"
    );
    let count_card = &page[page.find("Invalid calls per tool").unwrap()
        ..page.find("Invalid share per tool").unwrap()];
    assert!(
        !count_card.contains("hallucinated_tool"),
        "by count it is past the chart's rows"
    );
    let codes_card =
        &page[page.find("<h2>Violation codes").unwrap()..page.find("About this run").unwrap()];
    assert!(codes_card.contains("title=\"forbidden\""));
    assert!(
        !codes_card.contains("title=\"used_forbidden_tools\""),
        "counted once, as forbidden"
    );
    assert!(codes_card.contains("A forbidden call counts once"));
    // The table keeps every code.
    assert!(page[page.find("id=\"codes\"").unwrap()..].contains("used_forbidden_tools"));
}
