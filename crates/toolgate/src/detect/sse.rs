//! `text/event-stream` framing: bytes in, whole events out.
//!
//! [`Framer`] follows the WHATWG event-stream rules, but is tolerant where
//! real clients are: a line we ignored while a client parsed it would be a
//! tool call nobody checked. So it accepts LF, CRLF and CR line ends (a CR at
//! the end of one chunk may be followed by the LF of the next), strips
//! leading whitespace before a field name (`" data: {...}"`, seen from
//! `OpenRouter`), reads field names in any case, takes `data:` with or
//! without its one space, joins several `data` lines with `"\n"`, keeps
//! trailing spaces in the data (JSON ignores them), and delivers a last
//! event that has no blank line after it when the stream ends.
//!
//! Every byte received belongs to exactly one [`Event`]'s `raw` bytes, in
//! order, so a proxy can forward events exactly as they came: blank lines
//! and comment-only blocks (keep-alives) are events without data. An event
//! is delivered as soon as the line end of its blank line is seen; when that
//! is a CR at the end of a chunk, the LF that may follow starts the next
//! event's bytes. An event larger than the bound given to [`Framer::new`]
//! is an error, never unbounded buffering.
//!
//! A line that is neither a comment nor a `data`, `event`, `id` or `retry`
//! field is ignored by WHATWG clients, but it is not nothing: a JSON body
//! sent as `text/event-stream` is such a line. The framer marks the event
//! ([`Event::unknown_field`]) and the assembler refuses it: nothing unread
//! leaves.

use std::ops::ControlFlow;

/// One event of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The bytes of the event exactly as received, from the end of the
    /// previous event through the blank line that ends this one.
    pub raw: Vec<u8>,
    /// The value of the last `event:` field, if any.
    pub name: Option<Vec<u8>>,
    /// The value of the last `id:` field, if any (what a client sends back
    /// as `Last-Event-ID` to resume a stream).
    pub id: Option<Vec<u8>>,
    /// The `data:` lines joined with `"\n"`; `None` when the event has no
    /// `data` field (a comment, a keep-alive, blank lines).
    pub data: Option<Vec<u8>>,
    /// The event holds a line that is neither a comment nor a `data`,
    /// `event`, `id` or `retry` field (names compared as for those
    /// fields): WHATWG clients ignore it, so what it says was never read.
    pub unknown_field: bool,
}

/// One event of the stream as the framer holds it, borrowed until the next
/// is read: what [`Event`] owns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventRef<'a> {
    pub(crate) raw: &'a [u8],
    pub(crate) name: Option<&'a [u8]>,
    pub(crate) id: Option<&'a [u8]>,
    pub(crate) data: Option<&'a [u8]>,
    /// The data as text, when it is known to be UTF-8 without checking
    /// it again: one `data` line of an event read where it stands in a
    /// chunk given as text ([`Framer::push_each`]). `None` says nothing.
    pub(crate) data_text: Option<&'a str>,
    pub(crate) unknown_field: bool,
}

impl EventRef<'_> {
    /// The event, owned.
    pub(crate) fn to_event(self) -> Event {
        Event {
            raw: self.raw.to_vec(),
            name: self.name.map(<[u8]>::to_vec),
            id: self.id.map(<[u8]>::to_vec),
            data: self.data.map(<[u8]>::to_vec),
            unknown_field: self.unknown_field,
        }
    }
}

/// Where a field's value is in the event being read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    /// `raw[range]`.
    At(std::ops::Range<usize>),
    /// Several `data` lines, joined in the framer's `joined`.
    Joined,
}

/// An event grew past the bound given to [`Framer::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// The bound, in bytes.
    pub max_event_bytes: usize,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a stream event is larger than {} bytes",
            self.max_event_bytes
        )
    }
}

impl std::error::Error for TooLarge {}

/// An incremental SSE parser: feed it chunks as they arrive, get whole
/// events back.
///
/// An event that lies whole within one chunk is read where it stands:
/// its raw bytes and data are slices of the chunk. Only the part of an
/// event that a chunk's end cuts off is kept, so that the event's bytes
/// are whole when the next chunk ends it.
#[derive(Debug)]
pub struct Framer {
    max_event_bytes: usize,
    /// The bytes of the event being read that came in earlier chunks.
    raw: Vec<u8>,
    /// The last byte was a CR: an LF right after it ends the same line.
    after_cr: bool,
    /// An event crossed the bound: nothing more is read.
    failed: bool,
    /// What the lines of the event being read said.
    fields: Fields,
}

/// The lines of the event being read, as read so far. Positions count
/// from the event's first byte, wherever its bytes are (in a chunk or in
/// the framer's `raw`).
#[derive(Debug)]
// Each flag is an independent fact about the bytes read so far (nothing
// received yet, the event has lines, one of them of no known field): no
// state machine hides among them.
#[allow(clippy::struct_excessive_bools)]
struct Fields {
    /// Where the line being read starts.
    line_start: usize,
    /// Nothing has been received yet (a byte order mark may come first).
    at_start: bool,
    /// The event being read has a non-blank line.
    has_lines: bool,
    /// The event being read has a line of no known field.
    unknown_field: bool,
    name: Option<std::ops::Range<usize>>,
    id: Option<std::ops::Range<usize>>,
    data: Option<Value>,
    /// The `data` lines joined, when there are several (kept from one
    /// event to the next, as the framer's `raw` is, so that reading an
    /// event allocates nothing).
    joined: Vec<u8>,
}

/// Where an event's bytes are, for its data as text: the text of the
/// chunk it lies in (its longest UTF-8 prefix) and where the event starts
/// in it. `None` for an event kept across chunks.
type InText<'t> = Option<(&'t str, usize)>;

impl Framer {
    /// A framer that refuses events larger than `max_event_bytes`.
    #[must_use]
    pub fn new(max_event_bytes: usize) -> Self {
        Framer {
            max_event_bytes,
            raw: Vec::new(),
            after_cr: false,
            failed: false,
            fields: Fields {
                line_start: 0,
                at_start: true,
                has_lines: false,
                unknown_field: false,
                name: None,
                id: None,
                data: None,
                joined: Vec::new(),
            },
        }
    }

    /// Read one chunk; whole events are appended to `out`. After an error,
    /// the framer reads nothing more: the event that crossed the bound is
    /// dropped, a later push gives the same error, and
    /// [`finish`](Self::finish) delivers nothing.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Event>) -> Result<(), TooLarge> {
        self.push_each(chunk, "", |event| {
            out.push(event.to_event());
            ControlFlow::Continue(())
        })
    }

    /// The stream ended: deliver the event being read, if any, even without
    /// the blank line that should end it (its raw bytes too, when they are
    /// only blank lines).
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_each(|event| {
            out.push(event.to_event());
            ControlFlow::Continue(())
        });
    }

    /// [`Framer::push`], each whole event given to `each` as it is read,
    /// borrowed: nothing is allocated or copied for an event that lies
    /// whole within the chunk. `text` is a prefix of the chunk known to be
    /// UTF-8 (`""` when none is): the data of an event within it is given
    /// as text too ([`EventRef::data_text`]). When `each` breaks, the rest
    /// of the chunk is not read, and the framer should not be used again.
    pub(crate) fn push_each(
        &mut self,
        chunk: &[u8],
        text: &str,
        each: impl FnMut(EventRef<'_>) -> ControlFlow<()>,
    ) -> Result<(), TooLarge> {
        if self.failed {
            return Err(self.too_large());
        }
        if chunk.is_empty() {
            // Nothing to read: the LF of a CR just read may still come.
            return Ok(());
        }
        let read = self.read_chunk(chunk, text, each);
        if read.is_err() {
            // Nothing of the event is kept: positions into the chunk
            // would outlive it.
            self.failed = true;
            self.raw.clear();
            self.after_cr = false;
            self.fields.clear();
        }
        read
    }

    /// [`push_each`](Self::push_each) of a chunk that is not empty, on a
    /// framer that has not failed.
    fn read_chunk(
        &mut self,
        chunk: &[u8],
        text: &str,
        mut each: impl FnMut(EventRef<'_>) -> ControlFlow<()>,
    ) -> Result<(), TooLarge> {
        debug_assert!(chunk.starts_with(text.as_bytes()));
        // The chunk is read up to `at`; the event being read is `raw`
        // followed by `chunk[from..at]`, and one of the two is empty: an
        // event begun in an earlier chunk is copied on into `raw`, line by
        // line, and one begun in this chunk is read where it stands.
        let (mut from, mut at) = (0, 0);
        if self.after_cr && chunk.first() == Some(&b'\n') {
            // The LF of a CRLF split across chunks: part of the line end
            // already read (or, when that line ended an event, the first
            // byte of the next).
            at = 1;
            if self.raw.is_empty() {
                self.fields.line_start = 1;
            } else {
                self.append(b"\n")?;
                self.fields.line_start = self.raw.len();
                from = 1;
            }
        }
        self.after_cr = false;
        while let Some(found) = memchr::memchr2(b'\n', b'\r', &chunk[at..]) {
            let end = at + found;
            let next = if chunk[end] == b'\r' && chunk.get(end + 1) == Some(&b'\n') {
                end + 2
            } else {
                end + 1
            };
            if chunk[end] == b'\r' && end + 1 == chunk.len() {
                // A CR that ends the chunk: the next may start with its LF.
                self.after_cr = true;
            }
            let flow = if self.raw.is_empty() {
                if next - from > self.max_event_bytes {
                    return Err(self.too_large());
                }
                let event = &chunk[from..next];
                self.fields
                    .line(event, end - from, Some((text, from)), &mut each)
            } else {
                self.append(&chunk[at..next])?;
                from = next;
                let line_end = self.raw.len() - (next - end);
                let flow = self.fields.line(&self.raw, line_end, None, &mut each);
                if flow.is_some() {
                    self.raw.clear();
                }
                flow
            };
            at = next;
            match flow {
                Some(ControlFlow::Break(())) => return Ok(()),
                Some(ControlFlow::Continue(())) => from = next,
                None => {}
            }
        }
        // The event the chunk's end cuts off, kept for the next.
        self.append(&chunk[from..])
    }

    /// [`Framer::finish`], the last event given to `each`.
    pub(crate) fn finish_each(&mut self, each: impl FnOnce(EventRef<'_>) -> ControlFlow<()>) {
        if self.failed {
            return;
        }
        let fields = &mut self.fields;
        let line_end = self.raw.len();
        if !self.raw[fields.line_start..].iter().all(|&b| is_space(b)) {
            // A last line without a line end.
            fields.field(&self.raw, line_end);
        }
        self.after_cr = false;
        if !self.raw.is_empty() {
            // Nothing comes after the last event.
            let _ = fields.dispatch(&self.raw, None, each);
            self.raw.clear();
        }
    }

    fn too_large(&self) -> TooLarge {
        TooLarge {
            max_event_bytes: self.max_event_bytes,
        }
    }

    /// Keep `bytes` of the event being read, within the bound.
    fn append(&mut self, bytes: &[u8]) -> Result<(), TooLarge> {
        if self.raw.len().saturating_add(bytes.len()) > self.max_event_bytes {
            return Err(self.too_large());
        }
        self.raw.extend_from_slice(bytes);
        Ok(())
    }
}

impl Fields {
    /// A line ended: `event` is the event's bytes through the line's end,
    /// `event[line_start..line_end]` the line's text. When the line ends
    /// the event, it is given to `each`, and what `each` said is returned;
    /// `None` when the event goes on.
    fn line(
        &mut self,
        event: &[u8],
        line_end: usize,
        text: InText<'_>,
        each: impl FnOnce(EventRef<'_>) -> ControlFlow<()>,
    ) -> Option<ControlFlow<()>> {
        let blank = event[self.line_start..line_end]
            .iter()
            .all(|&b| is_space(b));
        if blank {
            self.at_start = false;
            self.line_start = event.len();
            // Blank lines before an event are the start of its raw bytes.
            return self.has_lines.then(|| self.dispatch(event, text, each));
        }
        self.field(event, line_end);
        self.line_start = event.len();
        None
    }

    /// Read one non-blank line, `event[line_start..line_end]`, as a field.
    fn field(&mut self, event: &[u8], line_end: usize) {
        let mut start = self.line_start;
        if self.at_start && event[start..line_end].starts_with(BOM) {
            start += BOM.len();
        }
        self.at_start = false;
        self.has_lines = true;
        let (name, value) = split_field(&event[start..line_end]);
        let Some(name) = name else {
            return; // a comment
        };
        // Where the value is in the event (it ends the line).
        let value = line_end - value.len()..line_end;
        if name.eq_ignore_ascii_case(b"data") {
            match &self.data {
                None => self.data = Some(Value::At(value)),
                Some(Value::At(first)) => {
                    self.joined.clear();
                    self.joined.extend_from_slice(&event[first.clone()]);
                    self.joined.push(b'\n');
                    self.joined.extend_from_slice(&event[value]);
                    self.data = Some(Value::Joined);
                }
                Some(Value::Joined) => {
                    self.joined.push(b'\n');
                    self.joined.extend_from_slice(&event[value]);
                }
            }
        } else if name.eq_ignore_ascii_case(b"event") {
            self.name = Some(value);
        } else if name.eq_ignore_ascii_case(b"id") {
            self.id = Some(value);
        } else if !is_field(name) {
            self.unknown_field = true;
        }
    }

    /// The event, `raw`, is whole: give it to `each`, and read the next
    /// one afresh.
    fn dispatch(
        &mut self,
        raw: &[u8],
        text: InText<'_>,
        each: impl FnOnce(EventRef<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let (data, data_text) = match &self.data {
            None => (None, None),
            Some(Value::At(at)) => (
                Some(&raw[at.clone()]),
                text.and_then(|(text, from)| text.get(from + at.start..from + at.end)),
            ),
            Some(Value::Joined) => (Some(&self.joined[..]), None),
        };
        let flow = each(EventRef {
            raw,
            name: self.name.clone().map(|at| &raw[at]),
            id: self.id.clone().map(|at| &raw[at]),
            data,
            data_text,
            unknown_field: self.unknown_field,
        });
        self.clear();
        flow
    }

    /// Read the next event afresh.
    fn clear(&mut self) {
        self.name = None;
        self.id = None;
        self.data = None;
        self.unknown_field = false;
        self.line_start = 0;
        self.has_lines = false;
    }
}

const BOM: &[u8] = "\u{feff}".as_bytes();

/// The fields of an event stream, compared in any case.
const FIELDS: [&[u8]; 4] = [b"data", b"event", b"id", b"retry"];

/// Whether a field name (as [`split_field`] gives it) is one of [`FIELDS`].
fn is_field(name: &[u8]) -> bool {
    FIELDS.iter().any(|field| name.eq_ignore_ascii_case(field))
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Split a line into its field name and value. `None` for a comment. The
/// name is what precedes the first `:` (the whole line without one), after
/// leading whitespace; the value loses one leading space.
fn split_field(line: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let line = match line.iter().position(|&b| !is_space(b)) {
        Some(first) => &line[first..],
        None => &[],
    };
    if line.first() == Some(&b':') {
        return (None, &[]);
    }
    match line.iter().position(|&b| b == b':') {
        Some(colon) => {
            let value = &line[colon + 1..];
            let value = value.strip_prefix(b" ").unwrap_or(value);
            (Some(&line[..colon]), value)
        }
        None => (Some(line), &[]),
    }
}

/// Whether text starts like an SSE body: its first non-blank line is a
/// `data`, `event`, `id` or `retry` field or a comment, leading whitespace
/// and any case allowed.
#[must_use]
pub fn looks_like_sse(text: &str) -> bool {
    let bytes = text.strip_prefix('\u{feff}').unwrap_or(text).as_bytes();
    let line_end = |b: &u8| *b == b'\n' || *b == b'\r';
    // The first line holding more than spaces and tabs: around its first
    // such byte (found without walking the rest of a long line, as a
    // Gemini or Chat stream's first event is).
    let Some(first) = bytes.iter().position(|b| !is_space(*b) && !line_end(b)) else {
        return false;
    };
    let start = bytes[..first]
        .iter()
        .rposition(line_end)
        .map_or(0, |at| at + 1);
    let end = memchr::memchr2(b'\n', b'\r', &bytes[first..]).map_or(bytes.len(), |at| first + at);
    let line = &bytes[start..end];
    match split_field(line) {
        (None, _) => true,
        (Some(name), _) => line.contains(&b':') && is_field(name),
    }
}

/// The data of one event's raw bytes (a [`Frame`]'s `raw`), read by a
/// [`Framer`] exactly as the stream's was: a byte order mark at the start,
/// LF, CRLF and CR line ends, field names in any case after leading
/// blanks, one optional space after the colon, several `data` lines joined
/// with `"\n"`. `None` when no line is a `data` field. Bytes that hold more
/// than one event (a blank line between fields) give the data of each,
/// joined with `"\n"` as lines of one event would be.
///
/// [`Frame`]: crate::detect::stream::StreamEvent::Frame
#[must_use]
pub fn event_data(raw: &[u8]) -> Option<Vec<u8>> {
    let mut framer = Framer::new(usize::MAX);
    let mut events = Vec::new();
    // No bound to cross: the framer cannot fail.
    framer.push(raw, &mut events).ok()?;
    framer.finish(&mut events);
    let mut joined: Option<Vec<u8>> = None;
    for data in events.into_iter().filter_map(|event| event.data) {
        match &mut joined {
            Some(all) => {
                all.push(b'\n');
                all.extend_from_slice(&data);
            }
            None => joined = Some(data),
        }
    }
    joined
}

/// Tests: `body` cut into chunks at `cuts` (places in it, in any order).
#[cfg(test)]
pub(crate) fn cut_at(body: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
    cuts.sort_unstable();
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut last = 0;
    for cut in cuts {
        chunks.push(&body[last..cut]);
        last = cut;
    }
    chunks.push(&body[last..]);
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `chunks`, then finish.
    fn frame(chunks: &[&[u8]]) -> Vec<Event> {
        let mut framer = Framer::new(1 << 20);
        let mut out = Vec::new();
        for chunk in chunks {
            framer.push(chunk, &mut out).unwrap();
        }
        framer.finish(&mut out);
        out
    }

    fn data(events: &[Event]) -> Vec<Option<&str>> {
        events
            .iter()
            .map(|e| e.data.as_deref().map(|d| std::str::from_utf8(d).unwrap()))
            .collect()
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_read_alike() {
        for body in [
            "event: a\ndata: 1\n\ndata: 2\n\n",
            "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n",
            "event: a\rdata: 1\r\rdata: 2\r\r",
        ] {
            let events = frame(&[body.as_bytes()]);
            assert_eq!(data(&events), [Some("1"), Some("2")], "{body:?}");
            assert_eq!(events[0].name.as_deref(), Some(b"a".as_slice()));
            assert_eq!(events[1].name, None);
        }
    }

    #[test]
    fn a_crlf_split_across_chunks_is_one_line_end() {
        // Read as two line ends, the LF would be a blank line that ends the
        // event early.
        let events = frame(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        // The event is delivered at its blank line's CR; the LF after it
        // starts the next frame's bytes.
        assert_eq!(data(&events), [Some("a\nb"), None]);
        assert_eq!(events[1].raw, b"\n");
        let events = frame(&[b"data: a\r", b"\r", b"data: b\n\n"]);
        assert_eq!(data(&events), [Some("a"), Some("b")]);
    }

    #[test]
    fn several_data_lines_are_joined_with_newlines() {
        let events = frame(&[b"data: {\"a\":\ndata:1}\ndata\n\n"]);
        assert_eq!(data(&events), [Some("{\"a\":\n1}\n")]);
    }

    #[test]
    fn comments_are_ignored_and_keepalives_are_frames_without_data() {
        let events = frame(&[b": keep-alive\n\ndata: x\n: note\n\n"]);
        assert_eq!(data(&events), [None, Some("x")]);
        assert_eq!(events[0].raw, b": keep-alive\n\n");
    }

    #[test]
    fn leading_whitespace_field_case_and_the_optional_space() {
        let events = frame(&[b" data: a\n\n\t DATA:b\n\nData:  c\n\n"]);
        assert_eq!(data(&events), [Some("a"), Some("b"), Some(" c")]);
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_delivered_at_finish() {
        let events = frame(&[b"data: 1\n\ndata: 2\n"]);
        assert_eq!(data(&events), [Some("1"), Some("2")]);
        let events = frame(&[b"data: 1\n\ndata: 2"]);
        assert_eq!(data(&events), [Some("1"), Some("2")]);
    }

    #[test]
    fn trailing_spaces_stay_in_the_data() {
        let events = frame(&[b"data: {\"type\":\"ping\"}     \n\n"]);
        assert_eq!(data(&events), [Some("{\"type\":\"ping\"}     ")]);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_not_part_of_the_field_name() {
        let events = frame(&[b"\xEF\xBB\xBFdata: x\n\n"]);
        assert_eq!(data(&events), [Some("x")]);
    }

    #[test]
    fn frames_give_back_every_byte_in_order() {
        let body: &[u8] = b"\n\n: c\r\n\r\nevent: e\rdata: 1\r\r  \n\ndata: 2\n\n\n\n";
        for split in 0..=body.len() {
            let events = frame(&[&body[..split], &body[split..]]);
            let joined: Vec<u8> = events.iter().flat_map(|e| e.raw.clone()).collect();
            assert_eq!(joined, body, "split at {split}");
            assert_eq!(
                data(&events).into_iter().flatten().collect::<Vec<_>>(),
                ["1", "2"],
                "split at {split}"
            );
        }
    }

    #[test]
    fn an_event_past_the_bound_is_an_error() {
        let mut framer = Framer::new(16);
        let mut out = Vec::new();
        assert!(framer.push(b"data: 12345\n\n", &mut out).is_ok());
        let err = framer.push(b"data: 1234567890123", &mut out).unwrap_err();
        assert_eq!(err.max_event_bytes, 16);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn after_an_error_nothing_more_is_read() {
        // The bound crossed by an event read where it stands, by the part
        // of one kept at a chunk's end, and by one kept across chunks.
        let cases: [&[&[u8]]; 3] = [
            &[b"data: 1\ndata: 23\n"],
            &[b"data: 1\nxxxxxxxxxxxx"],
            &[b"data: 1\n", b"data: 2\n"],
        ];
        for chunks in cases {
            let mut framer = Framer::new(8);
            let mut out = Vec::new();
            let crossed = chunks
                .iter()
                .map(|chunk| framer.push(chunk, &mut out))
                .any(|status| status.is_err());
            assert!(crossed, "{chunks:?}");
            assert!(framer.push(b"data: x\n\n", &mut out).is_err());
            framer.finish(&mut out);
            assert!(out.is_empty(), "{chunks:?}");
        }
    }

    #[test]
    fn an_empty_chunk_between_a_cr_and_its_lf_changes_nothing() {
        let events = frame(&[b"data: a\r", b"", b"\ndata: b\r\n\r\n"]);
        assert_eq!(data(&events), [Some("a\nb")]);
    }

    #[test]
    fn the_data_of_an_event_in_a_chunk_of_text_is_given_as_text() {
        let mut framer = Framer::new(1 << 10);
        let body = "data: {\"a\":\"\u{e9}\"}\n\ndata: 1\ndata: 2\n\n";
        let mut texts = Vec::new();
        framer
            .push_each(body.as_bytes(), body, |event| {
                texts.push(event.data_text.map(str::to_owned));
                ControlFlow::Continue(())
            })
            .unwrap();
        // One data line: its text; several, joined: left to the reader.
        assert_eq!(texts, [Some("{\"a\":\"\u{e9}\"}".to_owned()), None]);
    }

    /// The first non-blank line, found as splitting the text into lines
    /// finds it.
    fn looks_like_sse_by_lines(text: &str) -> bool {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(line) = text
            .split(['\n', '\r'])
            .find(|line| !line.bytes().all(is_space))
        else {
            return false;
        };
        match split_field(line.as_bytes()) {
            (None, _) => true,
            (Some(name), _) => line.contains(':') && is_field(name),
        }
    }

    proptest::proptest! {
        #[test]
        fn the_first_line_is_found_as_by_lines(text in "\u{feff}?[ \t\r\n:adt\u{e9}{]{0,40}(data|event|id|retry|x)?[ :\t\r\na{]{0,20}") {
            proptest::prop_assert_eq!(looks_like_sse(&text), looks_like_sse_by_lines(&text));
        }
    }

    /// Read `chunks` as [`Assembler`](crate::detect::stream::Assembler)
    /// does (each with its longest UTF-8 prefix as text), then finish: the
    /// events, and whether the bound was crossed.
    fn frame_text(chunks: &[&[u8]], max: usize) -> (Vec<Event>, bool) {
        let mut framer = Framer::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            let text = match std::str::from_utf8(chunk) {
                Ok(text) => text,
                Err(err) => std::str::from_utf8(&chunk[..err.valid_up_to()]).unwrap(),
            };
            let status = framer.push_each(chunk, text, |event| {
                if let Some(text) = event.data_text {
                    assert_eq!(Some(text.as_bytes()), event.data);
                }
                out.push(event.to_event());
                ControlFlow::Continue(())
            });
            if status.is_err() {
                return (out, true);
            }
        }
        framer.finish(&mut out);
        (out, false)
    }

    fn piece() -> impl proptest::strategy::Strategy<Value = &'static [u8]> {
        proptest::sample::select(
            [
                b"data:".as_slice(),
                b"data: ",
                b"DATA:",
                b"event: e",
                b"id: 7",
                b"retry: 1",
                b"foo: x",
                b": c",
                b"\n",
                b"\r",
                b"\r\n",
                b" ",
                b"\t",
                b"\xEF\xBB\xBF",
                "\u{e9}".as_bytes(),
                b"\xFF",
                b"{\"a\":1}",
                b"x",
            ]
            .to_vec(),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]
        /// However a body is cut into chunks, the framer gives back every
        /// byte in order, reads the same events (unless a cut falls
        /// between a CR and an LF, which the framer reads as the line end
        /// it is without waiting for the LF), gives an event's data as
        /// text only when it is that text, and crosses the bound exactly
        /// when an event is larger than it, after the events before.
        #[test]
        fn chunks_are_read_as_the_whole_body(
            pieces in proptest::collection::vec(piece(), 0..40),
            cuts in proptest::collection::vec(0usize..=400, 0..6),
            max in proptest::prop_oneof![proptest::strategy::Just(usize::MAX), 1usize..60],
        ) {
            let body: Vec<u8> = pieces.concat();
            let cuts: Vec<usize> = cuts.into_iter().map(|cut| cut * body.len() / 400).collect();
            let chunks = cut_at(&body, cuts);
            let (whole, whole_crossed) = frame_text(&[&body], max);
            let (events, crossed) = frame_text(&chunks, max);
            let split_crlf = chunks.iter().any(|chunk| chunk.ends_with(b"\r"));
            if !split_crlf {
                proptest::prop_assert_eq!(&events, &whole);
                proptest::prop_assert_eq!(crossed, whole_crossed);
            }
            proptest::prop_assert!(events.iter().all(|event| event.raw.len() <= max));
            if !crossed {
                let joined: Vec<u8> = events.iter().flat_map(|e| e.raw.clone()).collect();
                proptest::prop_assert_eq!(joined, body);
            }
        }
    }

    #[test]
    fn sse_bodies_are_recognised() {
        for body in [
            "data: {}",
            "  data: {}",
            "event: x\ndata: 1",
            ": comment",
            "\n\nid: 1",
            "retry: 10",
            "\u{feff}DATA: x",
        ] {
            assert!(looks_like_sse(body), "{body:?}");
        }
        for body in ["", "  ", "{\"a\":1}", "hello", "database: x", "data"] {
            assert!(!looks_like_sse(body), "{body:?}");
        }
    }

    #[test]
    fn lines_of_no_known_field_mark_their_event() {
        let events = frame(&[
            b"data: 1\nfoo: bar\n\n: comment\n\n ID: 7\nRetry: 10\nEvent: e\n\n{\"choices\":[]}\n",
        ]);
        let unknown: Vec<bool> = events.iter().map(|e| e.unknown_field).collect();
        assert_eq!(unknown, [true, false, false, true]);
        assert_eq!(data(&events), [Some("1"), None, None, None]);
        // Names are compared as the data field's: `database` is not `data`.
        assert!(frame(&[b"database: x\n\n"])[0].unknown_field);
        assert!(!frame(&[b"\xEF\xBB\xBFdata: x\n\n"])[0].unknown_field);
    }

    #[test]
    fn event_data_reads_as_the_framer_does() {
        let cases: [(&[u8], Option<&str>); 10] = [
            (b"data: {\"a\":1}\n\n", Some("{\"a\":1}")),
            (b"event: e\r\ndata: 1\r\ndata:2\r\n\r\n", Some("1\n2")),
            (b"event: e\rdata: x\r\r", Some("x")),
            (b"\xEF\xBB\xBFdata: x\n\n", Some("x")),
            (b"  DaTa:  y\n\n", Some(" y")),
            (b"\n\ndata: late\n\n", Some("late")),
            (b"data: no blank line", Some("no blank line")),
            (b"data\n\n", Some("")),
            (b": keep-alive\n\n", None),
            (b"event: ping\nid: 3\n\n", None),
        ];
        for (raw, want) in cases {
            let got = event_data(raw);
            assert_eq!(
                got.as_deref().map(|d| std::str::from_utf8(d).unwrap()),
                want,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
        assert_eq!(event_data(b"database: x\n\n"), None);
        assert_eq!(event_data(b""), None);
    }

    #[test]
    fn event_data_equals_what_the_framer_delivers() {
        let body: &[u8] =
            b"\xEF\xBB\xBF: c\r\n\r\nevent: e\rdata: 1\r data:2\r\r  \n\nDATA: 3\n\n\n\ndata: 4";
        let events = frame(&[body]);
        assert!(events.len() > 3);
        for event in &events {
            assert_eq!(event_data(&event.raw), event.data, "{event:?}");
        }
    }
}
