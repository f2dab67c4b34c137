//! Text as the page writes it: escaped, numbers grouped and shortened,
//! durations.

use std::fmt::{self, Display};

use crate::summary::Summary;

/// Text escaped for HTML element content and quoted attribute values.
pub(super) struct Esc<'a>(pub(super) &'a str);

impl Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..at])?;
            f.write_str(match rest.as_bytes()[at] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[at + 1..];
        }
        f.write_str(rest)
    }
}

/// The dataset as the page names it (`-` is standard input).
pub(super) fn dataset_name(s: &Summary) -> &str {
    match s.dataset.as_str() {
        "-" => "standard input",
        "" => "dataset",
        name => name,
    }
}

/// `1 trace`, `1,200 traces`.
pub(super) fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", int(n), if n == 1 { one } else { many })
}

/// `a / b`, 0 when `b` is 0.
#[allow(clippy::cast_precision_loss)] // counts far below 2^52
pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// `1234567` as `1,234,567`.
pub(super) fn int(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (at, c) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count short enough for a narrow chart label: `950`, `1.6k`, `12k`,
/// `4.5M`.
#[allow(clippy::cast_precision_loss)]
pub(super) fn short(n: u64) -> String {
    let trim = |text: String| text.replace(".0", "");
    match n {
        0..1000 => n.to_string(),
        1000..10_000 => trim(format!("{:.1}k", n as f64 / 1e3)),
        10_000..1_000_000 => format!("{:.0}k", n as f64 / 1e3),
        _ => trim(format!("{:.1}M", n as f64 / 1e6)),
    }
}

/// `0.0042` as `4 ms`, `12.5` as `12.50 s`, `200` as `3 min 20 s`.
pub(super) fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds <= 0.0 {
        "—".to_owned()
    } else if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else if seconds < 60.0 {
        format!("{seconds:.2} s")
    } else {
        let whole = seconds.round_u64();
        format!("{} min {} s", whole / 60, whole % 60)
    }
}

pub(super) trait RoundU64 {
    fn round_u64(self) -> u64;
}

impl RoundU64 for f64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn round_u64(self) -> u64 {
        if self.is_finite() && self > 0.0 {
            self.round() as u64
        } else {
            0
        }
    }
}
