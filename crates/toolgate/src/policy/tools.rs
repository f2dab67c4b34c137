//! Tool declarations in every shape users paste from their code: OpenAI
//! Chat (`{type: function, function: {...}}`), OpenAI Responses (flat),
//! Anthropic (`input_schema`), MCP (`inputSchema`), Bedrock (`toolSpec`),
//! Gemini (`{functionDeclarations: [...]}`, see `gemini.rs`), plain
//! `{name, parameters}`, custom (freeform) tools, and hosted or
//! provider-defined tools by `type` (or, for Gemini, by key).

use serde_json::{Map, Value};

use crate::policy::gemini;
use crate::policy::Problem;

/// How a declared tool takes its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclaredKind {
    /// JSON arguments, checked against `parameters` when given.
    Function,
    /// Freeform text input (OpenAI custom tools): never JSON-validated.
    Custom,
    /// A hosted or provider-defined tool (`web_search`, `bash_20250124`,
    /// Gemini's `googleSearch`, ...): allowed by type; its arguments are
    /// the provider's, not checked against a schema of the provider's, but
    /// the policy's own checks for its name (`schema`, `required_params`,
    /// rules, limits) apply.
    Typed(String),
}

/// One declared tool, before its schema is compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDecl {
    pub name: String,
    pub kind: DeclaredKind,
    pub parameters: Option<Value>,
    /// Other names calls of this tool carry (a hosted tool's type, and its
    /// type without a version suffix).
    pub aliases: Vec<String>,
}

/// Keys that hold a tool's name or schema: a key one or two edits away from
/// one of these is a typo that would silently drop the schema.
const SCHEMA_KEYS: [&str; 8] = [
    "name",
    "parameters",
    "input_schema",
    "inputSchema",
    "function",
    "toolSpec",
    "functionDeclarations",
    "function_declarations",
];

/// Every tool a list of declarations declares (a request's `tools`, a
/// policy's), with every problem found in them. A Gemini entry declares
/// several.
#[must_use]
pub fn read_tools(tools: &[Value]) -> (Vec<ToolDecl>, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut decls = Vec::new();
    for (at, tool) in tools.iter().enumerate() {
        parse_tool(tool, &format!("tools[{at}]"), &mut problems, &mut decls);
    }
    (decls.into_iter().map(|(_, decl)| decl).collect(), problems)
}

/// Read one entry of `tools` (or of a `tools_file`) at `path`: each tool it
/// declares is added to `out` with its path.
pub(crate) fn parse_tool(
    value: &Value,
    path: &str,
    problems: &mut Vec<Problem>,
    out: &mut Vec<(String, ToolDecl)>,
) {
    if let Some(entry) = value.as_object().filter(|entry| gemini::is_tool(entry)) {
        gemini::tool(entry, path, problems, out);
    } else if let Some(decl) = parse_one(value, path, problems) {
        out.push((path.to_owned(), decl));
    }
}

/// One entry that declares one tool.
fn parse_one(value: &Value, path: &str, problems: &mut Vec<Problem>) -> Option<ToolDecl> {
    let Some(entry) = value.as_object() else {
        problems.push(Problem::new(path, "a tool must be an object with a name"));
        return None;
    };
    flag_typos(entry, path, problems);
    let tool_type = entry.get("type").and_then(Value::as_str);
    if let Some(function) = entry.get("function") {
        return function_like(
            function,
            &format!("{path}.function"),
            DeclaredKind::Function,
            problems,
        );
    }
    if let Some(spec) = entry.get("toolSpec") {
        let spec_path = format!("{path}.toolSpec");
        let mut decl = named(spec, &spec_path, DeclaredKind::Function, problems)?;
        decl.parameters = spec.get("inputSchema").map(|schema| {
            schema
                .get("json")
                .cloned()
                .unwrap_or_else(|| schema.clone())
        });
        return Some(decl);
    }
    match tool_type {
        None | Some("function") => function_like(value, path, DeclaredKind::Function, problems),
        Some("custom") => {
            if let Some(custom) = entry.get("custom") {
                return named(
                    custom,
                    &format!("{path}.custom"),
                    DeclaredKind::Custom,
                    problems,
                );
            }
            if entry.contains_key("input_schema") {
                // Anthropic spells client tools `type: custom`.
                function_like(value, path, DeclaredKind::Function, problems)
            } else {
                named(value, path, DeclaredKind::Custom, problems)
            }
        }
        Some(other) => {
            let base = hosted_base(other);
            let name = match entry.get("name") {
                Some(Value::String(name)) if !name.is_empty() => name.clone(),
                Some(_) => {
                    problems.push(Problem::new(
                        &format!("{path}.name"),
                        "a tool name must be a non-empty string",
                    ));
                    return None;
                }
                None => base.clone(),
            };
            let mut aliases = vec![other.to_owned(), base];
            aliases.extend(hosted_extra_names(other).iter().map(|&s| s.to_owned()));
            aliases.retain(|alias| *alias != name);
            aliases.dedup();
            Some(ToolDecl {
                name,
                kind: DeclaredKind::Typed(other.to_owned()),
                parameters: None,
                aliases,
            })
        }
    }
}

fn function_like(
    value: &Value,
    path: &str,
    kind: DeclaredKind,
    problems: &mut Vec<Problem>,
) -> Option<ToolDecl> {
    let mut decl = named(value, path, kind, problems)?;
    let entry = value.as_object()?;
    let mut schemas = [
        "parameters",
        "input_schema",
        "inputSchema",
        "parametersJsonSchema",
    ]
    .into_iter()
    .filter_map(|key| entry.get(key).map(|schema| (key, schema)));
    if let Some((first, schema)) = schemas.next() {
        if let Some((second, _)) = schemas.next() {
            problems.push(Problem::new(
                path,
                format!(
                    "tool '{}' has both `{first}` and `{second}`; keep one",
                    decl.name
                ),
            ));
        }
        if !schema.is_null() {
            decl.parameters = Some(schema.clone());
        }
    }
    Some(decl)
}

pub(crate) fn named(
    value: &Value,
    path: &str,
    kind: DeclaredKind,
    problems: &mut Vec<Problem>,
) -> Option<ToolDecl> {
    let Some(entry) = value.as_object() else {
        problems.push(Problem::new(path, "a tool must be an object with a name"));
        return None;
    };
    match entry.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => Some(ToolDecl {
            name: name.clone(),
            kind,
            parameters: None,
            aliases: Vec::new(),
        }),
        Some(_) => {
            problems.push(Problem::new(
                &format!("{path}.name"),
                "a tool name must be a non-empty string",
            ));
            None
        }
        None => {
            problems.push(Problem::new(path, "a tool has no `name`"));
            None
        }
    }
}

fn flag_typos(entry: &Map<String, Value>, path: &str, problems: &mut Vec<Problem>) {
    flag_typos_of(entry, &SCHEMA_KEYS, path, problems);
}

/// A key one or two edits away from one of `known` (and not one of them):
/// a typo that would silently drop what the key holds.
pub(crate) fn flag_typos_of(
    entry: &Map<String, Value>,
    known: &[&str],
    path: &str,
    problems: &mut Vec<Problem>,
) {
    for key in entry.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        if let Some(near) = known
            .iter()
            .find(|known| strsim::damerau_levenshtein(key, known) <= 2 && key.len() > 3)
        {
            problems.push(Problem::new(
                &format!("{path}.{key}"),
                format!("unknown tool key `{key}`; did you mean `{near}`?"),
            ));
        }
    }
}

/// A hosted tool's type without its version suffix: `web_search_20250305`
/// and `web_search_preview` are both called as `web_search`.
fn hosted_base(tool_type: &str) -> String {
    let mut base = tool_type;
    if let Some((head, tail)) = base.rsplit_once('_') {
        if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
            base = head;
        }
    }
    base = base.strip_suffix("_preview").unwrap_or(base);
    base.to_owned()
}

/// Calls some hosted tools make under names other than their type.
fn hosted_extra_names(tool_type: &str) -> &'static [&'static str] {
    match hosted_base(tool_type).as_str() {
        "computer_use" => &["computer"],
        "code_execution" => &["bash_code_execution", "text_editor_code_execution"],
        _ => &[],
    }
}

/// Whether a declared `parameters` schema declares no parameter at all, so
/// that any argument is `unexpected_arguments`: `{type: object}` with no
/// (or empty) `properties` and nothing else that could admit a key.
#[must_use]
pub fn declares_no_parameters(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    map.iter().all(|(key, value)| match key.as_str() {
        "type" => value == "object",
        "properties" => value.as_object().is_some_and(Map::is_empty),
        "required" => value.as_array().is_some_and(Vec::is_empty),
        "additionalProperties" | "unevaluatedProperties" => value == &Value::Bool(false),
        "$schema" | "$id" | "title" | "description" | "strict" | "$comment" => true,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn one(value: &Value) -> (Option<ToolDecl>, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut out = Vec::new();
        parse_tool(value, "tools[0]", &mut problems, &mut out);
        assert!(out.len() <= 1, "{out:?}");
        (out.pop().map(|(_, decl)| decl), problems)
    }

    #[test]
    fn every_shape() {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        for shape in [
            json!({"type": "function", "function": {"name": "get_weather", "parameters": schema}}),
            json!({"type": "function", "name": "get_weather", "parameters": schema}),
            json!({"name": "get_weather", "input_schema": schema, "cache_control": {"type": "ephemeral"}}),
            json!({"name": "get_weather", "inputSchema": schema, "annotations": {}}),
            json!({"toolSpec": {"name": "get_weather", "inputSchema": {"json": schema}}}),
            json!({"name": "get_weather", "parameters": schema}),
        ] {
            let (decl, problems) = one(&shape);
            assert!(problems.is_empty(), "{shape}: {problems:?}");
            let decl = decl.unwrap();
            assert_eq!(decl.name, "get_weather");
            assert_eq!(decl.kind, DeclaredKind::Function);
            assert_eq!(decl.parameters.as_ref(), Some(&schema), "{shape}");
        }
    }

    #[test]
    fn hosted_and_custom() {
        let (decl, _) = one(&json!({"type": "web_search_preview"}));
        let decl = decl.unwrap();
        assert_eq!(decl.name, "web_search");
        assert_eq!(decl.kind, DeclaredKind::Typed("web_search_preview".into()));
        let (decl, _) =
            one(&json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3}));
        assert_eq!(
            decl.unwrap().aliases,
            vec!["web_search_20250305".to_owned()]
        );
        let (decl, _) =
            one(&json!({"type": "custom", "name": "code_exec", "format": {"type": "text"}}));
        assert_eq!(decl.unwrap().kind, DeclaredKind::Custom);
    }

    #[test]
    fn typos_and_missing_names() {
        let (_, problems) = one(&json!({"name": "x", "paramters": {}}));
        assert!(
            problems[0].message.contains("did you mean `parameters`"),
            "{problems:?}"
        );
        let (decl, problems) = one(&json!({"type": "function", "function": {"parameters": {}}}));
        assert!(decl.is_none());
        assert_eq!(problems[0].path, "tools[0].function");
    }

    #[test]
    fn no_parameters() {
        assert!(declares_no_parameters(
            &json!({"type": "object", "properties": {}})
        ));
        assert!(declares_no_parameters(
            &json!({"type": "object", "additionalProperties": false})
        ));
        assert!(!declares_no_parameters(
            &json!({"type": "object", "properties": {"a": {}}})
        ));
        assert!(!declares_no_parameters(
            &json!({"type": "object", "patternProperties": {"^a": {}}})
        ));
    }
}
