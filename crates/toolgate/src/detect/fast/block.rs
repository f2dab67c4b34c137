//! An Anthropic Messages stream event read on a short path, its text
//! read once, straight into what it says ([`Light`]).
//!
//! As for a Chat chunk ([`chunk`](super::chunk)), the general reading
//! reads an event into its probe, into the decoder's structs, by census
//! and for its nesting; for an event of the shape below what those say is
//! known in advance. Anything else gives up (`None`) and the event is read
//! the general way: a key of the table this module does not name (but for
//! a `null`), a rare key, another spelling of a key, a key given twice or
//! escaped, a key of no table at the root but those named below, a value
//! of another type than the one named below, another event type, block
//! type or role, a key an event of its type does not hold, nesting past
//! the bound, and anything the fast reader itself gives up on. Keys of no
//! table below the root are skipped, as every general reader skips them.
//!
//! ```text
//! {"type": "message_start", "message": {"type": "message", "role": "assistant",
//!                                       "content": null | [], "id", "model": any}}
//! {"type": "content_block_start", "index": null | an integer,
//!  "content_block": {"type": "tool_use" | "server_tool_use" | "mcp_tool_use"
//!                            | "text" | "thinking" | "redacted_thinking",
//!                    "id": null | a string, "name": null | a string, "input": any}}
//! {"type": "content_block_delta", "index": null | an integer,
//!  "delta": null | {"type": "input_json_delta" | "text_delta" | "thinking_delta"
//!                            | "signature_delta" | "citations_delta",
//!                    "partial_json": null | a string}}
//! {"type": "content_block_stop", "index": null | an integer}
//! {"type": "message_delta", "delta": {...}, "usage": any}
//! {"type": "message_stop"}   {"type": "ping"}
//! ```
//! (`type` is required, and each event's object; so is an SSE event name,
//! when the stream gives one, equal to the type: the caller's to see.)
//! Debug builds read every event taken here the general way too and
//! assert that both say the same ([`Assembler`]).
//!
//! [`Assembler`]: crate::detect::stream::Assembler

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::{Field, Scan};
use crate::detect::stream::anthropic::{Light, StartCall};
use crate::model::CallKind;

/// The keys of no table an event's root may hold: the index of a block,
/// its start's block, a message's usage, what Bedrock adds to the last.
pub(super) const ROOT_KEYS: [&str; 4] = [
    "index",
    "content_block",
    "usage",
    "amazon-bedrock-invocationMetrics",
];

/// The types of a content block's delta.
const DELTAS: [&str; 5] = [
    "input_json_delta",
    "text_delta",
    "thinking_delta",
    "signature_delta",
    "citations_delta",
];

/// What an event's root holds, read.
#[derive(Default)]
struct Root<'a> {
    kind: Option<&'a str>,
    index: Option<u64>,
    /// `content_block` was read, and the call it opens (none for a block
    /// of no call).
    block: bool,
    call: Option<StartCall<'a>>,
    /// `delta`, an object: its type, and its `partial_json` (empty when
    /// `null` or none).
    delta: Option<(Option<&'a str>, Cow<'a, str>)>,
    message: bool,
    usage: bool,
}

/// Read `text` (whitespace around it trimmed), one whole JSON document,
/// as an event of the short path's shape within `max_depth`: its type and
/// what it says; `None` when it is not one, and the general reading must
/// read it.
pub(crate) fn read(text: &str, max_depth: usize) -> Option<(&str, Light<'_>)> {
    let mut scan = Scan::new(text, None, max_depth);
    if scan.peek()? != b'{' {
        return None;
    }
    let mut root = Root::default();
    scan.fields_with(&ROOT_KEYS, true, |scan, key| match key {
        Err(0) => scan.index_or_null(&mut root.index),
        Err(1) if scan.peek()? == b'{' => {
            root.block = true;
            scan.start_block(&mut root.call)
        }
        Err(1) => None,
        Err(_) => {
            root.usage = true;
            scan.skip()
        }
        Ok(Field::kind) => {
            root.kind = Some(scan.plain()?);
            Some(())
        }
        Ok(Field::delta) if scan.peek()? == b'{' => {
            root.delta = Some(scan.block_delta()?);
            Some(())
        }
        Ok(Field::message) if scan.peek()? == b'{' => {
            root.message = true;
            scan.start_message()
        }
        Ok(_) => scan.null(),
    })?;
    if !scan.at_end() {
        return None;
    }
    let Root {
        kind,
        index,
        block,
        call,
        delta,
        message,
        usage,
    } = root;
    let kind = kind?;
    let index = index.unwrap_or(0);
    let light = match (kind, block, delta, message) {
        ("message_start", false, None, true) => Light::MessageStart,
        ("content_block_start", true, None, false) => Light::Start { index, call },
        ("content_block_delta", false, delta, false) => Light::Delta {
            index,
            json: delta.and_then(|(kind, json)| (kind == Some("input_json_delta")).then_some(json)),
        },
        ("content_block_stop", false, None, false) => Light::Stop { index },
        ("message_stop", false, None, false) => Light::MessageStop,
        ("message_delta", false, Some(_), false) => Light::Quiet,
        ("ping", false, None, false) if !usage => Light::Quiet,
        _ => return None,
    };
    Some((kind, light))
}

impl<'a> Scan<'a> {
    /// A delta: its type and its `partial_json`.
    fn block_delta(&mut self) -> Option<(Option<&'a str>, Cow<'a, str>)> {
        let mut kind = None;
        let mut json: Cow<'a, str> = Cow::Borrowed("");
        self.fields_with(&["partial_json"], false, |scan, key| match key {
            Err(_) if scan.peek()? == b'"' => {
                json = scan.unquoted()?;
                Some(())
            }
            // A type of the Messages stream's deltas: the census reads
            // any other (a call item's type, `apply_patch_call`) as a call.
            Ok(Field::kind) => {
                kind = Some(scan.plain()?).filter(|kind| DELTAS.contains(kind));
                kind.map(drop)
            }
            Err(_) | Ok(_) => scan.null(),
        })?;
        Some((kind, json))
    }

    /// A started block: the call it opens, into `call` (none when it
    /// opens none).
    fn start_block(&mut self, call: &mut Option<StartCall<'a>>) -> Option<()> {
        let (mut kind, mut id, mut name, mut input) = (None, None, None, None);
        self.fields(|scan, field| match field {
            Field::kind => {
                kind = Some(scan.plain()?);
                Some(())
            }
            Field::id => scan.plain_or_null(&mut id),
            Field::name => scan.plain_or_null(&mut name),
            Field::input if scan.peek()? != b'n' => {
                let start = scan.at;
                scan.skip()?;
                input = Some(serde_json::from_str::<&RawValue>(&scan.text[start..scan.at]).ok()?);
                Some(())
            }
            _ => scan.null(),
        })?;
        let kind = match kind? {
            "tool_use" => CallKind::Function,
            "server_tool_use" | "mcp_tool_use" => CallKind::Hosted,
            "text" | "thinking" | "redacted_thinking" => return Some(()),
            _ => return None,
        };
        *call = Some(StartCall {
            kind,
            id: id.map(Cow::Borrowed),
            name: name.map(Cow::Borrowed),
            input,
        });
        Some(())
    }

    /// A started message: an assistant's, with no content yet.
    fn start_message(&mut self) -> Option<()> {
        let (mut kind, mut role) = (None, None);
        self.fields(|scan, field| match field {
            Field::id | Field::model => scan.skip(),
            Field::kind => scan.plain_or_null(&mut kind),
            Field::role => scan.plain_or_null(&mut role),
            Field::content if scan.peek()? == b'[' => scan.empty_list(),
            _ => scan.null(),
        })?;
        (kind == Some("message") && role == Some("assistant")).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::detect::fast::chunk::tests::{fixture_events, taken};
    use crate::detect::stream::same_light;

    /// An event of each type taken here, as the Messages API streams them;
    /// then two left to the general reading.
    const EVENTS: [&str; 14] = [
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Z\u00fcrich"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type": "ping"}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
        r#"{"type":"message_stop"}"#,
        r#"{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":677,"outputTokenCount":41}}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
    ];

    /// What an event becomes when one of the things the short path looks
    /// at is changed.
    fn mutations(event: &str) -> Vec<String> {
        let swaps: [(&str, &str); 46] = [
            (
                r#""type":"input_json_delta""#,
                r#""type":"apply_patch_call""#,
            ),
            (r#""type":"text_delta""#, r#""type":"function_call""#),
            (r#""index":1"#, r#""index":1,"index":2"#),
            (r#""index":1"#, r#""index":-1"#),
            (r#""index":1"#, r#""index":1.5"#),
            (r#""index":1"#, r#""index":null"#),
            (r#""index":1"#, r#""index":"1""#),
            (r#""index":1"#, r#""x":1"#),
            (r#""index":1"#, r#""index":1,"content_block":null"#),
            (
                r#""index":1"#,
                r#""index":1,"content_block":{"type":"tool_use","name":"f"}"#,
            ),
            (r#""index":1"#, r#""index":1,"error":{"type":"x"}"#),
            (r#""index":1"#, r#""index":1,"message":{"content":[]}"#),
            (r#""index":1"#, r#""index":1,"item_id":"x""#),
            (
                r#""type":"input_json_delta""#,
                r#""type":"input_json_delta","partial_json":"x""#,
            ),
            (
                r#""type":"input_json_delta""#,
                r#""type":"input_\u006ason_delta""#,
            ),
            (r#""type":"input_json_delta""#, r#""type":"text_delta""#),
            (
                r#""type":"input_json_delta""#,
                r#""kind":"input_json_delta""#,
            ),
            (r#""partial_json":"#, r#""partial_json":null,"x":"#),
            (r#""partial_json":"#, r#""partial_json":7,"x":"#),
            (r#""partial_json":"#, r#""text":[1],"partial_json":"#),
            (r#""partial_json":"#, r#""tool_calls":[],"partial_json":"#),
            (r#""text":"#, r#""text":{"a":1},"x":"#),
            (r#""delta":{"#, r#""delta":null,"x":{"#),
            (r#""delta":{"#, r#""delta":[{"#),
            (r#""delta":{"#, r#""delta":{"type":null,"#),
            (
                r#""type":"content_block_stop""#,
                r#""type":"content_block_stop","delta":{"type":"input_json_delta"}"#,
            ),
            (
                r#""type":"content_block_stop""#,
                r#""type":"content_block_start""#,
            ),
            (
                r#""type":"content_block_delta""#,
                r#""type":"content_block_delta","type":"ping""#,
            ),
            (r#""type":"message_delta""#, r#""type":"message_start""#),
            (r#""type":"message_start""#, r#""type":"message_delta""#),
            (r#""role":"assistant""#, r#""role":"user""#),
            (r#""type":"message","#, r#""type":"msg","#),
            (
                r#""content":[]"#,
                r#""content":[{"type":"tool_use","id":"t","name":"f","input":{}}]"#,
            ),
            (r#""content":[]"#, r#""content":null"#),
            (r#""content":[]"#, r#""content":"x""#),
            (r#""content":[]"#, r#""content":[ ]"#),
            (r#""input":{}"#, r#""input":null"#),
            (r#""input":{}"#, r#""input":[1]"#),
            (r#""input":{}"#, r#""input":"{}""#),
            (r#""input":{}"#, r#""input":{},"input":{}"#),
            (r#""input":{}"#, r#""input":{"a":1e400}"#),
            (r#""type":"tool_use""#, r#""type":"tool_result""#),
            (r#""type":"tool_use""#, r#""type":"web_search_tool_result""#),
            (
                r#""type":"tool_use""#,
                r#""type":"tool_use","tool_use_id":"x""#,
            ),
            (r#""name":"get_weather""#, r#""name":"get_w\u0065ather""#),
            (r#""usage":{"#, r#""usage":null,"usage":{"#),
        ];
        swaps
            .iter()
            .filter(|(from, _)| event.contains(from))
            .map(|(from, to)| event.replacen(from, to, 1))
            .chain([
                event.replacen('{', r#"{"usage":{},"#, 1),
                event.replacen('{', r#"{"index":0,"#, 1),
                event.replacen("ping", "pong", 1),
            ])
            .collect()
    }

    /// Every event the short path takes says what the general reading
    /// says (the debug builds' comparison, [`same_light`]), over the same
    /// corpus as the Chat chunks' and the events above, mutated.
    #[test]
    fn an_event_on_the_short_path_reads_as_the_general_reading_reads_it() {
        let taken = taken(&EVENTS, mutations, |text, limits, depth| {
            let Some((kind, light)) = read(text, depth) else {
                return false;
            };
            same_light(text, kind, &light, limits);
            true
        });
        assert!(taken > 500, "{taken} taken");
    }

    /// The events of the Anthropic stream fixtures (but a tool result's or
    /// a thinking block's start) take the short path.
    #[test]
    fn real_events_take_the_short_path() {
        let mut events = 0;
        for (path, data) in fixture_events("anthropic") {
            // A thinking block's keys are rare ones (the general reader's).
            if !data.contains("tool_result") && !data.contains("\"thinking\"") {
                assert!(read(&data, 128).is_some(), "{path}: {data}");
                events += 1;
            }
        }
        assert!(events > 30, "{events} events");
        for event in &EVENTS[..12] {
            assert!(read(event, 128).is_some(), "{event}");
        }
    }
}
