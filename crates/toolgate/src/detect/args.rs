//! Strict parsing of tool-call arguments.
//!
//! `serde_json` keeps the last of two equal keys, accepts a leading BOM in
//! some paths, and says little about why text is not JSON. An executor in
//! another language may read the first of two keys, so the value we validate
//! would not be the value that runs. This parser builds the object itself,
//! refuses duplicate keys and excess depth, and classifies every failure into
//! a stable [`ArgumentErrorReason`].

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use crate::detect::cursor::Scanned;
use crate::detect::limits::Limits;
use crate::detect::node::KeyText;
use crate::detect::tape::{Refused, Tape};
use crate::model::{ArgumentError, ArgumentErrorReason, Arguments, ObjectArguments};
use crate::verdict::ViolationCode;

const DUPLICATE_MARKER: &str = "\u{1}duplicate key:";
const DEPTH_MARKER: &str = "\u{1}too deep";

/// Parse a call's arguments text (an OpenAI `arguments` string, the JSON text
/// of an inline object, concatenated stream fragments) into an object.
///
/// An empty text means `{}`. Anything else must be exactly one JSON object
/// with unique keys, no deeper than `limits.max_depth` and no larger than
/// `limits.max_argument_bytes`.
#[must_use]
pub fn parse_arguments(text: &str, limits: &Limits) -> Arguments {
    arguments(read(text, limits, None))
}

/// [`parse_arguments`] of text in which the tape's reader found a key
/// given twice ([`Refused::Twin`]): it is not read onto a tape again.
pub(crate) fn parse_twin(text: &str, limits: &Limits) -> Arguments {
    arguments(read(text, limits, Some(Refused::Twin)))
}

fn arguments(read: Result<Read, ArgumentError>) -> Arguments {
    match read {
        Ok(Read::Tape(tape)) => Arguments::Object(ObjectArguments::from_tape(tape)),
        Ok(Read::Map(map)) => Arguments::Object(map.into()),
        Err(err) => Arguments::Invalid(err),
    }
}

/// [`parse_arguments`] as a `Result`.
pub fn parse_object(text: &str, limits: &Limits) -> Result<Map<String, Value>, ArgumentError> {
    match read(text, limits, None)? {
        Read::Tape(tape) => Ok(tape.to_map()),
        Read::Map(map) => Ok(map),
    }
}

/// Arguments read: on a tape when the fast reader took them, else as the
/// strict reader built them.
enum Read {
    Tape(Tape),
    Map(Map<String, Value>),
}

/// `text` read: onto a tape unless the tape's reader already `refused` it,
/// else by the strict reader.
fn read(text: &str, limits: &Limits, refused: Option<Refused>) -> Result<Read, ArgumentError> {
    if text.is_empty() {
        return Ok(Read::Map(Map::new()));
    }
    if let Some(err) = too_large("arguments are", text, limits) {
        return Err(err);
    }
    if text.starts_with('\u{feff}') {
        return Err(error(
            ArgumentErrorReason::ByteOrderMark,
            "arguments start with a byte order mark (U+FEFF)",
        ));
    }
    let read = match refused {
        Some(refused) => Err(refused),
        None => Tape::read_or_refused(text, limits.max_depth.min(super::limits::HARD_MAX_DEPTH)),
    };
    match read {
        Ok(tape) => Ok(Read::Tape(tape)),
        // The strict reader refuses it too: what it says is wanted, not
        // the object it would build.
        Err(Refused::Twin) => {
            strict_check(text, limits)?;
            strict_object(text, limits).map(Read::Map)
        }
        Err(Refused::Other) => strict_object(text, limits).map(Read::Map),
    }
}

/// The error for arguments `text` past `max_argument_bytes`, said of them
/// as `what` (`"arguments are"`, `"the input is"`); `None` within it.
pub(crate) fn too_large(what: &str, text: &str, limits: &Limits) -> Option<ArgumentError> {
    (text.len() > limits.max_argument_bytes).then(|| {
        error(
            ArgumentErrorReason::TooLarge,
            format!(
                "{what} {} bytes, more than max_argument_bytes ({})",
                text.len(),
                limits.max_argument_bytes
            ),
        )
    })
}

/// For the tests and the `detect` fuzz target: read arguments `text` both
/// ways. `Ok(true)` when the fast path took it and built the strict
/// reader's very object, `Ok(false)` when it gave up; `Err` says how the
/// two disagree.
#[doc(hidden)]
pub fn fast_path_agrees(text: &str, limits: &Limits) -> Result<bool, String> {
    // What the strict reader says of text it refuses, said building
    // nothing, is what it says building the object.
    if let Err(check) = strict_check(text, limits) {
        match strict_object(text, limits) {
            Err(strict) if strict == check => {}
            other => {
                return Err(format!(
                    "the strict check refused: {check:?}; the strict reader: {other:?}"
                ))
            }
        }
    }
    let max = limits.max_depth.min(super::limits::HARD_MAX_DEPTH);
    let Some(fast) = Tape::read(text, max).map(|tape| tape.to_map()) else {
        return Ok(false);
    };
    match strict_object(text, limits) {
        Ok(map)
            if serde_json::to_string(&map).ok() == serde_json::to_string(&fast).ok()
                && map == fast =>
        {
            Ok(true)
        }
        Ok(map) => Err(format!(
            "the fast path read {fast:?}, the strict reader {map:?}"
        )),
        Err(err) => Err(format!(
            "the fast path read {fast:?}, the strict reader refused: {}",
            err.message
        )),
    }
}

/// For the tests and the `detect` fuzz target: `text`, which starts with
/// a JSON string, read onto a tape straight from the string as written
/// ([`Tape::read_quoted`]), and by decoding the string and reading its
/// text. `Ok(true)` when the first took it and made the very tape the
/// second makes, `Ok(false)` when it gave up; `Err` says how the two
/// disagree.
#[doc(hidden)]
pub fn quoted_path_agrees(text: &str, limits: &Limits) -> Result<bool, String> {
    let max = limits.max_depth.min(super::limits::HARD_MAX_DEPTH);
    let Ok((tape, used)) = Tape::read_quoted(text, max) else {
        return Ok(false);
    };
    let literal = text
        .get(..used)
        .ok_or_else(|| format!("the quoted reading ended inside a character of {text:?}"))?;
    let decoded: String = serde_json::from_str(literal).map_err(|err| {
        format!("the quoted reading took {literal:?}, which is no JSON string: {err}")
    })?;
    match Tape::read(&decoded, max) {
        Some(read) if read == tape => Ok(true),
        other => Err(format!(
            "read from {literal:?}: {tape:?}; read from its text: {other:?}"
        )),
    }
}

/// The strict reader, past the checks on the text as a whole.
fn strict_object(text: &str, limits: &Limits) -> Result<Map<String, Value>, ArgumentError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let large = Cell::new(false);
    let seed = StrictValue {
        depth_left: limits.max_depth,
        large: &large,
    };
    let value = seed
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value))
        .map_err(|err| classify(text, &err, limits))?;
    if large.get() && has_inexact_integer(text) {
        return Err(error(
            ArgumentErrorReason::ImpreciseNumber,
            "arguments hold an integer too large to check exactly (beyond 64 bits)",
        ));
    }
    match value {
        Value::Object(map) => Ok(map),
        other => Err(error(
            ArgumentErrorReason::NotObject,
            format!("arguments are a JSON {}, not an object", json_type(&other)),
        )),
    }
}

/// The strict reader's refusal of `text`, if it refuses it: read as
/// [`strict_object`] reads it, through the same steps, so the same error
/// at the same place, with nothing built but each object's keys. For text
/// the strict reader is expected to refuse.
fn strict_check(text: &str, limits: &Limits) -> Result<(), ArgumentError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = StrictCheck {
        depth_left: limits.max_depth,
    };
    seed.deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|err| classify(text, &err, limits))
}

/// Build an [`ArgumentError`] with the code its reason maps to.
pub(crate) fn error(reason: ArgumentErrorReason, message: impl Into<String>) -> ArgumentError {
    let code = match reason {
        ArgumentErrorReason::DuplicateKey => ViolationCode::DuplicateArgumentKey,
        ArgumentErrorReason::TooLarge | ArgumentErrorReason::TooDeep => {
            ViolationCode::InputLimitExceeded
        }
        ArgumentErrorReason::NotJson
        | ArgumentErrorReason::NotObject
        | ArgumentErrorReason::ByteOrderMark
        | ArgumentErrorReason::NonFiniteNumber
        | ArgumentErrorReason::ImpreciseNumber
        | ArgumentErrorReason::LoneSurrogate
        | ArgumentErrorReason::TrailingCharacters
        | ArgumentErrorReason::Incomplete
        | ArgumentErrorReason::Conflicting => ViolationCode::MalformedArguments,
    };
    ArgumentError {
        code,
        reason,
        message: message.into(),
    }
}

/// Whether `text` (valid JSON) holds an integer literal, outside strings,
/// that no 64-bit integer holds: read as a float, it would be rounded, and
/// what is checked would differ from what an exact executor reads.
fn has_inexact_integer(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut in_string = false;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if in_string {
            match byte {
                b'\\' => at += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else if byte == b'"' {
            in_string = true;
        } else if byte == b'-' || byte.is_ascii_digit() {
            // The number whole, in the grammar every reader here uses: a
            // float's fraction and exponent are its own, not integers.
            let Some(number) = Scanned::read(bytes, at) else {
                // (Valid JSON has none such: refused rather than guessed.)
                return true;
            };
            let literal = &text[at..number.end];
            if number.whole() && literal.parse::<i64>().is_err() && literal.parse::<u64>().is_err()
            {
                return true;
            }
            at = number.end;
            continue;
        }
        at += 1;
    }
    false
}

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn classify(text: &str, err: &serde_json::Error, limits: &Limits) -> ArgumentError {
    let message = err.to_string();
    let position = format!("line {} column {}", err.line(), err.column());
    if let Some(rest) = message.strip_prefix(DUPLICATE_MARKER) {
        // The key and its end, then where the reader was.
        let key = rest
            .strip_suffix(position.as_str())
            .and_then(|rest| rest.strip_suffix(" at "))
            .unwrap_or(rest);
        if let Some(key) = key.strip_suffix(CASE_TWIN) {
            return error(
                ArgumentErrorReason::DuplicateKey,
                format!(
                    "argument key '{}' appears more than once to a reader that ignores case \
                     or NUL characters ({position})",
                    clip(key).escape_debug()
                ),
            );
        }
        let key = key.strip_suffix(KEY_END).unwrap_or(key);
        return error(
            ArgumentErrorReason::DuplicateKey,
            format!(
                "argument key '{}' appears more than once ({position})",
                clip(key)
            ),
        );
    }
    if message.starts_with(DEPTH_MARKER) || message.starts_with("recursion limit exceeded") {
        return error(
            ArgumentErrorReason::TooDeep,
            format!(
                "arguments nest deeper than max_depth ({}) ({position})",
                limits.max_depth.min(super::limits::HARD_MAX_DEPTH)
            ),
        );
    }
    if message.contains("surrogate")
        || message.starts_with("invalid unicode code point")
        || (message.starts_with("unexpected end of hex escape") && has_surrogate_escape(text))
    {
        return error(
            ArgumentErrorReason::LoneSurrogate,
            format!("arguments hold an unpaired UTF-16 surrogate escape ({position})"),
        );
    }
    if message.starts_with("number out of range") || has_non_finite_literal(text) {
        return error(
            ArgumentErrorReason::NonFiniteNumber,
            format!("arguments hold NaN, Infinity or an out-of-range number, which JSON does not allow ({position})"),
        );
    }
    if message.starts_with("trailing characters") {
        return error(
            ArgumentErrorReason::TrailingCharacters,
            format!("arguments hold more text after the JSON object ({position})"),
        );
    }
    if err.is_eof() {
        return error(
            ArgumentErrorReason::NotJson,
            format!("arguments are not valid JSON: the text ends early ({position})"),
        );
    }
    error(
        ArgumentErrorReason::NotJson,
        format!("arguments are not valid JSON ({position})"),
    )
}

/// Whether a bare `NaN` or `Infinity` token appears outside string literals.
fn has_non_finite_literal(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if bytes[i..].starts_with(b"NaN") || bytes[i..].starts_with(b"Infinity") {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether text holds a `\uD800`-`\uDFFF` escape.
fn has_surrogate_escape(text: &str) -> bool {
    text.as_bytes().windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && (w[2] | 0x20) == b'd'
            && matches!(w[3] | 0x20, b'8'..=b'9' | b'a'..=b'f')
    })
}

/// Ends the key of a duplicate found by [`case_twin`]; [`KEY_END`] ends
/// any other's. Each ends the message, so that no key's own text is read
/// as the reader's place (`serde_json` reads a message that ends `at line
/// N column M` so).
const CASE_TWIN: &str = "\u{1}case";
const KEY_END: &str = "\u{1}";

/// The strict readers' error for an object's `key` given twice.
fn twice<E: serde::de::Error>(key: &str) -> E {
    E::custom(format_args!("{DUPLICATE_MARKER}{key}{KEY_END}"))
}

/// The strict readers' error for an object's `key` that another of its
/// keys is to a reader that ignores case ([`case_twin`]).
fn twice_to_some<E: serde::de::Error>(key: &str) -> E {
    E::custom(format_args!("{DUPLICATE_MARKER}{key}{CASE_TWIN}"))
}

/// Whether a key reads the same to every reader: no ASCII capital, no NUL,
/// nothing outside ASCII.
pub(crate) fn case_stable(key: &[u8]) -> bool {
    key.iter()
        .all(|&b| b != 0 && b < 0x80 && !b.is_ascii_uppercase())
}

/// A key of `map` that another of its keys equals to a reader that
/// ignores case and NUL characters, as Go's `encoding/json` matches keys
/// (`path` and `Path`, `s` and `ſ`, `name` and `name\u0000`): such a reader
/// may take either value, so the arguments are refused as holding a key
/// twice. Only objects with a key that is not [`case_stable`] are looked
/// at twice. Public for readers that build arguments from values already
/// parsed (the Python bindings' reading of LangChain's calls), which must
/// refuse what the text reader refuses.
#[must_use]
pub fn case_twin(map: &Map<String, Value>) -> Option<&str> {
    case_twin_of(map.keys().map(String::as_str))
}

/// [`case_twin`] of an object's keys, in order.
fn case_twin_of<'k>(keys: impl ExactSizeIterator<Item = &'k str> + Clone) -> Option<&'k str> {
    if keys.len() < 2 || keys.clone().all(|key| case_stable(key.as_bytes())) {
        return None;
    }
    let mut seen = HashSet::with_capacity(keys.len());
    keys.into_iter().find(|key| !seen.insert(fold_key(key)))
}

/// A key as a reader that ignores case and NUL characters reads it.
pub(crate) fn fold_key(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '\0')
        .flat_map(|c| match c {
            '\u{17f}' => 's'.to_lowercase(),
            '\u{212a}' => 'k'.to_lowercase(),
            c => c.to_lowercase(),
        })
        .collect()
}

/// Keys are names, not values, but they are bounded all the same.
pub(crate) fn clip(key: &str) -> String {
    const MAX: usize = 64;
    if key.len() <= MAX {
        return key.to_owned();
    }
    let mut end = MAX;
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &key[..end])
}

/// Builds a `Value`, refusing duplicate keys and nesting past a depth.
struct StrictValue<'c> {
    depth_left: usize,
    /// Set when a number came as a float with an integral value past 64
    /// bits: it may have been written as an integer that a float rounds.
    large: &'c Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        // 2^63: below it, integers came to visit_i64 or visit_u64.
        if v.fract() == 0.0 && v.abs() >= 9_223_372_036_854_775_808.0 {
            self.large.set(true);
        }
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth_left = self.enter::<A::Error>()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(StrictValue {
            depth_left,
            large: self.large,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let depth_left = self.enter::<A::Error>()?;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let value = access.next_value_seed(StrictValue {
                depth_left,
                large: self.large,
            })?;
            match map.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(slot) => {
                    let key = slot.key();
                    return Err(twice(key));
                }
            }
        }
        if let Some(key) = case_twin(&map) {
            return Err(twice_to_some(key));
        }
        Ok(Value::Object(map))
    }
}

impl StrictValue<'_> {
    fn enter<E: serde::de::Error>(&self) -> Result<usize, E> {
        enter(self.depth_left)
    }
}

/// The depth left inside a container entered with `depth_left`.
fn enter<E: serde::de::Error>(depth_left: usize) -> Result<usize, E> {
    depth_left
        .checked_sub(1)
        .ok_or_else(|| E::custom(DEPTH_MARKER))
}

/// [`StrictValue`]'s reading, building nothing but each object's keys:
/// the same refusals in the same order (a value's own first, then its
/// key's second occurrence, then a key another one is to a reader that
/// ignores case), for text known to be refused.
struct StrictCheck {
    depth_left: usize,
}

impl<'de> DeserializeSeed<'de> for StrictCheck {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictCheck {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        // As StrictValue: what `Number` cannot hold.
        Number::from_f64(v)
            .map(drop)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let depth_left = enter::<A::Error>(self.depth_left)?;
        while seq.next_element_seed(StrictCheck { depth_left })?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<(), A::Error> {
        let depth_left = enter::<A::Error>(self.depth_left)?;
        // The keys in order; past a few, a table of them too.
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut table: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = access.next_key_seed(KeyText)? {
            access.next_value_seed(StrictCheck { depth_left })?;
            let seen = if keys.len() < 16 {
                keys.contains(&key)
            } else {
                if table.is_empty() {
                    table.extend(keys.iter().cloned());
                }
                !table.insert(key.clone())
            };
            if seen {
                return Err(twice(&key));
            }
            keys.push(key);
        }
        if let Some(key) = case_twin_of(keys.iter().map(|key| &**key)) {
            return Err(twice_to_some(key));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_builds_what_the_strict_reader_builds_or_gives_up() {
        let texts = [
            r#"{"a":1,"b":-2,"c":2.5,"d":-0,"e":-0.0,"f":1e3,"g":18446744073709551615}"#,
            r#"{"big":18446744073709551616,"neg":-9223372036854775808,"less":-9223372036854775809}"#,
            r#"{"f":9223372036854775808.0,"g":0.1,"h":123456789.123456789,"i":5e-324}"#,
            r#"{"s":"a\"b\\c\n\u00e9\ud83d\ude00","t":"\ud800","u":"\x"}"#,
            r#" { "a" : [ 1 , { "b" : null } , true , false ] , "c" : { } , "d" : [ ] } "#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":1,"\u0061":2}"#,
            r#"{"a":{"b":1,"B":2},"c":[{"d":1,"d":[1e999]}],"a":3}"#,
            r#"{"k":"x","K":1,"k":2}"#,
            r#"{"s":1,"\u017f":2,"x":{"y":NaN,"y":1}}"#,
            r#"{"a":[[{"b":1,"b":2}]],"a":1} "#,
            r#"{"a":[[[[[[1]]]]]]}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":NaN}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} x"#,
            "[1]",
            "{\"a\":\"\u{1}\"}",
        ];
        let limits = [
            Limits::default(),
            Limits {
                max_depth: 4,
                ..Limits::default()
            },
        ];
        let mut taken = 0;
        for text in texts {
            for cut in 0..=text.len() {
                let Some(part) = text.get(..cut) else {
                    continue;
                };
                for limits in &limits {
                    match fast_path_agrees(part, limits) {
                        Ok(fast) => taken += usize::from(fast),
                        Err(why) => panic!("{part}: {why}"),
                    }
                }
            }
        }
        assert!(taken >= 6, "the fast path took {taken}");
    }

    #[test]
    fn only_an_integer_past_64_bits_is_too_large() {
        let limits = Limits::default();
        let read = |text: &str| {
            let strict = strict_object(text, &limits).map_err(|err| err.reason);
            assert_eq!(
                fast_path_agrees(text, &limits).map(|_| ()),
                Ok(()),
                "{text}"
            );
            strict
        };
        // Floats past 2^63, however written: a float to every reader,
        // beside integers within 64 bits and whatever their fraction and
        // exponent hold.
        for text in [
            r#"{"n":[6.02214076e+23,1e19,-9.3e18,1.5E20]}"#,
            r#"{"n":10000000000000000000.20000000000000000000}"#,
            r#"{"n":[1e19,1e-99999999999999999999,2.5e+00000000000000000001]}"#,
            r#"{"n":[18446744073709551615,-9223372036854775808,1e30]}"#,
        ] {
            assert!(read(text).is_ok(), "{text}");
        }
        for text in [
            r#"{"n":[1e19,18446744073709551616]}"#,
            r#"{"n":[-9223372036854775809,1.5]}"#,
            r#"{"n":[1.0e30,"18446744073709551616",100000000000000000000000]}"#,
        ] {
            assert_eq!(
                read(text),
                Err(ArgumentErrorReason::ImpreciseNumber),
                "{text}"
            );
        }
    }

    #[test]
    fn a_key_given_twice_is_said_as_the_strict_reader_says_it() {
        use std::fmt::Write as _;
        // Past the few keys compared one by one: a table of them.
        let many = (0..40).fold(String::new(), |mut many, n| {
            let _ = write!(many, "\"k{n}\": {n}, ");
            many
        });
        let texts = [
            format!("{{{many}\"k7\": 1}}"),
            format!("{{{many}\"K39\": 1}}"),
            format!("{{{many}\"x\": {{\"y\": 1, \"y\": 2}}, \"k0\": 1}}"),
            format!("{{\"a\": {{{many}\"k3\": 0}}}}"),
            "{\"a\":1,\n  \"a\" : 2 ,\"b\":3}".to_owned(),
            "{\"a\":{\"b\":1,\"b\":2}, \"a\":1}".to_owned(),
            "{\"\\u0041\":1,\"a\":2}".to_owned(),
        ];
        for text in &texts {
            let Arguments::Invalid(err) = parse_arguments(text, &Limits::default()) else {
                panic!("{text} parsed");
            };
            assert_eq!(err.reason, ArgumentErrorReason::DuplicateKey, "{text}");
            assert_eq!(Err(err), strict_object(text, &Limits::default()), "{text}");
            assert_eq!(
                fast_path_agrees(text, &Limits::default()),
                Ok(false),
                "{text}"
            );
        }
        // The key is named whole, whatever it says.
        let text = r#"{"k at line 1 column 2": 1, "k at line 1 column 2": 2}"#;
        let Arguments::Invalid(err) = parse_arguments(text, &Limits::default()) else {
            panic!("{text} parsed");
        };
        assert_eq!(
            err.message,
            "argument key 'k at line 1 column 2' appears more than once (line 1 column 54)"
        );
        let text = "{\"k\\u0001\":1,\"k\\u0001\":2,\"K\\u0001case\":3,\"k\\u0001case\":4}";
        let Arguments::Invalid(err) = parse_arguments(text, &Limits::default()) else {
            panic!("{text} parsed");
        };
        assert_eq!(
            err.message,
            "argument key 'k\u{1}' appears more than once (line 1 column 24)"
        );
    }

    fn reason(text: &str) -> ArgumentErrorReason {
        match parse_arguments(text, &Limits::default()) {
            Arguments::Invalid(err) => err.reason,
            other => panic!("{text:?} parsed: {other:?}"),
        }
    }

    #[test]
    fn empty_text_is_an_empty_object() {
        assert_eq!(
            parse_arguments("", &Limits::default()),
            Arguments::Object(Map::new().into())
        );
    }

    #[test]
    fn objects_parse_in_order() {
        let args = parse_arguments(r#"{"b":1,"a":{"c":[1,2.5,"x"]}}"#, &Limits::default());
        let map = args.as_object().unwrap();
        assert_eq!(map.keys().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(map["a"]["c"][1], 2.5);
    }

    #[test]
    fn each_defect_has_its_reason() {
        assert_eq!(reason("   "), ArgumentErrorReason::NotJson);
        assert_eq!(reason("city=Paris"), ArgumentErrorReason::NotJson);
        assert_eq!(reason(r#"{"a":1"#), ArgumentErrorReason::NotJson);
        assert_eq!(reason("[1,2]"), ArgumentErrorReason::NotObject);
        assert_eq!(reason(r#""{\"a\":1}""#), ArgumentErrorReason::NotObject);
        assert_eq!(reason("null"), ArgumentErrorReason::NotObject);
        assert_eq!(reason("\u{feff}{}"), ArgumentErrorReason::ByteOrderMark);
        assert_eq!(reason(r#"{"a":NaN}"#), ArgumentErrorReason::NonFiniteNumber);
        assert_eq!(
            reason(r#"{"a":-Infinity}"#),
            ArgumentErrorReason::NonFiniteNumber
        );
        assert_eq!(
            reason(r#"{"a":1e999}"#),
            ArgumentErrorReason::NonFiniteNumber
        );
        assert_eq!(
            reason(r#"{"a":"\ud800"}"#),
            ArgumentErrorReason::LoneSurrogate
        );
        assert_eq!(
            reason(r#"{"a":"\udc00x"}"#),
            ArgumentErrorReason::LoneSurrogate
        );
        assert_eq!(
            reason(r#"{"a":1}{"a":2}"#),
            ArgumentErrorReason::TrailingCharacters
        );
        assert_eq!(
            reason(r#"{"a":1,"a":2}"#),
            ArgumentErrorReason::DuplicateKey
        );
        assert_eq!(
            reason(r#"{"o":{"k":1,"k":1}}"#),
            ArgumentErrorReason::DuplicateKey
        );
    }

    #[test]
    fn a_nan_inside_a_string_is_not_a_number() {
        let args = parse_arguments(r#"{"a":"NaN Infinity"}"#, &Limits::default());
        assert!(args.as_object().is_some());
    }

    #[test]
    fn paired_surrogates_are_fine() {
        let args = parse_arguments(r#"{"a":"\ud83d\ude00"}"#, &Limits::default());
        assert_eq!(args.as_object().unwrap()["a"], "\u{1f600}");
    }

    #[test]
    fn duplicate_keys_name_the_key_and_map_to_their_code() {
        let err = parse_object(r#"{"to":"a","to":"b"}"#, &Limits::default()).unwrap_err();
        assert_eq!(err.code, ViolationCode::DuplicateArgumentKey);
        assert!(err.message.contains("'to'"), "{}", err.message);
        assert!(!err.message.contains('"'));
    }

    #[test]
    fn depth_and_size_limits_hold() {
        let limits = Limits {
            max_depth: 3,
            max_argument_bytes: 32,
            ..Limits::default()
        };
        assert!(parse_object(r#"{"a":{"b":[1]}}"#, &limits).is_ok());
        let err = parse_object(r#"{"a":{"b":[[1]]}}"#, &limits).unwrap_err();
        assert_eq!(
            (err.code, err.reason),
            (
                ViolationCode::InputLimitExceeded,
                ArgumentErrorReason::TooDeep
            )
        );
        let err = parse_object(&format!(r#"{{"a":"{}"}}"#, "x".repeat(40)), &limits).unwrap_err();
        assert_eq!(err.reason, ArgumentErrorReason::TooLarge);
    }

    #[test]
    fn very_deep_input_is_an_error_not_a_stack_overflow() {
        let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let limits = Limits {
            max_depth: usize::MAX,
            max_argument_bytes: usize::MAX,
            ..Limits::default()
        };
        assert_eq!(
            parse_object(&text, &limits).unwrap_err().reason,
            ArgumentErrorReason::TooDeep
        );
    }

    #[test]
    fn messages_never_echo_values() {
        for text in [
            r#"{"password":"hunter2","password":"x"}"#,
            r#"{"k":"hunter2""#,
        ] {
            let err = parse_object(text, &Limits::default()).unwrap_err();
            assert!(!err.message.contains("hunter2"), "{}", err.message);
        }
    }
}
