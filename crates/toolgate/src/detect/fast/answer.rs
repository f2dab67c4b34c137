//! A model's answer read on a short path: an OpenAI Chat Completions
//! response, an Anthropic Messages response, a Gemini `generateContent`
//! answer or a Bedrock Converse answer whose objects hold only the keys
//! such an answer holds, read straight into its calls, with no view of
//! any object and no walk of the position table.
//!
//! The general readers build a view of every object that holds a key of
//! the table ([`Obj`](crate::detect::node::Obj), about 1 KiB) and then
//! walk them against the whole table ([`document`](crate::detect::document)).
//! For an answer of these two shapes, what that walk tells the collector
//! is known in advance; [`Answer::record`] tells it the same, in the same
//! order. The shapes are narrow on purpose: at every level, a key of the
//! table this module does not name (but for a `null`, which both general
//! readers read as no key at all), a rare key, another spelling of a
//! key, a key given twice or escaped, a value of another type than the one
//! named below, another role, call type or block type, an escaped id,
//! type or name, nesting past the bound, too many objects or content past
//! the general reader's allowance for reading ahead, and anything the fast
//! reader itself gives up on, make it give up (`None`), and the general
//! readers read the answer, as before. Keys of no table (`usage`,
//! `created`, `finish_reason`, `refusal`, `stop_reason`, ...) are
//! skipped, as both general readers skip them.
//!
//! ```text
//! {"id": any, "object": a string, "model": any,
//!  "choices": [{"message": null | {"role": "assistant",
//!                                  "content": null | a string,
//!                                  "tool_calls": null | [{"id": null | a string,
//!                                                         "type": null | "function",
//!                                                         "function": {"name": a string,
//!                                                                      "arguments": any}}]}}]}
//!
//! {"id": any, "type": "message", "role": "assistant", "model": any,
//!  "content": null | a string | [{"type": "text" | "thinking"}
//!                                | {"type": "tool_use", "id": null | a string,
//!                                   "name": a string, "input": any but a list}]}
//!
//! {"candidates": [{"content": {"role": "model",
//!                              "parts": [{} | {"functionCall": {"id": null | a string,
//!                                                               "name": a string,
//!                                                               "args": any}}]}}]}
//!
//! {"output": {"message": {"role": "assistant",
//!                         "content": [{} | {"toolUse": {"toolUseId": a string,
//!                                                       "name": a string,
//!                                                       "input": any but a list}}]}}}
//! ```
//! (At most 16 candidates, parts or Converse blocks; a Converse answer
//! has no `model`.)
//! (`choices` and a message's `role`, a call's `function` and its `name`,
//! a Messages response's `type` and `role`, a block's `type` and a
//! `tool_use` block's `name` are required.) Debug builds (the tests, the
//! fuzz targets) read every answer taken here the general way too and
//! assert that both detections are equal ([`crate::detect`]).

use std::borrow::Cow;

use super::{Field, InPassing, Key, Scan, Value};
use crate::detect::collect::{ArgSource, Collector};
use crate::detect::cursor::items;
use crate::detect::limits::MAX_ENVELOPE_OBJECTS;
use crate::detect::node::{Held, Node, Obj, ReadArguments};
use crate::model::{CallKind, Format};

/// What the short path read of an answer, to be told to a collector.
#[derive(Debug)]
pub(crate) struct Answer<'a> {
    shape: Shape,
    /// Every call, in order.
    calls: Calls<'a>,
}

/// The calls of an answer, in order: most answers make a few, held in
/// place.
type Calls<'a> = smallvec::SmallVec<[Call<'a>; 4]>;

#[derive(Debug)]
enum Shape {
    /// A Chat Completions response: its choices.
    Chat(smallvec::SmallVec<[Choice; 1]>),
    /// A Messages response: whether each block of its `content` list is a
    /// call (`None`: its content is text, or none).
    Message(Option<Blocks>),
    /// A Gemini answer: its candidates.
    Gemini(smallvec::SmallVec<[Candidate; 1]>),
    /// A Bedrock Converse answer: whether each block of its output
    /// message's `content` is a call.
    Converse(Blocks),
}

/// A candidate of a Gemini answer.
#[derive(Debug)]
enum Candidate {
    /// It holds no content.
    Empty,
    /// A content of the model, and whether each of its parts is a call
    /// (`None` when it has no `parts`).
    Content(Option<Blocks>),
}

/// A choice of a Chat Completions response.
#[derive(Debug)]
enum Choice {
    /// It holds no message.
    Empty,
    /// A message, and how many calls its `tool_calls` list holds (`None`
    /// when it has no list).
    Message(Option<usize>),
}

#[derive(Debug)]
struct Call<'a> {
    id: Option<&'a str>,
    name: &'a str,
    args: ArgSource<'a>,
}

/// The keys of an answer's root that tell its shape.
#[derive(Default)]
struct Root<'a> {
    choices: Option<smallvec::SmallVec<[Choice; 1]>>,
    object: bool,
    kind: Option<&'a str>,
    role: Option<&'a str>,
    content: Content,
    model: bool,
    candidates: Option<smallvec::SmallVec<[Candidate; 1]>>,
    output: Option<Blocks>,
}

impl Root<'_> {
    /// The answer's shape, from its root, and how many objects the general
    /// reader makes a view of for it, `calls` calls in all; `None` for a
    /// root of no shape this path takes.
    fn shape(self, calls: usize) -> Option<(Shape, usize)> {
        Some(match self {
            Root {
                choices: Some(choices),
                kind: None,
                role: None,
                content: Content::Absent,
                candidates: None,
                output: None,
                ..
            } => {
                let objects = 1 + 2 * choices.len() + 2 * calls;
                (Shape::Chat(choices), objects)
            }
            Root {
                choices: None,
                object: false,
                kind: Some("message"),
                role: Some("assistant"),
                content,
                candidates: None,
                output: None,
                ..
            } => {
                let blocks = match content {
                    Content::Blocks(blocks) => Some(blocks),
                    Content::Absent | Content::Text => None,
                };
                let objects = 1 + blocks.as_ref().map_or(0, smallvec::SmallVec::len);
                (Shape::Message(blocks), objects)
            }
            Root {
                choices: None,
                object: false,
                kind: None,
                role: None,
                content: Content::Absent,
                candidates: Some(candidates),
                output: None,
                ..
            } => {
                // The root, each candidate and its content, each part that
                // is a call and its `functionCall`.
                let objects = 1 + 2 * candidates.len() + 2 * calls;
                (Shape::Gemini(candidates), objects)
            }
            Root {
                choices: None,
                object: false,
                kind: None,
                role: None,
                content: Content::Absent,
                model: false,
                candidates: None,
                output: Some(blocks),
            } => {
                // The root, the output, its message, each block that is a
                // call and its `toolUse`.
                let objects = 3 + 2 * calls;
                (Shape::Converse(blocks), objects)
            }
            _ => return None,
        })
    }
}

/// At most this many candidates, parts a content, or blocks a Converse
/// message on the short path: well within what the general reader reads
/// ahead.
const MOST_PARTS: usize = 16;

/// Whether each block of a `content` list is a call.
type Blocks = smallvec::SmallVec<[bool; 4]>;

/// An answer's `content`.
#[derive(Default)]
enum Content {
    #[default]
    Absent,
    /// Text, or `null`.
    Text,
    Blocks(Blocks),
}

/// Read `text` (whitespace before it trimmed), one whole JSON document,
/// as an answer of the short path's shape within `max_depth`; `None` when
/// it is not one, and the general readers must read it.
pub(crate) fn read(text: &str, max_depth: usize) -> Option<Answer<'_>> {
    let mut scan = Scan::new(text, None, max_depth);
    if scan.peek()? != b'{' {
        return None;
    }
    let mut calls = Calls::new();
    let mut root = Root::default();
    scan.fields_with(&ROOT_KEYS, false, |scan, key| match key {
        // Keys of no table every reader skips.
        Err(_) => scan.skip(),
        Ok(field) => root.field(scan, field, &mut calls),
    })?;
    let (shape, objects) = root.shape(calls.len())?;
    // Each object the general reader would make a view of, at most: past
    // the thread's bound, the general reader says so.
    if !scan.at_end() || Held::alive() + objects > MAX_ENVELOPE_OBJECTS {
        return None;
    }
    Some(Answer { shape, calls })
}

/// The keys of no table an answer's root most often holds (Gemini's,
/// Bedrock Converse's, OpenAI's), skipped without a lookup: they are
/// known as written ([`Key::Own`](super::Key::Own)).
pub(super) const ROOT_KEYS: [&str; 8] = [
    "usageMetadata",
    "modelVersion",
    "responseId",
    "usage",
    "stopReason",
    "metrics",
    "created",
    "system_fingerprint",
];

/// The keys of no table a Gemini candidate most often holds, skipped
/// alike.
pub(super) const CANDIDATE_KEYS: [&str; 4] =
    ["finishReason", "index", "avgLogprobs", "safetyRatings"];

/// The keys of no table a Gemini part or a Converse content block most
/// often holds beside a call, skipped alike.
pub(super) const PART_KEYS: [&str; 2] = ["text", "thoughtSignature"];

impl<'a> Root<'a> {
    /// A key of the table at an answer's root, its value read.
    fn field(&mut self, scan: &mut Scan<'a>, field: Field, calls: &mut Calls<'a>) -> Option<()> {
        let root = self;
        match field {
            // (`id` is kept raw, `model` only seen: neither is read here.)
            Field::id => scan.skip(),
            Field::model => {
                root.model = true;
                scan.skip()
            }
            Field::candidates => {
                root.candidates = Some(scan.candidates(calls)?);
                Some(())
            }
            Field::output if scan.peek()? == b'{' => {
                root.output = Some(scan.converse_output(calls)?);
                Some(())
            }
            Field::object => {
                root.object = true;
                scan.value(super::Take::IsList).map(drop)
            }
            Field::choices => {
                root.choices = Some(scan.choices(calls)?);
                Some(())
            }
            Field::kind => {
                root.kind = Some(scan.plain()?);
                Some(())
            }
            Field::role => {
                root.role = Some(scan.plain()?);
                Some(())
            }
            Field::content => {
                root.content = scan.content(calls)?;
                Some(())
            }
            _ => scan.null(),
        }
    }
}

/// Whether `count` objects of one kind (choices, calls, blocks: up to two
/// views each) are still within the thread's bound on views: past it, the
/// short path stops reading, since the general reader refuses the payload.
fn within_bound(count: usize) -> Option<()> {
    (2 * count <= MAX_ENVELOPE_OBJECTS).then_some(())
}

impl<'a> Scan<'a> {
    /// The entries of the object at the cursor: `entry` reads the value of
    /// each key of the table (at the value); the values of keys of no
    /// table are skipped, as the general readers skip them. A rare key or
    /// another spelling of a key gives up, as [`Scan::entries`] does for a
    /// key given twice or escaped. Each `entry` takes any key of the table
    /// it does not name only when `null` (`_ => scan.null()`), which both
    /// general readers read as no key at all.
    pub(super) fn fields(
        &mut self,
        mut entry: impl FnMut(&mut Self, Field) -> Option<()>,
    ) -> Option<()> {
        self.entries(&[], |scan, key, _| match key {
            Key::Field(field) => {
                scan.space();
                entry(scan, field)
            }
            Key::Other | Key::Own(_) => scan.skip(),
            Key::Rare(_) | Key::Variant => None,
        })
    }

    /// The items of the array at the cursor, each an object read by `item`.
    pub(super) fn objects(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.peek()? != b'[' {
            return None;
        }
        self.open()?;
        self.at += 1;
        items(self, b']', |scan| {
            if scan.peek()? != b'{' {
                return None;
            }
            item(scan)
        })?;
        self.depth -= 1;
        Some(())
    }

    /// A string with no escape at the cursor.
    pub(super) fn plain(&mut self) -> Option<&'a str> {
        match self.string()? {
            (text, false) => Some(text),
            (_, true) => None,
        }
    }

    /// `null` at the cursor.
    pub(super) fn null(&mut self) -> Option<()> {
        self.literal("null")
    }

    /// A Chat Completions response's `choices`.
    fn choices(&mut self, calls: &mut Calls<'a>) -> Option<smallvec::SmallVec<[Choice; 1]>> {
        let mut choices = smallvec::SmallVec::new();
        self.objects(|scan| {
            let mut choice = Choice::Empty;
            scan.fields(|scan, field| match field {
                Field::message if scan.peek()? == b'n' => scan.null(),
                Field::message => {
                    choice = scan.message(calls)?;
                    Some(())
                }
                _ => scan.null(),
            })?;
            choices.push(choice);
            within_bound(choices.len())?;
            Some(())
        })?;
        Some(choices)
    }

    /// A choice's message.
    fn message(&mut self, calls: &mut Calls<'a>) -> Option<Choice> {
        if self.peek()? != b'{' {
            return None;
        }
        let mut assistant = false;
        let mut listed = None;
        self.fields(|scan, field| match field {
            Field::role => {
                assistant = scan.plain()? == "assistant";
                assistant.then_some(())
            }
            Field::content => match scan.peek()? {
                b'n' => scan.null(),
                b'"' => scan.string().map(drop),
                _ => None,
            },
            Field::tool_calls if scan.peek()? == b'n' => scan.null(),
            Field::tool_calls => {
                let before = calls.len();
                scan.objects(|scan| scan.call(calls))?;
                listed = Some(calls.len() - before);
                Some(())
            }
            _ => scan.null(),
        })?;
        assistant.then_some(Choice::Message(listed))
    }

    /// A `tool_calls` element.
    fn call(&mut self, calls: &mut Calls<'a>) -> Option<()> {
        let mut id = None;
        let mut function = None;
        self.fields(|scan, field| match field {
            Field::id | Field::kind if scan.peek()? == b'n' => scan.null(),
            Field::id => {
                id = Some(scan.plain()?);
                Some(())
            }
            Field::kind => (scan.plain()? == "function").then_some(()),
            Field::function if scan.peek()? == b'{' => {
                function = Some(scan.function()?);
                Some(())
            }
            _ => scan.null(),
        })?;
        let (name, args) = function?;
        calls.push(Call { id, name, args });
        within_bound(calls.len())?;
        Some(())
    }

    /// A call's `function`: its name and arguments.
    fn function(&mut self) -> Option<(&'a str, ArgSource<'a>)> {
        let mut name = None;
        let mut args = ArgSource::Absent;
        self.fields(|scan, field| match field {
            Field::name => {
                name = Some(scan.plain()?);
                Some(())
            }
            Field::arguments => {
                args = scan.arguments_of(Field::arguments)?;
                Some(())
            }
            _ => scan.null(),
        })?;
        Some((name?, args))
    }

    /// The arguments of `field`, an argument key, at the cursor, as the
    /// general readers give them to the collector: read in passing onto
    /// their tape, or decoded, or raw; absent when `null`.
    fn arguments_of(&mut self, field: Field) -> Option<ArgSource<'a>> {
        Some(match self.in_passing(field)? {
            (Value::Null, _) => ArgSource::Absent,
            (Value::Raw(raw), InPassing::Read(Some(ReadArguments::Tape(_, tape)))) => {
                ArgSource::Tape(tape, raw)
            }
            (Value::Raw(_), InPassing::Read(Some(ReadArguments::Text(text)))) => {
                ArgSource::Text(Cow::Owned(text.into()))
            }
            (Value::Raw(raw), InPassing::Read(Some(ReadArguments::Twin(_, text)))) => {
                ArgSource::twin(raw, text)
            }
            (Value::Raw(raw), InPassing::Read(None) | InPassing::AsTaken) => ArgSource::Inline(raw),
            _ => return None,
        })
    }

    /// A Messages response's `content`: a list of blocks, each a call or
    /// not, read ahead as the general reader reads it (a reader of its
    /// own, from a nesting of 0 within what is left of the bound), or text
    /// (`None`), or `null` (`None`).
    fn content(&mut self, calls: &mut Calls<'a>) -> Option<Content> {
        match self.peek()? {
            b'n' => return self.null().map(|()| Content::Text),
            b'"' => return self.string().map(|_| Content::Text),
            b'[' => {}
            _ => return None,
        }
        let start = self.at;
        let mut ahead = self.ahead_of(start);
        let mut blocks = Blocks::new();
        ahead.objects(|scan| {
            blocks.push(scan.block(calls)?);
            within_bound(blocks.len())?;
            Some(())
        })?;
        // Past the general reader's allowance for reading ahead (a view and
        // an item a block), it reads the content otherwise.
        let spent =
            blocks.len() * (std::mem::size_of::<Obj<'_>>() + std::mem::size_of::<Node<'_>>());
        if spent > super::READ_AHEAD {
            return None;
        }
        self.at = start + ahead.at;
        Some(Content::Blocks(blocks))
    }

    /// A content block: whether it is a call (a `tool_use` block; a `text`
    /// or `thinking` block is none).
    fn block(&mut self, calls: &mut Calls<'a>) -> Option<bool> {
        let (mut kind, mut id, mut name, mut input) = (None, None, None, None);
        self.fields(|scan, field| match field {
            Field::kind => {
                kind = Some(scan.plain()?);
                Some(())
            }
            Field::id if scan.peek()? == b'n' => scan.null().map(|()| id = Some(None)),
            Field::id => {
                id = Some(Some(scan.plain()?));
                Some(())
            }
            Field::name => {
                name = Some(scan.plain()?);
                Some(())
            }
            // (An `input` list is read as a container.)
            Field::input if scan.peek()? != b'[' => {
                input = Some(scan.arguments_of(Field::input)?);
                Some(())
            }
            _ => scan.null(),
        })?;
        match (kind?, name) {
            ("tool_use", Some(name)) => {
                let args = input.unwrap_or(ArgSource::Absent);
                calls.push(Call {
                    id: id.flatten(),
                    name,
                    args,
                });
                Some(true)
            }
            // Text, and a model's thinking (extended thinking's blocks,
            // which agents built on Claude's reasoning models get in most
            // answers), is no call. (A `redacted_thinking` block holds its
            // text under `data`, a key of the table: the general reader's.)
            ("text" | "thinking", None) if id.is_none() && input.is_none() => Some(false),
            _ => None,
        }
    }
}

impl<'a> Scan<'a> {
    /// A Gemini answer's `candidates`: each one's content, read as the
    /// general reader reads it (ahead, a reader of its own).
    fn candidates(&mut self, calls: &mut Calls<'a>) -> Option<smallvec::SmallVec<[Candidate; 1]>> {
        self.few_objects(|scan| {
            let mut content = Candidate::Empty;
            scan.fields_with(&CANDIDATE_KEYS, false, |scan, key| match key {
                Ok(Field::content) if scan.peek()? == b'{' => {
                    let start = scan.at;
                    let mut ahead = scan.ahead_of(start);
                    content = ahead.gemini_content(calls)?;
                    scan.at = start + ahead.at;
                    Some(())
                }
                Ok(_) => scan.null(),
                Err(_) => scan.skip(),
            })?;
            Some(content)
        })
    }

    /// A list of at most [`MOST_PARTS`] objects, each read by `item`.
    fn few_objects<A: smallvec::Array>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Option<A::Item>,
    ) -> Option<smallvec::SmallVec<A>> {
        let mut items = smallvec::SmallVec::new();
        self.objects(|scan| {
            if items.len() == MOST_PARTS {
                return None;
            }
            items.push(item(scan)?);
            Some(())
        })?;
        Some(items)
    }

    /// A list element whose call (pushed to `calls`), if any, is the object
    /// of its key `wrapper`, read by `read`: whether it holds one.
    fn wrapped_call(
        &mut self,
        wrapper: Field,
        calls: &mut Calls<'a>,
        mut read: impl FnMut(&mut Self) -> Option<Call<'a>>,
    ) -> Option<bool> {
        let mut call = None;
        self.fields_with(&PART_KEYS, false, |scan, key| match key {
            Ok(field) if field == wrapper && scan.peek()? == b'{' => {
                call = Some(read(scan)?);
                Some(())
            }
            Ok(_) => scan.null(),
            Err(_) => scan.skip(),
        })?;
        let Some(call) = call else {
            return Some(false);
        };
        calls.push(call);
        within_bound(calls.len())?;
        Some(true)
    }

    /// A candidate's content: the model's, and whether each of its parts
    /// is a call.
    fn gemini_content(&mut self, calls: &mut Calls<'a>) -> Option<Candidate> {
        let mut model = false;
        let mut parts = None;
        self.fields(|scan, field| match field {
            Field::role => {
                model = scan.plain()? == "model";
                model.then_some(())
            }
            Field::parts if scan.peek()? == b'[' => {
                parts = Some(scan.few_objects(|scan| scan.gemini_part(calls))?);
                Some(())
            }
            _ => scan.null(),
        })?;
        model.then_some(Candidate::Content(parts))
    }

    /// A part: whether it is a call (a `functionCall`, pushed to `calls`).
    fn gemini_part(&mut self, calls: &mut Calls<'a>) -> Option<bool> {
        self.wrapped_call(Field::functionCall, calls, |scan| {
            let (mut id, mut name, mut args) = (None, None, ArgSource::Absent);
            scan.fields(|scan, field| match field {
                Field::id if scan.peek()? == b'n' => scan.null(),
                Field::id => {
                    id = Some(scan.plain()?);
                    Some(())
                }
                Field::name => {
                    name = Some(scan.plain()?);
                    Some(())
                }
                Field::args => {
                    args = scan.arguments_of(Field::args)?;
                    Some(())
                }
                _ => scan.null(),
            })?;
            Some(Call {
                id,
                name: name?,
                args,
            })
        })
    }

    /// A Converse answer's `output`, read ahead as the general reader
    /// reads it: its message, the assistant's, and whether each block of
    /// its `content` is a call.
    fn converse_output(&mut self, calls: &mut Calls<'a>) -> Option<Blocks> {
        let start = self.at;
        let mut ahead = self.ahead_of(start);
        let mut blocks = None;
        ahead.fields(|scan, field| match field {
            Field::message if scan.peek()? == b'{' => {
                let mut assistant = false;
                scan.fields(|scan, field| match field {
                    Field::role => {
                        assistant = scan.plain()? == "assistant";
                        assistant.then_some(())
                    }
                    Field::content if scan.peek()? == b'[' => {
                        let start = scan.at;
                        let mut ahead = scan.ahead_of(start);
                        blocks = Some(ahead.few_objects(|scan| scan.converse_block(calls))?);
                        scan.at = start + ahead.at;
                        Some(())
                    }
                    _ => scan.null(),
                })?;
                assistant.then_some(())
            }
            _ => scan.null(),
        })?;
        self.at = start + ahead.at;
        blocks
    }

    /// A Converse content block: whether it is a call (a `toolUse`,
    /// pushed to `calls`).
    fn converse_block(&mut self, calls: &mut Calls<'a>) -> Option<bool> {
        self.wrapped_call(Field::toolUse, calls, |scan| {
            let (mut id, mut name, mut input) = (None, None, ArgSource::Absent);
            // (`toolUseId` is a rare key: given twice, the general reader
            // refuses it, and so does this one.)
            scan.fields_with(&["toolUseId"], false, |scan, key| match key {
                Err(_) => {
                    id = Some(scan.plain()?);
                    Some(())
                }
                Ok(Field::name) => {
                    name = Some(scan.plain()?);
                    Some(())
                }
                // (An `input` list is read as a container.)
                Ok(Field::input) if scan.peek()? != b'[' => {
                    input = scan.arguments_of(Field::input)?;
                    Some(())
                }
                Ok(_) => scan.null(),
            })?;
            Some(Call {
                id,
                name: name?,
                args: input,
            })
        })
    }
}

impl Answer<'_> {
    /// Tell `out` what the general readers tell it of this answer, in the
    /// same order ([`document::read_root`] over its views).
    ///
    /// [`document::read_root`]: crate::detect::document::read_root
    pub(crate) fn record(self, out: &mut Collector<'_>) {
        // Room for every call at once, rather than by doubling.
        out.expect_calls(self.calls.len());
        let mut calls = self.calls.into_iter();
        out.listed = false;
        match self.shape {
            // The root and each choice hold no call of their own; `choices`
            // is seen as Chat Completions, each message as a turn of the
            // assistant, its `tool_calls` as a list of calls, each read
            // through its `function`.
            Shape::Chat(choices) => {
                let messages = choices.into_iter().map(|choice| match choice {
                    Choice::Message(listed) => Some(listed),
                    Choice::Empty => None,
                });
                each_message(
                    out,
                    Format::OpenAiChat,
                    messages,
                    Format::Generic,
                    |out, listed| {
                        if let Some(count) = listed {
                            out.saw(Format::Generic);
                            out.expect_calls(count);
                            for call in calls.by_ref().take(count) {
                                out.descend();
                                call.record(Format::OpenAiChat, out);
                                out.ascend();
                            }
                        }
                    },
                );
            }
            // The root's `candidates` are Gemini's; each candidate holds no
            // call of its own, its content is a message of the model whose
            // `parts` are Gemini's (its `content` row is Anthropic's); each
            // part holds its call through its `functionCall`.
            Shape::Gemini(candidates) => {
                let contents = candidates.into_iter().map(|candidate| match candidate {
                    Candidate::Content(parts) => Some(parts),
                    Candidate::Empty => None,
                });
                each_message(
                    out,
                    Format::Gemini,
                    contents,
                    Format::Anthropic,
                    |out, parts| {
                        if let Some(parts) = parts {
                            out.saw(Format::Gemini);
                            elements(out, parts, &mut calls, Format::Gemini, false);
                        }
                    },
                );
            }
            // The root's `output` (the Responses row) holds a message of the
            // assistant whose `content` blocks hold their calls through
            // `toolUse`.
            Shape::Converse(blocks) => {
                out.descend();
                out.saw(Format::OpenAiResponses);
                out.descend();
                out.saw(Format::Generic);
                assistant(out, |out| {
                    out.saw(Format::Anthropic);
                    elements(out, blocks, &mut calls, Format::Bedrock, false);
                });
                out.ascend();
                out.ascend();
            }
            // The root is a message of the assistant (its `type` a message's)
            // whose `content` is seen as Anthropic's; each `tool_use` block
            // is a call by its type.
            Shape::Message(blocks) => assistant(out, |out| {
                if let Some(blocks) = blocks {
                    out.saw(Format::Anthropic);
                    elements(out, blocks, &mut calls, Format::Anthropic, true);
                }
                out.saw(Format::Generic);
            }),
        }
    }
}

/// A list (seen as `list`) of objects that hold no call of their own, each
/// holding a message of the assistant or none (`messages`); a message is
/// seen through a key of the `row` format, and its containers are read by
/// `message` within the assistant's turn.
fn each_message<T>(
    out: &mut Collector<'_>,
    list: Format,
    messages: impl IntoIterator<Item = Option<T>>,
    row: Format,
    mut message: impl FnMut(&mut Collector<'_>, T),
) {
    out.descend();
    out.saw(list);
    for held in messages {
        out.listed = false;
        out.descend();
        if let Some(held) = held {
            out.saw(row);
            assistant(out, |out| message(out, held));
        }
        out.ascend();
    }
    out.ascend();
}

/// The elements of a list, each an object that holds a call or none
/// (`blocks`), the calls taken from `calls` and recorded in `format`; a
/// call's object is `typed` when its `type` names it (a known shape, seen
/// as such).
fn elements<'a>(
    out: &mut Collector<'_>,
    blocks: Blocks,
    calls: &mut impl Iterator<Item = Call<'a>>,
    format: Format,
    typed: bool,
) {
    for call in blocks {
        out.listed = false;
        out.descend();
        if call {
            if let Some(call) = calls.next() {
                call.record(format, out);
            }
            if typed {
                out.saw(Format::Generic);
            }
        }
        out.ascend();
    }
}

/// A message of the assistant, its containers read by `containers`: a
/// turn of its own; one that records nothing moves the conversation on.
fn assistant(out: &mut Collector<'_>, containers: impl FnOnce(&mut Collector<'_>)) {
    out.descend();
    let mark = out.mark();
    out.next_turn(Some("assistant"));
    out.saw(Format::Generic);
    let outer = out.mute_as(false, false);
    containers(out);
    out.restore_mute(outer);
    if !out.recorded_since(mark) {
        out.moved_on();
    }
    out.ascend();
}

impl Call<'_> {
    fn record(self, format: Format, out: &mut Collector<'_>) {
        out.call(format, CallKind::Function, self.id, self.name, self.args);
    }
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::detect::collect::{Collector, RawArguments};
    use crate::detect::{read_body, Detection, Limits};
    use crate::model::Framing;

    /// The detection of the short path and of the general readers, when
    /// the short path takes `text`.
    fn both(text: &str, limits: &Limits, judge: bool) -> Option<(Detection, Detection)> {
        let body = text.trim_start();
        let answer = read(
            body,
            limits.max_depth.min(crate::detect::limits::HARD_MAX_DEPTH),
        )?;
        let mut out = Collector::new(limits);
        if judge {
            out.raw_arguments = RawArguments::Unwanted;
        }
        let twin = out.clone();
        answer.record(&mut out);
        Some((out.finish(Framing::Json), read_body(body, twin, limits)))
    }

    fn agree(text: &str, limits: &Limits) -> bool {
        let mut taken = false;
        for judge in [false, true] {
            if let Some((short, general)) = both(text, limits, judge) {
                assert_eq!(short, general, "{text}");
                taken = true;
            }
        }
        taken
    }

    /// A small generator of chat completions near the short path's shape:
    /// every level's keys in any order, with values of each type, nulls,
    /// escapes, keys of the table the path does not take, rare keys and
    /// other spellings, keys given twice, and arguments of every kind.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            usize::try_from(self.next() % n as u64).unwrap_or(0)
        }

        /// The first of `from` most of the time, else any.
        fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
            if self.below(16) != 0 {
                return from[0];
            }
            from[self.below(from.len())]
        }

        /// A call's id: `"<prefix>_<n>"` mostly, else `null`, a number, an
        /// escaped string or one other calls share.
        fn id(&mut self, prefix: &str, n: usize) -> String {
            match self.below(16) {
                0 => "null".to_owned(),
                1 => "5".to_owned(),
                2 => r#""c\u0031""#.to_owned(),
                3 => r#""dup""#.to_owned(),
                _ => format!("\"{prefix}_{n}\""),
            }
        }

        /// An object of `entries` (key, value) in a shuffled order, some
        /// dropped, one sometimes given twice, with an extra key now and
        /// then.
        fn object(&mut self, mut entries: Vec<(String, String)>, extra: &[(&str, &str)]) -> String {
            if self.below(16) == 0 {
                let (key, value) = extra[self.below(extra.len())];
                entries.push((key.to_owned(), value.to_owned()));
            }
            if !entries.is_empty() && self.below(20) == 0 {
                let at = self.below(entries.len());
                entries.remove(at);
            }
            if !entries.is_empty() && self.below(40) == 0 {
                let twice = entries[self.below(entries.len())].clone();
                entries.push(twice);
            }
            for i in (1..entries.len()).rev() {
                let j = self.below(i + 1);
                entries.swap(i, j);
            }
            let space = if self.below(6) == 0 { " \n" } else { "" };
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{space}\"{k}\"{space}:{space}{v}"))
                .collect();
            format!("{{{}{space}}}", inner.join(","))
        }

        fn arguments(&mut self) -> String {
            self.pick(&[
                r#""{\"location\":\"Paris, France\",\"days\":3}""#,
                r#""{}""#,
                r#""""#,
                "null",
                r#"{"location":"Paris","unit":"celsius"}"#,
                r#""{\"a\":\"\\u00e9\\n\\\"q\\\"\"}""#,
                r#""{bad""#,
                "5",
                r#""[1,2]""#,
                r#""{\"a\":1,\"a\":2}""#,
                r#""{\"a\":{\"b\":{\"c\":{\"d\":[[[1]]]}}}}""#,
                r#"{"a":{"b":{"c":{"d":[[[1]]]}}}}"#,
                r#""\u00e9""#,
                r#""{\"a\":1e400}""#,
                r#""{\"s\":\"\\ud800\"}""#,
                "[1]",
                r#""{\"x\": \"a\u0001\"}""#,
            ])
            .to_owned()
        }

        fn function(&mut self) -> String {
            let name = self.pick(&[
                r#""get_weather""#,
                r#""get_weather""#,
                "null",
                r#""we\u0061ther""#,
                r#""has space""#,
                r#""""#,
                "7",
            ]);
            let entries = vec![
                ("name".to_owned(), name.to_owned()),
                ("arguments".to_owned(), self.arguments()),
            ];
            self.object(
                entries,
                &[
                    ("id", r#""f1""#),
                    ("state", r#""partial-call""#),
                    ("strict", "true"),
                    ("Name", r#""x""#),
                    ("input", "{}"),
                ],
            )
        }

        fn call(&mut self, n: usize) -> String {
            let id = self.id("call", n);
            let kind = self.pick(&[
                r#""function""#,
                r#""function""#,
                "null",
                r#""tool_use""#,
                r#""custom""#,
                r#""tool-x""#,
            ]);
            let function = match self.below(24) {
                0 => "null".to_owned(),
                1 => r#""x""#.to_owned(),
                _ => self.function(),
            };
            let entries = vec![
                ("id".to_owned(), id),
                ("type".to_owned(), kind.to_owned()),
                ("function".to_owned(), function),
            ];
            self.object(
                entries,
                &[
                    ("index", "0"),
                    ("input", "null"),
                    ("name", r#""x""#),
                    ("arguments", r#""{}""#),
                    ("Function", "{}"),
                    ("custom", "{}"),
                ],
            )
        }

        fn message(&mut self) -> String {
            let role = self.pick(&[
                r#""assistant""#,
                r#""assistant""#,
                r#""assistant""#,
                r#""user""#,
                r#""tool""#,
                "null",
                r#""assis\u0074ant""#,
            ]);
            let content = self.pick(&[
                "null",
                r#""Let me check.""#,
                r#""a\nb \"q\"""#,
                r#"[{"type":"text","text":"x"}]"#,
                "5",
                r#""bad \ud800""#,
            ]);
            let tool_calls = match self.below(16) {
                0 => "null".to_owned(),
                1 => "[]".to_owned(),
                2 => r#""x""#.to_owned(),
                3 => "[1]".to_owned(),
                _ => {
                    let calls: Vec<String> = (0..=self.below(4)).map(|n| self.call(n)).collect();
                    format!("[{}]", calls.join(","))
                }
            };
            let entries = vec![
                ("role".to_owned(), role.to_owned()),
                ("content".to_owned(), content.to_owned()),
                ("tool_calls".to_owned(), tool_calls),
            ];
            self.object(
                entries,
                &[
                    ("refusal", "null"),
                    ("function_call", "null"),
                    ("tool_call_id", "null"),
                    ("annotations", "[]"),
                    ("name", r#""bot""#),
                    ("function_call", r#"{"name":"f","arguments":"{}"}"#),
                    ("tool_call_id", r#""c""#),
                    ("Tool_Calls", "[]"),
                    ("audio", "null"),
                ],
            )
        }

        fn choice(&mut self) -> String {
            let message = match self.below(24) {
                0 => "null".to_owned(),
                1 => r#""x""#.to_owned(),
                _ => self.message(),
            };
            let entries = vec![
                ("index".to_owned(), "0".to_owned()),
                ("message".to_owned(), message),
                ("finish_reason".to_owned(), r#""tool_calls""#.to_owned()),
                ("logprobs".to_owned(), "null".to_owned()),
            ];
            self.object(
                entries,
                &[
                    ("delta", "{}"),
                    ("role", r#""assistant""#),
                    ("content_filter_results", r#"{"hate":{"filtered":false}}"#),
                    ("Message", "{}"),
                ],
            )
        }

        fn completion(&mut self) -> String {
            let choices = match self.below(24) {
                0 => "null".to_owned(),
                1 => "[]".to_owned(),
                2 => "{}".to_owned(),
                3 => "[1]".to_owned(),
                _ => {
                    let choices: Vec<String> =
                        (0..=self.below(3) / 2).map(|_| self.choice()).collect();
                    format!("[{}]", choices.join(","))
                }
            };
            let entries = vec![
                ("id".to_owned(), r#""chatcmpl-1""#.to_owned()),
                (
                    "object".to_owned(),
                    self.pick(&[r#""chat.completion""#, r#""list""#, "5", "null"])
                        .to_owned(),
                ),
                ("created".to_owned(), "1767225600".to_owned()),
                (
                    "model".to_owned(),
                    self.pick(&[r#""gpt-4.1""#, "null", r#"{"a":[1]}"#])
                        .to_owned(),
                ),
                ("choices".to_owned(), choices),
                (
                    "usage".to_owned(),
                    r#"{"prompt_tokens":1,"completion_tokens":2,"details":{"a":[{"b":{}}]}}"#
                        .to_owned(),
                ),
                ("system_fingerprint".to_owned(), "null".to_owned()),
            ];
            self.object(
                entries,
                &[
                    ("error", "null"),
                    ("tools", "null"),
                    ("Choices", "[]"),
                    ("body", "{}"),
                    ("tools", "[]"),
                    ("messages", "[]"),
                    ("prompt_filter_results", "[]"),
                    ("previous_response_id", r#""r""#),
                ],
            )
        }
    }

    impl Gen {
        fn block(&mut self, n: usize) -> String {
            if self.below(4) == 0 {
                let text = self.pick(&[r#""Let me look.""#, r#""a\nb""#, "null", "7"]);
                let entries = vec![
                    ("type".to_owned(), r#""text""#.to_owned()),
                    ("text".to_owned(), text.to_owned()),
                ];
                return self.object(
                    entries,
                    &[
                        ("citations", "[]"),
                        ("name", r#""x""#),
                        ("input", "{}"),
                        ("id", r#""t""#),
                    ],
                );
            }
            let id = self.id("toolu", n);
            let kind = self.pick(&[
                r#""tool_use""#,
                r#""server_tool_use""#,
                r#""thinking""#,
                "null",
                r#""tool_result""#,
            ]);
            let name = self.pick(&[r#""get_weather""#, "null", r#""we\u0061ther""#, r#""""#]);
            let input = self.pick(&[
                r#"{"location":"Paris, France","days":3}"#,
                "{}",
                "null",
                r#""{\"a\":1}""#,
                "[1]",
                "5",
                r#"{"a":{"b":{"c":{"d":[[[1]]]}}}}"#,
                r#"{"a":1,"a":2}"#,
                r#"{"s":"\ud800"}"#,
                r#"{"x":1e400}"#,
            ]);
            let entries = vec![
                ("type".to_owned(), kind.to_owned()),
                ("id".to_owned(), id),
                ("name".to_owned(), name.to_owned()),
                ("input".to_owned(), input.to_owned()),
            ];
            self.object(
                entries,
                &[
                    ("cache_control", "null"),
                    ("content", "null"),
                    ("arguments", r#""{}""#),
                    ("content", "[]"),
                    ("Input", "{}"),
                    ("tool_use_id", r#""t""#),
                    ("caller", r#"{"type":"direct"}"#),
                ],
            )
        }

        /// A Messages response near the short path's shape.
        fn message_response(&mut self) -> String {
            let content = match self.below(24) {
                0 => "null".to_owned(),
                1 => r#""Hello.""#.to_owned(),
                2 => "{}".to_owned(),
                3 => "[1]".to_owned(),
                4 => "[]".to_owned(),
                _ => {
                    let blocks: Vec<String> = (0..=self.below(4)).map(|n| self.block(n)).collect();
                    format!("[{}]", blocks.join(","))
                }
            };
            let entries = vec![
                ("id".to_owned(), r#""msg_01""#.to_owned()),
                (
                    "type".to_owned(),
                    self.pick(&[r#""message""#, "null", r#""ai""#, r#""mess\u0061ge""#]).to_owned(),
                ),
                (
                    "role".to_owned(),
                    self.pick(&[r#""assistant""#, r#""user""#, "null", "3"]).to_owned(),
                ),
                ("model".to_owned(), r#""claude-haiku-4-5""#.to_owned()),
                ("content".to_owned(), content),
                ("stop_reason".to_owned(), r#""tool_use""#.to_owned()),
                ("stop_sequence".to_owned(), "null".to_owned()),
                (
                    "usage".to_owned(),
                    r#"{"input_tokens":1,"output_tokens":2,"server_tool_use":{"web_search_requests":0}}"#
                        .to_owned(),
                ),
            ];
            self.object(
                entries,
                &[
                    ("object", r#""message""#),
                    ("container", "null"),
                    ("choices", "[]"),
                    ("tools", "[]"),
                    ("Content", "[]"),
                    ("name", r#""n""#),
                    ("input", "{}"),
                ],
            )
        }
    }

    /// Limits that move what the collector does with the same calls.
    fn limits() -> Vec<Limits> {
        let mut all = Vec::new();
        for max_calls in [1, 2, 128] {
            for max_depth in [3, 5, 7, 9, 128] {
                all.push(Limits {
                    max_depth,
                    max_calls,
                    ..Limits::default()
                });
            }
        }
        all.push(Limits {
            max_argument_bytes: 8,
            ..Limits::default()
        });
        all
    }

    #[test]
    fn the_short_path_detects_what_the_general_readers_detect() {
        let limits = limits();
        let mut gen = Gen(0x9E37_79B9_7F4A_7C15);
        // Documents and those taken, of each shape.
        let mut counts = [(0, 0); 2];
        for n in 0..6000 {
            let shape = n % 2;
            let text = if shape == 0 {
                gen.completion()
            } else {
                gen.message_response()
            };
            for limit in &limits {
                agree(&text, limit);
            }
            counts[shape].0 += 1;
            counts[shape].1 += usize::from(agree(&text, &Limits::default()));
        }
        // The generator stays near each shape: a good part is taken, and
        // a good part is not.
        for (documents, taken) in counts {
            assert!(taken * 5 > documents, "{taken} of {documents} taken");
            assert!(taken * 4 < documents * 3, "{taken} of {documents} taken");
        }
    }

    /// Every fixture and conformance document, and their damaged variants.
    #[test]
    fn the_corpus_is_detected_alike_on_the_short_path() {
        let mut taken = 0;
        for doc in super::super::tests::corpus() {
            for text in std::iter::once(doc.clone()).chain(super::super::tests::variants(&doc)) {
                for limit in [
                    Limits::default(),
                    Limits {
                        max_depth: 5,
                        max_calls: 1,
                        ..Limits::default()
                    },
                ] {
                    taken += usize::from(agree(&text, &limit));
                }
            }
        }
        assert!(taken > 20, "{taken} taken");
    }

    /// A Gemini answer and a Converse answer, and what each becomes when
    /// one of the things the short path looks at is changed: each taken
    /// is detected alike by the short path and the general readers, under
    /// every set of limits.
    #[test]
    fn gemini_and_converse_answers_are_detected_alike_on_the_short_path() {
        let seeds = [
            r#"{"candidates":[{"content":{"parts":[{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{"location":"Berlin","unit":"celsius"}},"thoughtSignature":"Es8F"},{"functionCall":{"id":"c2","name":"get_current_time","args":{}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#,
            r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"x","signature":"s"}}},{"text":"Checking."},{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"location":"Berlin","unit":"celsius"}}},{"toolUse":{"toolUseId":"tooluse_2","name":"get_current_time","input":{}}}]}},"stopReason":"tool_use","usage":{"inputTokens":9,"outputTokens":3,"totalTokens":12},"metrics":{"latencyMs":300}}"#,
        ];
        let swaps: [(&str, &str); 34] = [
            (r#""role":"model""#, r#""role":"user""#),
            (r#""role":"model""#, r#""role":null"#),
            (r#""role":"assistant""#, r#""role":"user""#),
            (
                r#""role":"assistant""#,
                r#""role":"assistant","role":"assistant""#,
            ),
            (r#""name":"get_weather""#, r#""name":"get_weather""#),
            (r#""name":"get_weather""#, r#""name":null"#),
            (r#""name":"get_weather""#, r#""name":7"#),
            (
                r#""name":"get_weather""#,
                r#""name":"get_weather","name":"x""#,
            ),
            (r#""args":{"#, r#""args":null,"a":{"#),
            (r#""args":{"#, r#""args":"{}","a":{"#),
            (r#""args":{"#, r#""args":{"a":1},"arguments":{"#),
            (r#""args":{"#, r#""args":[{"#),
            (r#""args":{"#, r#""partialArgs":[],"args":{"#),
            (r#""args":{"#, r#""willContinue":true,"args":{"#),
            (r#""args":{"#, r#""function":{"name":"f"},"args":{"#),
            (r#""id":"c2""#, r#""id":2"#),
            (r#""id":"c2""#, r#""id":"c2""#),
            (r#""input":{"#, r#""input":[{"#),
            (r#""input":{"#, r#""input":"{}","x":{"#),
            (r#""input":{"#, r#""input":{},"input":{"#),
            (r#""input":{"#, r#""type":"server_tool_use","input":{"#),
            (
                r#""toolUseId":"tooluse_1""#,
                r#""toolUseId":"tooluse_1","toolUseId":"t""#,
            ),
            (r#""toolUseId":"tooluse_1""#, r#""toolUseId":7"#),
            (r#""toolUseId":"tooluse_1""#, r#""toolUseID":"t""#),
            (r#""toolUse":{"#, r#""toolUse":null,"x":{"#),
            (
                r#""toolUse":{"#,
                r#""toolResult":{"toolUseId":"t","content":[]},"x":{"#,
            ),
            (r#""candidates":["#, r#""choices":[],"candidates":["#),
            (r#""candidates":["#, r#""model":"x","candidates":["#),
            (r#""output":{"#, r#""model":"m","output":{"#),
            (r#""output":{"#, r#""output":[{"#),
            (r#""finishReason":"STOP""#, r#""content":{"parts":[]}"#),
            (
                r#""text":"Checking.""#,
                r#""text":"Checking.","functionCall":{"name":"f"}"#,
            ),
            (
                r#""text":"Checking.""#,
                r#""functionResponse":{"name":"f","response":{}}"#,
            ),
            (r#""parts":["#, r#""parts":null,"x":["#),
        ];
        let limits = limits();
        let mut taken = 0;
        for seed in seeds {
            let texts = std::iter::once(seed.to_owned())
                .chain(
                    swaps
                        .iter()
                        .filter(|(from, _)| seed.contains(from))
                        .map(|(from, to)| seed.replacen(from, to, 1)),
                )
                .chain(super::super::tests::variants(seed));
            for text in texts {
                for limit in &limits {
                    taken += usize::from(agree(&text, limit));
                }
            }
            assert!(agree(seed, &Limits::default()), "{seed}");
        }
        assert!(taken > 300, "{taken} taken");
    }

    /// Past the thread's bound on views (two a call), the short path stops
    /// reading and leaves the payload to the general reader, which refuses
    /// it.
    #[test]
    fn too_many_calls_for_the_views_bound_are_left_to_the_general_reader() {
        let max = crate::detect::limits::MAX_ENVELOPE_OBJECTS;
        for calls in [max / 2 - 2, max / 2 + 1] {
            let call = r#"{"function":{"name":"f"}}"#;
            let text = format!(
                r#"{{"choices":[{{"message":{{"role":"assistant","tool_calls":[{}]}}}}]}}"#,
                vec![call; calls].join(",")
            );
            assert_eq!(
                read(&text, 128).is_some(),
                calls < max / 2 - 1,
                "{calls} calls"
            );
        }
    }

    #[test]
    fn real_answers_take_the_short_path() {
        let shapes = [
            r#"{"id":"chatcmpl-P4","object":"chat.completion","created":1767225600,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_0q","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Berlin, Germany\",\"unit\":\"fahrenheit\"}"}},{"id":"call_xY","type":"function","function":{"name":"get_current_time","arguments":""}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1470,"completion_tokens":300,"total_tokens":1770},"service_tier":"default","system_fingerprint":"fp_f7"}"#,
            r#"{"choices":[{"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}]}"#,
            r#"  {"choices":[]}  "#,
            r#"{"id":"msg_01P4","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_010q","name":"get_weather","input":{"location":"Berlin, Germany","unit":"fahrenheit"}},{"type":"tool_use","id":"toolu_01xY","name":"get_current_time","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1470,"cache_creation_input_tokens":0,"output_tokens":300,"service_tier":"standard"}}"#,
            r#"{"type":"message","role":"assistant","content":"Hello."}"#,
            // Extended thinking: its blocks before the calls.
            r#"{"id":"msg_01Aq","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"The user wants the weather in Berlin: get_weather, in fahrenheit.","signature":"EqQBCkYIBxgCKkBs3z+9w=="},{"type":"tool_use","id":"toolu_01Xq","name":"get_weather","input":{"location":"Berlin, Germany","unit":"fahrenheit"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1470,"output_tokens":300}}"#,
            // Keys of the table the path does not name, `null`: no key at
            // all to both general readers.
            r#"{"error":null,"tools":null,"choices":[{"delta":null,"message":{"role":"assistant","name":null,"function_call":null,"tool_call_id":null,"content":null,"tool_calls":[{"id":"c1","input":null,"type":"function","function":{"name":"f","parameters":null,"arguments":"{}"}}]}}]}"#,
            r#"{"type":"message","role":"assistant","messages":null,"content":[{"type":"tool_use","id":"t","name":"f","content":null,"input":{"a":1}}]}"#,
        ];
        for text in shapes {
            assert!(agree(text, &Limits::default()), "{text}");
        }
        for fixture in [
            "openai-chat/nonstream-parallel-weather-stock.json",
            "openai-chat/nonstream-unicode-args.json",
            "anthropic/nonstream-text-and-4-parallel-tool-use.json",
            "anthropic/nonstream-tool-no-args.json",
            "gemini/nonstream-parallel-no-arg-calls.json",
            "gemini/nonstream-single-call.json",
            "bedrock/converse-text-then-tool.json",
            "bedrock/converse-claude-thinking-then-no-arg-tool.json",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures")
                .join(fixture);
            let text = std::fs::read_to_string(path).unwrap();
            assert!(agree(&text, &Limits::default()), "{fixture}");
        }
    }
}
