//! A Vercel AI SDK UI message stream part read on a short path, its text
//! read once, straight into what it says ([`Light`]): a call's start, its
//! input deltas (most of a stream's parts) and its input, the text and
//! reasoning parts, the steps.
//!
//! As for a Chat chunk ([`chunk`](super::chunk)), the general reading
//! reads a part into its probe, into what the decoder reads of it, by
//! census and for its nesting; for a part of the shape below what those
//! say is known in advance. Anything else gives up (`None`) and the part
//! is read the general way: a key of the table this module does not name
//! (but for a `null`), a rare key, another spelling of a key, a key given
//! twice or escaped, a key of no table but those named below, a value of
//! another type than the one named below, an escaped type, id or name,
//! another part type (a call's error or output, an approval, a source,
//! data), nesting past the bound, and anything the fast reader itself
//! gives up on.
//!
//! ```text
//! {"type": "start" | "start-step" | "finish-step" | "finish" | "text-start" | "text-delta"
//!          | "text-end" | "reasoning-start" | "reasoning-delta" | "reasoning-end"
//!          | "tool-input-start" | "tool-input-delta" | "tool-input-available",
//!  "id": null | a string, "delta": null | a string (a text or reasoning part's),
//!  "toolCallId", "toolName", "inputTextDelta": null | a string,
//!  "providerExecuted": null | true | false,
//!  "input": any (a call's input, when its input is available),
//!  "dynamic", "messageId", "providerMetadata", "title", "finishReason",
//!  "messageMetadata": any}
//! ```
//! (`type` is required; so is an SSE event name, when the stream gives
//! one, equal to it: the caller's to see.) Debug builds read every part
//! taken here the general way too and assert that both say the same
//! ([`Assembler`]).
//!
//! [`Assembler`]: crate::detect::stream::Assembler

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::{Field, Scan};
use crate::detect::stream::vercel::{Light, Text, QUIET};

/// The keys of no table a part's root may hold: the input delta and the
/// provider flag its probe reads, and those the SDK sends beside them
/// (skipped).
pub(super) const ROOT_KEYS: [&str; 8] = [
    "inputTextDelta",
    "providerExecuted",
    "dynamic",
    "messageId",
    "providerMetadata",
    "title",
    "finishReason",
    "messageMetadata",
];

/// What a part's root holds, read.
#[derive(Default)]
struct Root<'a> {
    kind: Option<&'a str>,
    id: Option<&'a str>,
    name: Option<&'a str>,
    delta: Option<Text<'a>>,
    hosted: bool,
    input: Option<&'a str>,
}

/// Read `text` (whitespace around it trimmed), one whole JSON document,
/// as a part of the short path's shape within `max_depth`: its type and
/// what it says; `None` when it is not one, and the general reading must
/// read it.
pub(crate) fn read(text: &str, max_depth: usize) -> Option<(&str, Light<'_>)> {
    let mut scan = Scan::new(text, None, max_depth);
    if scan.peek()? != b'{' {
        return None;
    }
    let mut root = Root::default();
    scan.fields_with(&ROOT_KEYS, true, |scan, key| match key {
        Ok(Field::kind) => {
            root.kind = Some(scan.plain()?);
            Some(())
        }
        // A part's own id (a text part's), read by no reader.
        Ok(Field::id) => {
            let mut id = None;
            scan.plain_or_null(&mut id)
        }
        // A text or reasoning delta: text, read by no reader.
        Ok(Field::delta) if scan.peek()? == b'"' => scan.skip(),
        Ok(Field::toolCallId) => scan.plain_or_null(&mut root.id),
        Ok(Field::toolName) => scan.plain_or_null(&mut root.name),
        Ok(Field::input) if scan.peek()? != b'n' => {
            let start = scan.at;
            scan.skip()?;
            // JSON as serde reads it, as the probe holds it.
            let raw = serde_json::from_str::<&RawValue>(&scan.text[start..scan.at]).ok()?;
            root.input = Some(raw.get());
            Some(())
        }
        Err(0) if scan.peek()? == b'"' => {
            // Decoded where it is kept, when it holds escapes.
            let start = scan.at;
            let (text, escaped) = scan.string()?;
            root.delta = Some(if escaped {
                Text::Literal(&scan.text[start..scan.at])
            } else {
                Text::Decoded(Cow::Borrowed(text))
            });
            Some(())
        }
        Err(1) => match scan.peek()? {
            b't' => {
                root.hosted = true;
                scan.literal("true")
            }
            b'f' => scan.literal("false"),
            _ => scan.null(),
        },
        Ok(_) | Err(0) => scan.null(),
        Err(_) => scan.skip(),
    })?;
    if !scan.at_end() {
        return None;
    }
    let Root {
        kind,
        id,
        name,
        delta,
        hosted,
        input,
    } = root;
    let kind = kind?;
    let light = match kind {
        kind if QUIET.contains(&kind) => Light::Quiet,
        "start-step" => Light::StartStep,
        "finish-step" => Light::FinishStep,
        "finish" => Light::Finish,
        "tool-input-start" => Light::Start {
            id: Cow::Borrowed(id.unwrap_or_default()),
            name: name.map(Cow::Borrowed),
            hosted,
        },
        "tool-input-delta" => Light::Delta {
            id: Cow::Borrowed(id.unwrap_or_default()),
            delta: delta.unwrap_or(Text::Decoded(Cow::Borrowed(""))),
        },
        "tool-input-available" => Light::Available {
            id: Cow::Borrowed(id.unwrap_or_default()),
            name: name.map(Cow::Borrowed),
            hosted,
            input,
        },
        _ => return None,
    };
    // A call's input is read by its part alone.
    if input.is_some() && !matches!(light, Light::Available { .. }) {
        return None;
    }
    Some((kind, light))
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::detect::fast::chunk::tests::{fixture_events, taken};
    use crate::detect::stream::same_vercel;

    /// A part of each kind taken here, as the SDK streams them; then three
    /// left to the general reading.
    const PARTS: [&str; 17] = [
        r#"{"type":"start","messageId":"msg-123"}"#,
        r#"{"type":"start-step"}"#,
        r#"{"type":"text-start","id":"0"}"#,
        r#"{"type":"text-delta","id":"0","delta":"Let me"}"#,
        r#"{"type":"text-end","id":"0"}"#,
        r#"{"type":"reasoning-delta","delta":"**Getting","id":"run-1"}"#,
        r#"{"type":"tool-input-start","toolCallId":"call_1","toolName":"get_weather","dynamic":true}"#,
        r#"{"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":"{\"city\":\"Z\u00fcrich"}"#,
        r#"{"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":""}"#,
        r#"{"type":"tool-input-available","toolCallId":"call_1","toolName":"get_weather","input":{"city":"Zürich","days":7.0}}"#,
        r#"{"type":"tool-input-start","toolCallId":"srv_1","toolName":"web_search","providerExecuted":true}"#,
        r#"{"type":"finish-step"}"#,
        r#"{"type":"finish","finishReason":"tool-calls"}"#,
        r#"{"type":"tool-input-available","toolCallId":"call_2","toolName":"now","input":null,"providerMetadata":{"x":{"y":1}}}"#,
        r#"{"type":"tool-input-error","toolCallId":"call_3","toolName":"f","input":"{\"a","errorText":"Invalid input"}"#,
        r#"{"type":"tool-output-available","toolCallId":"call_1","output":{"temperature":21}}"#,
        r#"{"type":"data-weather","data":{"city":"Paris"}}"#,
    ];

    /// What a part becomes when one of the things the short path looks at
    /// is changed.
    fn mutations(part: &str) -> Vec<String> {
        let swaps: [(&str, &str); 30] = [
            (r#""type":"text-delta""#, r#""type":"tool-call""#),
            (
                r#""type":"text-delta""#,
                r#""type":"text-delta","type":"ping""#,
            ),
            (r#""type":"text-delta""#, r#""type":"text-d\u0065lta""#),
            (
                r#""type":"tool-input-delta""#,
                r#""type":"tool-call-delta""#,
            ),
            (
                r#""type":"tool-input-start""#,
                r#""type":"tool-input-error""#,
            ),
            (
                r#""type":"tool-input-start""#,
                r#""type":"content_block_start""#,
            ),
            (r#""type":"tool-input-available""#, r#""type":"tool-call""#),
            (r#""type":"start-step""#, r#""type":"response.created""#),
            (r#""toolCallId":"call_1""#, r#""toolCallId":7"#),
            (r#""toolCallId":"call_1""#, r#""toolCallId":null"#),
            (
                r#""toolCallId":"call_1""#,
                r#""toolCallId":"call_1","toolCallId":"x""#,
            ),
            (r#""toolCallId":"call_1""#, r#""toolCallId":"c\u0061ll_1""#),
            (r#""toolCallId":"call_1""#, r#""tool_call_id":"call_1""#),
            (r#""toolName":"get_weather""#, r#""toolName":["f"]"#),
            (r#""toolName":"get_weather""#, r#""toolName":null"#),
            (r#""toolName":"get_weather""#, r#""name":"get_weather""#),
            (r#""inputTextDelta":"#, r#""argsTextDelta":"#),
            (
                r#""inputTextDelta":"#,
                r#""inputTextDelta":null,"dynamic":"#,
            ),
            (r#""inputTextDelta":"#, r#""inputTextDelta":5,"dynamic":"#),
            (
                r#""inputTextDelta":"#,
                r#""inputTextDelta":"a","inputTextDelta":"#,
            ),
            (r#""input":{"#, r#""input":null,"dynamic":{"#),
            (r#""input":{"#, r#""args":{"#),
            (r#""input":{"#, r#""input":{"a":1e400},"dynamic":{"#),
            (r#""input":{"#, r#""input":{"a":1},"input":{"#),
            (
                r#""delta":"Let me""#,
                r#""delta":{"tool_calls":[{"id":"x"}]}"#,
            ),
            (r#""delta":"Let me""#, r#""delta":null"#),
            (r#""id":"0""#, r#""id":{"a":1}"#),
            (r#""providerExecuted":true"#, r#""providerExecuted":"true""#),
            (r#""providerExecuted":true"#, r#""providerExecuted":false"#),
            (
                r#""dynamic":true"#,
                r#""dynamic":{"tool_calls":[{"function":{"name":"f"}}]}"#,
            ),
        ];
        swaps
            .iter()
            .filter(|(from, _)| part.contains(from))
            .map(|(from, to)| part.replacen(from, to, 1))
            .chain([
                part.replacen('{', r#"{"error":{"message":"x"},"#, 1),
                part.replacen('{', r#"{"choices":null,"#, 1),
                part.replacen('{', r#"{"input":{"a":1},"#, 1),
                part.replacen('{', r#"{"errorText":"x","#, 1),
                part.replacen(
                    '{',
                    r#"{"content":[{"type":"tool_use","id":"t","name":"f","input":{}}],"#,
                    1,
                ),
                part.replacen('{', r#"{"title":"x","#, 1),
                part.replacen('{', r#"{"providerExecuted":null,"#, 1),
            ])
            .collect()
    }

    /// Every part the short path takes says what the general reading says
    /// (the debug builds' comparison, [`same_vercel`]), over the same
    /// corpus as the Chat chunks' and the parts above, mutated.
    #[test]
    fn a_part_on_the_short_path_reads_as_the_general_reading_reads_it() {
        let taken = taken(&PARTS, mutations, |text, limits, depth| {
            let Some((kind, light)) = read(text, depth) else {
                return false;
            };
            same_vercel(text, kind, &light, limits);
            true
        });
        assert!(taken > 300, "{taken} taken");
    }

    /// The parts of the Vercel stream fixtures (but results, approvals and
    /// data) take the short path; the parts above, but the last three.
    #[test]
    fn real_parts_take_the_short_path() {
        let mut parts = 0;
        for (path, data) in fixture_events("vercel-ai") {
            let kind = serde_json::from_str::<serde_json::Value>(&data)
                .ok()
                .and_then(|part| part["type"].as_str().map(str::to_owned));
            let Some(kind) = kind else {
                continue;
            };
            if kind.starts_with("tool-output")
                || kind.starts_with("tool-approval")
                || kind.starts_with("data-")
                || kind == "tool-input-error"
            {
                assert!(read(&data, 128).is_none(), "{path}: {data}");
                continue;
            }
            assert!(read(&data, 128).is_some(), "{path}: {data}");
            parts += 1;
        }
        assert!(parts > 40, "{parts} parts");
        for part in &PARTS[..14] {
            assert!(read(part, 128).is_some(), "{part}");
        }
        for part in &PARTS[14..] {
            assert!(read(part, 128).is_none(), "{part}");
        }
    }
}
