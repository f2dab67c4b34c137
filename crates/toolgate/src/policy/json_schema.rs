//! The policy file as a JSON Schema (`toolgate policy schema`), for editor
//! completion and checks in YAML and JSON. Its keys are the loader's own
//! key tables (`load.rs`, `access.rs`), so a key the loader accepts cannot
//! be missing here: a key without a schema below makes [`json_schema`]
//! describe it as "any value", and a test fails until it has one. Every
//! object the loader reads strictly refuses other keys here too
//! (`additionalProperties: false`); tool declarations, whose shapes are the
//! providers', and JSON Schemas are left open.

use serde_json::{json, Map, Value};

use crate::policy::access::{CALLER_KEYS, LIMIT_ENTRY_KEYS, ROLE_KEYS, RULE_KEYS};
use crate::policy::load::{
    AUDIT_KEYS, GATEWAY_KEYS, LIMIT_KEYS, MCP_KEYS, MCP_SERVER_KEYS, NORMALIZE_KEYS, TOP_KEYS,
};

/// The JSON Schema (draft 2020-12) of a policy file.
#[must_use]
pub fn json_schema() -> Value {
    let mut properties = Map::new();
    let mut exclusive = Vec::new();
    for (canonical, aliases) in TOP_KEYS {
        let schema = top_key(canonical).unwrap_or_else(|| any(canonical));
        for spelling in std::iter::once(canonical).chain(aliases.iter().copied()) {
            properties.insert(spelling.to_owned(), schema.clone());
        }
        for alias in aliases {
            // The loader refuses one key under two spellings.
            exclusive.push(json!({"not": {"required": [canonical, alias]}}));
        }
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "toolgate policy",
        "description": "Which tools an LLM agent may call, with which arguments, by whom, and what it was expected to do. Every key is optional; YAML or JSON.",
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
        "allOf": exclusive,
    })
}

/// A key the schema does not describe yet: any value.
fn any(key: &str) -> Value {
    json!({"description": format!("`{key}` (no schema yet)")})
}

fn described(description: &str, mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.insert("description".into(), Value::String(description.into()));
    }
    schema
}

fn names() -> Value {
    json!({"type": "array", "items": {"type": "string", "minLength": 1}})
}

fn name_or_names() -> Value {
    json!({"oneOf": [{"type": "string", "minLength": 1}, names()]})
}

fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

fn seconds() -> Value {
    json!({"type": "number", "exclusiveMinimum": 0, "maximum": 86400})
}

/// A strict object: exactly `keys`, each with its schema from `field`.
fn strict(keys: &[&str], field: impl Fn(&str) -> Option<Value>) -> Value {
    let properties: Map<String, Value> = keys
        .iter()
        .map(|key| ((*key).to_owned(), field(key).unwrap_or_else(|| any(key))))
        .collect();
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

/// The schema of each top-level key, by its canonical spelling.
#[allow(clippy::too_many_lines)] // one arm per top-level key
fn top_key(key: &str) -> Option<Value> {
    Some(match key {
        "tools" => described(
            "Declared tools: OpenAI `{type: function, function: {...}}`, OpenAI Responses, Anthropic `{name, input_schema}`, MCP `{name, inputSchema}`, Bedrock `toolSpec`, Gemini `functionDeclarations`, plain `{name, parameters}`, custom tools, and hosted tools by `type`. The allowlist when `allowed_functions` is absent.",
            json!({"type": "array", "items": {"type": "object"}}),
        ),
        "tools_file" => described(
            "A file of tool declarations (a list, or an object with `tools`), relative to the policy's directory.",
            json!({"type": "string"}),
        ),
        "allowed_functions" => described("The allowlist: a call must name one of these exactly.", names()),
        "forbidden" => described(
            "Tools never allowed, whatever else says; look-alike and namespaced spellings are caught.",
            name_or_names(),
        ),
        "required_params" => described(
            "Parameters each tool must receive: {tool: [parameter, ...]}.",
            json!({"type": "object", "additionalProperties": names()}),
        ),
        "schema" => described(
            "A JSON Schema per tool's arguments: {tool: schema}. Drafts 4, 6, 7, 2019-09 and 2020-12 by `$schema`.",
            json!({"type": "object", "additionalProperties": {"type": ["object", "boolean"]}}),
        ),
        "expected" => described("Tools the agent must each call (a name or a list).", name_or_names()),
        "order" => described(
            "Tools whose first calls must come in this relative order.",
            names(),
        ),
        "min_tools" => described("The fewest tool calls a trace may hold.", count()),
        "max_tools" => described("The most tool calls a trace may hold.", count()),
        "validate_args" => described(
            "Arguments some call of a tool must send: {tool: {argument: value}}; equal as JSON, numbers by value.",
            json!({"type": "object", "additionalProperties": {"type": "object"}}),
        ),
        "require_calls" => described(
            "A payload without any tool call scores 0 and fails.",
            json!({"type": "boolean"}),
        ),
        "validate_formats" => described(
            "Assert JSON Schema `format` (email, date-time, uri, ...). Default true.",
            json!({"type": "boolean"}),
        ),
        "require_result_names" => described(
            "A tool result must name its call's tool.",
            json!({"type": "boolean"}),
        ),
        "normalize" => described(
            "Clean arguments before they are checked; the cleaned arguments are the ones that execute.",
            strict(&NORMALIZE_KEYS, |key| {
                Some(match key {
                    "strip_empty_values" | "strip_placeholder_strings" => json!({"type": "boolean"}),
                    "placeholder_strings" => json!({"type": "array", "items": {"type": "string"}}),
                    _ => return None,
                })
            }),
        ),
        "input_limits" => described(
            "Bounds on what a payload can make toolgate read; past one: input_limit_exceeded.",
            strict(&LIMIT_KEYS, |_| Some(count())),
        ),
        "callers" => described(
            "Known callers: {id, key_sha256, roles, attributes}.",
            json!({"type": "array", "items": caller()}),
        ),
        "roles" => described(
            "Roles: {name: {allow: [tools], forbid: [tools]}}; `*` means every tool.",
            json!({"type": "object", "additionalProperties": strict(&ROLE_KEYS, |_| Some(names()))}),
        ),
        "rules" => described(
            "CEL rules each call of `tool` must meet: {tool, when, message}.",
            json!({"type": "array", "items": rule()}),
        ),
        "caller_header" => described(
            "A request header, set by your authentication proxy, that names the caller's id.",
            json!({"type": "string", "minLength": 1, "pattern": "\\S"}),
        ),
        "limits" => described(
            "Rate limits: {tool, max, per, by}.",
            json!({"type": "array", "items": limit()}),
        ),
        "limits_backend" => described(
            "`memory` (one process) or a redis:// URL shared by gateway replicas.",
            json!({"type": "string", "pattern": "^(memory$|redis://|rediss://)"}),
        ),
        "gateway" => described("Settings of `toolgate serve`.", gateway()),
        "$schema" => described(
            "The JSON Schema editors check this file against (`toolgate policy schema`); toolgate does not read it.",
            json!({"type": "string"}),
        ),
        "audit" => described(
            "Where `toolgate serve` records each checked request.",
            strict(&AUDIT_KEYS, |key| {
                Some(match key {
                    "sqlite" | "jsonl" | "postgres" => json!({"type": "string"}),
                    "redact" => names(),
                    _ => return None,
                })
            }),
        ),
        "mcp" => described(
            "The MCP servers `toolgate serve` stands in front of (each at /mcp/<name>), and the pinning of their tool definitions.",
            mcp(),
        ),
        _ => return None,
    })
}

fn mcp() -> Value {
    strict(&MCP_KEYS, |key| {
        Some(match key {
            "servers" => json!({"type": "array", "items": strict(&MCP_SERVER_KEYS, |key| {
                Some(match key {
                    "name" => json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}),
                    "url" => json!({"type": "string", "pattern": "^https?://[^/]"}),
                    _ => return None,
                })
            })}),
            "pin_tools" => json!({"type": "boolean"}),
            "pins" => json!({"type": "string"}),
            _ => return None,
        })
    })
}

fn caller() -> Value {
    let mut schema = strict(&CALLER_KEYS, |key| {
        Some(match key {
            "id" => json!({"type": "string"}),
            "key_sha256" => json!({"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}),
            "roles" => names(),
            "attributes" => json!({"type": "object"}),
            _ => return None,
        })
    });
    schema["required"] = json!(["id"]);
    schema
}

fn rule() -> Value {
    let mut schema = strict(&RULE_KEYS, |key| {
        Some(match key {
            "tool" | "when" | "message" => json!({"type": "string"}),
            _ => return None,
        })
    });
    schema["required"] = json!(["tool", "when"]);
    schema
}

fn limit() -> Value {
    let mut schema = strict(&LIMIT_ENTRY_KEYS, |key| {
        Some(match key {
            "tool" => json!({"type": "string"}),
            "max" => count(),
            "per" => json!({"type": "string", "pattern": "^\\s*[0-9]+[smhd]?\\s*$"}),
            "by" => json!({"type": "string", "pattern": "^(caller|global|arg:.+)$"}),
            _ => return None,
        })
    });
    schema["required"] = json!(["tool", "max", "per"]);
    schema
}

fn gateway() -> Value {
    strict(&GATEWAY_KEYS, |key| {
        Some(match key {
            "upstream" | "upstream_key" | "listen" => json!({"type": "string"}),
            "on_violation" => json!({"enum": ["block", "retry"]}),
            "max_retries" => count(),
            "max_request_bytes" | "max_response_bytes" => json!({"type": "integer", "minimum": 1}),
            "connect_timeout"
            | "upstream_timeout"
            | "header_read_timeout"
            | "body_read_timeout" => seconds(),
            _ => return None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of every table has a schema of its own.
    #[test]
    fn no_key_is_described_as_any_value() {
        let text = json_schema().to_string();
        assert!(
            !text.contains("(no schema yet)"),
            "a key the loader reads has no schema in json_schema.rs: {text}"
        );
    }
}
