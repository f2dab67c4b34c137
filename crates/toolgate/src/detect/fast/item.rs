//! An OpenAI Responses stream event read on a short path, its text read
//! once, straight into what it says ([`Light`]): a call's arguments delta
//! or a text delta (most of a stream's events), and the response's own
//! start (the response so far, the request's tools echoed: most of its
//! bytes).
//!
//! As for a Chat chunk ([`chunk`](super::chunk)), the general reading
//! reads an event into its probe, into the decoder's structs, by census
//! and for its nesting; for an event of the shape below what those say is
//! known in advance. Anything else gives up (`None`) and the event is read
//! the general way: a key of the table this module does not name (but for
//! a `null`), a rare key, another spelling of a key, a key given twice or
//! escaped, a key of no table at the root but those named below, a value
//! of another type than the one named below, an escaped type or item id,
//! another event type, a response with output, nesting past the bound,
//! and anything the fast reader itself gives up on. Keys of no table below
//! the root are skipped, as every general reader skips them.
//!
//! ```text
//! {"type": "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta"
//!          | "response.mcp_call_arguments.delta",
//!  "item_id": null | a string, "output_index": null | an integer,
//!  "delta": null | a string, "sequence_number", "obfuscation", "content_index": any}
//! {"type": "response.output_text.delta",
//!  "item_id": null | a string, "output_index": null | an integer,
//!  "delta": null | a string, "logprobs": null | [],
//!  "sequence_number", "obfuscation", "content_index": any}
//! {"type": "response.created" | "response.in_progress" | "response.queued",
//!  "response": {"output": [], "object": a string but "list",
//!               "id", "model", "status", "tools", "previous_response_id", "conversation": any},
//!  "item_id": null | a string, "output_index": null | an integer, "sequence_number": any}
//! ```
//! (`type` is required; so is an SSE event name, when the stream gives
//! one, equal to it: the caller's to see.) Debug builds read every event
//! taken here the general way too and assert that both say the same
//! ([`Assembler`]).
//!
//! [`Assembler`]: crate::detect::stream::Assembler

use std::borrow::Cow;

use super::{Field, Scan, Take, Value};
use crate::detect::stream::openai_responses::{is_delta, is_light, is_text_delta, Light};

/// The keys of no table an event's root may hold: those its probe reads,
/// and those OpenAI sends beside them.
pub(super) const ROOT_KEYS: [&str; 6] = [
    "item_id",
    "output_index",
    "logprobs",
    "sequence_number",
    "obfuscation",
    "content_index",
];

/// Read `text` (whitespace around it trimmed), one whole JSON document,
/// as an event of the short path's shape within `max_depth`: its type and
/// what it says; `None` when it is not one, and the general reading must
/// read it.
pub(crate) fn read(text: &str, max_depth: usize) -> Option<(&str, Light<'_>)> {
    let mut scan = Scan::new(text, None, max_depth);
    if scan.peek()? != b'{' {
        return None;
    }
    let (mut kind, mut item_id, mut output_index) = (None, None, None);
    let (mut delta, mut response, mut logprobs) = (None, false, false);
    scan.fields_with(&ROOT_KEYS, true, |scan, key| match key {
        Err(0) => scan.plain_or_null(&mut item_id),
        Err(1) => scan.index_or_null(&mut output_index),
        // A text delta's: none, or none yet (a list with entries gives
        // up, whatever they hold).
        Err(2) => {
            logprobs = true;
            if scan.peek()? == b'n' {
                scan.null()
            } else {
                scan.empty_list()
            }
        }
        Err(_) => scan.skip(),
        Ok(Field::kind) => {
            kind = Some(scan.plain()?);
            Some(())
        }
        Ok(Field::delta) if scan.peek()? == b'"' => {
            delta = Some(scan.unquoted()?);
            Some(())
        }
        Ok(Field::response) if scan.peek()? == b'{' => {
            response = true;
            scan.started_response()
        }
        Ok(_) => scan.null(),
    })?;
    if !scan.at_end() {
        return None;
    }
    let kind = kind?;
    if !is_light(kind) {
        return None;
    }
    let light = if is_delta(kind) {
        if response || logprobs {
            return None;
        }
        Light::Delta {
            item_id: item_id.map(Cow::Borrowed),
            output_index,
            delta: delta.unwrap_or_default(),
        }
    } else if is_text_delta(kind) {
        if response {
            return None;
        }
        Light::Quiet
    } else {
        if delta.is_some() || logprobs {
            return None;
        }
        Light::Quiet
    };
    Some((kind, light))
}

impl Scan<'_> {
    /// A response as it starts: no output yet.
    fn started_response(&mut self) -> Option<()> {
        self.fields(|scan, field| match field {
            Field::id
            | Field::model
            | Field::status
            | Field::tools
            | Field::previous_response_id
            | Field::conversation => scan.skip(),
            Field::object => match scan.value(Take::IsList)? {
                Value::IsList(false) => Some(()),
                _ => None,
            },
            Field::output if scan.peek()? == b'[' => scan.empty_list(),
            _ => scan.null(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::detect::fast::chunk::tests::{fixture_events, taken};
    use crate::detect::stream::same_item;

    /// An event of each type taken here, as the Responses API streams
    /// them; then two left to the general reading.
    const EVENTS: [&str; 7] = [
        r#"{"type":"response.function_call_arguments.delta","delta":"{\"location\":\"San Francisco, CA\"}","item_id":"fc_1","obfuscation":"","output_index":1,"sequence_number":5}"#,
        r#"{"type":"response.output_text.delta","content_index":0,"delta":"I\u2019ll \"check\"","item_id":"msg_1","logprobs":[],"obfuscation":"Rvo","output_index":1,"sequence_number":6}"#,
        r#"{"type":"response.custom_tool_call_input.delta","delta":"print(\"hi\")\n","item_id":"ctc_1","output_index":0,"sequence_number":7}"#,
        r#"{"type":"response.created","response":{"id":"resp_1","object":"response","created_at":1775020884,"status":"in_progress","error":null,"incomplete_details":null,"instructions":null,"model":"gpt-5-nano","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"low","summary":null},"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}},"strict":true}],"usage":null,"metadata":{}},"sequence_number":0}"#,
        r#"{"type":"response.in_progress","response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"tools":[]},"sequence_number":1}"#,
        r#"{"type":"response.output_item.added","item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_weather"},"output_index":1,"sequence_number":4}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","output":[{"id":"fc_1","type":"function_call","arguments":"{}","call_id":"call_1","name":"f"}]},"sequence_number":9}"#,
    ];

    /// What an event becomes when one of the things the short path looks
    /// at is changed.
    fn mutations(event: &str) -> Vec<String> {
        let swaps: [(&str, &str); 31] = [
            (r#""logprobs":[]"#, r#""logprobs":null"#),
            (
                r#""logprobs":[]"#,
                r#""logprobs":[{"token":"I","logprob":-0.1}]"#,
            ),
            (r#""logprobs":[]"#, r#""logprobs":[ ]"#),
            (r#""logprobs":[]"#, r#""logprobs":{}"#),
            (
                r#""type":"response.output_text.delta""#,
                r#""type":"response.output_text.delta","response":{"output":[]}"#,
            ),
            (
                r#""item_id":"fc_1""#,
                r#""item_id":"fc_1","item_id":"fc_2""#,
            ),
            (r#""item_id":"fc_1""#, r#""item_id":7"#),
            (r#""item_id":"fc_1""#, r#""item_id":null"#),
            (r#""item_id":"fc_1""#, r#""item_id":"f\u0063_1""#),
            (r#""output_index":1"#, r#""output_index":-1"#),
            (r#""output_index":1"#, r#""output_index":"1""#),
            (
                r#""output_index":1"#,
                r#""output_index":1,"output_index":2"#,
            ),
            (r#""output_index":1"#, r#""index":1"#),
            (r#""delta":"#, r#""delta":null,"x":"#),
            (r#""delta":"#, r#""delta":{"a":1},"x":"#),
            (r#""delta":"#, r#""delta":7,"x":"#),
            (r#""delta":"#, r#""arguments":"{}","delta":"#),
            (r#""delta":"#, r#""delta":"x","delta":"#),
            (
                r#""sequence_number":"#,
                r#""response":{"output":[]},"sequence_number":"#,
            ),
            (
                r#""sequence_number":"#,
                r#""error":{"message":"x"},"sequence_number":"#,
            ),
            (
                r#""sequence_number":"#,
                r#""item":{"type":"function_call"},"sequence_number":"#,
            ),
            (
                r#""output":[]"#,
                r#""output":[{"type":"function_call","name":"f","arguments":"{}"}]"#,
            ),
            (r#""output":[]"#, r#""output":null"#),
            (r#""output":[]"#, r#""output":[ ]"#),
            (r#""output":[]"#, r#""output":{}"#),
            (r#""object":"response""#, r#""object":"list""#),
            (r#""error":null"#, r#""error":{"code":"x"}"#),
            (
                r#""tools":["#,
                r#""tool_calls":[{"function":{"name":"f"}}],"tools":["#,
            ),
            (
                r#""type":"response.created""#,
                r#""type":"response.completed""#,
            ),
            (
                r#""type":"response.created""#,
                r#""type":"response.failed""#,
            ),
            (
                r#""type":"response.function_call_arguments.delta""#,
                r#""type":"response.output_text.delta""#,
            ),
        ];
        swaps
            .iter()
            .filter(|(from, _)| event.contains(from))
            .map(|(from, to)| event.replacen(from, to, 1))
            .chain([
                event.replacen('{', r#"{"usage":{},"#, 1),
                event.replacen('{', r#"{"type":"x","#, 1),
            ])
            .collect()
    }

    /// Every event the short path takes says what the general reading
    /// says (the debug builds' comparison, [`same_item`]), over the same
    /// corpus as the Chat chunks' and the events above, mutated.
    #[test]
    fn an_event_on_the_short_path_reads_as_the_general_reading_reads_it() {
        let taken = taken(&EVENTS, mutations, |text, limits, depth| {
            let Some((kind, light)) = read(text, depth) else {
                return false;
            };
            same_item(text, kind, &light, limits);
            true
        });
        assert!(taken > 300, "{taken} taken");
    }

    /// The arguments deltas and the starts of the Responses stream
    /// fixtures take the short path.
    #[test]
    fn real_events_take_the_short_path() {
        let kinds = [
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
            "response.output_text.delta",
            "response.created",
            "response.in_progress",
        ];
        let mut events = 0;
        for (path, data) in fixture_events("openai-responses") {
            if kinds
                .iter()
                .any(|kind| data.starts_with(&format!("{{\"type\":\"{kind}\"")))
            {
                assert!(read(&data, 128).is_some(), "{path}: {data}");
                events += 1;
            }
        }
        assert!(events > 20, "{events} events");
        for event in &EVENTS[..5] {
            assert!(read(event, 128).is_some(), "{event}");
        }
    }
}
