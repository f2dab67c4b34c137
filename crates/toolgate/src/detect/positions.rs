//! The one table of every position where a wire format can carry a tool
//! call or a tool result. The document reader checks every object against
//! all of it: a format registers what it reads here, and nowhere else.
//!
//! Three kinds of rows:
//! - `containers!`: keys whose value holds messages, items, blocks or
//!   calls (`choices`, `messages`, `content`, `tool_calls`, ...), read in
//!   this order in every object that has them;
//! - `singles!`: keys that hold one call or one result (`function`,
//!   `functionCall`, `toolUse`, `functionResponse`, ...);
//! - [`tag`]: `type` values that make an object a call, a result or a
//!   message (`tool_use`, `function_call`, `tool-result`, LangChain's `ai`,
//!   ...). Besides these, an object is a call by its own keys: a name and
//!   an arguments key (`arguments`, `params`, `parameters`, `args`,
//!   `input`).
//!
//! When two rows read the same call of one object (`function.name` and
//! `name`, two argument keys), the readings must agree, or the payload is
//! refused; views that repeat each other's calls (`repeats`) count a call
//! under one id once.

use crate::detect::node::{Node, Obj};
use crate::model::{CallKind, ContentShape, Format};

/// What a container key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// A list of objects (messages, items, blocks, parts, choices), each
    /// read against the whole table. Text and null hold nothing; an object
    /// is refused.
    List,
    /// One object read against the whole table. Text and null hold
    /// nothing; an array is refused.
    Object,
    /// A list or one object (a message's `content` holds blocks, a Gemini
    /// candidate's one content); text and null hold nothing.
    ListOrObject,
    /// A list whose every element is a call; anything else but null is
    /// refused.
    Calls,
    /// Like [`Holds::Calls`], for calls the provider could not parse
    /// (LangChain's `invalid_tool_calls`): each is refused.
    InvalidCalls,
}

/// Where a container's value is in an [`Obj`].
#[derive(Clone, Copy)]
pub(crate) enum Field<'o, 'a> {
    Node(&'o Node<'a>),
    Raw(crate::detect::node::Raw<'a>),
}

/// One container row.
pub(crate) struct Container {
    pub(crate) key: &'static str,
    pub(crate) holds: Holds,
    /// The format a payload is recognised as when only this key matched.
    pub(crate) format: Format,
    /// An argument key too (`input`): not a container of a call object.
    pub(crate) argument: bool,
    /// A result's content key too (`content`, `output`, `response`): not a
    /// container of a result.
    pub(crate) content: bool,
    /// A view that may repeat calls another view of the same object holds
    /// (a Vercel result's `response`, `steps`, `content`, `toolCalls`; a
    /// LangChain message's `content`, `tool_calls`, `additional_kwargs`):
    /// one call under one id across such views is counted once. A
    /// conversation (`messages`, `input`) and a response (`choices`,
    /// `output`) side by side are a logged exchange: never merged.
    pub(crate) repeats: bool,
}

/// The value of one key of an [`Obj`], as a [`Field`]: parsed in the same
/// pass (`node`) or kept as raw text (`raw`).
macro_rules! field {
    ($o:ident, $field:ident, node) => {
        $o.$field.as_ref().map(Field::Node)
    };
    ($o:ident, $field:ident, raw) => {
        $o.$field.map(Field::Raw)
    };
}

/// The container rows, and `containers`, which visits the ones an object
/// holds in table order without a call through a pointer per row.
macro_rules! containers {
    ($($key:literal => $field:ident ($kind:ident), $holds:ident, $format:ident $(, $flag:ident)*;)*) => {
        /// Every container key, in the order an object's containers are
        /// read: a request before its response (a logged exchange holds
        /// both), the fullest record before its summaries (a Vercel
        /// result's `response.messages` before its `steps`, `content` and
        /// `toolCalls`, which repeat them).
        pub(crate) const CONTAINERS: &[Container] = &[$(Container {
            key: $key,
            holds: Holds::$holds,
            format: Format::$format,
            argument: containers!(@flag argument $($flag)*),
            content: containers!(@flag content $($flag)*),
            repeats: containers!(@flag repeats $($flag)*),
        },)*];

        /// Call `visit` with each container `o` holds, in table order.
        #[inline]
        pub(crate) fn containers<'o, 'a, E>(
            o: &'o Obj<'a>,
            mut visit: impl FnMut(&'static Container, Field<'o, 'a>) -> Result<(), E>,
        ) -> Result<(), E> {
            let mut row = 0;
            $(
                if let Some(field) = field!(o, $field, $kind) {
                    visit(&CONTAINERS[row], field)?;
                }
                row += 1;
            )*
            debug_assert_eq!(row, CONTAINERS.len());
            Ok(())
        }
    };
    (@flag $want:ident) => { false };
    (@flag argument argument $($rest:ident)*) => { true };
    (@flag content content $($rest:ident)*) => { true };
    (@flag repeats repeats $($rest:ident)*) => { true };
    (@flag $want:ident $other:ident $($rest:ident)*) => { containers!(@flag $want $($rest)*) };
}

containers! {
    "messages" => messages(node), List, Generic;
    "contents" => contents(node), List, Gemini;
    "input" => input(raw), ListOrObject, OpenAiResponses, argument;
    "response" => response(raw), Object, VercelAi, content, repeats;
    "choices" => choices(node), List, OpenAiChat;
    "candidates" => candidates(node), List, Gemini;
    "output" => output(raw), ListOrObject, OpenAiResponses, content;
    "message" => message(node), Object, Generic;
    "delta" => delta(raw), Object, OpenAiChat;
    "steps" => steps(raw), List, VercelAi, repeats;
    "content" => content(raw), ListOrObject, Anthropic, content, repeats;
    "parts" => parts(node), List, Gemini, repeats;
    "kwargs" => kwargs(raw), Object, Generic, repeats;
    "data" => data(raw), ListOrObject, Generic, repeats;
    "tool_calls" => tool_calls(node), Calls, Generic, repeats;
    "invalid_tool_calls" => invalid_tool_calls(raw), InvalidCalls, Generic, repeats;
    "additional_kwargs" => additional_kwargs(raw), Object, Generic, repeats;
    "toolCalls" => toolCalls(node), Calls, VercelAi, repeats;
    "toolInvocations" => toolInvocations(raw), Calls, VercelAi, repeats;
}

/// Containers that only a few shapes use, the wrappers of records and
/// logs around the formats above: an OpenAI Batch line's `body`, a
/// LangChain `LLMResult`'s `generations`, a Gemini Live message's
/// `toolCall.functionCalls`, the AI SDK's `staticToolCalls` and
/// `dynamicToolCalls`, an Assistants run's
/// `required_action.submit_tool_outputs`, a logged exchange's `request`.
/// An object keeps the ones it holds in a short list of its own
/// ([`Obj::rare_keys`](crate::detect::node::Obj)), in the order they come.
pub(crate) const WRAPPERS: &[Container] = &[
    wrapper("body", Holds::Object, Format::Generic, false),
    wrapper("generations", Holds::List, Format::Generic, false),
    wrapper("toolCall", Holds::Object, Format::Gemini, false),
    wrapper("functionCalls", Holds::Calls, Format::Gemini, false),
    wrapper("staticToolCalls", Holds::Calls, Format::VercelAi, true),
    wrapper("dynamicToolCalls", Holds::Calls, Format::VercelAi, true),
    wrapper("required_action", Holds::Object, Format::OpenAiChat, false),
    wrapper(
        "submit_tool_outputs",
        Holds::Object,
        Format::OpenAiChat,
        false,
    ),
    wrapper("request", Holds::Object, Format::Generic, false),
    wrapper("item", Holds::Object, Format::OpenAiResponses, false),
    wrapper("content_block", Holds::Object, Format::Anthropic, false),
    wrapper("tool_call_chunks", Holds::Calls, Format::Generic, true),
    wrapper("toolResults", Holds::List, Format::VercelAi, true),
];

/// Every rare key an object keeps in its short list, by row: the
/// [`WRAPPERS`] first, then a hosted call's own arguments (an
/// `apply_patch_call`'s `operation`, a `file_search_call`'s `queries`, a
/// `code_interpreter_call`'s `code`), then the `id` of the
/// `mcp_approval_request` an `mcp_approval_response` answers, a Vercel
/// error part's `errorText` and a Bedrock `toolUseId`.
pub(crate) const RARE: &[&str] = &[
    "body",
    "generations",
    "toolCall",
    "functionCalls",
    "staticToolCalls",
    "dynamicToolCalls",
    "required_action",
    "submit_tool_outputs",
    "request",
    "item",
    "content_block",
    "tool_call_chunks",
    "toolResults",
    "operation",
    "queries",
    "code",
    "approval_request_id",
    "errorText",
    "toolUseId",
];

const fn wrapper(key: &'static str, holds: Holds, format: Format, repeats: bool) -> Container {
    Container {
        key,
        holds,
        format,
        argument: false,
        content: false,
        repeats,
    }
}

/// An object's `result` when the object is neither a result nor a
/// JSON-RPC message (whose readers take it): a record's outcome (an
/// Anthropic Batch line's `result.message`), read as a container.
pub(crate) const RESULT: Container = wrapper("result", Holds::ListOrObject, Format::Generic, false);

/// Keys the stream decoders read that no view of an object keeps (a
/// Chat chunk's `index` and `finish_reason`, an Anthropic delta's
/// `partial_json`, a Responses event's `item_id`, ...): another spelling
/// of one of these is refused like another spelling of a table key.
pub(crate) const STREAM_KEYS: &[&str] = &[
    "index",
    "finish_reason",
    "partial_json",
    "output_index",
    "item_id",
    "content_index",
    "stop_reason",
    "inputTextDelta",
    "argsTextDelta",
    "jsonPath",
    "stringValue",
    "numberValue",
    "boolValue",
    "nullValue",
    "finishReason",
];

/// The row of [`RARE`] for `key`, if it is one (asked of every key no
/// field of an object takes: a `match`, not a scan).
pub(crate) fn rare_row(key: &str) -> Option<u8> {
    Some(match key {
        "body" => 0,
        "generations" => 1,
        "toolCall" => 2,
        "functionCalls" => 3,
        "staticToolCalls" => 4,
        "dynamicToolCalls" => 5,
        "required_action" => 6,
        "submit_tool_outputs" => 7,
        "request" => 8,
        "item" => 9,
        "content_block" => 10,
        "tool_call_chunks" => 11,
        "toolResults" => 12,
        "operation" => 13,
        "queries" => 14,
        "code" => 15,
        "approval_request_id" => 16,
        "errorText" => 17,
        "toolUseId" => 18,
        _ => return None,
    })
}

/// The keys an object's own call takes its arguments from, whatever its
/// format. When several are present they must agree.
pub(crate) const ARGUMENT_KEYS: [&str; 5] = ["arguments", "params", "parameters", "args", "input"];

/// The keys a result's content may sit in: never read for calls.
#[cfg(test)]
pub(crate) const CONTENT_KEYS: [&str; 4] = ["content", "output", "result", "response"];

/// Keys that hold one call (or one result) of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Single {
    /// OpenAI `{function: {name, arguments}}` (a tool call, or a bare call).
    Function,
    /// Legacy OpenAI `function_call` of an assistant message; Gemini's
    /// snake-case part.
    FunctionCall,
    /// Gemini `functionCall` (`name`, `args`, `id`).
    GeminiCall,
    /// Bedrock `toolUse` (`toolUseId`, `name`, `input`).
    ToolUse,
    /// OpenAI custom tool call (`custom: {name, input}`).
    Custom,
    /// Vercel AI SDK v4 `tool-invocation` part's `toolInvocation`.
    ToolInvocation,
    /// Gemini `functionResponse` / `function_response`.
    GeminiResult,
    /// Bedrock `toolResult`.
    ToolResult,
}

/// The single-call and single-result rows, and `singles`, which visits
/// the ones an object holds in reading order.
macro_rules! singles {
    ($($key:literal => $field:ident ($kind:ident), $single:ident;)*) => {
        /// Every single-call and single-result key, in reading order.
        #[cfg(test)]
        pub(crate) const SINGLE: &[(&str, Single)] = &[$(($key, Single::$single),)*];

        /// Call `visit` with each single-call or single-result key `o`
        /// holds, in reading order.
        #[inline]
        pub(crate) fn singles<'o, 'a, E>(
            o: &'o Obj<'a>,
            mut visit: impl FnMut(&'static str, Single, Field<'o, 'a>) -> Result<(), E>,
        ) -> Result<(), E> {
            $(
                if let Some(field) = field!(o, $field, $kind) {
                    visit($key, Single::$single, field)?;
                }
            )*
            Ok(())
        }
    };
}

singles! {
    "function" => function(node), Function;
    "function_call" => function_call(raw), FunctionCall;
    "functionCall" => functionCall(node), GeminiCall;
    "toolUse" => toolUse(raw), ToolUse;
    "custom" => custom(raw), Custom;
    "toolInvocation" => toolInvocation(raw), ToolInvocation;
    "functionResponse" => functionResponse(raw), GeminiResult;
    "function_response" => function_response(raw), GeminiResult;
    "toolResult" => toolResult(raw), ToolResult;
}

/// What an object's `type` makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// A call named by `name` (or `toolName`), arguments by the argument
    /// keys.
    Call(Format, CallKind),
    /// A provider-hosted call named by its type, and where its arguments
    /// are.
    Hosted(&'static str, HostedArgs),
    /// A call whose provider could not parse it (LangChain's
    /// `invalid_tool_call`).
    Invalid,
    /// A Vercel AI SDK UI message tool part (`tool-<name>`,
    /// `dynamic-tool`): a call, and its result once it has one.
    UiTool,
    /// A tool result.
    Result(Format),
    /// A message with this role (`None`: the object's own `role`).
    Message(Option<&'static str>),
    /// A known shape that carries no call of its own (text, an error).
    Plain,
}

/// Where a hosted call keeps its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostedArgs {
    /// An object under this key (`action`, `operation`): the arguments.
    Object(&'static str),
    /// A value under this key (`code`, `queries`): the arguments are an
    /// object of that one key.
    Field(&'static str),
    /// The call's `arguments`, as any call's.
    Arguments,
    /// None: the call takes no arguments of its own.
    None,
}

/// Hosted tools of the Responses API: the item type, the tool it runs, and
/// where its arguments are.
pub(crate) const HOSTED: [(&str, &str, HostedArgs); 9] = [
    (
        "web_search_call",
        "web_search",
        HostedArgs::Object("action"),
    ),
    (
        "file_search_call",
        "file_search",
        HostedArgs::Field("queries"),
    ),
    (
        "code_interpreter_call",
        "code_interpreter",
        HostedArgs::Field("code"),
    ),
    (
        "image_generation_call",
        "image_generation",
        HostedArgs::None,
    ),
    ("computer_call", "computer", HostedArgs::Object("action")),
    (
        "local_shell_call",
        "local_shell",
        HostedArgs::Object("action"),
    ),
    ("shell_call", "shell", HostedArgs::Object("action")),
    (
        "apply_patch_call",
        "apply_patch",
        HostedArgs::Field("operation"),
    ),
    ("tool_search_call", "tool_search", HostedArgs::Arguments),
];

/// Whether `key` holds a hosted call's arguments as one value that the
/// arguments wrap (`{"code": ...}`): a [`HostedArgs::Field`] of [`HOSTED`].
pub(crate) fn hosted_field(key: &str) -> bool {
    HOSTED
        .iter()
        .any(|(_, _, at)| matches!(at, HostedArgs::Field(field) if *field == key))
}

/// What an object's `type` makes it; `None` for a type no row names.
pub(crate) fn tag(kind: &str) -> Option<Tag> {
    Some(match kind {
        // Anthropic Messages
        "tool_use" => Tag::Call(Format::Anthropic, CallKind::Function),
        "server_tool_use" | "mcp_tool_use" => Tag::Call(Format::Anthropic, CallKind::Hosted),
        "tool_result" => Tag::Result(Format::Anthropic),
        // OpenAI Responses
        "function_call" => Tag::Call(Format::OpenAiResponses, CallKind::Function),
        "custom_tool_call" => Tag::Call(Format::OpenAiResponses, CallKind::Custom),
        // Approving the request runs the tool: it is a call.
        "mcp_call" | "mcp_approval_request" => Tag::Call(Format::OpenAiResponses, CallKind::Hosted),
        "message" => Tag::Message(None),
        // Answers the `mcp_approval_request` whose `id` is its
        // `approval_request_id`: approving it runs the tool.
        "mcp_approval_response" => Tag::Result(Format::OpenAiResponses),
        _ if kind.ends_with("_call_output") => Tag::Result(Format::OpenAiResponses),
        // Vercel AI SDK model messages, results and UI messages
        "tool-call" => Tag::Call(Format::VercelAi, CallKind::Function),
        "tool-result" | "tool-error" => Tag::Result(Format::VercelAi),
        "dynamic-tool" => Tag::UiTool,
        // A v4 part wrapping `toolInvocation`, and stream chunk types.
        "tool-invocation" => Tag::Plain,
        _ if kind.starts_with("tool-input-")
            || kind.starts_with("tool-output-")
            || kind.starts_with("tool-approval-")
            || kind.starts_with("tool-call-") =>
        {
            Tag::Plain
        }
        _ if kind.starts_with("tool-") => Tag::UiTool,
        // LangChain message dumps and tool calls
        "tool_call" => Tag::Call(Format::Generic, CallKind::Function),
        "invalid_tool_call" => Tag::Invalid,
        "ai" | "AIMessage" | "AIMessageChunk" => Tag::Message(Some("assistant")),
        "human" | "HumanMessage" | "HumanMessageChunk" => Tag::Message(Some("user")),
        "system" | "SystemMessage" | "SystemMessageChunk" => Tag::Message(Some("system")),
        "tool" | "ToolMessage" | "ToolMessageChunk" => Tag::Message(Some("tool")),
        "chat" | "ChatMessage" => Tag::Message(None),
        "error" => Tag::Plain,
        _ => {
            if let Some((_, name, args)) = HOSTED.iter().find(|(t, _, _)| *t == kind) {
                return Some(Tag::Hosted(name, *args));
            }
            return None;
        }
    })
}

/// The role of the message a LangChain `messages_to_dict` dump (`{"type":
/// ..., "data": {...}}`) holds, for the types the tag table does not name:
/// the legacy `FunctionMessage` (`function`), a result linked by name.
/// (OpenAI's `{"type": "function", "function": {...}}` call holds no
/// `data`.)
pub(crate) fn dumped_role(kind: &str) -> Option<&'static str> {
    (kind == "function").then_some("function")
}

/// Whether a message of `role` that carries no call and no result moves
/// the conversation on, so that later results answer nothing before it: a
/// user message or a new assistant turn does; a system or developer
/// message (an instruction given between a call and its result) does not.
pub(crate) fn moves_on(role: &str) -> bool {
    !matches!(role, "system" | "developer")
}

/// A Responses result item (`*_call_output`): the key that names the call
/// it answers, and what its `output` may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutputItem {
    /// `call_id`, or `id` (`local_shell_call_output`, whose `id` is its
    /// call's `call_id`).
    pub(crate) link: &'static str,
    pub(crate) output: ContentShape,
}

/// The Responses result items whose link or content differ from
/// `function_call_output`'s (`call_id`; text or typed content blocks), as
/// the OpenAI SDK types them.
const OUTPUT_ITEMS: [(&str, OutputItem); 4] = [
    (
        "computer_call_output",
        OutputItem {
            link: "call_id",
            output: ContentShape::Screenshot,
        },
    ),
    (
        "local_shell_call_output",
        OutputItem {
            link: "id",
            output: ContentShape::Text,
        },
    ),
    (
        "shell_call_output",
        OutputItem {
            link: "call_id",
            output: ContentShape::Objects,
        },
    ),
    (
        "apply_patch_call_output",
        OutputItem {
            link: "call_id",
            output: ContentShape::OptionalText,
        },
    ),
];

/// How the Responses result item of type `kind` links and what it holds.
pub(crate) fn output_item(kind: &str) -> OutputItem {
    OUTPUT_ITEMS.iter().find(|(item, _)| *item == kind).map_or(
        OutputItem {
            link: "call_id",
            output: ContentShape::OfFormat,
        },
        |(_, item)| *item,
    )
}

/// Whether `kind` is the type of a Responses call item (the stream
/// decoder of the Responses API reads these from its events).
pub(crate) fn is_call_item_type(kind: &str) -> bool {
    matches!(
        tag(kind),
        Some(Tag::Call(Format::OpenAiResponses, _) | Tag::Hosted(..))
    )
}

#[cfg(test)]
mod tests {
    use super::{tag, Tag, ARGUMENT_KEYS, CONTAINERS, CONTENT_KEYS, SINGLE};

    #[test]
    fn the_table_is_consistent() {
        for c in CONTAINERS {
            assert_eq!(c.argument, ARGUMENT_KEYS.contains(&c.key), "{}", c.key);
            assert_eq!(c.content, CONTENT_KEYS.contains(&c.key), "{}", c.key);
            assert!(SINGLE.iter().all(|(key, _)| *key != c.key), "{}", c.key);
        }
        let mut keys: Vec<&str> = CONTAINERS.iter().map(|c| c.key).collect();
        keys.extend(super::WRAPPERS.iter().map(|c| c.key));
        keys.extend(SINGLE.iter().map(|(key, _)| *key));
        let count = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), count, "a key is registered twice");
    }

    #[test]
    fn each_rare_key_has_its_row() {
        for (row, key) in super::RARE.iter().enumerate() {
            assert_eq!(super::rare_row(key).map(usize::from), Some(row), "{key}");
        }
        for (row, wrapper) in super::WRAPPERS.iter().enumerate() {
            assert_eq!(super::RARE[row], wrapper.key);
        }
        assert_eq!(super::rare_row("messages"), None);
    }

    #[test]
    fn tags() {
        assert_eq!(tag("tool-get_weather"), Some(Tag::UiTool));
        assert_eq!(tag("tool-input-available"), Some(Tag::Plain));
        assert_eq!(
            tag("web_search_call"),
            Some(Tag::Hosted(
                "web_search",
                super::HostedArgs::Object("action")
            ))
        );
        assert_eq!(tag("function_call_output"), tag("custom_tool_call_output"));
        assert_eq!(tag("mcp_approval_response"), tag("function_call_output"));
        assert!(super::is_call_item_type("mcp_approval_request"));
        assert!(!super::is_call_item_type("mcp_approval_response"));
        assert!(!super::is_call_item_type("function_call_output"));
        assert_eq!(tag("function"), None);
    }
}
