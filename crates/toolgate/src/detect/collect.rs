//! The collector every reader writes into: it numbers calls and results,
//! parses arguments strictly and enforces the call-count limit.

use std::borrow::Cow;

use serde_json::Value;

use crate::detect::args::parse_arguments;
use crate::detect::limits::{Limits, HARD_MAX_DEPTH, MAX_ENVELOPE_DEPTH};
use crate::detect::node::Raw;
use crate::detect::tape::Tape;
use crate::detect::{Detection, ToolDeclarations};
use crate::model::{
    Answers, ArgumentError, ArgumentErrorReason, Arguments, CallKind, ContentShape, Format,
    Framing, Link, ObjectArguments, ToolCall, ToolResult,
};
use crate::verdict::{Violation, ViolationCode};

/// Where a call's arguments come from.
#[derive(Debug)]
pub(crate) enum ArgSource<'a> {
    /// JSON text: an OpenAI `arguments` string, concatenated stream fragments.
    Text(Cow<'a, str>),
    /// An inline JSON value: an object, a string holding JSON text, or null.
    Inline(Raw<'a>),
    /// Arguments (`raw`: an object, or a string holding one's JSON text)
    /// read onto their tape in passing.
    Tape(Tape, Raw<'a>),
    /// No arguments key at all: `{}`.
    Absent,
    /// The freeform input of a custom tool.
    Freeform(Cow<'a, str>),
    /// Arguments already known to be bad (an incomplete or contradictory
    /// stream), with the raw text received so far.
    Invalid(ArgumentError, String),
    /// JSON text in which the tape's reader found a key given twice: the
    /// strict reader says what is wrong, the tape's is not tried again.
    Twin(Cow<'a, str>),
}

impl<'a> ArgSource<'a> {
    /// Arguments `raw` (an object, or a string holding one's JSON text,
    /// `text` when its escapes were decoded) in which the tape's reader
    /// found a key given twice.
    pub(crate) fn twin(raw: Raw<'a>, text: Option<Box<str>>) -> ArgSource<'a> {
        match text {
            Some(text) => ArgSource::Twin(Cow::Owned(text.into())),
            None if raw.get().starts_with('"') => crate::detect::node::unquote(raw.get())
                .map_or(ArgSource::Inline(raw), ArgSource::Twin),
            None => ArgSource::Twin(Cow::Borrowed(raw.get())),
        }
    }
}

/// Accumulates what a reader finds, in order.
#[derive(Debug, Clone)]
pub(crate) struct Collector<'l> {
    pub(crate) limits: &'l Limits,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
    violations: Vec<Violation>,
    format: Option<Format>,
    turn: usize,
    last_role: Option<&'static str>,
    /// Calls dropped unread past `VIEWS` times `max_calls`.
    dropped_unread: usize,
    /// Where the violations stood when a call past `max_calls` came.
    limit_at: Option<usize>,
    /// Report `max_calls` here (a stream reading documents reports its
    /// own).
    report_limit: bool,
    /// Tool declarations of a request (`tools`), as sent.
    tools: ToolDeclarations,
    /// How deep the document readers have recursed.
    depth: usize,
    /// What the current turn recorded last: a call after a result starts a
    /// new turn.
    last: Last,
    /// Which calls a result recorded now answers.
    open: Open,
    /// Inside a user or system message: what sits in call positions there
    /// is not a call ([`Mute::Muted`]), or refused when the message is no
    /// element of a conversation ([`Mute::Contradicted`]).
    muted: Mute,
    /// The object about to be read is an element of a conversation (a
    /// `messages`, `contents` or `input` list, a top-level array): only
    /// there does a user or system role make its calls no calls.
    pub(crate) listed: bool,
    /// Calls that sat on a user or system message of a conversation: call
    /// positions the payload holds, read as no calls.
    muted_calls: usize,
    /// Calls offered, counting those past `max_calls`.
    seen: usize,
    /// The payload continues a conversation the provider keeps.
    continues: bool,
    /// The container keys from the document's root to the object being
    /// read.
    path: smallvec::SmallVec<[&'static str; 8]>,
    /// Census mode: calls are not read, only where each sits (its path).
    census: Option<Vec<String>>,
    /// Whether each call's arguments' text as received (`raw_arguments`)
    /// is wanted.
    pub(crate) raw_arguments: RawArguments,
}

/// Whether the calls' arguments' text as received is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawArguments {
    Kept,
    /// Not when the detection is only judged: an `arguments` string read
    /// in passing is then not decoded for it.
    Unwanted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Call,
    Result,
}

/// Which calls a result may answer now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// Nothing yet: results answer calls made before the payload.
    Start,
    /// The calls of this turn.
    Turn(usize),
    /// The conversation moved on since the last calls.
    Closed,
}

/// Where one object's readings start in the collector: calls and results
/// recorded so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    calls: usize,
    results: usize,
}

/// Whether calls are read in the current message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mute {
    /// Calls are calls.
    Open,
    /// A user or system message of a conversation: its calls are none.
    Muted,
    /// A user or system message where a model's answer is read: its calls
    /// are read and refused (true once refused).
    Contradicted(bool),
}

impl<'l> Collector<'l> {
    pub(crate) fn new(limits: &'l Limits) -> Self {
        Collector {
            limits,
            calls: Vec::new(),
            results: Vec::new(),
            violations: Vec::new(),
            format: None,
            turn: 0,
            last_role: None,
            dropped_unread: 0,
            limit_at: None,
            report_limit: true,
            tools: ToolDeclarations::default(),
            depth: 0,
            last: Last::Nothing,
            open: Open::Start,
            muted: Mute::Open,
            listed: false,
            muted_calls: 0,
            seen: 0,
            continues: false,
            path: smallvec::SmallVec::new(),
            census: None,
            raw_arguments: RawArguments::Kept,
        }
    }

    /// A collector that reads no call, only where each call sits: see
    /// [`Collector::positions`].
    pub(crate) fn census(limits: &'l Limits) -> Self {
        Collector {
            census: Some(Vec::new()),
            ..Collector::new(limits)
        }
    }

    /// Calls a stream saw past `max_calls`, which it did not keep: they
    /// count among the calls the payload holds.
    pub(crate) fn also_seen(&mut self, dropped: usize) {
        self.seen += dropped;
    }

    /// In census mode, the path (container keys joined by `/`) of every
    /// call found, in order, and whether the document was malformed.
    pub(crate) fn positions(self) -> (Vec<String>, bool) {
        let malformed = !self.violations.is_empty();
        (self.census.unwrap_or_default(), malformed)
    }

    /// No call, no result, nothing wrong: what was read holds nothing.
    pub(crate) fn holds_nothing(&self) -> bool {
        self.calls.is_empty()
            && self.results.is_empty()
            && self.violations.is_empty()
            && self.muted_calls == 0
    }

    /// Whether this collector only takes a census of positions.
    pub(crate) fn is_census(&self) -> bool {
        self.census.is_some()
    }

    /// Census mode: a call read through `from` (`type`, `name`, a
    /// single-call key) sits in the current object.
    pub(crate) fn census_at(&mut self, from: &str) {
        // Muted positions too: a stream decoder reads no call there either.
        if let Some(census) = &mut self.census {
            let mut at = self.path.join("/");
            if !at.is_empty() && !from.is_empty() {
                at.push('/');
            }
            at.push_str(from);
            census.push(at);
        }
    }

    /// The reader enters the container `key` (tracked in census mode only:
    /// nothing else reads the path).
    pub(crate) fn enter(&mut self, key: &'static str) {
        if self.census.is_some() {
            self.path.push(key);
        }
    }

    /// The reader leaves the container it entered last.
    pub(crate) fn leave(&mut self) {
        if self.census.is_some() {
            self.path.pop();
        }
    }

    /// Where the readings of an object start.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            calls: self.calls.len(),
            results: self.results.len(),
        }
    }

    /// Whether anything was recorded since `mark`.
    pub(crate) fn recorded_since(&self, mark: Mark) -> bool {
        self.calls.len() > mark.calls || self.results.len() > mark.results
    }

    /// A message starts: what sits in its call positions is a call unless
    /// `muted` (a user or system message's), and the message is an element
    /// of a conversation (`listed`). A user or system message anywhere else
    /// (a model's answer: `choices[].message`, a candidate's content, a
    /// whole message) that carries a call contradicts itself: the call is
    /// read, and the payload refused. Returns what to restore when it ends
    /// ([`Collector::restore_mute`]).
    pub(crate) fn mute_as(&mut self, muted: bool, listed: bool) -> Mute {
        let next = match (muted, listed) {
            (false, _) => Mute::Open,
            (true, true) => Mute::Muted,
            (true, false) => Mute::Contradicted(false),
        };
        std::mem::replace(&mut self.muted, next)
    }

    /// A message started with [`Collector::mute_as`] ends.
    pub(crate) fn restore_mute(&mut self, outer: Mute) {
        self.muted = outer;
    }

    /// A message that recorded neither a call nor a result ended: the
    /// conversation moved on, and later results answer nothing before it.
    pub(crate) fn moved_on(&mut self) {
        self.open = Open::Closed;
    }

    /// The payload continues a conversation the provider keeps
    /// (`previous_response_id`, `conversation`).
    pub(crate) fn continues(&mut self) {
        self.continues = true;
    }

    /// Record the tool declarations of a request (a `tools` array), as
    /// their text: they are read when they are compiled. An entry that is
    /// not an object is kept as it is: the check refuses it.
    pub(crate) fn declare_tools(&mut self, tools: Raw<'_>) {
        self.tools.push(tools.get());
    }

    /// Record that the payload is in `format`, even if it holds no call.
    pub(crate) fn saw(&mut self, format: Format) {
        self.format.get_or_insert(format);
    }

    /// Enter one level of nested reading. Past [`MAX_ENVELOPE_DEPTH`] levels,
    /// records `input_limit_exceeded` and returns false: the caller stops.
    pub(crate) fn descend(&mut self) -> bool {
        if self.depth >= MAX_ENVELOPE_DEPTH {
            if !self
                .violations
                .iter()
                .any(|v| v.code == ViolationCode::InputLimitExceeded)
            {
                self.violation(
                    ViolationCode::InputLimitExceeded,
                    format!("the payload nests deeper than {MAX_ENVELOPE_DEPTH} levels"),
                );
            }
            return false;
        }
        self.depth += 1;
        true
    }

    /// Leave a level entered with [`Collector::descend`].
    pub(crate) fn ascend(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The format recognised so far.
    pub(crate) fn format(&self) -> Option<Format> {
        self.format
    }

    /// A message from `role` starts. A new turn begins when the role changes
    /// (`None`: always) or with each assistant message, once something has
    /// been recorded.
    pub(crate) fn next_turn(&mut self, role: Option<&str>) {
        let role = role.map(|r| match r {
            "assistant" | "model" => "assistant",
            "tool" | "function" => "tool",
            "user" => "user",
            "system" | "developer" => "system",
            _ => "other",
        });
        // Every assistant message is a turn of its own (a later assistant
        // message moves the conversation on); consecutive tool, user or
        // system messages are one turn.
        let changed = role.is_none() || role != self.last_role || role == Some("assistant");
        if changed && (!self.calls.is_empty() || !self.results.is_empty()) {
            self.turn += 1;
            self.last = Last::Nothing;
        }
        self.last_role = role;
    }

    /// Record one call. Past `max_calls`, records one `input_limit_exceeded`
    /// violation and drops the rest.
    pub(crate) fn call(
        &mut self,
        format: Format,
        kind: CallKind,
        id: Option<&str>,
        name: &str,
        args: ArgSource<'_>,
    ) {
        if self.admit(format) {
            let read = self.arguments(kind, args);
            self.push(format, kind, id, name, read);
        }
    }

    /// Record one call whose arguments are already read.
    pub(crate) fn call_read(
        &mut self,
        format: Format,
        kind: CallKind,
        id: Option<&str>,
        name: &str,
        read: (Arguments, String),
    ) {
        if self.admit(format) {
            self.push(format, kind, id, name, read);
        }
    }

    /// Count a call about to be recorded; false when it is not kept (muted,
    /// or past `max_calls`).
    fn admit(&mut self, format: Format) -> bool {
        self.saw(format);
        if self.census.is_some() {
            // A call read outside the object readings (a JSON-RPC
            // `tools/call`).
            self.census_at("");
            return false;
        }
        match self.muted {
            Mute::Open | Mute::Contradicted(true) => {}
            Mute::Muted => {
                self.muted_calls += 1;
                return false;
            }
            Mute::Contradicted(false) => {
                self.muted = Mute::Contradicted(true);
                self.violation(
                    ViolationCode::MalformedPayload,
                    "a tool call sits on a user or system message that is no element of a \
                     conversation (a model's answer): its role says it is no call, its \
                     position that it is one",
                );
            }
        }
        self.seen += 1;
        if self.last == Last::Result {
            // A call after a result: the model was asked again.
            self.turn += 1;
        }
        self.last = Last::Call;
        self.open = Open::Turn(self.turn);
        if self.calls.len() >= self.limits.max_calls && self.limit_at.is_none() {
            // Where the limit's violation goes, if the calls past the
            // bound are not repeats of calls read (see `finish`).
            self.limit_at = Some(self.violations.len());
        }
        if self.calls.len() >= self.limits.max_calls.max(1).saturating_mul(VIEWS) {
            self.dropped_unread += 1;
            return false;
        }
        true
    }

    fn push(
        &mut self,
        format: Format,
        kind: CallKind,
        id: Option<&str>,
        name: &str,
        (arguments, raw_arguments): (Arguments, String),
    ) {
        self.calls.push(ToolCall {
            index: self.calls.len(),
            id: id.map(str::to_owned),
            name: name.into(),
            kind,
            arguments,
            raw_arguments,
            format,
            turn: self.turn,
        });
    }

    /// Make room for the `count` calls of a list about to be read (within
    /// the bound on calls): the list grows once rather than by doubling.
    pub(crate) fn expect_calls(&mut self, count: usize) {
        let room = self.limits.max_calls.saturating_sub(self.calls.len());
        self.calls.reserve(count.min(room));
    }

    /// Read arguments as a call would.
    pub(crate) fn arguments(&self, kind: CallKind, args: ArgSource<'_>) -> (Arguments, String) {
        match args {
            ArgSource::Absent => (Arguments::Object(ObjectArguments::default()), String::new()),
            ArgSource::Freeform(text) if kind == CallKind::Custom => {
                if let Some(err) =
                    crate::detect::args::too_large("the input is", &text, self.limits)
                {
                    return (Arguments::Invalid(err), text.into_owned());
                }
                (
                    Arguments::Text(text.clone().into_owned()),
                    text.into_owned(),
                )
            }
            ArgSource::Text(text) | ArgSource::Freeform(text) => {
                (parse_arguments(&text, self.limits), text.into_owned())
            }
            ArgSource::Invalid(err, raw) => (Arguments::Invalid(err), raw),
            ArgSource::Twin(text) => (
                crate::detect::args::parse_twin(&text, self.limits),
                text.into_owned(),
            ),
            // A string's text is no longer than the string less its
            // quotes: within the bound when that is. A tape read where the
            // payload's nesting bound was not known (a container parsed on
            // its own) is taken within that bound only, as one read with it.
            ArgSource::Tape(tape, raw)
                if raw.get().len() - 2 * usize::from(raw.get().starts_with('"'))
                    <= self.limits.max_argument_bytes
                    && (self.limits.max_depth >= HARD_MAX_DEPTH
                        || tape.within_depth(self.limits.max_depth)) =>
            {
                let text = match self.raw_arguments {
                    RawArguments::Unwanted => String::new(),
                    RawArguments::Kept => crate::detect::node::unquote(raw.get())
                        .map_or_else(|| raw.get().to_owned(), Cow::into_owned),
                };
                (Arguments::Object(ObjectArguments::from_tape(tape)), text)
            }
            ArgSource::Tape(_, raw) => self.arguments(kind, ArgSource::Inline(raw)),
            ArgSource::Inline(raw) => {
                let text = raw.get();
                match text.as_bytes().first() {
                    Some(b'"') => match crate::detect::node::unquote(text)
                        .map_or_else(|| serde_json::from_str::<Cow<'_, str>>(text), Ok)
                    {
                        Ok(inner) => (parse_arguments(&inner, self.limits), inner.into_owned()),
                        // A `RawValue` is valid JSON, so this cannot fail;
                        // fail closed all the same.
                        Err(_) => (parse_arguments(text, self.limits), text.to_owned()),
                    },
                    Some(b'n') if text == "null" => {
                        (Arguments::Object(ObjectArguments::default()), String::new())
                    }
                    _ => (parse_arguments(text, self.limits), text.to_owned()),
                }
            }
        }
    }

    /// Record one tool result.
    pub(crate) fn result(
        &mut self,
        format: Format,
        call_id: Option<&str>,
        name: Option<&str>,
        content: Option<Raw<'_>>,
        is_error: bool,
    ) {
        self.saw(format);
        let content = content.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
        self.result_value(format, call_id, name, content, is_error);
    }

    /// Record one tool result that names its call by the tool's name (a
    /// legacy `role: function` message).
    pub(crate) fn result_by_name(
        &mut self,
        format: Format,
        name: Option<&str>,
        content: Option<Raw<'_>>,
    ) {
        self.result(format, None, name, content, false);
        if let Some(last) = self.results.last_mut() {
            last.link = Link::Name;
        }
    }

    /// Record one tool result whose content is already a value.
    pub(crate) fn result_value(
        &mut self,
        format: Format,
        call_id: Option<&str>,
        name: Option<&str>,
        content: Option<Value>,
        is_error: bool,
    ) {
        self.saw(format);
        self.last = Last::Result;
        let answers = match self.open {
            Open::Start => Answers::Earlier,
            Open::Turn(turn) => Answers::Turn(turn),
            Open::Closed => Answers::Nothing,
        };
        self.results.push(ToolResult {
            index: self.results.len(),
            call_id: call_id.map(str::to_owned),
            name: name.map(str::to_owned),
            content,
            is_error,
            format,
            turn: self.turn,
            answers,
            link: Link::of(format),
            shape: ContentShape::OfFormat,
        });
    }

    /// The result recorded last has content of `shape` (a Responses item's
    /// own).
    pub(crate) fn shape_last(&mut self, shape: ContentShape) {
        if let Some(last) = self.results.last_mut() {
            last.shape = shape;
        }
    }

    /// One object's readings, from `mark`, came from several positions
    /// (`bounds`: where each position's readings start, in order). A call
    /// (or result) that a later position repeats under the same id is one
    /// call read twice: the repeat is dropped when the readings agree; when
    /// they differ the payload is refused, since an executor may read either.
    /// A repeated result is dropped likewise.
    pub(crate) fn merge(&mut self, mark: Mark, bounds: &[(Mark, bool)]) {
        if bounds.iter().filter(|(_, repeats)| *repeats).count() < 2 {
            return;
        }
        let (drop_calls, turns) = self.repeated_calls(mark, bounds);
        let drop_results = self.repeated_results(bounds);
        if drop_calls.is_empty() && drop_results.is_empty() {
            return;
        }
        self.drop_repeats(mark, &drop_calls, &drop_results, turns);
    }

    /// The calls of later positions that repeat an earlier one (dropped),
    /// and the turns they were in, with the turn each repeats. Only
    /// positions that may repeat each other (`bounds[i].1`) are compared;
    /// calls are bounded by `max_calls`, so the scan is short.
    fn repeated_calls(
        &mut self,
        mark: Mark,
        bounds: &[(Mark, bool)],
    ) -> (Vec<usize>, Vec<(usize, usize)>) {
        let end_of = |at: usize, len: usize| bounds.get(at + 1).map_or(len, |(b, _)| b.calls);
        let mut drop_calls = Vec::new();
        let mut matched = Vec::new();
        let mut turns: Vec<(usize, usize)> = Vec::new();
        for (at, (bound, repeats)) in bounds.iter().enumerate() {
            if !repeats {
                continue;
            }
            let earlier: Vec<usize> = bounds[..at]
                .iter()
                .enumerate()
                .filter(|(_, (_, r))| *r)
                .flat_map(|(i, (b, _))| b.calls..end_of(i, self.calls.len()))
                .collect();
            for later in bound.calls..end_of(at, self.calls.len()) {
                let Some(id) = self.calls[later].id.as_deref().filter(|id| !id.is_empty()) else {
                    continue;
                };
                let same_id: Vec<usize> = earlier
                    .iter()
                    .copied()
                    .filter(|&e| {
                        e >= mark.calls
                            && !matched.contains(&e)
                            && self.calls[e].id.as_deref() == Some(id)
                    })
                    .collect();
                let Some(&first) = same_id.first() else {
                    continue;
                };
                let agreeing = same_id.iter().copied().find(|&e| {
                    let (a, b) = (&self.calls[e], &self.calls[later]);
                    a.name == b.name && a.kind == b.kind && a.arguments == b.arguments
                });
                match agreeing {
                    Some(earlier) => {
                        matched.push(earlier);
                        turns.push((self.calls[later].turn, self.calls[earlier].turn));
                    }
                    None if self.calls[first].name == self.calls[later].name => {
                        matched.push(first);
                        let message = format!(
                            "call id '{id}' is given two different arguments in one payload"
                        );
                        self.calls[first].arguments = Arguments::Invalid(ArgumentError {
                            code: ViolationCode::MalformedArguments,
                            reason: ArgumentErrorReason::Conflicting,
                            message,
                        });
                        turns.push((self.calls[later].turn, self.calls[first].turn));
                    }
                    None => {
                        self.violation(
                            ViolationCode::MalformedPayload,
                            format!("call id '{id}' names two different tools in one payload"),
                        );
                        continue;
                    }
                }
                drop_calls.push(later);
            }
        }
        (drop_calls, turns)
    }

    /// The results of later positions that repeat one of an earlier
    /// position (the same result written two ways: a Vercel step's
    /// `output: "..."` and its model message's `{type: text}`; content goes
    /// to the model, never to an executor). Results are not bounded by
    /// `max_calls`: looked up by id, in linear time.
    fn repeated_results(&mut self, bounds: &[(Mark, bool)]) -> Vec<usize> {
        let mut seen: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
        let mut drop_results = Vec::new();
        let mut clashes = Vec::new();
        for (at, (bound, repeats)) in bounds.iter().enumerate() {
            let end = bounds
                .get(at + 1)
                .map_or(self.results.len(), |(b, _)| b.results);
            if !repeats {
                continue;
            }
            let mut mine = Vec::new();
            for later in bound.results..end {
                let result = &self.results[later];
                let Some(id) = result.call_id.as_deref() else {
                    continue;
                };
                match seen.get(id) {
                    Some(&earlier) => {
                        let first = &self.results[earlier];
                        if first.name.is_some()
                            && result.name.is_some()
                            && first.name != result.name
                        {
                            clashes.push(id.to_owned());
                        }
                        drop_results.push(later);
                    }
                    None => mine.push((id, later)),
                }
            }
            // A second result within one position stays: it is a duplicate.
            for (id, at) in mine {
                seen.entry(id).or_insert(at);
            }
        }
        for id in clashes {
            self.violation(
                ViolationCode::MalformedPayload,
                format!("the results for call id '{id}' name two different tools"),
            );
        }
        drop_results
    }

    fn drop_repeats(
        &mut self,
        mark: Mark,
        drop_calls: &[usize],
        drop_results: &[usize],
        mut turns: Vec<(usize, usize)>,
    ) {
        drop_at(&mut self.calls, drop_calls);
        // A repeat is not one more call.
        self.seen -= drop_calls.len().min(self.seen);
        for (index, call) in self.calls.iter_mut().enumerate().skip(mark.calls) {
            call.index = index;
        }
        drop_at(&mut self.results, drop_results);
        for (index, result) in self.results.iter_mut().enumerate().skip(mark.results) {
            result.index = index;
        }
        // A turn whose calls were all repeats is the turn they repeat.
        turns.retain(|(dropped, _)| !self.calls.iter().any(|c| c.turn == *dropped));
        let remap = |turn: usize| {
            turns
                .iter()
                .find(|(dropped, _)| *dropped == turn)
                .map_or(turn, |(_, kept)| *kept)
        };
        for result in &mut self.results[mark.results..] {
            if let Answers::Turn(turn) = result.answers {
                result.answers = Answers::Turn(remap(turn));
            }
        }
        if let Open::Turn(turn) = self.open {
            self.open = Open::Turn(remap(turn));
        }
    }

    /// Record a violation of the payload as a whole.
    pub(crate) fn violation(&mut self, code: ViolationCode, message: impl Into<String>) {
        crate::detect::limits::list(&mut self.violations, Violation::payload(code, message));
    }

    /// The caller reports `max_calls` itself: calls past it are dropped,
    /// not reported.
    pub(crate) fn leave_limit_to_caller(&mut self) {
        self.report_limit = false;
    }

    pub(crate) fn finish(mut self, framing: Framing) -> Detection {
        // The payload's format is that of its first call or result: a message
        // list is only a container.
        let format = self
            .calls
            .first()
            .map(|c| c.format)
            .or_else(|| self.results.first().map(|r| r.format))
            .or(self.format);
        let mut violations = self.violations;
        let max = self.limits.max_calls;
        if self.seen > max {
            // Repeats of a call in another view of one object are merged by
            // now: the calls read past `max_calls` were real calls. The count
            // is exact unless calls were dropped unread (they may have been
            // repeats): then it is the calls read.
            let known = if self.dropped_unread > 0 {
                self.calls.len()
            } else {
                self.seen
            };
            let violation = if known > max {
                held_calls(self.limits, known)
            } else {
                too_many_calls(self.limits)
            };
            self.calls.truncate(max);
            let plain = too_many_calls(self.limits);
            if let Some(reported) = violations.iter_mut().find(|v| **v == plain) {
                // A stream's own report, now with the count.
                *reported = violation;
            } else if self.report_limit {
                let at = self
                    .limit_at
                    .unwrap_or(violations.len())
                    .min(violations.len());
                violations.insert(at, violation);
            }
        }
        Detection {
            format,
            framing,
            calls: self.calls,
            results: self.results,
            tools: self.tools,
            violations,
            pending: match self.open {
                Open::Turn(turn) => Some(turn),
                Open::Start | Open::Closed => None,
            },
            continues: self.continues,
            calls_seen: self.seen,
        }
    }
}

/// Remove the items at the positions `drop`, in linear time.
fn drop_at<T>(items: &mut Vec<T>, drop: &[usize]) {
    if drop.is_empty() {
        return;
    }
    let mut gone = vec![false; items.len()];
    for &at in drop {
        gone[at] = true;
    }
    let mut at = 0;
    items.retain(|_| {
        at += 1;
        !gone[at - 1]
    });
}

/// How many views of one call a payload may hold (a Vercel result's
/// `response.messages`, `steps`, `content` and `toolCalls`): calls past
/// `max_calls` are kept up to this many times the bound (at least 1), so
/// that repeats are merged before they are counted; past it they are
/// dropped unread.
const VIEWS: usize = 4;

/// The violation for a payload with more than `max_calls` calls (shared
/// with the stream assembler, which tracks calls before collecting them).
pub(crate) fn too_many_calls(limits: &Limits) -> Violation {
    Violation::payload(
        ViolationCode::InputLimitExceeded,
        format!(
            "the payload holds more than max_calls ({}) tool calls",
            limits.max_calls
        ),
    )
}

/// The violation for a payload past `max_calls` once read: how many calls
/// it holds, at least (what a reader could not read is not counted),
/// against the bound.
fn held_calls(limits: &Limits, seen: usize) -> Violation {
    let calls = if seen == 1 { "call" } else { "calls" };
    Violation::payload(
        ViolationCode::InputLimitExceeded,
        format!(
            "the payload holds at least {seen} tool {calls}, more than max_calls ({})",
            limits.max_calls
        ),
    )
}
