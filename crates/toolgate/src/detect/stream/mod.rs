//! Streams: tool calls assembled from SSE events and JSON event sequences,
//! chunk by chunk.
//!
//! An [`Assembler`] splits the bytes into events (the SSE
//! [`Framer`](crate::detect::sse::Framer), or a JSON-sequence splitter),
//! reads each event's JSON once into a probe of its top-level keys, and
//! hands it to the decoder of its format: OpenAI Chat chunks, OpenAI
//! Responses events, Anthropic events, Gemini chunks (with Vertex's streamed
//! `partialArgs`), Vercel AI SDK UI message streams, Bedrock ConverseStream
//! events. A JSON sequence whose documents are whole payloads is read with
//! the document readers. Decoders report what each event says about a call
//! to one registry, which numbers calls in order of first appearance: that
//! ordinal is the call's `index` in the final [`Detection`].
//!
//! For each event, [`Assembler::push`] returns a [`StreamEvent::Frame`]
//! with the event's bytes exactly as received and the calls it concerns,
//! then [`StreamEvent::CallNamed`] / [`StreamEvent::CallComplete`] as names
//! become known and arguments final. A gateway can forward frames that
//! concern no call at once, hold the others, and release or block them
//! once [`Assembler::finish`] has given the whole [`Detection`] to check.
//!
//! Everything is bounded: the whole stream by `max_payload_bytes`, one
//! event by `max_argument_bytes` plus [`EVENT_ENVELOPE_BYTES`], one call's
//! arguments by `max_argument_bytes`, the number of calls by `max_calls`.
//! Past a bound the stream is `input_limit_exceeded`; nothing panics.
//!
//! ```
//! use toolgate::detect::stream::{Assembler, StreamEvent};
//! use toolgate::{Framing, Limits};
//!
//! let mut stream = Assembler::new(Framing::Sse, Limits::default());
//! let mut events = stream.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"ci\"}}]}}]}\n\n");
//! events.extend(stream.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ty\\\":\\\"Paris\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"));
//! assert!(matches!(&events[0], StreamEvent::Frame { calls, hold: true, .. } if calls == &[0]));
//! assert!(events.contains(&StreamEvent::CallNamed { call: 0, name: "get_weather".into() }));
//! assert!(events.contains(&StreamEvent::CallComplete { call: 0 }));
//!
//! let found = stream.finish();
//! assert_eq!(found.calls[0].name, "get_weather");
//! assert_eq!(found.calls[0].arguments.as_object().unwrap()["city"], "Paris");
//! ```

pub(crate) mod anthropic;
pub(crate) mod bedrock;
mod calls;
pub(crate) mod gemini;
mod json_path;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;
mod probe;
mod sequence;
pub(crate) mod vercel;
mod whole;

use std::ops::ControlFlow;

use serde::Deserialize;
use serde_json::value::RawValue;

use self::calls::Calls;
use self::probe::{Probe, Route};
use self::sequence::{Documents, Each, Splitter};
use crate::detect::limits::{self, Limits};
use crate::detect::sse::{self, EventRef, TooLarge};
use crate::detect::{code_of, json_error_message, Detection};
use crate::model::{Format, Framing};
use crate::verdict::ViolationCode;

/// What an event may hold besides one call's arguments (ids, usage, a
/// whole response repeated by `response.completed`): an event may be this
/// much larger than `max_argument_bytes`.
pub const EVENT_ENVELOPE_BYTES: usize = 1024 * 1024;

/// What the assembler reports as a stream goes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// One whole event of the stream, its bytes exactly as received (the
    /// frames of a stream, in order, are all its bytes), and the calls it
    /// concerns (starts, fragments, ends of, or repeats).
    Frame {
        raw: Vec<u8>,
        /// Call ordinals, ascending; empty for text and metadata.
        calls: Vec<usize>,
        /// The frame must not reach the client before the verdict: it
        /// concerns a call, or carries something that could not be read or
        /// tracked (a malformed event, a call past `max_calls`). Frames
        /// with `hold: false` may be forwarded at once.
        hold: bool,
    },
    /// The name of call `call` is known (empty if the call ended without
    /// one). Reported once per call, before its `CallComplete`.
    CallNamed { call: usize, name: String },
    /// Call `call` will receive nothing more: its arguments are final
    /// (though they may still be invalid). Reported once per call.
    CallComplete { call: usize },
    /// The event just framed is the stream's own error (an Anthropic
    /// `error` event, an OpenAI Chat or Gemini `{"error": {...}}`, a
    /// Responses `error` or `response.failed`, a Vercel `error` part) and
    /// concerns no call: the upstream ended the stream there, and
    /// [`Assembler::ended`] and [`Assembler::errored`] are now true. An
    /// error event that also carries a call is read as a call, without
    /// this.
    UpstreamError,
}

/// Reads a stream chunk by chunk.
#[derive(Debug)]
pub struct Assembler {
    framing: Framing,
    split: Split,
    reader: Reader,
    /// Bytes received.
    received: usize,
    /// Whether the input is still read.
    reading: Reading,
    closed: bool,
}

/// What reads the events the assembler frames, one at a time.
#[derive(Debug)]
struct Reader {
    calls: Calls,
    decoders: Decoders,
    /// Events read so far (with data, or a line of no known field), for
    /// messages.
    events: usize,
    /// The event being read has the shape of the stream's own error.
    error_event: bool,
}

/// The short paths of stream events ([`Reader::short_path`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Short {
    /// A Chat chunk ([`fast::chunk`](crate::detect::fast::chunk)).
    Chunk,
    /// An Anthropic event ([`fast::block`](crate::detect::fast::block)).
    Block,
    /// A Gemini event ([`fast::gemini`](crate::detect::fast::gemini)).
    Gemini,
    /// A Responses event ([`fast::item`](crate::detect::fast::item)).
    Item,
    /// A Bedrock event ([`fast::bedrock`](crate::detect::fast::bedrock)).
    Bedrock,
    /// A Vercel AI SDK part ([`fast::vercel`](crate::detect::fast::vercel)).
    Vercel,
}

impl Short {
    /// The order the short paths are tried in.
    const ORDER: [Short; 6] = [
        Short::Chunk,
        Short::Block,
        Short::Gemini,
        Short::Item,
        Short::Bedrock,
        Short::Vercel,
    ];

    /// The short path an event is most likely to take, by its name or its
    /// first key, to try first. No two short paths take the same event
    /// (each requires keys the others refuse), so the order changes only
    /// how many are tried in vain.
    fn likely(name: Option<&[u8]>, text: &str) -> Option<Short> {
        if name.is_some_and(|name| name.starts_with(b"response.")) {
            return Some(Short::Item);
        }
        let key = text.strip_prefix("{\"")?;
        if let Some(kind) = key.strip_prefix("type\":\"") {
            return ["text-", "tool-input-", "reasoning-", "start", "finish"]
                .iter()
                .any(|prefix| kind.starts_with(prefix))
                .then_some(Short::Vercel);
        }
        if key.starts_with("candidates\"") {
            Some(Short::Gemini)
        } else if ["contentBlock", "messageSt", "metadata\""]
            .iter()
            .any(|prefix| key.starts_with(prefix))
        {
            Some(Short::Bedrock)
        } else {
            None
        }
    }
}

/// Whether an assembler still reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    On,
    /// A bound was crossed: the rest of the input is not read.
    Stopped,
    /// A name was refused ([`Assembler::push_until`]): the rest of the
    /// input is ignored.
    Halted,
}

/// Splits the bytes into events.
#[derive(Debug)]
enum Split {
    Sse(sse::Framer),
    Sequence(Splitter),
}

impl Split {
    /// Each whole event of one more chunk, to `documents`, until it
    /// breaks (the rest of the chunk is then not read; see
    /// [`Framer::push_each`](sse::Framer::push_each) and
    /// [`Splitter::push_each`]).
    fn push(
        &mut self,
        chunk: &[u8],
        text: &str,
        documents: &mut impl Documents,
    ) -> Result<(), TooLarge> {
        match self {
            Split::Sse(framer) => framer.push_each(chunk, text, |event| documents.document(event)),
            Split::Sequence(splitter) => splitter.push_each(chunk, documents),
        }
    }

    /// What is left when the stream ends, to `each`.
    fn finish(&mut self, each: impl FnMut(EventRef<'_>) -> ControlFlow<()>) {
        match self {
            Split::Sse(framer) => framer.finish_each(each),
            Split::Sequence(splitter) => splitter.finish_each(each),
        }
    }
}

#[derive(Debug, Default)]
struct Decoders {
    openai_chat: openai_chat::Decoder,
    openai_responses: openai_responses::Decoder,
    anthropic: anthropic::Decoder,
    gemini: gemini::Decoder,
    vercel: vercel::Decoder,
    bedrock: bedrock::Decoder,
}

impl Assembler {
    /// An assembler for a `text/event-stream` body ([`Framing::Sse`]) or a
    /// sequence of JSON documents ([`Framing::JsonSequence`]; also used for
    /// [`Framing::Json`]).
    #[must_use]
    pub fn new(framing: Framing, limits: Limits) -> Self {
        Assembler::with_events(framing, limits, true)
    }

    fn with_events(framing: Framing, limits: Limits, emit: bool) -> Self {
        let max_event_bytes = limits
            .max_argument_bytes
            .saturating_add(EVENT_ENVELOPE_BYTES);
        let split = match framing {
            Framing::Sse => Split::Sse(sse::Framer::new(max_event_bytes)),
            Framing::Json | Framing::JsonSequence => {
                Split::Sequence(Splitter::new(max_event_bytes))
            }
        };
        Assembler {
            framing,
            split,
            reader: Reader {
                calls: Calls::new(limits, emit),
                decoders: Decoders::default(),
                events: 0,
                error_event: false,
            },
            received: 0,
            reading: Reading::On,
            closed: false,
        }
    }

    /// Read the next chunk of the stream. Returns, in order, a frame for
    /// each event it completes and what those events told about calls.
    /// After a bound is crossed (see [`Assembler::has_violation`]), after
    /// [`Assembler::close`], or once [`Assembler::push_until`] halted,
    /// input is ignored.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        self.push_text(chunk, None)
    }

    /// [`Assembler::push`], `text` (when known) a prefix of `chunk` known
    /// to be UTF-8 (the whole chunk, when it is text): what lies in it is
    /// not checked again.
    fn push_text(&mut self, chunk: &[u8], text: Option<&str>) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.reading != Reading::On || self.closed {
            return out;
        }
        self.received = self.received.saturating_add(chunk.len());
        let max = self.reader.calls.limits().max_payload_bytes;
        if self.received > max {
            self.stop(format!(
                "the stream is more than max_payload_bytes ({max}) bytes"
            ));
            return out;
        }
        let text = text.unwrap_or_else(|| utf8_prefix(chunk));
        let status = self.split.push(
            chunk,
            text,
            &mut InPlace {
                reader: &mut self.reader,
                out: &mut out,
                text,
            },
        );
        if let Err(TooLarge { max_event_bytes }) = status {
            self.stop(format!(
                "a stream event is larger than {max_event_bytes} bytes (max_argument_bytes plus {EVENT_ENVELOPE_BYTES} for its envelope)"
            ));
        }
        out
    }

    /// Like [`Assembler::push`], but stop at the first name `refuse`
    /// refuses: after each event, the names its [`StreamEvent::CallNamed`]
    /// gave are passed to `refuse`, in order; at the first it refuses, the
    /// assembler halts ([`Assembler::halted`]). The later events of the
    /// chunk are neither read nor reported, and the rest of the input
    /// (anything pushed later, and the unframed tail [`Assembler::close`]
    /// would read) is ignored, without a violation. [`Assembler::finish`]
    /// then gives the detection of the events up to and including the
    /// refusing one, the calls still open closed as `close` closes them.
    ///
    /// What is read does not depend on how the bytes were split into
    /// chunks: only events are read, and only the bytes within
    /// `max_payload_bytes` are framed (a chunk that crosses the bound has
    /// its events within it read before the stream stops).
    pub fn push_until(
        &mut self,
        chunk: &[u8],
        mut refuse: impl FnMut(&str) -> bool,
    ) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.reading != Reading::On || self.closed {
            return out;
        }
        let max = self.reader.calls.limits().max_payload_bytes;
        let room = max.saturating_sub(self.received);
        let (within, past) = chunk.split_at(chunk.len().min(room));
        self.received = self.received.saturating_add(within.len());
        let reader = &mut self.reader;
        let mut refused = false;
        // Only an event stream's events are read from the text.
        let text = match self.split {
            Split::Sse(_) => utf8_prefix(within),
            Split::Sequence(_) => "",
        };
        let status = self.split.push(
            within,
            text,
            &mut Each(|event: EventRef<'_>| {
                let from = out.len();
                reader.event(event, &mut out);
                refused = out[from..].iter().any(
                    |reported| matches!(reported, StreamEvent::CallNamed { name, .. } if refuse(name)),
                );
                if refused {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }),
        );
        if refused {
            self.reading = Reading::Halted;
            return out;
        }
        if let Err(TooLarge { max_event_bytes }) = status {
            self.stop(format!(
                "a stream event is larger than {max_event_bytes} bytes (max_argument_bytes plus {EVENT_ENVELOPE_BYTES} for its envelope)"
            ));
        } else if !past.is_empty() {
            self.stop(format!(
                "the stream is more than max_payload_bytes ({max}) bytes"
            ));
        }
        out
    }

    /// Whether [`Assembler::push_until`] met a refused name: the stream is
    /// read no further.
    #[must_use]
    pub fn halted(&self) -> bool {
        self.reading == Reading::Halted
    }

    /// The stream ended: read a last event left without its blank line, and
    /// complete the calls still open (those a format must close explicitly,
    /// like an Anthropic `tool_use` block, become incomplete). Returns what
    /// that produced. Later calls return nothing. After a halt
    /// ([`Assembler::push_until`]) the last event is not read, but the
    /// calls are closed alike.
    pub fn close(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.closed {
            return out;
        }
        self.closed = true;
        let reader = &mut self.reader;
        if self.reading == Reading::On {
            self.split.finish(|event| {
                reader.event(event, &mut out);
                ControlFlow::Continue(())
            });
        }
        let cx = &mut reader.calls;
        let decoders = &mut reader.decoders;
        decoders.openai_chat.close(cx);
        decoders.openai_responses.close(cx);
        decoders.anthropic.close(cx);
        decoders.gemini.close(cx);
        decoders.vercel.close(cx);
        decoders.bedrock.close(cx);
        cx.drain(&mut out);
        out
    }

    /// Whether the stream's own end has been read: `data: [DONE]` or a
    /// finish reason (OpenAI Chat, Gemini), `message_stop` (Anthropic),
    /// `response.completed`, `.incomplete` or `.failed` (OpenAI
    /// Responses), `messageStop` (Bedrock), `finish` or `abort` (Vercel),
    /// or the stream's own error ([`StreamEvent::UpstreamError`]). A body
    /// that ends before this was cut off: a gateway releases nothing of it.
    #[must_use]
    pub fn ended(&self) -> bool {
        self.reader.calls.ended()
    }

    /// Whether the stream ended with its own error, one that concerns no
    /// call ([`StreamEvent::UpstreamError`] was reported): the upstream's
    /// failure, not a cut, to pass on as such.
    #[must_use]
    pub fn errored(&self) -> bool {
        self.reader.calls.errored()
    }

    /// Whether something is already wrong with the stream as a whole (a
    /// malformed event, a bound crossed): the verdict will fail, so a
    /// gateway may stop reading.
    #[must_use]
    pub fn has_violation(&self) -> bool {
        self.reader.calls.has_violation()
    }

    /// Everything the stream held, after [`Assembler::close`] (called here
    /// if it was not).
    #[must_use]
    pub fn finish(mut self) -> Detection {
        self.close();
        let calls = &mut self.reader.calls;
        if !calls.recognised() && !calls.has_violation() {
            calls.violation(
                ViolationCode::MalformedPayload,
                "the stream holds no event of a tool-call format toolgate knows".to_owned(),
            );
        }
        self.reader.calls.finish(self.framing)
    }

    /// A bound was crossed: report it and read no more.
    fn stop(&mut self, message: String) {
        self.reading = Reading::Stopped;
        self.reader
            .calls
            .violation(ViolationCode::InputLimitExceeded, message);
    }
}

/// The longest prefix of `bytes` that is UTF-8 text.
fn utf8_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => std::str::from_utf8(&bytes[..err.valid_up_to()]).unwrap_or_default(),
    }
}

/// The reader, given the documents of a chunk of a JSON sequence
/// ([`Assembler::push`]): a Bedrock event of its short path's shape is
/// read where it stands, framing and reading in one pass (the splitter
/// does not walk it first); any other document is framed, then read.
struct InPlace<'a> {
    reader: &'a mut Reader,
    out: &'a mut Vec<StreamEvent>,
    /// The chunk's longest prefix that is UTF-8 text.
    text: &'a str,
}

impl Documents for InPlace<'_> {
    fn document(&mut self, event: EventRef<'_>) -> ControlFlow<()> {
        self.reader.event(event, self.out);
        ControlFlow::Continue(())
    }

    fn in_place(
        &mut self,
        chunk: &[u8],
        from: usize,
        start: usize,
        limit: usize,
    ) -> Option<(usize, ControlFlow<()>)> {
        let text = self.text.get(start..limit.min(self.text.len()))?;
        let reader = &mut *self.reader;
        let limits = reader.calls.limits();
        let max_depth = limits.max_depth.min(limits::HARD_MAX_DEPTH);
        let (light, length) = crate::detect::fast::bedrock::read_first(text, max_depth)?;
        #[cfg(debug_assertions)]
        same_bedrock(&text[..length], &light, limits);
        let end = start + length;
        reader.framed(&chunk[from..end], true, self.out, |reader| {
            reader.decoders.bedrock.light(light, &mut reader.calls);
        });
        Some((end, ControlFlow::Continue(())))
    }
}

impl Reader {
    /// One framed event: read its data, then report the frame.
    fn event(&mut self, event: EventRef<'_>, out: &mut Vec<StreamEvent>) {
        let counted = event.data.is_some() || event.unknown_field;
        self.framed(event.raw, counted, out, |reader| {
            if event.unknown_field {
                // A line a client ignores, or reads some other way (a JSON
                // body sent as an event stream): what it says was never
                // checked.
                reader.malformed(format!(
                    "stream event {} has a line that is neither a comment nor a data, event, id or retry field",
                    reader.events
                ));
            }
            if let Some(data) = event.data {
                reader.data(event.name, data, event.data_text);
            }
        });
    }

    /// One event of raw bytes `raw`, numbered when `counted`, read by
    /// `read`; then its frame reported (and the stream's own error, when
    /// it was one).
    fn framed(
        &mut self,
        raw: &[u8],
        counted: bool,
        out: &mut Vec<StreamEvent>,
        read: impl FnOnce(&mut Self),
    ) {
        let mark = self.calls.mark();
        self.error_event = false;
        if counted {
            self.events += 1;
        }
        read(self);
        let upstream_error = self.error_event && self.calls.quiet_since(mark);
        self.calls.frame(raw, out);
        if upstream_error {
            self.calls.upstream_error(out);
        }
    }

    /// The data of one event (`text`, when the framer knows it is text).
    fn data(&mut self, name: Option<&[u8]>, data: &[u8], text: Option<&str>) {
        let n = self.events;
        let Some(text) = text.or_else(|| std::str::from_utf8(data).ok()) else {
            self.malformed(format!("stream event {n} is not UTF-8 text"));
            return;
        };
        let trimmed = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
        if trimmed.is_empty() {
            return;
        }
        if self.short_path(name, trimmed) {
            return;
        }
        let limits = self.calls.limits();
        if let Some(message) =
            limits::too_deep(trimmed.as_bytes(), limits, format_args!("stream event {n}"))
        {
            self.calls.untracked();
            self.calls
                .violation(ViolationCode::InputLimitExceeded, message);
            return;
        }
        if trimmed == "[DONE]" {
            self.calls.end();
            self.decoders.openai_chat.done(&mut self.calls);
            self.decoders.vercel.done(&mut self.calls);
            return;
        }
        let Ok(name) = name.map(std::str::from_utf8).transpose() else {
            self.malformed(format!(
                "stream event {n} has an event name that is not UTF-8"
            ));
            return;
        };
        let name = name.filter(|name| !name.is_empty());
        if let Err(err) = self.decode(trimmed, name) {
            self.calls.untracked();
            let message = if err.is_data() && code_of(&err) != ViolationCode::InputLimitExceeded {
                format!("stream event {n} has a duplicate or mistyped field")
            } else {
                // Not JSON, or past a bound (which one it names).
                json_error_message(&format!("stream event {n}"), &err)
            };
            self.calls.violation(code_of(&err), message);
        }
    }

    /// Read an event of a shape real streams send most, named `name`
    /// (when the stream names it), on its format's short path, its text
    /// read once: a Chat chunk ([`fast::chunk`]), an Anthropic event
    /// ([`fast::block`]), a Gemini event ([`fast::gemini`]), a Responses
    /// arguments delta or start ([`fast::item`]), a Bedrock event
    /// ([`fast::bedrock`]), a Vercel AI SDK part ([`fast::vercel`]).
    /// `false` when it is none of these, for the
    /// general reading. The path its name or first key points to is tried
    /// first ([`Short::likely`]).
    ///
    /// [`fast::chunk`]: crate::detect::fast::chunk
    /// [`fast::block`]: crate::detect::fast::block
    /// [`fast::gemini`]: crate::detect::fast::gemini
    /// [`fast::item`]: crate::detect::fast::item
    /// [`fast::bedrock`]: crate::detect::fast::bedrock
    /// [`fast::vercel`]: crate::detect::fast::vercel
    fn short_path(&mut self, name: Option<&[u8]>, text: &str) -> bool {
        let first = Short::likely(name, text);
        if let Some(path) = first {
            if self.short(path, name, text) {
                return true;
            }
        }
        Short::ORDER
            .into_iter()
            .any(|path| Some(path) != first && self.short(path, name, text))
    }

    /// Read an event on the short path `path`: `false` when it gives up.
    fn short(&mut self, path: Short, name: Option<&[u8]>, text: &str) -> bool {
        let limits = self.calls.limits();
        let max_depth = limits.max_depth.min(limits::HARD_MAX_DEPTH);
        let unnamed = name.is_none_or(<[u8]>::is_empty);
        match path {
            Short::Chunk if unnamed => {
                let mut chunk = openai_chat::Chunk::default();
                if crate::detect::fast::chunk::read(text, max_depth, &mut chunk).is_none() {
                    return false;
                }
                #[cfg(debug_assertions)]
                same_chunk(text, &chunk, limits);
                self.calls.saw(Format::OpenAiChat);
                self.decoders.openai_chat.apply(&chunk, &mut self.calls);
            }
            Short::Block => {
                let Some((kind, light)) = crate::detect::fast::block::read(text, max_depth) else {
                    return false;
                };
                if !unnamed && name != Some(kind.as_bytes()) {
                    return false;
                }
                #[cfg(debug_assertions)]
                same_light(text, kind, &light, limits);
                self.calls.saw(Format::Anthropic);
                self.decoders.anthropic.light(&light, &mut self.calls);
            }
            Short::Gemini if unnamed => {
                let mut light = gemini::Light::default();
                if crate::detect::fast::gemini::read(text, max_depth, &mut light).is_none() {
                    return false;
                }
                #[cfg(debug_assertions)]
                same_gemini(text, &light, limits);
                self.decoders.gemini.light(&mut light, &mut self.calls);
            }
            Short::Item => {
                let Some((kind, light)) = crate::detect::fast::item::read(text, max_depth) else {
                    return false;
                };
                if !unnamed && name != Some(kind.as_bytes()) {
                    return false;
                }
                #[cfg(debug_assertions)]
                same_item(text, kind, &light, limits);
                self.calls.saw(Format::OpenAiResponses);
                self.decoders
                    .openai_responses
                    .light(&light, &mut self.calls);
            }
            Short::Bedrock if unnamed => {
                let Some(light) = crate::detect::fast::bedrock::read(text, max_depth) else {
                    return false;
                };
                #[cfg(debug_assertions)]
                same_bedrock(text, &light, limits);
                self.decoders.bedrock.light(light, &mut self.calls);
            }
            Short::Vercel => {
                let Some((kind, light)) = crate::detect::fast::vercel::read(text, max_depth) else {
                    return false;
                };
                if !unnamed && name != Some(kind.as_bytes()) {
                    return false;
                }
                #[cfg(debug_assertions)]
                same_vercel(text, kind, &light, limits);
                self.decoders.vercel.light(light, &mut self.calls);
            }
            // A named event: no chunk of these formats has a name.
            Short::Chunk | Short::Gemini | Short::Bedrock => return false,
        }
        true
    }

    /// Route one event (its JSON text) to its decoder. The event is read
    /// into its probe, then read again by census against the whole
    /// position table (a call the decoder would not read refuses it);
    /// events that are no stream event are read as whole documents.
    fn decode(&mut self, text: &str, name: Option<&str>) -> Result<(), serde_json::Error> {
        if !text.starts_with('{') {
            // An array or a scalar: no stream event is one, but a payload
            // may be (a list of calls).
            return self.document(serde_json::from_str(text)?);
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let probe = Probe::deserialize(&mut de)?;
        de.end()?;
        let data_kind = probe.kind();
        if let (Some(name), Some(kind)) = (name, data_kind.as_deref()) {
            if name != kind {
                // A client may dispatch on either: fail closed.
                self.calls.untracked();
                self.calls.violation(
                    ViolationCode::MalformedPayload,
                    format!(
                        "stream event {} has an event name that differs from its data's type",
                        self.events
                    ),
                );
                return Ok(());
            }
        }
        let kind = data_kind.as_deref().or(name);
        self.error_event = probe.is_error(kind);
        let route = probe.route(kind);
        let cx = &mut self.calls;
        let d = &mut self.decoders;
        match route {
            Route::OpenAiChat => {
                if !d.openai_chat.event(&probe, cx)? {
                    // Whole completions (`choices[].message`), not chunks.
                    return self.document(serde_json::from_str(text)?);
                }
            }
            Route::OpenAiResponses => {
                d.openai_responses
                    .event(&probe, kind.unwrap_or_default(), cx)?;
            }
            Route::Anthropic => d.anthropic.event(&probe, kind.unwrap_or_default(), cx)?,
            Route::Gemini => d.gemini.event(&probe, cx)?,
            Route::Vercel => d.vercel.event(&probe, kind.unwrap_or_default(), cx)?,
            Route::Bedrock => d.bedrock.event(&probe, cx)?,
            // Not a stream event: a whole payload, read as one, or refused.
            Route::Unknown => return self.document(serde_json::from_str(text)?),
        }
        // Every position is read: a call the decoder does not read is
        // refused, never dropped.
        let limits = *self.calls.limits();
        let (positions, malformed) = crate::detect::document::census(text, &limits)?;
        if malformed {
            self.malformed(format!(
                "stream event {} holds a tool-call container of the wrong type",
                self.events
            ));
        } else if positions.iter().any(|at| !route.reads(kind, at)) {
            self.malformed(format!(
                "stream event {} carries a tool call where its format's stream has none",
                self.events
            ));
        }
        Ok(())
    }

    /// An event that is a whole payload (a completion, a message, a list of
    /// calls): read with the document reader. A document in no known shape
    /// is refused, never skipped.
    fn document(&mut self, raw: &RawValue) -> Result<(), serde_json::Error> {
        if !whole::document(raw, &mut self.calls)? {
            self.malformed(format!(
                "stream event {} is in no shape of a tool-call format toolgate knows",
                self.events
            ));
        }
        Ok(())
    }

    /// An event that cannot be read: a violation, and the frame is held.
    fn malformed(&mut self, message: String) {
        self.calls.untracked();
        self.calls
            .violation(ViolationCode::MalformedPayload, message);
    }
}

/// Debug builds: a chunk the short path read
/// ([`fast::chunk`](crate::detect::fast::chunk)) is what the general
/// reading reads, a Chat chunk with no type: see [`same_event`].
#[cfg(debug_assertions)]
pub(crate) fn same_chunk<'a>(text: &'a str, chunk: &openai_chat::Chunk<'a>, limits: &Limits) {
    same_event(
        text,
        None,
        Route::OpenAiChat,
        chunk,
        limits,
        openai_chat::read,
    );
}

/// Debug builds: a Gemini event the short path read
/// ([`fast::gemini`](crate::detect::fast::gemini)) is what the general
/// reading reads: see [`same_event`].
#[cfg(debug_assertions)]
pub(crate) fn same_gemini<'a>(text: &'a str, light: &gemini::Light<'a>, limits: &Limits) {
    same_event(text, None, Route::Gemini, light, limits, gemini::light);
}

/// Debug builds: a Bedrock event the short path read
/// ([`fast::bedrock`](crate::detect::fast::bedrock)) is what the general
/// reading reads: see [`same_event`].
#[cfg(debug_assertions)]
pub(crate) fn same_bedrock<'a>(text: &'a str, light: &bedrock::Light<'a>, limits: &Limits) {
    same_event(text, None, Route::Bedrock, light, limits, bedrock::light);
}

/// Debug builds: a Vercel AI SDK part the short path read
/// ([`fast::vercel`](crate::detect::fast::vercel)) is what the general
/// reading reads: see [`same_event`].
#[cfg(debug_assertions)]
pub(crate) fn same_vercel<'a>(
    text: &'a str,
    kind: &str,
    light: &vercel::Light<'a>,
    limits: &Limits,
) {
    same_event(text, Some(kind), Route::Vercel, light, limits, |probe| {
        vercel::light(probe, kind)
    });
}

/// Debug builds: an Anthropic event the short path read
/// ([`fast::block`](crate::detect::fast::block)) is what the general
/// reading reads: see [`same_event`].
#[cfg(debug_assertions)]
pub(crate) fn same_light<'a>(
    text: &'a str,
    kind: &str,
    light: &anthropic::Light<'a>,
    limits: &Limits,
) {
    same_event(text, Some(kind), Route::Anthropic, light, limits, |probe| {
        anthropic::light(probe, kind)
    });
}

/// Debug builds: a Responses event the short path read
/// ([`fast::item`](crate::detect::fast::item)) is what the general
/// reading reads: see [`same_event`].
#[cfg(debug_assertions)]
pub(crate) fn same_item<'a>(
    text: &'a str,
    kind: &str,
    light: &openai_responses::Light<'a>,
    limits: &Limits,
) {
    same_event(
        text,
        Some(kind),
        Route::OpenAiResponses,
        light,
        limits,
        |probe| openai_responses::light(probe, kind),
    );
}

/// Debug builds: an event of type `kind` (none: no type) a short path
/// read into `taken` is what the general reading reads: within the
/// nesting bound, no error, routed to `route`, read by serde (`general`)
/// into the same value, and a census that finds no call the decoder does
/// not read.
#[cfg(debug_assertions)]
fn same_event<'a, T: PartialEq + std::fmt::Debug>(
    text: &'a str,
    kind: Option<&str>,
    route: Route,
    taken: &T,
    limits: &Limits,
    general: impl FnOnce(&Probe<'a>) -> Result<Option<T>, serde_json::Error>,
) {
    let probe = general_probe(text, limits);
    assert_eq!(probe.kind().as_deref(), kind, "{text}");
    assert!(!probe.is_error(kind), "{text}");
    assert_eq!(probe.route(kind), route, "{text}");
    let general = general(&probe).expect("serde reads the event");
    assert_eq!(general.as_ref(), Some(taken), "{text}");
    clean_census(text, route, kind, limits);
}

/// Debug builds: `text` is within the nesting bound, and its probe as the
/// general reading reads it.
#[cfg(debug_assertions)]
fn general_probe<'a>(text: &'a str, limits: &Limits) -> Probe<'a> {
    assert_eq!(
        limits::too_deep(text.as_bytes(), limits, ""),
        None,
        "{text}"
    );
    let mut de = serde_json::Deserializer::from_str(text);
    let probe = Probe::deserialize(&mut de).expect("the short path read an event serde cannot");
    de.end().expect("the short path read an event serde cannot");
    probe
}

/// Debug builds: the census of `text` finds no call that `route`'s
/// decoder does not read in an event of type `kind`.
#[cfg(debug_assertions)]
fn clean_census(text: &str, route: Route, kind: Option<&str>, limits: &Limits) {
    let (positions, malformed) =
        crate::detect::document::census(text, limits).expect("the census reads the event");
    assert!(!malformed, "{text}");
    assert!(
        positions.iter().all(|at| route.reads(kind, at)),
        "{text}: {positions:?}"
    );
}

/// Whether JSON text has the shape of a stream's own error event or of a
/// provider's error body ([`Probe::is_error`]), whatever else it holds.
pub(crate) fn is_error_shape(text: &str) -> bool {
    if !text.starts_with('{') {
        return false;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    match Probe::deserialize(&mut de) {
        Ok(probe) if de.end().is_ok() => probe.is_error(probe.kind().as_deref()),
        _ => false,
    }
}

/// Read a whole body as a stream: what [`detect`](crate::detect::detect)
/// does for SSE bodies and JSON sequences.
#[must_use]
pub fn read_whole(body: &[u8], framing: Framing, limits: &Limits) -> Detection {
    read_whole_text(body, utf8_prefix(body), framing, limits)
}

/// [`read_whole`], `text` a prefix of `body` known to be UTF-8 (the whole
/// body, when it is text).
pub(crate) fn read_whole_text(
    body: &[u8],
    text: &str,
    framing: Framing,
    limits: &Limits,
) -> Detection {
    let mut stream = Assembler::with_events(framing, *limits, false);
    stream.push_text(body, Some(text));
    stream.finish()
}

#[cfg(test)]
mod tests;
