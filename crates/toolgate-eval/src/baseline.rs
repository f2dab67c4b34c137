//! A run against a previous one (`--baseline previous.json`): the totals
//! before and after, and what got better and worse by tool and by
//! violation code. Tools are compared by their invalid share and codes by
//! the share of traces they touch, so that datasets of different sizes
//! compare fairly; the counts are kept beside the shares.

use serde::{Deserialize, Serialize};

use crate::summary::Summary;

/// What changed from the baseline to this run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline file, as given.
    pub path: String,
    /// The baseline run's own dataset name and start time, when it
    /// recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    pub pass_rate: Change,
    pub mean_score: Change,
    /// Invalid calls / calls.
    pub invalid_share: Change,
    /// Every tool of either run whose invalid share changed by 0.05
    /// percentage points or more, worst change first.
    pub tools: Vec<ToolChange>,
    /// Every violation code of either run whose share of traces changed by
    /// 0.05 percentage points or more, worst change first.
    pub codes: Vec<CodeChange>,
}

/// A figure before and after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub before: f64,
    pub after: f64,
}

impl Change {
    #[must_use]
    pub fn delta(&self) -> f64 {
        self.after - self.before
    }
}

/// Whether a change is for the better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Better,
    Worse,
}

/// One tool before and after (a side is zero when the tool was not called).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChange {
    pub tool: String,
    pub direction: Direction,
    pub calls: [u64; 2],
    pub invalid: [u64; 2],
    /// Invalid share before and after.
    pub invalid_share: Change,
}

/// One violation code before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeChange {
    pub code: String,
    pub direction: Direction,
    /// Violations with the code, before and after.
    pub count: [u64; 2],
    /// Traces with the code, before and after.
    pub traces: [u64; 2],
    /// Those traces' share of all scored lines, before and after.
    pub trace_share: Change,
}

impl Comparison {
    /// The changes for the better, then for the worse.
    #[must_use]
    pub fn tools_going(&self, direction: Direction) -> Vec<&ToolChange> {
        self.tools
            .iter()
            .filter(|t| t.direction == direction)
            .collect()
    }

    #[must_use]
    pub fn codes_going(&self, direction: Direction) -> Vec<&CodeChange> {
        self.codes
            .iter()
            .filter(|c| c.direction == direction)
            .collect()
    }
}

/// Compare `after` with `before`, read from `path`.
#[must_use]
pub fn compare(path: &str, before: &Summary, after: &Summary) -> Comparison {
    let mut tools = Vec::new();
    let names: std::collections::BTreeSet<&String> =
        before.tools.keys().chain(after.tools.keys()).collect();
    for name in names {
        let (b, a) = (before.tools.get(name), after.tools.get(name));
        let side =
            |t: Option<&crate::summary::ToolStats>| t.map_or((0, 0), |t| (t.calls, t.invalid));
        let ((bc, bi), (ac, ai)) = (side(b), side(a));
        let share = Change {
            before: ratio(bi, bc),
            after: ratio(ai, ac),
        };
        let Some(direction) = direction_of(share.delta()) else {
            continue;
        };
        tools.push(ToolChange {
            tool: name.clone(),
            direction,
            calls: [bc, ac],
            invalid: [bi, ai],
            invalid_share: share,
        });
    }
    tools.sort_by(|x, y| {
        y.invalid_share
            .delta()
            .total_cmp(&x.invalid_share.delta())
            .then(x.tool.cmp(&y.tool))
    });

    let mut codes = Vec::new();
    let names: std::collections::BTreeSet<&String> =
        before.codes.keys().chain(after.codes.keys()).collect();
    for code in names {
        let side = |s: &Summary| s.codes.get(code).map_or((0, 0), |c| (c.count, c.traces));
        let ((bn, bt), (an, at)) = (side(before), side(after));
        let share = Change {
            before: ratio(bt, before.scored_lines()),
            after: ratio(at, after.scored_lines()),
        };
        // Same share of traces, but more or fewer violations: still a change.
        let delta = if share.delta().abs() < NOISE {
            ratio(an, after.scored_lines()) - ratio(bn, before.scored_lines())
        } else {
            share.delta()
        };
        let Some(direction) = direction_of(delta) else {
            continue;
        };
        codes.push(CodeChange {
            code: code.clone(),
            direction,
            count: [bn, an],
            traces: [bt, at],
            trace_share: share,
        });
    }
    codes.sort_by(|x, y| {
        y.trace_share
            .delta()
            .total_cmp(&x.trace_share.delta())
            .then(y.count[1].cmp(&x.count[1]))
            .then(x.code.cmp(&y.code))
    });

    Comparison {
        path: path.to_owned(),
        dataset: Some(before.dataset.clone()).filter(|d| !d.is_empty()),
        started_at: before.provenance.as_ref().map(|p| p.started_at.clone()),
        pass_rate: Change {
            before: before.pass_rate,
            after: after.pass_rate,
        },
        mean_score: Change {
            before: before.mean_score,
            after: after.mean_score,
        },
        invalid_share: Change {
            before: ratio(before.invalid_calls, before.calls),
            after: ratio(after.invalid_calls, after.calls),
        },
        tools,
        codes,
    }
}

/// Changes of a share smaller than this (0.05 percentage points) are
/// left out: they read as 0.0 and come from a dataset a few lines longer.
const NOISE: f64 = 5e-4;

/// `Worse` when `delta` raised a share of invalid calls or of traces with
/// a code; `None` for a change under [`NOISE`].
fn direction_of(delta: f64) -> Option<Direction> {
    if delta.abs() < NOISE {
        None
    } else if delta > 0.0 {
        Some(Direction::Worse)
    } else {
        Some(Direction::Better)
    }
}

#[allow(clippy::cast_precision_loss)] // counts far below 2^52
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
