//! One JSON document: every object checked against the whole position
//! table ([`positions`]), nothing guessed.
//!
//! An object is read for what it is itself (a call by its `type`, its own
//! name and arguments keys, or a single-call key such as `function`; a
//! result; a message with a role) and then for every container key it
//! holds, in the table's order. Calls read from two places in one object
//! are one call only when they carry the same id and agree; readings that
//! disagree refuse the payload (see [`Collector::merge`]).

use std::borrow::Cow;

use serde::Deserialize;

use crate::detect::args::clip;
use crate::detect::collect::{ArgSource, Collector, Mark};
use crate::detect::mcp;
use crate::detect::node::{
    id_text, is, parse, parse_node, text, Flag, Node, Obj, Raw, ReadArguments, Result,
};
use crate::detect::positions::{
    self, Container, Field, Holds, HostedArgs, Single, Tag, ARGUMENT_KEYS,
};
use crate::model::{ArgumentError, ArgumentErrorReason, Arguments, CallKind, Format};
use crate::verdict::ViolationCode;

/// Why a body is not one JSON document.
#[derive(Debug)]
pub(crate) enum NotOne {
    /// One document followed by more: a sequence of events.
    Sequence,
    Invalid(serde_json::Error),
}

/// Parse a body that is one whole document; [`NotOne::Sequence`] when its
/// first document is followed by more.
pub(crate) fn parse_whole(body: &str) -> Result<Node<'_>, NotOne> {
    let mut de = serde_json::Deserializer::from_str(body);
    let root = Node::deserialize(&mut de).map_err(NotOne::Invalid)?;
    if de.end().is_err() {
        return Err(NotOne::Sequence);
    }
    Ok(root)
}

/// Read one whole document into `out`.
pub(crate) fn read(body: &str, out: &mut Collector<'_>) -> Result<(), NotOne> {
    read_root(&parse_whole(body)?, out);
    Ok(())
}

/// Read a whole document already read into a node.
pub(crate) fn read_root(root: &Node<'_>, out: &mut Collector<'_>) {
    if let Err(err) = root_node(root, out) {
        out.violation(
            super::code_of(&err),
            super::json_error_message("the payload", &err),
        );
    }
}

/// Where the calls of a document sit (each call's container keys from the
/// root and the key it was read through, joined by `/`), without reading
/// them, and whether the document is malformed (a call container of the
/// wrong type): a stream checks that an event carries calls only where its
/// format's decoder reads them.
///
/// Read with the fast reader, as a whole body is, and by the reference
/// reader when the fast one leaves the document to it (past its depth
/// bound, or a document it does not read) or the walk fails; debug builds
/// read every event both ways and assert the two censuses equal.
pub(crate) fn census(text: &str, limits: &crate::detect::Limits) -> Result<(Vec<String>, bool)> {
    let depth = limits.max_depth.min(super::limits::HARD_MAX_DEPTH);
    let fast = super::views::with(|arena| {
        let root = super::fast::document(text, arena, depth)?;
        census_of(&root, limits).ok()
    });
    match fast {
        Some(found) => {
            debug_assert_eq!(
                Some(&found),
                reference_census(text, limits).as_ref().ok(),
                "the fast census of an event differs from the reference one: {text}"
            );
            Ok(found)
        }
        None => reference_census(text, limits),
    }
}

/// [`census`] with the reference reader.
fn reference_census(text: &str, limits: &crate::detect::Limits) -> Result<(Vec<String>, bool)> {
    census_of(&serde_json::from_str(text)?, limits)
}

/// The census of a document read by either reader.
fn census_of(root: &Node<'_>, limits: &crate::detect::Limits) -> Result<(Vec<String>, bool)> {
    let mut out = Collector::census(limits);
    root_node(root, &mut out)?;
    Ok(out.positions())
}

/// Text that only a value holding a call position contains.
const CALL_MARKERS: [&str; 8] = [
    "\"tool_calls\"",
    "\"tool_use\"",
    "\"function_call\"",
    "\"functionCall\"",
    "\"toolUse\"",
    "\"toolCalls\"",
    "\"tools/call\"",
    "\"tool-call\"",
];

/// A value under a key of no row, read as a container.
const UNKNOWN: Container = Container {
    key: "*",
    holds: Holds::ListOrObject,
    format: Format::Generic,
    argument: false,
    content: false,
    repeats: false,
};

/// The values of an object of no known shape (no key of the table) that
/// hold a call position, each read as a container: a LangGraph update
/// (`{"agent": {"messages": [...]}}`), a log keyed by step names.
pub(crate) fn unknown_keys(body: &str, out: &mut Collector<'_>) -> Result<()> {
    let Values(values) = serde_json::from_str(body)?;
    for raw in &values {
        let text = raw.get();
        if text.starts_with(['{', '[']) && CALL_MARKERS.iter().any(|marker| text.contains(marker)) {
            read_container(&UNKNOWN, Field::Raw(Raw::from(*raw)), out)?;
        }
    }
    Ok(())
}

/// Every value of an object under a key of no row, in order, a key given
/// twice included.
struct Values<'a>(Vec<&'a serde_json::value::RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Values<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Values<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Values<'a>, A::Error> {
                let mut values = Vec::new();
                while let Some((key, value)) =
                    map.next_entry::<Cow<'de, str>, &'de serde_json::value::RawValue>()?
                {
                    // A key of a row is read by its row, or not at all.
                    if !crate::detect::fast::is_key(&key) && positions::rare_row(&key).is_none() {
                        values.push(value);
                    }
                }
                Ok(Values(values))
            }
        }
        de.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Read one whole document given as raw JSON (a payload inside a stream).
pub(crate) fn value(raw: Raw<'_>, out: &mut Collector<'_>) -> Result<()> {
    let root: Node<'_> = parse_node(raw)?;
    root_node(&root, out)
}

fn root_node(root: &Node<'_>, out: &mut Collector<'_>) -> Result<()> {
    // The elements of a top-level array are a conversation's messages; a
    // single object is a model's answer (or one call).
    let listed = matches!(root, Node::List(_));
    each_object(std::slice::from_ref(root), &mut |o| {
        out.listed = listed;
        object(o, Slot::Root, out)
    })
}

/// Every object of a list, in order, those of nested lists too (a list of
/// lists of messages holds messages). Text and scalars hold no call.
fn each_object<'n, 'a: 'n>(
    items: &'n [Node<'a>],
    read: &mut impl FnMut(&'n Obj<'a>) -> Result<()>,
) -> Result<()> {
    for item in items {
        match item {
            Node::Object(o) => read(o)?,
            Node::List(inner) => each_object(inner, read)?,
            Node::Text | Node::Null | Node::Scalar => {}
        }
    }
    Ok(())
}

/// Where an object sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The document itself, or an element of a top-level array: seed 001's
    /// `{"name": "search"}` is a call here, with no arguments key.
    Root,
    /// An element of a call list (`tool_calls`, `toolCalls`, ...): it is a
    /// call, whatever else it holds.
    Call,
    /// An element of `invalid_tool_calls`: a call the provider could not
    /// parse.
    InvalidCall,
    /// Anywhere else.
    Inner,
}

/// Read one object against the whole table.
pub(crate) fn object(o: &Obj<'_>, slot: Slot, out: &mut Collector<'_>) -> Result<()> {
    object_as(o, slot, None, out)
}

/// Read one object, whose role is `given` when it says none itself (the
/// `kwargs` of a LangChain `lc` constructor, named by its class).
fn object_as(
    o: &Obj<'_>,
    slot: Slot,
    given: Option<&'static str>,
    out: &mut Collector<'_>,
) -> Result<()> {
    let listed = std::mem::take(&mut out.listed);
    if !out.descend() {
        return Ok(());
    }
    let tag = o.kind.as_deref().and_then(positions::tag);
    if let (Some(Tag::Message(Some(by_type))), Some(by_role)) = (tag, o.role.as_deref()) {
        if by_role != by_type {
            out.violation(
                ViolationCode::MalformedPayload,
                format!(
                    "a message's role `{}` and its type `{}` disagree",
                    clip(by_role),
                    clip(o.kind.as_deref().unwrap_or_default())
                ),
            );
        }
    }
    // An element of a call list is a call whatever role it claims.
    let role = match slot {
        Slot::Call | Slot::InvalidCall => None,
        Slot::Root | Slot::Inner => role(o, tag).or(given.filter(|_| tag.is_none())),
    };
    let mark = out.mark();
    if let Some(role) = role {
        out.next_turn(Some(role));
        out.saw(Format::Generic);
    }
    // Calls on a user or system message are not calls; a message of any
    // other role inside one (a logged exchange under a `role` key) is read
    // for its calls again.
    let outer =
        role.map(|role| out.mute_as(matches!(role, "user" | "system" | "developer"), listed));
    let read = walk(o, slot, tag, role, listed, out);
    if tag.is_some() || (slot == Slot::Root && o.error.is_some()) {
        // A known shape, even without a call (a text block, an error).
        out.saw(Format::Generic);
    }
    if let Some(outer) = outer {
        out.restore_mute(outer);
    }
    if role.is_some_and(positions::moves_on) && !out.recorded_since(mark) {
        out.moved_on();
    }
    out.ascend();
    read
}

/// The role of a message: its `role`, or what its `type` says (LangChain's
/// `ai`, `human`, ...). Calls and results tagged by type are not messages.
fn role<'o>(o: &'o Obj<'_>, tag: Option<Tag>) -> Option<&'o str> {
    match tag {
        Some(Tag::Message(Some(role))) => Some(role),
        Some(Tag::Message(None)) => Some(o.role.as_deref().unwrap_or("other")),
        Some(
            Tag::Call(..)
            | Tag::Hosted(..)
            | Tag::Invalid
            | Tag::UiTool
            | Tag::Result(_)
            | Tag::Plain,
        ) => None,
        None => o.role.as_deref(),
    }
}

/// The role of a LangChain `lc` constructor's message (`{"lc": 1, "type":
/// "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`), by class.
fn constructor_role(o: &Obj<'_>) -> Option<&'static str> {
    if o.kind.as_deref() != Some("constructor") {
        return None;
    }
    let path: Vec<Cow<'_, str>> = parse(o.id?).ok()?;
    match path.last()?.as_ref() {
        "FunctionMessage" | "FunctionMessageChunk" => Some("function"),
        class => match positions::tag(class) {
            Some(Tag::Message(Some(role))) => Some(role),
            _ => Some("other"),
        },
    }
}

/// What an object's own reading consumed: those keys are never read as
/// containers.
#[derive(Debug, Default, Clone, Copy)]
struct Own {
    /// It is a call: its argument keys are arguments.
    arguments: bool,
    /// It is a result: its content keys (and argument keys) are content.
    content: bool,
    /// It is read as a call by its name and arguments keys, but its name
    /// is no tool name any provider takes (it holds white space: a
    /// tracing span's `{"name": "chat gpt-4.1", "input": {"messages": ...},
    /// "output": ...}`): its argument keys are read as containers too.
    span: bool,
}

impl Own {
    fn consumes(self, container: &Container) -> bool {
        ((self.arguments || self.content) && container.argument && !self.span)
            || (self.content && container.content)
    }
}

fn walk(
    o: &Obj<'_>,
    slot: Slot,
    tag: Option<Tag>,
    role: Option<&str>,
    listed: bool,
    out: &mut Collector<'_>,
) -> Result<()> {
    request(o, slot, out);
    // Where the object's own call and each container's readings start,
    // and whether that container may repeat another's calls.
    let mut bounds: smallvec::SmallVec<[(Mark, bool); 4]> =
        smallvec::smallvec![(out.mark(), false)];
    if o.jsonrpc.is_some() || o.method.is_some() {
        // JSON-RPC: its `params` and `result` are the MCP reader's; every
        // other key is read as in any object.
        mcp::message(o, out)?;
    }
    let own = own(o, slot, tag, role, out)?;
    // A LangChain `messages_to_dict` dump of a message class no tag names.
    let dumped = o
        .kind
        .as_deref()
        .filter(|_| tag.is_none())
        .and_then(positions::dumped_role);
    let mut read_one = |container: &'static Container, field: Field<'_, '_>| -> Result<()> {
        if own.consumes(container)
            || (container.key == "data"
                && !(matches!(tag, Some(Tag::Message(_))) || o.object.0 || dumped.is_some()))
        {
            return Ok(());
        }
        bounds.push((out.mark(), container.repeats));
        out.enter(container.key);
        // The message a wrapper holds, with the role the wrapper gives it,
        // sitting where the wrapper does.
        let given = match container.key {
            "kwargs" => constructor_role(o),
            "data" => dumped,
            _ => None,
        };
        // Its node, if the fast reader read it ahead.
        let field = match field {
            Field::Raw(raw) => o.read_ahead.node(raw).map_or(field, Field::Node),
            Field::Node(_) => field,
        };
        let read = match given {
            // (`kwargs` and `data` are kept raw.)
            Some(role) => {
                let mut parsed = None;
                match node_of(field, &mut parsed)? {
                    Node::Object(inner) => {
                        out.listed = listed;
                        object_as(inner, Slot::Inner, Some(role), out)
                    }
                    node => read_container(container, Field::Node(node), out),
                }
            }
            None => read_container(container, field, out),
        };
        out.leave();
        read
    };
    positions::containers(o, &mut read_one)?;
    for (row, raw) in &o.rare_keys {
        if let Some(wrapper) = positions::WRAPPERS.get(usize::from(*row)) {
            read_one(wrapper, Field::Raw(*raw))?;
        }
    }
    if let Some(result) = o.result {
        if !(own.content || o.jsonrpc.is_some() || o.method.is_some()) {
            read_one(&positions::RESULT, Field::Raw(result))?;
        }
    }
    out.merge(bounds[0].0, &bounds);
    Ok(())
}

/// A request: the tools it declares, and whether it continues a
/// conversation the provider keeps.
fn request(o: &Obj<'_>, slot: Slot, out: &mut Collector<'_>) {
    // Only a request's tools join the policy: one that sends a
    // conversation (alone, or logged with its answer), or a Responses
    // response, which repeats the tools its request declared. Any other
    // answer that carries a `tools` list (a chat completion, a message)
    // declares nothing.
    let conversation = o.messages.is_some() || o.input.is_some() || o.contents.is_some();
    let responses = o.output.is_some() && o.model.is_some();
    if conversation || responses {
        if let Some(tools) = o.tools.filter(|t| t.get().starts_with('[')) {
            out.declare_tools(tools);
        }
    }
    if !(conversation || o.model.is_some() || o.system.is_some()) {
        return;
    }
    if slot == Slot::Root && (o.previous_response_id.is_some() || o.conversation.is_some()) {
        out.continues();
    }
}

/// A field's node: parsed into `parsed` when it is kept raw.
fn node_of<'p, 'a>(field: Field<'p, 'a>, parsed: &'p mut Option<Node<'a>>) -> Result<&'p Node<'a>> {
    Ok(match field {
        Field::Node(node) => node,
        Field::Raw(raw) => parsed.insert(parse_node(raw)?),
    })
}

fn read_container(c: &Container, field: Field<'_, '_>, out: &mut Collector<'_>) -> Result<()> {
    let mut parsed = None;
    let node = node_of(field, &mut parsed)?;
    match (c.holds, node) {
        (_, Node::Null)
        | (Holds::List | Holds::Object | Holds::ListOrObject, Node::Text | Node::Scalar) => {}
        (Holds::List | Holds::ListOrObject, Node::List(items)) => {
            out.saw(c.format);
            let conversation = matches!(c.key, "messages" | "contents" | "input" | "data");
            each_object(items, &mut |o| {
                if c.key == "steps" {
                    // Each step of a multi-step result is a turn.
                    out.next_turn(None);
                }
                out.listed = conversation;
                object(o, Slot::Inner, out)
            })?;
        }
        (Holds::Object | Holds::ListOrObject, Node::Object(o)) => {
            out.saw(c.format);
            object(o, Slot::Inner, out)?;
        }
        (Holds::Calls | Holds::InvalidCalls, Node::List(items)) => {
            out.saw(c.format);
            out.expect_calls(items.len());
            let slot = if c.holds == Holds::Calls {
                Slot::Call
            } else {
                Slot::InvalidCall
            };
            for item in items {
                match item {
                    Node::Object(o) => object(o, slot, out)?,
                    other => out.violation(
                        ViolationCode::MalformedPayload,
                        format!(
                            "an element of `{}` is {}, not a tool call",
                            c.key,
                            other.kind()
                        ),
                    ),
                }
            }
        }
        (holds, other) => out.violation(
            ViolationCode::MalformedPayload,
            format!(
                "`{}` is {}, where {} is expected",
                c.key,
                other.kind(),
                match holds {
                    Holds::Object => "an object",
                    Holds::List | Holds::Calls | Holds::InvalidCalls => "an array",
                    Holds::ListOrObject => "an array or an object",
                }
            ),
        ),
    }
    Ok(())
}

/// The readings of one object's call: usually one, two when a format
/// repeats itself.
type Readings<'a> = smallvec::SmallVec<[Reading<'a>; 2]>;

/// One reading of a call: where it came from and what it says.
struct Reading<'a> {
    /// Where it was read from: `type`, `name` (the object's own keys), or
    /// a single-call key (`function`, `functionCall`, ...).
    from: &'static str,
    /// The key its arguments come from, if any.
    key: Option<&'static str>,
    /// The key its name comes from (`name`, `toolName`, `type`).
    name_key: &'static str,
    format: Format,
    kind: CallKind,
    id: Option<Cow<'a, str>>,
    name: Cow<'a, str>,
    args: ArgSource<'a>,
}

/// What the object is itself: a call, a result, or neither.
fn own<'a>(
    o: &Obj<'a>,
    slot: Slot,
    tag: Option<Tag>,
    role: Option<&str>,
    out: &mut Collector<'_>,
) -> Result<Own> {
    let mut own = Own::default();
    let mut readings: Readings<'a> = Readings::new();
    typed(o, tag, &mut own, &mut readings, out);
    let result = matches!(role, Some("tool" | "function")) && role_result(o, role, out)?;
    own.content |= result;
    if !result && generic_applies(o, slot, tag, role) {
        own.arguments = true;
        own.span = o
            .name
            .as_deref()
            .is_some_and(|name| name.chars().any(char::is_whitespace));
        let id = o
            .toolCallId
            .clone()
            .or_else(|| o.call_id.clone())
            .or_else(|| id_text(o.id));
        let format = if o.toolCallId.is_some() {
            Format::VercelAi
        } else {
            Format::Generic
        };
        named(
            o,
            "name",
            format,
            CallKind::Function,
            id.as_ref(),
            &mut readings,
        );
    }
    singles(o, &mut readings, out)?;
    let beside = || argument_keys(o).filter(|(key, _)| *key != "input");
    if !own.arguments && !readings.is_empty() && beside().next().is_some() {
        // Arguments beside a single-call key (`{"function": {...},
        // "arguments": ...}`) are one more reading of that call. (`input`
        // there is a request's item list.)
        let first = &readings[0];
        let (format, kind) = (first.format, first.kind);
        let (id, name, name_key) = (first.id.clone(), first.name.clone(), first.name_key);
        // A single-call key that gives no arguments takes these.
        if readings.len() == 1 && first.key.is_none() {
            readings.clear();
        }
        for (key, raw) in beside() {
            readings.push(Reading {
                from: "name",
                key: Some(key),
                name_key,
                format,
                kind,
                id: id.clone(),
                name: name.clone(),
                args: inline(o, key, raw),
            });
        }
    }
    if readings.is_empty() && matches!(slot, Slot::Call | Slot::InvalidCall) {
        // Every element of a call list is a call, named or not, with the
        // arguments it carries.
        own.arguments = true;
        let id = id_text(o.id);
        named(
            o,
            "name",
            Format::Generic,
            CallKind::Function,
            id.as_ref(),
            &mut readings,
        );
    }
    let invalid = tag == Some(Tag::Invalid) || slot == Slot::InvalidCall;
    record(&mut readings, invalid, out);
    part_results(o, tag, out);
    Ok(own)
}

/// The call an object's `type` makes it, or its result.
fn typed<'a>(
    o: &Obj<'a>,
    tag: Option<Tag>,
    own: &mut Own,
    readings: &mut Readings<'a>,
    out: &mut Collector<'_>,
) {
    match tag {
        Some(Tag::Call(format, kind)) => {
            own.arguments = true;
            let id = match format {
                // An approval request has no call id: its `id` is what the
                // approval response names.
                Format::OpenAiResponses if o.kind.as_deref() == Some("mcp_approval_request") => {
                    id_text(o.id)
                }
                Format::OpenAiResponses => o.call_id.clone().or_else(|| id_text(o.id)),
                Format::VercelAi => o.toolCallId.clone(),
                _ => id_text(o.id),
            };
            named(o, "type", format, kind, id.as_ref(), readings);
        }
        Some(Tag::Invalid) => {
            own.arguments = true;
            let id = id_text(o.id);
            named(
                o,
                "type",
                Format::Generic,
                CallKind::Function,
                id.as_ref(),
                readings,
            );
        }
        Some(Tag::Hosted(name, where_args)) => {
            own.arguments = true;
            hosted(o, name, where_args, readings);
        }
        Some(Tag::UiTool) => {
            own.arguments = true;
            own.content = true;
            ui_tool(o, readings, out);
        }
        Some(Tag::Result(format)) => {
            own.content = true;
            tagged_result(o, format, out);
        }
        Some(Tag::Message(_) | Tag::Plain) | None => {}
    }
}

/// A hosted call (a Responses `*_call` item the provider or the
/// application runs): its arguments from where its type keeps them, and
/// every other place a call's arguments may be (`action`, `operation`,
/// `arguments`, ...) one more reading that must agree with them.
fn hosted<'a>(o: &Obj<'a>, name: &'static str, at: HostedArgs, readings: &mut Readings<'a>) {
    let id = o.call_id.clone().or_else(|| id_text(o.id));
    let reading = |key: Option<&'static str>, args: ArgSource<'a>| Reading {
        from: "type",
        key,
        name_key: "type",
        format: Format::OpenAiResponses,
        kind: CallKind::Hosted,
        id: id.clone(),
        name: Cow::Borrowed(name),
        args,
    };
    let own_key = match at {
        HostedArgs::Object(key) | HostedArgs::Field(key) => Some(key),
        HostedArgs::Arguments => Some("arguments"),
        HostedArgs::None => None,
    };
    let places = [
        ("action", o.action),
        ("operation", o.rare("operation")),
        ("queries", o.rare("queries")),
        ("code", o.rare("code")),
    ]
    .into_iter()
    .filter_map(|(key, raw)| raw.map(|raw| (key, raw)))
    .chain(argument_keys(o));
    let mut own_read = false;
    for (key, raw) in places {
        let args = if positions::hosted_field(key) {
            // A value, not an object: the arguments are `{key: value}`.
            ArgSource::Text(Cow::Owned(format!("{{\"{key}\":{}}}", raw.get())))
        } else {
            inline(o, key, raw)
        };
        own_read |= Some(key) == own_key;
        readings.push(reading(Some(key), args));
    }
    if !own_read {
        // Its own place is empty: `{}`, unless another place says more
        // (which then disagrees).
        readings.insert(0, reading(None, ArgSource::Absent));
    }
    if o.name.is_some() || o.toolName.is_some() {
        // A name beside the type is a second reading of the call.
        named(
            o,
            "name",
            Format::OpenAiResponses,
            CallKind::Hosted,
            id.as_ref(),
            readings,
        );
    }
}

/// A `role: tool` message (OpenAI, LangChain's `ToolMessage`) or a legacy
/// `role: function` one: a result when it carries one (an id, a name or
/// content). A message that only holds parts (a Vercel tool message's
/// `tool-result` parts, Gemini's `functionResponse` parts) or wraps
/// another (LangChain's `data`) is read through its containers. Returns
/// whether it is a result.
fn role_result(o: &Obj<'_>, role: Option<&str>, out: &mut Collector<'_>) -> Result<bool> {
    let holds_parts = match o.content {
        Some(content) if content.get().starts_with('[') && o.tool_call_id.is_none() => {
            match parse_node(content)? {
                Node::List(items) => items.iter().any(|item| {
                    matches!(item, Node::Object(part)
                        if matches!(part.kind.as_deref().and_then(positions::tag),
                            Some(Tag::Result(Format::VercelAi))))
                }),
                _ => false,
            }
        }
        _ => false,
    };
    let carries = o.tool_call_id.is_some() || o.name.is_some() || o.content.is_some();
    if holds_parts || !carries {
        return Ok(false);
    }
    if role == Some("function") && o.tool_call_id.is_none() {
        out.result_by_name(Format::OpenAiChat, o.name.as_deref(), o.content);
    } else {
        out.result(
            Format::OpenAiChat,
            o.tool_call_id.as_deref(),
            o.name.as_deref(),
            o.content,
            is(o.status, "error"),
        );
    }
    Ok(true)
}

/// The calls of the object's single-call keys (`function`, `functionCall`,
/// ...), and the results of its single-result keys.
fn singles<'a>(o: &Obj<'a>, readings: &mut Readings<'a>, out: &mut Collector<'_>) -> Result<()> {
    positions::singles(o, |key, single, field| {
        if key == "function_call" && o.messages.is_some() && forces_a_function(field) {
            // A request's legacy `function_call` ("auto", "none", or a
            // name alone) forces a function: it is not a call.
            return Ok(());
        }
        let mut parsed = None;
        match node_of(field, &mut parsed)? {
            Node::Object(inner) => one(o, inner, key, single, readings, out),
            Node::Null => {}
            other => out.violation(
                ViolationCode::MalformedPayload,
                format!("`{key}` is {}, where an object is expected", other.kind()),
            ),
        }
        Ok(())
    })?;
    Ok(())
}

/// Whether a request's `function_call` only chooses a function: a string,
/// or an object that names one and gives no arguments.
fn forces_a_function(field: Field<'_, '_>) -> bool {
    let Field::Raw(raw) = field else {
        return false;
    };
    match parse_node(raw) {
        Ok(Node::Text) => true,
        Ok(Node::Object(f)) => argument_keys(&f).next().is_none(),
        _ => false,
    }
}

/// The results a call part carries once its tool ran, recorded after its
/// call: an AI SDK UI part's output (v5 `tool-<name>`, `dynamic-tool`), a
/// v4 tool invocation in state `result`.
fn part_results(o: &Obj<'_>, tag: Option<Tag>, out: &mut Collector<'_>) {
    if tag == Some(Tag::UiTool) {
        let name = ui_tool_name(o).or(o.toolName.as_deref());
        let call_id = o.toolCallId.as_deref();
        match text(o.state).as_deref() {
            Some("output-available") => {
                out.result(Format::VercelAi, call_id, name, o.output, false);
            }
            Some("output-error") => {
                // (A rare key keeps a `null` as given: it is no content.)
                let error = o.rare("errorText").filter(|raw| raw.get() != "null");
                out.result(Format::VercelAi, call_id, name, error, true);
            }
            Some("output-denied") => out.result_value(
                Format::VercelAi,
                call_id,
                name,
                Some(serde_json::json!({"type": "execution-denied"})),
                true,
            ),
            _ => {}
        }
    }
    let parsed;
    let invocation = match o.toolInvocation.map(parse::<Node<'_>>) {
        Some(Ok(Node::Object(inner))) => {
            parsed = inner;
            Some(&*parsed)
        }
        _ => (tag.is_none() && o.toolCallId.is_some()).then_some(o),
    };
    if let Some(v4) = invocation.filter(|i| is(i.state, "result")) {
        out.result(
            Format::VercelAi,
            v4.toolCallId.as_deref(),
            v4.toolName.as_deref(),
            v4.result,
            false,
        );
    }
}

/// Whether an object is a call by its own keys: a name (`name`,
/// `toolName`) and an arguments key, or a name alone where a call sits.
fn generic_applies(o: &Obj<'_>, slot: Slot, tag: Option<Tag>, role: Option<&str>) -> bool {
    // Types that say what the object is (a call, a result, a UI part) read
    // it their own way; any other type leaves its keys to this rule.
    let untyped = matches!(tag, None | Some(Tag::Message(_) | Tag::Plain));
    let named = o.name.is_some() || o.toolName.is_some();
    if !untyped || !named {
        return false;
    }
    let has_arguments = argument_keys(o).next().is_some();
    // A name alone: in a call list, the call's name whatever else the
    // element says; at the root, seed 001's `{"name": "search"}` (not a
    // tool declaration's name beside its `inputSchema`).
    let declaration = o.inputSchema.is_some() || o.input_schema.is_some();
    let alone = matches!(slot, Slot::Call | Slot::InvalidCall)
        || (slot == Slot::Root && role.is_none() && o.kind.is_none() && !declaration);
    has_arguments || alone
}

/// The readings of a call named by `name` / `toolName`, one per argument
/// key present (they must agree), or one with no arguments.
fn named<'a>(
    o: &Obj<'a>,
    from: &'static str,
    format: Format,
    kind: CallKind,
    id: Option<&Cow<'a, str>>,
    readings: &mut Readings<'a>,
) {
    let mut names = [
        o.name.clone().map(|name| ("name", name)),
        o.toolName.clone().map(|name| ("toolName", name)),
    ];
    if names.iter().all(Option::is_none) {
        names[0] = Some(("name", Cow::Borrowed("")));
    }
    let incomplete = matches!(
        text(o.state).as_deref(),
        Some("input-streaming" | "partial-call")
    );
    for (name_key, name) in names.into_iter().flatten() {
        let before = readings.len();
        for (key, raw) in argument_keys(o) {
            let args = if incomplete {
                ArgSource::Invalid(incomplete_error(), raw.get().to_owned())
            } else if kind == CallKind::Custom && raw.get().starts_with('"') {
                text(Some(raw)).map_or(ArgSource::Inline(raw), ArgSource::Freeform)
            } else {
                inline(o, key, raw)
            };
            readings.push(Reading {
                from,
                key: Some(key),
                name_key,
                format,
                kind,
                id: id.cloned(),
                name: name.clone(),
                args,
            });
        }
        if readings.len() == before {
            readings.push(Reading {
                from,
                key: None,
                name_key,
                format,
                kind,
                id: id.cloned(),
                name,
                args: if incomplete {
                    ArgSource::Invalid(incomplete_error(), String::new())
                } else {
                    ArgSource::Absent
                },
            });
        }
    }
}

/// The argument keys the object holds, named as in [`ARGUMENT_KEYS`].
fn argument_keys<'a>(o: &Obj<'a>) -> impl Iterator<Item = (&'static str, Raw<'a>)> {
    ARGUMENT_KEYS
        .into_iter()
        .zip([o.arguments, o.params, o.parameters, o.args, o.input])
        .filter_map(|(key, raw)| raw.map(|raw| (key, raw)))
}

/// The arguments `key` holds: what the fast reader read of them in
/// passing, if it did (the first reading takes it), else the raw value.
fn inline<'a>(o: &Obj<'a>, key: &str, raw: Raw<'a>) -> ArgSource<'a> {
    match o.arguments_read.take(key) {
        Some(ReadArguments::Tape(_, tape)) => ArgSource::Tape(tape, raw),
        Some(ReadArguments::Text(text)) => ArgSource::Text(Cow::Owned(text.into())),
        Some(ReadArguments::Twin(_, text)) => ArgSource::twin(raw, text),
        None => ArgSource::Inline(raw),
    }
}

fn incomplete_error() -> ArgumentError {
    ArgumentError {
        code: ViolationCode::MalformedArguments,
        reason: ArgumentErrorReason::Incomplete,
        message: "the call's input is still streaming: its arguments are not final".to_owned(),
    }
}

/// A Vercel AI SDK UI message tool part: `tool-<name>` (v5) or
/// `dynamic-tool` with `toolName`; a call, and a result once its state
/// says the tool ran.
fn ui_tool<'a>(o: &Obj<'a>, readings: &mut Readings<'a>, out: &mut Collector<'_>) {
    let typed_name = ui_tool_name(o);
    let id = o.toolCallId.clone();
    let before = readings.len();
    named(
        o,
        "type",
        Format::VercelAi,
        CallKind::Function,
        id.as_ref(),
        readings,
    );
    if let Some(name) = typed_name {
        for reading in &mut readings[before..] {
            if reading.name.is_empty() {
                reading.name = Cow::Owned(name.to_owned());
                reading.name_key = "type";
            } else if reading.name != name {
                out.violation(
                    ViolationCode::MalformedPayload,
                    "a tool part's type and its toolName name different tools",
                );
            }
        }
    }
}

/// The tool a UI part's type names (`tool-<name>`; `dynamic-tool` names
/// none: its `toolName` does).
fn ui_tool_name<'o>(o: &'o Obj<'_>) -> Option<&'o str> {
    let kind = o.kind.as_deref()?;
    kind.strip_prefix("tool-")
        .filter(|_| kind != "dynamic-tool")
}

/// A result tagged by its type.
fn tagged_result(o: &Obj<'_>, format: Format, out: &mut Collector<'_>) {
    let kind = o.kind.as_deref().unwrap_or_default();
    match format {
        Format::Anthropic => {
            // An MCP sampling message's block (2025-11-25) spells the
            // keys `toolUseId` and `isError`.
            let tool_use_id = text(o.rare("toolUseId"));
            let Ok(id) = one_id(
                ("tool_use_id", &o.tool_use_id),
                ("toolUseId", &tool_use_id),
                out,
            ) else {
                return;
            };
            let is_error = o.is_error.or(o.isError).unwrap_or(false);
            out.result(format, id, None, o.content, is_error);
        }
        Format::OpenAiResponses if kind == "mcp_approval_response" => approval(o, out),
        Format::OpenAiResponses => {
            let item = positions::output_item(kind);
            let own_id = (item.link == "id").then(|| id_text(o.id)).flatten();
            let id = if item.link == "id" {
                one_id(("id", &own_id), ("call_id", &o.call_id), out)
            } else {
                Ok(o.call_id.as_deref())
            };
            let Ok(id) = id else {
                return;
            };
            out.result(format, id, None, o.output, is(o.status, "failed"));
            out.shape_last(item.output);
        }
        _ => {
            let name = o.toolName.as_deref();
            if kind == "tool-error" {
                out.result(format, o.toolCallId.as_deref(), name, o.error, true);
            } else {
                out.result(
                    format,
                    o.toolCallId.as_deref(),
                    name,
                    o.output.or(o.result).or(o.content),
                    o.isError.unwrap_or(false),
                );
            }
        }
    }
}

/// A result that names its call two ways that differ: refused
/// (`malformed_payload`), since an executor may read either.
struct Refused;

/// The call id a result gives under either of two keys (`None` for
/// neither).
fn one_id<'s>(
    (key, first): (&str, &'s Option<Cow<'_, str>>),
    (other, second): (&str, &'s Option<Cow<'_, str>>),
    out: &mut Collector<'_>,
) -> std::result::Result<Option<&'s str>, Refused> {
    match (first.as_deref(), second.as_deref()) {
        (Some(a), Some(b)) if a != b => {
            out.violation(
                ViolationCode::MalformedPayload,
                format!("a tool result's `{key}` and `{other}` name different calls"),
            );
            Err(Refused)
        }
        (a, b) => Ok(a.or(b)),
    }
}

/// A Responses `mcp_approval_response`: the result of the
/// `mcp_approval_request` whose `id` is its `approval_request_id`. Its
/// content is its decision (`{"type": "mcp_approval_response", "approve":
/// true}`), none when `approve` is not a boolean; a denial is an error
/// result (the tool does not run).
fn approval(o: &Obj<'_>, out: &mut Collector<'_>) {
    let id = id_text(o.rare("approval_request_id"));
    let approve = o.approve.and_then(Flag::as_bool);
    let content = approve
        .map(|approve| serde_json::json!({"type": "mcp_approval_response", "approve": approve}));
    out.result_value(
        Format::OpenAiResponses,
        id.as_deref(),
        None,
        content,
        approve != Some(true),
    );
}

/// A key of a call object (the object a single-call key holds, a
/// `tools/call` request's params) that holds a call of its own.
pub(crate) fn nested_call_key(inner: &Obj<'_>) -> Option<&'static str> {
    [
        ("function", inner.function.is_some()),
        ("function_call", inner.function_call.is_some()),
        ("functionCall", inner.functionCall.is_some()),
        ("toolUse", inner.toolUse.is_some()),
        ("custom", inner.custom.is_some()),
        ("toolInvocation", inner.toolInvocation.is_some()),
        ("tool_calls", inner.tool_calls.is_some()),
        ("toolCalls", inner.toolCalls.is_some()),
    ]
    .into_iter()
    .find_map(|(key, there)| there.then_some(key))
}

/// The call or result a single-call key holds.
fn one<'a>(
    outer: &Obj<'a>,
    inner: &Obj<'a>,
    key: &'static str,
    single: Single,
    readings: &mut Readings<'a>,
    out: &mut Collector<'_>,
) {
    if !matches!(single, Single::GeminiResult | Single::ToolResult) {
        if let Some(nested) = nested_call_key(inner) {
            // `{"functionCall": {"name": ..., "function": {...}}}`: which
            // one runs is the executor's guess.
            out.violation(
                ViolationCode::MalformedPayload,
                format!("the call under `{key}` holds another call under `{nested}`"),
            );
        }
    }
    match single {
        Single::Function => {
            let id = id_text(outer.id).or_else(|| id_text(inner.id));
            named(
                inner,
                key,
                Format::OpenAiChat,
                CallKind::Function,
                id.as_ref(),
                readings,
            );
        }
        Single::FunctionCall => {
            let format = if inner.args.is_some() {
                Format::Gemini
            } else {
                Format::OpenAiChat
            };
            named(
                inner,
                key,
                format,
                CallKind::Function,
                id_text(inner.id).as_ref(),
                readings,
            );
        }
        Single::GeminiCall => {
            if (inner.partialArgs.is_some() || inner.willContinue.is_some()) && !out.is_census() {
                // Arguments streamed by JSON path belong to a stream; read
                // here they would be a call with partial arguments.
                out.violation(
                    ViolationCode::MalformedPayload,
                    "a Gemini functionCall with streamed partialArgs outside a stream",
                );
                return;
            }
            named(
                inner,
                key,
                Format::Gemini,
                CallKind::Function,
                id_text(inner.id).as_ref(),
                readings,
            );
        }
        Single::ToolUse => {
            let kind = match inner.kind.as_deref() {
                Some("server_tool_use") => CallKind::Hosted,
                _ => CallKind::Function,
            };
            let id = text(inner.rare("toolUseId"));
            named(inner, key, Format::Bedrock, kind, id.as_ref(), readings);
        }
        Single::Custom => {
            let id = id_text(outer.id);
            named(
                inner,
                key,
                Format::OpenAiChat,
                CallKind::Custom,
                id.as_ref(),
                readings,
            );
        }
        Single::ToolInvocation => {
            let id = inner.toolCallId.clone();
            named(
                inner,
                key,
                Format::VercelAi,
                CallKind::Function,
                id.as_ref(),
                readings,
            );
        }
        Single::GeminiResult | Single::ToolResult => single_result(inner, single, out),
    }
}

/// The result a single-result key holds.
fn single_result(inner: &Obj<'_>, single: Single, out: &mut Collector<'_>) {
    if single == Single::GeminiResult {
        let id = id_text(inner.id);
        out.result(
            Format::Gemini,
            id.as_deref(),
            inner.name.as_deref(),
            inner.response,
            false,
        );
    } else {
        out.result(
            Format::Bedrock,
            text(inner.rare("toolUseId")).as_deref(),
            None,
            inner.content,
            is(inner.status, "error"),
        );
    }
}

/// Where a reading's name came from, for messages: `function.name`.
fn named_at(reading: &Reading<'_>) -> String {
    match reading.from {
        "type" | "name" => reading.name_key.to_owned(),
        from => format!("{from}.{}", reading.name_key),
    }
}

/// Where a reading came from, for messages: `function.arguments`.
fn where_(reading: &Reading<'_>) -> String {
    match (reading.from, reading.key) {
        ("type" | "name", Some(key)) => key.to_owned(),
        (from, Some(key)) => format!("{from}.{key}"),
        (from, None) => from.to_owned(),
    }
}

/// Record the object's own call: its readings must agree (two names are
/// `malformed_payload`, two argument sets make the call `conflicting`);
/// a call the provider could not parse (`invalid`) is refused whatever its
/// arguments.
fn record(readings: &mut Readings<'_>, invalid: bool, out: &mut Collector<'_>) {
    if readings.is_empty() {
        return;
    }
    if out.is_census() {
        // Where the call sits, and through which key it was read.
        out.census_at(readings[0].from);
        return;
    }
    if readings.len() == 1 && !invalid {
        let Some(first) = readings.pop() else { return };
        out.call(
            first.format,
            first.kind,
            first.id.as_deref(),
            &first.name,
            first.args,
        );
        return;
    }
    let mut all = readings.drain(..);
    let Some(first) = all.next() else { return };
    let (first_at, first_named) = (where_(&first), named_at(&first));
    let mut read = out.arguments(first.kind, first.args);
    for other in all {
        if other.name != first.name {
            out.violation(
                ViolationCode::MalformedPayload,
                format!(
                    "one object names two different tools (in `{first_named}` and in `{}`)",
                    named_at(&other)
                ),
            );
            continue;
        }
        let other_at = where_(&other);
        let (arguments, _) = out.arguments(other.kind, other.args);
        if arguments != read.0
            && read
                .0
                .error()
                .is_none_or(|e| e.reason != ArgumentErrorReason::Conflicting)
        {
            read.0 = Arguments::Invalid(ArgumentError {
                code: ViolationCode::MalformedArguments,
                reason: ArgumentErrorReason::Conflicting,
                message: format!(
                    "the call's arguments are given twice and differ (`{first_at}` and `{other_at}`)"
                ),
            });
        }
    }
    if invalid {
        read.0 = Arguments::Invalid(ArgumentError {
            code: ViolationCode::MalformedArguments,
            reason: ArgumentErrorReason::NotJson,
            message: "the provider could not parse this tool call (invalid_tool_calls)".to_owned(),
        });
    }
    out.call_read(
        first.format,
        first.kind,
        first.id.as_deref(),
        &first.name,
        read,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::fast::tests::{corpus, variants};
    use crate::detect::Limits;

    /// The census of every event and document of the fixtures and the
    /// conformance corpus, and of each damaged variant of them, is the
    /// reference reader's, under several depth bounds: the same positions
    /// and the same malformed flag, or an error where it errs.
    #[test]
    fn the_fast_census_is_the_reference_census() {
        let limits: Vec<Limits> = [3, 4, 6, 8, 16, 64, 128]
            .into_iter()
            .map(|max_depth| Limits {
                max_depth,
                ..Limits::default()
            })
            .collect();
        let mut read = 0;
        for doc in corpus() {
            for text in std::iter::once(doc.clone()).chain(variants(&doc)) {
                for limits in &limits {
                    let fast = census(&text, limits);
                    let reference = reference_census(&text, limits);
                    match (&fast, &reference) {
                        (Ok(fast), Ok(reference)) => assert_eq!(fast, reference, "{text}"),
                        (Err(_), Err(_)) => {}
                        _ => panic!("{fast:?} against {reference:?}: {text}"),
                    }
                    read += 1;
                }
            }
        }
        assert!(read > 10_000, "{read} documents read");
    }
}
