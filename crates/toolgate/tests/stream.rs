//! Streams: every captured `.sse` and `.jsonl` fixture, with the calls and
//! results read from it by hand, and the assembler's promises: any split of
//! the bytes into chunks reads the same, frames give back every byte, and
//! each call is named and completed once under its final index.

use proptest::prelude::*;
use serde_json::{json, Value};
use toolgate::detect::stream::{read_whole, Assembler, StreamEvent};
use toolgate::{
    detect, ArgumentErrorReason, Arguments, CallKind, Detection, Format, Framing, Limits,
    ViolationCode,
};

/// Every stream fixture, relative to `tests/fixtures`.
const STREAMS: [&str; 30] = [
    "anthropic/stream-bedrock-invoke-tool-use.sse",
    "anthropic/stream-parallel-no-arg-tools.sse",
    "anthropic/stream-spliced-message-start.sse",
    "anthropic/stream-text-then-tool-use.sse",
    "anthropic/stream-tool-no-args.sse",
    "anthropic/stream-tool-only-padded.sse",
    "anthropic/stream-truncated-max-tokens.sse",
    "bedrock/converse-stream-server-tool-then-tool.jsonl",
    "bedrock/converse-stream-split-input.jsonl",
    "bedrock/converse-stream-text-then-tool.jsonl",
    "gemini/stream-sse-partial-args-nested-unicode.sse",
    "gemini/stream-sse-partial-args-no-args-and-parallel.sse",
    "gemini/stream-sse-partial-args-number-missing-terminator.sse",
    "gemini/stream-sse-partial-args-parallel.sse",
    "gemini/stream-sse-single-call.sse",
    "openai-chat/stream-arguments-null.sse",
    "openai-chat/stream-glm-text-then-tool-repeated-id.sse",
    "openai-chat/stream-openrouter-kimi-leading-space.sse",
    "openai-chat/stream-openrouter-kimi-repeated-call-chunk.sse",
    "openai-chat/stream-parallel-weather-stock.sse",
    "openai-chat/stream-single-multiply-fragmented.sse",
    "openai-responses/stream-bedrock-mantle-empty-args.sse",
    "openai-responses/stream-custom-tool-freeform-input.sse",
    "openai-responses/stream-deepseek-char-level-deltas.sse",
    "openai-responses/stream-parallel-two-calls.sse",
    "openai-responses/stream-reasoning-text-then-call.sse",
    "openai-responses/stream-single-get-capital.sse",
    "vercel-ai/ui-stream-langgraph-hitl-approval.sse",
    "vercel-ai/ui-stream-langgraph-hitl-resume.sse",
    "vercel-ai/ui-stream-langgraph-parallel-tools.sse",
];

fn fixture(relative: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/{relative}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn framing(relative: &str) -> Framing {
    if std::path::Path::new(relative)
        .extension()
        .is_some_and(|e| e == "jsonl")
    {
        Framing::JsonSequence
    } else {
        Framing::Sse
    }
}

/// Read a fixture the way `toolgate check` does.
fn read(relative: &str) -> Detection {
    let found = detect(&fixture(relative));
    assert_eq!(found.framing, framing(relative), "{relative}");
    assert!(
        found.violations.is_empty(),
        "{relative}: {:?}",
        found.violations
    );
    found
}

/// What a call should be: name, id, arguments.
struct Expected<'a> {
    name: &'a str,
    id: Option<&'a str>,
    arguments: Value,
}

fn call<'a>(name: &'a str, id: impl Into<Option<&'a str>>, arguments: Value) -> Expected<'a> {
    Expected {
        name,
        id: id.into(),
        arguments,
    }
}

fn object(arguments: &Arguments) -> Value {
    match arguments {
        Arguments::Object(map) => Value::Object((**map).clone()),
        other => panic!("arguments are not an object: {other:?}"),
    }
}

/// The calls are exactly these, in this order, valid, of `format`.
fn assert_calls(found: &Detection, format: Format, expected: &[Expected<'_>]) {
    let got: Vec<(&str, Option<&str>)> = found
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.id.as_deref()))
        .collect();
    let want: Vec<(&str, Option<&str>)> = expected.iter().map(|e| (e.name, e.id)).collect();
    assert_eq!(got, want);
    for (index, (call, expected)) in found.calls.iter().zip(expected).enumerate() {
        assert_eq!(call.index, index);
        assert_eq!(call.format, format, "call {index}");
        assert_eq!(object(&call.arguments), expected.arguments, "call {index}");
    }
    assert_eq!(found.format, Some(format));
}

fn reason(found: &Detection, index: usize) -> ArgumentErrorReason {
    found.calls[index]
        .arguments
        .error()
        .unwrap_or_else(|| panic!("call {index} is valid"))
        .reason
}

// ---- OpenAI Chat ----------------------------------------------------------

#[test]
fn openai_chat_arguments_null_is_an_empty_object() {
    let found = read("openai-chat/stream-arguments-null.sse");
    assert_calls(
        &found,
        Format::OpenAiChat,
        &[call("llm_version", "0", json!({}))],
    );
    assert_eq!(found.calls[0].raw_arguments, "");
}

#[test]
fn openai_chat_glm_repeats_id_and_type_on_every_fragment() {
    let found = read("openai-chat/stream-glm-text-then-tool-repeated-id.sse");
    assert_calls(
        &found,
        Format::OpenAiChat,
        &[call(
            "get_weather",
            "chatcmpl-tool-2c8bed1bd34a42d7b230b4a212539a15",
            json!({"location": "San Francisco, CA"}),
        )],
    );
    assert_eq!(
        found.calls[0].raw_arguments,
        r#"{"location": "San Francisco, CA"}"#
    );
}

#[test]
fn openai_chat_kimi_first_fragment_without_arguments() {
    let found = read("openai-chat/stream-openrouter-kimi-leading-space.sse");
    assert_calls(
        &found,
        Format::OpenAiChat,
        &[call("llm_version", "llm_version:0", json!({}))],
    );
}

#[test]
fn openai_chat_leading_space_before_data_is_read() {
    // `detect` trims the body; the assembler sees the line as sent.
    let body = fixture("openai-chat/stream-openrouter-kimi-leading-space.sse");
    assert!(body.starts_with(b" data: {"));
    let found = read_whole(&body, Framing::Sse, &Limits::default());
    assert!(found.violations.is_empty(), "{:?}", found.violations);
    assert_eq!(found.calls.len(), 1);
    assert_eq!(found.calls[0].name, "llm_version");
    // The first line holds no call: what a reader that skipped it would
    // miss shows with a call on it.
    let spaced = b" data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"rm\",\"arguments\":\"{}\"}}]}}]}\n\n\t\tdata: [DONE]\n\n";
    let found = read_whole(spaced, Framing::Sse, &Limits::default());
    assert_eq!(found.calls.len(), 1);
    assert_eq!(found.calls[0].name, "rm");
}

#[test]
fn openai_chat_kimi_repeated_call_chunk_is_one_call_not_a_doubled_name() {
    let found = read("openai-chat/stream-openrouter-kimi-repeated-call-chunk.sse");
    assert_calls(
        &found,
        Format::OpenAiChat,
        &[call("llm_version", "0", json!({}))],
    );
    assert_eq!(found.calls[0].raw_arguments, "{}");
}

#[test]
fn openai_chat_parallel_calls_interleaved_by_index() {
    let found = read("openai-chat/stream-parallel-weather-stock.sse");
    assert_calls(
        &found,
        Format::OpenAiChat,
        &[
            call(
                "GetWeatherArgs",
                "call_JMW1whyEaYG438VE1OIflxA2",
                json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
            ),
            call(
                "get_stock_price",
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
            ),
        ],
    );
}

#[test]
fn openai_chat_number_split_across_fragments() {
    let found = read("openai-chat/stream-single-multiply-fragmented.sse");
    assert_calls(
        &found,
        Format::OpenAiChat,
        &[call(
            "multiply",
            "call_1EYWDzueHEp8OsB8jJSEp7WB",
            json!({"a": 1231, "b": 2331}),
        )],
    );
}

// ---- OpenAI Responses -----------------------------------------------------

#[test]
fn openai_responses_single_call() {
    let found = read("openai-responses/stream-single-get-capital.sse");
    assert_calls(
        &found,
        Format::OpenAiResponses,
        &[call(
            "get_capital",
            "call_kL0PCQV7M2WMoVX8V8OtYSAL",
            json!({"country": "France"}),
        )],
    );
}

#[test]
fn openai_responses_empty_arguments_with_a_reused_call_id() {
    let found = read("openai-responses/stream-bedrock-mantle-empty-args.sse");
    assert_calls(
        &found,
        Format::OpenAiResponses,
        &[call("first_tool", "call_0", json!({}))],
    );
}

#[test]
fn openai_responses_character_level_deltas() {
    let found = read("openai-responses/stream-deepseek-char-level-deltas.sse");
    assert_calls(
        &found,
        Format::OpenAiResponses,
        &[call(
            "get_temperature",
            "call_00_xjY8Z2BvSlzgEmmw0DtH0464",
            json!({"city": "Tokyo"}),
        )],
    );
}

#[test]
fn openai_responses_parallel_calls_repeated_by_completed_are_counted_once() {
    let found = read("openai-responses/stream-parallel-two-calls.sse");
    assert_calls(
        &found,
        Format::OpenAiResponses,
        &[
            call(
                "get_weather",
                "call_0xi8hXSApey3her10vjUIx0j",
                json!({"location": "San Francisco, CA"}),
            ),
            call(
                "get_weather",
                "call_8fhPkmx5g5wyqqsTFMvzVtJw",
                json!({"location": "New York, NY"}),
            ),
        ],
    );
}

#[test]
fn openai_responses_text_before_the_call() {
    let found = read("openai-responses/stream-reasoning-text-then-call.sse");
    assert_calls(
        &found,
        Format::OpenAiResponses,
        &[call(
            "get_capital",
            "call_LabG58Uhrq9kZvR52BYKjToD",
            json!({"country": "PotatoLand"}),
        )],
    );
}

#[test]
fn openai_responses_custom_tool_input_is_freeform_text() {
    let found = read("openai-responses/stream-custom-tool-freeform-input.sse");
    assert_eq!(found.format, Some(Format::OpenAiResponses));
    assert_eq!(found.calls.len(), 1);
    let call = &found.calls[0];
    assert_eq!(call.name, "write_release_note");
    assert_eq!(call.id.as_deref(), Some("call_32wLa2TkwLFFKIrZ4DKKGSwL"));
    assert_eq!(call.kind, CallKind::Custom);
    let text = "Streaming custom-tool fix\n\nFixed an issue that could interrupt or \
        mishandle custom-tool calls while streaming responses. Streaming tool execution \
        is now processed reliably, preserving tool payloads and ensuring downstream \
        results are delivered correctly.";
    assert_eq!(call.arguments, Arguments::Text(text.to_owned()));
}

// ---- Anthropic ------------------------------------------------------------

#[test]
fn anthropic_text_then_tool_use_without_a_last_blank_line() {
    let body = fixture("anthropic/stream-text-then-tool-use.sse");
    assert!(body.ends_with(b"data: {\"type\":\"message_stop\"}"));
    let found = read("anthropic/stream-text-then-tool-use.sse");
    assert_calls(
        &found,
        Format::Anthropic,
        &[call(
            "get_weather",
            "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            json!({"location": "Paris"}),
        )],
    );
}

#[test]
fn anthropic_bedrock_invoke_stream() {
    let found = read("anthropic/stream-bedrock-invoke-tool-use.sse");
    assert_calls(
        &found,
        Format::Anthropic,
        &[call(
            "get_weather",
            "toolu_bdrk_01LBv3MP4SuqokGDxq3Uj9QV",
            json!({"location": "San Francisco, CA"}),
        )],
    );
}

#[test]
fn anthropic_parallel_calls_without_arguments() {
    let found = read("anthropic/stream-parallel-no-arg-tools.sse");
    assert_calls(
        &found,
        Format::Anthropic,
        &[
            call(
                "pelican_name_generator",
                "toolu_011ouQLPrqhKSuFJtuJrpaUX",
                json!({}),
            ),
            call(
                "pelican_name_generator",
                "toolu_01NtJRxGhJcEQ4axN1FzHayX",
                json!({}),
            ),
        ],
    );
}

#[test]
fn anthropic_empty_partial_json_is_an_empty_object() {
    let found = read("anthropic/stream-tool-no-args.sse");
    assert_calls(
        &found,
        Format::Anthropic,
        &[call(
            "updateIssueList",
            "toolu_01QE1WLsSVp5hy5Q3GmGTmjP",
            json!({}),
        )],
    );
}

#[test]
fn anthropic_padding_after_the_data() {
    let found = read("anthropic/stream-tool-only-padded.sse");
    assert_calls(
        &found,
        Format::Anthropic,
        &[call(
            "get_weather",
            "toolu_018acGYLtfR52q9yDbWaEdQZ",
            json!({"location": "San Francisco, CA", "units": "f"}),
        )],
    );
}

#[test]
fn anthropic_truncated_tool_use_is_incomplete() {
    let found = read("anthropic/stream-truncated-max-tokens.sse");
    assert_eq!(found.calls.len(), 1);
    assert_eq!(found.calls[0].name, "make_file");
    assert_eq!(
        found.calls[0].id.as_deref(),
        Some("toolu_01EKqbqmZrGRXy18eN7m9kvY")
    );
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Incomplete);
    let err = found.calls[0].arguments.error().unwrap();
    assert_eq!(err.code, ViolationCode::MalformedArguments);
    assert!(found.calls[0]
        .raw_arguments
        .starts_with("{\"filename\": \"taxes.txt\""));
    assert!(!found.is_clean());
}

#[test]
fn anthropic_spliced_message_start_does_not_merge_blocks() {
    let found = read("anthropic/stream-spliced-message-start.sse");
    assert_eq!(found.calls.len(), 2);
    let first = &found.calls[0];
    assert_eq!(
        (first.name.as_str(), first.id.as_deref()),
        ("test-tool", Some("toolu_first"))
    );
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Incomplete);
    assert_eq!(first.raw_arguments, r#"{"value":"Spark"#);
    let second = &found.calls[1];
    assert_eq!(
        (second.name.as_str(), second.id.as_deref()),
        ("test-tool", Some("toolu_second"))
    );
    assert_eq!(object(&second.arguments), json!({"value": "Sparkle Day"}));
    assert_eq!((first.turn, second.turn), (0, 1));
}

// ---- Gemini ---------------------------------------------------------------

#[test]
fn gemini_whole_call_in_one_chunk() {
    let found = read("gemini/stream-sse-single-call.sse");
    assert_calls(
        &found,
        Format::Gemini,
        &[call("weather", None, json!({"location": "San Francisco"}))],
    );
}

#[test]
fn gemini_partial_args_parallel_calls() {
    let found = read("gemini/stream-sse-partial-args-parallel.sse");
    assert_calls(
        &found,
        Format::Gemini,
        &[
            call("getWeather", None, json!({"location": "Boston"})),
            call("getWeather", None, json!({"location": "San Francisco"})),
        ],
    );
}

#[test]
fn gemini_call_without_args_then_partial_args() {
    let found = read("gemini/stream-sse-partial-args-no-args-and-parallel.sse");
    assert_calls(
        &found,
        Format::Gemini,
        &[
            call("read_theme", None, json!({})),
            call("read_screen", None, json!({"id": "A"})),
            call("read_screen", None, json!({"id": "B"})),
            call("read_screen", None, json!({"id": "C"})),
        ],
    );
}

#[test]
fn gemini_partial_args_numbers_without_the_terminating_part() {
    let found = read("gemini/stream-sse-partial-args-number-missing-terminator.sse");
    assert_calls(
        &found,
        Format::Gemini,
        &[call(
            "writeItems",
            None,
            json!({"operations": [
                {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
                {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3}
            ]}),
        )],
    );
}

#[test]
fn gemini_partial_args_nested_paths_and_unicode() {
    let found = read("gemini/stream-sse-partial-args-nested-unicode.sse");
    let ingredient = |amount: &str, name: &str| json!({"amount": amount, "name": name});
    assert_calls(
        &found,
        Format::Gemini,
        &[call(
            "cookRecipe",
            None,
            json!({"recipe": {
                "ingredients": [
                    ingredient("16 oz", "Lasagna noodles"),
                    ingredient("1 lb", "Ground beef"),
                    ingredient("15 oz", "Ricotta cheese"),
                    ingredient("3 cups", "Mozzarella cheese"),
                    ingredient("1/2 cup", "Parmesan cheese"),
                    ingredient("24 oz", "Tomato sauce"),
                    ingredient("1", "Egg"),
                    ingredient("2 cloves", "Garlic"),
                    ingredient("1 tsp", "Salt"),
                    ingredient("1/2 tsp", "Pepper"),
                ],
                "name": "Lasagna",
                "steps": [
                    "Preheat oven to 375\u{b0}F (190\u{b0}C).",
                    "Cook lasagna noodles according to package directions, drain and set aside.",
                    "Brown ground beef with minced garlic in a skillet. Drain fat and stir in tomato sauce. Simmer for 10 minutes.",
                    "In a bowl, mix ricotta cheese, egg, salt, pepper, and Parmesan cheese.",
                    "In a 9x13 baking dish, spread a thin layer of meat sauce.",
                    "Layer noodles, ricotta mixture, mozzarella, and meat sauce. Repeat.",
                    "Top with remaining mozzarella cheese.",
                    "Cover with foil and bake for 25 minutes.",
                    "Remove foil and bake for another 25 minutes until golden.",
                    "Let stand for 15 minutes before serving.",
                ],
            }}),
        )],
    );
}

// ---- Vercel AI SDK --------------------------------------------------------

#[test]
fn vercel_input_deltas_awaiting_approval() {
    let found = read("vercel-ai/ui-stream-langgraph-hitl-approval.sse");
    assert_calls(
        &found,
        Format::VercelAi,
        &[call(
            "delete_file",
            "call_LOd3dMxgYxmNLWZVWXra9xWQ",
            json!({"filename": "report.pdf"}),
        )],
    );
    assert!(found.results.is_empty());
}

#[test]
fn vercel_input_available_without_deltas_then_output() {
    let found = read("vercel-ai/ui-stream-langgraph-hitl-resume.sse");
    assert_calls(
        &found,
        Format::VercelAi,
        &[call(
            "delete_file",
            "call_LOd3dMxgYxmNLWZVWXra9xWQ",
            json!({"filename": "report.pdf"}),
        )],
    );
    assert_eq!(found.results.len(), 1);
    let result = &found.results[0];
    assert_eq!(
        result.call_id.as_deref(),
        Some("call_LOd3dMxgYxmNLWZVWXra9xWQ")
    );
    assert_eq!(
        result.content,
        Some(json!("File \"report.pdf\" has been deleted successfully"))
    );
    assert!(!result.is_error);
    assert_eq!((found.calls[0].turn, result.turn), (0, 1));
}

#[test]
fn vercel_parallel_calls_and_their_outputs() {
    let found = read("vercel-ai/ui-stream-langgraph-parallel-tools.sse");
    assert_calls(
        &found,
        Format::VercelAi,
        &[
            call(
                "get_weather",
                "call_lxFuvuhpu9gvtx04WrmXZF9h",
                json!({"city": "Tokyo", "units": "celsius"}),
            ),
            call(
                "get_datetime",
                "call_U3RijXRN09TXMyKWFZwqWjnJ",
                json!({"timezone": "Asia/Tokyo", "format": "full"}),
            ),
        ],
    );
    let results: Vec<(Option<&str>, Option<&Value>)> = found
        .results
        .iter()
        .map(|r| (r.call_id.as_deref(), r.content.as_ref()))
        .collect();
    assert_eq!(
        results,
        [
            (
                Some("call_lxFuvuhpu9gvtx04WrmXZF9h"),
                Some(&json!("Weather in Tokyo: 20\u{b0}C, Clear skies"))
            ),
            (
                Some("call_U3RijXRN09TXMyKWFZwqWjnJ"),
                Some(&json!(
                    "Current date and time in Asia/Tokyo: Wednesday, December 17, 2025 at 04:00:28 AM"
                ))
            ),
        ]
    );
}

// ---- Bedrock ConverseStream -----------------------------------------------

#[test]
fn bedrock_split_input() {
    let found = read("bedrock/converse-stream-split-input.jsonl");
    assert_calls(
        &found,
        Format::Bedrock,
        &[call(
            "get_weather",
            "tooluse_BT9rxvwyCJ9lMdNjdnKJll",
            json!({"location": "San Francisco, CA"}),
        )],
    );
}

#[test]
fn bedrock_text_then_tool() {
    let found = read("bedrock/converse-stream-text-then-tool.jsonl");
    assert_calls(
        &found,
        Format::Bedrock,
        &[call(
            "get_temperature",
            "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
            json!({"city": "Paris"}),
        )],
    );
}

#[test]
fn bedrock_server_tool_call_and_result_then_client_call() {
    let found = read("bedrock/converse-stream-server-tool-then-tool.jsonl");
    assert_calls(
        &found,
        Format::Bedrock,
        &[
            call(
                "nova_code_interpreter",
                "tooluse_VQNZJRUFMoqZzszVsRd4og",
                json!({"snippet": "1234 * 5678"}),
            ),
            call(
                "final_result",
                "tooluse_ptgCcZ0uQu-UUMz0abqoWw",
                json!({"result": 7_006_652.0}),
            ),
        ],
    );
    assert_eq!(found.calls[0].kind, CallKind::Hosted);
    assert_eq!(found.calls[1].kind, CallKind::Function);
    assert_eq!(found.results.len(), 1);
    let result = &found.results[0];
    assert_eq!(
        result.call_id.as_deref(),
        Some("tooluse_VQNZJRUFMoqZzszVsRd4og")
    );
    assert_eq!(
        result.content,
        Some(
            json!([{"json": {"stdOut": "7006652", "stdErr": "", "exitCode": 0, "isError": false}}])
        )
    );
    assert!(!result.is_error);
}

// ---- The assembler's promises, on every fixture ---------------------------

/// Feed `body` in chunks of the given sizes (cycled); return every event
/// and the detection.
fn assemble(body: &[u8], framing: Framing, sizes: &[usize]) -> (Vec<StreamEvent>, Detection) {
    let mut stream = Assembler::new(framing, Limits::default());
    let mut events = Vec::new();
    let mut rest = body;
    let mut sizes = sizes.iter().copied().cycle();
    while !rest.is_empty() {
        let size = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
        events.extend(stream.push(&rest[..size]));
        rest = &rest[size..];
    }
    events.extend(stream.close());
    (events, stream.finish())
}

/// Frames give back every byte; each call is named once, then completed
/// once, under the index it has in the detection; frames only name calls
/// that exist, and every call is named by some frame.
fn check_events(relative: &str, body: &[u8], events: &[StreamEvent], found: &Detection) {
    let mut bytes = Vec::new();
    let mut named = vec![None; found.calls.len()];
    let mut completed = vec![0; found.calls.len()];
    let mut framed = vec![false; found.calls.len()];
    for event in events {
        match event {
            StreamEvent::Frame { raw, calls, hold } => {
                bytes.extend_from_slice(raw);
                assert!(
                    calls.is_empty() || *hold,
                    "{relative}: a call frame not held"
                );
                for &call in calls {
                    assert!(
                        call < found.calls.len(),
                        "{relative}: frame names call {call}"
                    );
                    framed[call] = true;
                }
            }
            StreamEvent::CallNamed { call, name } => {
                assert!(
                    named[*call].is_none(),
                    "{relative}: call {call} named twice"
                );
                assert_eq!(
                    completed[*call], 0,
                    "{relative}: call {call} named after completion"
                );
                named[*call] = Some(name.clone());
            }
            StreamEvent::CallComplete { call } => {
                assert!(
                    named[*call].is_some(),
                    "{relative}: call {call} completed unnamed"
                );
                completed[*call] += 1;
            }
            StreamEvent::UpstreamError => {
                panic!("{relative}: no capture ends in its upstream's error");
            }
        }
    }
    assert_eq!(
        bytes, body,
        "{relative}: frames do not give back the stream"
    );
    for (index, call) in found.calls.iter().enumerate() {
        assert_eq!(
            named[index].as_deref(),
            Some(call.name.as_str()),
            "{relative}: call {index}"
        );
        assert_eq!(completed[index], 1, "{relative}: call {index}");
        assert!(framed[index], "{relative}: no frame holds call {index}");
    }
}

#[test]
fn an_assembler_can_move_to_another_thread() {
    // A gateway reads each stream on whatever thread its runtime picks.
    fn send<T: Send + 'static>() {}
    send::<Assembler>();
}

#[test]
fn every_fixture_one_byte_at_a_time() {
    for relative in STREAMS {
        let body = fixture(relative);
        let whole = read_whole(&body, framing(relative), &Limits::default());
        let (events, found) = assemble(&body, framing(relative), &[1]);
        assert_eq!(found, whole, "{relative}");
        check_events(relative, &body, &events, &found);
        assert!(!found.calls.is_empty(), "{relative}");
    }
}

#[test]
fn every_fixture_reads_the_same_with_detect() {
    for relative in STREAMS {
        let body = fixture(relative);
        let whole = read_whole(&body, framing(relative), &Limits::default());
        assert_eq!(detect(&body), whole, "{relative}");
    }
}

/// Every line of every stream fixture: material for streams in an order
/// no provider sends.
fn fixture_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for relative in STREAMS {
        let body = String::from_utf8(fixture(relative)).expect("UTF-8 fixture");
        lines.extend(
            body.lines()
                .filter(|line| !line.trim().is_empty())
                .map(str::to_owned),
        );
    }
    lines
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fixture_lines_in_any_order_keep_the_promises(
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..48),
        sizes in prop::collection::vec(1usize..97, 1..8),
        sequence in any::<bool>(),
    ) {
        let lines = fixture_lines();
        let separator = if sequence { "\n" } else { "\n\n" };
        let mut body = String::new();
        for pick in &picks {
            let line = pick.get(&lines);
            // JSON lines for a sequence; `data:` lines for SSE.
            let line = if sequence {
                line.trim_start().trim_start_matches("data: ")
            } else {
                line
            };
            body.push_str(line);
            body.push_str(separator);
        }
        let framing = if sequence { Framing::JsonSequence } else { Framing::Sse };
        let whole = read_whole(body.as_bytes(), framing, &Limits::default());
        let (events, found) = assemble(body.as_bytes(), framing, &sizes);
        prop_assert_eq!(&found, &whole);
        check_events("mixed lines", body.as_bytes(), &events, &found);
        let limits = Limits { max_calls: 2, max_argument_bytes: 24, ..Limits::default() };
        let small = read_whole(body.as_bytes(), framing, &limits);
        prop_assert!(small.calls.len() <= 2);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..1024),
        sequence in any::<bool>(),
    ) {
        let framing = if sequence { Framing::JsonSequence } else { Framing::Sse };
        let (events, found) = assemble(&bytes, framing, &[5, 1, 64]);
        check_events("arbitrary bytes", &bytes, &events, &found);
        prop_assert!(found.format.is_some() || !found.violations.is_empty());
    }

    #[test]
    fn any_split_reads_the_same(
        which in 0..STREAMS.len(),
        sizes in prop::collection::vec(prop_oneof![1usize..4, 1usize..64, 1usize..4096], 1..64),
    ) {
        let relative = STREAMS[which];
        let body = fixture(relative);
        let whole = read_whole(&body, framing(relative), &Limits::default());
        let (events, found) = assemble(&body, framing(relative), &sizes);
        prop_assert_eq!(&found, &whole, "{}", relative);
        check_events(relative, &body, &events, &found);
    }

    #[test]
    fn cut_streams_never_panic_and_hold_what_they_cannot_read(
        which in 0..STREAMS.len(),
        cut in 0.0f64..1.0,
        flip in any::<u8>(),
    ) {
        let relative = STREAMS[which];
        let mut body = fixture(relative);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
        let at = (cut * body.len() as f64) as usize;
        body.truncate(at + 1);
        if let Some(last) = body.last_mut() {
            *last ^= flip;
        }
        let (events, found) = assemble(&body, framing(relative), &[7]);
        check_events(relative, &body, &events, &found);
        for (i, call) in found.calls.iter().enumerate() {
            prop_assert_eq!(call.index, i);
        }
    }
}

fn sse(events: &[Value]) -> Vec<u8> {
    let mut body = Vec::new();
    for event in events {
        body.extend_from_slice(format!("data: {event}\n\n").as_bytes());
    }
    body
}

fn payload_codes(found: &Detection) -> Vec<ViolationCode> {
    found.violations.iter().map(|v| v.code).collect()
}

#[test]
fn documents_in_other_shapes_inside_a_stream_are_read_or_refused() {
    // A data line that is no stream event but holds calls: read as a whole
    // payload, in every shape a payload can take.
    for (document, name) in [
        (
            json!({"tool_calls": [{"name": "delete_user", "args": {}}]}),
            "delete_user",
        ),
        (
            json!([{"name": "delete_user", "arguments": {"id": 1}}]),
            "delete_user",
        ),
        (
            json!({"type": "message", "role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "delete_user", "input": {}}]}),
            "delete_user",
        ),
        (
            json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "delete_user", "arguments": "{}"}}]}}]}),
            "delete_user",
        ),
    ] {
        for framing in [Framing::Sse, Framing::JsonSequence] {
            let body = match framing {
                Framing::Sse => sse(std::slice::from_ref(&document)),
                _ => format!("{document}\n{document}\n").into_bytes(),
            };
            let found = read_whole(&body, framing, &Limits::default());
            assert!(
                found.calls.iter().any(|c| c.name == name),
                "{framing:?} {document}: {found:?}"
            );
        }
    }
    // A document in no known shape is refused, never skipped.
    for document in [json!({"foo": 1}), json!({}), json!(42)] {
        let body = sse(std::slice::from_ref(&document));
        let found = read_whole(&body, Framing::Sse, &Limits::default());
        assert_eq!(
            payload_codes(&found),
            [ViolationCode::MalformedPayload],
            "{document}"
        );
        let body = format!("{}\n{document}\n", json!({"name": "f", "args": {}}));
        let found = read_whole(body.as_bytes(), Framing::JsonSequence, &Limits::default());
        assert_eq!(
            payload_codes(&found),
            [ViolationCode::MalformedPayload],
            "{document}"
        );
    }
    // Errors are a known shape: no call, nothing wrong.
    let body =
        sse(&[json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})]);
    assert!(read_whole(&body, Framing::Sse, &Limits::default())
        .violations
        .is_empty());
}

#[test]
fn a_stream_event_with_a_call_its_decoder_does_not_read_is_refused() {
    for event in [
        // A chat chunk with a seed `tool_calls` beside its choices.
        json!({"choices": [{"index": 0, "delta": {"content": "hi"}}],
               "tool_calls": [{"name": "delete_user", "args": {}}]}),
        // A chat chunk whose delta carries Anthropic blocks.
        json!({"choices": [{"index": 0, "delta": {"content": [
            {"type": "tool_use", "id": "t1", "name": "delete_user", "input": {}}]}}]}),
        // An Anthropic message_start whose message already holds a call.
        json!({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "delete_user", "input": {}}]}}),
        // A Responses text delta event carrying an item list.
        json!({"type": "response.output_text.delta", "delta": "x", "output": [
            {"type": "function_call", "call_id": "c", "name": "delete_user", "arguments": "{}"}]}),
        // A Gemini chunk with a generic call in a part.
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"name": "delete_user", "args": {}}]}}]}),
    ] {
        let found = read_whole(
            &sse(std::slice::from_ref(&event)),
            Framing::Sse,
            &Limits::default(),
        );
        assert!(
            payload_codes(&found).contains(&ViolationCode::MalformedPayload),
            "{event}: {found:?}"
        );
    }
}

#[test]
fn a_responses_done_event_may_repeat_the_name_but_not_change_it() {
    let events = |done_name: &str| {
        sse(&[
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": "{}"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 0, "item_id": "fc_1",
                   "name": done_name, "arguments": "{}"}),
            json!({"type": "response.completed", "response": {"id": "r", "output": [
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{}"}]}}),
        ])
    };
    let same = read_whole(&events("get_weather"), Framing::Sse, &Limits::default());
    assert!(same.is_clean(), "{same:?}");
    assert_eq!(same.calls.len(), 1);
    let other = read_whole(&events("delete_user"), Framing::Sse, &Limits::default());
    assert!(!other.is_clean(), "{other:?}");
}
