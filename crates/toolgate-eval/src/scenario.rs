//! One line of a dataset: a payload, or a row, `{"output": <payload>,
//! "policy": {...}, "id": ..., "name": ..., "metadata": {...}, "input":
//! ...}` in the shape eval tools write. A row's `id`, `name` and
//! `metadata` name the trace and are never read as a call; its `input` is
//! what the agent was given and is not judged; its `policy` keys override
//! the base policy for that trace. Overrides of the expectation keys reuse
//! the compiled base policy; any other key compiles the merged policy.
//! Either is compiled once for each text of `policy` and kept (a bounded
//! cache), so rows that share their overrides share the work.
//!
//! Which objects are rows: one with `output` and an object `policy`
//! (other keys ignored, as before rows had names), or one with `output`
//! and `id`, `name` or `metadata` whose keys are all row keys (the
//! dataset annotations of eval tools, such as `expected` and `tags`,
//! among them, never judged). Anything
//! else is a payload (a Responses API response holds `id` and `output`
//! beside `object`, `model`, ...; a span holds only `input` and `output`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use memchr::arch::all::packedpair::HeuristicFrequencyRank;
use memchr::memmem;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use toolgate::policy::Expectations;
use toolgate::{detect_to_judge, CheckOptions, Passing, Policy, Verdict};

use crate::summary::BadLine;

/// Most texts of `policy` kept compiled at once.
const CACHE: usize = 256;

/// The base policy, and the policies scenarios derive from it.
#[derive(Debug)]
pub struct Evaluator {
    base: Policy,
    /// The base policy's keys, for merging overrides.
    base_value: Value,
    base_dir: Option<PathBuf>,
    /// What each text of `policy` compiled to.
    overrides: Mutex<FxHashMap<Box<str>, Arc<Override>>>,
    options: Options,
    /// Finds `"output"` in a line: only such a line can be a row.
    output_key: memmem::Finder<'static>,
    /// Finds `"policy"` in a line: only such a row may hold keys that are
    /// not row keys.
    policy_key: memmem::Finder<'static>,
}

/// How every trace is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Also check tool results (`check --results`).
    pub results: bool,
    /// A trace without calls fails.
    pub require_calls: bool,
    /// What to judge (a trajectory, unless told otherwise).
    pub phase: toolgate::Phase,
}

/// What became of one line.
#[derive(Debug)]
pub enum Outcome {
    /// A blank line: not a trace.
    Blank,
    /// A trace's verdict, and its row's names when it was a row that had
    /// some.
    Verdict(Verdict, Option<Box<Label>>),
    Bad(BadLine),
}

/// What a row names its trace by: never read as a call.
#[derive(Debug, Clone, Default)]
pub struct Label {
    /// `id`: a string, or a number written as its JSON text.
    pub id: Option<String>,
    pub name: Option<String>,
    /// `metadata`, as written (copied to `--out`).
    pub metadata: Option<Box<RawValue>>,
}

impl Label {
    /// How messages and reports name the trace on `line`: its id, else its
    /// name, else its line.
    #[must_use]
    pub fn display(id: Option<&str>, name: Option<&str>, line: u64) -> String {
        match (id, name) {
            (Some(id), _) => id.to_owned(),
            (None, Some(name)) => name.to_owned(),
            (None, None) => format!("line {line}"),
        }
    }
}

impl Evaluator {
    /// `base_value` is the policy's text as a value (`{}` for no policy).
    pub fn new(
        base_value: Value,
        base_dir: Option<PathBuf>,
        options: Options,
    ) -> Result<Self, toolgate::PolicyError> {
        let base = Policy::from_value(&base_value, base_dir.as_deref())?;
        Ok(Evaluator {
            base,
            base_value,
            base_dir,
            overrides: Mutex::new(FxHashMap::default()),
            options,
            output_key: key_finder(b"\"output\""),
            policy_key: key_finder(b"\"policy\""),
        })
    }

    /// The base policy.
    #[must_use]
    pub fn policy(&self) -> &Policy {
        &self.base
    }

    /// Check one line (1-based `line`).
    #[must_use]
    pub fn line(&self, line: u64, text: &[u8]) -> Outcome {
        self.line_with(line, text, true)
    }

    /// [`line`](Self::line), with a passing verdict built whole or only
    /// as far as a tally reads it ([`CheckOptions::lean`]).
    #[must_use]
    pub fn line_with(&self, line: u64, text: &[u8], whole: bool) -> Outcome {
        let trimmed = text.trim_ascii();
        if trimmed.is_empty() {
            return Outcome::Blank;
        }
        let options = CheckOptions {
            results: self.options.results,
            require_calls: self.options.require_calls,
            caller: None,
            counter: None,
            as_written: false,
            declared: None,
            phase: self.options.phase,
            passing: if whole {
                Passing::Whole
            } else {
                Passing::Tallied
            },
        };
        // Only a line naming `"output"` can be a row.
        if self.output_key.find(trimmed).is_some() {
            let lenient = self.policy_key.find(trimmed).is_some();
            match Row::read(trimmed, lenient) {
                Ok(Some(row)) => return self.row(line, &row, options),
                Ok(None) => {}
                Err(message) => return bad(line, "bad_row", &message, None),
            }
        }
        verdict(
            line,
            trimmed,
            &self.base,
            self.base.expectations(),
            options,
            None,
        )
    }

    fn row(&self, line: u64, row: &Row<'_>, options: CheckOptions<'_>) -> Outcome {
        let label = match row.label() {
            Ok(label) => label,
            Err(message) => return bad(line, "bad_row", &message, None),
        };
        let payload = row.output.map_or(&b""[..], |raw| raw.get().as_bytes());
        let base = self.base.expectations();
        let Some(raw) = row.policy else {
            return verdict(line, payload, &self.base, base, options, label);
        };
        match &*self.compiled(raw) {
            Override::Base => verdict(line, payload, &self.base, base, options, label),
            Override::Expect(expect) => verdict(line, payload, &self.base, expect, options, label),
            Override::Policy(policy) => {
                verdict(line, payload, policy, policy.expectations(), options, label)
            }
            Override::Bad(message) => bad(line, "bad_policy", message, label.as_deref()),
        }
    }

    /// What the overrides `raw` come to, compiled once for each text.
    fn compiled(&self, raw: &RawValue) -> Arc<Override> {
        let lock = || {
            self.overrides
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some(found) = lock().get(raw.get()) {
            return Arc::clone(found);
        }
        let compiled = Arc::new(self.compile(raw));
        let mut cache = lock();
        if cache.len() < CACHE {
            cache.insert(raw.get().into(), Arc::clone(&compiled));
        }
        compiled
    }

    fn compile(&self, raw: &RawValue) -> Override {
        let overrides = match serde_json::from_str::<Map<String, Value>>(raw.get()) {
            Ok(overrides) if overrides.is_empty() => return Override::Base,
            Ok(overrides) => overrides,
            Err(err) => return Override::Bad(err.to_string()),
        };
        match self.base.override_expectations(&overrides) {
            Some(Ok(expect)) => return Override::Expect(expect),
            Some(Err(err)) => return Override::Bad(err.to_string()),
            None => {}
        }
        // The base policy with `overrides` replacing its keys.
        let mut value = self.base_value.clone();
        if let Value::Object(map) = &mut value {
            map.extend(overrides);
        }
        match Policy::from_value(&value, self.base_dir.as_deref()) {
            Ok(policy) => Override::Policy(Box::new(policy)),
            Err(err) => Override::Bad(err.to_string()),
        }
    }
}

/// A finder of `needle` in JSON text. memchr's SIMD search first looks for
/// the needle's two rarest bytes; its default table of how common bytes are
/// is English text's, where `"` is rare, so in JSON, where every key and
/// string starts with one, it stops at every string to compare. Ranked
/// for JSON instead, it looks for two letters, and searches a line of a
/// chat completion in half the time.
fn key_finder(needle: &'static [u8]) -> memmem::Finder<'static> {
    memmem::FinderBuilder::new().build_forward_with_ranker(JsonRank, needle)
}

/// How common each byte is in JSON: its punctuation most of all, then
/// letters in the order of their frequency in English text (keys and
/// values are mostly English words), then digits, then the rest.
struct JsonRank;

impl HeuristicFrequencyRank for JsonRank {
    fn rank(&self, byte: u8) -> u8 {
        const LETTERS: &[u8] = b"etaoinsrhldcumfpgwybvkxjqz";
        match byte {
            b'"' | b':' | b',' | b'{' | b'}' | b'[' | b']' | b' ' | b'\\' => 255,
            b'a'..=b'z' => {
                let at = LETTERS
                    .iter()
                    .position(|&l| l == byte)
                    .unwrap_or(LETTERS.len());
                // 250 for `e` down to 200 for `z`.
                250 - u8::try_from(at * 2).unwrap_or(50)
            }
            b'0'..=b'9' => 190,
            b'A'..=b'Z' => 150,
            _ => 100,
        }
    }
}

/// What a scenario's `policy` object comes to.
#[derive(Debug)]
enum Override {
    /// No keys: the base policy.
    Base,
    /// Expectation keys only: the base policy with these expectations.
    Expect(Expectations),
    /// Other keys: the base policy with them, compiled.
    Policy(Box<Policy>),
    /// Not a valid policy: the line is a bad line, with this message.
    Bad(String),
}

/// Judge one payload: a verdict, or a bad line when it holds no payload.
fn verdict(
    line: u64,
    payload: &[u8],
    policy: &Policy,
    expect: &Expectations,
    options: CheckOptions<'_>,
    label: Option<Box<Label>>,
) -> Outcome {
    let detection = detect_to_judge(payload, policy.limits());
    if detection.format.is_none() && detection.calls.is_empty() {
        let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(payload).is_ok();
        let message = detection
            .violations
            .first()
            .map_or("no payload", |v| v.message.as_str())
            .to_owned();
        return bad(
            line,
            if is_json { "no_payload" } else { "not_json" },
            &message,
            label.as_deref(),
        );
    }
    Outcome::Verdict(policy.judge_expecting(detection, options, expect), label)
}

fn bad(line: u64, kind: &str, message: &str, label: Option<&Label>) -> Outcome {
    Outcome::Bad(BadLine {
        line,
        id: label.and_then(|l| l.id.clone()),
        name: label.and_then(|l| l.name.clone()),
        kind: kind.to_owned(),
        message: message.to_owned(),
    })
}

/// A row's keys, as written; `other` when it holds a key that is not
/// one.
#[derive(Default)]
struct Row<'a> {
    output: Option<&'a RawValue>,
    policy: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    name: Option<&'a RawValue>,
    metadata: Option<&'a RawValue>,
    input: bool,
    other: bool,
}

/// The keys a row may hold.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum RowKey {
    Output,
    Policy,
    Id,
    Name,
    Metadata,
    Input,
    /// What eval tools' datasets annotate a case with, never judged: the
    /// expected answer (`expected`, `expected_output`, `reference`,
    /// `ideal`), `tags`, `scores`, `description`. No wire format puts them
    /// beside `output`.
    #[serde(
        alias = "expected",
        alias = "expected_output",
        alias = "reference",
        alias = "ideal",
        alias = "tags",
        alias = "scores",
        alias = "description"
    )]
    Annotation,
    #[serde(other)]
    Other,
}

/// Reads an object into a [`Row`]; with `lenient` false, stops at the first
/// key that is not a row key (the object is then a payload, and the rest
/// of it is not read twice).
struct RowVisitor {
    lenient: bool,
}

/// Why a row could not be read: a payload (`NotRow`), or a row key given
/// twice.
enum RowError {
    NotRow,
    Twice(&'static str),
}

impl<'de> serde::de::Visitor<'de> for RowVisitor {
    type Value = Result<Row<'de>, RowError>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut row = Row::default();
        while let Some(key) = map.next_key::<RowKey>()? {
            let (slot, name) = match key {
                RowKey::Output => (&mut row.output, "output"),
                RowKey::Policy => (&mut row.policy, "policy"),
                RowKey::Id => (&mut row.id, "id"),
                RowKey::Name => (&mut row.name, "name"),
                RowKey::Metadata => (&mut row.metadata, "metadata"),
                RowKey::Input => {
                    if std::mem::replace(&mut row.input, true) {
                        return Ok(Err(RowError::Twice("input")));
                    }
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
                RowKey::Annotation => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
                RowKey::Other => {
                    if !self.lenient {
                        return Ok(Err(RowError::NotRow));
                    }
                    row.other = true;
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            if slot.replace(map.next_value()?).is_some() {
                return Ok(Err(RowError::Twice(name)));
            }
        }
        Ok(Ok(row))
    }
}

impl<'a> Row<'a> {
    /// The row of a line; `Ok(None)` when the line is not one (then it is
    /// read as a payload); an error message for a row key given twice.
    fn read(text: &'a [u8], lenient: bool) -> Result<Option<Self>, String> {
        use serde::Deserializer as _;
        let mut reader = serde_json::Deserializer::from_slice(text);
        let row = match reader.deserialize_map(RowVisitor { lenient }) {
            Ok(Ok(row)) if reader.end().is_ok() => row,
            Ok(Err(RowError::Twice(key))) => {
                return Err(format!("`{key}` is given twice"));
            }
            _ => return Ok(None),
        };
        if row.output.is_none() {
            return Ok(None);
        }
        let policy_object = row.policy.is_some_and(|raw| raw.get().starts_with('{'));
        let named = row.id.is_some() || row.name.is_some() || row.metadata.is_some();
        if policy_object || (!row.other && named) {
            Ok(Some(row))
        } else {
            Ok(None)
        }
    }

    /// The row's names, checked: `id` a string or a number, `name` a
    /// string, `metadata` an object, `policy` an object.
    fn label(&self) -> Result<Option<Box<Label>>, String> {
        if self.policy.is_some_and(|raw| !raw.get().starts_with('{')) {
            return Err("a row's `policy` must be an object of policy keys".to_owned());
        }
        if self.id.is_none() && self.name.is_none() && self.metadata.is_none() {
            return Ok(None);
        }
        let id = match self.id.map(|raw| serde_json::from_str::<Value>(raw.get())) {
            None => None,
            Some(Ok(Value::String(id))) => Some(clip(id)),
            Some(Ok(Value::Number(n))) => Some(clip(n.to_string())),
            Some(_) => return Err("a row's `id` must be a string or a number".to_owned()),
        };
        let name = match self
            .name
            .map(|raw| serde_json::from_str::<Value>(raw.get()))
        {
            None => None,
            Some(Ok(Value::String(name))) => Some(clip(name)),
            Some(_) => return Err("a row's `name` must be a string".to_owned()),
        };
        let metadata = match self.metadata {
            None => None,
            Some(raw) if raw.get().starts_with('{') => Some(raw.to_owned()),
            Some(_) => return Err("a row's `metadata` must be an object".to_owned()),
        };
        Ok(Some(Box::new(Label { id, name, metadata })))
    }
}

/// Most characters of a row's `id` or `name` kept: the summary keeps the
/// names of its failing traces, and `--junit` of every trace.
pub const MAX_LABEL_CHARS: usize = 200;

/// `text`, cut to [`MAX_LABEL_CHARS`] with an ellipsis.
fn clip(text: String) -> String {
    match text.char_indices().nth(MAX_LABEL_CHARS) {
        None => text,
        Some((at, _)) => {
            let mut cut = text[..at].to_owned();
            cut.push('…');
            cut
        }
    }
}

#[cfg(test)]
mod tests {
    use super::key_finder;

    #[test]
    fn the_json_ranked_finder_finds_a_key_wherever_it_lies() {
        let finder = key_finder(b"\"output\"");
        let filler = r#"{"id":"c1","type":"function","function":{"name":"put","arguments":"{}"}},"#;
        for before in 0..40 {
            let head = filler.repeat(before);
            let line = format!(r#"{{{head}"output":{{"a":1}},"outputs":"output"}}"#);
            let at = head.len() + 1;
            assert_eq!(
                finder.find(line.as_bytes()),
                Some(at),
                "after {before} fillers"
            );
            let near = line
                .replacen("\"output\"", "\"outputs\"", 1)
                .replace("\"output\"", "");
            assert_eq!(finder.find(near.as_bytes()), None, "{near}");
        }
    }
}
