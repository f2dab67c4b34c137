//! The one table of every position where a wire format can carry a tool
//! call or a tool result. The document reader checks every object against
//! all of it: a format registers what it reads here, and nowhere else.
//!
//! Two kinds of rows:
//! - [`CONTAINERS`]: keys whose value holds messages, items, blocks or
//!   calls (`choices`, `messages`, `content`, `tool_calls`, ...), read in
//!   this order in every object that has them;
//! - [`TAGS`]: `type` values that make an object a call, a result or a
//!   message (`tool_use`, `function_call`, `tool-result`, LangChain's `ai`,
//!   ...); besides these, an object is a call by its own keys (a name and
//!   an arguments key, see [`ARGUMENT_KEYS`]) or through one of the
//!   single-call keys of [`SINGLE`] (`function`, `functionCall`, `toolUse`).
//!
//! When two rows read the same call (an object with `function.name` and
//! `name`, a LangChain message whose `content` blocks repeat its
//! `tool_calls`), the readings must agree, or the payload is refused.

use crate::detect::node::{Node, Obj};
use crate::model::{CallKind, Format};

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
    Raw(&'a serde_json::value::RawValue),
}

type Getter = for<'o, 'a> fn(&'o Obj<'a>) -> Option<Field<'o, 'a>>;

/// One container row.
pub(crate) struct Container {
    pub(crate) key: &'static str,
    pub(crate) holds: Holds,
    /// The format a payload is recognised as when only this key matched.
    pub(crate) format: Format,
    pub(crate) get: Getter,
}

macro_rules! node {
    ($field:ident) => {{
        fn get<'o, 'a>(o: &'o Obj<'a>) -> Option<Field<'o, 'a>> {
            o.$field.as_ref().map(Field::Node)
        }
        get as Getter
    }};
}

macro_rules! raw {
    ($field:ident) => {{
        fn get<'o, 'a>(o: &'o Obj<'a>) -> Option<Field<'o, 'a>> {
            o.$field.map(Field::Raw)
        }
        get as Getter
    }};
}

/// Every container key, in the order an object's containers are read: a
/// request before its response (a logged exchange holds both), the fullest
/// record before its summaries (a Vercel result's `response.messages`
/// before its `steps`, `content` and `toolCalls`, which repeat them).
pub(crate) const CONTAINERS: &[Container] = &[
    Container {
        key: "messages",
        holds: Holds::List,
        format: Format::Generic,
        get: node!(messages),
    },
    Container {
        key: "contents",
        holds: Holds::List,
        format: Format::Gemini,
        get: node!(contents),
    },
    Container {
        key: "input",
        holds: Holds::ListOrObject,
        format: Format::OpenAiResponses,
        get: raw!(input),
    },
    Container {
        key: "response",
        holds: Holds::Object,
        format: Format::VercelAi,
        get: raw!(response),
    },
    Container {
        key: "choices",
        holds: Holds::List,
        format: Format::OpenAiChat,
        get: node!(choices),
    },
    Container {
        key: "candidates",
        holds: Holds::List,
        format: Format::Gemini,
        get: node!(candidates),
    },
    Container {
        key: "output",
        holds: Holds::ListOrObject,
        format: Format::OpenAiResponses,
        get: raw!(output),
    },
    Container {
        key: "message",
        holds: Holds::Object,
        format: Format::Generic,
        get: node!(message),
    },
    Container {
        key: "delta",
        holds: Holds::Object,
        format: Format::OpenAiChat,
        get: node!(delta),
    },
    Container {
        key: "steps",
        holds: Holds::List,
        format: Format::VercelAi,
        get: node!(steps),
    },
    Container {
        key: "content",
        holds: Holds::ListOrObject,
        format: Format::Anthropic,
        get: raw!(content),
    },
    Container {
        key: "parts",
        holds: Holds::List,
        format: Format::Gemini,
        get: node!(parts),
    },
    Container {
        key: "kwargs",
        holds: Holds::Object,
        format: Format::Generic,
        get: node!(kwargs),
    },
    Container {
        key: "data",
        holds: Holds::ListOrObject,
        format: Format::Generic,
        get: raw!(data),
    },
    Container {
        key: "tool_calls",
        holds: Holds::Calls,
        format: Format::Generic,
        get: node!(tool_calls),
    },
    Container {
        key: "tool_call_chunks",
        holds: Holds::Calls,
        format: Format::Generic,
        get: node!(tool_call_chunks),
    },
    Container {
        key: "invalid_tool_calls",
        holds: Holds::InvalidCalls,
        format: Format::Generic,
        get: node!(invalid_tool_calls),
    },
    Container {
        key: "additional_kwargs",
        holds: Holds::Object,
        format: Format::Generic,
        get: node!(additional_kwargs),
    },
    Container {
        key: "toolCalls",
        holds: Holds::Calls,
        format: Format::VercelAi,
        get: node!(toolCalls),
    },
    Container {
        key: "toolInvocations",
        holds: Holds::Calls,
        format: Format::VercelAi,
        get: node!(toolInvocations),
    },
];

/// The keys an object's own call takes its arguments from, whatever its
/// format. When several are present they must agree.
pub(crate) const ARGUMENT_KEYS: [&str; 5] = ["arguments", "params", "parameters", "args", "input"];

/// The keys a result's content may sit in: never read for calls.
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

type SingleGetter = for<'o, 'a> fn(&'o Obj<'a>) -> Option<&'o Node<'a>>;

macro_rules! single {
    ($field:ident) => {{
        fn get<'o, 'a>(o: &'o Obj<'a>) -> Option<&'o Node<'a>> {
            o.$field.as_ref()
        }
        get as SingleGetter
    }};
}

/// Every single-call and single-result key, in reading order.
pub(crate) const SINGLE: &[(&str, Single, SingleGetter)] = &[
    ("function", Single::Function, single!(function)),
    (
        "function_call",
        Single::FunctionCall,
        single!(function_call),
    ),
    ("functionCall", Single::GeminiCall, single!(functionCall)),
    ("toolUse", Single::ToolUse, single!(toolUse)),
    ("custom", Single::Custom, single!(custom)),
    (
        "toolInvocation",
        Single::ToolInvocation,
        single!(toolInvocation),
    ),
    (
        "functionResponse",
        Single::GeminiResult,
        single!(functionResponse),
    ),
    (
        "function_response",
        Single::GeminiResult,
        single!(function_response),
    ),
    ("toolResult", Single::ToolResult, single!(toolResult)),
];

/// What an object's `type` makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// A call named by `name` (or `toolName`), arguments by the argument
    /// keys.
    Call(Format, CallKind),
    /// A provider-hosted call named by its type; arguments are its `action`.
    Hosted(&'static str),
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

/// Hosted tools of the Responses API: the item type and the tool it runs.
pub(crate) const HOSTED: [(&str, &str); 9] = [
    ("web_search_call", "web_search"),
    ("file_search_call", "file_search"),
    ("code_interpreter_call", "code_interpreter"),
    ("image_generation_call", "image_generation"),
    ("computer_call", "computer"),
    ("local_shell_call", "local_shell"),
    ("shell_call", "shell"),
    ("apply_patch_call", "apply_patch"),
    ("tool_search_call", "tool_search"),
];

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
            if let Some((_, name)) = HOSTED.iter().find(|(t, _)| *t == kind) {
                return Some(Tag::Hosted(name));
            }
            return None;
        }
    })
}

/// Whether `kind` is the type of a Responses call or result item (the
/// stream decoder of the Responses API reads these from its events).
pub(crate) fn is_item_type(kind: &str) -> bool {
    matches!(
        tag(kind),
        Some(
            Tag::Call(Format::OpenAiResponses, _)
                | Tag::Hosted(_)
                | Tag::Result(Format::OpenAiResponses)
        )
    )
}
