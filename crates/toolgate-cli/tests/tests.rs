//! The real `toolgate` binary on files and standard input.

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
