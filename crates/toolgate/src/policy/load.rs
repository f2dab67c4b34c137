//! From text to a compiled [`Policy`]: strict keys with the seed aliases,
//! every problem collected (never the first only), every schema compiled.

use std::collections::HashMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::detect::{parse_object, Limits};
use crate::policy::access::{self, Access};
use crate::policy::names::{NameSet, ToolIndex};
use crate::policy::schema::ArgumentSchema;
use crate::policy::tools::{declares_no_parameters, parse_tool, DeclaredKind, ToolDecl};
use crate::policy::{
    ArgExpectation, AuditSettings, GatewaySettings, McpServer, McpSettings, Policy, Problem,
    ToolSpec, ToolTable,
};

/// Every top-level key, canonical spelling first, then the seed aliases.
pub(crate) const TOP_KEYS: [(&str, &[&str]); 26] = [
    ("tools", &[]),
    ("tools_file", &[]),
    ("allowed_functions", &[]),
    ("forbidden", &[]),
    ("required_params", &[]),
    ("schema", &[]),
    ("expected", &[]),
    ("order", &[]),
    ("min_tools", &["minTools"]),
    ("max_tools", &["maxTools"]),
    ("validate_args", &["validateArgs"]),
    ("require_calls", &[]),
    ("validate_formats", &[]),
    ("require_result_names", &["requireResultNames"]),
    ("normalize", &[]),
    ("input_limits", &[]),
    ("callers", &[]),
    ("roles", &[]),
    ("rules", &[]),
    ("caller_header", &[]),
    ("limits", &[]),
    ("limits_backend", &[]),
    ("gateway", &[]),
    ("audit", &[]),
    ("mcp", &[]),
    // The JSON Schema an editor checks the file against; not read.
    ("$schema", &[]),
];

pub(crate) const NORMALIZE_KEYS: [&str; 3] = [
    "strip_empty_values",
    "strip_placeholder_strings",
    "placeholder_strings",
];
pub(crate) const LIMIT_KEYS: [&str; 4] = [
    "max_payload_bytes",
    "max_depth",
    "max_calls",
    "max_argument_bytes",
];
pub(crate) const GATEWAY_KEYS: [&str; 11] = [
    "upstream",
    "upstream_key",
    "listen",
    "on_violation",
    "max_retries",
    "max_request_bytes",
    "max_response_bytes",
    "connect_timeout",
    "upstream_timeout",
    "header_read_timeout",
    "body_read_timeout",
];
pub(crate) const AUDIT_KEYS: [&str; 4] = ["sqlite", "jsonl", "postgres", "redact"];
pub(crate) const MCP_KEYS: [&str; 3] = ["servers", "pin_tools", "pins"];
pub(crate) const MCP_SERVER_KEYS: [&str; 2] = ["name", "url"];

/// Bounds on reading a policy or tools file: generous, but bounded.
const FILE_LIMITS: Limits = Limits {
    max_payload_bytes: 64 * 1024 * 1024,
    max_depth: 127,
    max_calls: 0,
    max_argument_bytes: 64 * 1024 * 1024,
};

/// Parse policy text: JSON when it starts with `{` or `[` (duplicate keys
/// refused), YAML otherwise (duplicate keys refused too).
pub(crate) fn parse_text(text: &str) -> Result<Value, Problem> {
    crate::policy::schema::warm_up();
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') {
        parse_object(trimmed, &FILE_LIMITS)
            .map(Value::Object)
            .map_err(|err| Problem::new("", format!("not valid JSON: {}", err.message)))
    } else if trimmed.starts_with('[') {
        // A bare list (of tools, in a tools file): read it as the value of a
        // key so that the same strict reader applies.
        let wrapped = format!("{{\"list\":{trimmed}}}");
        parse_object(&wrapped, &FILE_LIMITS)
            .map(|mut map| map.remove("list").unwrap_or(Value::Null))
            .map_err(|err| Problem::new("", format!("not valid JSON: {}", err.message)))
    } else if trimmed.is_empty() {
        Ok(Value::Object(Map::new()))
    } else {
        serde_saphyr::from_str::<Value>(trimmed).map_err(|err| {
            Problem::new(
                "",
                format!("not valid YAML: {}", first_line(&err.to_string())),
            )
        })
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text).trim()
}

/// The closest spelling among `known` to `key`.
pub(crate) fn closest<'a>(key: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|candidate| {
            (
                strsim::damerau_levenshtein(&key.to_lowercase(), &candidate.to_lowercase()),
                candidate,
            )
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn unknown_key(path: &str, key: &str, known: &[&str]) -> Problem {
    let at = join(path, key);
    match closest(key, known.iter().copied()) {
        Some(near) => Problem::new(
            &at,
            format!("unknown key `{key}`; the closest known key is `{near}`"),
        ),
        None => Problem::new(&at, format!("unknown key `{key}`")),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Compile `value`; the policy holds everything that was readable, the
/// problems list everything that was not.
pub(crate) fn compile(value: &Value, base_dir: Option<&Path>) -> (Policy, Vec<Problem>) {
    let mut loader = Loader {
        problems: Vec::new(),
        base_dir,
    };
    let mut policy = loader.policy(value);
    let safe = crate::check::safe_names(&policy);
    policy.by_name = super::named::by_name(&policy, &safe);
    (policy, loader.problems)
}

struct Loader<'a> {
    problems: Vec<Problem>,
    base_dir: Option<&'a Path>,
}

impl Loader<'_> {
    fn problem(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(Problem::new(path, message));
    }

    #[allow(clippy::too_many_lines)] // one flat arm per top-level key
    fn policy(&mut self, value: &Value) -> Policy {
        let mut policy = Policy::default();
        let Some(top) = value.as_object() else {
            self.problem(
                "",
                "a policy must be a mapping of keys (YAML) or an object (JSON)",
            );
            return policy;
        };
        let keys = self.top_keys(top);
        let get = |key: &str| keys.get(key).map(|(spelling, value)| (*spelling, *value));

        let validate_formats = match get("validate_formats") {
            Some((key, v)) => self.boolean(key, v).unwrap_or(true),
            None => true,
        };
        if let Some((key, v)) = get("require_calls") {
            policy.expect.require_calls = self.boolean(key, v).unwrap_or(false);
        }
        if let Some((key, v)) = get("require_result_names") {
            policy.require_result_names = self.boolean(key, v).unwrap_or(false);
        }
        if let Some((key, v)) = get("normalize") {
            policy.normalize = self.section(key, v, &NORMALIZE_KEYS).unwrap_or_default();
        }
        if let Some((key, v)) = get("input_limits") {
            policy.limits = self.section(key, v, &LIMIT_KEYS).unwrap_or_default();
        }
        if let Some((key, v)) = get("gateway") {
            policy.gateway = self
                .section::<GatewaySettings>(key, v, &GATEWAY_KEYS)
                .unwrap_or_default();
            for (name, seconds) in [
                ("connect_timeout", policy.gateway.connect_timeout),
                ("upstream_timeout", policy.gateway.upstream_timeout),
                ("header_read_timeout", policy.gateway.header_read_timeout),
                ("body_read_timeout", policy.gateway.body_read_timeout),
            ] {
                if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
                    self.problem(
                        &format!("{key}.{name}"),
                        "must be a number of seconds above 0 and at most 86400",
                    );
                }
            }
            for (name, bytes) in [
                ("max_request_bytes", policy.gateway.max_request_bytes),
                ("max_response_bytes", policy.gateway.max_response_bytes),
            ] {
                if bytes == Some(0) {
                    self.problem(&format!("{key}.{name}"), "must be 1 or more");
                }
            }
        }
        if let Some((key, v)) = get("audit") {
            policy.audit = self
                .section::<AuditSettings>(key, v, &AUDIT_KEYS)
                .unwrap_or_default();
        }
        if let Some((key, v)) = get("mcp") {
            policy.mcp = self.mcp(key, v);
        }
        policy.access = self.access(&keys);

        // Tools: declared inline and in a tools file.
        let mut decls: Vec<(String, ToolDecl)> = Vec::new();
        if let Some((key, v)) = get("tools") {
            self.tools(key, v, &mut decls);
        }
        if let Some((key, v)) = get("tools_file") {
            self.tools_file(key, v, &mut decls);
        }
        policy.validate_formats = validate_formats;
        self.declare(&mut policy, decls, validate_formats);

        if let Some((key, v)) = get("allowed_functions") {
            let names = self.names(key, v, false);
            policy.allowed = Some(NameSet::new(names.iter().map(String::as_str)));
        }
        if let Some((key, v)) = get("forbidden") {
            let names = self.names(key, v, true);
            policy.forbidden = NameSet::new(names.iter().map(String::as_str));
        }
        if let Some((key, v)) = get("expected") {
            policy.expect.expected = self.names(key, v, true);
        }
        if let Some((key, v)) = get("order") {
            policy.expect.order = self.names(key, v, false);
        }
        if let Some((key, v)) = get("min_tools") {
            policy.expect.min_tools = self.count(key, v);
        }
        if let Some((key, v)) = get("max_tools") {
            policy.expect.max_tools = self.count(key, v);
        }
        self.min_not_above_max(policy.expect.min_tools, policy.expect.max_tools);
        if let Some((key, v)) = get("required_params") {
            self.required_params(&mut policy, key, v);
        }
        if let Some((key, v)) = get("schema") {
            self.schemas(&mut policy, key, v, validate_formats);
        }
        if let Some((key, v)) = get("validate_args") {
            self.validate_args(&mut policy, key, v);
        }
        self.user_checks_meet_declarations(&mut policy);
        policy
    }

    fn min_not_above_max(&mut self, min: Option<usize>, max: Option<usize>) {
        if let (Some(min), Some(max)) = (min, max) {
            if min > max {
                self.problem(
                    "min_tools",
                    format!("min_tools ({min}) is more than max_tools ({max})"),
                );
            }
        }
    }

    /// Where the user's own checks (`schema`, `required_params`) meet the
    /// declarations of the same tools. They apply to every call of the
    /// tool, so a declaration without parameters no longer refuses
    /// arguments, and a hosted or custom tool, whose arguments the
    /// provider's declaration does not describe, still gets them: lint says
    /// so, since the declaration reads as if it switched them off.
    fn user_checks_meet_declarations(&mut self, policy: &mut Policy) {
        for (name, spec) in policy.tools.iter_mut() {
            let schemas = policy.schemas.find(name).count();
            let required = policy.required.find(name).any(|params| !params.is_empty());
            if schemas > 0 || required {
                spec.takes_no_arguments = false;
            }
        }
        let user = policy
            .schemas
            .iter()
            .map(|(tool, _)| ("schema", tool))
            .chain(
                policy
                    .required
                    .iter()
                    .map(|(tool, _)| ("required_params", tool)),
            );
        for (key, tool) in user {
            let Some(kind) = policy
                .tools
                .find(tool)
                .into_iter()
                .map(|spec| &spec.kind)
                .find(|kind| **kind != DeclaredKind::Function)
            else {
                continue;
            };
            let message = match kind {
                DeclaredKind::Typed(tool_type) => format!(
                    "tool '{tool}' is declared as the hosted tool `{tool_type}`, whose arguments no schema of the provider's checks; this `{key}` still applies to every call of '{tool}'"
                ),
                DeclaredKind::Custom | DeclaredKind::Function => format!(
                    "tool '{tool}' is declared as a custom tool that takes freeform text; this `{key}` still applies, so a call that sends text is refused as malformed_arguments"
                ),
            };
            self.problems
                .push(Problem::warning(&join(key, tool), message).for_tool(tool));
        }
    }

    /// `mcp`: each server named once, by a name that fits a URL path, in
    /// front of an http(s) URL.
    fn mcp(&mut self, key: &str, value: &Value) -> McpSettings {
        if let Some(servers) = value.get("servers").and_then(Value::as_array) {
            for (at, server) in servers.iter().enumerate() {
                let path = format!("{key}.servers[{at}]");
                match server.as_object() {
                    Some(entry) => {
                        for name in entry.keys() {
                            if !MCP_SERVER_KEYS.contains(&name.as_str()) {
                                self.problems
                                    .push(unknown_key(&path, name, &MCP_SERVER_KEYS));
                            }
                        }
                    }
                    None => self.problem(&path, "must be a mapping with `name` and `url`"),
                }
            }
        }
        let settings = self.section::<McpSettings>(key, value, &MCP_KEYS);
        // The servers are checked even when another key of the section is
        // wrong: every problem at once.
        let servers: Vec<McpServer> = match &settings {
            Some(settings) => settings.servers.clone(),
            None => value
                .get("servers")
                .and_then(|servers| serde_json::from_value(servers.clone()).ok())
                .unwrap_or_default(),
        };
        self.mcp_servers(key, &servers);
        let Some(settings) = settings else {
            return McpSettings::default();
        };
        if settings
            .pins
            .as_deref()
            .is_some_and(|p| p.trim().is_empty())
        {
            self.problem(&format!("{key}.pins"), "must be a file path");
        }
        settings
    }

    /// Each server named once, by a name that fits a URL path, in front of
    /// an http(s) URL.
    fn mcp_servers(&mut self, key: &str, servers: &[McpServer]) {
        let mut seen: Vec<&str> = Vec::new();
        for (at, server) in servers.iter().enumerate() {
            let path = format!("{key}.servers[{at}]");
            let name = server.name.as_str();
            let fits = !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !fits {
                self.problem(
                    &format!("{path}.name"),
                    "must be 1 to 64 letters, digits, `.`, `_` or `-` (it is served at /mcp/<name>)",
                );
            } else if seen.contains(&name) {
                self.problem(
                    &format!("{path}.name"),
                    format!("the server `{name}` is listed twice; keep one"),
                );
            }
            seen.push(name);
            let url = server.url.trim();
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            if rest.is_none_or(|rest| rest.is_empty() || rest.starts_with('/')) {
                self.problem(
                    &format!("{path}.url"),
                    "must be an http:// or https:// URL with a host",
                );
            }
        }
    }

    /// Callers, roles, rules and rate limits (docs/policy.md, "Who may call what").
    fn access(&mut self, keys: &HashMap<&'static str, (&str, &Value)>) -> Access {
        let get = |key: &str| keys.get(key).map(|(spelling, value)| (*spelling, *value));
        let mut access = Access::default();
        if let Some((_, v)) = get("callers") {
            access.callers = access::callers(v, &mut self.problems);
        }
        if let Some((key, v)) = get("caller_header") {
            match v.as_str() {
                Some(header) if !header.trim().is_empty() => {
                    access.caller_header = Some(header.to_owned());
                }
                _ => self.problem(key, "must be an HTTP header name"),
            }
        }
        if let Some((_, v)) = get("roles") {
            access.roles = access::roles(v, &mut self.problems);
        }
        if let Some((_, v)) = get("rules") {
            access.rules = access::rules(v, &mut self.problems);
            access.rule_tools = access::rule_tools(&access.rules);
        }
        if let Some((_, v)) = get("limits") {
            access.limits = access::limits(v, &mut self.problems);
            access.limit_tools = access::limit_tools(&access.limits);
        }
        if let Some((key, v)) = get("limits_backend") {
            match v.as_str() {
                Some(backend)
                    if backend == "memory"
                        || backend.starts_with("redis://")
                        || backend.starts_with("rediss://") =>
                {
                    access.limits_backend = Some(backend.to_owned());
                }
                _ => self.problem(key, "must be `memory` or a redis:// URL"),
            }
        }
        access
    }

    /// Match every top-level key to its canonical name; unknown keys and a
    /// key given under two spellings are problems.
    fn top_keys<'v>(
        &mut self,
        top: &'v Map<String, Value>,
    ) -> HashMap<&'static str, (&'v str, &'v Value)> {
        let mut found: HashMap<&'static str, (&'v str, &'v Value)> = HashMap::new();
        let spellings: Vec<&str> = TOP_KEYS
            .iter()
            .flat_map(|(canonical, aliases)| {
                std::iter::once(*canonical).chain(aliases.iter().copied())
            })
            .collect();
        for (key, value) in top {
            let canonical = TOP_KEYS
                .iter()
                .find(|(canonical, aliases)| canonical == key || aliases.contains(&key.as_str()))
                .map(|(canonical, _)| *canonical);
            let Some(canonical) = canonical else {
                self.problems.push(unknown_key("", key, &spellings));
                continue;
            };
            if let Some((other, _)) = found.insert(canonical, (key.as_str(), value)) {
                self.problem(
                    key,
                    format!("`{key}` and `{other}` are the same key; keep one"),
                );
            }
        }
        found
    }

    /// A nested mapping with known keys, deserialized into `T`.
    fn section<T: DeserializeOwned>(
        &mut self,
        path: &str,
        value: &Value,
        known: &[&str],
    ) -> Option<T> {
        let Some(map) = value.as_object() else {
            self.problem(path, "must be a mapping");
            return None;
        };
        let before = self.problems.len();
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                self.problems.push(unknown_key(path, key, known));
            }
        }
        if self.problems.len() > before {
            return None;
        }
        match serde_json::from_value::<T>(value.clone()) {
            Ok(parsed) => Some(parsed),
            Err(err) => {
                self.problem(path, err.to_string());
                None
            }
        }
    }

    fn boolean(&mut self, path: &str, value: &Value) -> Option<bool> {
        let parsed = value.as_bool();
        if parsed.is_none() {
            self.problem(path, "must be true or false");
        }
        parsed
    }

    fn count(&mut self, path: &str, value: &Value) -> Option<usize> {
        let parsed = value.as_u64().and_then(|n| usize::try_from(n).ok());
        if parsed.is_none() {
            self.problem(path, "must be a whole number, 0 or more");
        }
        parsed
    }

    /// A list of tool names (or, where `single` allows, one name).
    fn names(&mut self, path: &str, value: &Value, single: bool) -> Vec<String> {
        match value {
            Value::String(name) if single => vec![name.clone()],
            Value::Array(items) => {
                let mut names = Vec::with_capacity(items.len());
                for (at, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(name) if !name.trim().is_empty() => names.push(name.to_owned()),
                        _ => self.problem(
                            &format!("{path}[{at}]"),
                            "must be a tool name (a non-empty string)",
                        ),
                    }
                }
                names
            }
            _ if single => {
                self.problem(path, "must be a tool name or a list of tool names");
                Vec::new()
            }
            _ => {
                self.problem(path, "must be a list of tool names");
                Vec::new()
            }
        }
    }

    fn tools(&mut self, path: &str, value: &Value, decls: &mut Vec<(String, ToolDecl)>) {
        let Some(items) = value.as_array() else {
            self.problem(path, "must be a list of tool declarations");
            return;
        };
        for (at, item) in items.iter().enumerate() {
            parse_tool(item, &format!("{path}[{at}]"), &mut self.problems, decls);
        }
    }

    fn tools_file(&mut self, path: &str, value: &Value, decls: &mut Vec<(String, ToolDecl)>) {
        let Some(file) = value.as_str() else {
            self.problem(path, "must be a file path");
            return;
        };
        let full = match self.base_dir {
            Some(dir) => dir.join(file),
            None => Path::new(file).to_path_buf(),
        };
        let text = match std::fs::read_to_string(&full) {
            Ok(text) => text,
            Err(err) => {
                self.problem(path, format!("cannot read {}: {err}", full.display()));
                return;
            }
        };
        let parsed = match parse_text(&text) {
            Ok(parsed) => parsed,
            Err(problem) => {
                self.problem(path, format!("{}: {}", full.display(), problem.message));
                return;
            }
        };
        // A list of tools, or an object holding one under `tools` (a request
        // body, an MCP `tools/list` result).
        let list = match &parsed {
            Value::Array(_) => &parsed,
            Value::Object(map) => map
                .get("tools")
                .or_else(|| map.get("result").and_then(|r| r.get("tools")))
                .unwrap_or(&Value::Null),
            _ => &Value::Null,
        };
        if list.is_array() {
            self.tools(&format!("{path}({file})"), list, decls);
        } else {
            self.problem(
                path,
                format!("{file} holds no list of tools (a list, or an object with `tools`)"),
            );
        }
    }

    fn declare(
        &mut self,
        policy: &mut Policy,
        decls: Vec<(String, ToolDecl)>,
        validate_formats: bool,
    ) {
        declare(
            &mut policy.tools,
            &mut policy.declared,
            None,
            decls,
            validate_formats,
            &mut self.problems,
        );
    }

    fn required_params(&mut self, policy: &mut Policy, path: &str, value: &Value) {
        let Some(map) = value.as_object() else {
            self.problem(path, "must map tool names to lists of parameter names");
            return;
        };
        for (tool, params) in map {
            let params = self.names(&join(path, tool), params, false);
            if let Err(other) = policy.required.insert(tool, params) {
                self.problems.push(same_tool(path, other, tool));
            }
        }
    }

    fn schemas(&mut self, policy: &mut Policy, path: &str, value: &Value, validate_formats: bool) {
        let Some(map) = value.as_object() else {
            self.problem(path, "must map tool names to JSON Schemas");
            return;
        };
        for (tool, schema) in map {
            match ArgumentSchema::compile(schema, validate_formats) {
                Ok(compiled) => {
                    if let Err(other) = policy.schemas.insert(tool, compiled) {
                        self.problems.push(same_tool(path, other, tool));
                    }
                }
                Err(why) => self.problem(
                    &join(path, tool),
                    format!("tool '{tool}' has an invalid schema: {why}"),
                ),
            }
        }
    }

    fn validate_args(&mut self, policy: &mut Policy, path: &str, value: &Value) {
        let Some(map) = value.as_object() else {
            self.problem(path, "must map tool names to {argument: expected value}");
            return;
        };
        let mut tools = ToolIndex::default();
        let mut written: Vec<&str> = Vec::new();
        for (tool, args) in map {
            if let Some(other) = tools.same_tool(tool) {
                self.problems.push(same_tool(path, written[other], tool));
                continue;
            }
            tools.insert(tool);
            written.push(tool);
            let Some(args) = args.as_object() else {
                self.problem(
                    &join(path, tool),
                    "must map argument names to expected values",
                );
                continue;
            };
            for (arg, expected) in args {
                policy.expect.validate_args.push(ArgExpectation {
                    tool: tool.clone(),
                    arg: arg.clone(),
                    value: expected.clone(),
                });
            }
        }
    }
}

/// Two entries of one per-tool map that name the same tool once folded:
/// which one a call would meet cannot be told.
fn same_tool(path: &str, first: &str, second: &str) -> Problem {
    Problem::new(
        &join(path, second),
        format!(
            "`{first}` and `{second}` name the same tool (once case, separators, look-alike characters and namespaces are set aside); keep one"
        ),
    )
    .for_tool(second)
}

/// Add declared tools to `tools` and `declared`, compiling their schemas.
/// Shared by policy loading and by tools a request declares; for those,
/// `known` holds the policy's own, and a tool that declares the very
/// parameters the policy declares for it keeps no schema of its own (the
/// policy's already checks its calls, and would report every failure
/// twice).
pub(crate) fn declare(
    tools: &mut ToolTable,
    declared: &mut NameSet,
    known: Option<&ToolTable>,
    decls: Vec<(String, ToolDecl)>,
    validate_formats: bool,
    problems: &mut Vec<Problem>,
) {
    // A policy's schemas are compiled on every core at once (a request's
    // few, one after the other, where they are needed).
    let mut compiled = match known {
        None => compile_all(&decls, validate_formats),
        Some(_) => Vec::new(),
    }
    .into_iter();
    for (path, decl) in decls {
        let ready = compiled.next().flatten();
        if declared.contains(&decl.name) {
            problems.push(
                Problem::new(&path, format!("tool '{}' is declared twice", decl.name))
                    .for_tool(&decl.name),
            );
            continue;
        }
        declared.insert(&decl.name);
        for alias in &decl.aliases {
            declared.insert(alias);
        }
        let mut spec = ToolSpec::new(decl.kind.clone());
        if decl.kind == DeclaredKind::Function {
            match &decl.parameters {
                None => spec.takes_no_arguments = true,
                Some(parameters) => {
                    spec.takes_no_arguments = declares_no_parameters(parameters);
                    let checked = known.is_some_and(|known| {
                        known.find(&decl.name).iter().any(|own| {
                            own.is_function() && own.parameters.as_ref() == Some(parameters)
                        })
                    });
                    if !checked {
                        let schema = ready.unwrap_or_else(|| {
                            ArgumentSchema::compile(parameters, validate_formats)
                        });
                        match schema {
                            Ok(schema) => {
                                spec.schema = Some(schema);
                                // Kept for the requests' tools to compare.
                                spec.parameters = known.is_none().then(|| parameters.clone());
                            }
                            Err(why) => problems.push(
                                Problem::new(
                                    &path,
                                    format!("tool '{}' has an invalid schema: {why}", decl.name),
                                )
                                .for_tool(&decl.name),
                            ),
                        }
                    }
                }
            }
        }
        tools.insert(&decl.name, spec);
        for alias in &decl.aliases {
            tools.insert(alias, ToolSpec::new(decl.kind.clone()));
        }
    }
}

/// Below this many schemas, a policy's are compiled on the calling thread
/// alone: starting a thread costs more than a small schema's compile.
const COMPILED_AT_ONCE: usize = 4;

/// The compiled schema of each declaration that has parameters (`None` for
/// the others), compiled on every core: a large policy's schemas are most
/// of its load time, which a run spends before it checks anything. Empty
/// when there are too few to share out, or one core.
fn compile_all(
    decls: &[(String, ToolDecl)],
    validate_formats: bool,
) -> Vec<Option<Result<ArgumentSchema, String>>> {
    let wanted: Vec<(usize, &Value)> = decls
        .iter()
        .enumerate()
        .filter(|(_, (_, decl))| decl.kind == DeclaredKind::Function)
        .filter_map(|(at, (_, decl))| Some((at, decl.parameters.as_ref()?)))
        .collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(wanted.len() / COMPILED_AT_ONCE);
    if threads < 2 {
        // None here: compiled where they are declared, one after the other.
        return Vec::new();
    }
    let mut compiled: Vec<Option<Result<ArgumentSchema, String>>> =
        std::iter::repeat_with(|| None).take(decls.len()).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let compile = || {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some((decl, parameters)) = wanted.get(at) else {
                return done;
            };
            done.push((*decl, ArgumentSchema::compile(parameters, validate_formats)));
        }
    };
    std::thread::scope(|scope| {
        // A thread that cannot start leaves its share to the others (the
        // calling thread takes every schema left).
        let others: Vec<_> = (1..threads)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, compile)
                    .ok()
            })
            .collect();
        let mine = compile();
        for (decl, schema) in others
            .into_iter()
            // A panic in a compile is the loading thread's.
            .flat_map(|other| {
                other
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .chain(mine)
        {
            compiled[decl] = Some(schema);
        }
    });
    compiled
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn problems(value: &Value) -> Vec<String> {
        compile(value, None)
            .1
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// A policy of many tools compiles their schemas on several threads:
    /// each tool keeps its own, and the invalid ones are reported in the
    /// order they are declared, as when compiled one after the other.
    #[test]
    fn many_schemas_compile_at_once_each_in_its_place() {
        let tools: Vec<Value> = (0..12)
            .map(|n| {
                let kind = if n % 5 == 3 { "strng" } else { "string" };
                json!({"type": "function", "function": {
                    "name": format!("tool_{n}"),
                    "parameters": {"type": "object", "properties": {
                        format!("arg_{n}"): {"type": kind}
                    }, "required": [format!("arg_{n}")]},
                }})
            })
            .collect();
        let (policy, problems) = compile(&json!({ "tools": tools }), None);
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("tool 'tool_3' has an invalid schema"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("tool 'tool_8' has an invalid schema"),
            "{problems:?}"
        );
        for n in (0..12).filter(|n| n % 5 != 3) {
            let name = format!("tool_{n}");
            let spec = policy.tools.find(&name);
            let schema = spec[0].schema.as_ref().expect("a schema");
            assert!(
                schema
                    .failures(&json!({ format!("arg_{n}"): "x" }))
                    .is_empty(),
                "{name}"
            );
            assert!(
                !schema
                    .failures(&json!({ format!("arg_{}", n + 1): "x" }))
                    .is_empty(),
                "{name}"
            );
        }
    }

    #[test]
    fn unknown_keys_name_the_closest() {
        assert_eq!(
            problems(&json!({"alowed_functions": ["a"]})),
            ["alowed_functions: unknown key `alowed_functions`; the closest known key is `allowed_functions`"]
        );
        assert_eq!(
            problems(&json!({"normalize": {"strip_empty": true}})),
            ["normalize.strip_empty: unknown key `strip_empty`; the closest known key is `strip_empty_values`"]
        );
    }

    #[test]
    fn every_problem_at_once() {
        let found = problems(&json!({
            "minTools": "two", "max_tools": 1, "maxTools": 2, "expected": [1],
            "schema": {"a": {"type": "nope"}}, "bogus": 1
        }));
        assert_eq!(found.len(), 5, "{found:#?}");
        assert!(found
            .iter()
            .any(|p| p.starts_with("schema.a: tool 'a' has an invalid schema")));
    }

    #[test]
    fn a_hosted_tool_beside_checks_of_the_users_is_a_warning() {
        let policy = json!({
            "tools": [
                {"type": "bash_20250124", "name": "bash"},
                {"type": "web_search"},
                {"type": "custom", "name": "write_note"},
                {"type": "function", "function": {"name": "search"}}
            ],
            "schema": {"bash": {"type": "object"}, "Web-Search": {"type": "object"}, "write_note": {"type": "object"}, "search": {"type": "object"}},
            "required_params": {"bash": ["command"], "other": ["x"]}
        });
        let (_, found) = compile(&policy, None);
        let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(found.iter().all(|p| !p.is_error()), "{lines:#?}");
        assert_eq!(lines, [
            "schema.bash: warning: tool 'bash' is declared as the hosted tool `bash_20250124`, whose arguments no schema of the provider's checks; this `schema` still applies to every call of 'bash'",
            "schema.Web-Search: warning: tool 'Web-Search' is declared as the hosted tool `web_search`, whose arguments no schema of the provider's checks; this `schema` still applies to every call of 'Web-Search'",
            "schema.write_note: warning: tool 'write_note' is declared as a custom tool that takes freeform text; this `schema` still applies, so a call that sends text is refused as malformed_arguments",
            "required_params.bash: warning: tool 'bash' is declared as the hosted tool `bash_20250124`, whose arguments no schema of the provider's checks; this `required_params` still applies to every call of 'bash'",
        ]);
        assert_eq!(found[0].tool.as_deref(), Some("bash"));
        // The policy loads, with its warnings, and applies the checks.
        let policy = Policy::from_value(&policy, None).unwrap();
        assert_eq!(policy.warnings().len(), 4);
    }

    #[test]
    fn an_error_stops_loading_and_comes_first() {
        let err = Policy::from_value(
            &json!({"tools": [{"type": "bash_20250124", "name": "bash"}], "schema": {"bash": {"type": "object"}},
                    "max_tools": "x"}),
            None,
        )
        .unwrap_err();
        let problems = err.problems();
        assert_eq!(problems.len(), 2);
        assert!(
            problems[0].is_error() && !problems[1].is_error(),
            "{problems:?}"
        );
        assert!(
            err.to_string().starts_with("invalid policy: max_tools: "),
            "{err}"
        );
    }

    #[test]
    fn a_declaration_without_parameters_gives_way_to_checks_of_the_users() {
        let policy = Policy::from_value(
            &json!({"tools": [{"name": "ping"}, {"name": "pong"}, {"name": "peng"}],
                    "schema": {"Ping": {"type": "object"}}, "required_params": {"pong": ["x"], "peng": []}}),
            None,
        )
        .unwrap();
        let takes_none = |name: &str| policy.tools.find(name)[0].takes_no_arguments;
        assert!(!takes_none("ping"));
        assert!(!takes_none("pong"));
        assert!(takes_none("peng"));
    }

    #[test]
    fn yaml_and_json_read_the_same() {
        let yaml = parse_text("minTools: 1\nexpected: search\n").unwrap();
        let json = parse_text(r#"{"minTools": 1, "expected": "search"}"#).unwrap();
        assert_eq!(yaml, json);
        assert!(parse_text("a: 1\na: 2\n").is_err());
        assert!(parse_text(r#"{"a": 1, "a": 2}"#).is_err());
    }
}
