//! Edge cases of `detect`, on payloads written for the purpose. The real
//! captures are covered by the golden snapshots in `fixtures.rs`.

use proptest::prelude::*;
use serde_json::json;
use toolgate::{
    detect, detect_with, ArgumentErrorReason, Arguments, CallKind, Detection, Format, Limits,
    ViolationCode, MAX_ENVELOPE_OBJECTS,
};

fn names(found: &Detection) -> Vec<&str> {
    found.calls.iter().map(|c| c.name.as_str()).collect()
}

fn args(found: &Detection, index: usize) -> serde_json::Value {
    match &found.calls[index].arguments {
        Arguments::Object(map) => serde_json::Value::Object((**map).clone()),
        other => panic!("call {index} has no object arguments: {other:?}"),
    }
}

fn payload_codes(found: &Detection) -> Vec<ViolationCode> {
    found.violations.iter().map(|v| v.code).collect()
}

fn reason(found: &Detection, index: usize) -> ArgumentErrorReason {
    found.calls[index]
        .arguments
        .error()
        .unwrap_or_else(|| panic!("call {index} is valid"))
        .reason
}

fn bytes(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

#[test]
fn openai_chat_response_message_and_message_list() {
    let call = json!({"id": "c1", "type": "function",
        "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}});
    let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]});
    let found = detect(&bytes(&response));
    assert_eq!(found.format, Some(Format::OpenAiChat));
    assert_eq!(names(&found), ["search"]);
    assert_eq!(found.calls[0].id.as_deref(), Some("c1"));
    assert_eq!(found.calls[0].raw_arguments, r#"{"q":"x"}"#);

    let message = json!({"role": "assistant", "content": null, "tool_calls": [call]});
    assert_eq!(names(&detect(&bytes(&message))), ["search"]);

    let list = json!([
        {"role": "user", "content": "hi"},
        message,
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function",
            "function": {"name": "send", "arguments": ""}}]}
    ]);
    let found = detect(&bytes(&list));
    assert_eq!(names(&found), ["search", "send"]);
    assert_eq!(
        found.calls[1].arguments,
        Arguments::Object(serde_json::Map::new().into())
    );
    assert_eq!(found.results.len(), 1);
    assert_eq!(found.results[0].call_id.as_deref(), Some("c1"));
    assert!(found.calls[0].turn < found.results[0].turn);
    assert!(found.results[0].turn < found.calls[1].turn);
}

#[test]
fn seed_shapes() {
    // A bare tool_calls array, arguments as a string or as an object.
    let nested = json!({"tool_calls": [
        {"function": {"name": "a", "arguments": "{\"x\":1}"}},
        {"function": {"name": "b", "arguments": {"y": 2}}},
        {"name": "c", "arguments": {"z": 3}}
    ]});
    let found = detect(&bytes(&nested));
    assert_eq!(names(&found), ["a", "b", "c"]);
    assert_eq!(args(&found, 1), json!({"y": 2}));
    assert_eq!(found.calls[2].format, Format::Generic);

    let single = json!({"function": {"name": "f", "arguments": "{\"k\":true}"}});
    assert_eq!(args(&detect(&bytes(&single)), 0), json!({"k": true}));
    let legacy = json!({"role": "assistant", "function_call": {"name": "old", "arguments": "{}"}});
    assert_eq!(names(&detect(&bytes(&legacy))), ["old"]);

    for key in ["params", "parameters", "args", "arguments", "input"] {
        let generic = json!({"name": "g", key: {"v": 1}});
        let found = detect(&bytes(&generic));
        assert_eq!(names(&found), ["g"], "{key}");
        assert_eq!(args(&found, 0), json!({"v": 1}), "{key}");
    }
    let string_args = json!({"name": "g", "arguments": "{\"v\":1}"});
    assert_eq!(args(&detect(&bytes(&string_args)), 0), json!({"v": 1}));
    let tool_name = json!([{"toolName": "t1", "args": {}}, {"toolName": "t2", "input": {"a": 1}}]);
    assert_eq!(names(&detect(&bytes(&tool_name))), ["t1", "t2"]);
}

#[test]
fn provider_shapes() {
    let responses = json!({"output": [
        {"type": "reasoning", "id": "rs_1"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{\"a\":1}"},
        {"type": "custom_tool_call", "call_id": "call_2", "name": "patch", "input": "*** Begin Patch"}
    ]});
    let found = detect(&bytes(&responses));
    assert_eq!(found.format, Some(Format::OpenAiResponses));
    assert_eq!(found.calls[0].id.as_deref(), Some("call_1"));
    assert_eq!(found.calls[1].kind, CallKind::Custom);
    assert_eq!(
        found.calls[1].arguments,
        Arguments::Text("*** Begin Patch".into())
    );

    let anthropic = json!({"type": "message", "role": "assistant", "content": [
        {"type": "text", "text": "{\"name\": \"fake\", \"arguments\": {}}"},
        {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {"a": [1]}}
    ]});
    let found = detect(&bytes(&anthropic));
    assert_eq!(
        (found.format, names(&found)),
        (Some(Format::Anthropic), vec!["get"])
    );

    let bedrock = json!({"output": {"message": {"role": "assistant", "content": [
        {"text": "hi"}, {"toolUse": {"toolUseId": "t1", "name": "b", "input": {"c": "d"}}}
    ]}}});
    let found = detect(&bytes(&bedrock));
    assert_eq!(
        (found.format, names(&found)),
        (Some(Format::Bedrock), vec!["b"])
    );

    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"text": "x"}, {"functionCall": {"name": "g", "args": {"n": 1}}}, {"functionCall": {"name": "h"}}
    ]}}]});
    let found = detect(&bytes(&gemini));
    assert_eq!(
        (found.format, names(&found)),
        (Some(Format::Gemini), vec!["g", "h"])
    );
    assert_eq!(args(&found, 1), json!({}));

    let vercel = json!({"toolCalls": [
        {"toolCallId": "v1", "toolName": "a", "input": {"x": 1}},
        {"toolCallId": "v2", "toolName": "b", "args": {"y": 2}}
    ]});
    let found = detect(&bytes(&vercel));
    assert_eq!(
        (found.format, names(&found)),
        (Some(Format::VercelAi), vec!["a", "b"])
    );
    assert_eq!(args(&found, 1), json!({"y": 2}));

    let mcp = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "m", "arguments": {"k": "v"}}});
    let found = detect(&bytes(&mcp));
    assert_eq!(
        (found.format, names(&found)),
        (Some(Format::Mcp), vec!["m"])
    );
    assert_eq!(found.calls[0].id.as_deref(), Some("7"));
    let batch = json!([mcp, {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "n"}}, {"jsonrpc": "2.0", "id": 9, "method": "ping"}]);
    assert_eq!(names(&detect(&bytes(&batch))), ["m", "n"]);
}

#[test]
fn tool_results_of_every_format() {
    let payload = json!([
        {"role": "tool", "tool_call_id": "a", "name": "f", "content": "x"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "y", "is_error": true}]},
        {"type": "function_call_output", "call_id": "c", "output": "z"},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "d", "content": [{"text": "t"}], "status": "error"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "g", "response": {"r": 1}}}]},
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "ok"}], "isError": false}}
    ]);
    let found = detect(&bytes(&payload));
    let ids: Vec<_> = found.results.iter().map(|r| r.call_id.as_deref()).collect();
    assert_eq!(
        ids,
        [Some("a"), Some("b"), Some("c"), Some("d"), None, Some("3")]
    );
    let errors: Vec<_> = found.results.iter().map(|r| r.is_error).collect();
    assert_eq!(errors, [false, true, false, true, false, false]);
    assert_eq!(found.results[4].name.as_deref(), Some("g"));
    assert!(found.calls.is_empty());
}

/// Arguments given as a JSON string nest within `max_depth` wherever the
/// call sits: in a Responses `output` (a container read on its own) as in
/// a Chat message, and whether or not the payload takes the fast path (a
/// key written with an escape sends it the reference way).
#[test]
fn arguments_strings_in_containers_nest_within_max_depth() {
    let limits = Limits {
        max_depth: 6,
        ..Limits::default()
    };
    for levels in 1..8 {
        let arguments = format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
        for first in ["", r#""\u0078":1,"#] {
            let payload = format!(
                r#"{{{first}"object":"response","output":[{{"type":"function_call","call_id":"c","name":"f","arguments":{}}}]}}"#,
                serde_json::to_string(&arguments).expect("a string")
            );
            let found = detect_with(payload.as_bytes(), &limits);
            assert_eq!(found.calls.len(), 1, "{payload}");
            let too_deep = matches!(
                &found.calls[0].arguments,
                Arguments::Invalid(err) if err.reason == ArgumentErrorReason::TooDeep
            );
            assert_eq!(
                too_deep,
                levels > 6,
                "{payload}: {:?}",
                found.calls[0].arguments
            );
        }
    }
}

/// A result's content given as `null` is no content, in every format: a
/// Vercel part's `errorText` as its `output`.
#[test]
fn null_result_content_is_no_content() {
    let payload = json!([
        {"type": "tool-f", "toolCallId": "a", "state": "output-available", "output": null},
        {"type": "tool-f", "toolCallId": "b", "state": "output-error", "errorText": null},
        {"type": "tool-f", "toolCallId": "c", "state": "output-error", "errorText": "boom"}
    ]);
    let found = detect(&bytes(&payload));
    let contents: Vec<_> = found.results.iter().map(|r| r.content.clone()).collect();
    assert_eq!(contents, [None, None, Some(json!("boom"))]);
    let errors: Vec<_> = found.results.iter().map(|r| r.is_error).collect();
    assert_eq!(errors, [false, true, true]);
}

#[test]
fn text_that_looks_like_a_call_is_not_a_call() {
    let payload = json!({"choices": [{"message": {"role": "assistant",
        "content": "{\"tool_calls\":[{\"function\":{\"name\":\"rm\",\"arguments\":\"{}\"}}]}"}}]});
    let found = detect(&bytes(&payload));
    assert!(found.calls.is_empty());
    assert!(found.violations.is_empty());
    assert_eq!(found.format, Some(Format::OpenAiChat));
}

#[test]
fn argument_defects_each_have_a_reason() {
    let cases = [
        ("not json", ArgumentErrorReason::NotJson),
        ("[1]", ArgumentErrorReason::NotObject),
        ("\u{feff}{}", ArgumentErrorReason::ByteOrderMark),
        ("{\"a\":NaN}", ArgumentErrorReason::NonFiniteNumber),
        ("{\"a\":\"\\udead\"}", ArgumentErrorReason::LoneSurrogate),
        ("{\"a\":1,\"a\":2}", ArgumentErrorReason::DuplicateKey),
    ];
    for (text, expected) in cases {
        let payload = json!({"function": {"name": "f", "arguments": text}});
        assert_eq!(reason(&detect(&bytes(&payload)), 0), expected, "{text}");
    }
}

#[test]
fn duplicate_keys_in_inline_objects_are_caught() {
    // serde_json would keep the second value; the executor may read the first.
    let body = br#"{"type":"message","role":"assistant","content":[
        {"type":"tool_use","id":"t","name":"pay","input":{"to":"alice","to":"mallory"}}]}"#;
    let found = detect(body);
    let err = found.calls[0].arguments.error().unwrap();
    assert_eq!(err.code, ViolationCode::DuplicateArgumentKey);
    assert!(!err.message.contains("mallory"));
}

/// A key given twice, or twice to a reader that ignores case, is said
/// alike wherever the arguments sit: as a string or an object, read by the
/// short path of each format or by the general one, exactly as the text
/// alone is.
#[test]
fn a_key_given_twice_is_said_alike_in_every_format() {
    let texts = [
        r#"{"to":"alice","to":"mallory"}"#,
        r#"{"a": {"b": 1, "B": 2}, "c": 3}"#,
        r#"{"a": [1, {"x": [true], "x": null}], "a": 2}"#,
        r#"{"\u0061": 1, "a": 2, "b": "x\ny"}"#,
        r#"{"s": 1, "\u017f": 2}"#,
        r#"{"n": 1e999, "n": 2}"#,
        "{\n  \"k\": \"v\",\n  \"k\": \"w\"\n}",
    ];
    for text in texts {
        let quoted = serde_json::to_string(text).unwrap();
        let payloads = [
            format!(
                r#"{{"choices":[{{"message":{{"role":"assistant","tool_calls":[{{"id":"1","type":"function","function":{{"name":"f","arguments":{quoted}}}}}]}}}}]}}"#
            ),
            format!(r#"{{"function":{{"name":"f","arguments":{quoted}}}}}"#),
            format!(
                r#"{{"messages":[{{"role":"user","content":"hi"}},{{"role":"assistant","tool_calls":[{{"id":"1","function":{{"name":"f","arguments":{quoted}}}}}]}}]}}"#
            ),
            format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"tool_use","id":"t","name":"f","input":{text}}}]}}"#
            ),
            format!(
                r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"functionCall":{{"name":"f","args":{text}}}}}]}}}}]}}"#
            ),
            format!(
                r#"{{"output":{{"message":{{"role":"assistant","content":[{{"toolUse":{{"toolUseId":"t","name":"f","input":{text}}}}}]}}}}}}"#
            ),
            format!(
                r#"[{{"type":"function_call","call_id":"c","name":"f","arguments":{quoted}}}]"#
            ),
            format!(r#"{{"name":"f","input":{text},"extra":{{"k":[1,2]}}}}"#),
        ];
        let Arguments::Invalid(expected) =
            toolgate::detect::parse_arguments(text, &Limits::default())
        else {
            panic!("{text} parsed");
        };
        for payload in &payloads {
            let found = detect(payload.as_bytes());
            assert_eq!(found.calls.len(), 1, "{payload}: {found:?}");
            assert_eq!(
                found.calls[0].arguments.error(),
                Some(&expected),
                "{payload}"
            );
        }
    }
}

#[test]
fn duplicate_envelope_keys_are_malformed() {
    let body = br#"{"choices":[],"choices":[{"message":{"role":"assistant","tool_calls":[
        {"id":"1","function":{"name":"rm","arguments":"{}"}}]}}]}"#;
    let found = detect(body);
    assert_eq!(payload_codes(&found), [ViolationCode::MalformedPayload]);
    let body = br#"{"function":{"name":"safe","name":"rm","arguments":"{}"}}"#;
    assert_eq!(
        payload_codes(&detect(body)),
        [ViolationCode::MalformedPayload]
    );
}

#[test]
fn bad_payloads_are_violations() {
    for body in [&b""[..], b"   ", b"hello", b"{\"choices\":", b"\xff\xfe{}"] {
        let found = detect(body);
        assert_eq!(
            payload_codes(&found),
            [ViolationCode::MalformedPayload],
            "{}",
            String::from_utf8_lossy(body)
        );
        assert!(found.calls.is_empty());
    }
    // JSON that holds no call position has no calls, and nothing wrong.
    for body in [
        &b"42"[..],
        b"{\"unrelated\":true}",
        b"{}",
        b"null",
        b"[]",
        b"\"text\"",
    ] {
        let found = detect(body);
        assert!(
            found.violations.is_empty(),
            "{}",
            String::from_utf8_lossy(body)
        );
        assert!(found.calls.is_empty());
    }
    // A leading byte order mark on the payload itself is an encoding mark.
    let found = detect(b"\xef\xbb\xbf{\"name\":\"f\",\"arguments\":{}}");
    assert_eq!(names(&found), ["f"]);
}

#[test]
fn limits_are_violations_not_crashes() {
    let small = Limits {
        max_payload_bytes: 64,
        ..Limits::default()
    };
    let big = json!({"name": "f", "arguments": {"a": "x".repeat(100)}});
    assert_eq!(
        payload_codes(&detect_with(&bytes(&big), &small)),
        [ViolationCode::InputLimitExceeded]
    );

    let few = Limits {
        max_calls: 2,
        ..Limits::default()
    };
    let many =
        json!([{"name": "a", "args": {}}, {"name": "b", "args": {}}, {"name": "c", "args": {}}]);
    let found = detect_with(&bytes(&many), &few);
    assert_eq!(names(&found), ["a", "b"]);
    assert_eq!(payload_codes(&found), [ViolationCode::InputLimitExceeded]);

    let shallow = Limits {
        max_depth: 2,
        ..Limits::default()
    };
    // Arguments sent as JSON text nest from their own root.
    let deep = json!({"name": "f", "arguments": "{\"a\": {\"b\": {\"c\": 1}}}"});
    let found = detect_with(&bytes(&deep), &shallow);
    assert_eq!(
        found.calls[0].arguments.error().unwrap().code,
        ViolationCode::InputLimitExceeded
    );
    // Inline, they are part of the payload, which nests too deep as a whole.
    let deep = json!({"name": "f", "arguments": {"a": {"b": {"c": 1}}}});
    let found = detect_with(&bytes(&deep), &shallow);
    assert_eq!(payload_codes(&found), [ViolationCode::InputLimitExceeded]);
    assert_eq!(
        found.violations[0].message,
        "the payload nests deeper than 2 levels (line 1 column 30)"
    );

    let tiny_args = Limits {
        max_argument_bytes: 8,
        ..Limits::default()
    };
    let found = detect_with(
        &bytes(&json!({"name": "f", "arguments": "{\"a\":\"long\"}"})),
        &tiny_args,
    );
    assert_eq!(reason(&found, 0), ArgumentErrorReason::TooLarge);

    // Nesting far past any limit, in the envelope: an error, no stack overflow.
    let nested = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    let found = detect(nested.as_bytes());
    assert_eq!(found.violations.len(), 1);
    assert!(found.calls.is_empty());
    for key in ["message", "function", "output", "response"] {
        let nested = format!(
            "{}1{}",
            format!("{{\"{key}\":").repeat(50_000),
            "}".repeat(50_000)
        );
        assert_eq!(
            payload_codes(&detect(nested.as_bytes())),
            [ViolationCode::InputLimitExceeded],
            "{key}"
        );
    }
    let nested = format!(
        "{}{}",
        "{\"messages\":[".repeat(20_000),
        "]}".repeat(20_000)
    );
    assert_eq!(
        payload_codes(&detect(nested.as_bytes())),
        [ViolationCode::InputLimitExceeded]
    );
    let nested = format!(
        "{{\"name\":\"f\",\"arguments\":{}1{}}}",
        "{\"a\":".repeat(5_000),
        "}".repeat(5_000)
    );
    let found = detect(nested.as_bytes());
    assert!(!found.is_clean());
}

/// `n` copies of `item` joined by commas, between `head` and `tail`.
fn repeated(head: &str, item: &str, n: usize, tail: &str) -> String {
    let mut text = String::from(head);
    text.push_str(&vec![item; n].join(","));
    text.push_str(tail);
    text
}

#[test]
fn a_payload_of_many_tiny_objects_is_bounded_not_read_into_views() {
    let limits = Limits::default();
    let over = MAX_ENVELOPE_OBJECTS + 1;
    // (payload, refused): refused when more views than the bound would be
    // alive at once.
    let payloads = [
        // The fast reader's views.
        (repeated("[", r#"{"id":1}"#, over, "]"), true),
        (
            repeated(r#"{"messages":["#, r#"{"role":"u"}"#, over, "]}"),
            true,
        ),
        // A number the fast reader leaves to the reference one.
        (repeated("[", r#"{"id":1}"#, over, r#",{"id":1e5}]"#), true),
        // Content blocks read after the envelope, from its raw text.
        (
            repeated(
                r#"{"messages":[{"role":"user","content":["#,
                r#"{"type":"x"}"#,
                over,
                "]}]}",
            ),
            true,
        ),
        // As many spread over messages, each message's blocks read and
        // let go in turn: never that many at once.
        (
            repeated(
                r#"{"messages":["#,
                r#"{"role":"user","content":[{"type":"x"},{"type":"x"},{"type":"x"},{"type":"x"}]}"#,
                over / 4,
                "]}",
            ),
            false,
        ),
        // A stream's events, one document each.
        (
            repeated(
                "",
                r#"data: {"choices":[{"delta":{"role":"assistant"}}]}"#,
                over,
                "\n\n",
            )
            .replace(',', "\n\n"),
            false,
        ),
    ];
    for (payload, refused) in &payloads {
        assert!(payload.len() <= limits.max_payload_bytes);
        let found = detect_with(payload.as_bytes(), &limits);
        let start = &payload[..40];
        if !refused {
            assert!(
                found.violations.is_empty(),
                "{start}: {:?}",
                found.violations
            );
            continue;
        }
        assert_eq!(
            payload_codes(&found),
            [ViolationCode::InputLimitExceeded],
            "{start}"
        );
        let message = &found.violations[0].message;
        assert!(
            message.starts_with(&format!(
                "the payload holds more than {MAX_ENVELOPE_OBJECTS} objects of its envelope"
            )),
            "{message}"
        );
    }
    // At the bound (the root, the messages, the call and its `function`),
    // a payload is read, and the views of those refused above were all
    // given back; one message more is refused.
    let conversation = |texts: usize| {
        repeated(
            r#"{"messages":["#,
            r#"{"role":"user","content":"hi"}"#,
            texts,
            r#",{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}"#,
        )
    };
    let found = detect_with(conversation(MAX_ENVELOPE_OBJECTS - 4).as_bytes(), &limits);
    assert!(found.violations.is_empty(), "{:?}", found.violations);
    assert_eq!(names(&found), ["f"]);
    let found = detect_with(conversation(MAX_ENVELOPE_OBJECTS - 3).as_bytes(), &limits);
    assert_eq!(payload_codes(&found), [ViolationCode::InputLimitExceeded]);
}

#[test]
fn the_bound_on_views_near_it_and_in_a_stream() {
    let limits = Limits::default();
    // Just under the bound, with a container read ahead (an assistant
    // message's content blocks): read, in debug builds too, which read
    // such a container a second time to check it.
    let blocks = vec![r#"{"type":"text","text":"a"}"#; 100].join(",");
    let near = repeated(
        r#"{"messages":["#,
        r#"{"role":"user","content":"hi"}"#,
        MAX_ENVELOPE_OBJECTS - 112,
        &format!(r#",{{"role":"assistant","content":[{blocks}]}}]}}"#),
    );
    let found = detect_with(near.as_bytes(), &limits);
    assert!(found.violations.is_empty(), "{:?}", found.violations);

    // A stream event past the bound says so, as a whole payload does.
    let event = repeated(
        r#"data: {"choices":[{"delta":{"role":"assistant"}}],"messages":["#,
        r#"{"role":"u"}"#,
        MAX_ENVELOPE_OBJECTS + 1,
        "]}\n\n",
    );
    let stream =
        format!("data: {{\"choices\":[{{\"delta\":{{\"role\":\"assistant\"}}}}]}}\n\n{event}");
    let found = detect_with(stream.as_bytes(), &limits);
    let limit: Vec<_> = found
        .violations
        .iter()
        .filter(|v| v.code == ViolationCode::InputLimitExceeded)
        .collect();
    assert_eq!(limit.len(), 1, "{:?}", found.violations);
    assert!(
        limit[0].message.starts_with(&format!(
            "stream event 2 holds more than {MAX_ENVELOPE_OBJECTS} objects of its envelope"
        )),
        "{}",
        limit[0].message
    );
}

#[test]
fn a_conversation_yields_every_turn_in_order() {
    let turn = |id: &str, name: &str| {
        json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": id, "name": name, "input": {}}]})
    };
    let result = |id: &str| {
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": "ok"}]})
    };
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        turn("1", "get_user"), result("1"),
        turn("2", "update_profile"), result("2"),
        turn("3", "notify")
    ]});
    let found = detect(&bytes(&body));
    assert_eq!(names(&found), ["get_user", "update_profile", "notify"]);
    let turns: Vec<_> = found.calls.iter().map(|c| c.turn).collect();
    assert!(turns.windows(2).all(|w| w[0] < w[1]), "{turns:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn detect_never_panics_on_arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let found = detect(&body);
        prop_assert!(found.calls.len() <= Limits::default().max_calls);
    }

    #[test]
    fn detect_never_panics_on_json_like_text(body in r#"[\[\]{}":,a-z0-9 \\ntrufalse-]{0,200}"#) {
        let _ = detect(body.as_bytes());
    }
}

/// JSON objects whose strings hold what JSON escapes: quotes,
/// backslashes, control characters, slashes, non-ASCII text.
fn escaped_object() -> impl Strategy<Value = serde_json::Value> {
    let text = "[a-z\"\\\\/ \n\t\u{0}-\u{1f}\u{7f}é€😀]{0,8}";
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|n| json!(n)),
        text.prop_map(serde_json::Value::String),
    ];
    let value = crate::check::json_tree(leaf.boxed(), text);
    proptest::collection::btree_map(text, value, 0..5)
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
}

/// A JSON string holding `text`, every character past ASCII escaped
/// (`\\u00e9`, surrogate pairs for the rest), and slashes too when asked.
fn ascii_literal(text: &str, slashes: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for unit in serde_json::to_string(text).unwrap().chars() {
        match unit {
            '/' if slashes => out.push_str("\\/"),
            c if c.is_ascii() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(out, "\\u{unit:04x}").unwrap();
                }
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// Arguments read straight from their JSON string are the arguments
    /// read from its decoded text, however the text and the string are
    /// written; and the reading straight from the string takes every
    /// string the text's reader takes.
    #[test]
    fn arguments_read_from_their_string_are_those_of_its_text(value in escaped_object()) {
        let limits = Limits::default();
        for text in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
            let taken = toolgate::detect::args::fast_path_agrees(&text, &limits)
                .map_err(TestCaseError::fail)?;
            for literal in [
                serde_json::to_string(&text).unwrap(),
                ascii_literal(&text, false),
                ascii_literal(&text, true),
            ] {
                let quoted = toolgate::detect::args::quoted_path_agrees(&format!("{literal},1"), &limits)
                    .map_err(TestCaseError::fail)?;
                prop_assert_eq!(quoted, taken, "{}", literal);
            }
        }
    }

    /// Arguments read as the envelope is read (an Anthropic `input`
    /// object, an OpenAI `arguments` string) are those the reference
    /// reader finds, whatever the nesting bound: the same calls, arguments
    /// and violations as when a key the fast reader does not take (an
    /// escaped one, which no reader looks at) sends the payload to the
    /// reference reader.
    #[test]
    fn arguments_read_in_passing_are_those_of_the_reference_reader(
        value in escaped_object(),
        max_depth in 2_usize..9,
    ) {
        let limits = Limits { max_depth, ..Limits::default() };
        let anthropic = json!({"type": "message", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": value}]});
        let openai = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "f", "arguments": value.to_string()}}]}}]});
        for payload in [anthropic, openai] {
            let text = payload.to_string();
            let referenced = format!("{{\"\\u0078\":0,{}", &text[1..]);
            let fast = detect_with(text.as_bytes(), &limits);
            let reference = detect_with(referenced.as_bytes(), &limits);
            prop_assert_eq!(&fast.calls, &reference.calls);
            // Messages say where in the text: the key moved that.
            let codes = |found: &Detection| {
                found.violations.iter().map(|v| (v.code, v.call)).collect::<Vec<_>>()
            };
            prop_assert_eq!(codes(&fast), codes(&reference));
        }
    }

    /// Whatever the text, the reading straight from a string takes only
    /// valid JSON strings, and reads them as their text reads.
    #[test]
    fn arguments_read_from_any_string_agree(body in r#""[\[\]{}":,a-z0-9 \\/ntrufalseu-]{0,80}"#) {
        toolgate::detect::args::quoted_path_agrees(&body, &Limits::default())
            .map_err(TestCaseError::fail)?;
    }
}

#[test]
fn a_single_stream_event_is_a_stream_of_one() {
    let event = br#"{"contentBlockStart":{"start":{"toolUse":{"toolUseId":"t1","name":"get_weather"}},"contentBlockIndex":0}}"#;
    let found = detect(event);
    assert_eq!(found.format, Some(Format::Bedrock));
    assert_eq!(names(&found), ["get_weather"]);
    // Its input never arrived: the call cannot be trusted.
    assert_eq!(reason(&found, 0), ArgumentErrorReason::Incomplete);
}

#[test]
fn a_logged_exchange_reads_the_request_then_the_response() {
    let call = |id: &str, name: &str| {
        json!({"id": id, "type": "function",
        "function": {"name": name, "arguments": "{}"}})
    };
    let chat = json!({
        "messages": [{"role": "assistant", "tool_calls": [call("1", "get_user")]},
                     {"role": "tool", "tool_call_id": "1", "content": "u"}],
        "choices": [{"message": {"role": "assistant", "tool_calls": [call("2", "delete_user")]}}]
    });
    let found = detect(&bytes(&chat));
    assert_eq!(names(&found), ["get_user", "delete_user"]);
    assert!(found.calls[0].turn < found.calls[1].turn);

    let gemini = json!({
        "contents": [{"role": "model", "parts": [{"functionCall": {"name": "a", "args": {}}}]}],
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "b", "args": {}}}]}}]
    });
    assert_eq!(names(&detect(&bytes(&gemini))), ["a", "b"]);

    let responses = json!({
        "input": [{"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"}],
        "output": [{"type": "function_call", "call_id": "c2", "name": "b", "arguments": "{}"}]
    });
    assert_eq!(names(&detect(&bytes(&responses))), ["a", "b"]);
}

#[test]
fn langchain_serialised_messages_are_read_by_their_class() {
    let dumped = json!([
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
         "kwargs": {"content": "hi", "tool_calls": [{"name": "ignored", "args": {}, "id": "h1"}]}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
         "kwargs": {"content": "", "tool_calls": [{"name": "delete_user", "args": {"id": 1}, "id": "c1", "type": "tool_call"}],
                    "invalid_tool_calls": []}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
         "kwargs": {"content": "done", "tool_call_id": "c1"}}
    ]);
    let found = detect(&bytes(&dumped));
    assert_eq!(names(&found), ["delete_user"]);
    assert_eq!(found.results.len(), 1);
    assert_eq!(found.results[0].call_id.as_deref(), Some("c1"));
    assert_eq!(
        found.results[0].answers,
        toolgate::Answers::Turn(found.calls[0].turn)
    );
}

#[test]
fn an_mcp_approval_response_is_the_result_of_its_request() {
    let request = |approve: serde_json::Value| {
        json!({"model": "gpt-4.1", "input": [
            {"type": "mcp_approval_request", "id": "mcpr_1", "call_id": "call_1",
             "server_label": "crm", "name": "lookup_user", "arguments": "{\"user_id\":42}"},
            {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": approve},
        ]})
    };
    let found = detect(&bytes(&request(json!(true))));
    assert_eq!(names(&found), ["lookup_user"]);
    // The request's call id is its `id`: it has no call_id of its own.
    assert_eq!(found.calls[0].id.as_deref(), Some("mcpr_1"));
    assert_eq!(found.calls[0].kind, CallKind::Hosted);
    assert_eq!(found.results.len(), 1);
    let result = &found.results[0];
    assert_eq!(result.call_id.as_deref(), Some("mcpr_1"));
    assert_eq!(result.format, Format::OpenAiResponses);
    assert_eq!(
        result.content,
        Some(json!({"type": "mcp_approval_response", "approve": true}))
    );
    assert!(!result.is_error);
    // A denial answers the request too; the tool does not run.
    let found = detect(&bytes(&request(json!(false))));
    assert!(found.results[0].is_error);
    // Anything but a boolean is no decision.
    let found = detect(&bytes(&request(json!("yes"))));
    assert_eq!(found.results[0].content, None);
    assert!(found.violations.is_empty());
}

#[test]
fn max_depth_bounds_the_whole_payload() {
    let nested = |levels: usize| {
        let mut value = json!("secret");
        for _ in 0..levels {
            value = json!([value]);
        }
        value
    };
    let payload = json!({"messages": [{"role": "user", "content": nested(10)}]});
    let five = Limits {
        max_depth: 5,
        ..Limits::default()
    };
    let found = detect_with(&bytes(&payload), &five);
    assert_eq!(payload_codes(&found), [ViolationCode::InputLimitExceeded]);
    let message = &found.violations[0].message;
    assert!(
        message.starts_with("the payload nests deeper than 5 levels (line 1 column "),
        "{message}"
    );
    assert!(!message.contains("secret"));
    // Within the bound, and with the default limits, it is read.
    let found = detect_with(
        &bytes(&payload),
        &Limits {
            max_depth: 13,
            ..five
        },
    );
    assert!(found.violations.is_empty(), "{:?}", found.violations);
    assert!(detect(&bytes(&payload)).violations.is_empty());
    // Each event of a stream is bounded alike.
    let event = json!({"choices": [{"index": 0, "delta": {"content": "hi"}}], "x": nested(10)});
    let body = format!("data: {event}\n\ndata: [DONE]\n\n");
    let found = detect_with(body.as_bytes(), &five);
    assert_eq!(payload_codes(&found), [ViolationCode::InputLimitExceeded]);
    assert!(
        found.violations[0]
            .message
            .starts_with("stream event 1 nests deeper than 5 levels (line 1 column "),
        "{}",
        found.violations[0].message
    );
    assert!(detect(body.as_bytes()).violations.is_empty());
}

#[test]
fn a_stream_event_that_is_not_json_is_named_by_its_position_not_its_text() {
    let first = r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#;
    for (event, expected) in [
        (
            r#"{"choices":[{"index":0,"delta":{"content":"secret"#,
            "stream event 2 is not valid JSON: it ends early (line 1 column ",
        ),
        (
            r#"{"choices":[{"index":0,"delta":{"content":secret}}]}"#,
            "stream event 2 is not valid JSON (line 1 column ",
        ),
    ] {
        let body = format!("data: {first}\n\ndata: {event}\n\ndata: [DONE]\n\n");
        let found = detect(body.as_bytes());
        let messages: Vec<&str> = found
            .violations
            .iter()
            .map(|v| v.message.as_str())
            .collect();
        assert!(
            messages.iter().any(|m| m.starts_with(expected)),
            "{expected}: {messages:?}"
        );
        assert!(
            messages.iter().all(|m| !m.contains("secret")),
            "{messages:?}"
        );
    }
}

#[test]
fn a_payload_of_many_defects_lists_a_bounded_number_of_them() {
    // 5,000 documents in no known shape: each is a problem, and the
    // reading lists the first hundred and says the rest are not listed.
    let body = "{\"foo\":1}\n".repeat(5_000);
    let found = detect(body.as_bytes());
    assert!(found.calls.is_empty());
    assert_eq!(found.violations.len(), 101);
    assert!(found.violations[..100]
        .iter()
        .all(|v| v.code == toolgate::ViolationCode::MalformedPayload));
    assert_eq!(
        found.violations[100].code,
        toolgate::ViolationCode::InputLimitExceeded
    );
    assert!(found.violations[100]
        .message
        .contains("the rest are not listed"));
}
