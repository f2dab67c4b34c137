//! What an eval run found, aggregated in constant memory: totals, a table
//! per tool and per violation code, the score distribution, the worst
//! traces and the failing traces (both bounded), and the lines that could
//! not be read. Serialized as the `--json` summary and embedded in the HTML
//! report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The whole summary of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The dataset's name (its path, or `-`).
    pub dataset: String,
    /// Traces checked (lines that held a payload).
    pub traces: u64,
    pub passed: u64,
    pub failed: u64,
    /// `passed / traces` (0 when there are no traces).
    pub pass_rate: f64,
    /// The mean of the traces' scores.
    pub mean_score: f64,
    /// Tool calls checked, over all traces.
    pub calls: u64,
    /// Calls with at least one violation.
    pub invalid_calls: u64,
    /// Per tool name: its calls and what went wrong with them.
    pub tools: BTreeMap<String, ToolStats>,
    /// Per violation code: how often, and in how many traces.
    pub codes: BTreeMap<String, CodeStats>,
    /// Traces per score bucket: `[0, 0.1)`, `[0.1, 0.2)`, ... `[0.9, 1.0)`,
    /// and exactly `1.0` last (11 buckets).
    pub score_histogram: Vec<u64>,
    /// The lowest-scoring traces (ties: first line first), at most
    /// [`WORST`].
    pub worst: Vec<TraceRow>,
    /// Failing traces in line order, at most [`FAILING`]; `failing_omitted`
    /// counts the rest.
    pub failing: Vec<TraceRow>,
    pub failing_omitted: u64,
    /// Lines that are not JSON or hold no payload, at most [`BAD_LINES`];
    /// `bad_lines` counts them all.
    pub bad_lines: u64,
    pub bad_line_samples: Vec<BadLine>,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
}

impl Summary {
    /// The tools, most invalid calls first (then most calls, then name).
    #[must_use]
    pub fn tools_worst_first(&self) -> Vec<(&String, &ToolStats)> {
        let mut tools: Vec<_> = self.tools.iter().collect();
        tools.sort_by(|a, b| {
            b.1.invalid
                .cmp(&a.1.invalid)
                .then(b.1.calls.cmp(&a.1.calls))
                .then(a.0.cmp(b.0))
        });
        tools
    }

    /// The violation codes, most frequent first (then in most traces, then
    /// by name).
    #[must_use]
    pub fn codes_by_count(&self) -> Vec<(&String, &CodeStats)> {
        let mut codes: Vec<_> = self.codes.iter().collect();
        codes.sort_by(|a, b| {
            b.1.count
                .cmp(&a.1.count)
                .then(b.1.traces.cmp(&a.1.traces))
                .then(a.0.cmp(b.0))
        });
        codes
    }
}

impl ToolStats {
    /// This tool's violation codes, most frequent first (then by name).
    #[must_use]
    pub fn codes_by_count(&self) -> Vec<(&String, &u64)> {
        let mut codes: Vec<_> = self.codes.iter().collect();
        codes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        codes
    }
}

/// How many worst traces a summary keeps.
pub const WORST: usize = 20;
/// How many failing traces a summary keeps (for the report's table).
pub const FAILING: usize = 2000;
/// How many bad lines a summary describes.
pub const BAD_LINES: usize = 100;

/// One tool's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolStats {
    pub calls: u64,
    /// Calls of this tool with at least one violation.
    pub invalid: u64,
    /// `invalid / calls`.
    pub invalid_share: f64,
    /// Violation codes on this tool's calls, by count.
    pub codes: BTreeMap<String, u64>,
}

/// One violation code's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CodeStats {
    /// Violations with this code.
    pub count: u64,
    /// Traces with at least one.
    pub traces: u64,
}

/// One trace, as the tables show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    /// The 1-based line number (or array index + 1).
    pub line: u64,
    pub score: f64,
    pub passed: bool,
    pub tools: Vec<String>,
    pub codes: Vec<String>,
    pub reasoning: String,
}

/// A line that could not be checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadLine {
    pub line: u64,
    /// `not_json`, `no_payload` or `bad_policy` (a per-line policy that does
    /// not load).
    pub kind: String,
    pub message: String,
}
