//! What the agent was expected to do, over all its calls: `expected`,
//! `forbidden`, `order`, `min_tools`/`max_tools` and `validate_args`. Each
//! kind the policy sets scores between 0 and 1; the expectation score is
//! their mean. Failures use the exact wordings users already key on; each
//! violation's `message` starts with the same wording and then says what
//! was expected and what the agent did (tool names, call positions and
//! JSON types: never an argument's value).

use std::cell::OnceCell;

use serde_json::Value;

use crate::check::score::Ratio;
use crate::detect::json_type;
use crate::model::Arguments;
use crate::policy::names::ToolKey;
use crate::policy::{Expectations, Policy};
use crate::verdict::{CallVerdict, Violation, ViolationCode};

/// The expectations' violations, failure lines and score.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) violations: Vec<Violation>,
    pub(crate) failures: Vec<String>,
    pub(crate) kinds: Vec<Ratio>,
}

impl Outcome {
    fn expectation(&mut self, code: ViolationCode, tool: Option<&str>, message: String) {
        self.violations.push(Violation {
            code,
            call: None,
            tool: tool.map(str::to_owned),
            path: None,
            message,
        });
    }
}

/// Whether the policy expects at least one call.
pub(crate) fn needs_calls(expect: &Expectations) -> bool {
    !expect.expected.is_empty()
        || !expect.order.is_empty()
        || !expect.validate_args.is_empty()
        || expect.min_tools.is_some_and(|min| min > 0)
}

/// Judge every call of a payload read whole (none past `max_calls`).
pub(crate) fn evaluate(policy: &Policy, expect: &Expectations, calls: &[CallVerdict]) -> Outcome {
    let mut out = Outcome::default();
    expected(expect, calls, &mut out);
    forbidden(policy, calls, &mut out);
    order(expect, calls, &mut out);
    count(expect, calls.len(), &mut out);
    validate_args(expect, calls, &mut out);
    out
}

fn called<'a>(
    calls: &'a [CallVerdict],
    tool: &'a str,
) -> impl Iterator<Item = &'a CallVerdict> + 'a {
    calls.iter().filter(move |call| call.name == tool)
}

fn expected(expect: &Expectations, calls: &[CallVerdict], out: &mut Outcome) {
    if expect.expected.is_empty() {
        return;
    }
    let missing: Vec<&str> = expect
        .expected
        .iter()
        .filter(|tool| called(calls, tool).next().is_none())
        .map(String::as_str)
        .collect();
    out.kinds.push(Ratio::new(
        expect.expected.len() - missing.len(),
        expect.expected.len(),
    ));
    if missing.is_empty() {
        return;
    }
    let actual = called_names(calls);
    for tool in &missing {
        out.expectation(
            ViolationCode::MissingExpectedTools,
            Some(tool),
            format!(
                "Missing expected tools: {tool}: expected a call of '{tool}' (the policy expects {}); the agent called {actual}",
                expect.expected.join(", ")
            ),
        );
    }
    out.failures
        .push(format!("Missing expected tools: {}", missing.join(", ")));
}

fn forbidden(policy: &Policy, calls: &[CallVerdict], out: &mut Outcome) {
    if policy.forbidden.is_empty() {
        return;
    }
    // Each forbidden tool used, with the calls that used it.
    let mut used: Vec<&str> = Vec::new();
    let mut by: Vec<Vec<&CallVerdict>> = Vec::new();
    for call in calls {
        if policy.named(&call.name).is_some_and(|named| named.safe) {
            continue;
        }
        if let Some(tool) = policy.forbidden.matching(&call.name) {
            if let Some(at) = used.iter().position(|t| *t == tool) {
                by[at].push(call);
            } else {
                used.push(tool);
                by.push(vec![call]);
            }
        }
    }
    out.kinds.push(Ratio::of(used.is_empty()));
    if used.is_empty() {
        return;
    }
    for (tool, calls) in used.iter().zip(&by) {
        let seen: Vec<String> = calls
            .iter()
            .map(|call| format!("'{}' (call {})", call.name, call.index))
            .collect();
        out.expectation(
            ViolationCode::UsedForbiddenTools,
            Some(tool),
            format!(
                "Used forbidden tools: {tool}: expected no call of '{tool}'; the agent called {}",
                seen.join(", ")
            ),
        );
    }
    out.failures
        .push(format!("Used forbidden tools: {}", used.join(", ")));
}

fn order(expect: &Expectations, calls: &[CallVerdict], out: &mut Outcome) {
    if expect.order.is_empty() {
        return;
    }
    let firsts: Option<Vec<usize>> = expect
        .order
        .iter()
        .map(|tool| calls.iter().position(|call| call.name == *tool))
        .collect();
    let ok = firsts
        .as_ref()
        .is_some_and(|at| at.windows(2).all(|pair| pair[0] < pair[1]));
    out.kinds.push(Ratio::of(ok));
    if !ok {
        let wording = "Tool order incorrect";
        let expected = expect.order.join(" before ");
        let actual = match firsts {
            None => {
                let never: Vec<&str> = expect
                    .order
                    .iter()
                    .filter(|tool| !calls.iter().any(|call| call.name == **tool))
                    .map(String::as_str)
                    .collect();
                format!("never called {}", quoted(&never))
            }
            Some(at) => {
                let mut firsts: Vec<(usize, &str)> = at
                    .into_iter()
                    .zip(expect.order.iter().map(String::as_str))
                    .collect();
                firsts.sort_unstable();
                let seen: Vec<String> = firsts
                    .iter()
                    .map(|(at, tool)| format!("{tool} (call {at})"))
                    .collect();
                format!("first called {}", seen.join(", "))
            }
        };
        out.expectation(
            ViolationCode::OrderMismatch,
            None,
            format!("{wording}: expected {expected}; the agent {actual}"),
        );
        out.failures.push(wording.to_owned());
    }
}

fn count(expect: &Expectations, n: usize, out: &mut Outcome) {
    if expect.min_tools.is_none() && expect.max_tools.is_none() {
        return;
    }
    let mut ok = true;
    if let Some(min) = expect.min_tools.filter(|&min| n < min) {
        ok = false;
        let message = format!("Too few tools: {n} < {min}");
        out.expectation(
            ViolationCode::TooFewTools,
            None,
            format!("{message}: expected at least {min} tool calls; the agent made {n}"),
        );
        out.failures.push(message);
    }
    if let Some(max) = expect.max_tools.filter(|&max| n > max) {
        ok = false;
        let message = format!("Too many tools: {n} > {max}");
        out.expectation(
            ViolationCode::TooManyTools,
            None,
            format!("{message}: expected at most {max} tool calls; the agent made {n}"),
        );
        out.failures.push(message);
    }
    out.kinds.push(Ratio::of(ok));
}

fn validate_args(expect: &Expectations, calls: &[CallVerdict], out: &mut Outcome) {
    if expect.validate_args.is_empty() {
        return;
    }
    // A call of the tool under any spelling of its name counts (see
    // `ToolKey::meets`); names are folded once, and only when not equal.
    let call_keys: Vec<OnceCell<ToolKey>> = calls.iter().map(|_| OnceCell::new()).collect();
    let mut matched = 0;
    for pair in &expect.validate_args {
        let pair_key = OnceCell::new();
        let of_tool = calls.iter().zip(&call_keys).filter(|(call, key)| {
            call.name == pair.tool
                || key
                    .get_or_init(|| ToolKey::of(&call.name))
                    .meets(pair_key.get_or_init(|| ToolKey::of(&pair.tool)))
        });
        let of_tool: Vec<&CallVerdict> = of_tool.map(|(call, _)| call).collect();
        let met = of_tool.iter().any(|call| match &call.arguments {
            Arguments::Object(map) => map
                .get(&pair.arg)
                .is_some_and(|value| json_eq(value, &pair.value)),
            Arguments::Text(_) | Arguments::Invalid(_) => false,
        });
        if met {
            matched += 1;
        } else {
            // Names the tool, the argument and JSON types, never a value.
            let message = format!("Tool '{}' arg '{}' mismatch", pair.tool, pair.arg);
            let detail = arg_detail(pair.arg.as_str(), &pair.tool, &pair.value, &of_tool);
            out.expectation(
                ViolationCode::ArgMismatch,
                Some(&pair.tool),
                format!("{message}: {detail}"),
            );
            out.failures.push(message);
        }
    }
    out.kinds
        .push(Ratio::new(matched, expect.validate_args.len()));
}

/// The tools the calls name, in order, each once: `'a', 'b'`, or `no tool`.
fn called_names(calls: &[CallVerdict]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for call in calls {
        if !names.contains(&call.name.as_str()) {
            names.push(&call.name);
        }
    }
    if names.is_empty() {
        "no tool".to_owned()
    } else {
        quoted(&names)
    }
}

/// `'a', 'b'`.
fn quoted(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("'{name}'")).collect();
    quoted.join(", ")
}

/// What a `validate_args` pair expected and what the calls of its tool
/// sent, by JSON type: the policy's value is never repeated (it may be a
/// secret the agent must not learn from its errors).
fn arg_detail(arg: &str, tool: &str, expected: &Value, calls: &[&CallVerdict]) -> String {
    let want = format!(
        "expected '{arg}' equal to the {} the policy sets",
        json_type(expected)
    );
    if calls.is_empty() {
        return format!("{want}; the agent never called '{tool}'");
    }
    let mut got: Vec<String> = Vec::new();
    for call in calls {
        let what = match &call.arguments {
            Arguments::Object(map) => match map.get(arg) {
                Some(value) if json_type(value) == json_type(expected) => {
                    format!("a different {}", json_type(value))
                }
                Some(value) => format!("a {}", json_type(value)),
                None => format!("no '{arg}'"),
            },
            Arguments::Text(_) => "text arguments".to_owned(),
            Arguments::Invalid(_) => "arguments that could not be read".to_owned(),
        };
        got.push(format!("call {} sent {what}", call.index));
    }
    format!("{want}; {}", got.join(", "))
}

/// Equal as JSON, numbers by value: `10` equals `10.0`; objects whatever
/// their key order. What `validate_args` compares with (and `toolgate
/// test`'s assertions).
#[must_use]
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            matches!((x.as_f64(), y.as_f64()), (Some(x), Some(y)) if x == y)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::json_eq;

    #[test]
    fn numbers_by_value() {
        assert!(json_eq(&json!(10), &json!(10.0)));
        assert!(json_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!json_eq(&json!(10), &json!("10")));
        assert!(!json_eq(&json!(u64::MAX), &json!(-1)));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }
}
