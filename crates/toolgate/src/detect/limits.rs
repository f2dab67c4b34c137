//! The bounds a payload may not cross. Past one, detection reports
//! `input_limit_exceeded`; it never panics, overflows the stack or allocates
//! without bound.

use serde::{Deserialize, Serialize};

/// Bounds on what one payload can make toolgate read. The defaults are the
/// contract's; a policy's `input_limits` changes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest payload (or whole stream) in bytes.
    pub max_payload_bytes: usize,
    /// Deepest nesting of arrays and objects inside one call's arguments.
    /// Envelopes are additionally bounded by [`HARD_MAX_DEPTH`].
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
