//! `toolgate test`: suites of agent tests, in seed 001's format (JSON or
//! YAML). Each test runs a pipeline of blocks — `HttpRequest` (ask the
//! agent), `StreamParser` (read its streamed or whole answer into text and
//! tool calls, with the library's own readers), `ValidateTools` (the
//! library's verdict on those calls under a policy) — then checks its
//! assertions on the outputs.
//!
//! [`Suite::load`] reads, compiles and checks a suite (every block, every
//! policy, every `${...}` reference, before any request); [`run()`] runs its
//! tests, up to `jobs` at once, reporting each [`TestOutcome`] in order;
//! [`progress_line`] and [`junit()`] say what happened.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("toolgate-suite-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let file = dir.join("suite.yaml");
//! std::fs::write(&file, r#"
//! name: offline
//! context:
//!   answer: {toolCalls: [{name: search_database, args: {table: users}}]}
//! tests:
//!   - id: expected-tools
//!     pipeline:
//!       - block: ValidateTools
//!         input: {from: answer.toolCalls, as: toolCalls}
//!         config: {expected: [search_database, send_email]}
//!         output: validation
//!     assertions:
//!       validation.passed: false
//!       validation.score: 0.5
//!       validation.failures: ["Missing expected tools: send_email"]
//!       validation.actualTools: [search_database]
//! "#)?;
//! let suite = toolgate_suite::Suite::load(&file)?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let options = toolgate_suite::RunOptions::default();
//! let outcomes = runtime.block_on(toolgate_suite::run(&suite, &options, |_| {}))?;
//! assert!(outcomes[0].passed(), "{}", toolgate_suite::progress_line(&outcomes[0]));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

mod assertion;
mod blocks;
mod junit;
mod path;
mod report;
mod run;
mod suite;
mod template;

pub use assertion::{Assertion, Failure, OPERATORS};
pub use blocks::{Block, Limits, BLOCKS};
pub use junit::junit;
pub use report::{progress_line, summary_line};
pub use run::{run, RunError, RunOptions, Status, TestOutcome};
pub use suite::{LoadError, Suite, Test};

/// The closest spelling among `known` to `word`, when one is close.
pub(crate) fn closest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|candidate| {
            (
                strsim::damerau_levenshtein(&word.to_lowercase(), &candidate.to_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, candidate)| *distance <= candidate.len().max(3) / 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}
