//! The calls of one stream as they assemble.
//!
//! Each call gets a slot, numbered in order of first appearance: that number
//! is the call's ordinal in [`StreamEvent`]s and its `index` in the final
//! [`Detection`]. Decoders report what each event says about a call (its
//! name, a fragment of its arguments, its final arguments, its end); the
//! slot keeps the first name and id and fails closed on anything that
//! contradicts them. Results, turn boundaries and violations are logged in
//! order and replayed into a [`Collector`] at the end, which parses the
//! arguments strictly.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::check::json_eq;
use crate::detect::args::{error, parse_object};
use crate::detect::collect::{too_many_calls, ArgSource, Collector};
use crate::detect::limits::Limits;
use crate::detect::node::Raw;
use crate::detect::stream::StreamEvent;
use crate::detect::tape::Tape;
use crate::detect::Detection;
use crate::model::{ArgumentError, ArgumentErrorReason, CallKind, ContentShape, Format, Framing};
use crate::verdict::{Violation, ViolationCode};

/// The calls, results and violations of one stream, and what the event
/// being read did to them.
#[derive(Debug)]
// Each flag is an independent fact about the stream read so far (past the
// call limit, hold this event, report events, the end was read): no state
// machine hides among them.
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Calls {
    limits: Limits,
    slots: Vec<Slot>,
    results: Vec<ResultSlot>,
    log: Vec<Entry>,
    violations: Vec<Violation>,
    over_limit: bool,
    /// Calls seen past `max_calls`, counted once each, and their ids.
    dropped: usize,
    dropped_ids: std::collections::HashSet<String>,
    format: Option<Format>,
    /// The calls the current event concerns.
    touched: Vec<usize>,
    /// The current event must be held back (a fragment of a call that could
    /// not be tracked).
    hold: bool,
    /// Whether to report [`StreamEvent`]s at all.
    emit: bool,
    events: Vec<StreamEvent>,
    /// The stream's own end was read.
    ended: bool,
    /// The stream's own error was read.
    errored: bool,
}

/// What the calls of a stream held at one point: [`Calls::quiet_since`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    calls: usize,
    results: usize,
    violations: usize,
    dropped: usize,
}

/// One call.
#[derive(Debug)]
struct Slot {
    format: Format,
    kind: CallKind,
    id: Option<String>,
    name: Option<String>,
    /// `CallNamed` was reported.
    named: bool,
    /// The concatenated fragments, or the final text.
    text: String,
    /// A final text was given: any other must equal it.
    settled: bool,
    /// A whole value: a default used when no fragment came (Anthropic's
    /// `content_block_start` input), or the authoritative final value that
    /// the fragments had to match (Vercel's `tool-input-available`): its
    /// JSON text, checked to be one value (by serde, or by the fast reader
    /// of a short path).
    inline: Option<Box<str>>,
    /// `inline` read onto its tape in passing by a short path, taken by
    /// the collector rather than read again.
    tape: Option<Tape>,
    /// Why the arguments cannot be trusted; the first reason wins.
    error: Option<ArgumentError>,
    complete: bool,
}

/// One tool result.
#[derive(Debug)]
pub(crate) struct ResultSlot {
    format: Format,
    call_id: Option<String>,
    name: Option<String>,
    /// The content as sent.
    pub(crate) content: Option<Value>,
    pub(crate) is_error: bool,
    /// What its content may be (a Responses item's own shape).
    pub(crate) shape: ContentShape,
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    Call(usize),
    Result(usize),
    Turn,
}

impl Calls {
    pub(crate) fn new(limits: Limits, emit: bool) -> Self {
        Calls {
            limits,
            slots: Vec::new(),
            results: Vec::new(),
            log: Vec::new(),
            violations: Vec::new(),
            over_limit: false,
            dropped: 0,
            dropped_ids: std::collections::HashSet::new(),
            format: None,
            touched: Vec::new(),
            hold: false,
            emit,
            events: Vec::new(),
            ended: false,
            errored: false,
        }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Record that the stream is in `format`.
    pub(crate) fn saw(&mut self, format: Format) {
        self.format.get_or_insert(format);
    }

    /// Whether any event of a known format was read.
    pub(crate) fn recognised(&self) -> bool {
        self.format.is_some()
    }

    /// The stream's own end was read (`[DONE]`, a finish reason,
    /// `message_stop`, `response.completed`, ...).
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// The stream's own error was read, concerning no call: the stream
    /// ended there. Reports [`StreamEvent::UpstreamError`].
    pub(crate) fn upstream_error(&mut self, out: &mut Vec<StreamEvent>) {
        self.ended = true;
        self.errored = true;
        if self.emit {
            out.push(StreamEvent::UpstreamError);
        }
    }

    pub(crate) fn errored(&self) -> bool {
        self.errored
    }

    /// Where the stream stands, to see what an event did.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            calls: self.slots.len(),
            results: self.results.len(),
            violations: self.violations.len(),
            dropped: self.dropped,
        }
    }

    /// Whether the event being read, since `mark`, concerned no call (it
    /// started, touched or dropped none), carried no result, and had
    /// nothing wrong (nothing held back).
    pub(crate) fn quiet_since(&self, mark: Mark) -> bool {
        self.touched.is_empty() && !self.hold && self.mark() == mark
    }

    /// How many more calls fit within `max_calls`.
    pub(crate) fn room(&self) -> usize {
        self.limits.max_calls.saturating_sub(self.slots.len())
    }

    /// A new call. `None` past `max_calls`: the call is not tracked (one
    /// `input_limit_exceeded` violation is recorded) and the event is held.
    pub(crate) fn open(
        &mut self,
        format: Format,
        kind: CallKind,
        id: Option<&str>,
        name: Option<&str>,
    ) -> Option<usize> {
        self.saw(format);
        if self.room() == 0 {
            // Count each dropped call once: by its id, or, without one, at
            // its start (the fragment that names it).
            let new = match id {
                Some(id) => self.dropped_ids.insert(id.to_owned()),
                None => name.is_some(),
            };
            self.dropped += usize::from(new);
            self.past_limit();
            return None;
        }
        let call = self.slots.len();
        self.slots.push(Slot {
            format,
            kind,
            id: None,
            name: None,
            named: false,
            text: String::new(),
            settled: false,
            inline: None,
            tape: None,
            error: None,
            complete: false,
        });
        self.log.push(Entry::Call(call));
        self.touch(call);
        if let Some(id) = id {
            self.set_id(call, id);
        }
        if let Some(name) = name {
            self.set_name(call, name);
        }
        Some(call)
    }

    /// `n` calls of a whole document were dropped past `max_calls`.
    pub(crate) fn count_dropped(&mut self, n: usize) {
        self.dropped += n;
    }

    /// Calls were dropped past `max_calls`.
    pub(crate) fn past_limit(&mut self) {
        if !self.over_limit {
            self.over_limit = true;
            self.violations.push(too_many_calls(&self.limits));
        }
        self.hold = true;
    }

    /// The current event carries part of a call that is not tracked (past
    /// the limit, or never started): it must be held back.
    pub(crate) fn untracked(&mut self) {
        self.hold = true;
    }

    /// The current event carries a fragment of a call that never started
    /// (no start event named it): held back, and refused unless calls past
    /// `max_calls` are why it is not tracked. A client may still assemble
    /// it into a call; toolgate read no name for it.
    pub(crate) fn orphan(&mut self) {
        self.hold = true;
        if !self.over_limit {
            self.violation(
                ViolationCode::MalformedPayload,
                "the stream carries a fragment of a tool call that no earlier event started"
                    .to_owned(),
            );
        }
    }

    /// The current event concerns `call`.
    pub(crate) fn touch(&mut self, call: usize) {
        if !self.touched.contains(&call) {
            self.touched.push(call);
        }
    }

    pub(crate) fn is_complete(&self, call: usize) -> bool {
        self.slots.get(call).is_none_or(|s| s.complete)
    }

    /// The call's name. An empty name is no name; a second, different name
    /// makes the arguments `conflicting`.
    pub(crate) fn set_name(&mut self, call: usize, name: &str) {
        let Some(slot) = self.slots.get_mut(call) else {
            return;
        };
        if name.is_empty() {
            return;
        }
        match &slot.name {
            Some(known) if known == name => {}
            Some(_) => self.conflict(call, "the stream names this call twice, differently"),
            None if slot.named => {
                self.conflict(call, "the stream names this call after it was complete");
            }
            None => {
                slot.name = Some(name.to_owned());
                slot.named = true;
                if self.emit {
                    self.events.push(StreamEvent::CallNamed {
                        call,
                        name: name.to_owned(),
                    });
                }
            }
        }
    }

    /// The call's id. An empty id is no id; a second, different id makes
    /// the arguments `conflicting`.
    pub(crate) fn set_id(&mut self, call: usize, id: &str) {
        let Some(slot) = self.slots.get_mut(call) else {
            return;
        };
        if id.is_empty() {
            return;
        }
        match &slot.id {
            Some(known) if known == id => {}
            Some(_) => self.conflict(call, "the stream gives this call two different ids"),
            None => slot.id = Some(id.to_owned()),
        }
    }

    /// The call's kind; a different one makes the arguments `conflicting`.
    pub(crate) fn set_kind(&mut self, call: usize, kind: CallKind) {
        if self.slots.get(call).is_some_and(|s| s.kind != kind) {
            self.conflict(call, "the stream gives this call two different kinds");
        }
    }

    /// One more fragment of the arguments.
    pub(crate) fn append(&mut self, call: usize, fragment: &str) {
        self.touch(call);
        let max = self.limits.max_argument_bytes;
        let Some(slot) = self.slots.get_mut(call) else {
            return;
        };
        if fragment.is_empty() || slot.error.is_some() {
            return;
        }
        if slot.complete || slot.settled {
            self.conflict(
                call,
                "argument fragments arrived after the call was complete",
            );
            return;
        }
        if slot.text.len().saturating_add(fragment.len()) > max {
            self.fail(call, too_large(max));
            return;
        }
        slot.text.push_str(fragment);
    }

    /// The final arguments text (a `.done` event, a whole item). It must
    /// equal the fragments, when there were any, and any earlier final text.
    pub(crate) fn final_text(&mut self, call: usize, text: &str) {
        self.touch(call);
        let max = self.limits.max_argument_bytes;
        let Some(slot) = self.slots.get_mut(call) else {
            return;
        };
        if slot.error.is_some() {
            return;
        }
        if slot.settled || !slot.text.is_empty() {
            if slot.text != text {
                self.conflict(
                    call,
                    "the final arguments differ from the streamed fragments",
                );
            }
            return;
        }
        if text.len() > max {
            self.fail(call, too_large(max));
            return;
        }
        text.clone_into(&mut slot.text);
        slot.settled = true;
    }

    /// A whole value to use when no fragment comes (Anthropic's
    /// `content_block_start` input).
    pub(crate) fn default_value(&mut self, call: usize, value: &RawValue) {
        self.default_read(call, value.into(), None);
    }

    /// [`default_value`](Self::default_value) of a value a short path's
    /// fast reader checked, with the tape it read `value` onto in passing,
    /// if it did (the tape the collector reads of `value`, as on the short
    /// path of whole answers).
    pub(crate) fn default_read(&mut self, call: usize, value: Raw<'_>, tape: Option<Tape>) {
        self.touch(call);
        if let Some(slot) = self.slots.get_mut(call) {
            slot.inline = Some(value.get().into());
            slot.tape = tape;
        }
    }

    /// The authoritative final value (Vercel's `tool-input-available`):
    /// fragments, if any, must hold the same JSON value.
    pub(crate) fn final_value(&mut self, call: usize, value: &str) {
        self.touch(call);
        let limits = self.limits;
        let Some(slot) = self.slots.get_mut(call) else {
            return;
        };
        if slot.error.is_some() {
            return;
        }
        if let Some(known) = &slot.inline {
            if **known != *value {
                self.conflict(
                    call,
                    "the stream gives this call two different final inputs",
                );
            }
            return;
        }
        if value.starts_with('{') && slot.text == value {
            // The very text streamed: the same value, whose own defects
            // (a key given twice) its reading as the call's arguments
            // finds.
            slot.text.clear();
        } else if !slot.text.is_empty() {
            // The streamed text's own defect (a key given twice, text that
            // is no JSON object) is the call's; else the two must hold the
            // same value, numbers by value (a JavaScript client writes the
            // `3177.0` it streamed as `3177`).
            let streamed = match parse_object(&slot.text, &limits) {
                Ok(streamed) => Value::Object(streamed),
                Err(err) => {
                    self.fail(call, err);
                    return;
                }
            };
            let given = serde_json::from_str::<Value>(value).ok();
            if !given.is_some_and(|given| json_eq(&streamed, &given)) {
                self.conflict(call, "the final input differs from the streamed fragments");
                return;
            }
            slot.text.clear();
        }
        slot.inline = Some(value.into());
        slot.settled = true;
    }

    /// The arguments cannot be trusted. The first reason wins.
    pub(crate) fn fail(&mut self, call: usize, err: ArgumentError) {
        self.touch(call);
        if let Some(slot) = self.slots.get_mut(call) {
            slot.error.get_or_insert(err);
        }
    }

    /// Fragments contradict each other: fail closed.
    pub(crate) fn conflict(&mut self, call: usize, message: &str) {
        self.fail(call, error(ArgumentErrorReason::Conflicting, message));
    }

    /// The stream ended (or a new message began) before the call did.
    pub(crate) fn incomplete(&mut self, call: usize) {
        if !self.is_complete(call) {
            self.fail(
                call,
                error(
                    ArgumentErrorReason::Incomplete,
                    "the stream never finished this call: its arguments may be cut short",
                ),
            );
            self.complete(call);
        }
    }

    /// Every call of `calls` gets nothing more, reported in ascending order.
    pub(crate) fn complete_all(&mut self, calls: impl IntoIterator<Item = usize>) {
        let mut calls: Vec<usize> = calls.into_iter().collect();
        calls.sort_unstable();
        for call in calls {
            self.complete(call);
        }
    }

    /// The call will get nothing more: report it (named first, if its name
    /// never came).
    pub(crate) fn complete(&mut self, call: usize) {
        let Some(slot) = self.slots.get_mut(call) else {
            return;
        };
        if slot.complete {
            return;
        }
        slot.complete = true;
        let unnamed = !slot.named;
        slot.named = true;
        self.touch(call);
        if self.emit {
            if unnamed {
                self.events.push(StreamEvent::CallNamed {
                    call,
                    name: String::new(),
                });
            }
            self.events.push(StreamEvent::CallComplete { call });
        }
    }

    /// A tool result; returns its handle.
    pub(crate) fn result(
        &mut self,
        format: Format,
        call_id: Option<&str>,
        name: Option<&str>,
        content: Option<Value>,
        is_error: bool,
    ) -> usize {
        self.saw(format);
        let handle = self.results.len();
        self.results.push(ResultSlot {
            format,
            call_id: call_id.map(str::to_owned),
            name: name.map(str::to_owned),
            content,
            is_error,
            shape: ContentShape::OfFormat,
        });
        self.log.push(Entry::Result(handle));
        handle
    }

    pub(crate) fn result_mut(&mut self, handle: usize) -> Option<&mut ResultSlot> {
        self.results.get_mut(handle)
    }

    /// The next conversation turn starts.
    pub(crate) fn next_turn(&mut self) {
        self.log.push(Entry::Turn);
    }

    /// A violation of the stream as a whole.
    pub(crate) fn violation(&mut self, code: ViolationCode, message: String) {
        crate::detect::limits::list(&mut self.violations, Violation::payload(code, message));
    }

    pub(crate) fn has_violation(&self) -> bool {
        !self.violations.is_empty()
    }

    /// The events for one frame of the stream: the frame, then what it told
    /// about calls.
    pub(crate) fn frame(&mut self, raw: &[u8], out: &mut Vec<StreamEvent>) {
        if !self.emit {
            self.touched.clear();
            self.hold = false;
            return;
        }
        let mut calls = std::mem::take(&mut self.touched);
        calls.sort_unstable();
        let hold = std::mem::take(&mut self.hold) || !calls.is_empty();
        out.push(StreamEvent::Frame {
            raw: raw.to_vec(),
            calls,
            hold,
        });
        out.append(&mut self.events);
    }

    /// What happened outside any frame (at the end of the stream).
    pub(crate) fn drain(&mut self, out: &mut Vec<StreamEvent>) {
        self.touched.clear();
        self.hold = false;
        out.append(&mut self.events);
    }

    /// Replay everything into a collector, which numbers the calls (in slot
    /// order, so ordinals are indices) and parses their arguments.
    pub(crate) fn finish(mut self, framing: Framing) -> Detection {
        let limits = self.limits;
        let mut out = Collector::new(&limits);
        if let Some(format) = self.format {
            out.saw(format);
        }
        for entry in &self.log {
            match *entry {
                Entry::Call(call) => {
                    let slot = &mut self.slots[call];
                    let tape = slot.tape.take();
                    out.call(
                        slot.format,
                        slot.kind,
                        slot.id.as_deref(),
                        slot.name.as_deref().unwrap_or_default(),
                        slot.source(tape),
                    );
                }
                Entry::Result(handle) => {
                    let result = &mut self.results[handle];
                    out.result_value(
                        result.format,
                        result.call_id.as_deref(),
                        result.name.as_deref(),
                        result.content.take(),
                        result.is_error,
                    );
                    out.shape_last(result.shape);
                }
                Entry::Turn => out.next_turn(None),
            }
        }
        for violation in self.violations {
            out.violation(violation.code, violation.message);
        }
        out.also_seen(self.dropped);
        out.finish(framing)
    }
}

impl Slot {
    /// Where the collector reads the arguments from; `tape`, the slot's
    /// own, when its inline value is what it reads.
    fn source(&self, tape: Option<Tape>) -> ArgSource<'_> {
        if let Some(err) = &self.error {
            let raw = match (&self.inline, self.text.is_empty()) {
                (Some(inline), true) => inline.to_string(),
                _ => self.text.clone(),
            };
            return ArgSource::Invalid(err.clone(), raw);
        }
        if !self.text.is_empty() {
            if self.inline.as_deref().is_some_and(|v| !is_empty_value(v)) {
                return ArgSource::Invalid(
                    error(
                        ArgumentErrorReason::Conflicting,
                        "the stream gives this call both a whole input and argument fragments",
                    ),
                    self.text.clone(),
                );
            }
            return self.text_source();
        }
        match (&self.inline, tape) {
            (Some(inline), Some(tape)) => ArgSource::Tape(tape, Raw::checked(inline)),
            (Some(inline), None) => ArgSource::Inline(Raw::checked(inline)),
            (None, _) if self.settled => self.text_source(),
            (None, _) => ArgSource::Absent,
        }
    }

    fn text_source(&self) -> ArgSource<'_> {
        let text = std::borrow::Cow::Borrowed(self.text.as_str());
        match self.kind {
            CallKind::Custom => ArgSource::Freeform(text),
            CallKind::Function | CallKind::Hosted => ArgSource::Text(text),
        }
    }
}

/// `{}` or `null`, whatever the spacing.
fn is_empty_value(raw: &str) -> bool {
    let compact: String = raw.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    compact == "{}" || compact == "null"
}

fn too_large(max: usize) -> ArgumentError {
    error(
        ArgumentErrorReason::TooLarge,
        format!("streamed arguments grew past max_argument_bytes ({max})"),
    )
}
