//! The charts: pass rate, score distribution, invalid calls per tool and
//! violations per code, each a card of inline SVG or CSS bars.

use std::fmt::{self, Write as _};

use super::format::{counted, int, ratio, short, Esc};
use crate::summary::{Summary, ToolStats};
use crate::text::percent;

/// Most rows of the per-tool bar chart.
const TOOL_BARS: usize = 12;
/// Most rows of the per-code bar chart.
const CODE_BARS: usize = 12;
fn card_open(out: &mut String, title: &str, note: &str) -> fmt::Result {
    write!(
        out,
        "<section class=\"card\">\n<h2>{title}</h2>\n<p class=\"caption\">{note}</p>\n"
    )
}

/// A donut of passed and failed traces, a legend, and a bar of valid and
/// invalid calls.
pub(super) fn pass_chart(out: &mut String, s: &Summary) -> fmt::Result {
    card_open(
        out,
        "Pass rate",
        "Traces that passed every check; a line that held no trace counts as failed.",
    )?;
    let radius = 48.0_f64;
    let circumference = 2.0 * std::f64::consts::PI * radius;
    let lines = s.scored_lines();
    let share = ratio(s.passed, lines).clamp(0.0, 1.0);
    let (ring, center, under) = if lines == 0 {
        ("ring-empty", "—".to_owned(), "no traces")
    } else {
        ("ring-fail", percent(s.pass_rate), "passed")
    };
    write!(
        out,
        "<div class=\"donut-row\">\n<svg class=\"donut\" viewBox=\"0 0 120 120\" role=\"img\" \
         aria-label=\"pass rate {center}\">\
         <circle class=\"{ring}\" cx=\"60\" cy=\"60\" r=\"{radius}\"/>\
         <circle class=\"ring-pass\" cx=\"60\" cy=\"60\" r=\"{radius}\" \
         stroke-dasharray=\"{:.2} {circumference:.2}\" transform=\"rotate(-90 60 60)\"/>\
         <text x=\"60\" y=\"62\" class=\"donut-value\">{center}</text>\
         <text x=\"60\" y=\"80\" class=\"donut-label\">{under}</text></svg>\n",
        share * circumference,
    )?;
    write!(
        out,
        "<table class=\"legend\">\
         <tr><td><span class=\"swatch pass\"></span>Passed</td><td class=\"num\">{}</td>\
         <td class=\"num muted\">{}</td></tr>\
         <tr><td><span class=\"swatch fail\"></span>Failed</td><td class=\"num\">{}</td>\
         <td class=\"num muted\">{}</td></tr>{}\
         <tr class=\"total\"><td>{}</td><td class=\"num\">{}</td><td></td></tr>\
         </table>\n</div>\n",
        int(s.passed),
        percent(ratio(s.passed, lines)),
        int(s.failed),
        percent(ratio(s.failed, lines)),
        if s.bad_lines > 0 {
            format!(
                "<tr><td><span class=\"swatch fail\"></span>No trace</td>\
                 <td class=\"num\">{}</td><td class=\"num muted\">{}</td></tr>",
                int(s.bad_lines),
                percent(ratio(s.bad_lines, lines))
            )
        } else {
            String::new()
        },
        if s.bad_lines > 0 { "Lines" } else { "Traces" },
        int(lines),
    )?;
    let invalid = ratio(s.invalid_calls, s.calls).clamp(0.0, 1.0);
    write!(
        out,
        "<div class=\"calls\"><div class=\"calls-label\">Tool calls: <b>{}</b> checked, \
         <b>{}</b> invalid ({})</div>\
         <div class=\"stack{}\" title=\"{} invalid of {} calls\">\
         <span class=\"fill fail\" style=\"width:{:.2}%\"></span></div></div>\n</section>\n",
        int(s.calls),
        int(s.invalid_calls),
        percent(invalid),
        if s.calls == 0 { " empty" } else { "" },
        int(s.invalid_calls),
        int(s.calls),
        invalid * 100.0,
    )
}

/// The 11 score buckets as a bar chart (CSS boxes, so the labels keep
/// their size on a narrow screen).
pub(super) fn histogram(out: &mut String, s: &Summary) -> fmt::Result {
    card_open(
        out,
        "Score distribution",
        "Traces per score bucket: [0, 0.1), [0.1, 0.2) … [0.9, 1), and exactly 1.",
    )?;
    let counts: Vec<u64> = (0..11)
        .map(|at| s.score_histogram.get(at).copied().unwrap_or(0))
        .collect();
    let total: u64 = counts.iter().sum();
    let max = counts.iter().copied().max().unwrap_or(0);
    if total == 0 {
        out.push_str("<p class=\"empty\">No traces were scored.</p>\n</section>\n");
        return Ok(());
    }
    let (step, top) = axis(max);
    out.push_str("<div class=\"hist\" role=\"img\" aria-label=\"score distribution\">\n<div class=\"hist-plot\">\n");
    let mut tick = 0;
    while tick <= top {
        writeln!(
            out,
            "<div class=\"hist-grid\" style=\"bottom:{:.2}%\"><span>{}</span></div>",
            100.0 * ratio(tick, top),
            if top < 10_000 { int(tick) } else { short(tick) }
        )?;
        tick += step;
    }
    for (at, &count) in counts.iter().enumerate() {
        let (_, range, color) = bucket(at);
        write!(
            out,
            "<div class=\"hist-col{}\" title=\"{range}: {} traces ({})\">\
             <div class=\"hist-bar{}\" style=\"height:{:.2}%;background:{color}\">",
            if at == 10 { " perfect" } else { "" },
            int(count),
            percent(ratio(count, total)),
            if count > 0 { " some" } else { "" },
            100.0 * ratio(count, top),
        )?;
        if count > 0 {
            write!(
                out,
                "<span class=\"hist-count\"><span class=\"long\">{}</span>\
                 <span class=\"short\">{}</span></span>",
                int(count),
                short(count)
            )?;
        }
        out.push_str("</div></div>\n");
    }
    out.push_str("</div>\n<div class=\"hist-x\">");
    for at in 0..11 {
        let (label, _, _) = bucket(at);
        write!(
            out,
            "<span{}>{label}</span>",
            if at == 10 { " class=\"perfect\"" } else { "" }
        )?;
    }
    out.push_str("</div>\n<div class=\"hist-axis\">score</div>\n</div>\n</section>\n");
    Ok(())
}

/// A bucket's axis label, its range, and its color (red to amber, then
/// green for a perfect score).
fn bucket(at: usize) -> (String, String, String) {
    if at >= 10 {
        return ("1".into(), "score 1".into(), "var(--pass)".into());
    }
    #[allow(clippy::cast_precision_loss)]
    let hue = 2.0 + 36.0 * at as f64 / 9.0;
    (
        if at == 0 {
            "0".into()
        } else {
            format!(".{at}")
        },
        format!("[{:.1}, {:.1})", tenth(at), tenth(at + 1)),
        format!("hsl({hue:.0},72%,{}%)", 46 + at / 2),
    )
}

#[allow(clippy::cast_precision_loss)]
fn tenth(at: usize) -> f64 {
    at as f64 / 10.0
}

/// A round step for about four gridlines up to at least `max`, and the top.
fn axis(max: u64) -> (u64, u64) {
    let rough = max.div_ceil(4).max(1);
    let mut magnitude = 1;
    while magnitude * 10 <= rough {
        magnitude *= 10;
    }
    let step = [1, 2, 5, 10]
        .iter()
        .map(|m| m * magnitude)
        .find(|&step| step >= rough)
        .unwrap_or(10 * magnitude);
    (step, max.div_ceil(step).max(1) * step)
}

/// Horizontal bars: invalid calls per tool, with the tool's calls.
pub(super) fn tool_bars(out: &mut String, s: &Summary) -> fmt::Result {
    card_open(
        out,
        "Invalid calls per tool",
        "Invalid calls (with at least one violation) / the tool's calls · invalid share.",
    )?;
    let mut tools = s.tools_worst_first();
    tools.retain(|(_, t)| t.invalid > 0);
    if tools.is_empty() {
        let text = if s.tools.is_empty() {
            "No tool calls were checked.".to_owned()
        } else {
            format!(
                "No invalid calls: all {} to {} were valid.",
                counted(s.calls, "call", "calls"),
                counted(s.tools.len() as u64, "tool", "tools")
            )
        };
        return write!(out, "<p class=\"empty\">{text}</p>\n</section>\n");
    }
    let max = tools[0].1.invalid;
    tool_chart(out, s, &tools, |name, tool| Bar {
        name,
        class: "fail",
        width: ratio(tool.invalid, max),
        value: int(tool.invalid),
        note: format!("/ {} · {}", int(tool.calls), percent(tool.invalid_share)),
    })
}

/// The bars of the first tools of `tools`, a note on the others, and the
/// end of the card.
fn tool_chart<'a>(
    out: &mut String,
    s: &Summary,
    tools: &[(&'a String, &'a ToolStats)],
    bar: impl Fn(&'a str, &'a ToolStats) -> Bar<'a>,
) -> fmt::Result {
    bar_chart(
        out,
        tools
            .iter()
            .take(TOOL_BARS)
            .map(|(name, tool)| bar(name, tool)),
    )?;
    more(
        out,
        tools.len().saturating_sub(TOOL_BARS),
        s.tools.len() - tools.len(),
        ("tool", "tools"),
    )?;
    out.push_str("</section>\n");
    Ok(())
}

/// One row of a bar chart: a name, a bar `width` (0 to 1 of the track),
/// the value in bold and a note beside it.
struct Bar<'a> {
    name: &'a str,
    class: &'a str,
    width: f64,
    value: String,
    note: String,
}

fn bar_chart<'a>(out: &mut String, bars: impl Iterator<Item = Bar<'a>>) -> fmt::Result {
    out.push_str("<div class=\"bars\">\n");
    for bar in bars {
        writeln!(
            out,
            "<div class=\"bar-name mono\" title=\"{name}\">{name}</div>\
             <div class=\"track\"><span class=\"fill {}\" style=\"width:{:.2}%\"></span></div>\
             <div class=\"bar-value\"><b>{}</b> <span class=\"muted\">{}</span></div>",
            bar.class,
            100.0 * bar.width.clamp(0.0, 1.0),
            bar.value,
            bar.note,
            name = Esc(bar.name),
        )?;
    }
    out.push_str("</div>\n");
    Ok(())
}

/// Horizontal bars: the tools with the highest share of invalid calls,
/// so that a tool every call of which is refused (a hallucinated or a
/// forbidden name) shows however rarely it was called.
pub(super) fn tool_share_bars(out: &mut String, s: &Summary) -> fmt::Result {
    card_open(
        out,
        "Invalid share per tool",
        "The riskiest tools: share of each tool's calls that were invalid · invalid / calls.",
    )?;
    let tools = s.tools_by_invalid_share();
    if tools.is_empty() {
        return write!(
            out,
            "<p class=\"empty\">{}</p>\n</section>\n",
            if s.tools.is_empty() {
                "No tool calls were checked."
            } else {
                "No tool had an invalid call."
            }
        );
    }
    tool_chart(out, s, &tools, |name, tool| Bar {
        name,
        class: "fail",
        width: tool.invalid_share,
        value: percent(tool.invalid_share),
        note: format!("· {} / {}", int(tool.invalid), int(tool.calls)),
    })
}

/// The code that repeats `forbidden`: each call of a forbidden tool is a
/// `forbidden` violation, and the trace's expectation `used_forbidden_tools`
/// again.
const ECHO: (&str, &str) = ("used_forbidden_tools", "forbidden");

/// Horizontal bars: violations per code, with the traces they touch. A
/// forbidden call counts once, as `forbidden`.
pub(super) fn code_bars(out: &mut String, s: &Summary) -> fmt::Result {
    card_open(
        out,
        "Violation codes",
        "Violations per code · traces with at least one.",
    )?;
    let mut codes = s.codes_by_count();
    let echoed = s.codes.contains_key(ECHO.1);
    if echoed {
        codes.retain(|(code, _)| code.as_str() != ECHO.0);
    }
    if codes.is_empty() {
        return write!(
            out,
            "<p class=\"empty\">No violations{}.</p>\n</section>\n",
            if s.traces > 0 { " in any trace" } else { "" }
        );
    }
    let max = codes[0].1.count;
    let bars = codes.iter().take(CODE_BARS).map(|(code, stats)| Bar {
        name: code,
        class: "code",
        width: ratio(stats.count, max),
        value: int(stats.count),
        note: format!("· {}", counted(stats.traces, "trace", "traces")),
    });
    bar_chart(out, bars)?;
    more(
        out,
        codes.len().saturating_sub(CODE_BARS),
        0,
        ("code", "codes"),
    )?;
    if echoed && s.codes.contains_key(ECHO.0) {
        out.push_str(
            "<p class=\"more\">A forbidden call counts once, as <code>forbidden</code>; \
             its trace's <code>used_forbidden_tools</code> is in the table below.</p>\n",
        );
    }
    out.push_str("</section>\n");
    Ok(())
}

/// The note under a bar chart about the rows it leaves out.
fn more(out: &mut String, hidden: usize, clean: usize, what: (&str, &str)) -> fmt::Result {
    let mut parts = Vec::new();
    if hidden > 0 {
        parts.push(format!(
            "{} more in the table below",
            counted(hidden as u64, what.0, what.1)
        ));
    }
    if clean > 0 {
        parts.push(format!(
            "{} with no invalid calls",
            counted(clean as u64, what.0, what.1)
        ));
    }
    if parts.is_empty() {
        return Ok(());
    }
    writeln!(out, "<p class=\"more\">{}.</p>", parts.join("; "))
}

/// How the run was made: toolgate's version, when, the command, the
/// policy's SHA-256 and the dataset's fingerprint.
pub(super) fn provenance(out: &mut String, s: &Summary) -> fmt::Result {
    card_open(
        out,
        "About this run",
        "How this report was made, to reproduce it.",
    )?;
    let Some(p) = &s.provenance else {
        return write!(
            out,
            "<p class=\"empty\">This summary does not record how it was made.</p>\n</section>\n"
        );
    };
    out.push_str("<dl class=\"facts\">\n");
    let fact = |out: &mut String, term: &str, value: &str, mono: bool| {
        writeln!(
            out,
            "<dt>{term}</dt><dd{}>{}</dd>",
            if mono { " class=\"mono\"" } else { "" },
            Esc(value)
        )
    };
    fact(out, "toolgate", &p.toolgate_version, false)?;
    fact(out, "Started", &p.started_at, false)?;
    fact(out, "Command", &p.command_line.join(" "), true)?;
    match &p.policy {
        Some(policy) => {
            fact(out, "Policy", &policy.path, true)?;
            fact(out, "Policy SHA-256", &policy.sha256, true)?;
        }
        None => fact(
            out,
            "Policy",
            "none (every call passes the name checks)",
            false,
        )?,
    }
    fact(out, "Dataset", &p.dataset.path, true)?;
    fact(out, "Dataset bytes", &int(p.dataset.bytes), false)?;
    fact(out, "Dataset XXH3-128", &p.dataset.xxh3_128, true)?;
    out.push_str("</dl>\n</section>\n");
    Ok(())
}
