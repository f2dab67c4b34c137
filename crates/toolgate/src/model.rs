//! The data every front shares: tool calls and tool results read from a
//! payload, and the wire format they came in.

use compact_str::CompactString;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::detect::tape::Tape;
use crate::verdict::ViolationCode;

/// The wire format a call or result was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Format {
    /// OpenAI Chat Completions: responses, messages, message lists, chunks.
    #[serde(rename = "openai_chat")]
    OpenAiChat,
    /// OpenAI Responses API: `function_call` and custom tool call items.
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    /// Anthropic Messages: `tool_use` / `tool_result` blocks.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Amazon Bedrock Converse: `toolUse` / `toolResult` blocks.
    #[serde(rename = "bedrock")]
    Bedrock,
    /// Google Gemini: `functionCall` / `functionResponse` parts.
    #[serde(rename = "gemini")]
    Gemini,
    /// Vercel AI SDK: `tool-call` parts, `toolCalls`, UI message streams.
    #[serde(rename = "vercel_ai")]
    VercelAi,
    /// Model Context Protocol: JSON-RPC `tools/call` and its results.
    #[serde(rename = "mcp")]
    Mcp,
    /// The seed shapes: `{name, arguments|params|parameters|args|input}`,
    /// `toolName`, a bare `tool_calls` array of those.
    #[serde(rename = "generic")]
    Generic,
}

impl Format {
    /// The stable spelling used in verdicts and reports.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAiChat => "openai_chat",
            Format::OpenAiResponses => "openai_responses",
            Format::Anthropic => "anthropic",
            Format::Bedrock => "bedrock",
            Format::Gemini => "gemini",
            Format::VercelAi => "vercel_ai",
            Format::Mcp => "mcp",
            Format::Generic => "generic",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the payload was framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// One JSON document.
    Json,
    /// A `text/event-stream` body.
    Sse,
    /// Several JSON documents one after another (JSON lines, Bedrock
    /// ConverseStream events).
    JsonSequence,
}

/// Who executes a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A function tool the application executes; arguments are a JSON object.
    Function,
    /// A custom (freeform) tool: the input is text, not JSON.
    Custom,
    /// A provider-hosted tool (web search, code execution, remote MCP, ...),
    /// named by its type.
    Hosted,
}

/// The arguments of a call, parsed strictly. Serialized as the object, the
/// text, or `null` when invalid (the error is serialized beside it, as the
/// call's `error`).
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// A JSON object with unique keys, within the limits.
    Object(ObjectArguments),
    /// Freeform input of a custom tool (not JSON, never JSON-validated).
    Text(String),
    /// Arguments that cannot be trusted: the call must be blocked.
    Invalid(ArgumentError),
}

impl Arguments {
    /// The object, when the arguments parsed into one.
    #[must_use]
    pub fn as_object(&self) -> Option<&Map<String, Value>> {
        match self {
            Arguments::Object(object) => Some(object),
            Arguments::Text(_) | Arguments::Invalid(_) => None,
        }
    }

    /// The error, when the arguments could not be read.
    #[must_use]
    pub fn error(&self) -> Option<&ArgumentError> {
        match self {
            Arguments::Invalid(err) => Some(err),
            Arguments::Object(_) | Arguments::Text(_) => None,
        }
    }
}

impl Serialize for Arguments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Arguments::Object(object) => object.serialize(serializer),
            Arguments::Text(text) => serializer.serialize_str(text),
            Arguments::Invalid(_) => serializer.serialize_none(),
        }
    }
}

/// An arguments object. Arguments read from a payload are kept on a compact
/// tape, which the schemas are checked on; the `serde_json` object is
/// built from it the first time it is read (it derefs to one), so a call
/// whose arguments nobody reads costs no object.
#[derive(Clone, Default)]
pub struct ObjectArguments {
    /// The tape, while the object was never changed.
    tape: Option<Tape>,
    /// The object built from the tape, once read (boxed, as `owned`: a
    /// call is moved whole from the reader to its verdict, and most calls
    /// never build one).
    built: std::sync::OnceLock<Box<Map<String, Value>>>,
    /// The object, when it was not read into a tape or has been changed.
    owned: Option<Box<Map<String, Value>>>,
}

impl ObjectArguments {
    /// Arguments on a tape (one read from JSON text, or written by
    /// [`TapeWriter`](crate::detect::tape::TapeWriter)).
    #[doc(hidden)]
    #[must_use]
    pub fn from_tape(tape: Tape) -> ObjectArguments {
        ObjectArguments {
            tape: Some(tape),
            ..ObjectArguments::default()
        }
    }

    /// The tape the arguments were read into, while the object was never
    /// changed.
    pub(crate) fn tape(&self) -> Option<&Tape> {
        self.tape.as_ref()
    }

    /// Values in the object, containers included, keys not; counted on
    /// the tape while the object was never built.
    #[doc(hidden)]
    #[must_use]
    pub fn values(&self) -> usize {
        fn values(map: &Map<String, Value>) -> usize {
            map.values().map(value).sum()
        }
        fn value(v: &Value) -> usize {
            1 + match v {
                Value::Object(map) => values(map),
                Value::Array(items) => items.iter().map(value).sum(),
                _ => 0,
            }
        }
        match (&self.owned, self.built.get(), &self.tape) {
            (Some(map), _, _) | (None, Some(map), _) => values(map),
            (None, None, Some(tape)) => tape.values(),
            (None, None, None) => 0,
        }
    }

    fn from_tape_or_empty(tape: Option<&Tape>) -> Map<String, Value> {
        tape.map_or_else(Map::new, Tape::to_map)
    }

    /// The object.
    #[must_use]
    pub fn into_map(self) -> Map<String, Value> {
        let ObjectArguments { tape, built, owned } = self;
        owned
            .or_else(|| built.into_inner())
            .map_or_else(|| Self::from_tape_or_empty(tape.as_ref()), |map| *map)
    }
}

impl From<Map<String, Value>> for ObjectArguments {
    fn from(map: Map<String, Value>) -> Self {
        ObjectArguments {
            owned: Some(Box::new(map)),
            ..ObjectArguments::default()
        }
    }
}

impl std::ops::Deref for ObjectArguments {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        match &self.owned {
            Some(map) => map,
            None => self
                .built
                .get_or_init(|| Box::new(Self::from_tape_or_empty(self.tape.as_ref()))),
        }
    }
}

impl std::ops::DerefMut for ObjectArguments {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        if self.owned.is_none() {
            let tape = self.tape.take();
            let map = self
                .built
                .take()
                .unwrap_or_else(|| Box::new(Self::from_tape_or_empty(tape.as_ref())));
            self.owned = Some(map);
        }
        self.owned.get_or_insert_with(Box::default)
    }
}

impl PartialEq for ObjectArguments {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for ObjectArguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// Written from the tape while the object was never built: the same text.
impl Serialize for ObjectArguments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (&self.owned, self.built.get(), &self.tape) {
            (Some(map), _, _) | (None, Some(map), _) => map.serialize(serializer),
            (None, None, Some(tape)) => tape.serialize(serializer),
            (None, None, None) => Map::new().serialize(serializer),
        }
    }
}

/// Why arguments were rejected. The `code` is a documented violation code; the
/// `reason` is a finer, equally stable, sub-code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgumentError {
    pub code: ViolationCode,
    pub reason: ArgumentErrorReason,
    /// Names the problem and its position, never an argument's value.
    pub message: String,
}

/// The precise reason arguments were rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentErrorReason {
    /// Text that is not JSON.
    NotJson,
    /// JSON, but not an object (an array, a string, a number, ...).
    NotObject,
    /// A leading byte order mark.
    ByteOrderMark,
    /// `NaN`, `Infinity` or `-Infinity`, which JSON does not allow.
    NonFiniteNumber,
    /// An integer literal past 64 bits, which a float would round: what is
    /// checked would not be what an exact executor reads.
    ImpreciseNumber,
    /// A `\uD800`-`\uDFFF` escape without its pair.
    LoneSurrogate,
    /// The same key twice in one object.
    DuplicateKey,
    /// JSON followed by more text.
    TrailingCharacters,
    /// A streamed call whose arguments never completed.
    Incomplete,
    /// A streamed call whose fragments contradict each other (two names,
    /// two final argument texts).
    Conflicting,
    /// Larger than `max_argument_bytes`.
    TooLarge,
    /// Nested deeper than `max_depth`.
    TooDeep,
}

/// One tool call, as the executor would receive it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Position among all calls of the payload, from 0.
    pub index: usize,
    /// The call id (`id`, `call_id`, `toolUseId`, `toolCallId`, JSON-RPC id).
    pub id: Option<String>,
    /// The tool name, exactly as sent (in place when short, as most are).
    pub name: CompactString,
    pub kind: CallKind,
    pub arguments: Arguments,
    /// The arguments as received: the JSON string's text, or the JSON text of
    /// an inline object.
    pub raw_arguments: String,
    pub format: Format,
    /// The conversation turn (message or stream) the call belongs to, from 0.
    pub turn: usize,
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ToolCall", 9)?;
        s.serialize_field("index", &self.index)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("kind", &self.kind)?;
        s.serialize_field("arguments", &self.arguments)?;
        s.serialize_field("error", &self.arguments.error())?;
        s.serialize_field("raw_arguments", &self.raw_arguments)?;
        s.serialize_field("format", &self.format)?;
        s.serialize_field("turn", &self.turn)?;
        s.end()
    }
}

/// One tool result an application sends back to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// Position among all results of the payload, from 0.
    pub index: usize,
    /// The id of the call it answers (`tool_call_id`, `tool_use_id`,
    /// `call_id`, `toolUseId`, `toolCallId`, a Gemini `id`).
    pub call_id: Option<String>,
    /// The tool name, where the format carries one.
    pub name: Option<String>,
    /// The content as sent; `None` when the result carries none.
    pub content: Option<Value>,
    /// The result reports a failed execution (`is_error`, `status: error`).
    pub is_error: bool,
    pub format: Format,
    /// The conversation turn (message) the result belongs to, from 0.
    pub turn: usize,
    /// The calls this result may answer (seed 004's per-turn linkage).
    pub answers: Answers,
    /// How it names the call it answers.
    pub link: Link,
    /// What its content may be, where its item type says more than its
    /// format.
    #[serde(skip_serializing_if = "ContentShape::is_of_format")]
    pub shape: ContentShape,
}

/// What a result's content may be, where its item type says more than its
/// format: the Responses API's `*_call_output` items differ (as the OpenAI
/// SDK types them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentShape {
    /// What the result's format allows.
    #[default]
    OfFormat,
    /// Text (`local_shell_call_output`).
    Text,
    /// Text, or none: the item's `status` says the outcome
    /// (`apply_patch_call_output`).
    OptionalText,
    /// A screenshot (`computer_call_output`: `{"type":
    /// "computer_screenshot", ...}`).
    Screenshot,
    /// A list of objects (`shell_call_output`: each `stdout`, `stderr`,
    /// `outcome`).
    Objects,
}

impl ContentShape {
    /// What the result's format allows.
    #[must_use]
    pub fn is_of_format(&self) -> bool {
        *self == ContentShape::OfFormat
    }
}

/// How a result names the call it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// By the call's id (`tool_call_id`, `tool_use_id`, `call_id`, ...).
    Id,
    /// By the tool's name (Gemini `functionResponse`, a legacy
    /// `role: function` message); an id, when it carries one, still wins.
    Name,
}

impl Link {
    /// How results of `format` link to their calls.
    #[must_use]
    pub fn of(format: Format) -> Link {
        match format {
            Format::Gemini => Link::Name,
            Format::OpenAiChat
            | Format::OpenAiResponses
            | Format::Anthropic
            | Format::Bedrock
            | Format::VercelAi
            | Format::Mcp
            | Format::Generic => Link::Id,
        }
    }
}

/// Which calls a tool result may answer: a turn's results answer that same
/// turn's calls, and nothing once the conversation has moved on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// Calls the payload does not hold: it opens with results, before any
    /// call or message (a Responses request that continues a conversation
    /// the provider keeps answers the calls of `previous_response_id`).
    Earlier,
    /// The calls of this turn: the last turn with calls, with nothing but
    /// results since.
    Turn(usize),
    /// No call: a user or assistant message came after the last calls.
    Nothing,
}

impl Serialize for Answers {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Answers::Earlier => serializer.serialize_str("earlier"),
            Answers::Turn(turn) => serializer.serialize_u64(*turn as u64),
            Answers::Nothing => serializer.serialize_none(),
        }
    }
}

/// Who is calling: the identity roles and rules are checked against
/// (`check --caller C.json`, or the gateway's authenticated caller).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Caller {
    pub id: String,
    #[serde(default)]
    pub roles: Vec<String>,
    /// Seen by rules as `caller.<name>`.
    #[serde(default)]
    pub attributes: Map<String, Value>,
}
