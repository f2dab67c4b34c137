//! A Chat Completions stream chunk read on a short path: the event's
//! text read once, straight into what the chunk says
//! ([`Chunk`]), for the chunks real streams send.
//!
//! The general reading of an event reads it three times and more: into
//! its probe (serde, the top-level keys of every stream format), into the
//! decoder's structs (serde again, level by level), and by census
//! against the whole position table (the fast document reader), after a
//! scan for its nesting. For a chunk of the shape below, what those say
//! is known in advance: the probe routes it to the Chat decoder, the
//! census finds no call where that decoder does not read one, and the
//! nesting is within the bound. The shape is narrow on purpose, as the
//! short path of whole answers ([`answer`](super::answer)) is: at every
//! level, a key of the table this module does not name (but for a
//! `null`), a rare key, another spelling of a key, a key given twice or
//! escaped, a value of another type than the one named below, another
//! role or call type, an escaped id, type or name, nesting past the
//! bound, a key at the root that is not one a chunk sends, too many
//! choices or fragments, and anything the fast reader itself gives up
//! on, make it give up (`None`), and the event is read the general way,
//! as before.
//!
//! ```text
//! {"id": any, "object": a string but "list", "model": any,
//!  "created", "service_tier", "system_fingerprint", "usage", ...: any,
//!  "choices": [{"index": null | an integer,
//!               "delta": null | {"role": null | "assistant",
//!                                "content": null | a string,
//!                                "tool_calls": null | [{"index": null | an integer,
//!                                                       "id": null | a string,
//!                                                       "type": null | "function",
//!                                                       "function": {"name": null | a string,
//!                                                                    "arguments": null | a string}}]},
//!               "finish_reason": null | a string}]}
//! ```
//! (`choices` and a fragment's `function` are required; the values of
//! keys of no table below the root are skipped, as every general reader
//! skips them.) Debug builds (the tests, the fuzz
//! targets) read every chunk taken here the general way too and assert
//! that both say the same, the census finds nothing the decoder would not
//! read, and the nesting is within the bound
//! ([`Assembler`](crate::detect::stream::Assembler)).

use std::borrow::Cow;

use smallvec::SmallVec;

use super::{Field, Key, Scan, Take, Value};
use crate::detect::stream::openai_chat::{ChoiceDelta, Chunk, Fragment};
use crate::model::CallKind;

/// The keys of no table a chunk's root may hold, with any value: what
/// OpenAI and the providers that copy it send beside `choices`. Any other
/// key of no table (a stream decoder's among them) gives up.
const ROOT_KEYS: [&str; 8] = [
    "created",
    "service_tier",
    "system_fingerprint",
    "usage",
    "obfuscation",
    "provider",
    "x_groq",
    "prompt_filter_results",
];

/// At most this many choices, and fragments a choice, on the short path.
const MOST: usize = 16;

/// Read `text` (whitespace around it trimmed), one whole JSON document,
/// as a chunk of the short path's shape within `max_depth`, into `chunk`
/// (empty), where it stands: its choices and their fragments are not
/// moved once read. `None` when it is not one, and the general reading
/// must read it.
pub(crate) fn read<'a>(text: &'a str, max_depth: usize, chunk: &mut Chunk<'a>) -> Option<()> {
    let mut scan = Scan::new(text, None, max_depth);
    if scan.peek()? != b'{' {
        return None;
    }
    let mut choices = false;
    scan.entries(&ROOT_KEYS, |scan, key, _| match key {
        Key::Field(field) => {
            scan.space();
            match field {
                Field::id | Field::model => scan.skip(),
                Field::object => match scan.value(Take::IsList)? {
                    Value::IsList(false) => Some(()),
                    _ => None,
                },
                Field::choices => {
                    chunk.choices.clear();
                    scan.chunk_choices(&mut chunk.choices)?;
                    choices = true;
                    Some(())
                }
                _ => scan.null(),
            }
        }
        Key::Own(_) => scan.skip(),
        Key::Other | Key::Rare(_) | Key::Variant => None,
    })?;
    if !scan.at_end() {
        return None;
    }
    choices.then_some(())
}

impl<'a> Scan<'a> {
    /// The entries of an object, as [`fields`](Self::fields) reads them,
    /// and the keys `own` names (the decoder's keys of no table, or rare
    /// ones, each of which may come once): `entry` is told a key of the
    /// table as `Ok`, an own key by its place in `own` as `Err`. Another
    /// rare key gives up; the values of other keys of no table are
    /// skipped, as every general reader skips them, but when `strict` such
    /// a key gives up (at a root, where a stream's probe reads keys of no
    /// table).
    pub(super) fn fields_with(
        &mut self,
        own: &[&str],
        strict: bool,
        mut entry: impl FnMut(&mut Self, Result<Field, usize>) -> Option<()>,
    ) -> Option<()> {
        let mut seen = 0u8;
        self.entries(own, |scan, key, _| {
            scan.space();
            match key {
                Key::Field(field) => entry(scan, Ok(field)),
                Key::Own(at) => {
                    let bit = 1 << at;
                    if seen & bit != 0 {
                        return None;
                    }
                    seen |= bit;
                    entry(scan, Err(usize::from(at)))
                }
                Key::Other if !strict => scan.skip(),
                Key::Other | Key::Rare(_) | Key::Variant => None,
            }
        })
    }

    /// `null` or a non-negative integer at the cursor, into `index`, as
    /// serde reads an `Option<u64>` (a sign, a fraction or an exponent
    /// give up).
    pub(super) fn index_or_null(&mut self, index: &mut Option<u64>) -> Option<()> {
        if self.peek()? == b'n' {
            *index = None;
            return self.null();
        }
        let number = self.number()?;
        if number.fraction || number.exponent || number.start != number.integral.start {
            return None;
        }
        let digits = self.text.get(number.integral)?;
        if digits.len() > 19 {
            return None;
        }
        *index = Some(digits.parse().ok()?);
        Some(())
    }

    /// `null` or a string with no escape at the cursor, into `text`.
    pub(super) fn plain_or_null(&mut self, text: &mut Option<&'a str>) -> Option<()> {
        if self.peek()? == b'n' {
            *text = None;
            return self.null();
        }
        *text = Some(self.plain()?);
        Some(())
    }

    /// The text of the string at the cursor, decoded.
    pub(super) fn unquoted(&mut self) -> Option<Cow<'a, str>> {
        let (raw, decoded) = self.decoded_string()?;
        Some(if let Some(text) = decoded {
            Cow::Owned(text.into_string())
        } else {
            let quoted = raw.get();
            Cow::Borrowed(&quoted[1..quoted.len() - 1])
        })
    }

    /// An empty list at the cursor.
    pub(super) fn empty_list(&mut self) -> Option<()> {
        if self.peek()? != b'[' {
            return None;
        }
        self.open()?;
        self.at += 1;
        self.space();
        self.eat(b']')?;
        self.depth -= 1;
        Some(())
    }

    /// A chunk's `choices`.
    fn chunk_choices(&mut self, choices: &mut SmallVec<[ChoiceDelta<'a>; 1]>) -> Option<()> {
        self.objects(|scan| {
            if choices.len() == MOST {
                return None;
            }
            let position = choices.len() as u64;
            choices.push(ChoiceDelta {
                number: position,
                fragments: SmallVec::new(),
                legacy: None,
                finished: false,
            });
            let choice = choices.last_mut()?;
            let mut index = None;
            scan.fields_with(&["index", "finish_reason"], false, |scan, key| match key {
                Err(0) => scan.index_or_null(&mut index),
                Err(_) => {
                    choice.finished = match scan.peek()? {
                        b'n' => scan.null().map(|()| false)?,
                        _ => scan.string().map(|_| true)?,
                    };
                    Some(())
                }
                // A message makes it a whole completion, `null` or not.
                Ok(Field::message) => None,
                Ok(Field::delta) if scan.peek()? == b'{' => {
                    choice.fragments.clear();
                    scan.chunk_delta(&mut choice.fragments)
                }
                Ok(_) => scan.null(),
            })?;
            choice.number = index.unwrap_or(position);
            Some(())
        })
    }

    /// A choice's `delta`: its call fragments, onto `fragments`.
    fn chunk_delta(&mut self, fragments: &mut SmallVec<[Fragment<'a>; 1]>) -> Option<()> {
        self.fields(|scan, field| match field {
            Field::role => {
                let mut role = None;
                scan.plain_or_null(&mut role)?;
                role.is_none_or(|role| role == "assistant").then_some(())
            }
            Field::content => match scan.peek()? {
                b'"' => scan.string().map(drop),
                _ => scan.null(),
            },
            Field::tool_calls if scan.peek()? == b'[' => scan.objects(|scan| {
                if fragments.len() == MOST {
                    return None;
                }
                fragments.push(scan.chunk_fragment()?);
                Some(())
            }),
            _ => scan.null(),
        })
    }

    /// A `tool_calls` element.
    fn chunk_fragment(&mut self) -> Option<Fragment<'a>> {
        let mut index = None;
        let mut id = None;
        let mut function = None;
        self.fields_with(&["index"], false, |scan, key| match key {
            Err(_) => scan.index_or_null(&mut index),
            Ok(Field::id) => scan.plain_or_null(&mut id),
            Ok(Field::kind) => {
                let mut kind = None;
                scan.plain_or_null(&mut kind)?;
                kind.is_none_or(|kind| kind == "function").then_some(())
            }
            Ok(Field::function) if scan.peek()? == b'{' => {
                function = Some(scan.chunk_function()?);
                Some(())
            }
            Ok(_) => scan.null(),
        })?;
        let (name, arguments) = function?;
        Some(Fragment {
            index,
            id: id.map(Cow::Borrowed),
            name: name.map(Cow::Borrowed),
            kind: CallKind::Function,
            arguments: Some(arguments),
        })
    }

    /// A fragment's `function`: its name and its arguments fragment,
    /// decoded (empty when `null` or absent).
    fn chunk_function(&mut self) -> Option<(Option<&'a str>, Cow<'a, str>)> {
        let mut name = None;
        let mut arguments = Cow::Borrowed("");
        self.fields(|scan, field| match field {
            Field::name => scan.plain_or_null(&mut name),
            Field::arguments if scan.peek()? == b'"' => {
                arguments = scan.unquoted()?;
                Some(())
            }
            _ => scan.null(),
        })?;
        Some((name, arguments))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::read;
    use crate::detect::fast::tests::{corpus, variants};
    use crate::detect::limits::Limits;
    use crate::detect::stream::openai_chat::Chunk;
    use crate::detect::stream::same_chunk;

    /// The chunk `text` is on the short path, when it takes it.
    fn chunk_of(text: &str, depth: usize) -> Option<Chunk<'_>> {
        let mut chunk = Chunk::default();
        read(text, depth, &mut chunk).map(|()| chunk)
    }

    /// A chunk of each kind a Chat stream sends: the role, a call's
    /// opening, an arguments fragment with escapes, two calls at once,
    /// the finish, the usage.
    const CHUNKS: [&str; 6] = [
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Z\u00fcrich\n"}}]},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":null}}]},"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#,
    ];

    /// What a chunk becomes when one of the things the short path looks
    /// at is changed: keys given twice, other types, other roles and call
    /// types, a message, containers where scalars are, keys of other
    /// formats.
    fn mutations(chunk: &str) -> Vec<String> {
        let swaps: [(&str, &str); 46] = [
            (
                r#""delta":{}"#,
                r#""delta":{"x":[{"tool_calls":[{"function":{"name":"f"}}]}]}"#,
            ),
            (
                r#""delta":{}"#,
                r#""delta":{"x":{"tool_calls":[{"function":{"name":"f"}}]}}"#,
            ),
            (
                r#""logprobs":null"#,
                r#""logprobs":[{"tool_calls":[{"function":{"name":"f"}}]}]"#,
            ),
            (
                r#""refusal":null"#,
                r#""refusal":[{"type":"tool_use","name":"f","input":{}}]"#,
            ),
            (r#""delta":{}"#, r#""message":null"#),
            (r#""delta":{}"#, r#""delta":null"#),
            (r#""index":0"#, r#""index":0,"index":1"#),
            (r#""index":0"#, r#""index":-0"#),
            (r#""index":0"#, r#""index":0.0"#),
            (r#""index":0"#, r#""index":1e0"#),
            (r#""index":0"#, r#""index":"0""#),
            (r#""index":0"#, r#""index":null"#),
            (r#""index":0"#, r#""index":18446744073709551616"#),
            (r#""index":0"#, r#""index":9999999999999999999"#),
            (r#""index":0,"delta""#, r#""delta""#),
            (
                r#""finish_reason":null"#,
                r#""finish_reason":null,"finish_reason":"stop""#,
            ),
            (r#""finish_reason":null"#, r#""finish_reason":1"#),
            (r#""finish_reason":null"#, r#""finish_reason":{}"#),
            (r#""finish_reason":null"#, r#""finish_reason":"st\u006fp""#),
            (r#""logprobs":null"#, r#""logprobs":{"content":[]}"#),
            (r#""logprobs":null"#, r#""message":null"#),
            (r#""logprobs":null"#, r#""message":{"role":"assistant"}"#),
            (
                r#""logprobs":null"#,
                r#""logprobs":{"tool_calls":[{"function":{"name":"x"}}]}"#,
            ),
            (r#""delta":{"#, r#""delta":{"x":{"tool_calls":[]},"#),
            (r#""delta":{"#, r#""delta":{"function_call":{"name":"f"},"#),
            (
                r#""delta":{"#,
                r#""delta":{"content":[{"type":"tool_use","name":"f"}],"#,
            ),
            (r#""delta":{"#, r#""delta":null,"x":{"#),
            (r#""role":"assistant""#, r#""role":"tool""#),
            (r#""role":"assistant""#, r#""role":null"#),
            (r#""content":null"#, r#""content":"hi""#),
            (r#""content":null"#, r#""content":{"tool_calls":[]}"#),
            (r#""type":"function""#, r#""type":"custom""#),
            (r#""type":"function""#, r#""type":7"#),
            (r#""id":"call_1""#, r#""id":7"#),
            (r#""id":"call_1""#, r#""id":"c\u0061ll""#),
            (r#""name":"get_weather""#, r#""name":"get_w\u0065ather""#),
            (r#""name":"get_weather""#, r#""name":null"#),
            (r#""arguments":"""#, r#""arguments":{}"#),
            (r#""arguments":"""#, r#""arguments":"\ud800""#),
            (
                r#""function":{"#,
                r#""custom":{"name":"c","input":"x"},"function":{"#,
            ),
            (r#""function":{"#, r#""function":null,"f":{"#),
            (r#""choices":["#, r#""type":"message_start","choices":["#),
            (r#""choices":["#, r#""error":{"message":"x"},"choices":["#),
            (r#""choices":["#, r#""candidates":[],"choices":["#),
            (
                r#""choices":["#,
                r#""item":{"type":"function_call"},"choices":["#,
            ),
            (r#""object":"chat.completion.chunk""#, r#""object":"list""#),
        ];
        swaps
            .iter()
            .filter(|(from, _)| chunk.contains(from))
            .map(|(from, to)| chunk.replacen(from, to, 1))
            .chain([
                chunk.replacen(r#""choices":"#, r#""choices":null,"choices":"#, 1),
                chunk.replacen(r#""model""#, r#""metadata":{},"model""#, 1),
                chunk.replacen(r#""model""#, r#""Model""#, 1),
                chunk.replacen('{', r#"{"created":{"choices":[]},"#, 1),
            ])
            .collect()
    }

    /// The documents a short path's test reads: `seeds` and their
    /// `mutations`, and every document and event of the fixtures and the
    /// conformance corpus, with their `mutations` and damaged variants;
    /// each trimmed as an event's data is.
    pub(in crate::detect::fast) fn documents(
        seeds: &[&str],
        mutations: fn(&str) -> Vec<String>,
    ) -> Vec<String> {
        let mut docs: Vec<String> = Vec::new();
        for seed in seeds {
            docs.push((*seed).to_owned());
            docs.extend(mutations(seed));
        }
        for doc in corpus() {
            docs.extend(mutations(&doc));
            docs.extend(variants(&doc));
            docs.push(doc);
        }
        docs.iter()
            .map(|doc| {
                doc.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
                    .to_owned()
            })
            .collect()
    }

    /// How many times `check` takes a document of [`documents`] under
    /// the [`depth_bounds`]: `check` reads it on its short path and, when
    /// taken, holds it to the general reading.
    pub(in crate::detect::fast) fn taken(
        seeds: &[&str],
        mutations: fn(&str) -> Vec<String>,
        check: impl Fn(&str, &Limits, usize) -> bool,
    ) -> usize {
        let mut taken = 0;
        for text in documents(seeds, mutations) {
            for limits in depth_bounds() {
                let depth = limits.max_depth.min(crate::detect::limits::HARD_MAX_DEPTH);
                taken += usize::from(check(&text, &limits, depth));
            }
        }
        taken
    }

    /// The data of every event of the `.sse` fixtures of `dir` (under
    /// `tests/fixtures`), with the fixture's path.
    pub(in crate::detect::fast) fn fixture_events(dir: &str) -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(dir);
        let mut events = Vec::new();
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "sse") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("fixture");
            for line in text.lines() {
                if let Some(data) = line.trim_start().strip_prefix("data:") {
                    events.push((path.display().to_string(), data.trim().to_owned()));
                }
            }
        }
        events
    }

    /// The depth bounds a short path's test reads under.
    pub(in crate::detect::fast) fn depth_bounds() -> Vec<Limits> {
        [2, 3, 4, 5, 6, 8, 128]
            .into_iter()
            .map(|max_depth| Limits {
                max_depth,
                ..Limits::default()
            })
            .collect()
    }

    /// Every chunk the short path takes says what the general reading
    /// says (the debug builds' comparison, [`same_chunk`]): the chunks
    /// above and their mutations, and every document and event of the
    /// fixtures and the conformance corpus, with their damaged variants,
    /// under several depth bounds.
    #[test]
    fn a_chunk_on_the_short_path_reads_as_the_general_reading_reads_it() {
        let taken = taken(&CHUNKS, mutations, |text, limits, depth| {
            let Some(chunk) = chunk_of(text, depth) else {
                return false;
            };
            same_chunk(text, &chunk, limits);
            true
        });
        assert!(taken > 2_000, "{taken} taken");
    }

    /// The keys the short paths know as written ([`Key::Own`]) are none
    /// of the table's, nor another spelling of one: what the lookup they
    /// skip would have said.
    ///
    /// [`Key::Own`]: crate::detect::fast::Key::Own
    #[test]
    fn own_keys_are_no_keys_of_the_table() {
        use crate::detect::fast::{look_up, Key};
        let own = super::ROOT_KEYS
            .iter()
            .chain(&crate::detect::fast::block::ROOT_KEYS)
            .chain(&crate::detect::fast::item::ROOT_KEYS)
            .chain(&crate::detect::fast::bedrock::ROOT_KEYS)
            .chain(&crate::detect::fast::bedrock::BLOCK_KEYS)
            .chain(&crate::detect::fast::bedrock::TOOL_KEYS)
            .chain(&crate::detect::fast::answer::ROOT_KEYS)
            .chain(&crate::detect::fast::answer::CANDIDATE_KEYS)
            .chain(&crate::detect::fast::answer::PART_KEYS)
            .chain(&crate::detect::fast::vercel::ROOT_KEYS)
            .chain(&["index", "finish_reason", "partial_json"]);
        for key in own {
            assert!(
                matches!(look_up(key), Key::Other | Key::Rare(_)),
                "{key}: {:?}",
                look_up(key)
            );
        }
    }

    /// The chunks real streams send take the short path: every event of
    /// the OpenAI Chat stream fixtures but `[DONE]`, and the chunks above.
    #[test]
    fn real_chunks_take_the_short_path() {
        let events = fixture_events("openai-chat");
        for (path, data) in events.iter().filter(|(_, data)| data != "[DONE]") {
            assert!(chunk_of(data, 128).is_some(), "{path}: {data}");
        }
        assert!(events.len() > 50, "{} events", events.len());
        for chunk in CHUNKS {
            assert!(chunk_of(chunk, 128).is_some(), "{chunk}");
        }
    }
}
