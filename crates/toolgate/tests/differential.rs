//! A differential test of `detect` on random JSON trees built from every
//! format's keys. The walker below is written from the reading rules
//! (docs/cli.md, "Reading rules", every call position read in every object), on
//! `serde_json::Value`, sharing no code with the library's reader: for
//! each tree, `detect` must report exactly the calls the walker finds, or
//! refuse the payload. Never fewer calls silently, and never more.

use std::fmt::Write as _;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use toolgate::{detect, ArgumentErrorReason, Arguments, Detection, ToolCall, ViolationCode};

// ---------------------------------------------------------------------
// The walker: where a call can sit, from the reading rules alone.
// ---------------------------------------------------------------------

/// Keys whose value is a list of objects, each read like any object.
const LISTS: [&str; 7] = [
    "messages",
    "contents",
    "choices",
    "candidates",
    "parts",
    "steps",
    "generations",
];
/// Keys whose value is one object.
const OBJECTS: [&str; 12] = [
    "message",
    "delta",
    "response",
    "kwargs",
    "additional_kwargs",
    "item",
    "content_block",
    "body",
    "toolCall",
    "required_action",
    "submit_tool_outputs",
    "request",
];
/// Keys whose value is a list of objects or one object; text holds no call.
const LIST_OR_OBJECT: [&str; 3] = ["input", "output", "content"];
/// Keys whose every element is a call.
const CALL_LISTS: [&str; 7] = [
    "tool_calls",
    "tool_call_chunks",
    "toolCalls",
    "toolInvocations",
    "functionCalls",
    "staticToolCalls",
    "dynamicToolCalls",
];
/// Keys whose every element is a call that could not be parsed.
const INVALID_CALL_LISTS: [&str; 1] = ["invalid_tool_calls"];
/// Every call list, for the generator.
const ALL_CALL_LISTS: [&str; 8] = [
    "tool_calls",
    "tool_call_chunks",
    "toolCalls",
    "toolInvocations",
    "functionCalls",
    "staticToolCalls",
    "dynamicToolCalls",
    "invalid_tool_calls",
];
/// Keys an object's own call takes its arguments from.
const ARGUMENT_KEYS: [&str; 5] = ["arguments", "params", "parameters", "args", "input"];
/// Keys that hold one call of their object.
const SINGLE_CALLS: [&str; 6] = [
    "function",
    "function_call",
    "functionCall",
    "toolUse",
    "custom",
    "toolInvocation",
];
/// Where a result's content sits: never read for calls.
const RESULT_CONTENT: [&str; 3] = ["content", "output", "response"];

/// `type` values of a call named by `name` / `toolName`.
const CALL_TYPES: [&str; 9] = [
    "tool_use",
    "server_tool_use",
    "mcp_tool_use",
    "function_call",
    "custom_tool_call",
    "mcp_call",
    "mcp_approval_request",
    "tool-call",
    "tool_call",
];
/// Hosted Responses items and the tool each runs.
const HOSTED: [(&str, &str); 9] = [
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
const AI_TYPES: [&str; 3] = ["ai", "AIMessage", "AIMessageChunk"];
const HUMAN_TYPES: [&str; 3] = ["human", "HumanMessage", "HumanMessageChunk"];
const SYSTEM_TYPES: [&str; 3] = ["system", "SystemMessage", "SystemMessageChunk"];
const TOOL_TYPES: [&str; 3] = ["tool", "ToolMessage", "ToolMessageChunk"];
const CHAT_TYPES: [&str; 2] = ["chat", "ChatMessage"];

/// Where an object sits: the name-alone rule holds at the root and in
/// call lists only.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    Root,
    CallList { invalid: bool },
    Inner,
}

/// What the arguments of an expected call must be.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    /// Exactly this object.
    Object(Map<String, Value>),
    /// Untrustworthy (two argument keys that disagree, an invalid call):
    /// the call must carry an argument error, or the payload be refused.
    Invalid,
    /// Not compared (text of a custom tool, a hosted tool's action, a
    /// string that is not a JSON object).
    Any,
}

#[derive(Clone, Debug)]
struct Call {
    name: String,
    arguments: Expect,
}

#[derive(Default, Debug)]
struct Walk {
    calls: Vec<Call>,
    /// A call container of the wrong type: the payload must be refused.
    must_refuse: Vec<String>,
}

fn walk(document: &Value) -> Walk {
    let mut out = Walk::default();
    match document {
        Value::Object(object) => walk_object(object, Slot::Root, None, false, &mut out),
        Value::Array(items) => {
            for item in items {
                if let Value::Object(object) = item {
                    walk_object(object, Slot::Root, None, false, &mut out);
                }
            }
        }
        _ => {}
    }
    out
}

fn text<'v>(object: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
    object.get(key).and_then(Value::as_str)
}

/// The tool named by a `tool-<name>` UI part type (not a model message
/// part, a result, a v4 invocation part or a stream chunk type).
fn ui_tool_name(kind: &str) -> Option<&str> {
    let name = kind.strip_prefix("tool-")?;
    let other = ["call", "result", "error", "invocation"].contains(&name)
        || ["input-", "output-", "approval-", "call-"]
            .iter()
            .any(|prefix| name.starts_with(prefix));
    (!other).then_some(name)
}

/// Types the library knows as carrying no call of their own: a v4
/// invocation part, stream chunk types, an error.
fn plain_type(kind: &str) -> bool {
    kind == "tool-invocation"
        || kind == "error"
        || [
            "tool-input-",
            "tool-output-",
            "tool-approval-",
            "tool-call-",
        ]
        .iter()
        .any(|prefix| kind.starts_with(prefix))
}

/// The names an object gives its own call (`name`, `toolName`): two
/// names are two readings.
fn names(object: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<String> = ["name", "toolName"]
        .iter()
        .filter_map(|key| text(object, key).map(str::to_owned))
        .collect();
    names.dedup();
    names
}

/// The arguments of an object's own call, from every argument key.
fn arguments(object: &Map<String, Value>) -> Expect {
    agree(ARGUMENT_KEYS.iter().filter_map(|key| object.get(*key)))
}

/// What executes, given every value an executor could take the arguments
/// from (`null` counts as absent): they must agree.
fn agree<'v>(values: impl Iterator<Item = &'v Value>) -> Expect {
    let mut read = Vec::new();
    for value in values.filter(|v| !v.is_null()) {
        read.push(match value {
            Value::Object(map) => Some(map.clone()),
            Value::String(s) if s.trim().is_empty() => Some(Map::new()),
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(map)) => Some(map),
                _ => None,
            },
            _ => None,
        });
    }
    match read.as_slice() {
        [] => Expect::Object(Map::new()),
        [Some(one)] => Expect::Object(one.clone()),
        [_] => Expect::Any,
        [first, rest @ ..] => {
            if first.is_some() && rest.iter().all(|r| r == first) {
                Expect::Object(first.clone().unwrap_or_default())
            } else if read.iter().all(Option::is_some) {
                Expect::Invalid
            } else {
                Expect::Any
            }
        }
    }
}

/// What an object's `type` makes it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind<'v> {
    /// A call named by `name` / `toolName`; a custom tool's input is text.
    Call { custom: bool },
    /// LangChain's `invalid_tool_call`.
    Invalid,
    /// A hosted Responses item, named by its type.
    Hosted(&'static str),
    /// An AI SDK UI tool part: a call, and its result once it has one.
    /// Named by its type (`tool-<name>`) or, `dynamic-tool`, by `toolName`.
    Ui(Option<&'v str>),
    /// A tool result.
    Result,
    /// A LangChain message of this role (`None`: the object's `role`).
    Message(Option<&'static str>),
    /// A known shape with no call of its own (a v4 invocation part, a
    /// stream chunk, an error): not a message, whatever its `role`.
    Plain,
    /// No type, or one no rule names: the object's `role` decides.
    Other,
}

fn kind_of(kind: Option<&str>) -> Kind<'_> {
    let Some(kind) = kind else {
        return Kind::Other;
    };
    if CALL_TYPES.contains(&kind) {
        Kind::Call {
            custom: kind == "custom_tool_call",
        }
    } else if kind == "invalid_tool_call" {
        Kind::Invalid
    } else if let Some((_, tool)) = HOSTED.iter().find(|(t, _)| *t == kind) {
        Kind::Hosted(tool)
    } else if ["tool_result", "tool-result", "tool-error"].contains(&kind)
        || kind.ends_with("_call_output")
    {
        Kind::Result
    } else if kind == "dynamic-tool" {
        Kind::Ui(None)
    } else if let Some(tool) = ui_tool_name(kind) {
        Kind::Ui(Some(tool))
    } else if AI_TYPES.contains(&kind) {
        Kind::Message(Some("assistant"))
    } else if HUMAN_TYPES.contains(&kind) {
        Kind::Message(Some("user"))
    } else if SYSTEM_TYPES.contains(&kind) {
        Kind::Message(Some("system"))
    } else if TOOL_TYPES.contains(&kind) {
        Kind::Message(Some("tool"))
    } else if CHAT_TYPES.contains(&kind) || kind == "message" {
        Kind::Message(None)
    } else if plain_type(kind) {
        Kind::Plain
    } else {
        Kind::Other
    }
}

/// One call per name the object gives (none: one with an empty name).
fn named(object: &Map<String, Value>, arguments: &Expect, own: &mut Vec<Call>) {
    let found = names(object);
    if found.is_empty() {
        own.push(Call {
            name: String::new(),
            arguments: arguments.clone(),
        });
    }
    for name in found {
        own.push(Call {
            name,
            arguments: arguments.clone(),
        });
    }
}

/// Whether the object has an argument key with a value (`null` is none).
fn has_arguments(object: &Map<String, Value>) -> bool {
    ARGUMENT_KEYS
        .iter()
        .any(|k| object.get(*k).is_some_and(|v| !v.is_null()))
}

/// Whether a request's legacy `function_call` only chooses a function (a
/// string, or a name with no arguments): then it is not a call.
fn chooses(value: Option<&Value>) -> bool {
    match value {
        Some(Value::String(_)) => true,
        Some(Value::Object(f)) => !has_arguments(f),
        _ => false,
    }
}

/// Whether the object is a tool result. A tool message is one when it
/// carries one (an id, a name, content); one that only holds AI SDK
/// `tool-result` parts, or nothing (a wrapper such as LangChain's `data`),
/// is read through its containers.
fn is_result(object: &Map<String, Value>, kind: Kind<'_>, role: Option<&str>) -> bool {
    let parts_only = !object.contains_key("tool_call_id")
        && object
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|parts| {
                parts.iter().any(|p| {
                    matches!(
                        p.get("type").and_then(Value::as_str),
                        Some("tool-result" | "tool-error")
                    )
                })
            });
    let carries = ["tool_call_id", "name", "content"]
        .iter()
        .any(|k| object.get(*k).is_some_and(|v| !v.is_null()));
    matches!(kind, Kind::Result | Kind::Ui(_))
        || (role.is_some_and(|r| ["tool", "function"].contains(&r)) && carries && !parts_only)
}

/// Read `object` as detect reads it in `slot`; `given` is the role a
/// wrapper gives it when it says none itself (a `messages_to_dict` dump's
/// `data`).
fn walk_object(
    object: &Map<String, Value>,
    slot: Slot,
    given: Option<&str>,
    quiet: bool,
    out: &mut Walk,
) {
    let kind = kind_of(text(object, "type"));
    // A `type` that makes the object a call, a result or a known part
    // decides what it is: a `role` beside it is not a message's role.
    let role = match (slot, kind) {
        // An element of a call list is a call whatever role it claims.
        (Slot::CallList { .. }, _) => None,
        (_, Kind::Message(Some(role))) => Some(role),
        // A message with no role is of some other role than the user's.
        (_, Kind::Message(None)) => Some(text(object, "role").unwrap_or("other")),
        (_, Kind::Other) => text(object, "role").or(given),
        _ => None,
    };
    // Calls inside a user, system or developer message are not calls; a
    // message of another role inside one is read again.
    let quiet = match role {
        Some(r) => ["user", "system", "developer"].contains(&r),
        None => quiet,
    };
    let result = is_result(object, kind, role);
    let declaration = object.contains_key("inputSchema") || object.contains_key("input_schema");

    // (a) The object's own call, read in every position.
    let mut own: Vec<Call> = Vec::new();
    match kind {
        Kind::Call { custom: true } => named(object, &Expect::Any, &mut own),
        Kind::Call { custom: false } | Kind::Ui(None) => {
            named(object, &arguments(object), &mut own);
        }
        Kind::Invalid => named(object, &Expect::Invalid, &mut own),
        Kind::Hosted(tool) => own.push(Call {
            name: tool.to_owned(),
            arguments: Expect::Any,
        }),
        Kind::Ui(Some(tool)) => own.push(Call {
            name: tool.to_owned(),
            arguments: arguments(object),
        }),
        Kind::Result => {}
        // A declaration is not a call (but a `type` that makes an object a
        // call wins over a schema beside it).
        Kind::Message(_) | Kind::Plain | Kind::Other if result => {}
        Kind::Message(_) | Kind::Plain | Kind::Other => {
            // In a call list a name is the call's name whatever else the
            // element says; at the root only without a role or a type.
            // A tool declaration (`inputSchema`) is no call by its name
            // alone, but with arguments it is one.
            let alone = matches!(slot, Slot::CallList { .. })
                || (slot != Slot::Inner
                    && role.is_none()
                    && !object.contains_key("type")
                    && !declaration);
            if has_arguments(object) || alone {
                for name in names(object) {
                    own.push(Call {
                        name,
                        arguments: arguments(object),
                    });
                }
            }
        }
    }
    // Those calls take their arguments from the object's argument keys,
    // which are then no containers. (A call under a single-call key has
    // its arguments inside it.)
    let mut call_object = !own.is_empty();
    // Single-call keys are read in every object, a result's too.
    for key in SINGLE_CALLS {
        if key == "function_call" && object.contains_key("messages") && chooses(object.get(key)) {
            continue;
        }
        match object.get(key) {
            Some(Value::Object(inner)) => {
                // Arguments beside the key (not `input`, a request's item
                // list there) are one more reading of the same call.
                let beside = ["arguments", "params", "parameters", "args"]
                    .iter()
                    .filter(|_| !call_object)
                    .filter_map(|k| object.get(*k));
                let expect = if key == "custom" {
                    Expect::Any
                } else {
                    agree(
                        ARGUMENT_KEYS
                            .iter()
                            .filter_map(|k| inner.get(*k))
                            .chain(beside),
                    )
                };
                named(inner, &expect, &mut own);
            }
            Some(Value::String(_)) if key == "function" && !quiet => {
                out.must_refuse.push(format!("`{key}` holds a string"));
            }
            _ => {}
        }
    }
    // Every element of a call list is a call, named or not.
    let nameless = matches!(slot, Slot::CallList { .. }) && own.is_empty();
    if nameless {
        call_object = true;
        own.push(Call {
            name: String::new(),
            arguments: arguments(object),
        });
    }
    if kind == Kind::Invalid || slot == (Slot::CallList { invalid: true }) {
        for call in &mut own {
            call.arguments = Expect::Invalid;
        }
    }
    if !quiet {
        out.calls.extend(own);
    }

    // (b) Every container key, unless the object's call or result
    // consumes it.
    // LangChain's `messages_to_dict` keeps a legacy function message's
    // fields under `data` (`{"type": "function", "data": {...}}`).
    let data = matches!(kind, Kind::Message(_))
        || text(object, "object") == Some("list")
        || text(object, "type") == Some("function");
    let consumed = |key: &str| {
        // A result's argument keys echo its call's arguments: data too.
        ((call_object || result) && ARGUMENT_KEYS.contains(&key))
            || (result && RESULT_CONTENT.contains(&key))
    };
    walk_containers(object, data, &consumed, quiet, out);
}

/// Every container key of `object` but the `consumed` ones; `data` when
/// the object is a LangChain message or a list.
fn walk_containers(
    object: &Map<String, Value>,
    data: bool,
    consumed: &dyn Fn(&str) -> bool,
    quiet: bool,
    out: &mut Walk,
) {
    // A `messages_to_dict` dump's `data`, an object with no role of its
    // own, is a function message.
    let kind = text(object, "type");
    let dumped =
        (matches!(kind_of(kind), Kind::Other) && kind == Some("function")).then_some("function");
    for (key, value) in object {
        let key = key.as_str();
        if consumed(key) {
            continue;
        }
        let given = if key == "data" { dumped } else { None };
        let inner = |value: &Value, given: Option<&str>, out: &mut Walk| {
            if let Value::Object(child) = value {
                walk_object(child, Slot::Inner, given, quiet, out);
            }
        };
        let each = |value: &Value, out: &mut Walk| {
            if let Value::Array(items) = value {
                for item in items {
                    inner(item, None, out);
                }
            }
        };
        if LISTS.contains(&key) {
            each(value, out);
        } else if OBJECTS.contains(&key) {
            inner(value, None, out);
        } else if LIST_OR_OBJECT.contains(&key) || (key == "data" && data) {
            each(value, out);
            inner(value, given, out);
        } else if CALL_LISTS.contains(&key) || INVALID_CALL_LISTS.contains(&key) {
            let invalid = INVALID_CALL_LISTS.contains(&key);
            match value {
                Value::Array(items) => {
                    for item in items {
                        if let Value::Object(call) = item {
                            walk_object(call, Slot::CallList { invalid }, None, quiet, out);
                        }
                    }
                }
                Value::Null => {}
                _ if !quiet => out
                    .must_refuse
                    .push(format!("`{key}` is not a list of calls")),
                _ => {}
            }
        }
    }
}

// ---------------------------------------------------------------------
// The generator: random trees from every format's keys.
// ---------------------------------------------------------------------

/// Stand-ins replaced, in document order, by distinct tool names and ids.
const NAME: &str = "$name";
const UI_NAME: &str = "tool-$name";
const ID: &str = "$id";

const TYPES: &[&str] = &[
    // calls
    "tool_use",
    "server_tool_use",
    "mcp_tool_use",
    "function_call",
    "custom_tool_call",
    "mcp_call",
    "mcp_approval_request",
    "tool-call",
    "tool_call",
    "invalid_tool_call",
    "dynamic-tool",
    UI_NAME,
    "web_search_call",
    "code_interpreter_call",
    "computer_call",
    // results
    "tool_result",
    "function_call_output",
    "custom_tool_call_output",
    "tool-result",
    "tool-error",
    // messages
    "message",
    "ai",
    "AIMessage",
    "AIMessageChunk",
    "human",
    "HumanMessage",
    "system",
    "SystemMessage",
    "tool",
    "ToolMessage",
    "chat",
    // no call of their own
    "text",
    "function",
    "reasoning",
    "tool-invocation",
    "error",
    "constructor",
];
const CALL_ELEMENT_TYPES: &[&str] = &[
    "function",
    "tool_call",
    "tool-call",
    "function_call",
    "tool_use",
    "invalid_tool_call",
];
const ROLES: &[&str] = &[
    "user",
    "system",
    "developer",
    "assistant",
    "tool",
    "function",
    "model",
];
const ID_KEYS: &[&str] = &["id", "call_id", "toolCallId", "toolUseId"];

type Pair = (String, Value);

fn pair(key: &'static str, value: impl Strategy<Value = Value>) -> impl Strategy<Value = Pair> {
    value.prop_map(move |v| (key.to_owned(), v))
}

fn one_of(keys: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(keys)
}

fn string(values: &'static [&'static str]) -> impl Strategy<Value = Value> {
    one_of(values).prop_map(Value::from)
}

/// An argument value; with `child`, also trees that hold calls (which,
/// as arguments, are not calls).
fn argument_value(child: Option<BoxedStrategy<Value>>) -> BoxedStrategy<Value> {
    let plain = prop_oneof![
        3 => Just(json!({"a": 1})),
        3 => Just(json!({"b": "x"})),
        2 => Just(json!({})),
        2 => Just(json!("{\"a\":1}")),
        1 => Just(json!("")),
        1 => Just(json!([1])),
        1 => Just(json!("not json")),
        1 => Just(Value::Null),
    ];
    match child {
        None => plain.boxed(),
        Some(child) => prop_oneof![
            6 => plain,
            1 => child.clone(),
            1 => proptest::collection::vec(child, 0..3).prop_map(Value::Array),
        ]
        .boxed(),
    }
}

/// The inside of a single-call key, in its own format's spelling.
fn single_call() -> impl Strategy<Value = Pair> {
    let argument = || argument_value(None);
    prop_oneof![
        argument().prop_map(|a| ("function".to_owned(), json!({"name": NAME, "arguments": a}))),
        argument().prop_map(|a| (
            "function_call".to_owned(),
            json!({"name": NAME, "arguments": a})
        )),
        argument().prop_map(|a| ("functionCall".to_owned(), json!({"name": NAME, "args": a}))),
        argument().prop_map(|a| (
            "toolUse".to_owned(),
            json!({"toolUseId": ID, "name": NAME, "input": a})
        )),
        Just(("custom".to_owned(), json!({"name": NAME, "input": "text"}))),
        argument().prop_map(|a| (
            "toolInvocation".to_owned(),
            json!({"toolCallId": ID, "toolName": NAME, "args": a, "state": "call"})
        )),
    ]
}

/// Keys that make an object a result, a declaration, or a list.
fn marker() -> impl Strategy<Value = Pair> {
    prop_oneof![
        Just((
            "functionResponse".to_owned(),
            json!({"name": NAME, "response": {"r": 1}})
        )),
        Just((
            "toolResult".to_owned(),
            json!({"toolUseId": ID, "content": [{"text": "ok"}]})
        )),
        Just(("inputSchema".to_owned(), json!({"type": "object"}))),
        Just(("input_schema".to_owned(), json!({"type": "object"}))),
        Just(("object".to_owned(), json!("list"))),
        Just(("text".to_owned(), json!("hello"))),
    ]
}

/// The keys that make a call: names, an argument key, an id (weighted
/// `ids`), a single-call key.
fn call_keys(child: Option<BoxedStrategy<Value>>, ids: u32) -> Vec<(u32, BoxedStrategy<Pair>)> {
    vec![
        (4, Just(("name".to_owned(), json!(NAME))).boxed()),
        (2, Just(("toolName".to_owned(), json!(NAME))).boxed()),
        (
            4,
            (one_of(&ARGUMENT_KEYS), argument_value(child))
                .prop_map(|(k, v)| (k.to_owned(), v))
                .boxed(),
        ),
        (
            ids,
            one_of(ID_KEYS)
                .prop_map(|k| (k.to_owned(), json!(ID)))
                .boxed(),
        ),
        (2, single_call().boxed()),
    ]
}

/// Keys of a call-list element.
fn call_element(child: Option<BoxedStrategy<Value>>) -> BoxedStrategy<Value> {
    let mut features: Vec<(u32, BoxedStrategy<Pair>)> = vec![
        (3, pair("type", string(CALL_ELEMENT_TYPES)).boxed()),
        (1, pair("index", Just(json!(0))).boxed()),
    ];
    features.extend(call_keys(child.clone(), 3));
    if let Some(child) = child {
        // Containers in a call (LangChain's chunk beside its message):
        // `child` objects bring call lists of their own.
        let list = proptest::collection::vec(child.clone(), 0..3).prop_map(Value::Array);
        features.push((
            1,
            prop_oneof![
                (one_of(&LISTS), list).prop_map(|(k, v)| (k.to_owned(), v)),
                (one_of(&OBJECTS), child).prop_map(|(k, v)| (k.to_owned(), v)),
            ]
            .boxed(),
        ));
    }
    object_of(features, 0..5)
}

fn object_of(
    features: Vec<(u32, BoxedStrategy<Pair>)>,
    count: std::ops::Range<usize>,
) -> BoxedStrategy<Value> {
    proptest::collection::vec(proptest::strategy::Union::new_weighted(features), count)
        .prop_map(|pairs| Value::Object(pairs.into_iter().collect()))
        .boxed()
}

/// Container keys holding `child` objects, the odd text or null, and
/// (rarely) a call list of the wrong type.
fn containers(child: &BoxedStrategy<Value>) -> impl Strategy<Value = Pair> {
    let list = proptest::collection::vec(child.clone(), 0..3).prop_map(Value::Array);
    let calls =
        proptest::collection::vec(call_element(Some(child.clone())), 0..3).prop_map(Value::Array);
    prop_oneof![
        12 => (one_of(&LISTS), list.clone()).prop_map(|(k, v)| (k.to_owned(), v)),
        9 => (one_of(&OBJECTS), child.clone()).prop_map(|(k, v)| (k.to_owned(), v)),
        12 => (
            prop_oneof![one_of(&LIST_OR_OBJECT), Just("data")],
            prop_oneof![
                3 => list.clone(),
                2 => child.clone(),
                1 => Just(json!("some text")),
                1 => Just(Value::Null),
            ]
        )
            .prop_map(|(k, v)| (k.to_owned(), v)),
        12 => (one_of(&ALL_CALL_LISTS), calls).prop_map(|(k, v)| (k.to_owned(), v)),
        1 => (one_of(&ALL_CALL_LISTS), call_element(None)).prop_map(|(k, v)| (k.to_owned(), v)),
        1 => Just(("function".to_owned(), json!("not a call"))),
        1 => Just(("function_call".to_owned(), json!("auto"))),
    ]
}

/// One object: keys from every format, containers holding `child`.
fn object(child: Option<BoxedStrategy<Value>>) -> BoxedStrategy<Value> {
    let mut features: Vec<(u32, BoxedStrategy<Pair>)> = vec![
        (4, pair("type", string(TYPES)).boxed()),
        (3, pair("role", string(ROLES)).boxed()),
        (2, marker().boxed()),
    ];
    features.extend(call_keys(child.clone(), 2));
    if let Some(child) = child {
        features.push((14, containers(&child).boxed()));
    }
    object_of(features, 0..7)
}

/// Distinct tool names and ids, in document order.
fn number(value: &mut Value, next: &mut (usize, usize)) {
    match value {
        Value::String(s) if s == NAME => {
            *s = format!("t{}", next.0);
            next.0 += 1;
        }
        Value::String(s) if s == UI_NAME => {
            *s = format!("tool-t{}", next.0);
            next.0 += 1;
        }
        Value::String(s) if s == ID => {
            *s = format!("id{}", next.1);
            next.1 += 1;
        }
        Value::Array(items) => items.iter_mut().for_each(|v| number(v, next)),
        Value::Object(map) => map.values_mut().for_each(|v| number(v, next)),
        _ => {}
    }
}

fn document() -> impl Strategy<Value = Value> {
    let tree = object(None).prop_recursive(4, 64, 4, |inner| object(Some(inner)));
    prop_oneof![
        3 => tree.clone(),
        1 => proptest::collection::vec(tree, 0..4).prop_map(Value::Array),
    ]
    .prop_map(|mut document| {
        number(&mut document, &mut (0, 0));
        document
    })
}

// ---------------------------------------------------------------------
// The comparison.
// ---------------------------------------------------------------------

fn refused(found: &Detection) -> bool {
    found.violations.iter().any(|v| {
        matches!(
            v.code,
            ViolationCode::MalformedPayload | ViolationCode::InputLimitExceeded
        )
    })
}

fn describe(found: &Detection) -> String {
    let mut text = String::new();
    for call in &found.calls {
        let arguments = match &call.arguments {
            Arguments::Object(map) => Value::Object((**map).clone()).to_string(),
            Arguments::Text(t) => format!("text {t:?}"),
            Arguments::Invalid(err) => format!("invalid ({:?})", err.reason),
        };
        let _ = write!(text, "\n  {:?} {arguments}", call.name);
    }
    for violation in &found.violations {
        let _ = write!(
            text,
            "\n  violation {}: {}",
            violation.code.as_str(),
            violation.message
        );
    }
    text
}

fn fits(want: &Expect, got: &Arguments) -> bool {
    match want {
        Expect::Object(map) => got.as_object() == Some(map),
        Expect::Invalid => got.error().is_some(),
        Expect::Any => true,
    }
}

/// Whether every expected call pairs with a call of its own, of the same
/// name and with fitting arguments (several calls may have an empty name).
fn pairs(want: &[Call], got: &[&ToolCall], used: &mut [bool]) -> bool {
    let Some((first, rest)) = want.split_first() else {
        return true;
    };
    for (i, call) in got.iter().enumerate() {
        if !used[i] && call.name == first.name && fits(&first.arguments, &call.arguments) {
            used[i] = true;
            if pairs(rest, got, used) {
                return true;
            }
            used[i] = false;
        }
    }
    false
}

/// `None` when `detect` reports what the walker found (or refuses the
/// payload); else what differs.
fn disagreement(document: &Value, found: &Detection, expected: &Walk) -> Option<String> {
    if refused(found) {
        return None;
    }
    let mut problems = Vec::new();
    if !expected.must_refuse.is_empty() {
        problems.push(format!("not refused: {}", expected.must_refuse.join(", ")));
    }
    let mut want: Vec<&str> = expected.calls.iter().map(|c| c.name.as_str()).collect();
    let mut got: Vec<&str> = found.calls.iter().map(|c| c.name.as_str()).collect();
    want.sort_unstable();
    got.sort_unstable();
    if want == got {
        let calls: Vec<&ToolCall> = found.calls.iter().collect();
        if !pairs(&expected.calls, &calls, &mut vec![false; calls.len()]) {
            problems.push("arguments differ".to_owned());
        }
    } else {
        problems.push(format!("tool names: walker {want:?}, detect {got:?}"));
    }
    if problems.is_empty() {
        return None;
    }
    Some(format!(
        "{}\npayload: {document}\ndetect:{}\nwalker: {:?}",
        problems.join("\n"),
        describe(found),
        expected.calls
    ))
}

/// `PROPTEST_CASES` when set (for long local runs), else a count that
/// keeps the debug test binary quick.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1024);
    ProptestConfig::with_cases(cases)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn detect_reads_every_call_position_or_refuses(document in document()) {
        let expected = walk(&document);
        let found = detect(&serde_json::to_vec(&document).unwrap());
        if let Some(problem) = disagreement(&document, &found, &expected) {
            prop_assert!(false, "{}", problem);
        }
    }
}

// ---------------------------------------------------------------------
// The merge rule: one call in two positions of one object, with one id.
// ---------------------------------------------------------------------

/// The keys a position adds to an object for call `id` named `name`.
type Position = fn(id: &str, name: &str, arguments: &Value) -> Value;

/// The positions of one object that can carry the same call.
const POSITIONS: [(&str, Position); 9] = [
    (
        "name and arguments",
        |id, name, arguments| json!({"id": id, "name": name, "arguments": arguments}),
    ),
    ("function", |id, name, arguments| {
        let function = json!({"name": name, "arguments": arguments.to_string()});
        json!({"id": id, "function": function})
    }),
    (
        "a tool_use type",
        |id, name, arguments| json!({"type": "tool_use", "id": id, "name": name, "input": arguments}),
    ),
    (
        "functionCall",
        |id, name, arguments| json!({"functionCall": {"id": id, "name": name, "args": arguments}}),
    ),
    (
        "function_call",
        |id, name, arguments| json!({"function_call": {"id": id, "name": name, "args": arguments}}),
    ),
    (
        "toolUse",
        |id, name, arguments| json!({"toolUse": {"toolUseId": id, "name": name, "input": arguments}}),
    ),
    ("tool_calls", |id, name, arguments| {
        let function = json!({"name": name, "arguments": arguments.to_string()});
        json!({"tool_calls": [{"id": id, "type": "function", "function": function}]})
    }),
    ("content blocks", |id, name, arguments| {
        let block = json!({"type": "tool_use", "id": id, "name": name, "input": arguments});
        json!({"content": [block]})
    }),
    (
        "toolCalls",
        |id, name, arguments| json!({"toolCalls": [{"toolCallId": id, "toolName": name, "input": arguments}]}),
    ),
];

/// The positions that are lists of calls: views of an object's calls.
const VIEWS: [&str; 3] = ["tool_calls", "content blocks", "toolCalls"];

/// How the second reading of the call compares with the first.
#[derive(Clone, Copy, Debug)]
enum Second {
    Agrees,
    OtherName,
    OtherArguments,
}

/// One object with the call `c1` in positions `first` and `second`; `None`
/// when the two positions need the same key.
fn merged(first: Position, second: Position, how: Second) -> Option<Value> {
    let arguments = json!({"a": 1});
    let (name, other) = match how {
        Second::Agrees => ("t", arguments.clone()),
        Second::OtherName => ("u", arguments.clone()),
        Second::OtherArguments => ("t", json!({"a": 2})),
    };
    let Value::Object(mut object) = first("c1", "t", &arguments) else {
        unreachable!()
    };
    let Value::Object(more) = second("c1", name, &other) else {
        unreachable!()
    };
    for (key, value) in more {
        if key != "id" && object.contains_key(&key) {
            return None;
        }
        object.insert(key, value);
    }
    Some(Value::Object(object))
}

/// One object with one call (one id) in two positions: read once when
/// the readings agree; refused when they differ (a name: the payload; the
/// arguments: the payload, or the call as `conflicting`).
#[test]
fn one_call_in_two_positions_counts_once_or_is_refused() {
    let arguments = json!({"a": 1});
    let mut failures = Vec::new();
    let mut tried = 0;
    for (i, (first_name, first)) in POSITIONS.iter().enumerate() {
        for (j, (second_name, second)) in POSITIONS.iter().enumerate() {
            if i == j {
                continue;
            }
            for how in [Second::Agrees, Second::OtherName, Second::OtherArguments] {
                let Some(payload) = merged(*first, *second, how) else {
                    continue;
                };
                tried += 1;
                let found = detect(&serde_json::to_vec(&payload).unwrap());
                let once = found.violations.is_empty()
                    && found.calls.len() == 1
                    && found.calls[0].name == "t";
                // The object's own call and a call in one of its lists are
                // two calls (a check refuses the repeated id); two views
                // of the object's calls, or two readings of its own call,
                // are one call read twice.
                let view = |name: &str| VIEWS.contains(&name);
                let ok = match how {
                    _ if view(first_name) != view(second_name) => {
                        refused(&found) || found.calls.len() == 2
                    }
                    Second::Agrees => {
                        once && found.calls[0].arguments.as_object() == arguments.as_object()
                    }
                    Second::OtherName => refused(&found),
                    Second::OtherArguments => {
                        refused(&found)
                            || (once
                                && found.calls[0].arguments.error().map(|e| e.reason)
                                    == Some(ArgumentErrorReason::Conflicting))
                    }
                };
                if !ok {
                    failures.push(format!(
                        "{first_name} + {second_name} ({how:?}): {payload}{}",
                        describe(&found)
                    ));
                }
            }
        }
    }
    // Every ordered pair but the two that need `name` twice, three ways.
    assert_eq!(tried, (9 * 8 - 2) * 3);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
