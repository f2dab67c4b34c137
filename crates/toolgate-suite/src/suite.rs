//! A suite file (JSON or YAML) to a compiled [`Suite`]: every block
//! compiled, every policy compiled, every `${...}` reference checked
//! before any request is sent. A load collects every problem at once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::assertion::{Assertion, Subject};
use crate::blocks::{BasePolicy, Block};
use crate::path;
use crate::template::{self, Reference, Scope, Target};

/// The largest suite file read.
const MAX_SUITE_BYTES: u64 = 16 * 1024 * 1024;

/// A suite, compiled and checked.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The suite's `name`, or its file name.
    pub name: String,
    pub tests: Vec<Test>,
    /// `context`, its references resolved.
    pub(crate) context: Map<String, Value>,
    /// The bounds answers are read within: the base policy's
    /// `input_limits`, or the defaults.
    pub(crate) read_limits: toolgate::Limits,
    /// Where a policy's `tools_file` is read from.
    pub(crate) base_dir: Option<PathBuf>,
}

/// One test: a pipeline of blocks, then its assertions.
#[derive(Debug, Clone)]
pub struct Test {
    /// The test's `id`, else its `name`, else `test-N`.
    pub id: String,
    pub name: Option<String>,
    pub blocks: Vec<Block>,
    pub assertions: Vec<Assertion>,
}

/// Why a suite cannot run: every problem found, each with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub file: PathBuf,
    pub problems: Vec<String>,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = self.file.display();
        match self.problems.as_slice() {
            [one] => write!(f, "{file}: {one}"),
            many => {
                write!(f, "{file}: {} problems", many.len())?;
                for problem in many {
                    write!(f, "\n  {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LoadError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    context: Map<String, Value>,
    policy: Option<PathBuf>,
    tests: Option<Vec<RawTest>>,
    // A suite of one test, written without `tests` (seed 001's "Ensure
    // Safe Tool Usage").
    id: Option<String>,
    pipeline: Option<Vec<RawBlock>>,
    assertions: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    pipeline: Vec<RawBlock>,
    assertions: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBlock {
    id: Option<String>,
    block: String,
    input: Option<Value>,
    config: Option<Value>,
    output: Option<Value>,
}

impl Suite {
    /// Read and compile a suite file.
    pub fn load(file: &Path) -> Result<Suite, LoadError> {
        let fail = |problem: String| LoadError {
            file: file.to_path_buf(),
            problems: vec![problem],
        };
        let size = std::fs::metadata(file)
            .map_err(|err| fail(format!("cannot read the suite: {err}")))?
            .len();
        if size > MAX_SUITE_BYTES {
            return Err(fail(format!(
                "the suite is {size} bytes, more than {MAX_SUITE_BYTES}"
            )));
        }
        let value = read_keys(file).map_err(fail)?;
        let raw: RawSuite = serde_path_to_error::deserialize(value).map_err(|err| {
            let at = err.path().to_string();
            if at == "." {
                fail(err.inner().to_string())
            } else {
                fail(format!("{at}: {}", err.inner()))
            }
        })?;
        let dir = file.parent().map(Path::to_path_buf);
        let default_name = file
            .file_stem()
            .map_or_else(|| "suite".to_owned(), |s| s.to_string_lossy().into_owned());
        let mut problems = Vec::new();
        let compiled = compile(raw, dir.as_deref(), default_name, &mut problems);
        match compiled {
            Some(suite) if problems.is_empty() => Ok(suite),
            _ => Err(LoadError {
                file: file.to_path_buf(),
                problems,
            }),
        }
    }

    /// The tests whose id or name contains `filter` (all without one).
    #[must_use]
    pub fn select(&self, filter: Option<&str>) -> Vec<&Test> {
        self.tests
            .iter()
            .filter(|test| {
                filter.is_none_or(|text| {
                    test.id.contains(text) || test.name.as_deref().is_some_and(|n| n.contains(text))
                })
            })
            .collect()
    }
}

/// A suite or policy file's keys: YAML or JSON, duplicate keys refused
/// (the policy loader's own reader).
fn read_keys(file: &Path) -> Result<Value, String> {
    toolgate::policy::read_value(file).map_err(|err| match err {
        toolgate::PolicyError::Io { path, message } => {
            format!("cannot read {}: {message}", path.display())
        }
        toolgate::PolicyError::Invalid(problems) => problems
            .iter()
            .map(|problem| problem.message.clone())
            .collect::<Vec<_>>()
            .join("; "),
    })
}

fn compile(
    raw: RawSuite,
    dir: Option<&Path>,
    default_name: String,
    problems: &mut Vec<String>,
) -> Option<Suite> {
    let _ = raw.description;
    let base = match &raw.policy {
        None => BasePolicy {
            keys: Map::new(),
            dir: dir.map(Path::to_path_buf),
        },
        Some(policy) => {
            let path = dir.unwrap_or(Path::new(".")).join(policy);
            match read_keys(&path) {
                Ok(Value::Object(keys)) => BasePolicy {
                    keys,
                    dir: path.parent().map(Path::to_path_buf),
                },
                Ok(_) => {
                    problems.push(format!("policy {}: not a map of keys", path.display()));
                    return None;
                }
                Err(message) => {
                    problems.push(format!("policy {}: {message}", path.display()));
                    return None;
                }
            }
        }
    };
    let read_limits = match toolgate::Policy::from_value(
        &Value::Object(base.keys.clone()),
        base.dir.as_deref(),
    ) {
        Ok(policy) => *policy.limits(),
        Err(err) => {
            let name = raw.policy.as_deref().unwrap_or(Path::new("")).display();
            problems.push(format!("policy {name}: {err}"));
            return None;
        }
    };
    let context = resolve_context(&raw.context, problems);
    let tests = match (raw.tests, raw.pipeline) {
        (Some(_), Some(_)) => {
            problems
                .push("a suite has `tests`, or one test's `pipeline` at the top, not both".into());
            return None;
        }
        (Some(tests), None) => {
            if raw.id.is_some() || raw.assertions.is_some() {
                problems.push(
                    "`id` and `assertions` at the top belong to a suite of one `pipeline`; with `tests`, put them in each test"
                        .into(),
                );
            }
            tests
        }
        (None, Some(pipeline)) => vec![RawTest {
            id: raw.id,
            name: None,
            description: None,
            pipeline,
            assertions: raw.assertions,
        }],
        (None, None) => {
            problems.push("the suite has no `tests` (nor a `pipeline`)".into());
            return None;
        }
    };
    if tests.is_empty() {
        problems.push("`tests` is empty".into());
    }
    let mut ids = HashSet::new();
    let mut compiled = Vec::with_capacity(tests.len());
    for (index, test) in tests.into_iter().enumerate() {
        let id = test
            .id
            .clone()
            .or_else(|| test.name.clone())
            .unwrap_or_else(|| format!("test-{}", index + 1));
        let at = format!("tests[{index}] ({id})");
        if !ids.insert(id.clone()) {
            problems.push(format!("{at}: another test has the id `{id}`"));
        }
        if let Some(test) = compile_test(test, id, &at, &context, &base, problems) {
            compiled.push(test);
        }
    }
    Some(Suite {
        name: raw.name.unwrap_or(default_name),
        tests: compiled,
        context,
        read_limits,
        base_dir: base.dir,
    })
}

/// `context` with the references of each entry resolved (the environment
/// and the entries before it).
fn resolve_context(raw: &Map<String, Value>, problems: &mut Vec<String>) -> Map<String, Value> {
    let mut context = Map::new();
    let outputs = Map::new();
    for (key, value) in raw {
        let scope = Scope {
            outputs: &outputs,
            context: &context,
        };
        match scope.resolve(value) {
            Ok(value) => {
                context.insert(key.clone(), value);
            }
            Err(message) => problems.push(format!("context.{key}: {message}")),
        }
    }
    context
}

fn compile_test(
    test: RawTest,
    id: String,
    at: &str,
    context: &Map<String, Value>,
    base: &BasePolicy,
    problems: &mut Vec<String>,
) -> Option<Test> {
    let _ = test.description;
    if test.pipeline.is_empty() {
        problems.push(format!("{at}: the pipeline is empty"));
        return None;
    }
    let mut bound: HashSet<String> = HashSet::new();
    let mut blocks = Vec::with_capacity(test.pipeline.len());
    let mut ok = true;
    for (index, raw) in test.pipeline.into_iter().enumerate() {
        let label = format!(
            "{at}.pipeline[{index}] ({}{})",
            raw.block,
            raw.id
                .as_ref()
                .map(|id| format!(" {id}"))
                .unwrap_or_default()
        );
        let names = output_names(raw.output.as_ref());
        let block = match Block::compile(
            raw.id,
            &raw.block,
            raw.input.as_ref(),
            raw.config.as_ref(),
            raw.output.as_ref(),
            base,
        ) {
            Ok(block) => block,
            Err(message) => {
                problems.push(format!("{label}: {message}"));
                ok = false;
                // Later blocks may still read what this one would bind.
                bound.extend(names);
                continue;
            }
        };
        let (values, from) = block.templates();
        let mut references = Vec::new();
        for value in values {
            match template::references(value) {
                Ok(found) => references.extend(found),
                Err(message) => problems.push(format!("{label}: {message}")),
            }
        }
        references.extend(from.cloned());
        for reference in &references {
            if let Err(message) = check_reference(reference, &bound, context) {
                problems.push(format!("{label}: {message}"));
            }
        }
        bound.extend(names);
        blocks.push(block);
    }
    let assertions = compile_assertions(test.assertions, at, &blocks, &bound, context, problems);
    ok.then_some(Test {
        id,
        name: test.name,
        blocks,
        assertions: assertions?,
    })
}

/// The names a block's `output` binds, as written.
fn output_names(output: Option<&Value>) -> Vec<String> {
    match output {
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Object(fields)) => fields
            .values()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn compile_assertions(
    raw: Option<Map<String, Value>>,
    at: &str,
    blocks: &[Block],
    bound: &HashSet<String>,
    context: &Map<String, Value>,
    problems: &mut Vec<String>,
) -> Option<Vec<Assertion>> {
    let Some(raw) = raw else {
        // No `assertions`: every verdict must pass.
        let implicit: Vec<Assertion> = blocks
            .iter()
            .enumerate()
            .filter(|(_, block)| block.is_validation())
            .map(|(index, block)| {
                let name = block
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("pipeline[{index}]"));
                let subject = Subject::Block {
                    index,
                    field: "passed".into(),
                };
                Assertion::compile(&format!("{name}.passed"), subject, &Value::Bool(true))
                    .expect("a literal assertion compiles")
            })
            .collect();
        if implicit.is_empty() {
            problems.push(format!(
                "{at}: the test asserts nothing: give it `assertions` (or a ValidateTools block, whose verdict must then pass)"
            ));
            return None;
        }
        return Some(implicit);
    };
    if raw.is_empty() {
        problems.push(format!("{at}: `assertions` is empty"));
        return None;
    }
    let mut out = Vec::with_capacity(raw.len());
    for (key, spec) in &raw {
        let Some(segments) = path::split(key) else {
            problems.push(format!("{at}.assertions: `{key}` is not a dotted path"));
            continue;
        };
        let root = &segments[0];
        if !bound.contains(root) && !context.contains_key(root) {
            let mut known: Vec<&str> = bound.iter().map(String::as_str).collect();
            known.extend(context.keys().map(String::as_str));
            known.sort_unstable();
            problems.push(format!(
                "{at}.assertions: `{key}`: no block output or context entry is named `{root}` (known: {})",
                if known.is_empty() { "none".to_owned() } else { known.join(", ") }
            ));
            continue;
        }
        match Assertion::compile(key, Subject::Named(segments.clone()), spec) {
            Ok(assertion) => {
                for value in assertion.expected_values() {
                    for reference in template::references(value).unwrap_or_default() {
                        if let Err(message) = check_reference(&reference, bound, context) {
                            problems.push(format!("{at}.assertions.{key}: {message}"));
                        }
                    }
                }
                out.push(assertion);
            }
            Err(message) => problems.push(format!("{at}.assertions.{key}: {message}")),
        }
    }
    Some(out)
}

/// Whether a reference can be read when its block runs: an environment
/// variable that is set, a name an earlier block binds, a path into the
/// context that holds a value, or a bare name set in the environment.
fn check_reference(
    reference: &Reference,
    bound: &HashSet<String>,
    context: &Map<String, Value>,
) -> Result<(), String> {
    match &reference.target {
        Target::Env(name) => match std::env::var(name).ok() {
            Some(_) => Ok(()),
            None => Err(format!(
                "`${{{}}}`: the environment variable {name} is not set",
                reference.text
            )),
        },
        Target::Name(segments) => {
            let (root, rest) = segments.split_first().expect("a reference has a name");
            if bound.contains(root) {
                return Ok(());
            }
            if let Some(value) = context.get(root) {
                return match path::get(value, rest) {
                    Some(_) => Ok(()),
                    None => Err(format!(
                        "`${{{}}}`: the context entry `{root}` holds no value at `{}`",
                        reference.text,
                        rest.join(".")
                    )),
                };
            }
            if rest.is_empty() && std::env::var(root).is_ok() {
                return Ok(());
            }
            Err(template::unset(&reference.text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Load `text` as a suite file named `name`; the problems, if any.
    fn load(name: &str, text: &str) -> Result<Suite, Vec<String>> {
        let dir =
            std::env::temp_dir().join(format!("toolgate-suite-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let loaded = Suite::load(&file).map_err(|err| err.problems);
        std::fs::remove_dir_all(&dir).unwrap();
        loaded
    }

    const CHECK: &str = r#"{"block": "ValidateTools", "input": {"toolCalls": []}, "output": "v"}"#;

    #[test]
    fn names_tests_and_refuses_two_with_one_id() {
        let suite = load(
            "ids.json",
            &format!(
                r#"{{"tests": [{{"pipeline": [{CHECK}]}}, {{"name": "named", "pipeline": [{CHECK}]}}]}}"#
            ),
        )
        .unwrap();
        let ids: Vec<&str> = suite.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["test-1", "named"]);
        assert_eq!(suite.name, "ids");
        assert_eq!(suite.select(Some("nam")).len(), 1);

        let problems = load(
            "twice.json",
            &format!(r#"{{"tests": [{{"id": "a", "pipeline": [{CHECK}]}}, {{"id": "a", "pipeline": [{CHECK}]}}]}}"#),
        )
        .unwrap_err();
        assert_eq!(problems, ["tests[1] (a): another test has the id `a`"]);
    }

    #[test]
    fn refuses_suites_that_run_or_assert_nothing() {
        let problems = load("none.yaml", "name: x\n").unwrap_err();
        assert_eq!(problems, ["the suite has no `tests` (nor a `pipeline`)"]);
        let problems = load("empty.yaml", "tests: []\n").unwrap_err();
        assert_eq!(problems, ["`tests` is empty"]);
        let problems = load(
            "both.json",
            &format!(r#"{{"pipeline": [{CHECK}], "tests": [{{"pipeline": [{CHECK}]}}]}}"#),
        )
        .unwrap_err();
        assert!(problems[0].contains("not both"), "{problems:?}");
        let problems = load(
            "silent.yaml",
            "tests: [{id: t, pipeline: [{block: HttpRequest, input: {url: 'http://x'}}]}]\n",
        )
        .unwrap_err();
        assert!(
            problems[0].contains("the test asserts nothing"),
            "{problems:?}"
        );
        // Seed 001's tip shows an HttpRequest without its input.
        let problems = load(
            "tip.yaml",
            "pipeline: [{block: HttpRequest, output: response}]\nassertions: {response.status: 200}\n",
        )
        .unwrap_err();
        assert!(
            problems[0].starts_with(
                "tests[0] (test-1).pipeline[0] (HttpRequest): an HttpRequest needs `input`"
            ),
            "{problems:?}"
        );
    }

    #[test]
    fn a_base_policy_that_does_not_compile_is_named() {
        let problems = load(
            "base.yaml",
            "policy: missing-policy.yaml\npipeline: [{block: ValidateTools, input: {toolCalls: []}}]\n",
        )
        .unwrap_err();
        assert!(
            problems[0].starts_with("policy ")
                && problems[0].contains("missing-policy.yaml: cannot read"),
            "{problems:?}"
        );
    }

    #[test]
    fn checks_output_fields_and_context_paths() {
        let problems = load(
            "fields.yaml",
            "context: {a: {b: 1}}\ntests:\n  - id: t\n    pipeline:\n      - {block: StreamParser, input: '${a.c}', output: {toolcalls: x}}\n    assertions: {a.b: 1}\n",
        )
        .unwrap_err();
        assert_eq!(
            problems,
            [
                "tests[0] (t).pipeline[0] (StreamParser): `output.toolcalls`: a StreamParser gives no `toolcalls`; the closest is `toolCalls` (it gives text, toolCalls, format)",
            ]
        );
        let problems = load(
            "paths.yaml",
            "context: {a: {b: 1}}\ntests:\n  - id: t\n    pipeline:\n      - {block: StreamParser, input: '${a.c}', output: p}\n    assertions: {p.text: x}\n",
        )
        .unwrap_err();
        assert_eq!(
            problems,
            ["tests[0] (t).pipeline[0] (StreamParser): `${a.c}`: the context entry `a` holds no value at `c`"]
        );
    }
}
