//! A policy file, compiled once into a [`Policy`]: which tools may run with
//! which arguments, and what an agent was expected to do.
//!
//! Loading reads YAML or JSON (same keys, the seed spellings accepted as
//! written), refuses unknown keys naming the closest known one, and compiles
//! every JSON Schema. A loaded `Policy` is valid: checking a call parses
//! nothing again. [`lint`] reports every problem of a file at once.

pub mod access;
mod email;
mod gemini;
mod json_schema;
mod load;
mod named;
pub mod names;
pub mod schema;
mod table;
pub mod tools;

use rustc_hash::FxHashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use self::access::Access;
pub use self::json_schema::json_schema;
pub(crate) use self::load::declare;
pub(crate) use self::named::Named;
use self::names::{Keyed, NameSet};
use self::schema::ArgumentSchema;
pub(crate) use self::table::{ToolSpec, ToolTable};
pub(crate) use self::tools::parse_tool;
pub use self::tools::{DeclaredKind, ToolDecl};
use crate::detect::tape::Leaf;
use crate::detect::Limits;

/// A compiled policy. Build it with [`Policy::load`], [`Policy::from_text`]
/// or [`Policy::from_value`]; `Policy::default()` allows every call.
#[derive(Debug)]
pub struct Policy {
    /// The declared tools (`tools`, `tools_file`) and what each declares.
    pub(crate) tools: ToolTable,
    /// `schema`: the user's own JSON Schemas, per tool. They apply to every
    /// call of the tool, whatever its declaration (a hosted tool's too).
    pub(crate) schemas: Keyed<ArgumentSchema>,
    /// `required_params`, per tool; applies like `schemas`.
    pub(crate) required: Keyed<Vec<String>>,
    /// Names of the declared tools (and the names hosted tools are called by).
    pub(crate) declared: NameSet,
    /// `allowed_functions`, when set.
    pub(crate) allowed: Option<NameSet>,
    pub(crate) forbidden: NameSet,
    /// What the policy says of each name it writes (see [`named`]).
    pub(crate) by_name: FxHashMap<String, Named>,
    /// What the agent was expected to do.
    pub(crate) expect: Expectations,
    /// `validate_formats`: JSON Schema `format` is asserted (the default).
    pub(crate) validate_formats: bool,
    /// `require_result_names`: a tool result must name its call's tool.
    pub(crate) require_result_names: bool,
    pub(crate) normalize: Normalize,
    pub(crate) limits: Limits,
    pub(crate) gateway: GatewaySettings,
    pub(crate) audit: AuditSettings,
    pub(crate) mcp: McpSettings,
    /// Callers, roles, rules and rate limits (docs/policy.md, "Who may call what").
    pub(crate) access: Access,
    /// What `policy lint` warns about: the policy loads and applies them
    /// as written.
    pub(crate) warnings: Vec<Problem>,
    /// The tool lists payloads declared, compiled (see [`Policy::declared`]).
    pub(crate) lists: crate::check::lists::ToolLists,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            tools: ToolTable::default(),
            schemas: Keyed::default(),
            required: Keyed::default(),
            declared: NameSet::default(),
            allowed: None,
            forbidden: NameSet::default(),
            by_name: FxHashMap::default(),
            expect: Expectations::default(),
            validate_formats: true,
            require_result_names: false,
            normalize: Normalize::default(),
            limits: Limits::default(),
            gateway: GatewaySettings::default(),
            audit: AuditSettings::default(),
            mcp: McpSettings::default(),
            access: Access::default(),
            warnings: Vec::new(),
            lists: crate::check::lists::ToolLists::default(),
        }
    }
}

/// What the agent was expected to do: the expectation kinds of the score.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expectations {
    pub expected: Vec<String>,
    pub order: Vec<String>,
    pub min_tools: Option<usize>,
    pub max_tools: Option<usize>,
    pub validate_args: Vec<ArgExpectation>,
    pub require_calls: bool,
}

impl Expectations {
    /// The policy keys these come from.
    pub const KEYS: [&'static str; 6] = [
        "expected",
        "order",
        "min_tools",
        "max_tools",
        "validate_args",
        "require_calls",
    ];
}

/// One `validate_args` pair: some call of `tool` must have `arg` equal to
/// `value` (as JSON, numbers by value).
#[derive(Debug, Clone, PartialEq)]
pub struct ArgExpectation {
    pub tool: String,
    pub arg: String,
    pub value: Value,
}

/// `normalize`: clean arguments before they are checked; the cleaned
/// arguments are the ones that execute.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Normalize {
    pub strip_empty_values: bool,
    pub strip_placeholder_strings: bool,
    pub placeholder_strings: Vec<String>,
}

impl Default for Normalize {
    fn default() -> Self {
        Normalize {
            strip_empty_values: false,
            strip_placeholder_strings: false,
            placeholder_strings: ["none", "null", "undefined", "\"\"", "''"]
                .map(str::to_owned)
                .to_vec(),
        }
    }
}

impl Normalize {
    /// Whether any cleaning is on.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.strip_empty_values || self.strip_placeholder_strings
    }

    /// Whether cleaning drops a value, as written: the one rule, for the
    /// arguments' object, their tape, and the Python bindings, which clean
    /// a dict read onto a tape the same way.
    #[doc(hidden)]
    #[must_use]
    pub fn drops(&self, leaf: &Leaf<'_>) -> bool {
        match leaf {
            Leaf::Null | Leaf::Empty => self.strip_empty_values,
            Leaf::Text(text) => {
                self.strip_placeholder_strings
                    && crate::check::normalize::is_placeholder(text, &self.placeholder_strings)
            }
            Leaf::Other => false,
        }
    }
}

/// What to do with a response holding a violation (`gateway.on_violation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnViolation {
    #[default]
    Block,
    Retry,
}

/// `gateway`: settings of `toolgate serve`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewaySettings {
    /// Base URL of the upstream API; the request path is appended.
    pub upstream: Option<String>,
    /// The key sent upstream instead of the client's (`Authorization:
    /// Bearer` on OpenAI routes, `x-api-key` on Anthropic's). Write
    /// `${env.NAME}` to read it from the environment.
    pub upstream_key: Option<String>,
    /// Address to listen on (`--listen` wins).
    pub listen: Option<String>,
    pub on_violation: OnViolation,
    pub max_retries: u32,
    /// Largest request body accepted (default: `input_limits.max_payload_bytes`).
    pub max_request_bytes: Option<usize>,
    /// Largest upstream response read (default: `input_limits.max_payload_bytes`).
    pub max_response_bytes: Option<usize>,
    /// Seconds to connect to the upstream.
    pub connect_timeout: f64,
    /// Seconds the upstream may take: for a whole response, or between two
    /// chunks of a stream.
    pub upstream_timeout: f64,
    /// Seconds a client may take to send a request's headers.
    pub header_read_timeout: f64,
    /// Seconds a client may take to send a request's body, once its
    /// headers are in.
    pub body_read_timeout: f64,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            upstream: None,
            upstream_key: None,
            listen: None,
            on_violation: OnViolation::Block,
            max_retries: 2,
            max_request_bytes: None,
            max_response_bytes: None,
            connect_timeout: 10.0,
            upstream_timeout: 600.0,
            header_read_timeout: 10.0,
            body_read_timeout: 60.0,
        }
    }
}

/// `audit`: where `toolgate serve` records each checked request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    pub sqlite: Option<String>,
    pub jsonl: Option<String>,
    pub postgres: Option<String>,
    pub redact: Vec<String>,
}

/// `mcp`: the MCP servers `toolgate serve` stands in front of, and the
/// pinning of their tool definitions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// Each served at `/mcp/<name>`.
    pub servers: Vec<McpServer>,
    /// Pin each tool definition by its SHA-256 when first seen; a changed
    /// definition is withheld until accepted.
    pub pin_tools: bool,
    /// The pin file (default: `toolgate-pins.json` beside the audit file).
    pub pins: Option<String>,
}

/// One MCP server behind the gateway.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// The path segment it is served under: letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// Its Streamable HTTP endpoint (`http://` or `https://`).
    pub url: String,
}

impl McpSettings {
    /// The pin file: `pins`, else `toolgate-pins.json` in the directory of
    /// the audit's SQLite or JSON lines file, else in the working directory.
    #[must_use]
    pub fn pins_path(&self, audit: &AuditSettings) -> PathBuf {
        if let Some(pins) = &self.pins {
            return PathBuf::from(pins);
        }
        let beside = audit.sqlite.as_deref().or(audit.jsonl.as_deref());
        let dir = beside
            .and_then(|file| Path::new(file).parent())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        dir.join("toolgate-pins.json")
    }
}

impl Policy {
    /// What the policy says of the tool name `name`, spelled exactly so,
    /// when it writes the name (see [`named`]).
    pub(crate) fn named(&self, name: &str) -> Option<&Named> {
        self.by_name.get(name)
    }

    /// Read and compile a policy file (YAML or JSON). A `tools_file` is read
    /// relative to the policy's directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Policy, PolicyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.to_path_buf(),
            message: source.to_string(),
        })?;
        Policy::from_text(&text, path.parent())
    }

    /// Compile a policy from YAML or JSON text; `base_dir` resolves a
    /// relative `tools_file`.
    pub fn from_text(text: &str, base_dir: Option<&Path>) -> Result<Policy, PolicyError> {
        let value =
            load::parse_text(text).map_err(|problem| PolicyError::Invalid(vec![problem]))?;
        Policy::from_value(&value, base_dir)
    }

    /// Compile a policy from its JSON value.
    /// Warnings do not stop a policy from loading: they are kept, and
    /// [`Policy::warnings`] lists them.
    pub fn from_value(value: &Value, base_dir: Option<&Path>) -> Result<Policy, PolicyError> {
        let (mut policy, mut problems) = load::compile(value, base_dir);
        if problems.iter().any(Problem::is_error) {
            // Errors first: the first problem is the one a message shows.
            problems.sort_by_key(|problem| problem.severity);
            Err(PolicyError::Invalid(problems))
        } else {
            policy.warnings = problems;
            Ok(policy)
        }
    }

    /// What `policy lint` warns about in this policy, which loaded and
    /// applies as written (a hosted tool with a `schema` of the user's, ...).
    #[must_use]
    pub fn warnings(&self) -> &[Problem] {
        &self.warnings
    }

    /// The bounds payloads are read within (`input_limits`).
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `require_calls`.
    #[must_use]
    pub fn require_calls(&self) -> bool {
        self.expect.require_calls
    }

    /// `expected`, in order.
    #[must_use]
    pub fn expected(&self) -> &[String] {
        &self.expect.expected
    }

    /// What the agent was expected to do (`expected`, `order`, `min_tools`,
    /// `max_tools`, `validate_args`, `require_calls`).
    #[must_use]
    pub fn expectations(&self) -> &Expectations {
        &self.expect
    }

    /// These expectations with the keys of `overrides` replacing the
    /// policy's, for one scenario of a dataset. `None` when `overrides`
    /// holds any other key: then the whole policy must be compiled again.
    #[must_use]
    pub fn override_expectations(
        &self,
        overrides: &serde_json::Map<String, Value>,
    ) -> Option<Result<Expectations, PolicyError>> {
        fn canonical(key: &str) -> &str {
            match key {
                "minTools" => "min_tools",
                "maxTools" => "max_tools",
                "validateArgs" => "validate_args",
                other => other,
            }
        }
        let keys: Vec<&str> = overrides.keys().map(|k| canonical(k)).collect();
        if !keys.iter().all(|k| Expectations::KEYS.contains(k)) {
            return None;
        }
        let only = Value::Object(overrides.clone());
        let (parsed, problems) = load::compile(&only, None);
        if problems.iter().any(Problem::is_error) {
            return Some(Err(PolicyError::Invalid(problems)));
        }
        let mut merged = self.expect.clone();
        for key in keys {
            match key {
                "expected" => merged.expected.clone_from(&parsed.expect.expected),
                "order" => merged.order.clone_from(&parsed.expect.order),
                "min_tools" => merged.min_tools = parsed.expect.min_tools,
                "max_tools" => merged.max_tools = parsed.expect.max_tools,
                "validate_args" => merged
                    .validate_args
                    .clone_from(&parsed.expect.validate_args),
                _ => merged.require_calls = parsed.expect.require_calls,
            }
        }
        if let (Some(min), Some(max)) = (merged.min_tools, merged.max_tools) {
            if min > max {
                return Some(Err(PolicyError::Invalid(vec![Problem::new(
                    "min_tools",
                    format!("min_tools ({min}) is more than max_tools ({max})"),
                )])));
            }
        }
        Some(Ok(merged))
    }

    #[must_use]
    pub fn normalize(&self) -> &Normalize {
        &self.normalize
    }

    #[must_use]
    pub fn gateway(&self) -> &GatewaySettings {
        &self.gateway
    }

    #[must_use]
    pub fn audit(&self) -> &AuditSettings {
        &self.audit
    }

    /// The MCP servers and pinning (`mcp`).
    #[must_use]
    pub fn mcp(&self) -> &McpSettings {
        &self.mcp
    }

    /// Callers, roles, rules and rate limits.
    #[must_use]
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The names of the declared tools, in order of declaration.
    #[must_use]
    pub fn declared_tools(&self) -> &[String] {
        self.declared.names()
    }
}

/// Read a policy's keys from YAML or JSON text without compiling them
/// (duplicate keys refused): for fronts that keep a policy's source to
/// compile it again with some keys changed (the Python bindings).
pub fn parse_text(text: &str) -> Result<Value, PolicyError> {
    load::parse_text(text).map_err(|problem| PolicyError::Invalid(vec![problem]))
}

/// Read a policy file's keys without compiling them: YAML or JSON, duplicate
/// keys refused. For tools that derive policies from a base one (eval's
/// per-scenario overrides).
pub fn read_value(path: impl AsRef<Path>) -> Result<Value, PolicyError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
        path: path.to_path_buf(),
        message: source.to_string(),
    })?;
    load::parse_text(&text).map_err(|problem| PolicyError::Invalid(vec![problem]))
}

/// Every problem in a policy file, at once, warnings included; the policy
/// loads when none is an error ([`Problem::is_error`]).
#[must_use]
pub fn lint(path: impl AsRef<Path>) -> Vec<Problem> {
    let path = path.as_ref();
    match std::fs::read_to_string(path) {
        Err(err) => vec![Problem::new(
            "",
            format!("cannot read {}: {err}", path.display()),
        )],
        Ok(text) => match load::parse_text(&text) {
            Err(problem) => vec![problem],
            Ok(value) => load::compile(&value, path.parent()).1,
        },
    }
}

/// One problem in a policy: where (`tools[2].function.parameters`,
/// `schema.create_order`) and what, in lowercase words that suggest the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
    /// The tool the problem is about, when it is about one.
    pub tool: Option<String>,
    /// An error stops the policy from loading; a warning does not.
    pub severity: Severity,
}

/// How much a [`Problem`] matters. Errors sort first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The policy does not load.
    Error,
    /// The policy loads and applies as written, which may not be what its
    /// author meant: `policy lint` reports it.
    Warning,
}

impl Problem {
    pub(crate) fn new(path: &str, message: impl Into<String>) -> Self {
        Problem {
            path: path.to_owned(),
            message: message.into(),
            tool: None,
            severity: Severity::Error,
        }
    }

    /// A problem that does not stop the policy from loading.
    pub(crate) fn warning(path: &str, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::new(path, message)
        }
    }

    /// Whether the problem stops the policy from loading.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The same problem, about `tool`.
    pub(crate) fn for_tool(mut self, tool: &str) -> Self {
        self.tool = Some(tool.to_owned());
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        if self.severity == Severity::Warning {
            f.write_str("warning: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Why a policy could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The file could not be read.
    Io { path: PathBuf, message: String },
    /// The policy has problems (at least one).
    Invalid(Vec<Problem>),
}

impl PolicyError {
    /// Every problem, for `policy lint`.
    #[must_use]
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            PolicyError::Io { path, message } => {
                vec![Problem::new(
                    "",
                    format!("cannot read {}: {message}", path.display()),
                )]
            }
            PolicyError::Invalid(problems) => problems.clone(),
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::Io { path, message } => {
                write!(f, "cannot read {}: {message}", path.display())
            }
            PolicyError::Invalid(problems) => {
                write!(f, "invalid policy: ")?;
                match problems.as_slice() {
                    [] => f.write_str("no reason given"),
                    [one] => write!(f, "{one}"),
                    [first, rest @ ..] => write!(
                        f,
                        "{first} (and {} more; `toolgate policy lint` lists them all)",
                        rest.len()
                    ),
                }
            }
        }
    }
}

impl std::error::Error for PolicyError {}

#[cfg(test)]
mod tests {
    /// A compiled policy is shared by threads (eval) and requests (serve).
    #[test]
    fn a_policy_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<super::Policy>();
    }
}
