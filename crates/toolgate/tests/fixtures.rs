//! Golden snapshots: every captured payload under tests/fixtures, read by
//! `detect`, with the calls, results and violations it yields. The snapshot
//! lives beside the fixture (`<file>.snap`).

use std::path::{Path, PathBuf};

use serde::Serialize;
use toolgate::{detect, Detection};

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
