//! What an eval run found, aggregated in constant memory: totals, a table
//! per tool and per violation code, the score distribution, the worst
//! traces and the failing traces (both bounded), and the lines that could
//! not be read. Serialized as the `--json` summary and embedded in the HTML
//! report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::baseline::Comparison;
use crate::scenario::Label;

/// The whole summary of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The dataset's name (its path, or `-`).
    pub dataset: String,
    /// How the run was made: toolgate's version, when, the command, the
    /// policy's and the dataset's digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Traces checked (lines that held a payload).
    pub traces: u64,
    pub passed: u64,
    /// Traces that failed (bad lines are counted apart, in `bad_lines`).
    pub failed: u64,
    /// `passed / (traces + bad_lines)`: a line that held no trace counts
    /// as a failed trace (0 when there are neither).
    pub pass_rate: f64,
    /// The mean score over `traces + bad_lines`, a bad line scoring 0.
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
    /// What got better and worse against a previous run (`--baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Comparison>,
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

    /// The tools with invalid calls, highest invalid share first (then most
    /// invalid calls, then name): a tool every call of which is invalid (a
    /// hallucinated or forbidden name) comes first however rarely called.
    #[must_use]
    pub fn tools_by_invalid_share(&self) -> Vec<(&String, &ToolStats)> {
        let mut tools: Vec<_> = self.tools.iter().filter(|(_, t)| t.invalid > 0).collect();
        tools.sort_by(|a, b| {
            // invalid / calls compared exactly, as a cross product.
            let share = |t: &ToolStats| (u128::from(t.invalid), u128::from(t.calls.max(1)));
            let ((ai, ac), (bi, bc)) = (share(a.1), share(b.1));
            (bi * ac)
                .cmp(&(ai * bc))
                .then(b.1.invalid.cmp(&a.1.invalid))
                .then(a.0.cmp(b.0))
        });
        tools
    }

    /// Lines scored for the gates: traces and lines that held none.
    #[must_use]
    pub fn scored_lines(&self) -> u64 {
        self.traces + self.bad_lines
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
    /// The row's `id`, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The row's `name`, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub score: f64,
    pub passed: bool,
    pub tools: Vec<String>,
    pub codes: Vec<String>,
    pub reasoning: String,
}

impl TraceRow {
    /// How the trace is named: its id, else its name, else its line.
    #[must_use]
    pub fn label(&self) -> String {
        Label::display(self.id.as_deref(), self.name.as_deref(), self.line)
    }
}

/// A line that could not be checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadLine {
    pub line: u64,
    /// The row's `id`, when the line was a row that had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The row's `name`, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `not_json`, `no_payload`, `bad_row` (a row key of the wrong type or
    /// given twice) or `bad_policy` (a per-line policy that does not load).
    pub kind: String,
    pub message: String,
}

impl BadLine {
    /// How the line is named: its row's id, else its name, else its line.
    #[must_use]
    pub fn label(&self) -> String {
        Label::display(self.id.as_deref(), self.name.as_deref(), self.line)
    }
}

/// How a run was made, recorded in its JSON summary and its report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub toolgate_version: String,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    /// The command line, as given.
    pub command_line: Vec<String>,
    /// The base policy file (none: no policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyDigest>,
    pub dataset: DatasetDigest,
}

/// A policy file and the SHA-256 of its bytes (the hash the gateway's audit
/// records as `policy_hash`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyDigest {
    pub path: String,
    pub sha256: String,
}

/// The dataset: its path (`-` for standard input), its size and a
/// fingerprint of its bytes, XXH3-128 in hex, computed as they are read
/// (fast enough to cost nothing beside the checks; it tells datasets apart,
/// it is not a cryptographic digest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetDigest {
    pub path: String,
    pub bytes: u64,
    pub xxh3_128: String,
}
