//! A test's `assertions`: a dotted path mapped to a value (equal as JSON,
//! numbers by value) or to an operator object (`eq`, `ne`, `gt`, `gte`,
//! `lt`, `lte`, `contains`, `matches`); several operators in one object
//! must all hold.

use std::cmp::Ordering;
use std::fmt;

use regex::Regex;
use serde_json::{Map, Value};
use toolgate::check::json_eq;

use crate::template::{self, Scope};

/// The operators, as spelled in a suite.
pub const OPERATORS: [&str; 8] = ["eq", "ne", "gt", "gte", "lt", "lte", "contains", "matches"];

/// One assertion, compiled.
#[derive(Debug, Clone)]
pub struct Assertion {
    /// The path as written (`toolValidation.score`).
    pub path: String,
    pub(crate) subject: Subject,
    checks: Vec<Check>,
}

/// What an assertion reads.
#[derive(Debug, Clone)]
pub(crate) enum Subject {
    /// A path from a name bound by an output or the context.
    Named(Vec<String>),
    /// A field of the whole output of block `index` (a test without
    /// `assertions` asserts that each verdict passed).
    Block { index: usize, field: String },
}

#[derive(Debug, Clone)]
struct Check {
    op: Op,
    /// The expected value; its strings may hold references.
    expected: Value,
}

#[derive(Debug, Clone)]
enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    Contains,
    Matches(Regex),
}

impl Op {
    fn symbol(&self) -> &'static str {
        match self {
            Op::Eq => "",
            Op::Ne => "not ",
            Op::Gt => "> ",
            Op::Gte => ">= ",
            Op::Lt => "< ",
            Op::Lte => "<= ",
            Op::Contains => "to contain ",
            Op::Matches(_) => "to match ",
        }
    }
}

/// One assertion that did not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub path: String,
    /// What was expected, in words (`> 0.9`, `200`, `to contain "x"`).
    pub expected: String,
    /// The value found; `None` when the path holds nothing.
    pub actual: Option<Value>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.actual {
            Some(actual) => write!(
                f,
                "{}: expected {}, got {}",
                self.path,
                self.expected,
                short(actual)
            ),
            None => write!(
                f,
                "{}: expected {}, got nothing (no value at this path)",
                self.path, self.expected
            ),
        }
    }
}

/// A value as JSON, cut to a readable length.
fn short(value: &Value) -> String {
    const MAX: usize = 200;
    let text = value.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}... ({} bytes)", text.len())
}

impl Assertion {
    /// Compile `path: spec`; `subject` is where `path` points.
    pub(crate) fn compile(path: &str, subject: Subject, spec: &Value) -> Result<Self, String> {
        let checks = match spec {
            Value::Object(map) if map.keys().any(|k| OPERATORS.contains(&k.as_str())) => {
                operators(map)?
            }
            Value::Object(map) if map.len() == 1 => {
                let key = map.keys().next().expect("one key");
                match strsim_closest(key) {
                    Some(near) => {
                        return Err(format!(
                            "unknown operator `{key}`; the closest is `{near}` (an object with other keys is compared as a value: wrap it as {{\"eq\": ...}})"
                        ))
                    }
                    None => vec![Check {
                        op: Op::Eq,
                        expected: spec.clone(),
                    }],
                }
            }
            other => vec![Check {
                op: Op::Eq,
                expected: other.clone(),
            }],
        };
        for check in &checks {
            template::references(&check.expected)?;
        }
        Ok(Assertion {
            path: path.to_owned(),
            subject,
            checks,
        })
    }

    /// The expected values, whose references the loader checks.
    pub(crate) fn expected_values(&self) -> impl Iterator<Item = &Value> {
        self.checks.iter().map(|check| &check.expected)
    }

    /// Check `actual`; the first check that does not hold.
    pub(crate) fn check(&self, actual: Option<&Value>, scope: &Scope<'_>) -> Option<Failure> {
        for check in &self.checks {
            let expected = match scope.resolve(&check.expected) {
                Ok(expected) => expected,
                Err(message) => {
                    return Some(Failure {
                        path: self.path.clone(),
                        expected: message,
                        actual: actual.cloned(),
                    })
                }
            };
            let holds = actual.is_some_and(|actual| holds(&check.op, actual, &expected));
            if !holds {
                let words = match &check.op {
                    Op::Matches(regex) => format!("to match /{}/", regex.as_str()),
                    op => format!("{}{}", op.symbol(), short(&expected)),
                };
                return Some(Failure {
                    path: self.path.clone(),
                    expected: words,
                    actual: actual.cloned(),
                });
            }
        }
        None
    }
}

fn strsim_closest(key: &str) -> Option<&'static str> {
    OPERATORS
        .iter()
        .copied()
        .find(|op| strsim::damerau_levenshtein(key, op) <= 1 && key.len() <= 8)
}

fn operators(map: &Map<String, Value>) -> Result<Vec<Check>, String> {
    let mut checks = Vec::with_capacity(map.len());
    for (key, expected) in map {
        let op = match key.as_str() {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "gt" => Op::Gt,
            "gte" => Op::Gte,
            "lt" => Op::Lt,
            "lte" => Op::Lte,
            "contains" => Op::Contains,
            "matches" => {
                let Value::String(pattern) = expected else {
                    return Err("`matches` takes a regular expression (a string)".into());
                };
                let regex = Regex::new(pattern)
                    .map_err(|err| format!("`matches`: not a valid regular expression: {err}"))?;
                Op::Matches(regex)
            }
            other => {
                let hint = strsim_closest(other)
                    .map(|near| format!("; the closest is `{near}`"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown operator `{other}`{hint} (operators: {})",
                    OPERATORS.join(", ")
                ));
            }
        };
        if matches!(op, Op::Gt | Op::Gte | Op::Lt | Op::Lte)
            && !(expected.is_number() || template::has_references(expected))
        {
            return Err(format!("`{key}` compares numbers; {expected} is not one"));
        }
        checks.push(Check {
            op,
            expected: expected.clone(),
        });
    }
    Ok(checks)
}

fn holds(op: &Op, actual: &Value, expected: &Value) -> bool {
    match op {
        Op::Eq => json_eq(actual, expected),
        Op::Ne => !json_eq(actual, expected),
        Op::Gt => compare(actual, expected) == Some(Ordering::Greater),
        Op::Gte => matches!(
            compare(actual, expected),
            Some(Ordering::Greater | Ordering::Equal)
        ),
        Op::Lt => compare(actual, expected) == Some(Ordering::Less),
        Op::Lte => matches!(
            compare(actual, expected),
            Some(Ordering::Less | Ordering::Equal)
        ),
        Op::Contains => match (actual, expected) {
            (Value::String(text), Value::String(part)) => text.contains(part.as_str()),
            (Value::Array(items), _) => items.iter().any(|item| json_eq(item, expected)),
            (Value::Object(map), Value::String(key)) => map.contains_key(key),
            _ => false,
        },
        Op::Matches(regex) => actual.as_str().is_some_and(|text| regex.is_match(text)),
    }
}

/// Two numbers by value; `None` unless both are numbers.
fn compare(actual: &Value, expected: &Value) -> Option<Ordering> {
    let (Value::Number(a), Value::Number(b)) = (actual, expected) else {
        return None;
    };
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return Some(a.cmp(&b));
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return Some(a.cmp(&b));
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(spec: &Value, actual: Option<&Value>) -> Option<String> {
        let empty = Map::new();
        let scope = Scope {
            outputs: &empty,
            context: &empty,
        };
        Assertion::compile("x", Subject::Named(vec!["x".into()]), spec)
            .unwrap()
            .check(actual, &scope)
            .map(|failure| failure.to_string())
    }

    #[test]
    fn every_operator_holds_and_fails() {
        let cases = [
            (json!(10), json!(10.0), json!(11)),
            (json!({"eq": "a"}), json!("a"), json!("b")),
            (json!({"ne": 1}), json!(2), json!(1.0)),
            (json!({"gt": 0.9}), json!(1), json!(0.9)),
            (json!({"gte": 0.9}), json!(0.9), json!(0.5)),
            (json!({"lt": 3}), json!(2), json!(3)),
            (json!({"lte": 3}), json!(3), json!(4)),
            (json!({"contains": "ord"}), json!("order"), json!("cart")),
            (json!({"contains": "b"}), json!(["a", "b"]), json!(["a"])),
            (json!({"contains": "k"}), json!({"k": 1}), json!({"j": 1})),
            (
                json!({"matches": "^call_[0-9]+$"}),
                json!("call_12"),
                json!("call_x"),
            ),
            (json!({"gt": 1, "lt": 3}), json!(2), json!(3)),
            (json!({"a": [1]}), json!({"a": [1.0]}), json!({"a": [2]})),
        ];
        for (spec, good, bad) in cases {
            assert_eq!(run(&spec, Some(&good)), None, "{spec} on {good}");
            assert!(run(&spec, Some(&bad)).is_some(), "{spec} on {bad}");
            assert!(run(&spec, None).unwrap().contains("got nothing"));
        }
        assert_eq!(
            run(&json!({"gt": 0.9}), Some(&json!(0.5))).unwrap(),
            "x: expected > 0.9, got 0.5"
        );
        assert_eq!(
            run(&json!({"gt": 1}), Some(&json!("2"))).unwrap(),
            "x: expected > 1, got \"2\""
        );
    }

    #[test]
    fn bad_operators_are_load_errors() {
        let subject = || Subject::Named(vec!["x".into()]);
        let err = Assertion::compile("x", subject(), &json!({"gtt": 1})).unwrap_err();
        assert!(err.contains("closest is `gt`"), "{err}");
        let err = Assertion::compile("x", subject(), &json!({"gt": 1, "foo": 2})).unwrap_err();
        assert!(err.contains("unknown operator `foo`"), "{err}");
        let err = Assertion::compile("x", subject(), &json!({"matches": "("})).unwrap_err();
        assert!(err.contains("regular expression"), "{err}");
        let err = Assertion::compile("x", subject(), &json!({"lt": "a"})).unwrap_err();
        assert!(err.contains("compares numbers"), "{err}");
    }
}
