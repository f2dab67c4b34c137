//! Streams: assemble tool calls from SSE events and JSON event sequences.
//! (Placeholder interface; the assembler is being written.)

use crate::detect::limits::Limits;
use crate::detect::Detection;
use crate::model::Framing;

/// What the assembler reports as a stream goes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// One whole event of the stream, its bytes exactly as received, and the
    /// calls whose fragments it carries (empty: nothing to hold back).
    Frame { raw: Vec<u8>, calls: Vec<usize> },
    /// The name of call `call` is known.
    CallNamed { call: usize, name: String },
    /// Call `call` has all its arguments.
    CallComplete { call: usize },
}

/// Reads a stream chunk by chunk.
#[derive(Debug)]
pub struct Assembler {
    limits: Limits,
    framing: Framing,
}

impl Assembler {
    #[must_use]
    pub fn new(framing: Framing, limits: Limits) -> Self {
        Assembler { limits, framing }
    }
}

pub(crate) fn read_whole(_body: &str, framing: Framing, limits: &Limits) -> Detection {
    let _ = Assembler::new(framing, *limits);
    let mut out = crate::detect::collect::Collector::new(limits);
    out.violation(
        crate::verdict::ViolationCode::MalformedPayload,
        "streams are not read yet",
    );
    out.finish(framing)
}
