//! Is the tool allowed at all? `forbidden` always wins, and catches
//! look-alikes of a forbidden name; then the allowlist (`allowed_functions`,
//! else the declared tools) matches exactly.

use super::declared::RequestTools;
use crate::policy::names::NameSet;
use crate::policy::{Named, Policy};
use crate::verdict::{Violation, ViolationCode};

/// Where a `not_allowed` message turns from the documented failure wording
/// (`tool call 'x' is not an allowed tool`) to the suggestion for the model.
const SUGGESTION: &str = " (closest allowed tool: ";

/// What follows a name that no list allows, in the documented wording.
const NOT_ALLOWED: &str = "' is not an allowed tool";

/// A `not_allowed` violation's line in `failures`: its `message` in the
/// documented wording, without the suggestion for the model (the call is
/// named `name`; whatever the name holds, the line ends where its message
/// says the name ends).
pub(crate) fn failure_line<'m>(message: &'m str, name: &str) -> &'m str {
    let end = "tool call '".len() + name.len() + NOT_ALLOWED.len();
    match (message.get(..end), message.get(end..)) {
        (Some(line), Some(rest)) if rest.starts_with(SUGGESTION) => line,
        _ => message,
    }
}

/// The fast path: a name the policy lists exactly and that looks like no
/// forbidden name, or any name when nothing restricts names.
fn passes(policy: &Policy, declared: Option<&NameSet>, name: &str, named: Option<&Named>) -> bool {
    named.is_some_and(|named| named.safe)
        || (policy.forbidden.is_empty()
            && allowlist(policy).is_none()
            && declared.is_none_or(NameSet::is_empty)
            && !name.trim().is_empty())
}

/// The violation of a call named `name`, if any; `named` is what the
/// policy says of the name ([`Policy::named`]).
/// `declared`, when given, replaces the policy's declared tools (the
/// policy's and a request's together).
pub(crate) fn violation(
    policy: &Policy,
    declared: Option<&NameSet>,
    call: usize,
    name: &str,
    named: Option<&Named>,
) -> Option<Violation> {
    if passes(policy, declared, name, named) {
        return None;
    }
    if name.trim().is_empty() {
        return Some(Violation::call(
            ViolationCode::NotAllowed,
            call,
            name,
            format!("tool call #{call} has no tool name"),
        ));
    }
    if let Some(forbidden) = policy.forbidden.matching(name) {
        let message = if forbidden == name {
            format!("tool call '{name}' is a forbidden tool")
        } else {
            format!(
                "tool call '{name}' is forbidden: it looks like the forbidden tool '{forbidden}'"
            )
        };
        return Some(Violation::call(
            ViolationCode::Forbidden,
            call,
            name,
            message,
        ));
    }
    let list = match declared {
        Some(declared) if policy.allowed.is_none() && !declared.is_empty() => declared,
        _ => allowlist(policy)?,
    };
    if list.contains(name) {
        return None;
    }
    let message = match list.closest(name) {
        Some(closest) => {
            format!("tool call '{name}{NOT_ALLOWED}{SUGGESTION}'{closest}')")
        }
        None => format!("tool call '{name}{NOT_ALLOWED} (no tool is allowed)"),
    };
    Some(Violation::call(
        ViolationCode::NotAllowed,
        call,
        name,
        message,
    ))
}

/// [`violation`] given the tools a request declared, when it did: a name
/// of their safe set passes at once.
pub(crate) fn request_violation(
    policy: &Policy,
    request: Option<&RequestTools>,
    call: usize,
    name: &str,
    named: Option<&Named>,
) -> Option<Violation> {
    match request {
        Some(request) if request.safe.contains(name) => None,
        _ => violation(policy, request.map(|r| &r.names), call, name, named),
    }
}

/// `allowed_functions` when set, else the declared tools when there are
/// some, else nothing (any name passes).
fn allowlist(policy: &Policy) -> Option<&NameSet> {
    policy
        .allowed
        .as_ref()
        .or((!policy.declared.is_empty()).then_some(&policy.declared))
}

/// The names that pass on sight: listed exactly, and not a look-alike of a
/// forbidden name. Computed once when the policy is compiled.
pub(crate) fn safe_names(policy: &Policy) -> rustc_hash::FxHashSet<String> {
    allowlist(policy)
        .map(|list| {
            list.names()
                .iter()
                .filter(|name| policy.forbidden.matching(name).is_none())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_line_ends_where_the_name_does() {
        let policy = Policy::from_text("allowed_functions: [get_weather]", None).unwrap();
        for name in ["get_wether", "x (closest allowed tool: 'y')", "'"] {
            let violation = violation(&policy, None, 0, name, policy.named(name)).unwrap();
            assert_eq!(
                failure_line(&violation.message, name),
                format!("tool call '{name}' is not an allowed tool"),
            );
        }
        let none = "tool call 'x' is not an allowed tool (no tool is allowed)";
        assert_eq!(failure_line(none, "x"), none);
    }
}
