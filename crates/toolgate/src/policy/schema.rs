//! JSON Schema, compiled once at load by the `jsonschema` crate (every
//! draft, chosen by `$schema`, 2020-12 when absent), and the words a
//! violation uses: they name the argument and the rule, never the value.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::json::{Json, SerdeJson};
use jsonschema::{Retrieve, ValidationError, ValidationOptions, Validator};
use serde_json::{Map, Value};

use crate::detect::tape::{Tape, TapeJson};
use crate::policy::email::is_email;
use crate::verdict::pointer;

/// One compiled schema for a tool's arguments.
#[derive(Debug)]
pub struct ArgumentSchema {
    /// For arguments on a tape, where every call is checked first.
    on_tape: Validator<TapeJson>,
    /// The same schema for `serde_json` values (a failing call's details,
    /// arguments built or changed as an object), compiled the first time
    /// it is needed: half of a policy's load when it is never needed. The
    /// schema compiled for the tape, with the same options, so it compiles
    /// here too; should it not, every value fails.
    validator: OnceLock<Result<Validator, String>>,
    schema: Value,
    validate_formats: bool,
}

/// A schema failure, in the documented terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFailure {
    /// A JSON Pointer into the arguments (`""` for the whole object).
    pub path: String,
    /// What rule failed, naming the argument, never its value.
    pub message: String,
}

/// Most failures reported for one call: enough to correct a call, bounded
/// so that a pathological payload cannot make the verdict huge.
const MAX_FAILURES: usize = 16;

/// Start building, on a core of its own, what the first schema compiled in
/// this process builds before any schema's own work: the draft's
/// meta-schema validator (about 6M instructions, half of a 12-tool
/// policy's load) and the tables it uses. Called when a policy's text is
/// about to be parsed, so that the two overlap; the first compile waits for
/// it if it is still running. Once a process, and not on one core.
pub(crate) fn warm_up() {
    static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if STARTED.swap(true, std::sync::atomic::Ordering::Relaxed)
        || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) < 2
    {
        return;
    }
    // Should the thread not start, the first compile builds it all.
    let _ = std::thread::Builder::new()
        .name("toolgate-schemas".to_owned())
        .spawn(|| {
            let sample = serde_json::json!({
                "type": "object",
                "properties": {"name": {"type": "string", "format": "email"}},
                "required": ["name"],
            });
            let _ = ArgumentSchema::compile(&sample, true);
        });
}

/// The options a schema is compiled with, for arguments in the JSON
/// representation `F`: the same for the tape's validator and the
/// `serde_json` one, which must judge alike.
fn options<'i, F: Json>(validate_formats: bool) -> ValidationOptions<'i, Arc<dyn Retrieve>, F> {
    jsonschema::options_for::<F>()
        .should_validate_formats(validate_formats)
        .with_format("email", is_email)
}

impl ArgumentSchema {
    /// Compile `schema`, asserting `format` when `validate_formats`.
    /// External `$ref`s are never fetched: a schema must be self-contained.
    pub fn compile(schema: &Value, validate_formats: bool) -> Result<Self, String> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(format!(
                "a JSON Schema must be an object or a boolean, not {}",
                crate::detect::args::json_type(schema)
            ));
        }
        let on_tape = options::<TapeJson>(validate_formats)
            .build(schema)
            .map_err(|err| describe_schema_error(&err))?;
        Ok(ArgumentSchema {
            on_tape,
            validator: OnceLock::new(),
            schema: schema.clone(),
            validate_formats,
        })
    }

    /// The schema compiled for `serde_json` values.
    fn validator(&self) -> Result<&Validator, &str> {
        self.validator
            .get_or_init(|| {
                options::<SerdeJson>(self.validate_formats)
                    .build(&self.schema)
                    .map_err(|err| describe_schema_error(&err))
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// For the tests: read arguments `text` onto a tape and check them
    /// there; `None` when the tape's reader leaves them to the strict one.
    #[doc(hidden)]
    #[must_use]
    pub fn passes_on_tape(&self, text: &str) -> Option<bool> {
        Tape::read(text, crate::detect::limits::HARD_MAX_DEPTH).map(|tape| self.passes_tape(&tape))
    }

    /// [`passes`](Self::passes) for arguments on a tape.
    pub(crate) fn passes_tape(&self, arguments: &Tape) -> bool {
        self.on_tape.is_valid(arguments.root())
    }

    /// [`failures`](Self::failures) of arguments on a tape, each message
    /// after `lead`.
    pub(crate) fn failures_on_tape(
        &self,
        arguments: &Tape,
        lead: &dyn std::fmt::Display,
    ) -> Vec<SchemaFailure> {
        self.on_tape
            .iter_errors(arguments.root())
            .take(MAX_FAILURES)
            .map(|err| failure(&err, lead))
            .collect()
    }

    /// The fast path: no detail, no allocation when valid.
    #[must_use]
    pub fn passes(&self, arguments: &Value) -> bool {
        self.validator()
            .is_ok_and(|validator| validator.is_valid(arguments))
    }

    /// Every failure (up to a bound), each with a JSON Pointer.
    #[must_use]
    pub fn failures(&self, arguments: &Value) -> Vec<SchemaFailure> {
        self.failures_after(arguments, &"")
    }

    /// [`failures`](Self::failures), each message after `lead`.
    fn failures_after(
        &self,
        arguments: &Value,
        lead: &dyn std::fmt::Display,
    ) -> Vec<SchemaFailure> {
        match self.validator() {
            Ok(validator) => validator
                .iter_errors(arguments)
                .take(MAX_FAILURES)
                .map(|err| failure(&err, lead))
                .collect(),
            Err(why) => vec![SchemaFailure {
                path: String::new(),
                message: format!("{lead}the arguments cannot be checked: the schema is {why}"),
            }],
        }
    }

    /// Validate an arguments object in place: it is lent to the validator as
    /// a JSON value and handed back unchanged.
    pub fn check_object(&self, arguments: &mut Map<String, Value>) -> Vec<SchemaFailure> {
        self.check_object_after(arguments, &"")
    }

    /// [`check_object`](Self::check_object), each message after `lead`.
    pub(crate) fn check_object_after(
        &self,
        arguments: &mut Map<String, Value>,
        lead: &dyn std::fmt::Display,
    ) -> Vec<SchemaFailure> {
        lent(arguments, |value| {
            if self.passes(value) {
                Vec::new()
            } else {
                self.failures_after(value, lead)
            }
        })
    }

    /// [`failures`](Self::failures) of an arguments object known to fail
    /// (on its tape), lent as [`check_object`](Self::check_object) lends
    /// it, each message after `lead`.
    pub(crate) fn failures_of_object(
        &self,
        arguments: &mut Map<String, Value>,
        lead: &dyn std::fmt::Display,
    ) -> Vec<SchemaFailure> {
        lent(arguments, |value| self.failures_after(value, lead))
    }
}

/// `f` of an arguments object lent as a JSON value, handed back unchanged.
fn lent<T>(arguments: &mut Map<String, Value>, f: impl FnOnce(&Value) -> T) -> T {
    let value = Value::Object(std::mem::take(arguments));
    let found = f(&value);
    if let Value::Object(map) = value {
        *arguments = map;
    }
    found
}

fn describe_schema_error(err: &ValidationError<'_>) -> String {
    let at = err.instance_path().as_str();
    let mut text = String::from("not a valid JSON Schema");
    if !at.is_empty() {
        let _ = write!(text, " at {at}");
    }
    let _ = write!(text, ": {err}");
    text
}

/// The argument a failure at `path` is about, as its message names it:
/// the last segment of the pointer, quoted, or `the arguments` for the
/// whole object.
#[derive(Clone, Copy)]
struct Subject<'p>(&'p str);

impl std::fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.0;
        match path.rsplit('/').next() {
            Some(last) if !path.is_empty() && !last.contains('~') => write!(f, "'{last}'"),
            Some(last) if !path.is_empty() => {
                write!(f, "'{}'", last.replace("~1", "/").replace("~0", "~"))
            }
            _ => f.write_str("the arguments"),
        }
    }
}

/// A failure said after `lead` (the words that put it in context): its
/// message written once, into one string.
fn failure(err: &ValidationError<'_>, lead: &dyn std::fmt::Display) -> SchemaFailure {
    let path = err.instance_path().as_str();
    let mut message = String::with_capacity(128);
    let _ = write!(message, "{lead}");
    if let ValidationErrorKind::Required { property } = err.kind() {
        // The missing property is the subject: point at it.
        let name = property
            .as_str()
            .map_or_else(|| Cow::Owned(property.to_string()), Cow::Borrowed);
        let _ = write!(message, "'{name}' is a required property");
        return SchemaFailure {
            path: pointer(path, &name),
            message,
        };
    }
    let _ = rule(err.kind(), Subject(path), &mut message);
    // One property too many: point at it, not at the object holding it.
    if let ValidationErrorKind::AdditionalProperties { unexpected }
    | ValidationErrorKind::UnevaluatedProperties { unexpected } = err.kind()
    {
        if let [one] = unexpected.as_slice() {
            return SchemaFailure {
                path: pointer(path, one),
                message,
            };
        }
    }
    SchemaFailure {
        path: path.to_owned(),
        message,
    }
}

/// What rule `kind` is, said of `subject`, written to `out`.
#[allow(clippy::too_many_lines)] // one arm per keyword, and no `_` arm
fn rule(kind: &ValidationErrorKind, subject: Subject<'_>, out: &mut String) -> std::fmt::Result {
    match kind {
        ValidationErrorKind::Required { .. } => write!(out, "{subject} lacks a required property"),
        ValidationErrorKind::Type { kind: types } => {
            write!(out, "{subject} is not of type ")?;
            type_names(types, out)
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let noun = if unexpected.len() == 1 {
                "property"
            } else {
                "properties"
            };
            write!(out, "additional {noun} ")?;
            for (at, name) in unexpected.iter().enumerate() {
                let comma = if at == 0 { "" } else { ", " };
                write!(out, "{comma}'{name}'")?;
            }
            write!(out, " not allowed in {subject}")
        }
        ValidationErrorKind::Enum { options } => {
            write!(out, "{subject} is not one of ")?;
            allowed_values(options, out)
        }
        ValidationErrorKind::Constant { .. } => {
            write!(out, "{subject} is not the value the schema requires")
        }
        ValidationErrorKind::Format { format } => {
            write!(out, "{subject} is not a valid '{format}'")
        }
        ValidationErrorKind::Pattern { pattern } => {
            write!(out, "{subject} does not match the pattern '{pattern}'")
        }
        ValidationErrorKind::MinLength { limit } => {
            write!(out, "{subject} is shorter than {limit} characters")
        }
        ValidationErrorKind::MaxLength { limit } => {
            write!(out, "{subject} is longer than {limit} characters")
        }
        ValidationErrorKind::Minimum { limit } => {
            write!(out, "{subject} is less than the minimum of {limit}")
        }
        ValidationErrorKind::Maximum { limit } => {
            write!(out, "{subject} is more than the maximum of {limit}")
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => write!(
            out,
            "{subject} is less than or equal to the exclusive minimum of {limit}"
        ),
        ValidationErrorKind::ExclusiveMaximum { limit } => write!(
            out,
            "{subject} is more than or equal to the exclusive maximum of {limit}"
        ),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            write!(out, "{subject} is not a multiple of {multiple_of}")
        }
        ValidationErrorKind::MinItems { limit } => {
            write!(out, "{subject} has fewer than {limit} items")
        }
        ValidationErrorKind::MaxItems { limit } => {
            write!(out, "{subject} has more than {limit} items")
        }
        ValidationErrorKind::UniqueItems => write!(out, "{subject} has non-unique items"),
        ValidationErrorKind::Contains => {
            write!(out, "{subject} contains no item the schema requires")
        }
        ValidationErrorKind::AdditionalItems { limit } => write!(
            out,
            "{subject} has more than the {limit} items the schema allows"
        ),
        ValidationErrorKind::UnevaluatedItems { .. } => {
            write!(out, "{subject} has items the schema does not allow")
        }
        ValidationErrorKind::MinProperties { limit } => {
            write!(out, "{subject} has fewer than {limit} properties")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            write!(out, "{subject} has more than {limit} properties")
        }
        ValidationErrorKind::PropertyNames { .. } => {
            write!(
                out,
                "{subject} has a property name the schema does not allow"
            )
        }
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            write!(out, "{subject} is not valid under any of the given schemas")
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            write!(
                out,
                "{subject} is valid under more than one of the given schemas"
            )
        }
        ValidationErrorKind::Not { .. } => {
            write!(out, "{subject} matches a schema it must not match")
        }
        ValidationErrorKind::FalseSchema => write!(out, "{subject} is not allowed by the schema"),
        ValidationErrorKind::ContentEncoding { content_encoding } => {
            write!(out, "{subject} is not encoded as '{content_encoding}'")
        }
        ValidationErrorKind::ContentMediaType { content_media_type } => {
            write!(out, "{subject} is not of media type '{content_media_type}'")
        }
        ValidationErrorKind::FromUtf8 { .. } => {
            write!(out, "{subject} does not decode to UTF-8 text")
        }
        ValidationErrorKind::Custom { keyword, .. } => {
            write!(out, "{subject} fails the '{keyword}' rule")
        }
        ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. } => write!(
            out,
            "{subject} could not be matched against the schema's pattern within its limits"
        ),
        ValidationErrorKind::Referencing(_) => write!(
            out,
            "{subject} could not be checked: the schema has an unresolved reference"
        ),
    }
}

/// The types a `type` allows, quoted, joined by `or`.
fn type_names(kind: &TypeKind, out: &mut String) -> std::fmt::Result {
    match kind {
        TypeKind::Single(single) => write!(out, "'{single}'"),
        TypeKind::Multiple(set) => {
            for (at, name) in set.iter().enumerate() {
                let or = if at == 0 { "" } else { " or " };
                write!(out, "{or}'{name}'")?;
            }
            Ok(())
        }
    }
}

/// The values an `enum` allows: these are the schema's, not the caller's,
/// and naming them lets a model correct its call. Long lists are cut.
fn allowed_values(options: &Value, out: &mut String) -> std::fmt::Result {
    const SHOWN: usize = 12;
    let Some(list) = options.as_array() else {
        out.push_str("the allowed values");
        return Ok(());
    };
    out.push('[');
    for (at, option) in list.iter().take(SHOWN).enumerate() {
        let comma = if at == 0 { "" } else { ", " };
        write!(out, "{comma}{option}")?;
    }
    if list.len() > SHOWN {
        write!(out, ", ... ({} more)", list.len() - SHOWN)?;
    }
    out.push(']');
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn failures_said_from_a_tape_are_those_of_the_built_object() {
        let schema = ArgumentSchema::compile(
            &json!({
                "$defs": {
                    "address": {"type": "object", "required": ["city"],
                                "properties": {"city": {"type": "string", "minLength": 2},
                                               "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                                "additionalProperties": false},
                    "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"},
                                                              "v": {"type": "integer"}}}
                },
                "type": "object",
                "required": ["id", "kind"],
                "properties": {
                    "id": {"type": "string", "format": "uuid"},
                    "kind": {"enum": ["a", "b"]},
                    "mail": {"type": "string", "format": "email"},
                    "at": {"type": "string", "format": "date-time"},
                    "home": {"$ref": "#/$defs/address"},
                    "pay": {"oneOf": [{"type": "object", "required": ["card"]},
                                      {"type": "object", "required": ["iban"]}]},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2,
                             "uniqueItems": true},
                    "list": {"$ref": "#/$defs/node"}
                },
                "allOf": [{"properties": {"extra": {"type": "boolean"}}}],
                "unevaluatedProperties": false
            }),
            true,
        )
        .unwrap();
        for args in [
            "{}",
            r#"{"id": "x", "kind": "c", "mail": "a@", "at": "2026-13-01T00:00:00Z"}"#,
            r#"{"id": "00000000-0000-0000-0000-000000000000", "kind": "a",
                "home": {"zip": "1234", "street": "x"}, "pay": {"card": 1, "iban": 2}}"#,
            r#"{"kind": "b", "pay": {}, "tags": ["x", "x", 3], "extra": "yes", "other": 1}"#,
            r#"{"kind": "a", "list": {"v": 1, "next": {"v": "two", "next": {"v": 1.5}}}}"#,
            r#"{"id": 7, "kind": null, "home": [], "tags": {}, "list": 3}"#,
        ] {
            let tape = Tape::read(args, crate::detect::limits::HARD_MAX_DEPTH).unwrap();
            let value: Value = serde_json::from_str(args).unwrap();
            let expected = schema.failures(&value);
            assert!(!expected.is_empty(), "{args}");
            assert_eq!(schema.failures_on_tape(&tape, &""), expected, "{args}");
        }
    }

    #[test]
    fn messages_name_the_rule_not_the_value() {
        let schema = ArgumentSchema::compile(
            &json!({"type": "object", "required": ["city"],
                    "properties": {"unit": {"enum": ["c", "f"]}, "n": {"type": "integer", "maximum": 5},
                                   "mail": {"type": "string", "format": "email"}}}),
            true,
        )
        .unwrap();
        let args = json!({"unit": "kelvin-secret", "n": 99, "mail": "secret-not-an-email"});
        let found = schema.failures(&args);
        let text = format!("{found:?}");
        assert!(!text.contains("secret"), "{text}");
        assert!(found.contains(&SchemaFailure {
            path: "/city".into(),
            message: "'city' is a required property".into()
        }));
        assert!(found
            .iter()
            .any(|f| f.path == "/unit" && f.message.contains("[\"c\", \"f\"]")));
        assert!(found
            .iter()
            .any(|f| f.path == "/n" && f.message.contains("maximum of 5")));
        assert!(found
            .iter()
            .any(|f| f.path == "/mail" && f.message.contains("'email'")));
        assert!(!schema.passes(&args));
    }

    #[test]
    fn drafts_by_dollar_schema_and_bad_schemas() {
        // Draft 4 reads `exclusiveMaximum` as a boolean.
        let draft4 = json!({"$schema": "http://json-schema.org/draft-04/schema#",
                            "type": "number", "maximum": 5, "exclusiveMaximum": true});
        let schema = ArgumentSchema::compile(&draft4, true).unwrap();
        assert!(!schema.passes(&json!(5)));
        assert!(ArgumentSchema::compile(&json!({"type": "strng"}), true).is_err());
        assert!(ArgumentSchema::compile(&json!(3), true).is_err());
    }

    /// The JSON text of `text` with every character past ASCII written as
    /// a `\uXXXX` escape (surrogate pairs past the first plane), as
    /// Python's `json.dumps` writes it.
    fn ascii_literal(text: &str) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for c in serde_json::to_string(text).unwrap().chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let mut units = [0; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
        out
    }

    proptest::proptest! {
        /// Long strings dense with escapes, which the tape keeps as
        /// written (checked, not decoded), are judged exactly as their
        /// text: lengths at their bounds, patterns, `enum`, `const`,
        /// `uniqueItems`, and the object built from the tape.
        #[test]
        fn long_strings_kept_as_written_are_judged_as_their_text(
            text in "([a-z \"\\\\/\n\t\r\u{1}é中😀]{1,8}){8,60}",
            other in "[a-z\"\n]{60,70}",
            ascii in proptest::bool::ANY,
            slack in 0_u64..3,
        ) {
            let chars = text.chars().count() as u64;
            let schema = ArgumentSchema::compile(
                &json!({
                    "type": "object",
                    "properties": {
                        "s": {"type": "string", "maxLength": chars + slack - 1,
                              "minLength": chars + 1 - slack},
                        "p": {"type": "string", "pattern": "^[a-z]"},
                        "e": {"enum": [other.clone(), text.clone()]},
                        "c": {"const": other.clone()},
                        "u": {"type": "array", "uniqueItems": true},
                    },
                }),
                true,
            )
            .unwrap();
            let literal = |text: &str| {
                if ascii { ascii_literal(text) } else { serde_json::to_string(text).unwrap() }
            };
            let (t, o) = (literal(&text), literal(&other));
            let args = format!(
                r#"{{"s":{t},"p":{t},"e":{t},"c":{t},"u":[{t},{o},{t}],"n":{{"k":{t}}}}}"#
            );
            let tape = Tape::read(&args, crate::detect::limits::HARD_MAX_DEPTH).unwrap();
            let value: Value = serde_json::from_str(&args).unwrap();
            proptest::prop_assert_eq!(&Value::Object(tape.to_map()), &value);
            proptest::prop_assert_eq!(
                schema.failures_on_tape(&tape, &""),
                schema.failures(&value),
                "{}", args
            );
            proptest::prop_assert_eq!(schema.passes_tape(&tape), schema.passes(&value));
        }
    }
}
