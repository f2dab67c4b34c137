//! Who may call what (docs/policy.md, "Who may call what"): callers, roles, CEL rules on the
//! arguments, and per-tool rate limits. Rules are compiled at load; a rule
//! that names a variable other than `args`, `tool` and `caller` (or one a
//! macro such as `all(r, ...)` binds, within that macro) can never hold, so
//! it is a load problem.
//!
//! Rules, limits and a role's `forbid` apply to every call of their tool,
//! whatever the spelling of its name (case, separators, look-alike
//! characters, namespaces: see [`ToolKey`](crate::policy::names::ToolKey));
//! a role's `allow` names exactly the tools it allows.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use cel::common::ast::{EntryExpr, Expr};
use cel::IdedExpr;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::policy::names::{NameSet, ToolIndex};
use crate::policy::Problem;

/// The keys of a caller entry, a role, a rule and a rate limit: exactly
/// the fields their structs below accept (a test holds them equal), for
/// the policy's JSON Schema.
pub(crate) const CALLER_KEYS: [&str; 4] = ["id", "key_sha256", "roles", "attributes"];
pub(crate) const ROLE_KEYS: [&str; 2] = ["allow", "forbid"];
pub(crate) const RULE_KEYS: [&str; 3] = ["tool", "when", "message"];
pub(crate) const LIMIT_ENTRY_KEYS: [&str; 4] = ["tool", "max", "per", "by"];

/// One configured caller. Its API key is never stored, only its SHA-256.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallerEntry {
    pub id: String,
    pub key_sha256: Option<String>,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub attributes: Map<String, Value>,
}

/// What a role allows and forbids. `*` allows (or forbids) every tool.
/// `allow` is matched exactly (a look-alike of an allowed tool is not
/// allowed: fail closed); `forbid` catches look-alikes and namespaced
/// spellings too.
#[derive(Debug, Clone, Default)]
pub struct Role {
    pub(crate) allow: Vec<String>,
    pub(crate) forbid: NameSet,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleText {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    forbid: Vec<String>,
}

/// A CEL rule that must hold for calls of `tool` (`*`: every tool).
#[derive(Debug)]
pub struct Rule {
    pub(crate) tool: String,
    pub(crate) when: String,
    pub(crate) message: Option<String>,
    pub(crate) program: cel::Program,
    /// The first `args.<name>` the rule reads: the argument a violation names.
    pub(crate) argument: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText {
    tool: String,
    when: String,
    #[serde(default)]
    message: Option<String>,
}

/// What a rate limit counts by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitKey {
    Caller,
    Global,
    /// The value of one argument.
    Argument(String),
}

/// At most `max` calls of `tool` (`*`: every tool) `per` window, `by` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    pub tool: String,
    pub max: u64,
    pub per: Duration,
    pub by: LimitKey,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitText {
    tool: String,
    max: u64,
    per: String,
    #[serde(default)]
    by: Option<String>,
}

/// Section 6 of a policy, compiled.
#[derive(Debug, Default)]
pub struct Access {
    pub callers: Vec<CallerEntry>,
    pub caller_header: Option<String>,
    pub(crate) roles: HashMap<String, Role>,
    pub(crate) rules: Vec<Rule>,
    /// The rules written for a tool (not `*`), by tool name.
    pub(crate) rule_tools: PerTool,
    pub limits: Vec<RateLimit>,
    /// The limits written for a tool (not `*`), by tool name.
    pub(crate) limit_tools: PerTool,
    /// `memory` (the default) or a `redis://` URL.
    pub limits_backend: Option<String>,
}

impl Access {
    /// Whether roles are configured (then every call needs a caller).
    #[must_use]
    pub fn has_roles(&self) -> bool {
        !self.roles.is_empty()
    }

    /// The rules that apply to a call of `name`, in order: those for `*`
    /// and those written for the same tool.
    pub(crate) fn rules_for(&self, name: &str) -> impl Iterator<Item = &Rule> + '_ {
        let mine = self.rule_tools.positions(name);
        self.rules
            .iter()
            .enumerate()
            .filter(move |(at, rule)| rule.tool == "*" || mine.binary_search(at).is_ok())
            .map(|(_, rule)| rule)
    }

    /// The rate limits that count a call of `name`, with their place in
    /// `limits`.
    pub(crate) fn limits_for(&self, name: &str) -> impl Iterator<Item = (usize, &RateLimit)> + '_ {
        let mine = self.limit_tools.positions(name);
        self.limits
            .iter()
            .enumerate()
            .filter(move |(at, limit)| limit.tool == "*" || mine.binary_search(at).is_ok())
    }
}

/// Entries of a list (rules, limits) written for a tool by name, found from
/// a call's name whatever its spelling; `*` entries are not indexed.
#[derive(Debug, Default)]
pub(crate) struct PerTool {
    index: ToolIndex,
    /// The place in the list of each indexed entry.
    places: Vec<usize>,
}

impl PerTool {
    fn new<'a>(tools: impl Iterator<Item = &'a str>) -> Self {
        let mut per_tool = PerTool::default();
        for (at, tool) in tools.enumerate() {
            if tool != "*" {
                per_tool.index.insert(tool);
                per_tool.places.push(at);
            }
        }
        per_tool
    }

    /// The places of the entries a call of `name` meets, ascending.
    fn positions(&self, name: &str) -> Cow<'_, [usize]> {
        let found = self.index.find(name);
        if found.is_empty() {
            return Cow::Borrowed(&[]);
        }
        Cow::Owned(found.iter().map(|&id| self.places[id]).collect())
    }
}

/// The variables a rule may read.
const RULE_VARIABLES: [&str; 3] = ["args", "tool", "caller"];

pub(crate) fn callers(value: &Value, problems: &mut Vec<Problem>) -> Vec<CallerEntry> {
    let parsed: Vec<CallerEntry> = typed("callers", value, problems).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for (at, caller) in parsed.iter().enumerate() {
        let path = format!("callers[{at}]");
        if !seen.insert(caller.id.as_str()) {
            problems.push(Problem::new(
                &path,
                format!("caller '{}' is listed twice", caller.id),
            ));
        }
        if let Some(hash) = &caller.key_sha256 {
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                problems.push(Problem::new(
                    &format!("{path}.key_sha256"),
                    "must be the SHA-256 of the key, as 64 hex digits (never the key itself)",
                ));
            }
        }
    }
    parsed
}

pub(crate) fn roles(value: &Value, problems: &mut Vec<Problem>) -> HashMap<String, Role> {
    let parsed: HashMap<String, RoleText> = typed("roles", value, problems).unwrap_or_default();
    parsed
        .into_iter()
        .map(|(name, role)| {
            let forbid = NameSet::new(role.forbid.iter().map(String::as_str));
            (
                name,
                Role {
                    allow: role.allow,
                    forbid,
                },
            )
        })
        .collect()
}

pub(crate) fn rules(value: &Value, problems: &mut Vec<Problem>) -> Vec<Rule> {
    let parsed: Vec<RuleText> = typed("rules", value, problems).unwrap_or_default();
    let mut rules = Vec::with_capacity(parsed.len());
    for (at, rule) in parsed.into_iter().enumerate() {
        let path = format!("rules[{at}].when");
        let program = match cel::Program::compile(&rule.when) {
            Ok(program) => program,
            Err(err) => {
                let first = err.to_string();
                let first = first.lines().next().unwrap_or_default().to_owned();
                problems.push(Problem::new(
                    &path,
                    format!("not a valid CEL expression: {first}"),
                ));
                continue;
            }
        };
        for variable in free_variables(program.expression()) {
            if !RULE_VARIABLES.contains(&variable) {
                problems.push(Problem::new(
                    &path,
                    format!("the rule reads `{variable}`, which is unknown; a rule sees `args`, `tool` and `caller`, and the variables its macros bind (`all(r, ...)`) inside them"),
                ));
            }
        }
        let argument = first_argument(&rule.when);
        rules.push(Rule {
            tool: rule.tool,
            when: rule.when,
            message: rule.message,
            program,
            argument,
        });
    }
    rules
}

/// The rules' tools, indexed once the rules are read.
pub(crate) fn rule_tools(rules: &[Rule]) -> PerTool {
    PerTool::new(rules.iter().map(|rule| rule.tool.as_str()))
}

/// The limits' tools, indexed once the limits are read.
pub(crate) fn limit_tools(limits: &[RateLimit]) -> PerTool {
    PerTool::new(limits.iter().map(|limit| limit.tool.as_str()))
}

/// The variables an expression reads that nothing inside it binds, each
/// once, in order of appearance. The comprehension macros (`all`,
/// `exists`, `exists_one`, `filter`, `map`) bind their variable in their
/// body only: `args.to.all(r, r.endsWith("@example.com"))` reads `args`,
/// and `r` outside the macro is unknown.
fn free_variables(expr: &IdedExpr) -> Vec<&str> {
    let mut free = Vec::new();
    let mut bound = Vec::new();
    walk(expr, &mut bound, &mut free);
    free
}

fn walk<'e>(expr: &'e IdedExpr, bound: &mut Vec<&'e str>, free: &mut Vec<&'e str>) {
    match &expr.expr {
        Expr::Unspecified | Expr::Literal(_) => {}
        // `@result` and the like are the macros' own accumulators.
        Expr::Ident(name) => {
            if !name.starts_with('@')
                && !bound.contains(&name.as_str())
                && !free.contains(&name.as_str())
            {
                free.push(name);
            }
        }
        Expr::Select(select) => walk(&select.operand, bound, free),
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                walk(target, bound, free);
            }
            for arg in &call.args {
                walk(arg, bound, free);
            }
        }
        Expr::List(list) => {
            for element in &list.elements {
                walk(element, bound, free);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                walk_entry(&entry.expr, bound, free);
            }
        }
        Expr::Struct(object) => {
            for entry in &object.entries {
                walk_entry(&entry.expr, bound, free);
            }
        }
        Expr::Comprehension(comprehension) => {
            // The range and the initial value are read outside the macro.
            walk(&comprehension.iter_range, bound, free);
            walk(&comprehension.accu_init, bound, free);
            let outer = bound.len();
            bound.push(&comprehension.accu_var);
            bound.push(&comprehension.iter_var);
            if let Some(second) = &comprehension.iter_var2 {
                bound.push(second);
            }
            walk(&comprehension.loop_cond, bound, free);
            walk(&comprehension.loop_step, bound, free);
            // The result sees the accumulator only.
            bound.truncate(outer + 1);
            walk(&comprehension.result, bound, free);
            bound.truncate(outer);
        }
    }
}

fn walk_entry<'e>(entry: &'e EntryExpr, bound: &mut Vec<&'e str>, free: &mut Vec<&'e str>) {
    match entry {
        EntryExpr::StructField(field) => walk(&field.value, bound, free),
        EntryExpr::MapEntry(pair) => {
            walk(&pair.key, bound, free);
            walk(&pair.value, bound, free);
        }
    }
}

/// The first `args.<name>` (or `args["name"]`) in a rule's text.
fn first_argument(when: &str) -> Option<String> {
    let at = when.find("args")?;
    let rest = &when[at + 4..];
    if let Some(field) = rest.strip_prefix('.') {
        let name: String = field
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        return (!name.is_empty()).then_some(name);
    }
    let quoted = rest
        .strip_prefix("[\"")
        .or_else(|| rest.strip_prefix("['"))?;
    let end = quoted.find(['"', '\''])?;
    Some(quoted[..end].to_owned())
}

pub(crate) fn limits(value: &Value, problems: &mut Vec<Problem>) -> Vec<RateLimit> {
    let parsed: Vec<LimitText> = typed("limits", value, problems).unwrap_or_default();
    let mut limits = Vec::with_capacity(parsed.len());
    for (at, limit) in parsed.into_iter().enumerate() {
        let path = format!("limits[{at}]");
        let Some(per) = window(&limit.per) else {
            problems.push(Problem::new(
                &format!("{path}.per"),
                "must be a window such as 30s, 1m, 1h or 1d",
            ));
            continue;
        };
        let by = match limit.by.as_deref() {
            None | Some("caller") => LimitKey::Caller,
            Some("global") => LimitKey::Global,
            Some(other) => match other.strip_prefix("arg:") {
                Some(name) if !name.is_empty() => LimitKey::Argument(name.to_owned()),
                _ => {
                    problems.push(Problem::new(
                        &format!("{path}.by"),
                        format!("unknown `{other}`; use caller, global or arg:<name>"),
                    ));
                    continue;
                }
            },
        };
        if limit.max == 0 {
            problems.push(Problem::new(
                &format!("{path}.max"),
                "must be 1 or more (forbid the tool instead)",
            ));
        }
        limits.push(RateLimit {
            tool: limit.tool,
            max: limit.max,
            per,
            by,
        });
    }
    limits
}

/// `30s`, `1m`, `2h`, `1d` (a bare number is seconds).
fn window(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok().filter(|&n| n > 0)?;
    let seconds = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(n.checked_mul(seconds)?))
}

fn typed<T: serde::de::DeserializeOwned>(
    key: &str,
    value: &Value,
    problems: &mut Vec<Problem>,
) -> Option<T> {
    match serde_json::from_value(value.clone()) {
        Ok(parsed) => Some(parsed),
        Err(err) => {
            problems.push(Problem::new(key, err.to_string()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The fields serde names when it refuses an unknown one.
    fn fields<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> Vec<String> {
        let err = serde_json::from_value::<T>(json!({"not a field": 1})).unwrap_err();
        let text = err.to_string();
        let listed = &text[text.find("expected").expect("serde lists the fields")..];
        listed
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_key_tables_are_the_fields_the_structs_accept() {
        assert_eq!(fields::<CallerEntry>(), CALLER_KEYS);
        assert_eq!(fields::<RoleText>(), ROLE_KEYS);
        assert_eq!(fields::<RuleText>(), RULE_KEYS);
        assert_eq!(fields::<LimitText>(), LIMIT_ENTRY_KEYS);
    }

    #[test]
    fn windows_and_arguments() {
        assert_eq!(window("1m"), Some(Duration::from_secs(60)));
        assert_eq!(window("30s"), Some(Duration::from_secs(30)));
        assert_eq!(window("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(window("0m"), None);
        assert_eq!(window("1w"), None);
        assert_eq!(
            first_argument("args.customer_id in caller.customer_ids").as_deref(),
            Some("customer_id")
        );
        assert_eq!(
            first_argument("args['amount'] < 100").as_deref(),
            Some("amount")
        );
        assert_eq!(first_argument("tool == 'x'"), None);
    }

    #[test]
    fn unknown_variables_and_bad_rules_are_problems() {
        let mut problems = Vec::new();
        let rules = rules(
            &json!([{"tool": "a", "when": "request.size < 3"}, {"tool": "b", "when": "args.x <"},
                    {"tool": "c", "when": "args.x in caller.ids"}]),
            &mut problems,
        );
        assert_eq!(rules.len(), 2);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].message.contains("`request`"));
        assert!(problems[1].message.contains("not a valid CEL expression"));
    }
}
