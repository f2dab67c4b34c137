//! The bounds a payload may not cross. Past one, detection reports
//! `input_limit_exceeded`; it never panics, overflows the stack or allocates
//! without bound.

use serde::{Deserialize, Serialize};

/// Bounds on what one payload can make toolgate read. The defaults are the
/// documented ones (docs/policy.md); a policy's `input_limits` changes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest payload (or whole stream) in bytes.
    pub max_payload_bytes: usize,
    /// Deepest nesting of arrays and objects: of the whole payload (of
    /// each event's data, in a stream), and inside one call's arguments
    /// (arguments sent as JSON text too, counted from their own root).
    /// Envelopes are additionally bounded by [`MAX_ENVELOPE_DEPTH`], and
    /// everything the parser reads by [`HARD_MAX_DEPTH`].
    pub max_depth: usize,
    /// Most tool calls in one payload.
    pub max_calls: usize,
    /// Largest arguments text of one call, in bytes.
    pub max_argument_bytes: usize,
}

/// The JSON parser's own nesting bound, which no policy can raise: deeper
/// input is `input_limit_exceeded` whatever `max_depth` says.
pub const HARD_MAX_DEPTH: usize = 127;

/// How deeply the objects and arrays of an envelope (messages, items,
/// blocks: everything but arguments and result content, which are read as
/// text) may nest. Real payloads nest a dozen levels; the bound keeps the
/// reader's stack small on every thread it runs on.
pub const MAX_ENVELOPE_DEPTH: usize = 64;

/// The most objects of an envelope (messages, content blocks, calls: any
/// object holding a key toolgate reads) one payload may hold. Each is read
/// into a view of about 1 KiB, so a payload of tiny objects (`[{"id":1},
/// ...]`) would otherwise take over a hundred times its size; this bounds
/// a thread's views to about 64 MiB. Calls are fewer still (`max_calls`),
/// and result content and arguments are read as text, so real payloads
/// stay far below it. What is counted is the views alive at once on the
/// thread: content read from the envelope's raw text counts while it is
/// read, so within a few hundred objects of the bound whether a payload
/// is refused can depend on what the reader holds at that moment (a
/// container read ahead, say); past it, it always is.
pub const MAX_ENVELOPE_OBJECTS: usize = 65_536;

/// How an error of the reader past [`MAX_ENVELOPE_OBJECTS`] begins.
pub(crate) const TOO_MANY_OBJECTS: &str = "the envelope holds more than";

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_payload_bytes: 8 * 1024 * 1024,
            max_depth: 128,
            max_calls: 256,
            max_argument_bytes: 1024 * 1024,
        }
    }
}

/// Where JSON text nests deeper than `limits.max_depth` (arrays and
/// objects; brackets inside strings do not count), as a message naming
/// `what` and the position (line and column), never a value; `None` when
/// it does not. Every payload is scanned: the parser skips what it keeps
/// as raw text (message content, unknown keys) without counting its
/// depth, and a gateway forwards those bytes. `max_depth` above what the
/// parser itself bounds counts as [`HARD_MAX_DEPTH`].
///
/// Text that is not JSON is scanned all the same: what it holds is the
/// parser's to refuse.
pub(crate) fn too_deep(
    text: &[u8],
    limits: &Limits,
    what: impl std::fmt::Display,
) -> Option<String> {
    let max = limits.max_depth.min(HARD_MAX_DEPTH);
    let at = deeper_than(text, max)?;
    let before = &text[..at];
    // Once, on a refused payload: no need for a faster count.
    #[allow(clippy::naive_bytecount)]
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |nl| nl + 1)
        + 1;
    Some(format!(
        "{what} nests deeper than {max} levels (line {line} column {column})"
    ))
}

/// The offset of the first `[` or `{` that opens level `max + 1`.
fn deeper_than(text: &[u8], max: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = text.get(at) {
        match byte {
            b'"' => {
                // Skip the string, escapes and all, to its closing quote.
                at += crate::detect::fast::string_end(&text[at + 1..], false).ok()?;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(at);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    None
}

/// How many problems of its payload a reading lists: a payload of many
/// small defects (a million events in no known shape) must not cost memory
/// in proportion. Past it, one last problem says the rest are not listed.
pub(crate) const MAX_LISTED: usize = 100;

/// List `violation` among a reading's problems, within [`MAX_LISTED`].
pub(crate) fn list(
    violations: &mut Vec<crate::verdict::Violation>,
    violation: crate::verdict::Violation,
) {
    match violations.len().cmp(&MAX_LISTED) {
        std::cmp::Ordering::Less => violations.push(violation),
        std::cmp::Ordering::Equal => violations.push(crate::verdict::Violation::payload(
            crate::verdict::ViolationCode::InputLimitExceeded,
            format!("the payload has more than {MAX_LISTED} problems; the rest are not listed"),
        )),
        std::cmp::Ordering::Greater => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{too_deep, Limits, HARD_MAX_DEPTH};

    fn at_most(max_depth: usize) -> Limits {
        Limits {
            max_depth,
            ..Limits::default()
        }
    }

    #[test]
    fn nesting_is_counted_in_brackets_outside_strings() {
        let text = br#"{"a":[{"b":"[[[{{{\"[["},[]]}"#;
        assert_eq!(too_deep(text, &at_most(3), "it"), None);
        assert_eq!(
            too_deep(text, &at_most(2), "it").as_deref(),
            Some("it nests deeper than 2 levels (line 1 column 7)")
        );
        let text = b"{\n \"a\": [\n  [1]]}";
        assert_eq!(
            too_deep(text, &at_most(2), "the payload").as_deref(),
            Some("the payload nests deeper than 2 levels (line 3 column 3)")
        );
        assert!(too_deep(b"1", &at_most(0), "it").is_none());
        assert!(too_deep(b"[]", &at_most(0), "it").is_some());
        // Text that ends inside a string or an escape is the parser's.
        assert!(too_deep(br#"["[[[\"#, &at_most(1), "it").is_none());
    }

    #[test]
    fn every_payload_is_bounded_even_past_the_parsers_own_limit() {
        // The parser skips raw text without counting its depth: the scan
        // bounds it, at most at the parser's own bound.
        let deep = "[".repeat(200);
        assert!(too_deep(deep.as_bytes(), &at_most(HARD_MAX_DEPTH - 1), "it").is_some());
        let message = too_deep(deep.as_bytes(), &Limits::default(), "it").unwrap();
        assert!(
            message.contains(&format!("deeper than {HARD_MAX_DEPTH} levels")),
            "{message}"
        );
        let fits = "[".repeat(HARD_MAX_DEPTH);
        assert!(too_deep(fits.as_bytes(), &Limits::default(), "it").is_none());
    }
}
