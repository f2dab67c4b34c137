//! Running a suite: each test's blocks in order, then its assertions; up to
//! `jobs` tests at once, their outcomes reported in the suite's order.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use serde_json::{Map, Value};

use crate::assertion::{Failure, Subject};
use crate::blocks::{Limits, Output, RunEnv};
use crate::path;
use crate::suite::{Suite, Test};
use crate::template::Scope;

/// How a suite runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Tests run at once (at least 1).
    pub jobs: usize,
    /// Only the tests whose id or name contains this text.
    pub filter: Option<String>,
    /// The bounds of each `HttpRequest` that its `config` does not set.
    pub limits: Limits,
    /// How long connecting to an agent may take.
    pub connect_timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            jobs: 1,
            filter: None,
            limits: Limits::default(),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// What became of one test.
#[derive(Debug, Clone)]
pub struct TestOutcome {
    pub id: String,
    pub name: Option<String>,
    pub elapsed: Duration,
    pub status: Status,
    /// How many assertions the test has.
    pub assertions: usize,
    /// The reasoning of each verdict that failed (`block: reasoning`).
    pub reasoning: Vec<String>,
}

/// Passed, failed assertions, or a block that could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Passed,
    /// Every assertion that did not hold, in the suite's order.
    Failed(Vec<Failure>),
    /// A block failed (a request that could not be sent, a stream that
    /// could not be read); the assertions were not checked.
    Error {
        block: String,
        message: String,
    },
}

impl TestOutcome {
    #[must_use]
    pub fn passed(&self) -> bool {
        self.status == Status::Passed
    }
}

/// Why a suite did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// `--filter` selects no test.
    NoTestSelected(String),
    /// The HTTP client could not be built.
    Client(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::NoTestSelected(filter) => {
                write!(f, "no test's id or name contains `{filter}`")
            }
            RunError::Client(message) => write!(f, "cannot build the HTTP client: {message}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Run the selected tests; `each` sees every outcome in the suite's order
/// as soon as it and those before it are known.
pub async fn run(
    suite: &Suite,
    options: &RunOptions,
    mut each: impl FnMut(&TestOutcome),
) -> Result<Vec<TestOutcome>, RunError> {
    let tests = suite.select(options.filter.as_deref());
    if tests.is_empty() {
        return Err(RunError::NoTestSelected(
            options.filter.clone().unwrap_or_default(),
        ));
    }
    let client = reqwest::Client::builder()
        .connect_timeout(options.connect_timeout)
        .build()
        .map_err(|err| RunError::Client(err.to_string()))?;
    let env = RunEnv {
        client: &client,
        limits: options.limits,
        read_limits: suite.read_limits,
        base_dir: suite.base_dir.as_deref(),
    };
    // Up to `jobs` tests run at once, whichever finish first; each outcome
    // waits in `done` for those before it.
    let mut outcomes = Vec::with_capacity(tests.len());
    let mut done = BTreeMap::new();
    let mut running = stream::iter(tests.into_iter().enumerate())
        .map(|(index, test)| {
            let env = &env;
            async move { (index, run_test(suite, test, env).await) }
        })
        .buffer_unordered(options.jobs.max(1));
    while let Some((index, outcome)) = running.next().await {
        done.insert(index, outcome);
        while let Some(outcome) = done.remove(&outcomes.len()) {
            each(&outcome);
            outcomes.push(outcome);
        }
    }
    Ok(outcomes)
}

async fn run_test(suite: &Suite, test: &Test, env: &RunEnv<'_>) -> TestOutcome {
    let started = Instant::now();
    let mut outputs = Map::new();
    let mut whole = Vec::with_capacity(test.blocks.len());
    let mut reasoning = Vec::new();
    let outcome = |status, reasoning| TestOutcome {
        id: test.id.clone(),
        name: test.name.clone(),
        elapsed: started.elapsed(),
        status,
        assertions: test.assertions.len(),
        reasoning,
    };
    for (index, block) in test.blocks.iter().enumerate() {
        let label = format!(
            "block {} ({}{})",
            index + 1,
            block.name(),
            block
                .id
                .as_ref()
                .map(|id| format!(" {id}"))
                .unwrap_or_default()
        );
        let scope = Scope {
            outputs: &outputs,
            context: &suite.context,
        };
        let value = match block.run(&scope, env).await {
            Ok(value) => value,
            Err(message) => {
                return outcome(
                    Status::Error {
                        block: label,
                        message,
                    },
                    reasoning,
                )
            }
        };
        if block.is_validation() && value.get("passed") != Some(&Value::Bool(true)) {
            let why = value.get("reasoning").and_then(Value::as_str).unwrap_or("");
            reasoning.push(format!("{label}: {why}"));
        }
        match block.output() {
            Output::Unbound => {}
            Output::Whole(name) => {
                outputs.insert(name.clone(), value.clone());
            }
            Output::Fields(fields) => {
                for (field, name) in fields {
                    let part = value.get(field).cloned().unwrap_or(Value::Null);
                    outputs.insert(name.clone(), part);
                }
            }
        }
        whole.push(value);
    }
    let scope = Scope {
        outputs: &outputs,
        context: &suite.context,
    };
    let failures: Vec<Failure> = test
        .assertions
        .iter()
        .filter_map(|assertion| {
            let actual = match &assertion.subject {
                Subject::Named(segments) => {
                    let (root, rest) = segments.split_first().expect("a path has a name");
                    outputs
                        .get(root)
                        .or_else(|| suite.context.get(root))
                        .and_then(|value| path::get(value, rest))
                }
                Subject::Block { index, field } => whole.get(*index).and_then(|v| v.get(field)),
            };
            assertion.check(actual, &scope)
        })
        .collect();
    let status = if failures.is_empty() {
        Status::Passed
    } else {
        Status::Failed(failures)
    };
    outcome(status, reasoning)
}
