//! The assembler on streams written for the purpose: fragments split
//! anywhere, contradictions, limits, malformed events.

use serde_json::{json, Value};

use super::{read_whole, Assembler, StreamEvent};
use crate::detect::limits::Limits;
use crate::detect::Detection;
use crate::model::{ArgumentErrorReason, Arguments, CallKind, Framing};
use crate::verdict::ViolationCode;

/// An SSE body of one `data:` line per event.
fn sse(events: &[Value]) -> Vec<u8> {
    let mut body = Vec::new();
    for event in events {
        body.extend_from_slice(b"data: ");
        body.extend_from_slice(event.to_string().as_bytes());
        body.extend_from_slice(b"\n\n");
    }
    body
}

/// An OpenAI Chat chunk with one tool-call fragment.
fn chat(index: u64, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut function = json!({"arguments": arguments});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    json!({"object": "chat.completion.chunk",
           "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
}

fn read(body: &[u8]) -> Detection {
    read_whole(body, Framing::Sse, &Limits::default())
}

fn object(found: &Detection, index: usize) -> Value {
    match &found.calls[index].arguments {
        Arguments::Object(map) => Value::Object((**map).clone()),
        other => panic!("call {index}: {other:?}"),
    }
}

fn reason(found: &Detection, index: usize) -> ArgumentErrorReason {
    found.calls[index]
        .arguments
        .error()
        .unwrap_or_else(|| panic!("call {index} is valid"))
        .reason
}

fn codes(found: &Detection) -> Vec<ViolationCode> {
    found.violations.iter().map(|v| v.code).collect()
}

#[test]
fn arguments_split_inside_an_escape_and_a_chunk() {
    let body = sse(&[
        chat(0, Some("c1"), Some("say"), r#"{"text":"caf\u00"#),
        chat(0, None, None, r#"e9 \"x\\"#),
        chat(0, None, None, r#"ny\""}"#),
    ]);
    let whole = read(&body);
    assert_eq!(object(&whole, 0), json!({"text": "caf\u{e9} \"x\\ny\""}));
    // The same bytes cut inside the escape of the event's own JSON.
    let cut = body
        .windows(2)
        .position(|w| w == br"\\")
        .expect("an escaped backslash")
        + 1;
    let mut stream = Assembler::new(Framing::Sse, Limits::default());
    stream.push(&body[..cut]);
    stream.push(&body[cut..]);
    assert_eq!(stream.finish(), whole);
}

#[test]
fn a_second_name_or_id_for_a_call_fails_closed() {
    let found = read(&sse(&[
        chat(0, Some("c1"), Some("read_file"), "{}"),
        chat(0, None, Some("delete_file"), ""),
    ]));
    assert_eq!(found.calls.len(), 1);
    assert_eq!(found.calls[0].name, "read_file");
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
    assert_eq!(
        found.calls[0].arguments.error().unwrap().code,
        ViolationCode::MalformedArguments
    );

    let found = read(&sse(&[
        chat(0, Some("c1"), Some("f"), "{}"),
        chat(0, Some("c2"), Some("f"), ""),
    ]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);

    // The same name and id again are harmless.
    let found = read(&sse(&[
        chat(0, Some("c1"), Some("f"), ""),
        chat(0, Some("c1"), Some("f"), "{}"),
    ]));
    assert_eq!(object(&found, 0), json!({}));
}

#[test]
fn fragments_after_the_finish_reason_fail_closed() {
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    let found = read(&sse(&[
        chat(0, Some("c1"), Some("f"), r#"{"a":1}"#),
        finish,
        chat(0, None, None, r#","b":2}"#),
    ]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
}

#[test]
fn choices_keep_their_calls_apart() {
    let call = |choice: u64, name: &str| {
        json!({"choices": [{"index": choice, "delta": {"tool_calls": [
            {"index": 0, "id": name, "function": {"name": name, "arguments": "{}"}}]}}]})
    };
    let found = read(&sse(&[call(0, "a"), call(1, "b")]));
    let names: Vec<&str> = found.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(found.is_clean());
}

#[test]
fn chat_custom_tool_input_is_freeform() {
    let found = read(&sse(&[
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "custom",
             "custom": {"name": "patch", "input": "*** Begin"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "custom": {"input": " Patch"}}]}}]}),
    ]));
    assert_eq!(found.calls[0].kind, CallKind::Custom);
    assert_eq!(
        found.calls[0].arguments,
        Arguments::Text("*** Begin Patch".into())
    );
}

fn responses_added(id: &str) -> Value {
    json!({"type": "response.output_item.added", "output_index": 0,
           "item": {"type": "function_call", "id": id, "call_id": "call_1",
                    "name": "get_capital", "arguments": ""}})
}

fn responses_delta(id: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "item_id": id,
           "output_index": 0, "delta": delta})
}

#[test]
fn responses_final_text_must_equal_the_deltas() {
    let found = read(&sse(&[
        responses_added("fc_1"),
        responses_delta("fc_1", r#"{"country":"France"}"#),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1",
               "output_index": 0, "arguments": r#"{"country":"Spain"}"#}),
    ]));
    assert_eq!(found.calls.len(), 1);
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);

    let found = read(&sse(&[
        responses_added("fc_1"),
        responses_delta("fc_1", r#"{"country":"France"}"#),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                        "name": "get_capital", "arguments": r#"{"country":"Spain"}"#}}),
    ]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
}

#[test]
fn responses_completed_adds_calls_never_streamed_and_checks_the_rest() {
    let item = |id: &str, call_id: &str, arguments: &str| {
        json!({"type": "function_call", "id": id, "call_id": call_id,
               "name": "get_capital", "arguments": arguments})
    };
    let found = read(&sse(&[
        responses_added("fc_1"),
        responses_delta("fc_1", r#"{"country":"France"}"#),
        json!({"type": "response.completed", "response": {"output": [
            item("fc_1", "call_1", r#"{"country":"France"}"#),
            item("fc_2", "call_2", r#"{"country":"Peru"}"#),
        ]}}),
    ]));
    assert_eq!(found.calls.len(), 2);
    assert_eq!(object(&found, 0), json!({"country": "France"}));
    assert_eq!(found.calls[1].id.as_deref(), Some("call_2"));
    assert_eq!(object(&found, 1), json!({"country": "Peru"}));

    let found = read(&sse(&[
        responses_added("fc_1"),
        responses_delta("fc_1", r#"{"country":"France"}"#),
        json!({"type": "response.completed", "response": {"output": [
            item("fc_1", "call_1", r#"{"country":"Chad"}"#),
        ]}}),
    ]));
    assert_eq!(found.calls.len(), 1);
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
}

#[test]
fn responses_call_never_finished_is_incomplete() {
    let found = read(&sse(&[
        responses_added("fc_1"),
        responses_delta("fc_1", r#"{"country":"Fr"#),
    ]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Incomplete);
}

#[test]
fn anthropic_input_and_fragments_must_not_both_hold_arguments() {
    let start = |input: Value| {
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": input}})
    };
    let delta = json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": "{\"a\":2}"}});
    let stop = json!({"type": "content_block_stop", "index": 0});
    let found = read(&sse(&[start(json!({"a": 1})), stop.clone()]));
    assert_eq!(object(&found, 0), json!({"a": 1}));
    let found = read(&sse(&[start(json!({"a": 1})), delta.clone(), stop.clone()]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
    // A delta after the block stopped would change the client's copy.
    let found = read(&sse(&[start(json!({})), delta.clone(), stop, delta]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
}

#[test]
fn vercel_available_input_must_agree_with_the_deltas() {
    let start = json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "f"});
    let delta = json!({"type": "tool-input-delta", "toolCallId": "c1",
                       "inputTextDelta": "{\"a\":1}"});
    let available = |input: Value| {
        json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "f",
               "input": input})
    };
    let found = read(&sse(&[
        start.clone(),
        delta.clone(),
        available(json!({"a": 1})),
    ]));
    assert_eq!(object(&found, 0), json!({"a": 1}));
    let found = read(&sse(&[
        start.clone(),
        delta.clone(),
        available(json!({"a": 2})),
    ]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
    // Numbers by value: a JavaScript client writes the `2.0` it streamed
    // as `2`; the value it gives is the one checked.
    let whole = json!({"type": "tool-input-delta", "toolCallId": "c1",
                       "inputTextDelta": "{\"a\":2.0,\"b\":[1e2]}"});
    let found = read(&sse(&[
        start.clone(),
        whole.clone(),
        available(json!({"a": 2, "b": [100]})),
    ]));
    assert!(found.violations.is_empty(), "{:?}", found.violations);
    assert_eq!(object(&found, 0), json!({"a": 2, "b": [100]}));
    let found = read(&sse(&[
        start.clone(),
        whole,
        available(json!({"a": 2, "b": [101]})),
    ]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
    // A key the deltas give twice is the call's defect, whatever the
    // value given (a JavaScript client keeps the last).
    let twice = json!({"type": "tool-input-delta", "toolCallId": "c1",
                       "inputTextDelta": "{\"a\":1,\"a\":2}"});
    let found = read(&sse(&[
        start.clone(),
        twice.clone(),
        available(json!({"a": 2})),
    ]));
    assert_eq!(reason(&found, 0), ArgumentErrorReason::DuplicateKey);
    // And when the input is that very text (a producer that does not
    // parse it), read as the call's arguments.
    let same = format!(
        "data: {start}\n\ndata: {twice}\n\ndata: {}\n\n",
        r#"{"type":"tool-input-available","toolCallId":"c1","toolName":"f","input":{"a":1,"a":2}}"#
    );
    let found = read(same.as_bytes());
    assert_eq!(reason(&found, 0), ArgumentErrorReason::DuplicateKey);
}

#[test]
fn gemini_partial_args_that_contradict_fail_closed() {
    let part =
        |call: Value| json!({"candidates": [{"content": {"parts": [{"functionCall": call}]}}]});
    let found = read(&sse(&[
        part(json!({"name": "f", "willContinue": true})),
        part(json!({"partialArgs": [{"jsonPath": "$.a", "numberValue": 1}], "willContinue": true})),
        part(json!({"partialArgs": [{"jsonPath": "$.a", "numberValue": 2}], "willContinue": true})),
        part(json!({})),
    ]));
    assert_eq!(found.calls.len(), 1);
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Conflicting);
}

#[test]
fn limits_are_violations_never_unbounded_buffers() {
    let body = sse(&[
        chat(0, Some("c1"), Some("f"), r#"{"a":"0123456789"}"#),
        chat(1, Some("c2"), Some("g"), "{}"),
        chat(2, Some("c3"), Some("h"), "{}"),
    ]);
    // Arguments past max_argument_bytes.
    let limits = Limits {
        max_argument_bytes: 8,
        ..Limits::default()
    };
    let found = read_whole(&body, Framing::Sse, &limits);
    assert_eq!(reason(&found, 0), ArgumentErrorReason::TooLarge);
    assert_eq!(
        found.calls[0].arguments.error().unwrap().code,
        ViolationCode::InputLimitExceeded
    );
    // Calls past max_calls: not tracked, their frames held.
    let limits = Limits {
        max_calls: 2,
        ..Limits::default()
    };
    let mut stream = Assembler::new(Framing::Sse, limits);
    let events = stream.push(&body);
    let found = stream.finish();
    assert_eq!(found.calls.len(), 2);
    assert_eq!(codes(&found), [ViolationCode::InputLimitExceeded]);
    assert!(matches!(
        events.iter().rfind(|e| matches!(e, StreamEvent::Frame { .. })),
        Some(StreamEvent::Frame { calls, hold: true, .. }) if calls.is_empty()
    ));
    // A stream past max_payload_bytes stops being read.
    let limits = Limits {
        max_payload_bytes: body.len() - 1,
        ..Limits::default()
    };
    let mut stream = Assembler::new(Framing::Sse, limits);
    stream.push(&body[..10]);
    assert!(!stream.has_violation());
    assert!(stream.push(&body[10..]).is_empty());
    assert!(stream.has_violation());
    assert_eq!(codes(&stream.finish()), [ViolationCode::InputLimitExceeded]);
    // One event larger than max_argument_bytes plus the envelope.
    let limits = Limits {
        max_argument_bytes: 0,
        ..Limits::default()
    };
    let huge = format!("data: {}", " ".repeat(super::EVENT_ENVELOPE_BYTES + 1));
    let found = read_whole(huge.as_bytes(), Framing::Sse, &limits);
    assert_eq!(codes(&found), [ViolationCode::InputLimitExceeded]);
}

#[test]
fn malformed_events_are_reported_by_position_never_by_content() {
    let mut body = sse(&[chat(0, Some("c1"), Some("f"), "{}")]);
    body.extend_from_slice(b"data: {\"password\": \"hunter2\",\n\n");
    body.extend_from_slice(b"data: {\"choices\": [{\"index\": \"hunter2\"}]}\n\n");
    let mut stream = Assembler::new(Framing::Sse, Limits::default());
    let events = stream.push(&body);
    let held: Vec<bool> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Frame { hold, .. } => Some(*hold),
            _ => None,
        })
        .collect();
    assert_eq!(held, [true, true, true]);
    let found = stream.finish();
    assert_eq!(found.calls.len(), 1);
    assert_eq!(
        codes(&found),
        [
            ViolationCode::MalformedPayload,
            ViolationCode::MalformedPayload
        ]
    );
    for violation in &found.violations {
        assert!(
            !violation.message.contains("hunter2"),
            "{}",
            violation.message
        );
    }
    assert!(found.violations[0].message.contains("stream event 2"));
    assert!(found.violations[0].message.contains("line 1"));
}

#[test]
fn an_event_name_that_contradicts_the_data_type_fails_closed() {
    let body = b"event: ping\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n";
    let found = read(body);
    assert_eq!(codes(&found), [ViolationCode::MalformedPayload]);
}

#[test]
fn a_stream_of_no_known_format_is_malformed() {
    for body in [
        &b"data: {\"hello\":1}\n\n"[..],
        b": only a comment\n\n",
        b"data: [DONE]\n\n",
    ] {
        let found = read(body);
        assert_eq!(found.format, None);
        assert_eq!(codes(&found), [ViolationCode::MalformedPayload]);
    }
}

#[test]
fn done_completes_chat_calls() {
    let mut stream = Assembler::new(Framing::Sse, Limits::default());
    let events = stream.push(&sse(&[chat(0, Some("c1"), Some("f"), "{}")]));
    assert_eq!(
        &events[1..],
        [StreamEvent::CallNamed {
            call: 0,
            name: "f".into()
        }]
    );
    let events = stream.push(b"data: [DONE]\n\n");
    assert_eq!(
        events,
        [
            StreamEvent::Frame {
                raw: b"data: [DONE]\n\n".to_vec(),
                calls: vec![0],
                hold: true
            },
            StreamEvent::CallComplete { call: 0 }
        ]
    );
    assert!(stream.close().is_empty());
}

#[test]
fn text_frames_are_not_held() {
    let mut stream = Assembler::new(Framing::Sse, Limits::default());
    let events = stream.push(
        b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
    );
    assert!(matches!(
        &events[..],
        [StreamEvent::Frame { calls, hold: false, .. }] if calls.is_empty()
    ));
}

#[test]
fn json_sequences_of_whole_payloads_and_of_events() {
    let response = |id: &str| {
        json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]})
    };
    let body = format!("{}\n{}\n", response("a"), response("b"));
    let found = read_whole(body.as_bytes(), Framing::JsonSequence, &Limits::default());
    let ids: Vec<Option<&str>> = found.calls.iter().map(|c| c.id.as_deref()).collect();
    assert_eq!(ids, [Some("a"), Some("b")]);
    assert_eq!((found.calls[0].turn, found.calls[1].turn), (0, 1));
    assert!(found.violations.is_empty());

    // Anthropic events, one a line.
    let body = [
        json!({"type": "message_start", "message": {"id": "m"}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": "{\"x\":1}"}}),
        json!({"type": "content_block_stop", "index": 0}),
    ]
    .map(|e| e.to_string())
    .join("\n");
    let found = read_whole(body.as_bytes(), Framing::JsonSequence, &Limits::default());
    assert_eq!(object(&found, 0), json!({"x": 1}));
}

/// The frames' hold flags of a list of events.
fn holds(events: &[StreamEvent]) -> Vec<bool> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Frame { hold, .. } => Some(*hold),
            _ => None,
        })
        .collect()
}

#[test]
fn a_json_body_sent_as_an_event_stream_is_held_and_malformed() {
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "delete_user", "arguments": "{}"}}]}}]})
    .to_string();
    for body in [body.clone(), format!("{body}\n"), format!("{body}\n\n")] {
        let mut stream = Assembler::new(Framing::Sse, Limits::default());
        let mut events = stream.push(body.as_bytes());
        events.extend(stream.close());
        let held = holds(&events);
        assert!(!held.is_empty() && held.iter().all(|h| *h), "{events:?}");
        let found = stream.finish();
        assert_eq!(codes(&found), [ViolationCode::MalformedPayload]);
        let message = &found.violations[0].message;
        assert!(message.contains("stream event 1"), "{message}");
        assert!(!message.contains("delete_user"), "{message}");
    }
    // A line of no known field among real events holds its own event only.
    let mut body = sse(&[chat(0, Some("c1"), Some("f"), "{}")]);
    body.extend_from_slice(b"data: {\"choices\":[]}\nfoo: bar\n\n");
    let mut stream = Assembler::new(Framing::Sse, Limits::default());
    let events = stream.push(&body);
    assert_eq!(holds(&events), [true, true]);
    let found = stream.finish();
    assert_eq!(codes(&found), [ViolationCode::MalformedPayload]);
    assert!(found.violations[0].message.contains("stream event 2"));
}

/// Push `body` in one chunk and close: every event, and the assembler.
fn run(body: &[u8]) -> (Vec<StreamEvent>, Assembler) {
    let mut stream = Assembler::new(Framing::Sse, Limits::default());
    let mut events = stream.push(body);
    events.extend(stream.close());
    (events, stream)
}

#[test]
fn a_stream_s_own_error_ends_it_as_an_upstream_error() {
    let anthropic: &[u8] = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let chat: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"code\":null}}\n\n";
    let responses_error: &[u8] = b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\nevent: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"server_error\",\"message\":\"The server had an error\",\"param\":null}\n\n";
    let responses_failed: &[u8] = b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\nevent: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed\"},\"output\":[]}}\n\n";
    let gemini: &[u8] = b"data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n";
    let vercel: &[u8] = b"data: {\"type\":\"start\"}\n\ndata: {\"type\":\"error\",\"errorText\":\"Overloaded\"}\n\n";
    for body in [
        anthropic,
        chat,
        responses_error,
        responses_failed,
        gemini,
        vercel,
    ] {
        let name = String::from_utf8_lossy(body);
        let mut stream = Assembler::new(Framing::Sse, Limits::default());
        // Up to the error event, the stream was only cut.
        let last = body[..body.len() - 2]
            .windows(2)
            .rposition(|w| w == b"\n\n")
            .map_or(0, |at| at + 2);
        let mut events = stream.push(&body[..last]);
        assert!(!stream.ended() && !stream.errored(), "{name}");
        events.extend(stream.push(&body[last..]));
        assert!(stream.ended() && stream.errored(), "{name}");
        // The error's frame, then the upstream error, last.
        let n = events.len();
        assert!(n >= 2, "{name}");
        assert_eq!(events[n - 1], StreamEvent::UpstreamError, "{name}");
        assert!(
            matches!(&events[n - 2], StreamEvent::Frame { raw, calls, hold: false }
                if raw == &body[last..] && calls.is_empty()),
            "{name}: {events:?}"
        );
        assert!(stream.close().is_empty());
        let found = stream.finish();
        assert!(
            found.calls.is_empty() && found.violations.is_empty(),
            "{name}: {found:?}"
        );
    }
}

#[test]
fn an_error_event_that_carries_a_call_is_a_call() {
    let chat: &[u8] = b"data: {\"error\":{\"message\":\"late\",\"type\":\"server_error\"},\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"delete_user\",\"arguments\":\"{}\"}}]}}]}\n\n";
    let anthropic: &[u8] = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"delete_user\",\"input\":{}}]}\n\n";
    let responses_failed: &[u8] = b"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"failed\"},\"output\":[{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"delete_user\",\"arguments\":\"{}\"}]}}\n\n";
    let untyped_error_and_message: &[u8] = b"data: {\"error\":{\"message\":\"x\"},\"message\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"delete_user\",\"arguments\":\"{}\"}}]}}\n\n";
    for body in [chat, anthropic, responses_failed, untyped_error_and_message] {
        let name = String::from_utf8_lossy(body);
        let (events, stream) = run(body);
        assert!(
            !events.contains(&StreamEvent::UpstreamError),
            "{name}: {events:?}"
        );
        assert!(!stream.errored(), "{name}");
        assert!(
            matches!(&events[0], StreamEvent::Frame { hold: true, calls, .. } if calls == &[0]),
            "{name}: {events:?}"
        );
        let found = stream.finish();
        assert_eq!(found.calls.len(), 1, "{name}");
        assert_eq!(found.calls[0].name, "delete_user", "{name}");
    }
}

#[test]
fn a_malformed_error_event_is_no_upstream_error() {
    // Held for its unreadable line, it is not passed on as the upstream's.
    let (events, stream) = run(b"event: error\ndata: {\"type\":\"error\",\"error\":{}}\nnoise\n\n");
    assert!(!events.contains(&StreamEvent::UpstreamError));
    assert!(!stream.errored());
    // A mistyped field: malformed, not an error.
    let (events, _) = run(b"data: {\"type\":\"error\",\"error\":{},\"error\":{}}\n\n");
    assert!(!events.contains(&StreamEvent::UpstreamError));
}

#[test]
fn whole_bodies_that_are_upstream_errors() {
    use crate::detect::is_upstream_error;
    for body in [
        &br#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#[..],
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        br#"{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}"#,
        br#"{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"x"},"output":[]}"#,
        b"\xEF\xBB\xBF {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"x\"}\n",
    ] {
        assert!(is_upstream_error(body), "{}", String::from_utf8_lossy(body));
    }
    for body in [
        &br#"{"error":null}"#[..],
        br#"{"error":"text"}"#,
        br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}"#,
        br#"{"error":{"message":"x"},"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}"#,
        br#"{"type":"error","error":{},"content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}"#,
        br#"{"status":"failed","error":{"message":"x"},"output":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}"#,
        br#"{"error":{"message":"x"},"messages":[{"role":"tool","tool_call_id":"c1","content":"ok"}]}"#,
        br#"[{"error":{}}]"#,
        b"data: {\"error\":{}}\n\n",
        b"{\"error\":{}",
        b"\xFF",
    ] {
        assert!(!is_upstream_error(body), "{}", String::from_utf8_lossy(body));
    }
}

/// Streams in which `delete_user` is named mid-stream, with events after
/// it and an unframed tail: OpenAI Chat, Responses, Anthropic.
fn streams_with_a_refused_call() -> Vec<(&'static str, Vec<u8>)> {
    let mut chat = sse(&[
        chat(0, Some("c1"), Some("search"), r#"{"query":"#),
        chat(0, None, None, r#""rust"}"#),
        chat(1, Some("c2"), Some("delete_user"), r#"{"user"#),
        chat(1, None, None, r#"_id":42}"#),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    chat.extend_from_slice(b"data: [DONE]\n\ndata: {\"choi");
    let responses = br#"event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"search","arguments":""}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_1","output_index":0,"delta":"{\"query\":\"rust\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"search","arguments":"{\"query\":\"rust\"}"}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"delete_user","arguments":""}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_2","output_index":1,"delta":"{\"user_id\":42}"}

event: response.completed
data: {"type":"response.completed","sequence_number":6,"response":{"id":"resp_1","status":"completed","output":[]}}

event: resp"#
        .to_vec();
    let anthropic = br#"event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"search","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"rust\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"delete_user","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"user_id\":42}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_stop
data: {"type":"message_stop"}

data: {"type":"mess"#
        .to_vec();
    vec![
        ("chat", chat),
        ("responses", responses),
        ("anthropic", anthropic),
    ]
}

/// Push `chunks` with `push_until`, refusing `delete_user`, then finish.
fn until(chunks: &[&[u8]], limits: Limits) -> (Vec<StreamEvent>, bool, Detection) {
    let mut stream = Assembler::new(Framing::Sse, limits);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(stream.push_until(chunk, |name| name == "delete_user"));
    }
    let halted = stream.halted();
    events.extend(stream.close());
    (events, halted, stream.finish())
}

#[test]
fn a_refused_name_stops_the_stream_the_same_way_for_any_chunking() {
    for (format, body) in streams_with_a_refused_call() {
        let (events, halted, whole) = until(&[&body], Limits::default());
        assert!(halted, "{format}");
        // The refusing event is the last one read: its name was the last
        // one reported, and nothing after it was framed.
        let named: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::CallNamed { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(named, ["search", "delete_user"], "{format}");
        let framed: usize = events
            .iter()
            .map(|e| match e {
                StreamEvent::Frame { raw, .. } => raw.len(),
                _ => 0,
            })
            .sum();
        let refusing = body
            .windows(b"delete_user".len())
            .position(|w| w == b"delete_user")
            .unwrap();
        let end_of_event = refusing
            + body[refusing..]
                .windows(2)
                .position(|w| w == b"\n\n")
                .unwrap()
            + 2;
        assert_eq!(framed, end_of_event, "{format}");
        // The unframed tail is not read: no violation.
        assert!(
            whole.violations.is_empty(),
            "{format}: {:?}",
            whole.violations
        );
        let read: Vec<&str> = whole.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(read, ["search", "delete_user"], "{format}");
        assert!(whole.calls[0].arguments.error().is_none(), "{format}");
        for split in 0..=body.len() {
            let (_, halted, found) = until(&[&body[..split], &body[split..]], Limits::default());
            assert!(halted, "{format}: split at {split}");
            assert_eq!(found, whole, "{format}: split at {split}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        let (_, halted, found) = until(&bytes, Limits::default());
        assert!(halted, "{format}: one byte at a time");
        assert_eq!(found, whole, "{format}: one byte at a time");
    }
}

#[test]
fn where_max_payload_bytes_falls_does_not_depend_on_the_chunking() {
    for (format, body) in streams_with_a_refused_call() {
        let refusing = body
            .windows(b"delete_user".len())
            .position(|w| w == b"delete_user")
            .unwrap();
        // The bound past the refused name: the halt comes first. Before
        // it: the stream stops there, with the events within it read.
        for (max, halts) in [(body.len() - 3, true), (refusing, false)] {
            let limits = Limits {
                max_payload_bytes: max,
                ..Limits::default()
            };
            let (_, halted, whole) = until(&[&body], limits);
            assert_eq!(halted, halts, "{format}");
            if halts {
                assert!(whole.violations.is_empty(), "{format}");
            } else {
                assert_eq!(
                    codes(&whole),
                    [ViolationCode::InputLimitExceeded],
                    "{format}"
                );
                assert_eq!(whole.calls[0].name, "search", "{format}");
            }
            for split in 0..=body.len() {
                let (_, halted, found) = until(&[&body[..split], &body[split..]], limits);
                assert_eq!(halted, halts, "{format}: split at {split}");
                assert_eq!(found, whole, "{format}: split at {split}");
            }
        }
    }
}

#[test]
fn push_until_refusing_nothing_reads_as_push() {
    for (format, body) in streams_with_a_refused_call() {
        let mut stream = Assembler::new(Framing::Sse, Limits::default());
        let mut pushed = stream.push(&body);
        pushed.extend(stream.close());
        let read = stream.finish();
        let mut stream = Assembler::new(Framing::Sse, Limits::default());
        let mut events = stream.push_until(&body, |_| false);
        assert!(!stream.halted());
        events.extend(stream.close());
        assert_eq!(events, pushed, "{format}");
        assert_eq!(stream.finish(), read, "{format}");
        // After a halt, push reads nothing either.
        let mut stream = Assembler::new(Framing::Sse, Limits::default());
        stream.push_until(&body[..body.len() / 2], |_| true);
        assert!(stream.halted(), "{format}");
        assert!(stream.push(&body[body.len() / 2..]).is_empty(), "{format}");
        assert!(stream.push_until(b"data: [DONE]\n\n", |_| false).is_empty());
    }
}
