//! `--junit FILE`: one `<testcase>` per test. A test whose assertions
//! failed is a `<failure>` (message: the first failed assertion;
//! text: every failed assertion and the reasoning of each failed
//! verdict); a test whose block could not run is an `<error>`.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::run::{Status, TestOutcome};

/// The `JUnit` XML of a run.
pub fn junit(suite: &str, outcomes: &[TestOutcome], elapsed: Duration) -> Result<String, String> {
    let mut report = Report::new(suite);
    let mut test_suite = TestSuite::new(suite);
    for outcome in outcomes {
        let status = match &outcome.status {
            Status::Passed => TestCaseStatus::success(),
            Status::Failed(failures) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let mut text: Vec<String> = failures.iter().map(ToString::to_string).collect();
                text.extend(outcome.reasoning.iter().map(|r| format!("reasoning: {r}")));
                status
                    .set_message(failures[0].to_string())
                    .set_type("assertion")
                    .set_description(text.join("\n"));
                status
            }
            Status::Error { block, message } => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                let mut text = vec![format!("{block}: {message}")];
                text.extend(outcome.reasoning.iter().map(|r| format!("reasoning: {r}")));
                status
                    .set_message(format!("{block}: {message}"))
                    .set_type("block")
                    .set_description(text.join("\n"));
                status
            }
        };
        let mut case = TestCase::new(outcome.id.as_str(), status);
        case.set_classname(suite)
            .set_time(outcome.elapsed)
            .set_assertions(outcome.assertions);
        if let Some(name) = &outcome.name {
            case.add_property(("name", name.as_str()));
        }
        test_suite.add_test_case(case);
    }
    test_suite.set_time(elapsed);
    report.add_test_suite(test_suite).set_time(elapsed);
    report.to_string().map_err(|err| err.to_string())
}
