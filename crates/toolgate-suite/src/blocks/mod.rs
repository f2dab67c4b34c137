//! The blocks a test's `pipeline` runs, in order: `HttpRequest` (one
//! request to the agent), `StreamParser` (its answer read into text and
//! tool calls), `ValidateTools` (the verdict on those calls). Each block
//! reads earlier outputs through `${...}` references and binds its own
//! output under the names its `output` gives.

mod http;
mod stream;
mod text;
mod validate;

use std::time::Duration;

use serde_json::{Map, Value};

use self::http::HttpRequest;
use self::stream::StreamParser;
pub(crate) use self::validate::BasePolicy;
use self::validate::ValidateTools;
use crate::template::{Reference, Scope};

/// The block names a pipeline may use.
pub const BLOCKS: [&str; 3] = ["HttpRequest", "StreamParser", "ValidateTools"];

/// The bounds a block works within unless its `config` says otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How long one `HttpRequest` may take, answer body included.
    pub timeout: Duration,
    /// The largest answer body an `HttpRequest` reads.
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(120),
            max_body_bytes: 16 * 1024 * 1024,
        }
    }
}

/// One compiled block.
#[derive(Debug, Clone)]
pub struct Block {
    /// The block's `id`, when it has one.
    pub id: Option<String>,
    kind: Kind,
    output: Output,
}

#[derive(Debug, Clone)]
enum Kind {
    Http(HttpRequest),
    Stream(StreamParser),
    Validate(ValidateTools),
}

/// Where a block's output goes.
#[derive(Debug, Clone)]
pub(crate) enum Output {
    /// No `output`: the block's output is not bound to a name.
    Unbound,
    /// `"output": "response"`: the whole output under one name.
    Whole(String),
    /// `"output": {"toolCalls": "tools"}`: each field under its name.
    Fields(Vec<(String, String)>),
}

impl Block {
    pub(crate) fn compile(
        id: Option<String>,
        name: &str,
        input: Option<&Value>,
        config: Option<&Value>,
        output: Option<&Value>,
        base: &BasePolicy,
    ) -> Result<Self, String> {
        let (kind, fields): (Kind, &[&str]) = match name {
            "HttpRequest" => (
                Kind::Http(HttpRequest::compile(input, config)?),
                &http::OUTPUTS,
            ),
            "StreamParser" => (
                Kind::Stream(StreamParser::compile(input, config)?),
                &stream::OUTPUTS,
            ),
            "ValidateTools" => (
                Kind::Validate(ValidateTools::compile(input, config, base)?),
                &validate::OUTPUTS,
            ),
            other => {
                let near = crate::closest(other, BLOCKS)
                    .map(|near| format!("; did you mean `{near}`?"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown block `{other}`{near} (toolgate runs {})",
                    BLOCKS.join(", ")
                ));
            }
        };
        let output = match output {
            None | Some(Value::Null) => Output::Unbound,
            Some(Value::String(name)) if !name.is_empty() && !name.contains('.') => {
                Output::Whole(name.clone())
            }
            Some(Value::Object(map)) => {
                let mut out = Vec::with_capacity(map.len());
                for (field, bound) in map {
                    if !fields.contains(&field.as_str()) {
                        let near = crate::closest(field, fields.iter().copied())
                            .map(|near| format!("; the closest is `{near}`"))
                            .unwrap_or_default();
                        return Err(format!(
                            "`output.{field}`: a {name} gives no `{field}`{near} (it gives {})",
                            fields.join(", ")
                        ));
                    }
                    match bound {
                        Value::String(bound) if !bound.is_empty() && !bound.contains('.') => {
                            out.push((field.clone(), bound.clone()));
                        }
                        _ => {
                            return Err(format!(
                                "`output.{field}` must be a name without dots, not {bound}"
                            ))
                        }
                    }
                }
                Output::Fields(out)
            }
            Some(other) => {
                return Err(format!(
                    "`output` is a name without dots (\"response\") or an object of fields and names ({{\"toolCalls\": \"tools\"}}), not {other}"
                ))
            }
        };
        Ok(Block { id, kind, output })
    }

    /// The block's name as written in a suite.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Http(_) => "HttpRequest",
            Kind::Stream(_) => "StreamParser",
            Kind::Validate(_) => "ValidateTools",
        }
    }

    /// Whether the block gives a verdict.
    pub(crate) fn is_validation(&self) -> bool {
        matches!(self.kind, Kind::Validate(_))
    }

    pub(crate) fn output(&self) -> &Output {
        &self.output
    }

    /// The values whose references the loader checks, and the reference
    /// `from` reads.
    pub(crate) fn templates(&self) -> (Vec<&Value>, Option<&Reference>) {
        match &self.kind {
            Kind::Http(http) => (vec![http.input()], None),
            Kind::Stream(stream) => (vec![stream.input()], None),
            Kind::Validate(validate) => (validate.templates(), validate.calls_reference()),
        }
    }

    /// Run the block; its whole output, or why it failed.
    pub(crate) async fn run(&self, scope: &Scope<'_>, env: &RunEnv<'_>) -> Result<Value, String> {
        match &self.kind {
            Kind::Http(http) => http.run(scope, env.client, &env.limits).await,
            Kind::Stream(stream) => stream.run(scope, &env.read_limits),
            Kind::Validate(validate) => validate.run(scope, env.base_dir),
        }
    }
}

/// What blocks share while a suite runs.
pub(crate) struct RunEnv<'a> {
    pub(crate) client: &'a reqwest::Client,
    pub(crate) limits: Limits,
    /// The bounds answers are read within (the base policy's
    /// `input_limits`).
    pub(crate) read_limits: toolgate::Limits,
    pub(crate) base_dir: Option<&'a std::path::Path>,
}

/// A block's `config`: an object, or nothing.
pub(crate) fn config_map(config: Option<&Value>) -> Result<Map<String, Value>, String> {
    match config {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(format!("`config` must be an object, not {other}")),
    }
}

/// Refuse a key of `map` that is not in `known`, naming the closest.
pub(crate) fn known_keys(
    what: &str,
    map: &Map<String, Value>,
    known: &[&str],
) -> Result<(), String> {
    for key in map.keys() {
        if !known.contains(&key.as_str()) {
            let near = crate::closest(key, known.iter().copied())
                .map(|near| format!("; the closest known key is `{near}`"))
                .unwrap_or_default();
            return Err(format!("unknown key `{what}.{key}`{near}"));
        }
    }
    Ok(())
}
