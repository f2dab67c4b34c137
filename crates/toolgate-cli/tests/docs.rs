//! The user documentation in `docs/` stays whole and true: it names every
//! command and flag of the binary, every violation code and every policy
//! key; its links lead somewhere; and nothing in the repository sends a
//! reader to a document outside it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::toolgate;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn doc(name: &str) -> String {
    std::fs::read_to_string(repo().join("docs").join(name))
        .unwrap_or_else(|err| panic!("docs/{name}: {err}"))
}

/// Every text file of the repository, but build output and git's own.
fn text_files() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), ".git" | "target" | "corpus" | "artifacts") {
                    walk(&path, out);
                }
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo(), &mut out);
    out
}

#[test]
fn nothing_sends_a_reader_outside_the_repository() {
    // Spelled in two halves, so that this file does not name them itself.
    let outside = [
        format!("{}{}", "CONT", "RACT"),
        format!("{}{}", "../sha", "red"),
        format!("{}{}", "shared/se", "eds"),
    ];
    let files = text_files();
    assert!(files.len() > 100, "the repository's files: {}", files.len());
    let mut found = Vec::new();
    for (path, text) in &files {
        for (at, line) in text.lines().enumerate() {
            if outside.iter().any(|word| line.contains(word.as_str())) {
                found.push(format!("{}:{}: {line}", path.display(), at + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "point these at the documentation in docs/ instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_relative_link_of_the_documentation_leads_to_a_file() {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.push(repo().join("README.md"));
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in text
            .split("](")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
        {
            if target.starts_with("http") || target.starts_with('#') {
                continue;
            }
            let file = target.split('#').next().unwrap();
            if !page.parent().unwrap().join(file).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links: {broken:#?}");
}

#[test]
fn the_verdict_page_explains_every_violation_code() {
    let page = doc("verdict.md");
    let missing: Vec<&str> = toolgate::ViolationCode::ALL
        .iter()
        .map(|code| code.as_str())
        .filter(|code| !page.contains(&format!("| `{code}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/verdict.md has no row for {missing:?}"
    );
}

#[test]
fn the_policy_page_names_every_policy_key() {
    let page = doc("policy.md");
    let schema = toolgate::policy::json_schema();
    let mut missing = Vec::new();
    for (key, value) in schema["properties"].as_object().unwrap() {
        if !page.contains(&format!("`{key}`")) {
            missing.push(key.clone());
        }
        // The keys of each section, as `section.key` or in the section's row.
        for inner in value["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if !page.contains(&format!("`{inner}`")) {
                missing.push(format!("{key}.{inner}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/policy.md does not name {missing:?}"
    );
}

/// The subcommands `toolgate help` lists, and each one's long flags.
fn commands() -> Vec<(String, BTreeSet<String>)> {
    fn help(args: &[&str]) -> String {
        let out = toolgate().args(args).arg("--help").assert().success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    }
    fn subcommands(text: &str) -> Vec<String> {
        let Some(at) = text.find("Commands:") else {
            return Vec::new();
        };
        text[at..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(str::to_owned)
            .collect()
    }
    let mut out = Vec::new();
    let mut queue: Vec<Vec<String>> = subcommands(&help(&[]))
        .into_iter()
        .map(|c| vec![c])
        .collect();
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        let nested = subcommands(&text);
        let flags: BTreeSet<String> = text
            .split_whitespace()
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| w.trim_end_matches([',', '.', ':']).to_owned())
            .filter(|w| w != "--help" && w != "--version")
            .collect();
        for sub in &nested {
            let mut next = path.clone();
            next.push(sub.clone());
            queue.push(next);
        }
        if nested.is_empty() {
            out.push((path.join(" "), flags));
        }
    }
    out
}

#[test]
fn the_cli_page_names_every_command_and_flag() {
    let page = doc("cli.md");
    let commands = commands();
    assert!(commands.len() >= 7, "{commands:?}");
    let mut missing = Vec::new();
    for (command, flags) in commands {
        if !page.contains(&format!("## `toolgate {command}")) {
            missing.push(format!("the command `{command}`"));
        }
        for flag in flags {
            if !page.contains(&format!("`{flag}")) {
                missing.push(format!("{command} {flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/cli.md does not name {missing:?}");
}
