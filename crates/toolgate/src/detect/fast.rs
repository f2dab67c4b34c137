//! The fast path of [`node`](super::node): one pass over a document's
//! bytes into the same [`Node`]s and [`Obj`]s that serde builds, for the
//! documents real traffic sends.
//!
//! It builds a view only where the serde reader would build the very same
//! one: anything it does not take on (a syntax error, an escaped key, a
//! key given twice, a lone surrogate, a number with an exponent, nesting
//! past a bound, a value of a type a field does not take) makes it give up
//! and return `None`, and the caller reads the document again the reference
//! way, which says exactly what is wrong. So it is never more lenient than
//! the reference, only faster: `tests` and the `detect` fuzz target hold
//! both readers to the same views.

pub(crate) mod answer;
pub(crate) mod bedrock;
pub(crate) mod block;
pub(crate) mod chunk;
pub(crate) mod gemini;
pub(crate) mod item;
mod known;
pub(crate) mod vercel;

use std::borrow::Cow;

use crate::detect::cursor::{items, reads_with_cursor, Cursor};
use crate::detect::limits::MAX_ENVELOPE_DEPTH;
use crate::detect::node::{
    add_rare, decoded, spelled, variant_of, Flag, Held, IsList, Node, Obj, ObjBox, Raw, ReadAhead,
    ReadArguments, ReadInPassing, Seen, SIMPLE,
};
use crate::detect::tape::{Refused, Tape};

/// Read `text`, one whole JSON document and nothing after it, whose
/// nesting (every array and object, read or skipped) stays within
/// `max_depth`; `None` when the reference reader must decide. Its views
/// are kept in `arena` when there is one.
pub(crate) fn document<'a>(
    text: &'a str,
    arena: Option<&'a bumpalo::Bump>,
    max_depth: usize,
) -> Option<Node<'a>> {
    let mut scan = Scan::new(text, arena, max_depth);
    let node = scan.node()?;
    scan.at_end().then_some(node)
}

struct Scan<'a> {
    cursor: Cursor<'a>,
    /// Where views are kept, when not on the heap.
    arena: Option<&'a bumpalo::Bump>,
    /// Arrays and objects open here, read or skipped.
    depth: usize,
    max_depth: usize,
    /// Arrays and objects read as nodes open here.
    envelope: usize,
    /// Reading a container kept raw ahead of its reading: the bytes of
    /// views and items it may still build ([`READ_AHEAD`] a document).
    ahead: Option<usize>,
    /// A container's value failed to read for its syntax and depth alone
    /// ([`Scan::container`]): the value around it, read again, fails too.
    refused: bool,
}

/// The most a document's containers kept raw may take, in bytes of views
/// and list items, when read ahead ([`Scan::container`]): result content
/// no reader will look at as a container is never all read into views.
const READ_AHEAD: usize = 256 * 1024;

reads_with_cursor!(Scan);

/// How a known key's value is read: the type of its field in [`Obj`].
#[derive(Clone, Copy)]
enum Take {
    Text,
    Raw,
    /// Raw, a list of declarations: found again by its text when this
    /// thread read the same list before ([`known`]).
    List,
    Node,
    Seen,
    Flag,
    Bool,
    IsList,
}

/// The key table: `field: "key" => Take` for each field of [`Obj`]. Makes
/// `Field`, `field` (a key's field), `TAKES` and `store`.
macro_rules! keys {
    ($($field:ident: $key:literal => $take:ident,)*) => {
        /// A field of [`Obj`], numbered in the table's order.
        #[derive(Debug, Clone, Copy, PartialEq)]
        #[allow(non_camel_case_types)] // the fields' own names
        enum Field {
            $($field,)*
        }

        fn field(key: &str) -> Option<Field> {
            match key {
                $($key => Some(Field::$field),)*
                _ => None,
            }
        }

        /// Every key of the table.
        pub(crate) const KEYS: &[&str] = &[$($key),*];

        /// How each field's value is read, by field number.
        const TAKES: &[Take] = &[$(Take::$take),*];

        /// Store a field's value in its place.
        fn store<'a>(obj: &mut Obj<'a>, field: Field, value: Value<'a>) -> Option<()> {
            match field {
                $(Field::$field => put(&mut obj.$field, value),)*
            }
        }
    };
}

// Each key [`Obj`] reads: its field, and how its value is read (the
// field's type).
keys! {
    kind: "type" => Text,
    id: "id" => Raw,
    name: "name" => Text,
    toolName: "toolName" => Text,
    role: "role" => Text,
    object: "object" => IsList,
    messages: "messages" => Node,
    contents: "contents" => Node,
    choices: "choices" => Node,
    candidates: "candidates" => Node,
    message: "message" => Node,
    delta: "delta" => Raw,
    parts: "parts" => Node,
    steps: "steps" => Raw,
    kwargs: "kwargs" => Raw,
    additional_kwargs: "additional_kwargs" => Raw,
    tool_calls: "tool_calls" => Node,
    invalid_tool_calls: "invalid_tool_calls" => Raw,
    toolCalls: "toolCalls" => Node,
    toolInvocations: "toolInvocations" => Raw,
    function: "function" => Node,
    function_call: "function_call" => Raw,
    functionCall: "functionCall" => Node,
    toolUse: "toolUse" => Raw,
    custom: "custom" => Raw,
    toolInvocation: "toolInvocation" => Raw,
    functionResponse: "functionResponse" => Raw,
    function_response: "function_response" => Raw,
    toolResult: "toolResult" => Raw,
    content: "content" => Raw,
    output: "output" => Raw,
    input: "input" => Raw,
    response: "response" => Raw,
    result: "result" => Raw,
    data: "data" => Raw,
    arguments: "arguments" => Raw,
    params: "params" => Raw,
    parameters: "parameters" => Raw,
    args: "args" => Raw,
    action: "action" => Raw,
    error: "error" => Raw,
    call_id: "call_id" => Text,
    tool_call_id: "tool_call_id" => Text,
    tool_use_id: "tool_use_id" => Text,
    toolCallId: "toolCallId" => Text,
    approve: "approve" => Flag,
    is_error: "is_error" => Bool,
    isError: "isError" => Bool,
    status: "status" => Raw,
    state: "state" => Raw,
    partialArgs: "partialArgs" => Seen,
    willContinue: "willContinue" => Bool,
    jsonrpc: "jsonrpc" => Seen,
    method: "method" => Raw,
    tools: "tools" => List,
    model: "model" => Seen,
    system: "system" => Seen,
    inputSchema: "inputSchema" => Seen,
    input_schema: "input_schema" => Seen,
    previous_response_id: "previous_response_id" => Seen,
    conversation: "conversation" => Seen,
}

/// Whether `key` is one of the table's keys.
pub(crate) fn is_key(key: &str) -> bool {
    field(key).is_some()
}

/// Whether `field` is a container kept raw ([`Scan::container`]).
fn is_container(field: Field) -> bool {
    matches!(
        field,
        Field::content
            | Field::output
            | Field::response
            | Field::data
            | Field::delta
            | Field::steps
            | Field::kwargs
            | Field::additional_kwargs
            | Field::invalid_tool_calls
            | Field::toolInvocations
    )
}

/// Whether what the object said so far makes it a tool result, whose
/// content is read as a container by no reader: not read ahead.
fn is_result(obj: &Obj<'_>) -> bool {
    matches!(obj.role.as_deref(), Some("tool" | "function"))
        || obj.tool_call_id.is_some()
        || obj.tool_use_id.is_some()
        || matches!(
            obj.kind.as_deref().and_then(crate::detect::positions::tag),
            Some(crate::detect::positions::Tag::Result(_))
        )
}

/// What a key of an object is to this reader.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Key {
    /// A key of the table.
    Field(Field),
    /// A rare key: its row of [`RARE`](crate::detect::positions::RARE).
    Rare(u8),
    /// Another spelling of a key toolgate reads ([`variant_of`]): the
    /// reference reader's to refuse.
    Variant,
    /// Any other key (a stream decoder's keys among them): skipped.
    Other,
    /// The key of the caller's list (see [`Scan::entries`]) at this place
    /// in it, as written there: no key of the table.
    Own(u8),
}

/// What `key` is (a key as written, unescaped: so it holds no NUL): the
/// table's own keys matched first, then [`spelled`] (the known keys of the
/// key's signature) says whether it is another spelling of a key toolgate
/// reads, or one it reads that the table does not (rare, or a stream
/// decoder's); [`variant_of`] judges a key that is not ASCII.
// Inlined into the object loop: measured (bench/profile_check.sh), a call
// for each key cost more than the lookup.
#[allow(clippy::inline_always)]
#[inline(always)]
fn look_up(key: &str) -> Key {
    // Most keys are the table's, spelled as it spells them.
    if let Some(field) = field(key) {
        return Key::Field(field);
    }
    // Most others are keys every answer, request or event of some API
    // holds beside what is read: known as written, with no search.
    if is_common(key) {
        return Key::Other;
    }
    match spelled(key.as_bytes()) {
        Some(known) if known != key => Key::Variant,
        Some(_) => crate::detect::positions::rare_row(key).map_or(Key::Other, Key::Rare),
        None if !key.is_ascii() && variant_of(key).is_some() => Key::Variant,
        None => Key::Other,
    }
}

/// Keys of no table that the APIs' answers, requests and events hold
/// most often (the usage, the finish, the sampling settings, a stream's
/// positions, a schema's keywords), each spelled as the APIs spell it:
/// what [`look_up`] would find after its search ([`Key::Other`]: no rare
/// key, no other spelling of a key toolgate reads, as a test asserts),
/// found by one `match` (a test of the length and a comparison or two). An
/// OpenAI answer holds six (`service_tier`, `index`, `logprobs`,
/// `finish_reason`, `refusal`, `annotations`).
macro_rules! common_keys {
    ($($key:literal),* $(,)?) => {
        /// The keys [`is_common`] knows.
        #[cfg(test)]
        const COMMON: &[&str] = &[$($key),*];

        fn is_common(key: &str) -> bool {
            matches!(key, $($key)|*)
        }
    };
}

common_keys![
    "additionalProperties",
    "annotations",
    "audio_tokens",
    "avgLogprobs",
    "cached_tokens",
    "candidatesTokenCount",
    "completion_tokens",
    "completion_tokens_details",
    "contentBlockIndex",
    "createTime",
    "created",
    "created_at",
    "description",
    "finishReason",
    "finish_reason",
    "index",
    "input_tokens",
    "inputTokens",
    "instructions",
    "item_id",
    "latencyMs",
    "logprobs",
    "max_output_tokens",
    "max_tokens",
    "metrics",
    "modelVersion",
    "obfuscation",
    "output_index",
    "output_tokens",
    "outputTokens",
    "parallel_tool_calls",
    "promptTokenCount",
    "prompt_tokens",
    "prompt_tokens_details",
    "properties",
    "reasoning_tokens",
    "refusal",
    "required",
    "responseId",
    "safetyRatings",
    "sequence_number",
    "service_tier",
    "stopReason",
    "stop_reason",
    "stop_sequence",
    "strict",
    "system_fingerprint",
    "temperature",
    "thoughtSignature",
    "tool_choice",
    "top_p",
    "totalTokenCount",
    "totalTokens",
    "total_tokens",
    "trafficType",
    "usage",
    "usageMetadata",
];

/// What [`Scan::in_passing`] read of arguments in passing.
enum InPassing {
    /// Nothing: the value was read as its field takes it.
    AsTaken,
    /// What the view then holds in passing: the arguments' tape, a
    /// string's decoded text, or nothing (a string with no escape).
    Read(Option<ReadArguments>),
}

/// A field's value as read, before it is stored.
enum Value<'a> {
    Null,
    Text(Cow<'a, str>),
    Raw(Raw<'a>),
    Node(Node<'a>),
    Seen,
    Flag(Flag),
    Bool(bool),
    IsList(bool),
}

impl<'a> Scan<'a> {
    /// A reader of `text` from its start, within `max_depth`, its views
    /// kept in `arena` when there is one.
    fn new(text: &'a str, arena: Option<&'a bumpalo::Bump>, max_depth: usize) -> Scan<'a> {
        Scan {
            cursor: Cursor::new(text),
            arena,
            depth: 0,
            max_depth,
            envelope: 0,
            ahead: None,
            refused: false,
        }
    }

    /// A reader of the value at `start`, read on its own as a raw value is
    /// ([`parse_node`](crate::detect::node::parse_node)): from a nesting of
    /// 0, within what is left of this reader's bound.
    fn ahead_of(&self, start: usize) -> Scan<'a> {
        Scan::new(&self.text[start..], self.arena, self.max_depth - self.depth)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.space();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn open(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= self.max_depth).then_some(())
    }

    /// Any value as a node.
    fn node(&mut self) -> Option<Node<'a>> {
        self.space();
        match self.peek()? {
            b'{' => {
                self.enter()?;
                let obj = self.object()?;
                self.envelope -= 1;
                Some(Node::Object(obj))
            }
            b'[' => {
                self.enter()?;
                let list = self.list()?;
                self.envelope -= 1;
                Some(Node::List(list))
            }
            b'"' => {
                self.string()?;
                Some(Node::Text)
            }
            b'n' => self.literal("null").map(|()| Node::Null),
            b't' => self.literal("true").map(|()| Node::Scalar),
            b'f' => self.literal("false").map(|()| Node::Scalar),
            _ => self.scalar_number().map(|()| Node::Scalar),
        }
    }

    /// A number the reference reads as a number (a float past 64 bits,
    /// refused when out of range): one that may be out of range (an
    /// exponent, a long integral part) is its to judge.
    fn scalar_number(&mut self) -> Option<()> {
        let number = self.number()?;
        (!number.exponent && number.integral.len() <= 20).then_some(())
    }

    /// Any value read as the reference reads "any value" for a flag: a
    /// number as a number, the rest for its syntax.
    fn any(&mut self) -> Option<()> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.scalar_number(),
            _ => self.skip(),
        }
    }

    fn enter(&mut self) -> Option<()> {
        if self.envelope >= MAX_ENVELOPE_DEPTH {
            return None;
        }
        self.envelope += 1;
        Some(())
    }

    fn list(&mut self) -> Option<Vec<Node<'a>>> {
        self.open()?;
        self.at += 1;
        let mut list = Vec::new();
        items(self, b']', |scan| {
            scan.spend(std::mem::size_of::<Node<'_>>())?;
            list.push(scan.node()?);
            Some(())
        })?;
        self.depth -= 1;
        Some(list)
    }

    fn object(&mut self) -> Option<ObjBox<'a>> {
        // Made at the first key of the table: an object with none takes no
        // memory of its own.
        let mut made: Option<Held<'a>> = None;
        self.entries(&[], |scan, key, _| {
            let field = match key {
                Key::Field(field) => field,
                Key::Rare(row) => {
                    scan.space();
                    let start = scan.at;
                    scan.skip()?;
                    let raw = Raw::checked(&scan.text[start..scan.at]);
                    let obj = scan.view(&mut made)?;
                    // A key given twice is refused, as serde does.
                    return add_rare(&mut obj.rare_keys, row, raw).then_some(());
                }
                Key::Other | Key::Own(_) => return scan.skip(),
                // Another spelling of a key is the reference reader's to
                // refuse.
                Key::Variant => return None,
            };
            let obj = scan.view(&mut made)?;
            let value = match field {
                Field::arguments | Field::input | Field::args => scan.arguments(field, obj)?,
                _ if is_container(field) => scan.container(field, obj)?,
                _ => scan.value(TAKES[field as usize])?,
            };
            store(obj, field, value)
        })?;
        Some(ObjBox::new(made))
    }

    /// The entries of the object at the cursor (at its brace): `entry`
    /// reads each entry's value (its colon read), told what its key is
    /// and how it is written; a key of `own` is [`Key::Own`]. A
    /// key of the table given twice is refused, as serde does, and an
    /// escaped key is the reference reader's.
    // Inlined into each reader of objects: the key's reading is the
    // envelope's hottest loop.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn entries(
        &mut self,
        own: &[&str],
        mut entry: impl FnMut(&mut Self, Key, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.open()?;
        self.at += 1;
        let mut seen = 0u128;
        items(self, b'}', |scan| {
            let (key, escaped) = scan.string()?;
            if escaped {
                return None;
            }
            scan.eat(b':')?;
            let text = key;
            // A short path's own keys are known as written, with no
            // lookup (none is a key of the table, nor another spelling).
            let key = match own.iter().position(|own| *own == key) {
                Some(at) => Key::Own(u8::try_from(at).ok()?),
                None => look_up(key),
            };
            if let Key::Field(field) = key {
                let bit = 1u128 << field as u8;
                if seen & bit != 0 {
                    return None;
                }
                seen |= bit;
            }
            entry(scan, key, text)
        })?;
        self.depth -= 1;
        Some(())
    }

    /// The value of `field`, an argument key, its arguments read in
    /// passing into `read`: onto their tape, rather than skipped here and
    /// read again when their call is. An `arguments` string is read
    /// straight from the string as written (JSON text dense with escaped
    /// quotes), or else decoded here; an object is read where it stands,
    /// within the document's nesting bound. Any other value is read as the
    /// field takes it.
    fn arguments(&mut self, field: Field, obj: &mut Obj<'a>) -> Option<Value<'a>> {
        self.space();
        // A Responses request's `input` list: its conversation.
        if matches!(field, Field::input) && self.peek()? == b'[' {
            return self.container(field, obj);
        }
        let (value, read) = self.in_passing(field)?;
        if let InPassing::Read(read) = read {
            obj.arguments_read = ReadInPassing::new(read);
        }
        Some(value)
    }

    /// The value of `field`, an argument key, at the cursor (an `input`
    /// list aside), and what was read of its arguments in passing.
    fn in_passing(&mut self, field: Field) -> Option<(Value<'a>, InPassing)> {
        let start = self.at;
        let tape = match self.peek()? {
            b'"' if matches!(field, Field::arguments) => {
                Tape::read_quoted(&self.text[start..], self.max_depth)
            }
            b'{' => Tape::read_object(
                &self.text[start..],
                self.max_depth,
                self.max_depth - self.depth,
            ),
            _ => return Some((self.value(TAKES[field as usize])?, InPassing::AsTaken)),
        };
        let key = KEYS[field as usize];
        let refused = match tape {
            Ok((tape, used)) => {
                self.at += used;
                let read = ReadArguments::tape(key, tape);
                let raw = Raw::checked(&self.text[start..self.at]);
                return Some((Value::Raw(raw), InPassing::Read(read)));
            }
            Err(refused) => refused,
        };
        // A key given twice: the strict reader says so, and the tape's
        // reader is not tried again.
        let twin = refused == Refused::Twin;
        if self.peek()? != b'"' {
            let value = self.value(TAKES[field as usize])?;
            let read = match value {
                Value::Raw(_) if twin => InPassing::Read(ReadArguments::twin(key, None)),
                _ => InPassing::AsTaken,
            };
            return Some((value, read));
        }
        let (raw, text) = self.decoded_string()?;
        let read = if twin {
            ReadArguments::twin(key, text)
        } else {
            text.map(ReadArguments::Text)
        };
        Some((Value::Raw(raw), InPassing::Read(read)))
    }

    /// The value of `field`, a container kept raw (it may be arguments or
    /// a result's content too), read ahead into its node when it is an
    /// array or an object that may hold calls: the first reading of the
    /// raw value reads the node ([`ReadAhead`]) rather than parse it
    /// again. Read as [`parse_node`] would: from a nesting of 0
    /// (within what is left of the document's bound) and an envelope of
    /// its own. When that reading gives up or the document's allowance
    /// for reading ahead ([`READ_AHEAD`]) runs out, the value is skipped
    /// here, as it was before, and nothing more is read ahead; when the
    /// value fails to read for its syntax and depth alone, so does every
    /// container around it, which is then not read again.
    ///
    /// [`parse_node`]: crate::detect::node::parse_node
    fn container(&mut self, field: Field, obj: &mut Obj<'a>) -> Option<Value<'a>> {
        self.space();
        let start = self.at;
        #[cfg(debug_assertions)]
        let first = self.ahead.is_none();
        let allowance = self.ahead.unwrap_or(READ_AHEAD);
        if allowance > 0
            && matches!(self.peek()?, b'[' | b'{')
            && obj.read_ahead.is_empty()
            && !is_result(obj)
        {
            let mut ahead = Scan {
                ahead: Some(allowance),
                ..self.ahead_of(start)
            };
            let node = ahead.node();
            self.ahead = Some(ahead.ahead.unwrap_or(0));
            if let Some(node) = node {
                self.at = start + ahead.at;
                let raw = Raw::checked(&self.text[start..self.at]);
                #[cfg(debug_assertions)]
                if first {
                    check_read_ahead(raw, &node);
                }
                obj.read_ahead = ReadAhead::new(raw, node);
                return Some(Value::Raw(raw));
            }
            // What a container within failed to read for its syntax fails
            // here too: not read again at each level around it.
            if ahead.refused {
                self.refused = true;
                return None;
            }
            self.ahead = Some(0);
        }
        let value = self.value(TAKES[field as usize]);
        self.refused |= value.is_none();
        value
    }

    /// The view of the object being read, made at its first key of the
    /// table: read ahead, its bytes count against the allowance. `None`
    /// past [`MAX_ENVELOPE_OBJECTS`](crate::detect::limits::MAX_ENVELOPE_OBJECTS)
    /// views, which the reference reader then reports.
    fn view<'v>(&mut self, made: &'v mut Option<Held<'a>>) -> Option<&'v mut Obj<'a>> {
        if made.is_none() {
            self.spend(std::mem::size_of::<Obj<'_>>())?;
            *made = Some(Held::new(self.arena)?);
        }
        made.as_deref_mut()
    }

    /// Spend `bytes` of the allowance for reading ahead, when reading
    /// ahead; `None` when it is spent.
    fn spend(&mut self, bytes: usize) -> Option<()> {
        if let Some(left) = &mut self.ahead {
            *left = left.checked_sub(bytes)?;
        }
        Some(())
    }

    /// A known key's value, as its field takes it.
    fn value(&mut self, take: Take) -> Option<Value<'a>> {
        self.space();
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(match take {
                Take::IsList => Value::IsList(false),
                _ => Value::Null,
            });
        }
        match take {
            Take::Text => {
                if self.peek()? != b'"' {
                    return None;
                }
                let start = self.at;
                let (text, escaped) = self.string()?;
                if escaped {
                    let decoded: String = serde_json::from_str(&self.text[start..self.at]).ok()?;
                    Some(Value::Text(Cow::Owned(decoded)))
                } else {
                    Some(Value::Text(Cow::Borrowed(text)))
                }
            }
            Take::Raw => {
                let start = self.at;
                self.skip()?;
                Some(Value::Raw(Raw::checked(&self.text[start..self.at])))
            }
            Take::List => {
                let start = self.at;
                let room = self.max_depth.saturating_sub(self.depth);
                if let Some(len) = known::find(&self.bytes[start..], room) {
                    self.at += len;
                } else {
                    self.skip()?;
                    known::keep(&self.text[start..self.at], room);
                }
                Some(Value::Raw(Raw::checked(&self.text[start..self.at])))
            }
            Take::Node => self.node().map(Value::Node),
            Take::Seen => self.skip().map(|()| Value::Seen),
            Take::Flag => {
                let flag = match self.peek()? {
                    b't' => self.literal("true").map(|()| Flag::True)?,
                    b'f' => self.literal("false").map(|()| Flag::False)?,
                    _ => self.any().map(|()| Flag::Other)?,
                };
                Some(Value::Flag(flag))
            }
            Take::Bool => match self.peek()? {
                b't' => self.literal("true").map(|()| Value::Bool(true)),
                b'f' => self.literal("false").map(|()| Value::Bool(false)),
                _ => None,
            },
            Take::IsList => {
                if self.peek()? == b'"' {
                    let (text, escaped) = self.string()?;
                    return (!escaped).then_some(Value::IsList(text == "list"));
                }
                self.any().map(|()| Value::IsList(false))
            }
        }
    }

    /// Any value, read for its syntax and depth only.
    fn skip(&mut self) -> Option<()> {
        #[cfg(test)]
        SKIPPED.with(|skipped| skipped.set(skipped.get() + 1));
        self.space();
        match self.peek()? {
            b'{' => {
                self.open()?;
                self.at += 1;
                items(self, b'}', |scan| {
                    scan.string()?;
                    scan.eat(b':')?;
                    scan.skip()
                })?;
                self.depth -= 1;
                Some(())
            }
            b'[' => {
                self.open()?;
                self.at += 1;
                items(self, b']', Scan::skip)?;
                self.depth -= 1;
                Some(())
            }
            b'"' => self.string().map(|_| ()),
            b'n' => self.literal("null"),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            _ => self.number().map(|_| ()),
        }
    }

    /// A string at the cursor: its text between the quotes, as written,
    /// and whether it holds escapes. Control characters, bad escapes and
    /// surrogate escapes are the reference's to judge.
    // Inlined where keys and values are read: measured
    // (bench/profile_check.sh), a call for each string cost a tenth of the
    // envelope's instructions.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn string(&mut self) -> Option<(&'a str, bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let end = start + special(self.bytes.get(start..)?)?;
        if self.bytes[end] != b'"' {
            return self.escaped_string(start, end);
        }
        // Both ends are quotes: the slice is on character boundaries.
        let text = self.text.get(start..end)?;
        self.at = end + 1;
        Some((text, false))
    }

    /// The rest of [`string`](Self::string) from `at`, the first special
    /// byte of the string starting at `start` that is not its closing
    /// quote: out of line, so that plain strings (most keys and values)
    /// take the short path above.
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, at: usize) -> Option<(&'a str, bool)> {
        self.at = at;
        loop {
            match self.bytes[self.at] {
                b'"' => break,
                b'\\' => self.escape()?,
                _ => return None,
            }
            self.at += special(&self.bytes[self.at..])?;
        }
        let text = self.text.get(start..self.at)?;
        self.at += 1;
        Some((text, true))
    }

    /// A string at the cursor, as written and, when it holds escapes,
    /// decoded. Control characters and lone surrogate escapes are the
    /// reference's to judge.
    fn decoded_string(&mut self) -> Option<(Raw<'a>, Option<Box<str>>)> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at;
        let body = self.bytes.get(start + 1..)?;
        let first = special(body)?;
        let decoded = if body[first] == b'"' {
            self.at = start + first + 2;
            None
        } else {
            let (end, text) = decoded(body)?;
            let text = text.into_boxed_str();
            self.at = start + end + 2;
            Some(text)
        };
        let raw = Raw::checked(self.text.get(start..self.at)?);
        debug_assert_eq!(
            decoded.as_deref(),
            decoded
                .as_ref()
                .and(crate::detect::node::unquote(raw.get()))
                .as_deref()
        );
        Some((raw, decoded))
    }

    fn escape(&mut self) -> Option<()> {
        match *self.bytes.get(self.at + 1)? {
            next if SIMPLE[usize::from(next)] != 0 => {
                self.at += 2;
                Some(())
            }
            b'u' => {
                let hex = self.text.get(self.at + 2..self.at + 6)?;
                let unit = u16::from_str_radix(hex, 16).ok()?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) || (0xD800..0xE000).contains(&unit) {
                    return None;
                }
                self.at += 6;
                Some(())
            }
            _ => None,
        }
    }
}

#[cfg(debug_assertions)]
thread_local! {
    /// How many checks of containers read ahead are reading their values
    /// again on this thread ([`check_read_ahead`]).
    static CHECKING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Debug builds (the tests, the fuzz targets): a container read ahead is
/// the node its raw value reads as. Checked for the outermost container
/// read ahead of a document; reading the value again checks the
/// containers it holds in turn, four levels down at most, so that a chain
/// of nested containers costs a few readings, not one a level.
#[cfg(debug_assertions)]
fn check_read_ahead(raw: Raw<'_>, node: &Node<'_>) {
    const LEVELS: usize = 4;
    let levels = CHECKING.with(std::cell::Cell::get);
    if levels >= LEVELS {
        return;
    }
    CHECKING.with(|checking| checking.set(levels + 1));
    let parsed = crate::detect::node::parse_node(raw);
    CHECKING.with(|checking| checking.set(levels));
    // Read again while the document's views are alive, its own views
    // count twice: near the bound the second reading may be refused.
    if parsed.as_ref().is_err_and(|err| {
        err.to_string()
            .starts_with(crate::detect::limits::TOO_MANY_OBJECTS)
    }) {
        return;
    }
    assert!(
        parsed.is_ok_and(|parsed| format!("{parsed:?}") == format!("{node:?}")),
        "a container read ahead is read as its raw value reads: {}",
        raw.get()
    );
}

#[cfg(test)]
thread_local! {
    /// How many values [`Scan::skip`] was asked to read on this thread.
    static SKIPPED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Where the first quote, backslash or control character of `bytes` is;
/// `None` when there is none. Sixteen bytes at a time, then eight.
#[allow(clippy::inline_always)] // (as `Scan::string`, which it serves)
#[inline(always)]
pub(crate) fn special(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 16) {
        let found = special_mask16(chunk.try_into().ok()?);
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize);
        }
        at += 16;
    }
    if let Some(chunk) = bytes.get(at..at + 8) {
        let found = special_mask(chunk.try_into().ok()?);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| is_special(b))
        .map(|end| at + end)
}

/// Sixteen bytes' special ones ([`is_special`]), a bit a byte (the
/// first byte's the lowest): three comparisons of the sixteen at once.
#[inline]
pub(crate) fn special_mask16(chunk: [u8; 16]) -> u32 {
    use wide::u8x16;
    let bytes = u8x16::new(chunk);
    let quote = bytes.simd_eq(u8x16::splat(b'"'));
    let slash = bytes.simd_eq(u8x16::splat(b'\\'));
    // A control character is one that the least of it and 0x1F is.
    let control = bytes.min(u8x16::splat(0x1F)).simd_eq(bytes);
    (quote | slash | control).to_bitmask()
}

/// Where the string whose text `bytes` start ends (its opening quote
/// read; `escaped`: a backslash at the end of the last chunk escapes the
/// first byte), eight bytes at a time: `Ok` with the length up to and
/// including its closing quote, or `Err` when it goes on past `bytes`,
/// with whether a backslash at their end escapes the next byte.
#[inline]
pub(crate) fn string_end(bytes: &[u8], escaped: bool) -> Result<usize, bool> {
    let mut at = usize::from(escaped);
    while let Some(found) = bytes.get(at..).and_then(special) {
        at += found;
        match bytes[at] {
            b'"' => return Ok(at + 1),
            b'\\' if at + 1 == bytes.len() => return Err(true),
            b'\\' => at += 2,
            // A control character: the parser's to judge.
            _ => at += 1,
        }
    }
    Err(false)
}

/// Whether a string's byte ends a run of plain text: a quote, a backslash
/// or a control character.
pub(crate) fn is_special(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// Eight bytes' special ones ([`is_special`]): the high bit of the lowest
/// one's byte is the lowest bit set (bytes above it may be marked wrongly).
pub(crate) fn special_mask(chunk: [u8; 8]) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let word = u64::from_le_bytes(chunk);
    let quote = word ^ (ONES * u64::from(b'"'));
    let slash = word ^ (ONES * u64::from(b'\\'));
    let zero = |w: u64| w.wrapping_sub(ONES) & !w;
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (zero(quote) | zero(slash) | control) & HIGH
}

/// A value into a field of the matching type; `None` on a mismatch (a
/// table error, which the tests catch).
trait Put<'a>: Sized {
    fn put(value: Value<'a>) -> Option<Self>;
}

fn put<'a, T: Put<'a>>(slot: &mut T, value: Value<'a>) -> Option<()> {
    *slot = T::put(value)?;
    Some(())
}

impl<'a, T: Put<'a>> Put<'a> for Option<T> {
    fn put(value: Value<'a>) -> Option<Self> {
        match value {
            Value::Null => Some(None),
            other => T::put(other).map(Some),
        }
    }
}

impl<'a> Put<'a> for Cow<'a, str> {
    fn put(value: Value<'a>) -> Option<Self> {
        match value {
            Value::Text(text) => Some(text),
            _ => None,
        }
    }
}

impl<'a> Put<'a> for Raw<'a> {
    fn put(value: Value<'a>) -> Option<Self> {
        match value {
            Value::Raw(raw) => Some(raw),
            _ => None,
        }
    }
}

impl<'a> Put<'a> for Node<'a> {
    fn put(value: Value<'a>) -> Option<Self> {
        match value {
            Value::Node(node) => Some(node),
            _ => None,
        }
    }
}

impl<'a> Put<'a> for Seen {
    fn put(value: Value<'a>) -> Option<Self> {
        matches!(value, Value::Seen).then_some(Seen)
    }
}

impl<'a> Put<'a> for Flag {
    fn put(value: Value<'a>) -> Option<Self> {
        match value {
            Value::Flag(flag) => Some(flag),
            _ => None,
        }
    }
}

impl<'a> Put<'a> for bool {
    fn put(value: Value<'a>) -> Option<Self> {
        match value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
}

impl<'a> Put<'a> for IsList {
    fn put(value: Value<'a>) -> Option<Self> {
        match value {
            Value::IsList(list) => Some(IsList(list)),
            _ => None,
        }
    }
}

/// For the tests and the `detect` fuzz target: read `text` both ways
/// within `max_depth`. `Ok(true)` when the fast path took it and built the
/// reference's very view, `Ok(false)` when it gave up; `Err` says how the
/// two disagree (the fast path took what the reference refuses, or built
/// another view).
#[doc(hidden)]
pub fn agrees(text: &str, max_depth: usize) -> Result<bool, String> {
    use serde::Deserialize;
    let limits = crate::detect::Limits {
        max_depth,
        ..crate::detect::Limits::default()
    };
    let reference = if crate::detect::limits::too_deep(text.as_bytes(), &limits, "it").is_some() {
        Err("too deep".to_owned())
    } else {
        let mut de = serde_json::Deserializer::from_str(text);
        Node::deserialize(&mut de)
            .and_then(|node| de.end().map(|()| node))
            .map(|node| format!("{node:?}"))
            .map_err(|err| err.to_string())
    };
    let arena = bumpalo::Bump::new();
    let Some(fast) = document(
        text,
        Some(&arena),
        max_depth.min(crate::detect::limits::HARD_MAX_DEPTH),
    ) else {
        return Ok(false);
    };
    let fast = format!("{fast:?}");
    match reference {
        Ok(view) if view == fast => Ok(true),
        Ok(view) => Err(format!("the fast path read {fast}, the reference {view}")),
        Err(err) => Err(format!(
            "the fast path read {fast}, the reference refused: {err}"
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::agrees;

    proptest::proptest! {
        /// The first quote, backslash or control character, found
        /// sixteen and eight bytes at a time, is the one a byte at a time
        /// finds, wherever it is and whatever is around it (bytes past
        /// ASCII too).
        #[test]
        fn special_finds_the_first_special_byte(
            plain in proptest::collection::vec(
                proptest::prop_oneof![0x20_u8..0x7F, 0x80_u8..=0xFF],
                0..80,
            ),
            special in proptest::option::of((
                0_usize..80,
                proptest::prop_oneof![
                    proptest::strategy::Just(b'"'),
                    proptest::strategy::Just(b'\\'),
                    0_u8..0x20,
                ],
            )),
        ) {
            let mut bytes = plain;
            if let Some((at, byte)) = special {
                bytes.insert(at.min(bytes.len()), byte);
            }
            proptest::prop_assert_eq!(
                super::special(&bytes),
                bytes.iter().position(|&b| super::is_special(b)),
                "{:?}",
                bytes
            );
        }
    }

    /// Every document under `tests/fixtures` and `tests/conformance` (whole
    /// files, JSON lines and `data:` lines), and what those documents
    /// become when cut short, when a byte is changed, and when keys are
    /// given twice or escaped.
    pub(crate) fn corpus() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
        let mut files = Vec::new();
        let mut dirs = vec![root.join("fixtures"), root.join("conformance")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("tests dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    files.push(std::fs::read_to_string(&path).unwrap_or_default());
                }
            }
        }
        let mut docs = Vec::new();
        for text in files {
            docs.push(text.clone());
            for line in text.lines() {
                let line = line.strip_prefix("data:").unwrap_or(line).trim();
                if line.starts_with(['{', '[']) {
                    docs.push(line.to_owned());
                }
                // YAML cases quote their payloads as strings of JSON.
                if let Ok(inner) =
                    serde_json::from_str::<String>(line.trim_start_matches("payload: "))
                {
                    docs.push(inner);
                }
            }
        }
        docs
    }

    pub(crate) fn variants(doc: &str) -> Vec<String> {
        let mut out = vec![
            doc.replacen("\"name\"", "\"name\":1,\"name\"", 1),
            doc.replacen("\"type\"", "\"ty\\u0070e\"", 1),
            doc.replacen("\"id\"", "\"id\":null,\"id\"", 1),
            doc.replacen(':', ":1e400,\"x\":", 1),
            doc.replacen(':', ": 12345678901234567890123,\"x\":", 1),
            doc.replacen("\"role\":", "\"role\":7,\"r\":", 1),
            doc.replacen("\"is_error\":", "\"is_error\":\"yes\",\"y\":", 1),
            doc.replacen('"', "\"\\ud800", 1),
            doc.replacen('"', "\"\u{1}", 1),
            doc.replacen(',', ",,", 1),
            doc.replacen('}', ",}", 1),
            format!("{doc} {doc}"),
        ];
        let step = (doc.len() / 24).max(1);
        for cut in (0..doc.len()).step_by(step) {
            if doc.is_char_boundary(cut) {
                out.push(doc[..cut].to_owned());
                let mut changed = doc.to_owned();
                if doc.as_bytes()[cut].is_ascii() && doc.is_char_boundary(cut + 1) {
                    changed.replace_range(cut..=cut, "]");
                    out.push(changed);
                }
            }
        }
        out
    }

    #[test]
    fn the_fast_path_reads_what_the_reference_reads_or_gives_up() {
        let mut taken = 0;
        let mut documents = 0;
        for doc in corpus() {
            for text in std::iter::once(doc.clone()).chain(variants(&doc)) {
                for max_depth in [128, 4] {
                    match agrees(&text, max_depth) {
                        Ok(fast) => taken += usize::from(fast),
                        Err(why) => panic!("{text}: {why}"),
                    }
                }
            }
            documents += 1;
        }
        assert!(documents > 100, "{documents} documents");
        assert!(
            taken > documents,
            "the fast path took {taken} of {documents}"
        );
    }

    /// One look says what a key is, as the table, the rare keys and
    /// [`variant_of`] each say it: for every key toolgate reads, each in
    /// other cases, with `ſ` or `K` for `s` or `k`, cut short and made
    /// longer, and for keys it does not read. (A key with a NUL is
    /// written escaped, which the fast reader leaves to the reference.)
    #[test]
    fn a_key_is_looked_up_as_each_table_says() {
        use super::{field, is_common, look_up, Key, COMMON, KEYS};
        use crate::detect::node::{spelled, variant_of};
        use crate::detect::positions::{rare_row, RARE, STREAM_KEYS};
        let known: Vec<&str> = KEYS
            .iter()
            .chain(RARE)
            .chain(STREAM_KEYS)
            .copied()
            .collect();
        for (i, a) in known.iter().enumerate() {
            for b in &known[i + 1..] {
                assert!(
                    !a.eq_ignore_ascii_case(b),
                    "{a} and {b} differ only in case"
                );
            }
        }
        let mut keys: Vec<String> = vec![String::new(), "x".into(), "usage".into(), "é".into()];
        for key in known.iter().chain(COMMON) {
            keys.extend([
                (*key).to_owned(),
                key.to_uppercase(),
                key.to_lowercase(),
                key.replace('s', "\u{17f}").replace('k', "\u{212a}"),
                key[1..].to_owned(),
                format!("{key}s"),
                format!("_{key}"),
            ]);
        }
        for key in keys {
            let expected = if let Some(field) = field(&key) {
                Key::Field(field)
            } else if let Some(row) = rare_row(&key) {
                Key::Rare(row)
            } else if variant_of(&key).is_some()
                || spelled(key.as_bytes()).is_some_and(|known| known != key)
            {
                Key::Variant
            } else {
                Key::Other
            };
            assert_eq!(look_up(&key), expected, "{key:?}");
            assert_eq!(is_common(&key), COMMON.contains(&key.as_str()), "{key:?}");
        }
        for key in COMMON {
            assert_eq!(look_up(key), Key::Other, "{key}");
            assert!(field(key).is_none(), "{key} is the table's");
        }
    }

    /// The containers read ahead are the position table's containers the
    /// view keeps raw, but `input` (read as arguments when an object, and
    /// ahead when a list, by the arguments' reader).
    #[test]
    fn containers_read_ahead_are_the_tables_kept_raw() {
        use super::{field, is_container, Take, TAKES};
        use crate::detect::positions::CONTAINERS;
        for container in CONTAINERS {
            let field = field(container.key).expect("a container is a key of the view");
            let raw = matches!(TAKES[field as usize], Take::Raw | Take::List);
            assert_eq!(
                is_container(field),
                raw && container.key != "input",
                "{}",
                container.key
            );
        }
    }

    /// A container kept raw is read ahead into the node its readers
    /// would parse (a debug assertion in `Scan::container` checks it on
    /// every document of the tests), unless a tool result holds it; past
    /// the document's allowance it is skipped and parsed when read.
    #[test]
    fn containers_kept_raw_are_read_ahead_within_an_allowance() {
        use super::{document, Node, READ_AHEAD};
        let read_ahead = |text: &str| {
            let Some(Node::Object(root)) = document(text, None, 128) else {
                panic!("{text}");
            };
            let raw = root.content.expect("content");
            root.read_ahead.node(raw).is_some()
        };
        let block = r#"{"type":"tool_use","id":"t","name":"f","input":{"q":[1]}}"#;
        let answer = format!(r#"{{"type":"message","role":"assistant","content":[{block}]}}"#);
        assert!(read_ahead(&answer));
        assert!(read_ahead(&format!(
            r#"{{"role":"assistant","content":{block}}}"#
        )));
        for result in [
            r#"{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x"}]}"#,
            r#"{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}"#,
        ] {
            assert!(!read_ahead(result), "{result}");
        }
        let views = READ_AHEAD / std::mem::size_of::<super::Obj<'_>>() + 1;
        let many = format!(
            r#"{{"role":"assistant","content":[{}]}}"#,
            vec![block; views].join(",")
        );
        assert!(!read_ahead(&many));
        assert_eq!(agrees(&many, 128), Ok(true));
        let fewer = format!(
            r#"{{"role":"assistant","content":[{}]}}"#,
            vec![block; views / 2].join(",")
        );
        assert!(read_ahead(&fewer));
    }

    /// A document the fast reader refuses deep inside containers read
    /// ahead one within another is read once to where it fails, not once
    /// for each container around the failure: each container's value is
    /// read for its syntax at most twice.
    #[test]
    fn containers_read_ahead_that_fail_are_not_read_again_for_each_level() {
        use super::{document, SKIPPED};
        let items = vec!["\"a\""; 1000].join(",");
        for levels in [1usize, 10, 100] {
            let text = format!(
                "{}[{items}x]{}",
                "{\"content\":".repeat(levels),
                "}".repeat(levels)
            );
            SKIPPED.with(|skipped| skipped.set(0));
            assert!(document(&text, None, 128).is_none());
            let skipped = SKIPPED.with(std::cell::Cell::get);
            assert!(
                skipped <= 2 * (levels + 1000),
                "{levels} levels: {skipped} values skipped"
            );
        }
    }

    #[test]
    fn real_payloads_take_the_fast_path() {
        let shapes = [
            r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":\"\\u00e9\\n\"}"}}]}}],"usage":{"total_tokens":12}}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"f","input":{"x":[1,2.5,-3,true,null]}}]}"#,
            r#"[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"c1","content":"ok"}]"#,
            r#"{"object":"list","data":[],"is_error":false,"approve":true}"#,
        ];
        for text in shapes {
            assert_eq!(agrees(text, 128), Ok(true), "{text}");
        }
    }
}
