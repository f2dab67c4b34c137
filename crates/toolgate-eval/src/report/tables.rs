//! The tables: tools, violation codes, worst and failing traces, bad
//! lines.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use super::format::{counted, int, ratio, Esc};
use crate::baseline::{Comparison, Direction};
use crate::summary::{Summary, TraceRow};
use crate::text::percent;

/// Most rows of the per-tool table (by invalid calls, then calls).
const TOOL_ROWS: usize = 200;
/// Most codes named per tool in the per-tool table.
const TOP_CODES: usize = 3;

fn section_open(out: &mut String, id: &str, title: &str, count: Option<u64>) -> fmt::Result {
    write!(out, "<section class=\"block\" id=\"{id}\">\n<h2>{title}")?;
    if let Some(count) = count {
        write!(out, " <span class=\"count\">{}</span>", int(count))?;
    }
    out.push_str("</h2>\n");
    Ok(())
}

pub(super) fn tool_table(out: &mut String, s: &Summary) -> fmt::Result {
    section_open(out, "tools", "Tools", Some(s.tools.len() as u64))?;
    if s.tools.is_empty() {
        out.push_str("<p class=\"empty\">No tool calls were checked.</p>\n</section>\n");
        return Ok(());
    }
    let tools = s.tools_worst_first();
    out.push_str(
        "<div class=\"scroll\"><table class=\"wide\">\n<thead><tr><th>Tool</th><th class=\"num\">Calls</th>\
         <th class=\"num\">Invalid</th><th class=\"num\">Share</th><th>Top violation codes</th>\
         </tr></thead>\n<tbody>\n",
    );
    for (name, tool) in tools.iter().take(TOOL_ROWS) {
        let codes = tool.codes_by_count();
        write!(
            out,
            "<tr><td class=\"mono name\"><div>{}</div></td><td class=\"num\">{}</td>\
             <td class=\"num{}\">{}</td><td class=\"num\">{}</td><td class=\"top\">",
            Esc(name),
            int(tool.calls),
            if tool.invalid > 0 { " bad" } else { " muted" },
            int(tool.invalid),
            share_cell(tool.invalid_share),
        )?;
        for (code, n) in codes.iter().take(TOP_CODES) {
            write!(
                out,
                "<span class=\"chip\">{} <b>{}</b></span> ",
                Esc(code),
                int(**n)
            )?;
        }
        if codes.len() > TOP_CODES {
            write!(
                out,
                "<span class=\"muted small nowrap\">+{} more</span>",
                codes.len() - TOP_CODES
            )?;
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if tools.len() > TOOL_ROWS {
        writeln!(
            out,
            "<p class=\"more\">{} more tools with fewer invalid calls are in the embedded JSON.</p>",
            int((tools.len() - TOOL_ROWS) as u64)
        )?;
    }
    out.push_str("</section>\n");
    Ok(())
}

/// A share with a small bar behind it.
fn share_cell(share: f64) -> String {
    let width = (share * 100.0).clamp(0.0, 100.0);
    format!(
        "<span class=\"share\"><span class=\"mini\"><span style=\"width:{width:.1}%\"></span>\
         </span>{}</span>",
        percent(share)
    )
}

pub(super) fn code_table(out: &mut String, s: &Summary) -> fmt::Result {
    section_open(out, "codes", "Violation codes", Some(s.codes.len() as u64))?;
    if s.codes.is_empty() {
        out.push_str("<p class=\"empty\">No violations.</p>\n</section>\n");
        return Ok(());
    }
    out.push_str(
        "<div class=\"scroll fit\"><table class=\"narrow\">\n<thead><tr><th>Code</th>\
         <th class=\"num\">Violations</th><th class=\"num\">Traces</th>\
         <th class=\"num\">Of all traces</th></tr></thead>\n<tbody>\n",
    );
    for (code, stats) in s.codes_by_count() {
        writeln!(
            out,
            "<tr><td class=\"mono name\"><div>{}</div></td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td></tr>",
            Esc(code),
            int(stats.count),
            int(stats.traces),
            share_cell(ratio(stats.traces, s.traces)),
        )?;
    }
    out.push_str("</tbody></table></div>\n</section>\n");
    Ok(())
}

pub(super) fn worst(out: &mut String, s: &Summary) -> fmt::Result {
    section_open(out, "worst", "Worst traces", Some(s.worst.len() as u64))?;
    if s.worst.is_empty() {
        out.push_str("<p class=\"empty\">No failing traces.</p>\n</section>\n");
        return Ok(());
    }
    out.push_str(
        "<p class=\"caption\">The lowest scores; ties keep the first line.</p>\n\
         <div class=\"scroll\"><table class=\"traces\">\n",
    );
    trace_head(out);
    for row in &s.worst {
        trace_row(out, row)?;
    }
    out.push_str("</tbody></table></div>\n</section>\n");
    Ok(())
}

pub(super) fn failing(out: &mut String, s: &Summary) -> fmt::Result {
    let total = s.failing.len() as u64 + s.failing_omitted;
    section_open(out, "failing", "Failing traces", Some(total))?;
    if s.failing.is_empty() {
        out.push_str("<p class=\"empty\">No failing traces.</p>\n</section>\n");
        return Ok(());
    }
    if s.failing_omitted > 0 {
        writeln!(
            out,
            "<p class=\"notice\">Showing the first {} failing traces; {} more are not in this \
             report. Write every verdict with <code>--out</code>.</p>",
            int(s.failing.len() as u64),
            int(s.failing_omitted)
        )?;
    }
    writeln!(
        out,
        "<div class=\"filter\" hidden><input id=\"filter\" type=\"search\" \
         placeholder=\"Filter by line, tool, code or reasoning…\" \
         aria-label=\"Filter failing traces\" autocomplete=\"off\" spellcheck=\"false\">\
         <span id=\"filter-count\" class=\"muted\">{}</span></div>",
        counted(s.failing.len() as u64, "trace", "traces")
    )?;
    out.push_str("<div class=\"scroll\"><table class=\"traces\" id=\"failing-table\">\n");
    trace_head(out);
    for row in &s.failing {
        trace_row(out, row)?;
    }
    out.push_str(
        "<tr class=\"no-match\" hidden><td colspan=\"5\">No failing trace matches.</td></tr>\n\
         </tbody></table></div>\n</section>\n",
    );
    Ok(())
}

fn trace_head(out: &mut String) {
    out.push_str(
        "<thead><tr><th class=\"line\">Trace</th><th class=\"num\">Score</th><th>Tools</th>\
         <th>Codes</th><th>Reasoning</th></tr></thead>\n<tbody>\n",
    );
}

fn trace_row(out: &mut String, row: &TraceRow) -> fmt::Result {
    write!(
        out,
        "<tr><td class=\"line\">{}</td><td class=\"num score {}\">{:.2}</td><td class=\"mono tools\">",
        TraceCell(row.id.as_deref(), row.name.as_deref(), row.line),
        if row.passed { "pass" } else { "fail" },
        row.score
    )?;
    // A trace may call one tool many times: each name once, with a count.
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for tool in &row.tools {
        match seen.iter_mut().find(|(name, _)| *name == tool.as_str()) {
            Some((_, n)) => *n += 1,
            None => seen.push((tool, 1)),
        }
    }
    if seen.is_empty() {
        out.push_str("<span class=\"muted\">none</span>");
    }
    for (name, n) in &seen {
        write!(out, "<div>{}", Esc(name))?;
        if *n > 1 {
            write!(out, " <span class=\"muted\">×{n}</span>")?;
        }
        out.push_str("</div>");
    }
    out.push_str("</td><td>");
    for code in &row.codes {
        write!(out, "<span class=\"chip\">{}</span> ", Esc(code))?;
    }
    writeln!(
        out,
        "</td><td class=\"reasoning\">{}</td></tr>",
        Esc(&row.reasoning)
    )
}

pub(super) fn bad_lines(out: &mut String, s: &Summary) -> fmt::Result {
    section_open(out, "bad-lines", "Bad lines", Some(s.bad_lines))?;
    if s.bad_lines == 0 {
        out.push_str("<p class=\"empty\">Every line held a trace.</p>\n</section>\n");
        return Ok(());
    }
    out.push_str(
        "<p class=\"caption\">Lines that are not JSON, hold no payload, or carry a per-line \
         policy or row keys that do not load. Each counts as a failed trace scoring 0 in the \
         pass rate, the mean score and the gates.</p>\n",
    );
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    for bad in &s.bad_line_samples {
        *kinds.entry(bad.kind.as_str()).or_default() += 1;
    }
    if !s.bad_line_samples.is_empty() {
        out.push_str(
            "<div class=\"scroll\"><table>\n<thead><tr><th class=\"line\">Line</th><th class=\"kind\">Kind</th>\
             <th>Message</th></tr></thead>\n<tbody>\n",
        );
        for bad in &s.bad_line_samples {
            writeln!(
                out,
                "<tr><td class=\"line\">{}</td><td class=\"kind\"><span class=\"chip warn\">{}</span></td>\
                 <td class=\"reasoning\">{}</td></tr>",
                TraceCell(bad.id.as_deref(), bad.name.as_deref(), bad.line),
                Esc(&bad.kind),
                Esc(&bad.message)
            )?;
        }
        out.push_str("</tbody></table></div>\n");
    }
    let shown = s.bad_line_samples.len() as u64;
    if s.bad_lines > shown {
        writeln!(
            out,
            "<p class=\"more\">{} more bad lines are not listed.</p>",
            int(s.bad_lines - shown)
        )?;
    }
    out.push_str("</section>\n");
    Ok(())
}

/// A trace's cell: its line, and its row's id and name under it.
struct TraceCell<'a>(Option<&'a str>, Option<&'a str>, u64);

impl std::fmt::Display for TraceCell<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<span class=\"num\">{}</span>", self.2)?;
        let names: Vec<&str> = [self.0, self.1].into_iter().flatten().collect();
        if !names.is_empty() {
            write!(
                f,
                "<div class=\"trace-name\">{}</div>",
                Esc(&names.join(" · "))
            )?;
        }
        Ok(())
    }
}

/// Most rows of each table of changes.
const CHANGE_ROWS: usize = 50;

/// What got better and worse against the baseline: the totals, then the
/// tools and the codes that changed, worse first.
pub(super) fn baseline(out: &mut String, c: &Comparison) -> fmt::Result {
    section_open(out, "baseline", "Against the baseline", None)?;
    let started = c
        .started_at
        .as_deref()
        .map(|at| format!(", run at {}", Esc(at)))
        .unwrap_or_default();
    writeln!(
        out,
        "<p class=\"caption\">Compared with <code>{}</code>{started}. Tools are compared by \
         their share of invalid calls, codes by the share of traces they touch.</p>",
        Esc(&c.path)
    )?;
    out.push_str(
        "<div class=\"scroll fit\"><table class=\"narrow\">\n<thead><tr><th></th>\
         <th class=\"num\">Baseline</th><th class=\"num\">This run</th><th class=\"num\">Change</th>\
         </tr></thead>\n<tbody>\n",
    );
    for (what, change, higher_is_better) in [
        ("Pass rate", c.pass_rate, true),
        ("Mean score", c.mean_score, true),
        ("Invalid calls", c.invalid_share, false),
    ] {
        let percent_like = what != "Mean score";
        let show = |v: f64| {
            if percent_like {
                percent(v)
            } else {
                format!("{v:.3}")
            }
        };
        let delta = change.delta();
        let class = if delta.abs() < 1e-12 {
            "muted"
        } else if (delta > 0.0) == higher_is_better {
            "better"
        } else {
            "worse"
        };
        let shown = if percent_like {
            format!("{:+.1} pts", delta * 100.0)
        } else {
            format!("{delta:+.3}")
        };
        writeln!(
            out,
            "<tr><td>{what}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num {class}\">{shown}</td></tr>",
            show(change.before),
            show(change.after),
        )?;
    }
    out.push_str("</tbody></table></div>\n");
    for (direction, title) in [(Direction::Worse, "Worse"), (Direction::Better, "Better")] {
        changes(out, c, direction, title)?;
    }
    out.push_str("</section>\n");
    Ok(())
}

/// One direction's tools and codes.
fn changes(out: &mut String, c: &Comparison, direction: Direction, title: &str) -> fmt::Result {
    let tools = c.tools_going(direction);
    let codes = c.codes_going(direction);
    let class = match direction {
        Direction::Worse => "worse",
        Direction::Better => "better",
    };
    writeln!(
        out,
        "<h3 class=\"{class}\">{title} <span class=\"count\">{}</span></h3>",
        int((tools.len() + codes.len()) as u64)
    )?;
    if tools.is_empty() && codes.is_empty() {
        return writeln!(out, "<p class=\"empty\">Nothing.</p>");
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"changes\">\n<thead><tr><th>Tool or code</th>\
         <th class=\"num\">Baseline</th><th class=\"num\">This run</th><th class=\"num\">Change</th>\
         </tr></thead>\n<tbody>\n",
    );
    for t in tools.iter().take(CHANGE_ROWS) {
        writeln!(
            out,
            "<tr><td class=\"mono name\"><div>{}</div><span class=\"muted small\">tool, invalid \
             share</span></td><td class=\"num\">{}<div class=\"muted small\">{} / {} calls</div></td>\
             <td class=\"num\">{}<div class=\"muted small\">{} / {} calls</div></td>\
             <td class=\"num {class}\">{:+.1} pts</td></tr>",
            Esc(&t.tool),
            percent(t.invalid_share.before),
            int(t.invalid[0]),
            int(t.calls[0]),
            percent(t.invalid_share.after),
            int(t.invalid[1]),
            int(t.calls[1]),
            t.invalid_share.delta() * 100.0,
        )?;
    }
    for code in codes.iter().take(CHANGE_ROWS) {
        writeln!(
            out,
            "<tr><td class=\"mono name\"><div>{}</div><span class=\"muted small\">code, share \
             of traces</span></td><td class=\"num\">{}<div class=\"muted small\">{}</div></td>\
             <td class=\"num\">{}<div class=\"muted small\">{}</div></td>\
             <td class=\"num {class}\">{:+.1} pts</td></tr>",
            Esc(&code.code),
            percent(code.trace_share.before),
            counted(code.count[0], "violation", "violations"),
            percent(code.trace_share.after),
            counted(code.count[1], "violation", "violations"),
            code.trace_share.delta() * 100.0,
        )?;
    }
    out.push_str("</tbody></table></div>\n");
    let hidden = tools.len().saturating_sub(CHANGE_ROWS) + codes.len().saturating_sub(CHANGE_ROWS);
    if hidden > 0 {
        writeln!(
            out,
            "<p class=\"more\">{} more are in the embedded JSON.</p>",
            int(hidden as u64)
        )?;
    }
    Ok(())
}
