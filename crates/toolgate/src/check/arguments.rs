//! Are the arguments what the tool takes? Readable (from detection), clean
//! (`normalize`), no arguments for a tool declared without parameters, every
//! `required_params` entry present, and valid against every JSON Schema the
//! policy holds for the tool.

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use crate::check::normalize;
use crate::model::Arguments;
use crate::policy::{DeclaredKind, Policy, ToolSpec};
use crate::verdict::{Violation, ViolationCode};

/// Check (and clean) the arguments of call `call` to tool `name`, adding
/// violations to `out`. `request` holds what a request declares, checked
/// beside the policy.
pub(crate) fn check(
    policy: &Policy,
    request: Option<&FxHashMap<String, ToolSpec>>,
    call: usize,
    name: &str,
    arguments: &mut Arguments,
    normalize: bool,
    out: &mut Vec<Violation>,
) {
    let specs = [policy.tools.get(name), request.and_then(|r| r.get(name))];
    let mut specs = specs.into_iter().flatten();
    match arguments {
        Arguments::Invalid(err) => out.push(Violation::call(
            err.code,
            call,
            name,
            format!("arguments for tool '{name}' are not valid: {}", err.message),
        )),
        Arguments::Text(_) => {
            if specs.any(takes_json) {
                out.push(Violation::call(
                    ViolationCode::MalformedArguments,
                    call,
                    name,
                    format!("tool '{name}' takes JSON arguments, but the call sent freeform text"),
                ));
            }
        }
        Arguments::Object(map) => {
            if normalize {
                normalize::clean(map, &policy.normalize);
            }
            for spec in specs.filter(|spec| takes_json(spec)) {
                check_object(spec, call, name, map, out);
            }
        }
    }
}

/// Whether a tool's arguments are JSON the policy checks (not a custom or
/// hosted tool's).
fn takes_json(spec: &ToolSpec) -> bool {
    matches!(spec.declared, None | Some(DeclaredKind::Function))
}

fn check_object(
    spec: &ToolSpec,
    call: usize,
    name: &str,
    map: &mut Map<String, Value>,
    out: &mut Vec<Violation>,
) {
    if spec.takes_no_arguments && !map.is_empty() {
        let keys: Vec<String> = map.keys().take(5).map(|k| format!("'{k}'")).collect();
        let more = if map.len() > keys.len() { ", ..." } else { "" };
        out.push(
            Violation::call(
                ViolationCode::UnexpectedArguments,
                call,
                name,
                format!(
                    "tool '{name}' takes no arguments, but the call has {}{more}",
                    keys.join(", ")
                ),
            )
            .at(pointer(map.keys().next().map_or("", String::as_str))),
        );
        return;
    }
    let mut missing: Vec<String> = Vec::new();
    for param in &spec.required {
        if !map.contains_key(param) {
            let path = pointer(param);
            out.push(
                Violation::call(
                    ViolationCode::MissingRequiredParam,
                    call,
                    name,
                    format!("tool call '{name}' is missing required parameter '{param}'"),
                )
                .at(path.clone()),
            );
            missing.push(path);
        }
    }
    for schema in &spec.schemas {
        for failure in schema.check_object(map) {
            // `required_params` already reported this one.
            if missing.contains(&failure.path)
                && failure.message.ends_with("is a required property")
            {
                continue;
            }
            out.push(
                Violation::call(
                    ViolationCode::SchemaViolation,
                    call,
                    name,
                    format!(
                        "arguments for tool '{name}' do not match its schema: {}",
                        failure.message
                    ),
                )
                .at(failure.path),
            );
        }
    }
}

/// A JSON Pointer to a top-level argument.
fn pointer(key: &str) -> String {
    crate::verdict::pointer("", key)
}
