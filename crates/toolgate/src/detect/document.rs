//! One JSON document: find its shape and hand each part to its format's
//! reader.
//!
//! Every object is read once into [`Obj`], a borrowed struct of the keys any
//! format uses; the rest of the document is skipped, never built into a
//! tree. The first shape that matches wins, so one object is never read as
//! two formats (a Vercel result holds the same calls in `response.messages`,
//! `steps` and `content`: only the first is read).

use std::borrow::Cow;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::collect::Collector;
use crate::detect::{
    anthropic, bedrock, gemini, generic, mcp, openai_chat, openai_responses, vercel,
};
use crate::model::Format;
use crate::verdict::ViolationCode;

/// Why a body is not one JSON document.
#[derive(Debug)]
pub(crate) enum NotOne {
    /// One document followed by more: a sequence of events.
    Sequence,
    Invalid(serde_json::Error),
}

/// The keys of an object that any reader looks at. Fields are borrowed:
/// nested values stay raw text until a reader asks for them.
#[derive(Debug, Default, Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
pub(crate) struct Obj<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) role: Option<Cow<'a, str>>,
    // OpenAI Chat
    #[serde(borrow, default)]
    pub(crate) choices: Option<Objects<'a>>,
    #[serde(borrow, default)]
    pub(crate) tool_calls: Option<Objects<'a>>,
    #[serde(borrow, default)]
    pub(crate) function: Option<Maybe<'a>>,
    #[serde(borrow, default)]
    pub(crate) function_call: Option<Maybe<'a>>,
    #[serde(borrow)]
    pub(crate) tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) content: Option<&'a RawValue>,
    // conversations
    #[serde(borrow, default)]
    pub(crate) messages: Option<Objects<'a>>,
    #[serde(borrow, default)]
    pub(crate) message: Option<Maybe<'a>>,
    // OpenAI Responses, spans, generic
    #[serde(borrow)]
    pub(crate) output: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) input: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) parameters: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) args: Option<&'a RawValue>,
    // Gemini
    #[serde(borrow, default)]
    pub(crate) candidates: Option<Objects<'a>>,
    #[serde(borrow, default)]
    pub(crate) contents: Option<Objects<'a>>,
    #[serde(borrow, default)]
    pub(crate) parts: Option<Objects<'a>>,
    #[serde(borrow, default)]
    pub(crate) functionCall: Option<Maybe<'a>>,
    #[serde(borrow, default)]
    pub(crate) functionResponse: Option<Maybe<'a>>,
    #[serde(borrow, default)]
    pub(crate) function_response: Option<Maybe<'a>>,
    // Anthropic (a lone block)
    #[serde(borrow)]
    pub(crate) tool_use_id: Option<Cow<'a, str>>,
    // Bedrock
    #[serde(borrow, default)]
    pub(crate) toolUse: Option<Maybe<'a>>,
    #[serde(borrow, default)]
    pub(crate) toolResult: Option<Maybe<'a>>,
    // Vercel AI SDK
    #[serde(borrow)]
    pub(crate) toolName: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) toolCalls: Option<Objects<'a>>,
    #[serde(borrow)]
    pub(crate) response: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) steps: Option<Objects<'a>>,
    // MCP / JSON-RPC
    #[serde(borrow)]
    pub(crate) jsonrpc: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) tools: Option<&'a RawValue>,
    /// Marks a request (beside `tools`).
    #[serde(borrow)]
    pub(crate) model: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) inputSchema: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) input_schema: Option<&'a RawValue>,
    // results and their status
    #[serde(borrow)]
    pub(crate) toolCallId: Option<Cow<'a, str>>,
    pub(crate) is_error: Option<bool>,
    pub(crate) isError: Option<bool>,
    #[serde(borrow)]
    pub(crate) status: Option<Cow<'a, str>>,
    // custom and hosted calls
    #[serde(borrow, default)]
    pub(crate) custom: Option<Maybe<'a>>,
    #[serde(borrow)]
    pub(crate) action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) delta: Option<Maybe<'a>>,
    #[serde(borrow)]
    pub(crate) toolUseId: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) partialArgs: Option<&'a RawValue>,
    pub(crate) willContinue: Option<bool>,
}

/// The objects of an array, read in the same pass as their parent. Elements
/// that are not objects are skipped; a value that is not an array is empty.
#[derive(Debug, Default)]
#[allow(clippy::vec_box)] // an `Obj` is about 1 KB: boxed, growing the list moves pointers
pub(crate) struct Objects<'a>(pub(crate) Vec<Box<Obj<'a>>>);

/// An object read in the same pass as its parent; `None` when the value is
/// not an object.
#[derive(Debug, Default)]
pub(crate) struct Maybe<'a>(pub(crate) Option<Box<Obj<'a>>>);

impl<'a> Objects<'a> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Obj<'a>> {
        self.0.iter().map(|o| &**o)
    }
}

impl<'a> Maybe<'a> {
    pub(crate) fn get(&self) -> Option<&Obj<'a>> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Maybe<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        Ok(match Root::deserialize(de)? {
            Root::Object(obj) => Maybe(Some(obj)),
            Root::Array(..) | Root::Scalar => Maybe(None),
        })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Objects<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        Ok(match Root::deserialize(de)? {
            Root::Array(list, _) => list,
            Root::Object(_) | Root::Scalar => Objects(Vec::new()),
        })
    }
}

/// Read one whole document into `out`.
pub(crate) fn read(body: &str, out: &mut Collector<'_>) -> Result<(), NotOne> {
    let mut de = serde_json::Deserializer::from_str(body);
    let root = Root::deserialize(&mut de).map_err(NotOne::Invalid)?;
    if de.end().is_err() {
        return Err(NotOne::Sequence);
    }
    let read = match &root {
        Root::Object(o) => object(o, out),
        Root::Array(list, empty) => {
            if *empty {
                // An empty list is an empty conversation: recognised.
                out.saw(Format::Generic);
            }
            list.iter().try_for_each(|o| object(o, out))
        }
        Root::Scalar => Ok(()),
    };
    if let Err(err) = read {
        out.violation(
            super::code_of(&err),
            super::json_error_message("the payload", &err),
        );
    } else if out.format().is_none() && !out.has_violations() {
        out.violation(ViolationCode::MalformedPayload, super::UNRECOGNISED);
    }
    Ok(())
}

/// Any value, read in one pass: an object, a list of the objects of an
/// array (and whether the array is empty), or anything else, which holds
/// no call. [`Maybe`] and [`Objects`] are read through it.
enum Root<'a> {
    Object(Box<Obj<'a>>),
    Array(Objects<'a>, bool),
    Scalar,
}

impl<'de: 'a, 'a> Deserialize<'de> for Root<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(RootVisitor(std::marker::PhantomData))
    }
}

struct RootVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for RootVisitor<'a> {
    type Value = Root<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object or array")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Root<'a>, A::Error> {
        Obj::deserialize(MapAccessDeserializer::new(map)).map(|o| Root::Object(Box::new(o)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Root<'a>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
        let mut empty = true;
        while let Some(Maybe(item)) = seq.next_element::<Maybe<'a>>()? {
            empty = false;
            items.extend(item);
        }
        Ok(Root::Array(Objects(items), empty))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Root<'a>, E> {
        Ok(Root::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Root<'a>, E> {
        Ok(Root::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Root<'a>, E> {
        Ok(Root::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Root<'a>, E> {
        Ok(Root::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Root<'a>, E> {
        Ok(Root::Scalar)
    }
    fn visit_unit<E>(self) -> Result<Root<'a>, E> {
        Ok(Root::Scalar)
    }
}

pub(crate) type Result<T, E = serde_json::Error> = std::result::Result<T, E>;

/// Parse a raw value into a typed, borrowed view.
pub(crate) fn parse<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Result<T> {
    serde_json::from_str(raw.get())
}

pub(crate) fn is_array(raw: &RawValue) -> bool {
    raw.get().starts_with('[')
}

pub(crate) fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

/// A string-valued raw id (`"call_1"`) or a number (`7`, JSON-RPC), as text.
pub(crate) fn id_text(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let raw = raw?;
    let text = raw.get();
    match text.as_bytes().first()? {
        b'"' => serde_json::from_str::<Cow<'_, str>>(text).ok(),
        b'-' | b'0'..=b'9' => Some(Cow::Borrowed(text)),
        _ => None,
    }
}

/// Read any value: an object by its shape, an array element by element.
pub(crate) fn value(raw: &RawValue, out: &mut Collector<'_>) -> Result<()> {
    if is_array(raw) {
        let list: Objects<'_> = parse(raw)?;
        for o in list.iter() {
            object(o, out)?;
        }
        // An empty list is an empty conversation: recognised, no calls.
        if raw.get()[1..].trim_start().starts_with(']') {
            out.saw(Format::Generic);
        }
        Ok(())
    } else if is_object(raw) {
        object(&parse(raw)?, out)
    } else {
        Ok(())
    }
}

/// Read one object by its shape. The order of the checks is the priority.
pub(crate) fn object(o: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    if !out.descend() {
        return Ok(());
    }
    let read = shape(o, out);
    out.ascend();
    read
}

fn shape(o: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    let kind = o.kind.as_deref();
    if let Some(tools) = o.tools.filter(|t| is_array(t)) {
        if o.messages.is_some() || o.input.is_some() || o.contents.is_some() || o.model.is_some() {
            // A request: the tools the application declares for the model.
            out.declare_tools(tools);
        }
    }
    if o.jsonrpc.is_some() || o.method.is_some() {
        return mcp::message(o, out);
    }
    // A logged exchange holds the request and the response side by side:
    // the request's turns come first, then the response's.
    if let Some(choices) = &o.choices {
        if let Some(messages) = &o.messages {
            conversation(messages, out)?;
        }
        return openai_chat::choices(choices, out);
    }
    if let Some(candidates) = &o.candidates {
        if let Some(contents) = &o.contents {
            gemini::contents(contents, out)?;
        }
        return gemini::candidates(candidates, out);
    }
    if let Some(contents) = &o.contents {
        return gemini::contents(contents, out);
    }
    if o.role.is_some() || kind == Some("message") {
        return message(o, out);
    }
    if let Some(messages) = &o.messages {
        return conversation(messages, out);
    }
    if let Some(output) = o.output {
        if is_array(output) {
            if let Some(input) = o.input.filter(|i| is_array(i)) {
                openai_responses::items(input, out, Format::OpenAiResponses)?;
            }
            return openai_responses::items(output, out, Format::OpenAiResponses);
        }
        if o.name.is_none() && o.toolName.is_none() && o.call_id.is_none() {
            if let Some(input) = o.input.filter(|i| is_object(i) || is_array(i)) {
                // A trace span: the request, then the response.
                value(input, out)?;
            }
            return value(output, out);
        }
    }
    if let Some(input) = o.input.filter(|i| is_array(i)) {
        if o.name.is_none() && o.toolName.is_none() {
            return openai_responses::items(input, out, Format::OpenAiResponses);
        }
    }
    if let Some(message) = o.message.as_ref().and_then(Maybe::get) {
        // Bedrock Converse `output.message`, or any `{message: {...}}`.
        return object(message, out);
    }
    if let Some(response) = o.response.filter(|r| is_object(r)) {
        // A Vercel result keeps the whole trajectory in `response.messages`
        // and only the last step in `content`, `steps`, `toolCalls`.
        let r: Obj<'_> = parse(response)?;
        let own = o.steps.is_some() || o.content.is_some() || o.toolCalls.is_some();
        if r.messages.is_some() || !own {
            return object(&r, out);
        }
    }
    if let Some(steps) = &o.steps {
        return vercel::steps(steps, out);
    }
    if let Some(kind) = kind {
        if openai_responses::is_item_type(kind) {
            return openai_responses::item(o, out, Format::OpenAiResponses);
        }
    }
    if o.kind.is_some() && block(o, out)? {
        return Ok(());
    }
    if let Some(content) = o.content.filter(|c| is_array(c)) {
        // A role-less list of content blocks (a Vercel result's `content`):
        // the model's output.
        out.next_turn(Some("assistant"));
        return blocks(content, out, Format::Anthropic);
    }
    if let Some(calls) = &o.toolCalls {
        out.next_turn(Some("assistant"));
        vercel::tool_calls(calls, out);
        return Ok(());
    }
    if let Some(calls) = &o.tool_calls {
        return generic::tool_calls(calls, out, Format::Generic);
    }
    if o.toolUse.is_some() || o.toolResult.is_some() {
        bedrock::block(o, out);
        return Ok(());
    }
    if o.functionCall.is_some() || o.functionResponse.is_some() || o.function_response.is_some() {
        gemini::part(o, out);
        return Ok(());
    }
    if let Some(function) = get(&o.function).or_else(|| get(&o.function_call)) {
        generic::function(o.id, function, out);
        return Ok(());
    }
    if o.inputSchema.is_some() || o.input_schema.is_some() || o.tools.is_some_and(is_array) {
        // Tool declarations (an MCP `tools/list` result, a tool): no calls.
        out.saw(Format::Mcp);
        return Ok(());
    }
    generic::call(o, out);
    Ok(())
}

/// The object of an optional [`Maybe`] field.
#[allow(clippy::ref_option)] // read as `get(&o.function)` at every call site
pub(crate) fn get<'o, 'a>(field: &'o Option<Maybe<'a>>) -> Option<&'o Obj<'a>> {
    field.as_ref().and_then(Maybe::get)
}

/// A list of messages of any format: every turn in order.
pub(crate) fn conversation(messages: &Objects<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Generic);
    for m in messages.iter() {
        message(m, out)?;
    }
    Ok(())
}

/// One message of any format: its calls and results are in `tool_calls`,
/// `content` or `parts`.
pub(crate) fn message(o: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    let role = o.role.as_deref();
    out.next_turn(role);
    if role == Some("tool") || role == Some("function") {
        match o.content {
            // A Vercel `role: tool` message holds `tool-result` parts.
            Some(content) if o.tool_call_id.is_none() && is_array(content) => {
                blocks(content, out, Format::VercelAi)?;
            }
            _ => openai_chat::result(o, out),
        }
        return Ok(());
    }
    if let Some(calls) = &o.tool_calls {
        generic::tool_calls(calls, out, Format::OpenAiChat)?;
    }
    if let Some(function) = get(&o.function_call) {
        generic::function(None, function, out);
    }
    if let Some(content) = o.content.filter(|c| is_array(c)) {
        blocks(content, out, Format::Anthropic)?;
    }
    if let Some(parts) = &o.parts {
        gemini::parts(parts, out);
    }
    out.saw(Format::OpenAiChat);
    Ok(())
}

/// A list of content blocks: Anthropic, Bedrock, Vercel, Gemini parts.
pub(crate) fn blocks(content: &RawValue, out: &mut Collector<'_>, saw: Format) -> Result<()> {
    out.saw(saw);
    let blocks: Objects<'_> = parse(content)?;
    for b in blocks.iter() {
        if !block(b, out)? {
            if b.toolUse.is_some() || b.toolResult.is_some() {
                bedrock::block(b, out);
            } else if b.functionCall.is_some()
                || b.function_call.is_some()
                || b.functionResponse.is_some()
                || b.function_response.is_some()
            {
                gemini::part(b, out);
            }
        }
    }
    Ok(())
}

/// One typed block (`type: tool_use`, `tool-call`, `function_call`, ...).
/// Returns false when the type is not a call or result type.
pub(crate) fn block(b: &Obj<'_>, out: &mut Collector<'_>) -> Result<bool> {
    let Some(kind) = b.kind.as_deref() else {
        return Ok(false);
    };
    match kind {
        "tool_use" | "server_tool_use" | "mcp_tool_use" | "tool_result" => {
            anthropic::block(b, kind, out);
        }
        "tool-call" | "tool-result" => vercel::part(b, kind, out),
        _ if openai_responses::is_item_type(kind) => {
            openai_responses::item(b, out, Format::OpenAiResponses)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}
