//! A check workload written by `bench/workload.py`: a policy, one response
//! a line (OpenAI Chat Completions, Anthropic Messages for the `anthropic`
//! shape, OpenAI Responses for `responses`, Gemini and Bedrock Converse
//! answers for `gemini` and `bedrock`, and for `chat-sse`, `messages-sse`,
//! `responses-sse` and `gemini-sse` a `text/event-stream` body of those
//! formats, for `vercel-sse` a Vercel AI SDK UI message stream, and for
//! `bedrock-stream` a ConverseStream's JSON lines, as a JSON string; for
//! `openai-request` and `anthropic-request` the request sending the calls
//! back with their results), and what each
//! one should be found to hold; and the naive pipeline a user writes for
//! that wire format. `Workload::load`
//! reads `$TOOLGATE_WORKLOAD`, else `target/workload` in the workspace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub(crate) struct Workload {
    pub(crate) dir: PathBuf,
    /// `openai`, `anthropic`, `responses`, `gemini`, `bedrock`,
    /// `chat-sse`, `messages-sse`, `responses-sse`, `gemini-sse`,
    /// `bedrock-stream`, `vercel-sse`, `small`, `large`, `deep`, `formats`,
    /// `numbers`, `openai-request` or `anthropic-request` (and the shapes
    /// of reasoning models, `*-thinking`, and `large-anthropic`).
    pub(crate) shape: String,
    /// How its bodies are laid out (`bench/workload.py --layout`):
    /// `compact`, `spaced` or `indent`.
    pub(crate) layout: String,
    /// How its free text is written (`bench/workload.py --text`): `plain`,
    /// `unicode` or `escaped`.
    pub(crate) text: String,
    pub(crate) policy: toolgate::Policy,
    pub(crate) payloads: Vec<Vec<u8>>,
    /// Per payload, the violation code it must fail with; `None`: it passes.
    pub(crate) expected: Vec<Option<String>>,
}

impl Workload {
    /// The workload of `$TOOLGATE_WORKLOAD`, for `examples/check_workload.rs`
    /// (the check bench reads one a shape).
    #[allow(dead_code)] // the example's, not the bench's
    pub(crate) fn load() -> Workload {
        let dir = std::env::var_os("TOOLGATE_WORKLOAD").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/workload"),
            PathBuf::from,
        );
        Workload::from_dir(&dir)
    }

    pub(crate) fn from_dir(dir: &Path) -> Workload {
        // The first shape's stats.json names none.
        let stats: Value = serde_json::from_slice(&read(dir, "stats.json")).expect("stats.json");
        let shape = stats["shape"].as_str().unwrap_or("openai").to_owned();
        let layout = stats["layout"].as_str().unwrap_or("compact").to_owned();
        let text = stats["text"].as_str().unwrap_or("plain").to_owned();
        let payloads: Vec<Vec<u8>> = lines(&read(dir, "payloads.jsonl"))
            .map(|line| {
                if shape.ends_with("-sse") || shape.ends_with("-stream") || layout == "indent" {
                    // An event stream's body (or a stream's JSON lines),
                    // or a body laid out over lines, its line ends and
                    // all, as a JSON string.
                    let body: String = serde_json::from_slice(line).expect("a JSON string");
                    body.into_bytes()
                } else {
                    line.to_vec()
                }
            })
            .collect();
        let expected: Vec<Option<String>> = lines(&read(dir, "defects.jsonl"))
            .map(|line| {
                let record: Value = serde_json::from_slice(line).expect("defects.jsonl");
                record["code"].as_str().map(str::to_owned)
            })
            .collect();
        assert_eq!(
            payloads.len(),
            expected.len(),
            "payloads and defects differ"
        );
        let policy = toolgate::Policy::load(dir.join("policy.yaml")).expect("policy.yaml");
        Workload {
            dir: dir.to_path_buf(),
            shape,
            layout,
            text,
            policy,
            payloads,
            expected,
        }
    }

    /// The declared tools' schemas, by name, as written in the policy
    /// (OpenAI `function.parameters` or Anthropic `input_schema`).
    pub(crate) fn tool_schemas(&self) -> Vec<(String, Value)> {
        let text = std::fs::read_to_string(self.dir.join("policy.yaml")).expect("policy.yaml");
        let policy: Value = serde_saphyr::from_str(&text).expect("policy.yaml is YAML");
        policy["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|tool| {
                let (tool, schema) = match tool.get("function") {
                    Some(function) => (function, &function["parameters"]),
                    None => (tool, &tool["input_schema"]),
                };
                let name = tool["name"].as_str().expect("name").to_owned();
                (name, schema.clone())
            })
            .collect()
    }

    /// The name the bench knows it by: its shape, and after a dash its
    /// layout but for `compact` (`gemini-indent`) or its text but for
    /// `plain` (`openai-escaped`; a workload has one or the other).
    #[allow(dead_code)] // the bench's, not the example's
    pub(crate) fn name(&self) -> String {
        if self.layout != "compact" {
            format!("{}-{}", self.shape, self.layout)
        } else if self.text != "plain" {
            format!("{}-{}", self.shape, self.text)
        } else {
            self.shape.clone()
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.payloads.iter().map(|p| p.len() as u64).sum()
    }
}

/// A file of the workload, or a panic that says how to write it.
pub(crate) fn read(dir: &Path, name: &str) -> Vec<u8> {
    let path = dir.join(name);
    std::fs::read(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; generate it with `python3 bench/workload.py {} --shape SHAPE`",
            path.display(),
            dir.display()
        )
    })
}

/// The non-empty lines of a JSON-lines file.
pub(crate) fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|b| *b == b'\n').filter(|line| !line.is_empty())
}

// The naive pipeline users write, the bench's baseline.

/// One validator per tool, compiled once, formats asserted, and the wire
/// format its calls come in.
pub(crate) struct Naive {
    wire: Wire,
    validators: HashMap<String, jsonschema::Validator>,
}

/// Where a shape's calls are, and how their arguments are sent.
#[derive(Clone, Copy)]
enum Wire {
    ChatCompletions,
    Messages,
    Responses,
    /// Gemini `generateContent` answers.
    Gemini,
    /// Bedrock Converse answers.
    Bedrock,
    /// Chat Completions chunks in a `text/event-stream` body.
    ChatStream,
    /// Anthropic Messages stream events.
    MessagesStream,
    /// OpenAI Responses stream events.
    ResponsesStream,
    /// Gemini `streamGenerateContent` events, each an answer of its own.
    GeminiStream,
    /// Bedrock ConverseStream events as JSON lines.
    BedrockStream,
    /// Vercel AI SDK UI message stream parts.
    VercelStream,
    /// A Chat Completions request: the conversation sent back to the
    /// model, its assistant messages' calls.
    ChatRequest,
    /// An Anthropic Messages request: its assistant turns' `tool_use`
    /// blocks.
    MessagesRequest,
}

pub(crate) fn naive_validators(workload: &Workload) -> Naive {
    let validators = workload
        .tool_schemas()
        .into_iter()
        .map(|(name, schema)| {
            let validator = jsonschema::options()
                .should_validate_formats(true)
                .build(&schema)
                .expect("a valid schema");
            (name, validator)
        })
        .collect();
    Naive {
        // (A reasoning model's answers, `anthropic-thinking`, and a coding
        // agent's, `large-anthropic`, are in their API's wire format.)
        wire: match workload
            .shape
            .trim_end_matches("-thinking")
            .trim_start_matches("large-")
        {
            "anthropic" => Wire::Messages,
            "responses" => Wire::Responses,
            "gemini" => Wire::Gemini,
            "bedrock" => Wire::Bedrock,
            "chat-sse" => Wire::ChatStream,
            "messages-sse" => Wire::MessagesStream,
            "responses-sse" => Wire::ResponsesStream,
            "gemini-sse" => Wire::GeminiStream,
            "bedrock-stream" => Wire::BedrockStream,
            "vercel-sse" => Wire::VercelStream,
            "openai-request" => Wire::ChatRequest,
            "anthropic-request" => Wire::MessagesRequest,
            _ => Wire::ChatCompletions,
        },
        validators,
    }
}

/// The naive pipeline: how many calls are invalid (an unknown tool, or
/// arguments that do not parse or do not validate), or `None` when the body
/// is not JSON. Every call is checked, as toolgate does.
pub(crate) fn naive_check(naive: &Naive, body: &[u8]) -> Option<usize> {
    let validators = &naive.validators;
    let body = match naive.wire {
        Wire::ChatStream => return naive_chat_stream(validators, body),
        Wire::MessagesStream => return naive_messages_stream(validators, body),
        Wire::ResponsesStream => return naive_responses_stream(validators, body),
        Wire::GeminiStream => return naive_gemini_stream(validators, body),
        Wire::BedrockStream => return naive_bedrock_stream(validators, body),
        Wire::VercelStream => return naive_vercel_stream(validators, body),
        Wire::ChatCompletions
        | Wire::Messages
        | Wire::Responses
        | Wire::Gemini
        | Wire::Bedrock
        | Wire::ChatRequest
        | Wire::MessagesRequest => serde_json::from_slice(body).ok()?,
    };
    match naive.wire {
        Wire::ChatRequest => naive_chat_request(validators, &body),
        Wire::MessagesRequest => naive_messages_request(validators, &body),
        Wire::Messages => naive_anthropic(validators, &body),
        Wire::Responses => naive_responses(validators, &body),
        Wire::Gemini => naive_gemini(validators, &body),
        Wire::Bedrock => naive_bedrock(validators, &body),
        _ => naive_openai(validators, &body),
    }
}

/// An arguments object, already a value, validated as it is; false for
/// an unknown tool, or arguments that are no object (a string).
fn naive_object(
    validators: &HashMap<String, jsonschema::Validator>,
    name: Option<&str>,
    arguments: Option<&Value>,
) -> bool {
    match (name.and_then(|name| validators.get(name)), arguments) {
        (Some(validator), Some(arguments)) if arguments.is_object() => {
            validator.is_valid(arguments)
        }
        _ => false,
    }
}

/// Gemini: each `functionCall` part's `args` validated as it is.
fn naive_gemini(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &Value,
) -> Option<usize> {
    let mut invalid = 0;
    for candidate in body.get("candidates")?.as_array()? {
        let parts = candidate
            .get("content")
            .and_then(|content| content.get("parts"))
            .and_then(Value::as_array);
        for call in parts
            .into_iter()
            .flatten()
            .filter_map(|part| part.get("functionCall"))
        {
            let name = call.get("name").and_then(Value::as_str);
            invalid += usize::from(!naive_object(validators, name, call.get("args")));
        }
    }
    Some(invalid)
}

/// Bedrock Converse: each `toolUse` block's `input` validated as it is.
fn naive_bedrock(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &Value,
) -> Option<usize> {
    let mut invalid = 0;
    let content = body
        .get("output")?
        .get("message")?
        .get("content")?
        .as_array()?;
    for call in content.iter().filter_map(|block| block.get("toolUse")) {
        let name = call.get("name").and_then(Value::as_str);
        invalid += usize::from(!naive_object(validators, name, call.get("input")));
    }
    Some(invalid)
}

/// Each `data:` line of an event stream's body (but `[DONE]`) as a
/// `serde_json::Value`, in order, to `each`; `None` when one is not JSON.
fn events(body: &[u8], mut each: impl FnMut(&Value) -> Option<()>) -> Option<()> {
    let text = std::str::from_utf8(body).ok()?;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        each(&serde_json::from_str(data).ok()?)?;
    }
    Some(())
}

/// A streamed Gemini answer: each event a `serde_json::Value` read as a
/// `generateContent` answer, each `functionCall` part's `args` validated
/// as it is.
fn naive_gemini_stream(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &[u8],
) -> Option<usize> {
    let mut invalid = 0;
    events(body, |event| {
        invalid += naive_gemini(validators, event)?;
        Some(())
    })?;
    Some(invalid)
}

/// A Bedrock ConverseStream answer, as the AWS SDKs' accumulators read it:
/// each line a `serde_json::Value` keyed by its event type, a call opened
/// by each `contentBlockStart` holding a `toolUse`, its input fragments
/// gathered by `contentBlockIndex`; then each call's input parsed and
/// validated. `None` when a line is not JSON.
fn naive_bedrock_stream(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &[u8],
) -> Option<usize> {
    let mut calls: Vec<(Option<String>, String)> = Vec::new();
    let mut blocks: HashMap<u64, usize> = HashMap::new();
    for line in std::str::from_utf8(body).ok()?.lines() {
        if line.is_empty() {
            continue;
        }
        let event: Value = serde_json::from_str(line).ok()?;
        if let Some(start) = event.get("contentBlockStart") {
            if let Some(tool) = start.get("start").and_then(|s| s.get("toolUse")) {
                let index = start.get("contentBlockIndex")?.as_u64()?;
                let name = tool.get("name").and_then(Value::as_str).map(str::to_owned);
                blocks.insert(index, calls.len());
                calls.push((name, String::new()));
            }
        } else if let Some(delta) = event.get("contentBlockDelta") {
            let input = delta
                .get("delta")
                .and_then(|d| d.get("toolUse"))
                .and_then(|t| t.get("input"))
                .and_then(Value::as_str);
            if let Some(input) = input {
                let call = *blocks.get(&delta.get("contentBlockIndex")?.as_u64()?)?;
                calls[call].1.push_str(input);
            }
        }
    }
    Some(invalid_of(validators, &calls))
}

/// How many of the calls gathered from a stream (name, arguments text)
/// are invalid.
fn invalid_of(
    validators: &HashMap<String, jsonschema::Validator>,
    calls: &[(Option<String>, String)],
) -> usize {
    calls
        .iter()
        .filter(|(name, text)| !naive_arguments(validators, name.as_deref(), text))
        .count()
}

/// A streamed Chat Completions answer, as the SDKs' accumulators read it:
/// each event a `serde_json::Value`, each call's name and arguments
/// fragments gathered by its `index`; then each call's arguments parsed
/// and validated. `None` when an event is not JSON.
fn naive_chat_stream(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &[u8],
) -> Option<usize> {
    let mut calls: Vec<(Option<String>, String)> = Vec::new();
    events(body, |chunk| {
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            let fragments = choice
                .get("delta")
                .and_then(|delta| delta.get("tool_calls"))
                .and_then(Value::as_array);
            for fragment in fragments.into_iter().flatten() {
                let index = usize::try_from(fragment.get("index")?.as_u64()?).ok()?;
                if calls.len() <= index {
                    calls.resize_with(index + 1, Default::default);
                }
                let call = &mut calls[index];
                let function = fragment.get("function");
                if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                    call.0 = Some(name.to_owned());
                }
                if let Some(text) = function
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                {
                    call.1.push_str(text);
                }
            }
        }
        Some(())
    })?;
    Some(invalid_of(validators, &calls))
}

/// A streamed Anthropic Messages answer, as the SDKs' accumulators read
/// it: each event a `serde_json::Value`, a call opened by each `tool_use`
/// block start, its `input_json_delta` fragments gathered by the block's
/// `index`; then each call's input parsed (none: `{}`) and validated.
fn naive_messages_stream(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &[u8],
) -> Option<usize> {
    let mut calls: Vec<(Option<String>, String)> = Vec::new();
    let mut blocks: HashMap<u64, usize> = HashMap::new();
    events(body, |event| {
        let index = event.get("index").and_then(Value::as_u64);
        match event.get("type").and_then(Value::as_str) {
            Some("content_block_start") => {
                let block = event.get("content_block")?;
                if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    let name = block.get("name").and_then(Value::as_str).map(str::to_owned);
                    blocks.insert(index?, calls.len());
                    calls.push((name, String::new()));
                }
            }
            Some("content_block_delta") => {
                let delta = event.get("delta")?;
                if delta.get("type").and_then(Value::as_str) == Some("input_json_delta") {
                    let call = *blocks.get(&index?)?;
                    calls[call].1.push_str(delta.get("partial_json")?.as_str()?);
                }
            }
            _ => {}
        }
        Some(())
    })?;
    Some(invalid_of(validators, &calls))
}

/// A streamed OpenAI Responses answer, as an accumulator reads it: each
/// event a `serde_json::Value`, a call opened by each `function_call` item
/// added, its arguments deltas gathered by `item_id`; then each call's
/// arguments parsed and validated.
fn naive_responses_stream(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &[u8],
) -> Option<usize> {
    let mut calls: Vec<(Option<String>, String)> = Vec::new();
    let mut items: HashMap<String, usize> = HashMap::new();
    events(body, |event| {
        match event.get("type").and_then(Value::as_str) {
            Some("response.output_item.added") => {
                let item = event.get("item")?;
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let name = item.get("name").and_then(Value::as_str).map(str::to_owned);
                    items.insert(item.get("id")?.as_str()?.to_owned(), calls.len());
                    calls.push((name, String::new()));
                }
            }
            Some("response.function_call_arguments.delta") => {
                let call = *items.get(event.get("item_id")?.as_str()?)?;
                calls[call].1.push_str(event.get("delta")?.as_str()?);
            }
            _ => {}
        }
        Some(())
    })?;
    Some(invalid_of(validators, &calls))
}

/// A Vercel AI SDK UI message stream, as a client gathers it: each event a
/// `serde_json::Value`, a call opened by each `tool-input-start`, its
/// `inputTextDelta`s gathered by `toolCallId`; then each call's input text
/// parsed and validated. `None` when an event is not JSON.
fn naive_vercel_stream(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &[u8],
) -> Option<usize> {
    let mut calls: Vec<(Option<String>, String)> = Vec::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    events(body, |event| {
        match event.get("type").and_then(Value::as_str) {
            Some("tool-input-start") => {
                let name = event
                    .get("toolName")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                ids.insert(event.get("toolCallId")?.as_str()?.to_owned(), calls.len());
                calls.push((name, String::new()));
            }
            Some("tool-input-delta") => {
                let call = *ids.get(event.get("toolCallId")?.as_str()?)?;
                let text = event.get("inputTextDelta")?.as_str()?;
                calls[call].1.push_str(text);
            }
            _ => {}
        }
        Some(())
    })?;
    Some(invalid_of(validators, &calls))
}

/// An arguments text parsed (empty: `{}`), then validated against its
/// tool's schema; false for an unknown tool or a text that does not parse.
fn naive_arguments(
    validators: &HashMap<String, jsonschema::Validator>,
    name: Option<&str>,
    text: &str,
) -> bool {
    let arguments = if text.is_empty() {
        Ok(Value::Object(Map::new()))
    } else {
        serde_json::from_str::<Value>(text)
    };
    match (name.and_then(|name| validators.get(name)), arguments) {
        (Some(validator), Ok(arguments)) => validator.is_valid(&arguments),
        _ => false,
    }
}

/// The items of the array `list` whose `type` is `kind`; `None` when the
/// body has no such array.
fn typed<'a>(
    body: &'a Value,
    list: &str,
    kind: &'a str,
) -> Option<impl Iterator<Item = &'a Value>> {
    let items = body.get(list)?.as_array()?;
    Some(
        items
            .iter()
            .filter(move |item| item.get("type").and_then(Value::as_str) == Some(kind)),
    )
}

/// Responses: each `function_call` item's `arguments` string parsed, then
/// validated.
fn naive_responses(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &Value,
) -> Option<usize> {
    let mut invalid = 0;
    for item in typed(body, "output", "function_call")? {
        let name = item.get("name").and_then(Value::as_str);
        let text = item
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or_default();
        invalid += usize::from(!naive_arguments(validators, name, text));
    }
    Some(invalid)
}

/// Chat Completions: each call's `arguments` string parsed, then validated.
fn naive_openai(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &Value,
) -> Option<usize> {
    let mut invalid = 0;
    for choice in body.get("choices")?.as_array()? {
        let Some(calls) = choice
            .get("message")
            .and_then(|message| message.get("tool_calls"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        invalid += naive_function_calls(validators, calls);
    }
    Some(invalid)
}

/// How many of a message's `tool_calls` are invalid: each call's
/// `arguments` string parsed, then validated.
fn naive_function_calls(
    validators: &HashMap<String, jsonschema::Validator>,
    calls: &[Value],
) -> usize {
    let mut invalid = 0;
    for call in calls {
        let function = call.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        let text = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        invalid += usize::from(!naive_arguments(validators, name, text));
    }
    invalid
}

/// A Chat Completions request: each assistant message's calls, their
/// `arguments` strings parsed, then validated (the calls of every turn, as
/// toolgate's `check` judges them).
fn naive_chat_request(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &Value,
) -> Option<usize> {
    let mut invalid = 0;
    for message in body.get("messages")?.as_array()? {
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            invalid += naive_function_calls(validators, calls);
        }
    }
    Some(invalid)
}

/// An Anthropic Messages request: each assistant turn's `tool_use`
/// blocks, their `input` validated as it is.
fn naive_messages_request(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &Value,
) -> Option<usize> {
    let mut invalid = 0;
    for message in body.get("messages")?.as_array()? {
        if message.get("role").and_then(Value::as_str) == Some("assistant") {
            invalid += naive_anthropic(validators, message).unwrap_or(0);
        }
    }
    Some(invalid)
}

/// Messages: each `tool_use` block's `input`, already a value, validated
/// as it is.
fn naive_anthropic(
    validators: &HashMap<String, jsonschema::Validator>,
    body: &Value,
) -> Option<usize> {
    let mut invalid = 0;
    for block in typed(body, "content", "tool_use")? {
        let name = block.get("name").and_then(Value::as_str);
        let valid = match (
            name.and_then(|name| validators.get(name)),
            block.get("input"),
        ) {
            (Some(validator), Some(input)) => validator.is_valid(input),
            _ => false,
        };
        invalid += usize::from(!valid);
    }
    Some(invalid)
}
