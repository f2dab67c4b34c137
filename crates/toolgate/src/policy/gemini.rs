//! Gemini tool declarations: a `tools` entry is a Gemini `Tool`, which
//! holds `functionDeclarations` (each `{name, description, parameters |
//! parametersJsonSchema}`) and hosted tools by key (`googleSearch`,
//! `codeExecution`, `urlContext`, ...). Every key is also read in the snake
//! case of the protobuf names (`function_declarations`,
//! `parameters_json_schema`, `min_items`, ...).
//!
//! `parametersJsonSchema` is JSON Schema, used as it is. `parameters` is a
//! Gemini `Schema`, the `OpenAPI` 3.0 subset: it is converted to the JSON
//! Schema that means the same (types in lower case, `nullable` as a type
//! union with `"null"`, int64 bounds written as strings as integers,
//! `propertyOrdering` and `example` dropped). Anything that cannot be
//! converted faithfully is refused (never guessed at): the tool is then an
//! invalid declaration.

use serde_json::{Map, Number, Value};

use crate::policy::tools::{flag_typos_of, named, DeclaredKind, ToolDecl};
use crate::policy::Problem;

/// The keys of a Gemini `Tool` that hold function declarations.
const DECLARATION_KEYS: [&str; 2] = ["functionDeclarations", "function_declarations"];

/// Hosted tools a Gemini `Tool` names by key (Gemini API and Vertex AI).
const HOSTED_KEYS: [&str; 18] = [
    "googleSearch",
    "google_search",
    "googleSearchRetrieval",
    "google_search_retrieval",
    "codeExecution",
    "code_execution",
    "urlContext",
    "url_context",
    "computerUse",
    "computer_use",
    "fileSearch",
    "file_search",
    "googleMaps",
    "google_maps",
    "retrieval",
    "enterpriseWebSearch",
    "enterprise_web_search",
    "mcpServers",
];

/// Keys of other declaration shapes: an entry with one of these is not a
/// Gemini `Tool`.
const OTHER_SHAPE_KEYS: [&str; 4] = ["name", "type", "function", "toolSpec"];

/// The keys of a `FunctionDeclaration`.
const FUNCTION_KEYS: [&str; 9] = [
    "name",
    "description",
    "parameters",
    "parametersJsonSchema",
    "parameters_json_schema",
    "response",
    "responseJsonSchema",
    "response_json_schema",
    "behavior",
];

/// Whether a `tools` entry is a Gemini `Tool`.
pub(crate) fn is_tool(entry: &Map<String, Value>) -> bool {
    DECLARATION_KEYS.iter().any(|key| entry.contains_key(*key))
        || (HOSTED_KEYS.iter().any(|key| entry.contains_key(*key))
            && !OTHER_SHAPE_KEYS.iter().any(|key| entry.contains_key(*key)))
}

/// Read a Gemini `Tool` at `path`: each function it declares, and each
/// hosted tool it names.
pub(crate) fn tool(
    entry: &Map<String, Value>,
    path: &str,
    problems: &mut Vec<Problem>,
    out: &mut Vec<(String, ToolDecl)>,
) {
    if let Some(other) = OTHER_SHAPE_KEYS
        .iter()
        .find(|key| entry.contains_key(**key))
    {
        problems.push(Problem::new(
            path,
            format!("a Gemini tool (`functionDeclarations`) cannot also have `{other}`; declare each tool in one shape"),
        ));
        return;
    }
    if DECLARATION_KEYS.iter().all(|key| entry.contains_key(*key)) {
        problems.push(Problem::new(
            path,
            "`functionDeclarations` and `function_declarations` are the same key; keep one",
        ));
        return;
    }
    for (key, value) in entry {
        let at = format!("{path}.{key}");
        if DECLARATION_KEYS.contains(&key.as_str()) {
            match value {
                Value::Array(list) => {
                    for (n, declaration) in list.iter().enumerate() {
                        let at = format!("{at}[{n}]");
                        if let Some(decl) = function(declaration, &at, problems) {
                            out.push((at, decl));
                        }
                    }
                }
                Value::Null => {}
                _ => problems.push(Problem::new(&at, "must be a list of function declarations")),
            }
        } else if let Some(near) = DECLARATION_KEYS.iter().find(|known| {
            strsim::damerau_levenshtein(&key.to_lowercase(), &known.to_lowercase()) <= 3
        }) {
            problems.push(Problem::new(
                &at,
                format!("unknown Gemini tool key `{key}`; did you mean `{near}`?"),
            ));
        } else {
            out.push((at, hosted(key)));
        }
    }
}

/// A hosted tool named by its key: called by the snake case of the key
/// (`googleSearch` is `google_search`), also known by the key itself.
fn hosted(key: &str) -> ToolDecl {
    let mut name = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            name.push('_');
            name.push(c.to_ascii_lowercase());
        } else {
            name.push(c);
        }
    }
    let aliases = if name == key {
        Vec::new()
    } else {
        vec![key.to_owned()]
    };
    ToolDecl {
        name,
        kind: DeclaredKind::Typed(key.to_owned()),
        parameters: None,
        aliases,
    }
}

/// One `FunctionDeclaration`.
fn function(value: &Value, path: &str, problems: &mut Vec<Problem>) -> Option<ToolDecl> {
    let mut decl = named(value, path, DeclaredKind::Function, problems)?;
    let entry = value.as_object()?;
    flag_typos_of(entry, &FUNCTION_KEYS, path, problems);
    let present = |key: &str| entry.get(key).filter(|v| !v.is_null());
    let given: Vec<&str> = [
        "parameters",
        "parametersJsonSchema",
        "parameters_json_schema",
    ]
    .into_iter()
    .filter(|key| present(key).is_some())
    .collect();
    let mut refuse = |message: String| {
        problems.push(Problem::new(path, message).for_tool(&decl.name));
    };
    match given.as_slice() {
        [] => {}
        ["parameters"] => match to_json_schema(&entry["parameters"]) {
            Ok(converted) => decl.parameters = Some(converted),
            Err(why) => {
                refuse(format!(
                    "tool '{}' has a Gemini `parameters` schema that has no exact JSON Schema equivalent: {why}",
                    decl.name
                ));
                return None;
            }
        },
        // JSON Schema already: used as it is.
        [json_schema] => decl.parameters = Some(entry[*json_schema].clone()),
        [first, second, ..] => {
            refuse(format!(
                "tool '{}' has both `{first}` and `{second}`; keep one",
                decl.name
            ));
            return None;
        }
    }
    Some(decl)
}

/// Convert a Gemini `Schema` to the JSON Schema that accepts exactly the
/// same values; `Err` says what cannot be converted, and where.
pub(crate) fn to_json_schema(schema: &Value) -> Result<Value, String> {
    convert(schema, "")
}

/// The JSON Schema of a Gemini `Type`; `None` for `TYPE_UNSPECIFIED` (no
/// constraint).
fn json_type(value: &Value, at: &str) -> Result<Option<&'static str>, String> {
    let named = match value {
        Value::String(text) => text.to_ascii_uppercase(),
        // The protobuf enum numbers, which JSON may carry instead.
        Value::Number(n) => match n.as_u64() {
            Some(0) => "TYPE_UNSPECIFIED".to_owned(),
            Some(1) => "STRING".to_owned(),
            Some(2) => "NUMBER".to_owned(),
            Some(3) => "INTEGER".to_owned(),
            Some(4) => "BOOLEAN".to_owned(),
            Some(5) => "ARRAY".to_owned(),
            Some(6) => "OBJECT".to_owned(),
            Some(7) => "NULL".to_owned(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    Ok(Some(match named.as_str() {
        "TYPE_UNSPECIFIED" => return Ok(None),
        "STRING" => "string",
        "NUMBER" => "number",
        "INTEGER" => "integer",
        "BOOLEAN" => "boolean",
        "ARRAY" => "array",
        "OBJECT" => "object",
        "NULL" => "null",
        _ => {
            return Err(format!(
                "{} is not a Gemini type (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL or TYPE_UNSPECIFIED)",
                place(at, "type")
            ))
        }
    }))
}

/// `key` at `at`, for messages: `properties.city.type`.
fn place(at: &str, key: &str) -> String {
    if at.is_empty() {
        format!("`{key}`")
    } else {
        format!("`{at}.{key}`")
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// The camelCase spelling of a schema field written in snake case.
fn canonical(key: &str) -> &str {
    match key {
        "min_items" => "minItems",
        "max_items" => "maxItems",
        "min_length" => "minLength",
        "max_length" => "maxLength",
        "min_properties" => "minProperties",
        "max_properties" => "maxProperties",
        "any_of" => "anyOf",
        "property_ordering" => "propertyOrdering",
        "additional_properties" => "additionalProperties",
        other => other,
    }
}

fn convert(schema: &Value, at: &str) -> Result<Value, String> {
    let Some(fields) = schema.as_object() else {
        return Err(if at.is_empty() {
            "a schema must be an object".to_owned()
        } else {
            format!("`{at}` must be a schema (an object)")
        });
    };
    let mut out = Map::new();
    let mut nullable = false;
    let mut seen: Vec<&str> = Vec::new();
    for (key, value) in fields {
        // A protobuf field set to null is a field left unset.
        if value.is_null() {
            continue;
        }
        let field = canonical(key);
        if seen.contains(&field) {
            return Err(format!(
                "{} is written twice (camelCase and snake_case)",
                place(at, field)
            ));
        }
        seen.push(field);
        if field == "nullable" {
            nullable = value
                .as_bool()
                .ok_or_else(|| format!("{} must be true or false", place(at, field)))?;
        } else if let Some(converted) = convert_field(field, value, at)? {
            out.insert(field.to_owned(), converted);
        }
    }
    if nullable {
        admit_null(&mut out);
    }
    Ok(Value::Object(out))
}

/// One field of a schema, converted; `None` for a field that constrains
/// nothing (`propertyOrdering`, `example`, `type: TYPE_UNSPECIFIED`).
fn convert_field(field: &str, value: &Value, at: &str) -> Result<Option<Value>, String> {
    let converted = match field {
        "type" => json_type(value, at)?.map(Value::from),
        "format" | "title" | "description" | "pattern" => {
            if !value.is_string() {
                return Err(format!("{} must be a string", place(at, field)));
            }
            Some(value.clone())
        }
        "enum" => {
            if !value
                .as_array()
                .is_some_and(|values| values.iter().all(Value::is_string))
            {
                return Err(format!("{} must be a list of strings", place(at, field)));
            }
            Some(value.clone())
        }
        "required" | "propertyOrdering" => {
            if !value
                .as_array()
                .is_some_and(|names| names.iter().all(Value::is_string))
            {
                return Err(format!(
                    "{} must be a list of property names",
                    place(at, field)
                ));
            }
            // `propertyOrdering` orders the model's output: no constraint.
            (field == "required").then(|| value.clone())
        }
        "properties" => {
            let properties = value
                .as_object()
                .ok_or_else(|| format!("{} must map names to schemas", place(at, field)))?;
            let mut converted = Map::new();
            for (name, property) in properties {
                let inner = join(&join(at, field), name);
                converted.insert(name.clone(), convert(property, &inner)?);
            }
            Some(Value::Object(converted))
        }
        "items" => Some(convert(value, &join(at, field))?),
        "additionalProperties" => Some(match value {
            Value::Bool(_) => value.clone(),
            _ => convert(value, &join(at, field))?,
        }),
        "anyOf" => {
            let branches = value
                .as_array()
                .filter(|branches| !branches.is_empty())
                .ok_or_else(|| {
                    format!("{} must be a non-empty list of schemas", place(at, field))
                })?;
            let converted = branches
                .iter()
                .enumerate()
                .map(|(n, branch)| convert(branch, &format!("{}[{n}]", join(at, field))))
                .collect::<Result<Vec<_>, _>>()?;
            Some(Value::Array(converted))
        }
        "minItems" | "maxItems" | "minLength" | "maxLength" | "minProperties" | "maxProperties" => {
            Some(Value::from(count(value, at, field)?))
        }
        "minimum" | "maximum" => Some(Value::Number(number(value, at, field)?)),
        "default" => Some(value.clone()),
        // An example of a value: no constraint.
        "example" => None,
        other => {
            return Err(format!(
                "{} is not a field of a Gemini schema",
                place(at, other)
            ))
        }
    };
    Ok(converted)
}

/// `nullable: true`: null is a value too. Every keyword that could refuse
/// null admits it: the type, the enum, and each `anyOf`.
fn admit_null(schema: &mut Map<String, Value>) {
    if let Some(Value::String(one)) = schema.get("type") {
        if one != "null" {
            let both = vec![Value::from(one.clone()), Value::from("null")];
            schema.insert("type".to_owned(), Value::Array(both));
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    if let Some(Value::Array(branches)) = schema.get_mut("anyOf") {
        branches.push(serde_json::json!({"type": "null"}));
    }
}

/// An int64 bound: a whole number 0 or more, as a number or as the string
/// the protobuf JSON mapping writes int64 in.
fn count(value: &Value, at: &str, field: &str) -> Result<u64, String> {
    let parsed = match value {
        // Checked first: whole, 0 or more, and below 2^53, so exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                .map(|f| f as u64)
        }),
        Value::String(text) => text.trim().parse::<u64>().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| {
        format!(
            "{} must be a whole number, 0 or more (a number or a string of digits)",
            place(at, field)
        )
    })
}

/// A double bound: a finite number, or a string that holds one (the
/// protobuf JSON mapping allows both).
fn number(value: &Value, at: &str, field: &str) -> Result<Number, String> {
    let parsed = match value {
        Value::Number(n) => Some(n.clone()),
        Value::String(text) => {
            let text = text.trim();
            text.parse::<i64>()
                .ok()
                .map(Number::from)
                .or_else(|| text.parse::<f64>().ok().and_then(Number::from_f64))
        }
        _ => None,
    };
    parsed.ok_or_else(|| format!("{} must be a finite number", place(at, field)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(entry: &Value) -> (Vec<(String, ToolDecl)>, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut out = Vec::new();
        tool(
            entry.as_object().unwrap(),
            "tools[0]",
            &mut problems,
            &mut out,
        );
        (out, problems)
    }

    #[test]
    fn upper_case_types_nullable_and_int64_strings() {
        let gemini = json!({
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING", "description": "a city", "minLength": "1", "maxLength": 80},
                "days": {"type": "INTEGER", "format": "int32", "minimum": 1, "maximum": "14"},
                "unit": {"type": "STRING", "format": "enum", "enum": ["c", "f"], "nullable": true},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "min_items": "0", "maxItems": "5"},
                "when": {"type": "string", "format": "date-time", "nullable": true, "example": "2025-01-01T00:00:00Z"},
                "any": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}], "nullable": true},
                "free": {"type": "TYPE_UNSPECIFIED", "title": "anything"},
                "opts": {"type": "OBJECT", "properties": {}, "minProperties": "1", "max_properties": 3, "default": {}}
            },
            "required": ["city"],
            "propertyOrdering": ["city", "days"]
        });
        assert_eq!(
            to_json_schema(&gemini).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "a city", "minLength": 1, "maxLength": 80},
                    "days": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 14},
                    "unit": {"type": ["string", "null"], "format": "enum", "enum": ["c", "f", null]},
                    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 5},
                    "when": {"type": ["string", "null"], "format": "date-time"},
                    "any": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
                    "free": {"title": "anything"},
                    "opts": {"type": "object", "properties": {}, "minProperties": 1, "maxProperties": 3, "default": {}}
                },
                "required": ["city"]
            })
        );
    }

    #[test]
    fn what_cannot_be_converted_is_refused() {
        for (schema, says) in [
            (json!({"type": "OBJEKT"}), "`type` is not a Gemini type"),
            (
                json!({"type": "OBJECT", "properties": {"a": {"type": "STRING", "oneOf": []}}}),
                "`properties.a.oneOf` is not a field",
            ),
            (
                json!({"type": "OBJECT", "additionalProperties": 3}),
                "`additionalProperties` must be a schema",
            ),
            (
                json!({"type": "ARRAY", "minItems": "-1"}),
                "`minItems` must be a whole number",
            ),
            (
                json!({"type": "ARRAY", "minItems": 1.5}),
                "`minItems` must be a whole number",
            ),
            (
                json!({"type": "NUMBER", "minimum": "NaN"}),
                "`minimum` must be a finite number",
            ),
            (
                json!({"type": "STRING", "nullable": "yes"}),
                "`nullable` must be true or false",
            ),
            (
                json!({"type": "STRING", "enum": [1, 2]}),
                "`enum` must be a list of strings",
            ),
            (
                json!({"type": "ARRAY", "minItems": 1, "min_items": 2}),
                "written twice",
            ),
            (
                json!({"type": "OBJECT", "$ref": "#/defs/a"}),
                "`$ref` is not a field",
            ),
            (json!("OBJECT"), "a schema must be an object"),
            (
                json!({"type": "ARRAY", "items": [{"type": "STRING"}]}),
                "`items` must be a schema",
            ),
        ] {
            let why = to_json_schema(&schema).unwrap_err();
            assert!(why.contains(says), "{schema}: {why}");
        }
        assert_eq!(
            to_json_schema(&json!({"type": 6, "required": []})).unwrap(),
            json!({"type": "object", "required": []})
        );
    }

    #[test]
    fn declarations_and_hosted_tools() {
        let (out, problems) = read(&json!({
            "functionDeclarations": [
                {"name": "get_weather", "description": null,
                 "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}},
                {"name": "raw", "parametersJsonSchema": {"type": "object", "additionalProperties": false}},
                {"name": "ping", "behavior": "NON_BLOCKING"}
            ],
            "googleSearch": {}
        }));
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<(&str, &str)> = out
            .iter()
            .map(|(path, d)| (path.as_str(), d.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("tools[0].functionDeclarations[0]", "get_weather"),
                ("tools[0].functionDeclarations[1]", "raw"),
                ("tools[0].functionDeclarations[2]", "ping"),
                ("tools[0].googleSearch", "google_search"),
            ]
        );
        assert_eq!(
            out[0].1.parameters,
            Some(json!({"type": "object", "properties": {"city": {"type": "string"}}}))
        );
        assert_eq!(
            out[1].1.parameters,
            Some(json!({"type": "object", "additionalProperties": false}))
        );
        assert_eq!(out[2].1.parameters, None);
        assert_eq!(out[3].1.kind, DeclaredKind::Typed("googleSearch".into()));
        assert_eq!(out[3].1.aliases, ["googleSearch"]);

        let (out, problems) = read(&json!({"function_declarations": [
            {"name": "f", "parameters_json_schema": {"type": "object"}}], "code_execution": {}, "url_context": {}}));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].1.name, "code_execution");
        assert!(out[1].1.aliases.is_empty());
    }

    #[test]
    fn bad_declarations_are_problems() {
        for (entry, says) in [
            (json!({"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT"}, "parametersJsonSchema": {}}]}),
             "tool 'f' has both `parameters` and `parametersJsonSchema`"),
            (json!({"functionDeclarations": [{"name": "f", "parametersJsonSchema": {}, "parameters_json_schema": {}}]}),
             "tool 'f' has both `parametersJsonSchema` and `parameters_json_schema`"),
            (json!({"functionDeclarations": [{"name": "f", "parameters": {"type": "STRNG"}}]}),
             "tool 'f' has a Gemini `parameters` schema that has no exact JSON Schema equivalent: `type` is not a Gemini type"),
            (json!({"functionDeclarations": [{"description": "no name"}]}), "a tool has no `name`"),
            (json!({"functionDeclarations": {"name": "f"}}), "must be a list of function declarations"),
            (json!({"functionDeclarations": [], "function_declarations": []}), "are the same key"),
            (json!({"functionDeclarations": [], "name": "x"}), "cannot also have `name`"),
            (json!({"googleSearch": {}, "functionDeclaration": []}), "did you mean `functionDeclarations`"),
            (json!({"functionDeclarations": [{"name": "f", "paramters": {}}]}), "did you mean `parameters`"),
        ] {
            let (_, problems) = read(&entry);
            assert!(problems.iter().any(|p| p.message.contains(says)), "{entry}: {problems:?}");
        }
    }
}
