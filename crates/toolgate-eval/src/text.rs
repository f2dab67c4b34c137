//! The summary as people read it in a terminal or a CI log.

use std::fmt::Write as _;

use crate::baseline::{Comparison, Direction};
use crate::summary::Summary;

/// Most rows of the per-tool table (by invalid calls, then calls).
const TOOL_ROWS: usize = 25;
/// Most tools named past the table, by invalid share.
const RISKY_ROWS: usize = 5;

/// Render `summary`: totals, a table per tool, a table per violation code,
/// the worst traces and the bad lines.
#[must_use]
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    let s = summary;
    let _ = writeln!(out, "dataset      {}", s.dataset);
    let _ = writeln!(
        out,
        "traces       {}  ({} passed, {} failed)",
        s.traces, s.passed, s.failed
    );
    let _ = writeln!(out, "pass rate    {}", percent(s.pass_rate));
    let _ = writeln!(out, "mean score   {:.3}", s.mean_score);
    let _ = writeln!(
        out,
        "calls        {}  ({} invalid)",
        s.calls, s.invalid_calls
    );
    if s.bad_lines > 0 {
        let _ = writeln!(
            out,
            "bad lines    {}  (held no trace: each counts as a failed trace scoring 0)",
            s.bad_lines
        );
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = if s.seconds > 0.0 {
        s.traces as f64 / s.seconds
    } else {
        0.0
    };
    let _ = writeln!(out, "time         {:.2} s  ({rate:.0} traces/s)", s.seconds);

    if let Some(p) = &s.provenance {
        let policy = p.policy.as_ref().map_or("none".to_owned(), |p| {
            format!("{} (sha256 {})", p.path, p.sha256)
        });
        let _ = writeln!(out, "policy       {policy}");
        let _ = writeln!(
            out,
            "run          toolgate {} at {}",
            p.toolgate_version, p.started_at
        );
    }

    tools(&mut out, s);
    codes_and_lines(&mut out, s);
    if let Some(comparison) = &s.baseline {
        baseline(&mut out, comparison);
    }
    out
}

/// Most rows of each list of changes.
const CHANGE_ROWS: usize = 10;

/// What got better and worse against the baseline.
fn baseline(out: &mut String, c: &Comparison) {
    let _ = writeln!(out, "\nagainst the baseline {}", c.path);
    let points = |share: f64| format!("{:+.1} points", share * 100.0);
    let _ = writeln!(
        out,
        "  pass rate       {} -> {}  ({})",
        percent(c.pass_rate.before),
        percent(c.pass_rate.after),
        points(c.pass_rate.delta())
    );
    let _ = writeln!(
        out,
        "  mean score      {:.3} -> {:.3}  ({:+.3})",
        c.mean_score.before,
        c.mean_score.after,
        c.mean_score.delta()
    );
    let _ = writeln!(
        out,
        "  invalid calls   {} -> {}  ({})",
        percent(c.invalid_share.before),
        percent(c.invalid_share.after),
        points(c.invalid_share.delta())
    );
    for (direction, title) in [(Direction::Worse, "worse"), (Direction::Better, "better")] {
        let tools = c.tools_going(direction);
        let codes = c.codes_going(direction);
        if tools.is_empty() && codes.is_empty() {
            let _ = writeln!(out, "  {title}: nothing");
            continue;
        }
        let _ = writeln!(out, "  {title}:");
        for t in tools.iter().take(CHANGE_ROWS) {
            let _ = writeln!(
                out,
                "    tool {:<28} invalid {} -> {}  ({} of {} -> {} of {} calls)",
                clip(&t.tool, 28),
                percent(t.invalid_share.before),
                percent(t.invalid_share.after),
                t.invalid[0],
                t.calls[0],
                t.invalid[1],
                t.calls[1]
            );
        }
        for code in codes.iter().take(CHANGE_ROWS) {
            let _ = writeln!(
                out,
                "    code {:<28} in {} -> {} of traces  ({} -> {} violations)",
                code.code,
                percent(code.trace_share.before),
                percent(code.trace_share.after),
                code.count[0],
                code.count[1]
            );
        }
        let hidden =
            tools.len().saturating_sub(CHANGE_ROWS) + codes.len().saturating_sub(CHANGE_ROWS);
        if hidden > 0 {
            let _ = writeln!(out, "    ... {hidden} more (see --json)");
        }
    }
}

/// The per-tool table, worst first.
fn tools(out: &mut String, s: &Summary) {
    if !s.tools.is_empty() {
        let tools = s.tools_worst_first();
        let width = tools
            .iter()
            .take(TOOL_ROWS)
            .map(|(name, _)| name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 40);
        let _ = writeln!(
            out,
            "\n{:<width$}  {:>9}  {:>9}  {:>7}  top violation codes",
            "tool", "calls", "invalid", "share"
        );
        for (name, tool) in tools.iter().take(TOOL_ROWS) {
            let codes = tool.codes_by_count();
            let top: Vec<String> = codes
                .iter()
                .take(3)
                .map(|(code, n)| format!("{code} {n}"))
                .collect();
            let _ = writeln!(
                out,
                "{:<width$}  {:>9}  {:>9}  {:>7}  {}",
                clip(name, width),
                tool.calls,
                tool.invalid,
                percent(tool.invalid_share),
                top.join(", ")
            );
        }
        if tools.len() > TOOL_ROWS {
            let _ = writeln!(
                out,
                "... {} more tools (see --json)",
                tools.len() - TOOL_ROWS
            );
            // The riskiest tools the rows by count left out: a tool every
            // call of which was refused shows however rarely called.
            let shown: Vec<&String> = tools
                .iter()
                .take(TOOL_ROWS)
                .map(|(name, _)| *name)
                .collect();
            let risky: Vec<String> = s
                .tools_by_invalid_share()
                .into_iter()
                .filter(|(name, _)| !shown.contains(name))
                .take(RISKY_ROWS)
                .map(|(name, t)| {
                    format!(
                        "{} {} ({} of {})",
                        clip(name, 40),
                        percent(t.invalid_share),
                        t.invalid,
                        t.calls
                    )
                })
                .collect();
            if !risky.is_empty() {
                let _ = writeln!(
                    out,
                    "highest invalid share among them: {}",
                    risky.join(", ")
                );
            }
        }
    }
}

/// The per-code table, the worst traces and the lines without a trace.
fn codes_and_lines(out: &mut String, s: &Summary) {
    if !s.codes.is_empty() {
        let codes = s.codes_by_count();
        let _ = writeln!(
            out,
            "\n{:<24}  {:>9}  {:>9}",
            "violation code", "count", "traces"
        );
        for (code, stats) in codes {
            let _ = writeln!(out, "{code:<24}  {:>9}  {:>9}", stats.count, stats.traces);
        }
    }

    let worst: Vec<_> = s.worst.iter().filter(|row| !row.passed).take(10).collect();
    if !worst.is_empty() {
        let _ = writeln!(out, "\nworst traces");
        for row in worst {
            let _ = writeln!(
                out,
                "  {:<20} score {:.2}  {}",
                clip(&named(row.id.as_deref(), row.name.as_deref(), row.line), 20),
                row.score,
                clip(&row.reasoning, 100)
            );
        }
    }
    if !s.bad_line_samples.is_empty() {
        let _ = writeln!(out, "\nlines without a trace");
        for bad in s.bad_line_samples.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:<20} {}: {}",
                clip(&named(bad.id.as_deref(), bad.name.as_deref(), bad.line), 20),
                bad.kind,
                clip(&bad.message, 90)
            );
        }
        if s.bad_lines > 10 {
            let _ = writeln!(out, "  ... {} more", s.bad_lines - 10);
        }
    }
}

/// A trace as a terminal names it: its row's id or name with its line,
/// or its line alone.
fn named(id: Option<&str>, name: Option<&str>, line: u64) -> String {
    match id.or(name) {
        Some(label) => format!("{label} (line {line})"),
        None => format!("line {line}"),
    }
}

/// `0.873` as `87.3%`.
#[must_use]
pub fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// At most `width` characters, with an ellipsis when cut.
fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
