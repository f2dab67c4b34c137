//! What the policy says of each tool name it writes, worked out once when
//! it is compiled: a call named as the policy names its tool finds
//! everything its checks read in one lookup ([`Policy::named`]), instead of
//! one in each table (`tools`, `schema`, `required_params`, the names that
//! pass on sight). Each entry holds exactly what those tables' own lookups
//! give for its name; a name of no entry is looked up in each table.

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use super::Policy;

/// What the policy says of one tool name, spelled exactly so.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Named {
    /// The name passes the name check on sight (see `check::name`).
    pub(crate) safe: bool,
    /// Where its declarations are in the policy's `tools`
    /// ([`ToolTable::find_at`](super::ToolTable::find_at)).
    pub(crate) tools: SmallVec<[usize; 2]>,
    /// Where its `schema` entries are
    /// ([`Keyed::find_at`](super::names::Keyed::find_at)).
    pub(crate) schemas: SmallVec<[usize; 2]>,
    /// Where its `required_params` entries are.
    pub(crate) required: SmallVec<[usize; 2]>,
}

impl Named {
    /// What the policy's tables say of `name`, `safe` or not.
    pub(crate) fn of(policy: &Policy, name: &str, safe: bool) -> Named {
        Named {
            safe,
            tools: policy.tools.find_at(name),
            schemas: policy.schemas.find_at(name).iter().copied().collect(),
            required: policy.required.find_at(name).iter().copied().collect(),
        }
    }
}

/// Every name the policy writes in its tables, and the names that pass on
/// sight (`safe`, which the policy's allowlist holds), each with what the
/// policy says of it.
pub(crate) fn by_name(policy: &Policy, safe: &FxHashSet<String>) -> FxHashMap<String, Named> {
    let written = policy
        .tools
        .names()
        .chain(policy.schemas.iter().map(|(name, _)| name))
        .chain(policy.required.iter().map(|(name, _)| name))
        .chain(safe.iter().map(String::as_str));
    let mut named = FxHashMap::default();
    for name in written {
        if !named.contains_key(name) {
            let entry = Named::of(policy, name, safe.contains(name));
            named.insert(name.to_owned(), entry);
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use crate::policy::Policy;
    use crate::verdict::ViolationCode;

    /// A policy that writes tools under several spellings, in each table.
    const POLICY: &str = r#"
tools:
  - type: function
    function:
      name: send_email
      parameters: {type: object, properties: {to: {type: string, format: email}}, required: [to]}
  - type: function
    function: {name: ping, parameters: {type: object, properties: {}}}
  - {type: function, function: {name: SearchDocs}}
allowed_functions: [send_email, ping, search_docs, drop_table_now, "mcp__db__query"]
forbidden: [drop_table]
required_params: {SendEmail: [subject], search_docs: [query], "mcp__db__query": [sql]}
schema:
  search-docs: {type: object, properties: {query: {type: string, minLength: 3}}}
  ping: {type: object, maxProperties: 0}
"#;

    /// A call named every way a payload may name these tools: as written,
    /// folded, a look-alike, unknown, forbidden.
    const NAMES: [&str; 14] = [
        "send_email",
        "SendEmail",
        "sendEmail",
        "functions.send_email",
        "ping",
        "PING",
        "search_docs",
        "SearchDocs",
        "search-docs",
        "drop_table",
        "drop_table_now",
        "mcp__db__query",
        "query",
        "get_weather",
    ];

    const ARGUMENTS: [&str; 4] = [
        r#"{"to":"a@b.c","subject":"hi"}"#,
        r#"{"to":"nope"}"#,
        r#"{"query":"ab"}"#,
        "{}",
    ];

    /// Each name's entry says of it exactly what the tables' own lookups
    /// say: every verdict is the same with the entries as without them.
    #[test]
    fn a_named_call_is_judged_as_the_tables_judge_it() {
        let policy = Policy::from_text(POLICY, None).unwrap();
        assert!(policy.named("send_email").is_some_and(|named| named.safe));
        assert!(policy.named("SendEmail").is_some_and(|named| !named.safe));
        // Each table applies to the tool under every spelling.
        let verdict = |name: &str, arguments: &str| {
            let payload = serde_json::json!({"choices": [{"message": {"role": "assistant",
                "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": name, "arguments": arguments}}]}}]});
            policy.check(payload.to_string().as_bytes())
        };
        assert!(verdict("send_email", ARGUMENTS[0]).passed);
        let codes = |name: &str, arguments: &str| -> Vec<ViolationCode> {
            let verdict = verdict(name, arguments);
            verdict.violations.iter().map(|v| v.code).collect()
        };
        assert_eq!(
            codes("send_email", r#"{"to":"a@b.c"}"#),
            [ViolationCode::MissingRequiredParam]
        );
        assert_eq!(
            codes("search_docs", ARGUMENTS[2]),
            [ViolationCode::SchemaViolation]
        );
        assert_eq!(
            codes("ping", r#"{"a":1}"#),
            [ViolationCode::SchemaViolation]
        );
        assert_eq!(
            codes("drop_table", "{}"),
            [ViolationCode::Forbidden, ViolationCode::UsedForbiddenTools]
        );
        let mut looked_up = Policy::from_text(POLICY, None).unwrap();
        looked_up.by_name.clear();
        for name in NAMES {
            for arguments in ARGUMENTS {
                let payload = serde_json::json!({"choices": [{"message": {"role": "assistant",
                    "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": name, "arguments": arguments}}]}}]})
                .to_string();
                let fast = policy.check(payload.as_bytes());
                let slow = looked_up.check(payload.as_bytes());
                assert_eq!(
                    serde_json::to_value(&fast).unwrap(),
                    serde_json::to_value(&slow).unwrap(),
                    "{name} {arguments}"
                );
            }
        }
    }
}
