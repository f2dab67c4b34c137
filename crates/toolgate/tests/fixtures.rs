//! Golden snapshots: every captured payload under tests/fixtures, read by
//! `detect`, with the calls, results and violations it yields, and the
//! tools it declares as the policy reads them (a Gemini `parameters` schema
//! converted to JSON Schema). The snapshot lives beside the fixture
//! (`<file>.snap`).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use toolgate::policy::tools::read_tools;
use toolgate::policy::DeclaredKind;
use toolgate::{detect, Detection, Policy};

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every payload file, sorted, as a path relative to the fixtures root.
pub(crate) fn fixture_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let root = fixtures_root();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixtures directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("json" | "sse" | "jsonl")
            ) {
                files.push(path.strip_prefix(&root).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    files
}

pub(crate) fn read_fixture(relative: &Path) -> Vec<u8> {
    std::fs::read(fixtures_root().join(relative)).expect("fixture file")
}

/// What a snapshot shows of a detection: everything but the raw argument
/// text, which the fixture already holds.
#[derive(Serialize)]
struct Golden<'a> {
    format: Option<toolgate::Format>,
    framing: toolgate::Framing,
    calls: Vec<GoldenCall<'a>>,
    results: &'a [toolgate::ToolResult],
    violations: &'a [toolgate::Violation],
    /// The tools the payload declares (a request's `tools`), as read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    declared: Vec<GoldenTool>,
    /// What is wrong with them, if anything.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    declaration_problems: Vec<String>,
}

#[derive(Serialize)]
struct GoldenTool {
    name: String,
    kind: String,
    parameters: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    aliases: Vec<String>,
}

#[derive(Serialize)]
struct GoldenCall<'a> {
    index: usize,
    turn: usize,
    id: Option<&'a str>,
    name: &'a str,
    kind: toolgate::CallKind,
    format: toolgate::Format,
    arguments: &'a toolgate::Arguments,
    error: Option<&'a toolgate::ArgumentError>,
}

fn golden(found: &Detection) -> Golden<'_> {
    let (declared, problems) = read_tools(&found.tools.values().expect("a detected list reads"));
    Golden {
        format: found.format,
        framing: found.framing,
        calls: found
            .calls
            .iter()
            .map(|c| GoldenCall {
                index: c.index,
                turn: c.turn,
                id: c.id.as_deref(),
                name: &c.name,
                kind: c.kind,
                format: c.format,
                arguments: &c.arguments,
                error: c.arguments.error(),
            })
            .collect(),
        results: &found.results,
        violations: &found.violations,
        declared: declared
            .into_iter()
            .map(|decl| GoldenTool {
                name: decl.name,
                kind: match decl.kind {
                    DeclaredKind::Function => "function".to_owned(),
                    DeclaredKind::Custom => "custom".to_owned(),
                    DeclaredKind::Typed(tool_type) => format!("hosted: {tool_type}"),
                },
                parameters: decl.parameters,
                aliases: decl.aliases,
            })
            .collect(),
        declaration_problems: problems.iter().map(ToString::to_string).collect(),
    }
}

/// Every tool a captured request declares is a valid declaration: checking
/// the capture finds no `invalid_tool_schema`, whatever its format.
#[test]
fn every_fixture_declares_valid_tools() {
    let policy = Policy::default();
    for relative in fixture_files() {
        let found = detect(&read_fixture(&relative));
        let declared = policy.declare_sent(&found.tools);
        assert!(
            declared.violations().is_empty(),
            "{}: {:#?}",
            relative.display(),
            declared.violations()
        );
        let verdict = policy.check(&read_fixture(&relative));
        assert!(
            verdict
                .violations
                .iter()
                .all(|v| v.code.as_str() != "invalid_tool_schema"),
            "{}: {:#?}",
            relative.display(),
            verdict.violations
        );
    }
}

#[test]
fn every_fixture_matches_its_golden_snapshot() {
    let files = fixture_files();
    assert!(files.len() >= 60, "only {} fixtures found", files.len());
    for relative in files {
        let found = detect(&read_fixture(&relative));
        let dir = fixtures_root().join(relative.parent().unwrap());
        let name = relative.file_name().unwrap().to_string_lossy().into_owned();
        insta::with_settings!({
            snapshot_path => dir,
            prepend_module_to_snapshot => false,
            omit_expression => true,
            info => &relative.display().to_string(),
        }, {
            insta::assert_json_snapshot!(name, golden(&found));
        });
    }
}
