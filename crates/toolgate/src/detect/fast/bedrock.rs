//! A Bedrock ConverseStream event (the AWS SDK's JSON shape, one event a
//! line) read on a short path: the event's text read once, straight into
//! what it says ([`Light`]), for the events real streams send.
//!
//! As for a Chat chunk ([`chunk`](super::chunk)), the general reading
//! reads an event into its probe, into the decoder's structs (a serde
//! pass for each of its keys) and by census against the whole position
//! table; for an event of the shape below what those say is known in
//! advance: the probe routes it to the Bedrock decoder, and the census
//! finds nothing (every key at the root is one of no table). Anything else
//! gives up (`None`) and the event is read the general way: a key of the
//! table at the root (but for a `null`), any other key of no table there
//! (an exception's among them), a key given twice or escaped, a rare key
//! or another spelling of a key of the table, a value of another type than
//! the one named below, a result block (`toolResult`), a block's key its
//! event does not read (a `delta` in a block's start or stop, a `start` in
//! its delta or stop), an escaped id, name, type or status, nesting past
//! the bound, and anything the fast reader itself gives up on. The values
//! of other keys below the root (`p`, `text`, `reasoningContent`, a
//! start's `input`, ...) are skipped, as serde skips them.
//!
//! ```text
//! {"messageStart": any but null}
//! {"contentBlockStart": {"contentBlockIndex": null | an integer,
//!                        "start": null | {"toolUse": null | {"toolUseId", "name", "type", "status":
//!                                                                null | a string,
//!                                                            "input": any}}}}
//! {"contentBlockDelta": {"contentBlockIndex": null | an integer,
//!                        "delta": null | {"toolUse": null | {"toolUseId", "name", "type", "status":
//!                                                                null | a string,
//!                                                            "input": null | a string}}}}
//! {"contentBlockStop": {"contentBlockIndex": null | an integer}}
//! {"messageStop": any but null}   {"metadata": any but null}
//! ```
//! (at least one of these keys; several in one event are applied in the
//! order above, as the decoder applies them). Debug builds (the tests, the
//! fuzz targets) read every event taken here the general way too and
//! assert that both say the same, the census finds nothing, and the
//! nesting is within the bound ([`Assembler`]).
//!
//! [`Assembler`]: crate::detect::stream::Assembler

use std::borrow::Cow;

use super::{Field, Scan};
use crate::detect::stream::bedrock::{Light, StartCall};
use crate::model::CallKind;

/// The keys of an event's root: its own, each a key of no table. Any
/// other key of no table gives up.
pub(super) const ROOT_KEYS: [&str; 6] = [
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
];

/// A block's own keys, of no table.
pub(super) const BLOCK_KEYS: [&str; 2] = ["contentBlockIndex", "start"];

/// A `toolUse`'s own key, of no table.
pub(super) const TOOL_KEYS: [&str; 1] = ["toolUseId"];

/// What a block (the value of `contentBlockStart`, `contentBlockDelta` or
/// `contentBlockStop`) holds.
#[derive(Default)]
struct Block<'a> {
    index: Option<u64>,
    /// `start` is an object.
    start: bool,
    /// The call its `toolUse` opens, if any.
    call: Option<StartCall<'a>>,
    /// `delta` is an object.
    delta: bool,
    /// Its `toolUse`'s input fragment, if it has one.
    input: Option<Cow<'a, str>>,
}

/// Read `text` (whitespace around it trimmed), one whole JSON document,
/// as an event of the short path's shape within `max_depth`; `None` when
/// it is not one, and the general reading must read it.
pub(crate) fn read(text: &str, max_depth: usize) -> Option<Light<'_>> {
    let (light, end) = read_first(text, max_depth)?;
    text[end..]
        .bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .then_some(light)
}

/// Read the JSON document that starts `text` (at its brace), followed by
/// anything, as [`read`] reads a whole one: the event and the document's
/// length (to its closing brace), for a JSON sequence read where it
/// stands ([`Splitter`](crate::detect::stream::sequence::Splitter)).
pub(crate) fn read_first(text: &str, max_depth: usize) -> Option<(Light<'_>, usize)> {
    let mut scan = Scan::new(text, None, max_depth);
    if scan.peek()? != b'{' {
        return None;
    }
    let mut light = Light::default();
    let mut any = false;
    scan.fields_with(&ROOT_KEYS, true, |scan, key| {
        let Err(at) = key else {
            return scan.null();
        };
        if scan.peek()? == b'n' {
            // Absent to the probe: left to the general reading.
            return None;
        }
        any = true;
        match at {
            0 => {
                light.message_start = true;
                scan.skip()
            }
            1 => {
                let block = scan.bedrock_block()?;
                if block.delta {
                    return None;
                }
                if block.start {
                    light.start = Some((block.index.unwrap_or(0), block.call));
                }
                Some(())
            }
            2 => {
                let block = scan.bedrock_block()?;
                if block.start {
                    return None;
                }
                light.delta = block.input.map(|input| (block.index.unwrap_or(0), input));
                Some(())
            }
            3 => {
                let block = scan.bedrock_block()?;
                if block.start || block.delta {
                    return None;
                }
                light.stop = Some(block.index.unwrap_or(0));
                Some(())
            }
            4 => {
                light.message_stop = true;
                scan.skip()
            }
            _ => scan.skip(),
        }
    })?;
    any.then_some((light, scan.at))
}

impl<'a> Scan<'a> {
    /// A block: its index, and its `start` and `delta` when they are
    /// objects (`null` is none).
    fn bedrock_block(&mut self) -> Option<Block<'a>> {
        if self.peek()? != b'{' {
            return None;
        }
        let mut block = Block::default();
        self.fields_with(&BLOCK_KEYS, false, |scan, key| match key {
            Err(0) => scan.index_or_null(&mut block.index),
            Err(_) if scan.peek()? == b'{' => {
                block.start = true;
                let mut tool = None;
                scan.holder(false, &mut tool)?;
                block.call = tool.map(|(call, _)| call);
                Some(())
            }
            Ok(Field::delta) if scan.peek()? == b'{' => {
                block.delta = true;
                let mut tool = None;
                scan.holder(true, &mut tool)?;
                block.input = tool.map(|(_, input)| input);
                Some(())
            }
            Err(_) | Ok(Field::delta) => scan.null(),
            Ok(_) => scan.skip(),
        })?;
        Some(block)
    }

    /// A block's `start` or `delta` (`fragment`): its `toolUse`, if any,
    /// into `tool`. A result (`toolResult`) gives up.
    fn holder(
        &mut self,
        fragment: bool,
        tool: &mut Option<(StartCall<'a>, Cow<'a, str>)>,
    ) -> Option<()> {
        self.fields(|scan, field| match field {
            Field::toolUse if scan.peek()? == b'{' => {
                *tool = Some(scan.tool_use(fragment)?);
                Some(())
            }
            Field::toolUse | Field::toolResult => scan.null(),
            _ => scan.skip(),
        })
    }

    /// A `toolUse`: the call it starts, and its `input` as a fragment
    /// (`fragment`: a delta's, a string or `null`; else any value,
    /// skipped).
    fn tool_use(&mut self, fragment: bool) -> Option<(StartCall<'a>, Cow<'a, str>)> {
        let (mut id, mut name, mut kind, mut status) = (None, None, None, None);
        let mut input = Cow::Borrowed("");
        self.fields_with(&TOOL_KEYS, false, |scan, key| match key {
            Err(_) => scan.plain_or_null(&mut id),
            Ok(Field::name) => scan.plain_or_null(&mut name),
            Ok(Field::kind) => scan.plain_or_null(&mut kind),
            Ok(Field::status) => scan.plain_or_null(&mut status),
            Ok(Field::input) if fragment && scan.peek()? == b'"' => {
                input = scan.unquoted()?;
                Some(())
            }
            Ok(Field::input) if fragment => {
                input = Cow::Borrowed("");
                scan.null()
            }
            Ok(_) => scan.skip(),
        })?;
        let call = StartCall {
            kind: match kind {
                Some("server_tool_use") => CallKind::Hosted,
                _ => CallKind::Function,
            },
            id: id.map(Cow::Borrowed),
            name: name.map(Cow::Borrowed),
        };
        Some((call, input))
    }
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::detect::fast::chunk::tests::taken;
    use crate::detect::stream::same_bedrock;

    /// Events of each kind taken here, as Bedrock streams them; then two
    /// left to the general reading.
    const EVENTS: [&str; 12] = [
        r#"{"messageStart":{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS","role":"assistant"}}"#,
        r#"{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"text":"Let me look"},"p":"abcd"}}"#,
        r#"{"contentBlockStop":{"contentBlockIndex":0,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH"}}"#,
        r#"{"contentBlockStart":{"contentBlockIndex":1,"p":"abc","start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_1","type":"tool_use"}}}}"#,
        r#"{"contentBlockDelta":{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":\"Z\u00fcrich\""}},"p":"abcdefghijklm"}}"#,
        r#"{"contentBlockDelta":{"contentBlockIndex":1,"delta":{"toolUse":{"input":""}},"p":"a"}}"#,
        r#"{"contentBlockStart":{"contentBlockIndex":0,"start":{"toolUse":{"name":"nova_code_interpreter","toolUseId":"tooluse_2","type":"server_tool_use"}}}}"#,
        r#"{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Thinking"}}}}"#,
        r#"{"messageStop":{"p":"abcdefghijklmnopqrstuvwxyzAB","stopReason":"tool_use"}}"#,
        r#"{"metadata":{"metrics":{"latencyMs":1600},"p":"abc","usage":{"inputTokens":1002,"outputTokens":59,"totalTokens":1061}}}"#,
        r#"{"contentBlockStart":{"contentBlockIndex":1,"start":{"toolResult":{"status":"success","toolUseId":"tooluse_2","type":"nova_code_interpreter_result"}}}}"#,
        r#"{"contentBlockDelta":{"contentBlockIndex":1,"delta":{"toolResult":[{"json":{"stdOut":"7006652"}}]}}}"#,
    ];

    /// What an event becomes when one of the things the short path looks
    /// at is changed.
    fn mutations(event: &str) -> Vec<String> {
        let swaps: [(&str, &str); 40] = [
            (
                r#""contentBlockIndex":1"#,
                r#""contentBlockIndex":1,"contentBlockIndex":2"#,
            ),
            (r#""contentBlockIndex":1"#, r#""contentBlockIndex":-1"#),
            (r#""contentBlockIndex":1"#, r#""contentBlockIndex":1.5"#),
            (r#""contentBlockIndex":1"#, r#""contentBlockIndex":1e0"#),
            (r#""contentBlockIndex":1"#, r#""contentBlockIndex":null"#),
            (r#""contentBlockIndex":1"#, r#""contentBlockIndex":"1""#),
            (r#""contentBlockIndex":1"#, r#""contentBlock\u0049ndex":1"#),
            (r#""contentBlockIndex":1"#, r#""x":1"#),
            (
                r#""contentBlockIndex":0"#,
                r#""contentBlockIndex":0,"start":{"toolUse":{"name":"f"}}"#,
            ),
            (
                r#""contentBlockIndex":0"#,
                r#""contentBlockIndex":0,"start":null"#,
            ),
            (
                r#""contentBlockIndex":0"#,
                r#""contentBlockIndex":0,"delta":{"toolUse":{}}"#,
            ),
            (
                r#""contentBlockIndex":0"#,
                r#""contentBlockIndex":0,"delta":null"#,
            ),
            (
                r#""contentBlockIndex":0"#,
                r#""contentBlockIndex":0,"delta":[1]"#,
            ),
            (
                r#""contentBlockIndex":0"#,
                r#""contentBlockIndex":0,"tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]"#,
            ),
            (
                r#""contentBlockIndex":0"#,
                r#""contentBlockIndex":0,"toolUse":{"name":"f"}"#,
            ),
            (r#""start":{"#, r#""start":{"toolResult":null,"#),
            (
                r#""start":{"#,
                r#""start":{"toolResult":{"toolUseId":"x"},"#,
            ),
            (r#""start":{"#, r#""start":{"toolUse":null,"#),
            (r#""start":{"#, r#""start":[{"#),
            (r#""start":{"#, r#""start":"x","y":{"#),
            (r#""toolUse":{"#, r#""toolUse":null,"x":{"#),
            (r#""toolUse":{"#, r#""tool_use":{"#),
            (r#""toolUse":{"#, r#""ToolUse":{"#),
            (r#""toolUse":{"#, r#""toolUse":{"input":{"a":1},"#),
            (r#""toolUse":{"#, r#""toolUse":{"input":7,"#),
            (r#""toolUse":{"#, r#""toolUse":{"status":"error","#),
            (r#""toolUse":{"#, r#""toolUse":{"status":5,"#),
            (
                r#""toolUse":{"#,
                r#""toolUse":{"toolUseId":"a","toolUseId":"b","#,
            ),
            (r#""toolUse":{"#, r#""toolUse":{"name":"a","name":"b","#),
            (r#""input":""#, r#""input":null,"x":""#),
            (r#""input":""#, r#""input":"x","input":""#),
            (r#""name":"get_weather""#, r#""name":"get_w\u0065ather""#),
            (r#""name":"get_weather""#, r#""name":"""#),
            (r#""name":"get_weather""#, r#""name":null"#),
            (r#""name":"get_weather""#, r#""name":["f"]"#),
            (r#""type":"tool_use""#, r#""type":"server_tool_use""#),
            (r#""type":"tool_use""#, r#""type":7"#),
            (r#""type":"server_tool_use""#, r#""type":"tool_use""#),
            (r#""text":"#, r#""text":{"a":[{"b":{}}]},"x":"#),
            (
                r#""p":"#,
                r#""p":{"tool_calls":[{"function":{"name":"f"}}]},"q":"#,
            ),
        ];
        swaps
            .iter()
            .filter(|(from, _)| event.contains(from))
            .map(|(from, to)| event.replacen(from, to, 1))
            .chain([
                event.replacen('{', r#"{"messageStop":{},"#, 1),
                event.replacen('{', r#"{"messageStart":{"role":"assistant"},"#, 1),
                event.replacen('{', r#"{"contentBlockStop":{"contentBlockIndex":1},"#, 1),
                event.replacen('{', r#"{"metadata":null,"#, 1),
                event.replacen('{', r#"{"choices":null,"#, 1),
                event.replacen('{', r#"{"choices":[],"#, 1),
                event.replacen('{', r#"{"type":"x","#, 1),
                event.replacen('{', r#"{"error":{"message":"x"},"#, 1),
                event.replacen('{', r#"{"p":"x","#, 1),
                event.replacen('{', r#"{"throttlingException":{"message":"x"},"#, 1),
                event.replacen('{', r#"{"candidates":null,"#, 1),
                event.replacen('{', r#"{"messageStart":null,"#, 1),
            ])
            .collect()
    }

    /// Every event the short path takes says what the general reading
    /// says (the debug builds' comparison, [`same_bedrock`]), over the
    /// same corpus as the Chat chunks' and the events above, mutated.
    #[test]
    fn an_event_on_the_short_path_reads_as_the_general_reading_reads_it() {
        let taken = taken(&EVENTS, mutations, |text, limits, depth| {
            let Some(light) = read(text, depth) else {
                return false;
            };
            same_bedrock(text, &light, limits);
            true
        });
        assert!(taken > 500, "{taken} taken");
    }

    /// A JSON sequence read whole, its events read where they stand
    /// (`Assembler::push` of one chunk), reports and detects what it does
    /// framed event by event (one byte a chunk, and `push_until`): around
    /// each event above and each mutation, and for every fixture.
    #[test]
    fn events_read_where_they_stand_read_as_framed() {
        use crate::detect::stream::{Assembler, StreamEvent};
        use crate::{Framing, Limits};
        let read = |chunks: &[&[u8]], until: bool| {
            let mut stream = Assembler::new(Framing::JsonSequence, Limits::default());
            let mut events: Vec<StreamEvent> = Vec::new();
            for chunk in chunks {
                events.extend(if until {
                    stream.push_until(chunk, |_| false)
                } else {
                    stream.push(chunk)
                });
            }
            events.extend(stream.close());
            (events, stream.finish())
        };
        let mut bodies: Vec<String> = Vec::new();
        for event in EVENTS {
            for one in std::iter::once(event.to_owned()).chain(mutations(event)) {
                bodies.push(format!(
                    "{}\n{}\n {one}\r\n{}\n{}\n{}",
                    EVENTS[0], EVENTS[3], EVENTS[4], EVENTS[2], EVENTS[8]
                ));
            }
        }
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bedrock");
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                bodies.push(std::fs::read_to_string(&path).expect("fixture"));
            }
        }
        for body in &bodies {
            let whole = read(&[body.as_bytes()], false);
            let bytes: Vec<&[u8]> = body.as_bytes().chunks(1).collect();
            assert_eq!(whole, read(&bytes, false), "{body}");
            assert_eq!(whole, read(&[body.as_bytes()], true), "{body}");
        }
        assert!(bodies.len() > 150, "{} bodies", bodies.len());
    }

    /// The events of the Bedrock stream fixtures (but a result block's)
    /// take the short path, and the variants that must not are left.
    #[test]
    fn real_events_take_the_short_path() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bedrock");
        let mut events = 0;
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).expect("fixture").lines() {
                if !line.contains("toolResult") {
                    assert!(read(line, 128).is_some(), "{}: {line}", path.display());
                    events += 1;
                }
            }
        }
        assert!(events > 20, "{events} events");
        for event in &EVENTS[..10] {
            assert!(read(event, 128).is_some(), "{event}");
        }
        for event in &EVENTS[10..] {
            assert!(read(event, 128).is_none(), "{event}");
        }
        let light = read(EVENTS[4], 128).unwrap();
        assert_eq!(light.delta, Some((1, "{\"city\":\"Z\u{fc}rich\"".into())));
        let light = read(EVENTS[6], 128).unwrap();
        let (index, call) = light.start.unwrap();
        assert_eq!(index, 0);
        assert_eq!(call.unwrap().kind, crate::model::CallKind::Hosted);
        let left = [
            r#"{"contentBlockStart":{"start":{"toolUse":{"name":"f"}},"delta":{"text":"x"}}}"#,
            r#"{"contentBlockStop":{"contentBlockIndex":0,"start":{}}}"#,
            r#"{"contentBlockDelta":{"delta":{"toolUse":{"input":{"a":1}}}}}"#,
            r#"{"contentBlockDelta":null}"#,
            r#"{"internalServerException":{"message":"x"}}"#,
            r#"{"p":"x"}"#,
            r"{}",
        ];
        for event in left {
            assert!(read(event, 128).is_none(), "{event}");
        }
    }
}
