//! The HTML report of a real run: its embedded numbers are the run's
//! summary, whatever the dataset holds.

use std::io::Cursor;

use toolgate_eval::{report, run_dataset, Evaluator, Options, Sinks, Summary};

fn summary_of(dataset: &str) -> Summary {
    let policy = serde_json::json!({"allowed_functions": ["search"], "expected": ["search"]});
    let evaluator = Evaluator::new(policy, None, Options::default()).unwrap();
    let mut progress = |_| {};
    let sinks = Sinks {
        out: None,
        junit: None,
        progress: &mut progress,
        strict: false,
    };
    run_dataset(
        &evaluator,
        "traces.jsonl",
        Cursor::new(dataset.as_bytes().to_vec()),
        false,
        sinks,
    )
    .unwrap()
}

/// The summary embedded in the report.
fn embedded(html: &str) -> Summary {
    let start = html
        .find(r#"<script type="application/json" id="toolgate-summary">"#)
        .expect("summary block");
    let body = &html[start..];
    let body = &body[body.find('>').unwrap() + 1..];
    let end = body.find("</script>").unwrap();
    serde_json::from_str(&body[..end]).expect("embedded JSON")
}

#[test]
fn the_report_holds_the_summary_and_shows_its_numbers() {
    let dataset = [
        r#"[{"name":"search","arguments":{"q":"a"}}]"#,
        r#"[{"name":"search","arguments":{"q":"b"}}]"#,
        r#"[{"name":"search","arguments":{"q":"c"}}]"#,
        r#"[{"name":"wipe_disk","arguments":{}}]"#,
        "not_json",
    ]
    .join("\n");
    let summary = summary_of(&dataset);
    let html = report::html(&summary);
    assert_eq!(embedded(&html), summary);
    for shown in [
        "75.0%",
        "wipe_disk",
        "not_allowed",
        "Missing expected tools: search",
        "not_json",
    ] {
        assert!(html.contains(shown), "{shown}");
    }
    assert!(
        html.contains(r#"type="search""#),
        "the failing traces can be filtered"
    );
}

#[test]
fn hostile_strings_are_escaped_and_nothing_is_fetched() {
    let dataset = [
        r#"[{"name":"<script>alert(1)</script>","arguments":{}}]"#,
        r#"[{"name":"x\"><img src=x onerror=alert(2)>","arguments":{}}]"#,
        r#"[{"name":"</script><script>alert(3)</script>","arguments":{}}]"#,
    ]
    .join("\n");
    let summary = summary_of(&dataset);
    let html = report::html(&summary);
    assert!(
        !html.contains("<script>alert"),
        "no raw script from the data"
    );
    assert!(!html.contains("<img"), "no raw tag from the data");
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only our two script blocks close"
    );
    assert_eq!(
        embedded(&html),
        summary,
        "the JSON block survives hostile names"
    );
    for network in ["http://", "https://", "//cdn", "@import", "url("] {
        assert!(
            !html.contains(network),
            "{network}: the report must be self-contained"
        );
    }
}

#[test]
fn an_empty_summary_renders() {
    let summary = summary_of("");
    let html = report::html(&summary);
    assert_eq!(summary.traces, 0);
    assert!(html.ends_with("</html>\n"));
    assert_eq!(embedded(&html), summary);
}
