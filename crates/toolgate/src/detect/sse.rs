//! `text/event-stream` framing. (Being written: see detect/stream.)

/// Whether text starts like an SSE body: a `data:`, `event:`, `id:`,
/// `retry:` or comment line, leading whitespace allowed.
#[must_use]
pub fn looks_like_sse(text: &str) -> bool {
    let line = text.trim_start();
    ["data:", "event:", "id:", "retry:", ":"]
        .iter()
        .any(|field| line.starts_with(field))
}
