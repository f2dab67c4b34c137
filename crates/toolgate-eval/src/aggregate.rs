//! Folding verdicts into a [`Summary`] in constant memory. A worker reduces
//! each verdict of its batch to counters in a [`Tally`], where the verdict
//! was made; the fold adds the tallies to an [`Aggregate`] in line order.
//! The tables are bounded (tool names past [`MAX_TOOLS`] share one row), and
//! only the worst and the first failing traces are kept whole.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustc_hash::FxHashMap;
use toolgate::{Verdict, Violation, ViolationCode};

use crate::scenario::Label;
use crate::summary::{BadLine, Summary, TraceRow, BAD_LINES, FAILING, WORST};

/// Most distinct tool names with a row of their own; a dataset of invented
/// names cannot grow the summary without bound.
pub const MAX_TOOLS: usize = 1000;
/// The row that tools past [`MAX_TOOLS`] share.
pub const OTHER_TOOLS: &str = "(other tools)";

/// How many violation codes there are: the tally's tables are indexed by
/// code.
const CODES: usize = ViolationCode::ALL.len();
const _: () = assert!(CODES <= 64, "a trace's distinct codes are a 64-bit set");

/// The place of `code` in [`ViolationCode::ALL`] (declaration order).
fn slot(code: ViolationCode) -> usize {
    code as usize
}

/// One code's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CodeCount {
    count: u64,
    traces: u64,
}

/// One tool's calls within a tally.
#[derive(Debug, Clone)]
struct ToolTally {
    name: String,
    calls: u64,
    invalid: u64,
    codes: [u64; CODES],
}

/// What the verdicts of one batch of lines come to: counters, the batch's
/// tools in the order they first appear (so that the fold gives rows to
/// the same [`MAX_TOOLS`] names a line-by-line fold would), and the rows of
/// its failing traces that the summary may still keep. Its buffers are
/// reused from batch to batch.
#[derive(Debug)]
pub struct Tally {
    traces: u64,
    passed: u64,
    failed: u64,
    /// Scores are hundredths (verdicts round them to two decimals):
    /// summed as integers, the mean does not depend on the batches.
    hundredths: u64,
    calls: u64,
    invalid_calls: u64,
    histogram: [u64; 11],
    codes: [CodeCount; CODES],
    tools: Vec<ToolTally>,
    /// Where each tool name of `tools` is.
    names: FxHashMap<String, usize>,
    /// Failing traces whose rows were wanted, in line order.
    rows: Vec<TraceRow>,
    /// Failing traces whose rows the summary was already past wanting.
    rowless: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            traces: 0,
            passed: 0,
            failed: 0,
            hundredths: 0,
            calls: 0,
            invalid_calls: 0,
            histogram: [0; 11],
            codes: [CodeCount::default(); CODES],
            tools: Vec::new(),
            names: FxHashMap::default(),
            rows: Vec::new(),
            rowless: 0,
        }
    }
}

impl Tally {
    /// Add the verdict of the trace on `line` (named by its row's `label`,
    /// if any); `rows` says whether the summary may still keep its row if
    /// it fails. The verdict is dropped here, on the thread that made it;
    /// nothing of a passing trace is copied.
    pub fn verdict(&mut self, line: u64, verdict: Verdict, label: Option<&Label>, rows: &RowHints) {
        self.traces += 1;
        if verdict.passed {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        self.hundredths += hundredths(verdict.score);
        self.histogram[bucket(verdict.score)] += 1;
        self.calls += verdict.calls.len() as u64;
        for call in &verdict.calls {
            self.call(&call.name, &call.violations);
        }
        let mut distinct = 0u64;
        for violation in &verdict.violations {
            let at = slot(violation.code);
            self.codes[at].count += 1;
            distinct |= 1 << at;
        }
        for at in bits(distinct) {
            self.codes[at].traces += 1;
        }
        if verdict.passed {
            return;
        }
        if rows.wanted(verdict.score) {
            self.rows.push(TraceRow {
                line,
                id: label.and_then(|l| l.id.clone()),
                name: label.and_then(|l| l.name.clone()),
                score: verdict.score,
                passed: false,
                tools: verdict.actual_tools.into_iter().map(String::from).collect(),
                codes: bits(distinct)
                    .map(|at| ViolationCode::ALL[at].as_str().to_owned())
                    .collect(),
                reasoning: verdict.reasoning,
            });
        } else {
            self.rowless += 1;
        }
    }

    fn call(&mut self, name: &str, violations: &[Violation]) {
        let at = if let Some(&at) = self.names.get(name) {
            at
        } else {
            self.names.insert(name.to_owned(), self.tools.len());
            self.tools.push(ToolTally {
                name: name.to_owned(),
                calls: 0,
                invalid: 0,
                codes: [0; CODES],
            });
            self.tools.len() - 1
        };
        let tool = &mut self.tools[at];
        tool.calls += 1;
        if !violations.is_empty() {
            self.invalid_calls += 1;
            tool.invalid += 1;
            for violation in violations {
                tool.codes[slot(violation.code)] += 1;
            }
        }
    }

    /// Empty, keeping its buffers.
    fn clear(&mut self) {
        let mut tools = std::mem::take(&mut self.tools);
        let mut names = std::mem::take(&mut self.names);
        let mut rows = std::mem::take(&mut self.rows);
        tools.clear();
        names.clear();
        rows.clear();
        *self = Tally {
            tools,
            names,
            rows,
            ..Tally::default()
        };
    }
}

/// Which failing traces' rows the summary may still keep, as the fold last
/// saw it; workers read it to build no row the fold would drop. The fold
/// only ever fills its tables, so a stale reading asks for more rows than
/// needed, never fewer: a batch being checked comes after every batch the
/// fold has added.
#[derive(Debug)]
pub struct RowHints {
    /// The failing traces' table is full.
    failing_full: AtomicBool,
    /// The score a trace must be below to enter the worst traces (the
    /// bits of an `f64`; infinite while there is room).
    worst_below: AtomicU64,
}

impl Default for RowHints {
    fn default() -> Self {
        RowHints {
            failing_full: AtomicBool::new(false),
            worst_below: AtomicU64::new(f64::INFINITY.to_bits()),
        }
    }
}

impl RowHints {
    /// Whether a failing trace scoring `score` may still get a row.
    #[must_use]
    pub fn wanted(&self, score: f64) -> bool {
        // Relaxed is enough: a value is only ever read after the fold
        // stored it, and the fold stores a fuller state each time.
        !self.failing_full.load(Ordering::Relaxed)
            || score < f64::from_bits(self.worst_below.load(Ordering::Relaxed))
    }

    fn update(&self, summary: &Summary) {
        self.failing_full
            .store(summary.failing.len() >= FAILING, Ordering::Relaxed);
        let below = match summary.worst.last() {
            Some(last) if summary.worst.len() >= WORST => last.score,
            _ => f64::INFINITY,
        };
        self.worst_below.store(below.to_bits(), Ordering::Relaxed);
    }
}

/// A summary being built.
#[derive(Debug, Default)]
pub struct Aggregate {
    summary: Summary,
    hundredths: u64,
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
            hundredths: 0,
        }
    }

    /// Add the tally of the next lines (tallies come in line order) and
    /// empty it for reuse; `hints` learns which rows are still wanted.
    pub fn add(&mut self, tally: &mut Tally, hints: &RowHints) {
        let s = &mut self.summary;
        s.traces += tally.traces;
        s.passed += tally.passed;
        s.failed += tally.failed;
        self.hundredths += tally.hundredths;
        s.calls += tally.calls;
        s.invalid_calls += tally.invalid_calls;
        for (sum, n) in s.score_histogram.iter_mut().zip(tally.histogram) {
            *sum += n;
        }
        for (code, counted) in ViolationCode::ALL.iter().zip(tally.codes) {
            if counted.count > 0 {
                let stats = counter(&mut s.codes, code.as_str());
                stats.count += counted.count;
                stats.traces += counted.traces;
            }
        }
        for tool in tally.tools.drain(..) {
            self.tool(tool);
        }
        for row in tally.rows.drain(..) {
            self.failing(row);
        }
        self.summary.failing_omitted += tally.rowless;
        tally.clear();
        hints.update(&self.summary);
    }

    fn tool(&mut self, tally: ToolTally) {
        let tools = &mut self.summary.tools;
        let key = if tools.len() < MAX_TOOLS || tools.contains_key(&tally.name) {
            tally.name
        } else {
            OTHER_TOOLS.to_owned()
        };
        let tool = tools.entry(key).or_default();
        tool.calls += tally.calls;
        tool.invalid += tally.invalid;
        for (code, n) in ViolationCode::ALL.iter().zip(tally.codes) {
            if n > 0 {
                *counter(&mut tool.codes, code.as_str()) += n;
            }
        }
    }

    fn failing(&mut self, row: TraceRow) {
        let s = &mut self.summary;
        // Rows arrive in line order, so a later line never displaces an
        // equal score: the worst keep their first occurrences.
        let worse =
            s.worst.len() < WORST || s.worst.last().is_some_and(|last| row.score < last.score);
        if worse {
            let at = s.worst.partition_point(|kept| kept.score <= row.score);
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
        // A line that held no trace is a failed trace scoring 0.
        let scored = s.scored_lines();
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        if scored > 0 {
            s.pass_rate = s.passed as f64 / scored as f64;
            s.mean_score = self.hundredths as f64 / 100.0 / scored as f64;
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

/// The entry of `key`, allocating its name only the first time.
fn counter<'a, V: Default>(map: &'a mut BTreeMap<String, V>, key: &str) -> &'a mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// The set bits of `set`, lowest first.
fn bits(mut set: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if set == 0 {
            return None;
        }
        let at = set.trailing_zeros() as usize;
        set &= set - 1;
        Some(at)
    })
}

/// A score in hundredths.
fn hundredths(score: f64) -> u64 {
    // Scores are in [0, 1]: the product is in [0, 100].
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = (score * 100.0).round().max(0.0) as u64;
    n
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
    use toolgate::ViolationCode;

    use super::{bits, bucket, hundredths, slot};

    #[test]
    fn buckets() {
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(0.09), 0);
        assert_eq!(bucket(0.1), 1);
        assert_eq!(bucket(0.99), 9);
        assert_eq!(bucket(1.0), 10);
    }

    #[test]
    fn codes_are_indexed_in_declaration_order() {
        for (at, code) in ViolationCode::ALL.iter().enumerate() {
            assert_eq!(slot(*code), at, "{code}");
        }
        assert_eq!(bits(0b1010_0001).collect::<Vec<_>>(), [0, 5, 7]);
    }

    #[test]
    fn scores_sum_as_hundredths() {
        for n in 0..=100u32 {
            let score = f64::from(n) / 100.0;
            assert_eq!(hundredths(score), u64::from(n));
        }
    }
}
