//! JSON sequences: whitespace-separated JSON documents (JSON lines, Bedrock
//! ConverseStream events), split incrementally.
//!
//! The splitter only finds where each document ends (matching brackets
//! outside strings); parsing is the caller's. Like the SSE framer, every
//! byte received belongs to exactly one [`Document`]'s `raw` bytes, and a
//! document larger than the bound is an error, never unbounded buffering.

use crate::detect::sse::{EventRef, TooLarge};

/// One document, with the whitespace before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Document {
    /// Whitespace, then the document, exactly as received.
    pub(crate) raw: Vec<u8>,
    /// Where the document starts in `raw`; `None` for trailing whitespace.
    pub(crate) start: Option<usize>,
}

impl Document {
    /// The document's own bytes.
    pub(crate) fn text(&self) -> Option<&[u8]> {
        self.start.map(|start| &self.raw[start..])
    }

    /// As an event: its raw bytes, and the document as its data.
    pub(crate) fn as_event(&self) -> EventRef<'_> {
        EventRef {
            raw: &self.raw,
            name: None,
            id: None,
            data: self.text(),
            unknown_field: false,
        }
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
    raw: Vec<u8>,
    start: Option<usize>,
    state: State,
    in_string: bool,
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

    /// Read one chunk; whole documents are appended to `out`.
    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut Vec<Document>) -> Result<(), TooLarge> {
        let mut rest = chunk;
        let mut i = 0;
        while i < rest.len() {
            let b = rest[i];
            match self.state {
                State::Between => {
                    // A byte order mark at the very start is whitespace.
                    let bom = self.at_start && matches!(b, 0xEF | 0xBB | 0xBF);
                    if !is_whitespace(b) && !bom {
                        self.at_start = false;
                        self.start = Some(self.raw.len() + i);
                        self.state = match b {
                            b'{' | b'[' => State::Container { depth: 1 },
                            b'"' => State::TopString,
                            _ => State::Bare,
                        };
                    }
                    i += 1;
                }
                State::Container { depth } => {
                    i += 1;
                    if self.in_string {
                        self.string_byte(b);
                    } else {
                        match b {
                            b'"' => self.in_string = true,
                            b'{' | b'[' => {
                                self.state = State::Container {
                                    depth: depth.saturating_add(1),
                                };
                            }
                            b'}' | b']' if depth == 1 => {
                                self.emit(&rest[..i], out)?;
                                rest = &rest[i..];
                                i = 0;
                            }
                            b'}' | b']' => self.state = State::Container { depth: depth - 1 },
                            _ => {}
                        }
                    }
                }
                State::TopString => {
                    // The opening quote was read in `Between`.
                    i += 1;
                    if self.escaped {
                        self.escaped = false;
                    } else if b == b'\\' {
                        self.escaped = true;
                    } else if b == b'"' {
                        self.emit(&rest[..i], out)?;
                        rest = &rest[i..];
                        i = 0;
                    }
                }
                State::Bare => {
                    if is_whitespace(b) || matches!(b, b'{' | b'[' | b'"') {
                        // The token ends before this byte, which starts the
                        // next document or the whitespace before it.
                        self.emit(&rest[..i], out)?;
                        rest = &rest[i..];
                        i = 0;
                    } else {
                        i += 1;
                    }
                }
            }
        }
        self.append(rest)
    }

    /// The stream ended: deliver the document being read (it may be cut
    /// short) or the whitespace after the last one.
    pub(crate) fn finish(&mut self, out: &mut Vec<Document>) {
        let document = self.take_document();
        if !document.raw.is_empty() {
            out.push(document);
        }
    }

    /// The document read so far, leaving the splitter between documents.
    fn take_document(&mut self) -> Document {
        self.state = State::Between;
        self.in_string = false;
        self.escaped = false;
        Document {
            raw: std::mem::take(&mut self.raw),
            start: self.start.take(),
        }
    }

    fn string_byte(&mut self, b: u8) {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
        }
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), TooLarge> {
        if self.raw.len().saturating_add(bytes.len()) > self.max_document_bytes {
            return Err(TooLarge {
                max_event_bytes: self.max_document_bytes,
            });
        }
        self.raw.extend_from_slice(bytes);
        Ok(())
    }

    fn emit(&mut self, tail: &[u8], out: &mut Vec<Document>) -> Result<(), TooLarge> {
        self.append(tail)?;
        let document = self.take_document();
        out.push(document);
        Ok(())
    }
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<Document> {
        let mut splitter = Splitter::new(1 << 20);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut out).unwrap();
        }
        splitter.finish(&mut out);
        out
    }

    fn texts(documents: &[Document]) -> Vec<Option<&str>> {
        documents
            .iter()
            .map(|d| d.text().map(|t| std::str::from_utf8(t).unwrap()))
            .collect()
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
            let joined: Vec<u8> = documents.iter().flat_map(|d| d.raw.clone()).collect();
            assert_eq!(joined, body);
        }
    }

    #[test]
    fn scalars_and_garbage_are_documents_too() {
        let documents = split(&[b"12 \"a b\" nope{}"]);
        assert_eq!(
            texts(&documents),
            [Some("12"), Some("\"a b\""), Some("nope"), Some("{}")]
        );
    }

    #[test]
    fn a_document_cut_short_is_delivered_at_finish() {
        let documents = split(&[b"{\"a\":1}\n{\"b\":"]);
        assert_eq!(texts(&documents), [Some("{\"a\":1}"), Some("{\"b\":")]);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_whitespace() {
        let documents = split(&[b"\xEF\xBB", b"\xBF{}"]);
        assert_eq!(texts(&documents), [Some("{}")]);
    }

    #[test]
    fn a_document_past_the_bound_is_an_error() {
        let mut splitter = Splitter::new(8);
        let mut out = Vec::new();
        assert!(splitter.push(b"{\"a\":1}", &mut out).is_ok());
        assert!(splitter.push(b"{\"a\":[1,2,3,4]}", &mut out).is_err());
        assert_eq!(out.len(), 1);
    }
}
