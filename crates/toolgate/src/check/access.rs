//! Is the call inside the caller's authority? Roles allow and forbid tools,
//! CEL rules must hold on the arguments, and rate limits count the calls
//! that passed everything else. Every error denies: a rule that cannot be
//! evaluated is `unauthorized_argument`, and with roles set a call without
//! a caller is `unauthorized_role`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::check::RateCounter;
use crate::model::{Arguments, Caller};
use crate::policy::access::{Access, LimitKey, Rule};
use crate::verdict::{pointer, Violation, ViolationCode};

/// The role check: a role's `allow` names the tool exactly (or is `*`); a
/// role's `forbid` catches every spelling of the tool.
pub(crate) fn role(
    access: &Access,
    caller: Option<&Caller>,
    call: usize,
    name: &str,
) -> Option<Violation> {
    if !access.has_roles() {
        return None;
    }
    let deny = |message: String| {
        Some(Violation::call(
            ViolationCode::UnauthorizedRole,
            call,
            name,
            message,
        ))
    };
    let Some(caller) = caller else {
        return deny(format!(
            "tool call '{name}' needs a caller with a role that allows it, and no caller was given"
        ));
    };
    let roles: Vec<_> = caller
        .roles
        .iter()
        .filter_map(|r| access.roles.get(r))
        .collect();
    if roles
        .iter()
        .any(|role| role.forbid.contains("*") || role.forbid.matching(name).is_some())
    {
        return deny(format!(
            "a role of caller '{}' forbids tool '{name}'",
            caller.id
        ));
    }
    if !roles.iter().any(|role| {
        role.allow
            .iter()
            .any(|allowed| allowed == "*" || allowed == name)
    }) {
        return deny(format!(
            "caller '{}' has no role that allows tool '{name}'",
            caller.id
        ));
    }
    None
}

/// The rules for `name`, each evaluated on the (cleaned) arguments.
pub(crate) fn rules(
    access: &Access,
    caller: Option<&Caller>,
    call: usize,
    name: &str,
    arguments: &Arguments,
    out: &mut Vec<Violation>,
) {
    if access.rules.is_empty() {
        return;
    }
    let mut context: Option<cel::Context<'_, '_>> = None;
    for rule in access.rules_for(name) {
        let context = context.get_or_insert_with(|| rule_context(caller, name, arguments));
        let holds = matches!(rule.program.execute(context), Ok(cel::Value::Bool(true)));
        if !holds {
            out.push(violation(rule, call, name));
        }
    }
}

fn violation(rule: &Rule, call: usize, name: &str) -> Violation {
    let message = match &rule.message {
        Some(message) => format!("tool call '{name}': {message}"),
        None => format!(
            "arguments for tool '{name}' are outside the caller's authority: `{}` does not hold",
            rule.when
        ),
    };
    let found = Violation::call(ViolationCode::UnauthorizedArgument, call, name, message);
    match &rule.argument {
        Some(argument) => found.at(pointer("", argument)),
        None => found,
    }
}

/// `args`, `tool` and `caller` (its id, roles and each attribute).
fn rule_context(
    caller: Option<&Caller>,
    name: &str,
    arguments: &Arguments,
) -> cel::Context<'static, 'static> {
    let mut context = cel::Context::default();
    let args = match arguments {
        Arguments::Object(map) => cel::to_value(map).unwrap_or(cel::Value::Null),
        Arguments::Text(text) => cel::Value::from(text.clone()),
        Arguments::Invalid(_) => cel::Value::Null,
    };
    context.add_variable_from_value("args", args);
    context.add_variable_from_value("tool", cel::Value::from(name.to_owned()));
    let mut who = Map::new();
    if let Some(caller) = caller {
        who.extend(
            caller
                .attributes
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        who.insert("id".to_owned(), Value::String(caller.id.clone()));
        who.insert(
            "roles".to_owned(),
            Value::Array(caller.roles.iter().cloned().map(Value::String).collect()),
        );
    }
    context.add_variable_from_value("caller", cel::to_value(&who).unwrap_or(cel::Value::Null));
    context
}

/// Calls counted per limit and key: within one trace, or by a shared
/// counter across checks.
#[derive(Debug, Default)]
pub(crate) struct Counts<'a> {
    seen: HashMap<(usize, String), u64>,
    shared: Option<&'a dyn RateCounter>,
}

impl<'a> Counts<'a> {
    pub(crate) fn new(shared: Option<&'a dyn RateCounter>) -> Self {
        Counts {
            seen: HashMap::new(),
            shared,
        }
    }

    /// Count a call that passed every other check; past a limit it is
    /// `rate_limited`.
    pub(crate) fn count(
        &mut self,
        access: &Access,
        caller: Option<&Caller>,
        call: usize,
        name: &str,
        arguments: &Arguments,
    ) -> Option<Violation> {
        let mut over = None;
        if access.limits.is_empty() {
            return over;
        }
        for (at, limit) in access.limits_for(name) {
            let key = match &limit.by {
                LimitKey::Global => String::new(),
                LimitKey::Caller => caller.map(|c| c.id.clone()).unwrap_or_default(),
                LimitKey::Argument(arg) => arguments
                    .as_object()
                    .and_then(|map| map.get(arg))
                    .map_or_else(|| "null".to_owned(), Value::to_string),
            };
            // A shared counter that fails denies: fail closed.
            let seen = if let Some(shared) = self.shared {
                shared.hit(at, limit, &key).unwrap_or(u64::MAX)
            } else {
                let seen = self.seen.entry((at, key)).or_insert(0);
                *seen += 1;
                *seen
            };
            if seen > limit.max && over.is_none() {
                over = Some(Violation::call(
                    ViolationCode::RateLimited,
                    call,
                    name,
                    format!(
                        "tool call '{name}' is past its rate limit of {} per {}s",
                        limit.max,
                        limit.per.as_secs()
                    ),
                ));
            }
        }
        over
    }
}
