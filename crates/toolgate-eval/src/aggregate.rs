//! Folding verdicts into a [`Summary`], in line order, in constant memory:
//! the tables are bounded (tool names past [`MAX_TOOLS`] share one row), and
//! only the worst and the first failing traces are kept whole.

use toolgate::{Verdict, ViolationCode};

use crate::summary::{BadLine, Summary, TraceRow, BAD_LINES, FAILING, WORST};

/// Most distinct tool names with a row of their own; a dataset of invented
/// names cannot grow the summary without bound.
pub const MAX_TOOLS: usize = 1000;
/// The row that tools past [`MAX_TOOLS`] share.
pub const OTHER_TOOLS: &str = "(other tools)";

/// What a summary keeps of one verdict: built where the verdict was made,
/// so the verdict is dropped on the thread that allocated it.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub score: f64,
    pub passed: bool,
    /// Each call's tool name and the codes of its violations.
    pub calls: Vec<(String, Vec<ViolationCode>)>,
    /// Every violation's code.
    pub codes: Vec<ViolationCode>,
    /// For a failing trace: its tools and reasoning.
    pub failure: Option<Failure>,
}

/// The row of a failing trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub tools: Vec<String>,
    pub reasoning: String,
}

impl From<Verdict> for Facts {
    fn from(verdict: Verdict) -> Self {
        let failure = (!verdict.passed).then_some(Failure {
            tools: verdict.actual_tools,
            reasoning: verdict.reasoning,
        });
        Facts {
            score: verdict.score,
            passed: verdict.passed,
            calls: verdict
                .calls
                .into_iter()
                .map(|call| (call.name, call.violations.iter().map(|v| v.code).collect()))
                .collect(),
            codes: verdict.violations.iter().map(|v| v.code).collect(),
            failure,
        }
    }
}

/// A summary being built.
#[derive(Debug, Default)]
pub struct Aggregate {
    summary: Summary,
    score_sum: f64,
}

impl Aggregate {
    #[must_use]
    pub fn new(dataset: &str) -> Self {
        Aggregate {
            summary: Summary {
                dataset: dataset.to_owned(),
                score_histogram: vec![0; 11],
                ..Summary::default()
            },
            score_sum: 0.0,
        }
    }

    /// Add the verdict of the trace on `line`.
    pub fn verdict(&mut self, line: u64, verdict: Verdict) {
        self.facts(line, Facts::from(verdict));
    }

    /// Add what a trace's verdict comes to.
    pub fn facts(&mut self, line: u64, facts: Facts) {
        let s = &mut self.summary;
        s.traces += 1;
        if facts.passed {
            s.passed += 1;
        } else {
            s.failed += 1;
        }
        self.score_sum += facts.score;
        s.calls += facts.calls.len() as u64;
        for (name, codes) in facts.calls {
            let key = if s.tools.contains_key(&name) || s.tools.len() < MAX_TOOLS {
                name
            } else {
                OTHER_TOOLS.to_owned()
            };
            let tool = s.tools.entry(key).or_default();
            tool.calls += 1;
            if !codes.is_empty() {
                s.invalid_calls += 1;
                tool.invalid += 1;
                for code in codes {
                    *tool.codes.entry(code.as_str().to_owned()).or_default() += 1;
                }
            }
        }
        let mut distinct: Vec<ViolationCode> = facts.codes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        for code in &facts.codes {
            s.codes.entry(code.as_str().to_owned()).or_default().count += 1;
        }
        for code in &distinct {
            if let Some(stats) = s.codes.get_mut(code.as_str()) {
                stats.traces += 1;
            }
        }
        s.score_histogram[bucket(facts.score)] += 1;

        let Some(failure) = facts.failure else {
            return;
        };
        let row = TraceRow {
            line,
            score: facts.score,
            passed: false,
            tools: failure.tools,
            codes: distinct.iter().map(|c| c.as_str().to_owned()).collect(),
            reasoning: failure.reasoning,
        };
        // Lines arrive in order, so a later line never displaces an equal
        // score: the worst keep their first occurrences.
        let worse =
            s.worst.len() < WORST || s.worst.last().is_some_and(|last| facts.score < last.score);
        if worse {
            let at = s.worst.partition_point(|kept| kept.score <= facts.score);
            s.worst.insert(at, row.clone());
            s.worst.truncate(WORST);
        }
        if s.failing.len() < FAILING {
            s.failing.push(row);
        } else {
            s.failing_omitted += 1;
        }
    }

    /// Add a line that held no trace.
    pub fn bad_line(&mut self, bad: BadLine) {
        self.summary.bad_lines += 1;
        if self.summary.bad_line_samples.len() < BAD_LINES {
            self.summary.bad_line_samples.push(bad);
        }
    }

    /// The finished summary.
    #[must_use]
    pub fn finish(mut self, seconds: f64) -> Summary {
        let s = &mut self.summary;
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        if s.traces > 0 {
            s.pass_rate = s.passed as f64 / s.traces as f64;
            s.mean_score = self.score_sum / s.traces as f64;
        }
        for tool in s.tools.values_mut() {
            #[allow(clippy::cast_precision_loss)]
            if tool.calls > 0 {
                tool.invalid_share = tool.invalid as f64 / tool.calls as f64;
            }
        }
        s.seconds = seconds;
        self.summary
    }
}

/// The histogram bucket of a score: tenths, and exactly 1.0 apart.
fn bucket(score: f64) -> usize {
    if score >= 1.0 {
        10
    } else {
        // Scores are in [0, 1): the product is in [0, 10).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let tenth = (score * 10.0).floor().max(0.0) as usize;
        tenth.min(9)
    }
}

#[cfg(test)]
mod tests {
    use super::bucket;

    #[test]
    fn buckets() {
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(0.09), 0);
        assert_eq!(bucket(0.1), 1);
        assert_eq!(bucket(0.99), 9);
        assert_eq!(bucket(1.0), 10);
    }
}
