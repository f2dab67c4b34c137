//! `--junit FILE`: one JUnit test case a trace, for CI systems that show
//! test reports. A case is named by its row's `id`, else its `name`, else
//! its line; a failing trace is a `failure` (its first violation code as
//! the type, its reasoning as the message, every failure line as the
//! text), a line that held no trace an `error` (its kind as the type).
//! The cases are gathered in line order during the run, a few words each,
//! and bounded: past [`MAX_CASES`] the run reports that the file would be
//! too large rather than write part of it.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use toolgate::Verdict;

use crate::scenario::Label;
use crate::summary::{BadLine, Summary};

/// Most test cases a JUnit file holds: CI systems read reports of
/// thousands of tests, not of millions; `--out` writes every verdict.
pub const MAX_CASES: usize = 1_000_000;

/// One trace's test case, as gathered during the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub line: u64,
    pub id: Option<String>,
    pub name: Option<String>,
    pub outcome: CaseOutcome,
}

/// How a trace's test case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseOutcome {
    Passed,
    /// The verdict failed: its first code, its reasoning, its failures.
    Failed {
        code: String,
        reasoning: String,
        failures: Vec<String>,
    },
    /// The line held no trace: its kind and message.
    Error {
        kind: String,
        message: String,
    },
}

impl Case {
    pub(crate) fn of_verdict(line: u64, label: Option<&Label>, verdict: &Verdict) -> Case {
        let outcome = if verdict.passed {
            CaseOutcome::Passed
        } else {
            CaseOutcome::Failed {
                code: verdict
                    .violations
                    .first()
                    .map_or("failed", |v| v.code.as_str())
                    .to_owned(),
                reasoning: verdict.reasoning.clone(),
                failures: verdict.failures.clone(),
            }
        };
        Case {
            line,
            id: label.and_then(|l| l.id.clone()),
            name: label.and_then(|l| l.name.clone()),
            outcome,
        }
    }

    pub(crate) fn of_bad_line(bad: &BadLine) -> Case {
        Case {
            line: bad.line,
            id: bad.id.clone(),
            name: bad.name.clone(),
            outcome: CaseOutcome::Error {
                kind: bad.kind.clone(),
                message: bad.message.clone(),
            },
        }
    }

    /// The test case's name: the row's id, else its name, else its line.
    #[must_use]
    pub fn title(&self) -> String {
        Label::display(self.id.as_deref(), self.name.as_deref(), self.line)
    }
}

/// The cases of a run, and whether there were more than [`MAX_CASES`].
#[derive(Debug, Default)]
pub struct Cases {
    pub cases: Vec<Case>,
    /// Cases left out past the bound.
    pub over: u64,
}

impl Cases {
    pub(crate) fn extend(&mut self, more: &mut Vec<Case>) {
        let room = MAX_CASES.saturating_sub(self.cases.len());
        if more.len() > room {
            self.over += (more.len() - room) as u64;
            more.truncate(room);
        }
        self.cases.append(more);
    }
}

/// The JUnit report of a run: one suite named after the dataset, one case a
/// trace in line order. `classname` is the dataset too, so CI systems
/// group the cases under it.
#[must_use]
pub fn report(summary: &Summary, cases: Vec<Case>) -> Report {
    let dataset = if summary.dataset == "-" {
        "standard input"
    } else {
        summary.dataset.as_str()
    };
    let mut suite = TestSuite::new(format!("toolgate eval {dataset}"));
    suite.set_time(std::time::Duration::from_secs_f64(summary.seconds.max(0.0)));
    if let Some(provenance) = &summary.provenance {
        suite.add_property(("toolgate_version", provenance.toolgate_version.as_str()));
        if let Some(policy) = &provenance.policy {
            suite.add_property(("policy", policy.path.as_str()));
            suite.add_property(("policy_sha256", policy.sha256.as_str()));
        }
        suite.add_property(("dataset_xxh3_128", provenance.dataset.xxh3_128.as_str()));
    }
    for case in cases {
        let title = case.title();
        let status = match case.outcome {
            CaseOutcome::Passed => TestCaseStatus::success(),
            CaseOutcome::Failed {
                code,
                reasoning,
                failures,
            } => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status
                    .set_type(code)
                    .set_message(reasoning)
                    .set_description(failures.join("\n"));
                status
            }
            CaseOutcome::Error { kind, message } => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_type(kind).set_message(message);
                status
            }
        };
        let mut test = TestCase::new(title, status);
        test.set_classname(dataset);
        test.add_property(("line", case.line.to_string().as_str()));
        suite.add_test_case(test);
    }
    let mut report = Report::new("toolgate eval");
    report.add_test_suite(suite);
    report
}
