//! A Gemini stream event (`streamGenerateContent?alt=sse`) read on a short
//! path: the event's text read once, straight into what it says
//! ([`Light`]), for the events real streams send.
//!
//! As for a Chat chunk ([`chunk`](super::chunk)), the general reading
//! reads an event into its probe, into the decoder's structs (a serde pass
//! for the candidates, another for each content, part and call) and by
//! census against the whole position table; for an event of the shape
//! below what those say is known in advance: the probe routes it to the
//! Gemini decoder, every call is whole, and the census finds no call where
//! that decoder does not read one. Anything else gives up (`None`) and the
//! event is read the general way: a key of the table this module does not
//! name (but for a `null`), a rare key, another spelling of a key, a key
//! given twice or escaped, a key of no table at the root but those named
//! below, a value of another type than the one named below, another role,
//! an escaped id or name, a call streamed by path (`partialArgs`,
//! `willContinue`), a result, more than 16 candidates or parts, nesting
//! past the bound, and anything the fast reader itself gives up on. Keys
//! of no table below the root (`safetyRatings`, `thoughtSignature`,
//! `text`, ...) are skipped, as every general reader skips them.
//!
//! ```text
//! {"candidates": [{"index": null | an integer, "finishReason": any,
//!                  "content": {"role": "model",
//!                              "parts": [{} | {"functionCall": {"id": null | a string,
//!                                                               "name": a string,
//!                                                               "args": any}}]}}],
//!  "usageMetadata", "modelVersion", "responseId", "createTime": any}
//! ```
//! (`candidates` is required, and a call's `name`, not empty.) Debug
//! builds (the tests, the fuzz targets) read every event taken here the
//! general way too and assert that both say the same, the census finds
//! nothing the decoder would not read, and the nesting is within the bound
//! ([`Assembler`](crate::detect::stream::Assembler)).

use std::borrow::Cow;

use smallvec::SmallVec;

use super::{Field, InPassing, Scan, Value};
use crate::detect::node::ReadArguments;
use crate::detect::stream::gemini::{Light, LightCandidate, WholeCall};

/// The keys of no table an event's root may hold, with any value: what
/// Gemini and Vertex send beside `candidates`. Any other key of no table
/// (a stream decoder's, `error`, ...) gives up.
const ROOT_KEYS: [&str; 4] = ["usageMetadata", "modelVersion", "responseId", "createTime"];

/// The keys of no table a candidate's reading takes: its number and its
/// finish reason.
const CANDIDATE_KEYS: [&str; 2] = ["index", "finishReason"];

/// At most this many candidates, and parts a candidate, on the short path.
const MOST: usize = 16;

/// Read `text` (whitespace around it trimmed), one whole JSON document,
/// as a Gemini event of the short path's shape within `max_depth`, into
/// `light` (empty); `None` when it is not one, and the general reading
/// must read it (what `light` then holds means nothing).
pub(crate) fn read<'a>(text: &'a str, max_depth: usize, light: &mut Light<'a>) -> Option<()> {
    let mut scan = Scan::new(text, None, max_depth);
    if scan.peek()? != b'{' {
        return None;
    }
    let mut candidates = false;
    scan.fields_with(&ROOT_KEYS, true, |scan, key| match key {
        Ok(Field::candidates) => {
            candidates = true;
            scan.event_candidates(light)
        }
        Ok(_) => scan.null(),
        Err(_) => scan.skip(),
    })?;
    (candidates && scan.at_end()).then_some(())
}

impl<'a> Scan<'a> {
    /// An event's `candidates`, into `light`.
    fn event_candidates(&mut self, light: &mut Light<'a>) -> Option<()> {
        self.objects(|scan| {
            if light.candidates.len() == MOST {
                return None;
            }
            let before = light.calls.len();
            let (mut index, mut finish) = (None, false);
            scan.fields_with(&CANDIDATE_KEYS, false, |scan, key| match key {
                Err(0) => scan.index_or_null(&mut index),
                Err(_) => {
                    finish = scan.peek()? != b'n';
                    scan.skip()
                }
                Ok(Field::content) if scan.peek()? == b'{' => scan.event_content(&mut light.calls),
                Ok(_) => scan.null(),
            })?;
            light.candidates.push(LightCandidate {
                index,
                calls: light.calls.len() - before,
                finish,
            });
            Some(())
        })
    }

    /// A candidate's content: the model's, its whole calls pushed to
    /// `calls`.
    fn event_content(&mut self, calls: &mut SmallVec<[WholeCall<'a>; 4]>) -> Option<()> {
        let mut model = false;
        self.fields(|scan, field| match field {
            Field::role => {
                model = scan.plain()? == "model";
                model.then_some(())
            }
            Field::parts if scan.peek()? == b'[' => {
                let mut parts = 0;
                scan.objects(|scan| {
                    parts += 1;
                    if parts > MOST {
                        return None;
                    }
                    scan.event_part(calls)
                })
            }
            _ => scan.null(),
        })?;
        model.then_some(())
    }

    /// A part: its whole call, if any, pushed to `calls`.
    fn event_part(&mut self, calls: &mut SmallVec<[WholeCall<'a>; 4]>) -> Option<()> {
        self.fields(|scan, field| match field {
            Field::functionCall if scan.peek()? == b'{' => {
                let (mut id, mut name, mut args, mut tape) = (None, None, None, None);
                scan.fields(|scan, field| match field {
                    Field::id => scan.plain_or_null(&mut id),
                    Field::name => {
                        name = Some(scan.plain()?).filter(|name| !name.is_empty());
                        name.map(drop)
                    }
                    Field::args => {
                        // Read onto its tape in passing when it is an
                        // object the tape's reader takes, as a whole
                        // answer's are.
                        let (value, read) = scan.in_passing(Field::args)?;
                        let Value::Raw(raw) = value else {
                            return None;
                        };
                        args = Some(raw);
                        if let InPassing::Read(Some(ReadArguments::Tape(_, read))) = read {
                            tape = Some(read);
                        }
                        Some(())
                    }
                    _ => scan.null(),
                })?;
                calls.push(WholeCall {
                    id: id.map(Cow::Borrowed),
                    name: Cow::Borrowed(name?),
                    args,
                    tape,
                });
                Some(())
            }
            _ => scan.null(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::detect::stream::gemini::Light;

    #[test]
    fn events_of_the_shape_are_read_and_others_left_to_the_general_reading() {
        let taken = [
            r#"{"candidates":[{"content":{"parts":[{"text":"Let me"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"abc"}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"xyz"},{"functionCall":{"id":null,"name":"now"}}]},"finishReason":"STOP","safetyRatings":[]}]}"#,
            r#"{"candidates":[{"content":null,"finishReason":null,"index":null}],"error":null}"#,
            r#"{"candidates":[]}"#,
        ];
        for event in taken {
            assert!(read(event, 64, &mut Light::default()).is_some(), "{event}");
        }
        let mut light = Light::default();
        read(taken[1], 64, &mut light).unwrap();
        let candidate = &light.candidates[0];
        assert!(candidate.finish && candidate.index.is_none());
        assert_eq!(candidate.calls, 2);
        assert_eq!(
            light.calls[0].args.map(crate::detect::node::Raw::get),
            Some(r#"{"city":"Paris"}"#)
        );
        assert!(light.calls[1].args.is_none());
        let left = [
            // A call streamed by path, or continued.
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.a","stringValue":"x"}]}}]}}]}"#,
            // A result, another spelling, an escaped or empty name.
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionResponse":{"name":"f","response":{}}}]}}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"function_call":{"name":"f"}}]}}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"FunctionCall":{"name":"f"}}]}}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f\u0041"}}]}}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":""}}]}}]}"#,
            // Another role, an error, a key the probe reads, a key twice.
            r#"{"candidates":[{"content":{"role":"user","parts":[]}}]}"#,
            r#"{"candidates":[],"error":{"code":503}}"#,
            r#"{"candidates":[],"metadata":{}}"#,
            r#"{"candidates":[{"index":0,"index":1}]}"#,
            // A number of another kind, no candidates.
            r#"{"candidates":[{"index":-1}]}"#,
            r#"{"usageMetadata":{}}"#,
        ];
        for event in left {
            assert!(read(event, 64, &mut Light::default()).is_none(), "{event}");
        }
    }
}
