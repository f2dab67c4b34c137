//! What a run prints: one line per test, then a summary.

use std::fmt::Write;
use std::time::Duration;

use crate::run::{Status, TestOutcome};

/// `PASS id (12 ms)`, or `FAIL id (12 ms): the first failed assertion,
/// with its actual value` and the reasoning of the first failed verdict.
#[must_use]
pub fn progress_line(outcome: &TestOutcome) -> String {
    let time = millis(outcome.elapsed);
    match &outcome.status {
        Status::Passed => format!("PASS {} ({time})", outcome.id),
        Status::Failed(failures) => {
            let mut line = format!("FAIL {} ({time}): {}", outcome.id, failures[0]);
            if failures.len() > 1 {
                let _ = write!(line, " (and {} more)", failures.len() - 1);
            }
            if let Some(reasoning) = outcome.reasoning.first() {
                let _ = write!(line, " [{reasoning}]");
            }
            line
        }
        Status::Error { block, message } => {
            format!("FAIL {} ({time}): {block}: {message}", outcome.id)
        }
    }
}

/// `name: 3 tests, 2 passed, 1 failed (0.4 s)`.
#[must_use]
pub fn summary_line(suite: &str, outcomes: &[TestOutcome], elapsed: Duration) -> String {
    let passed = outcomes.iter().filter(|o| o.passed()).count();
    let tests = match outcomes.len() {
        1 => "1 test".to_owned(),
        n => format!("{n} tests"),
    };
    format!(
        "{suite}: {tests}, {passed} passed, {} failed ({:.1} s)",
        outcomes.len() - passed,
        elapsed.as_secs_f64()
    )
}

fn millis(duration: Duration) -> String {
    format!("{} ms", duration.as_millis())
}
