//! JSON sequences: whitespace-separated JSON documents (JSON lines, Bedrock
//! ConverseStream events), split incrementally.
//!
//! The splitter only finds where each document ends (matching brackets
//! outside strings); parsing is the caller's. Like the SSE framer, every
//! byte received belongs to exactly one document's `raw` bytes (the
//! whitespace before it, then the document), and a document larger than
//! the bound is an error, never unbounded buffering.
//!
//! Documents are handed out borrowed ([`Splitter::push_each`]): a document
//! that lies whole in one chunk is given as a slice of that chunk, and
//! only one that spans chunks is gathered, into a buffer kept for the
//! next. Strings are crossed eight bytes at a time (a JSON line is mostly
//! strings: keys, ids, text and arguments fragments).

use std::ops::ControlFlow;

use crate::detect::fast::string_end;
use crate::detect::sse::{EventRef, TooLarge};

/// What a splitter gives its documents to.
pub(crate) trait Documents {
    /// A whole document, borrowed: its raw bytes (the whitespace before
    /// it, then the document) and the document as the event's data.
    fn document(&mut self, event: EventRef<'_>) -> ControlFlow<()>;

    /// A document that starts at `start` of `chunk` (at its brace), the
    /// whitespace before it from `from`, read where it stands when it can
    /// be, rather than framed and given to
    /// [`document`](Self::document): where it ends (by `limit`), and
    /// whether to go on; `None` when it is framed as any other. What is
    /// read must be what [`document`](Self::document) reads of it framed.
    fn in_place(
        &mut self,
        _chunk: &[u8],
        _from: usize,
        _start: usize,
        _limit: usize,
    ) -> Option<(usize, ControlFlow<()>)> {
        None
    }
}

/// Documents given to a closure, each framed.
pub(crate) struct Each<F>(pub(crate) F);

impl<F: FnMut(EventRef<'_>) -> ControlFlow<()>> Documents for Each<F> {
    fn document(&mut self, event: EventRef<'_>) -> ControlFlow<()> {
        (self.0)(event)
    }
}

/// What the splitter is inside of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between documents.
    Between,
    /// An object or array, `depth` brackets deep.
    Container { depth: usize },
    /// A string at the top level.
    TopString,
    /// A number or literal at the top level (or garbage).
    Bare,
}

/// Splits a byte stream into JSON documents.
#[derive(Debug)]
pub(crate) struct Splitter {
    max_document_bytes: usize,
    /// The bytes of the document being read that came in earlier chunks
    /// (the whitespace before it first); empty when it began in this one.
    raw: Vec<u8>,
    /// Where the document starts in its raw bytes; `None` while only
    /// whitespace has been read.
    start: Option<usize>,
    state: State,
    /// Inside a string of a container.
    in_string: bool,
    /// The byte before was a backslash inside a string.
    escaped: bool,
    at_start: bool,
}

impl Splitter {
    pub(crate) fn new(max_document_bytes: usize) -> Self {
        Splitter {
            max_document_bytes,
            raw: Vec::new(),
            start: None,
            state: State::Between,
            in_string: false,
            escaped: false,
            at_start: true,
        }
    }

    /// Read one chunk, each whole document given to `documents` as it is
    /// read: an object that starts in this chunk offered to be read where
    /// it stands first ([`Documents::in_place`]), and the others framed.
    /// When `documents` breaks, the rest of the chunk is not read, and the
    /// splitter should not be used again; after an error, likewise.
    pub(crate) fn push_each(
        &mut self,
        chunk: &[u8],
        documents: &mut impl Documents,
    ) -> Result<(), TooLarge> {
        // Where the current document's bytes in this chunk begin.
        let mut from = 0usize;
        let mut i = 0;
        while i < chunk.len() {
            match self.state {
                State::Between => {
                    let b = chunk[i];
                    // A byte order mark at the very start is whitespace.
                    let bom = self.at_start && matches!(b, 0xEF | 0xBB | 0xBF);
                    if !is_whitespace(b) && !bom {
                        self.at_start = false;
                        if b == b'{' && self.raw.is_empty() {
                            let limit = chunk
                                .len()
                                .min(from.saturating_add(self.max_document_bytes));
                            if let Some((end, flow)) = documents.in_place(chunk, from, i, limit) {
                                if flow.is_break() {
                                    return Ok(());
                                }
                                (from, i) = (end, end);
                                continue;
                            }
                        }
                        self.start = Some(self.raw.len() + (i - from));
                        self.state = match b {
                            b'{' | b'[' => State::Container { depth: 1 },
                            b'"' => State::TopString,
                            _ => State::Bare,
                        };
                    }
                    i += 1;
                }
                State::TopString => match string_end(&chunk[i..], self.escaped) {
                    Ok(at) => {
                        i += at;
                        if self.emit(&chunk[from..i], documents)?.is_break() {
                            return Ok(());
                        }
                        from = i;
                    }
                    Err(escaped) => {
                        self.escaped = escaped;
                        i = chunk.len();
                    }
                },
                State::Container { depth } => {
                    let (at, ended) = self.container(&chunk[i..], depth);
                    i += at;
                    if ended {
                        if self.emit(&chunk[from..i], documents)?.is_break() {
                            return Ok(());
                        }
                        from = i;
                    }
                }
                State::Bare => {
                    let b = chunk[i];
                    if is_whitespace(b) || matches!(b, b'{' | b'[' | b'"') {
                        // The token ends before this byte, which starts the
                        // next document or the whitespace before it.
                        if self.emit(&chunk[from..i], documents)?.is_break() {
                            return Ok(());
                        }
                        from = i;
                    } else {
                        i += 1;
                    }
                }
            }
        }
        self.append(&chunk[from..])
    }

    /// The stream ended: the document being read (it may be cut short), or
    /// the whitespace after the last one, to `each`.
    pub(crate) fn finish_each(&mut self, each: impl FnOnce(EventRef<'_>) -> ControlFlow<()>) {
        if !self.raw.is_empty() {
            let _ = each(event(&self.raw, self.start));
        }
        self.raw.clear();
        self.reset();
    }

    /// Read on in a container `depth` brackets deep: how many bytes of
    /// `bytes`, and whether the document ended there (at its closing
    /// bracket). When `bytes` end first, the state is kept for the next
    /// chunk.
    fn container(&mut self, bytes: &[u8], mut depth: usize) -> (usize, bool) {
        let mut at = 0;
        if self.in_string {
            match string_end(bytes, self.escaped) {
                Ok(end) => at = end,
                Err(escaped) => {
                    self.escaped = escaped;
                    return (bytes.len(), false);
                }
            }
        }
        while let Some(&b) = bytes.get(at) {
            at += 1;
            match b {
                b'"' => match string_end(&bytes[at..], false) {
                    Ok(end) => at += end,
                    Err(escaped) => {
                        self.in_string = true;
                        self.escaped = escaped;
                        self.state = State::Container { depth };
                        return (bytes.len(), false);
                    }
                },
                b'{' | b'[' => depth = depth.saturating_add(1),
                b'}' | b']' if depth == 1 => return (at, true),
                b'}' | b']' => depth -= 1,
                _ => {}
            }
        }
        self.in_string = false;
        self.escaped = false;
        self.state = State::Container { depth };
        (at, false)
    }

    /// The document ends with `tail` (all of it, when none of it came in an
    /// earlier chunk): give it to `each`, and read the next.
    fn emit(
        &mut self,
        tail: &[u8],
        documents: &mut impl Documents,
    ) -> Result<ControlFlow<()>, TooLarge> {
        let flow = if self.raw.is_empty() {
            self.bound(tail.len())?;
            documents.document(event(tail, self.start))
        } else {
            self.append(tail)?;
            let flow = documents.document(event(&self.raw, self.start));
            self.raw.clear();
            flow
        };
        self.reset();
        Ok(flow)
    }

    /// Keep the bytes of a document that goes on in the next chunk.
    fn append(&mut self, bytes: &[u8]) -> Result<(), TooLarge> {
        self.bound(self.raw.len().saturating_add(bytes.len()))?;
        self.raw.extend_from_slice(bytes);
        Ok(())
    }

    /// A document of `bytes` raw bytes is within the bound.
    fn bound(&self, bytes: usize) -> Result<(), TooLarge> {
        if bytes > self.max_document_bytes {
            return Err(TooLarge {
                max_event_bytes: self.max_document_bytes,
            });
        }
        Ok(())
    }

    /// Between documents again.
    fn reset(&mut self) {
        self.start = None;
        self.state = State::Between;
        self.in_string = false;
        self.escaped = false;
    }
}

/// A document's raw bytes as an event, its text (from `start`) the data.
fn event(raw: &[u8], start: Option<usize>) -> EventRef<'_> {
    EventRef {
        raw,
        name: None,
        id: None,
        data: start.map(|start| &raw[start..]),
        data_text: None,
        unknown_field: false,
    }
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document as read: its raw bytes, and its text (`None`: trailing
    /// whitespace).
    type Read = (Vec<u8>, Option<String>);

    fn split(chunks: &[&[u8]]) -> Vec<Read> {
        split_within(chunks, 1 << 20).0
    }

    /// The documents of `chunks`, and whether the bound was crossed.
    fn split_within(chunks: &[&[u8]], max: usize) -> (Vec<Read>, bool) {
        let mut splitter = Splitter::new(max);
        let mut out = Vec::new();
        let mut keep = |event: EventRef<'_>| {
            let text = event
                .data
                .map(|data| String::from_utf8_lossy(data).into_owned());
            out.push((event.raw.to_vec(), text));
            ControlFlow::Continue(())
        };
        for chunk in chunks {
            if splitter.push_each(chunk, &mut Each(&mut keep)).is_err() {
                return (out, true);
            }
        }
        splitter.finish_each(keep);
        (out, false)
    }

    fn texts(documents: &[Read]) -> Vec<Option<&str>> {
        documents.iter().map(|(_, text)| text.as_deref()).collect()
    }

    #[test]
    fn documents_end_at_their_closing_bracket() {
        let body: &[u8] = b"{\"a\":\"}{\\\"\"}\n[1,[2]]\r\n {\"b\":{}}\n\n";
        for at in 0..=body.len() {
            let documents = split(&[&body[..at], &body[at..]]);
            assert_eq!(
                texts(&documents),
                [
                    Some("{\"a\":\"}{\\\"\"}"),
                    Some("[1,[2]]"),
                    Some("{\"b\":{}}"),
                    None
                ],
                "split at {at}"
            );
            let joined: Vec<u8> = documents.iter().flat_map(|d| d.0.clone()).collect();
            assert_eq!(joined, body);
        }
    }

    #[test]
    fn scalars_and_garbage_are_documents_too() {
        let documents = split(&[b"12 \"a b\" nope{}\"x\\\"\"[]"]);
        assert_eq!(
            texts(&documents),
            [
                Some("12"),
                Some("\"a b\""),
                Some("nope"),
                Some("{}"),
                Some("\"x\\\"\""),
                Some("[]")
            ]
        );
    }

    #[test]
    fn a_document_cut_short_is_delivered_at_finish() {
        let documents = split(&[b"{\"a\":1}\n{\"b\":"]);
        assert_eq!(texts(&documents), [Some("{\"a\":1}"), Some("{\"b\":")]);
        let documents = split(&[b"{\"a\":\"x\\"]);
        assert_eq!(texts(&documents), [Some("{\"a\":\"x\\")]);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_whitespace() {
        let documents = split(&[b"\xEF\xBB", b"\xBF{}"]);
        assert_eq!(texts(&documents), [Some("{}")]);
        assert_eq!(documents[0].0, b"\xEF\xBB\xBF{}");
    }

    #[test]
    fn a_document_past_the_bound_is_an_error() {
        // Whole in one chunk, and gathered across chunks; the whitespace
        // before a document counts.
        let (out, crossed) = split_within(&[b"{\"a\":1}", b"{\"a\":[1,2,3,4]}"], 8);
        assert!(crossed);
        assert_eq!(texts(&out), [Some("{\"a\":1}")]);
        let (out, crossed) = split_within(&[b"{\"a\":1}{\"a\"", b":[1,2]}"], 8);
        assert!(crossed);
        assert_eq!(out.len(), 1);
        let (_, crossed) = split_within(&[b"  ", b"   ", b"{\"a\":1}"], 8);
        assert!(crossed);
        let (out, crossed) = split_within(&[b" {\"a\"", b":1}"], 8);
        assert!(!crossed);
        assert_eq!(texts(&out), [Some("{\"a\":1}")]);
    }

    #[test]
    fn a_break_stops_the_chunk() {
        let mut splitter = Splitter::new(1 << 20);
        let mut seen = 0;
        let status = splitter.push_each(
            b"{}{}{}",
            &mut Each(|_: EventRef<'_>| {
                seen += 1;
                ControlFlow::Break(())
            }),
        );
        assert!(status.is_ok());
        assert_eq!(seen, 1);
    }

    proptest::proptest! {
        /// However the bytes are cut into chunks, the same documents are
        /// read, and their raw bytes are all the bytes, in order.
        #[test]
        fn chunking_changes_nothing(
            body in proptest::collection::vec(
                proptest::sample::select(b"{}[]\"\\ \n\ta1:,\x01\xEF".to_vec()),
                0..80,
            ),
            cuts in proptest::collection::vec(0usize..80, 0..5),
        ) {
            let whole = split(&[&body]);
            let joined: Vec<u8> = whole.iter().flat_map(|d| d.0.clone()).collect();
            proptest::prop_assert_eq!(&joined, &body);
            let cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
            let chunks = crate::detect::sse::cut_at(&body, cuts);
            proptest::prop_assert_eq!(split(&chunks), whole);
        }

        /// A sequence of JSON values is read as those values.
        #[test]
        fn values_are_read_as_written(
            values in proptest::collection::vec(json(), 0..6),
            cut in 0usize..200,
        ) {
            let body: String = values.iter().map(|v| v.to_string() + "\n").collect();
            let cut = cut.min(body.len());
            let documents = split(&[&body.as_bytes()[..cut], &body.as_bytes()[cut..]]);
            let read: Vec<serde_json::Value> = documents
                .iter()
                .filter_map(|(_, text)| text.as_deref())
                .map(|text| serde_json::from_str(text).unwrap())
                .collect();
            proptest::prop_assert_eq!(read, values);
        }
    }

    fn json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i32>().prop_map(serde_json::Value::from),
            "[a-z\"\\\\{}\\[\\] ]{0,6}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                proptest::collection::btree_map("[a-z\"\\\\]{0,4}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
