//! `${...}` references in a suite's strings, and the values they read.
//!
//! `${env.NAME}` reads the environment. `${NAME}` and `${a.b.c}` read, in
//! this order, the outputs of earlier blocks of the test, the suite's
//! `context`, and (a bare name only) the environment, so that a suite that
//! names `${AI_API_URL}` without a context runs as written. `$${` is a
//! literal `${`. A string that is one reference and nothing else becomes
//! the value referenced (an object stays an object); a reference inside
//! longer text is written into it (a string as is, anything else as JSON).

use serde_json::{Map, Value};

use crate::path;

/// One part of a string with references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part<'a> {
    Text(&'a str),
    Ref(Reference),
}

/// What a `${...}` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The text between the braces, trimmed, for messages.
    pub(crate) text: String,
    pub(crate) target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `${env.NAME}`.
    Env(String),
    /// `${a.b.c}`: a name, then a path into its value.
    Name(Vec<String>),
}

impl Reference {
    fn parse(text: &str) -> Result<Reference, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("`${}` names nothing; write `${NAME}`, `${a.b.c}` or `${env.NAME}`".into());
        }
        let segments: Vec<String> = text.split('.').map(|s| s.trim().to_owned()).collect();
        if segments.iter().any(String::is_empty) {
            return Err(format!("`${{{text}}}` has an empty path segment"));
        }
        let target = match segments.as_slice() {
            [env, name] if env == "env" => Target::Env(name.clone()),
            [env, ..] if env == "env" => {
                return Err(format!(
                    "`${{{text}}}`: an environment variable is read as `${{env.NAME}}`"
                ))
            }
            _ => Target::Name(segments),
        };
        Ok(Reference {
            text: text.to_owned(),
            target,
        })
    }
}

/// Split `text` into literal text and references.
pub(crate) fn parse(text: &str) -> Result<Vec<Part<'_>>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(literal) = after.strip_prefix("${") {
            // `$${` is a literal `${`.
            parts.push(Part::Text(&rest[..=at]));
            parts.push(Part::Text("{"));
            rest = literal;
            continue;
        }
        let Some(inner) = after.strip_prefix('{') else {
            parts.push(Part::Text(&rest[..=at]));
            rest = after;
            continue;
        };
        let Some(end) = inner.find('}') else {
            return Err(format!(
                "`{text}` opens `${{` without a closing `}}` (write `$${{` for a literal `${{`)"
            ));
        };
        if at > 0 {
            parts.push(Part::Text(&rest[..at]));
        }
        parts.push(Part::Ref(Reference::parse(&inner[..end])?));
        rest = &inner[end + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    Ok(parts)
}

/// Every reference in the strings of `value`, or the first syntax error.
pub(crate) fn references(value: &Value) -> Result<Vec<Reference>, String> {
    let mut out = Vec::new();
    collect(value, &mut out)?;
    Ok(out)
}

fn collect(value: &Value, out: &mut Vec<Reference>) -> Result<(), String> {
    match value {
        Value::String(text) => {
            for part in parse(text)? {
                if let Part::Ref(reference) = part {
                    out.push(reference);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect(item, out)?;
            }
        }
        Value::Object(map) => {
            for item in map.values() {
                collect(item, out)?;
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

/// Whether any string of `value` holds a reference.
pub(crate) fn has_references(value: &Value) -> bool {
    references(value).is_ok_and(|found| !found.is_empty())
}

/// What references read: the test's outputs so far and the suite's
/// context; the environment through [`std::env::var`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) outputs: &'a Map<String, Value>,
    pub(crate) context: &'a Map<String, Value>,
}

impl Scope<'_> {
    /// The value a reference reads.
    pub(crate) fn get(&self, reference: &Reference) -> Result<Value, String> {
        match &reference.target {
            Target::Env(name) => env(name).ok_or_else(|| {
                format!(
                    "`${{{}}}`: the environment variable {name} is not set",
                    reference.text
                )
            }),
            Target::Name(segments) => {
                let (root, rest) = segments.split_first().expect("a reference has a name");
                let base = self.outputs.get(root).or_else(|| self.context.get(root));
                match base {
                    Some(value) => path::get(value, rest).cloned().ok_or_else(|| {
                        format!(
                            "`${{{}}}`: `{root}` holds no value at `{}`",
                            reference.text,
                            rest.join(".")
                        )
                    }),
                    None if rest.is_empty() => env(root).ok_or_else(|| unset(&reference.text)),
                    None => Err(unset(&reference.text)),
                }
            }
        }
    }

    /// `value` with every reference in its strings replaced.
    pub(crate) fn resolve(&self, value: &Value) -> Result<Value, String> {
        Ok(match value {
            Value::String(text) => self.resolve_str(text)?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.resolve(item))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| Ok((key.clone(), self.resolve(item)?)))
                    .collect::<Result<_, String>>()?,
            ),
            Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
        })
    }

    fn resolve_str(&self, text: &str) -> Result<Value, String> {
        let parts = parse(text)?;
        if let [Part::Ref(reference)] = parts.as_slice() {
            return self.get(reference);
        }
        let mut out = String::with_capacity(text.len());
        for part in parts {
            match part {
                Part::Text(literal) => out.push_str(literal),
                Part::Ref(reference) => match self.get(&reference)? {
                    Value::String(inner) => out.push_str(&inner),
                    other => out.push_str(&other.to_string()),
                },
            }
        }
        Ok(Value::String(out))
    }
}

fn env(name: &str) -> Option<Value> {
    std::env::var(name).ok().map(Value::String)
}

pub(crate) fn unset(text: &str) -> String {
    let root = text.split('.').next().unwrap_or(text);
    format!(
        "`${{{text}}}` is not set: no earlier block's output, context entry or environment variable is named `{root}`"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn splits_text_and_references() {
        let parts = parse("${AI_URL}/chat?k=${ env.KEY }&$${x}$y").unwrap();
        assert_eq!(parts.len(), 7);
        assert!(
            matches!(&parts[0], Part::Ref(r) if r.target == Target::Name(vec!["AI_URL".into()]))
        );
        assert_eq!(parts[1], Part::Text("/chat?k="));
        assert!(matches!(&parts[2], Part::Ref(r) if r.target == Target::Env("KEY".into())));
        let text: String = parts[3..]
            .iter()
            .map(|p| match p {
                Part::Text(t) => *t,
                Part::Ref(_) => "?",
            })
            .collect();
        assert_eq!(text, "&${x}$y");
        assert!(parse("${open").unwrap_err().contains("closing"));
        assert!(parse("${}").unwrap_err().contains("names nothing"));
        assert!(parse("${a..b}").unwrap_err().contains("empty path segment"));
        assert!(parse("${env.A.B}").unwrap_err().contains("env.NAME"));
    }

    #[test]
    fn a_lone_reference_keeps_its_type_and_text_is_interpolated() {
        let outputs = json!({"response": {"status": 200, "body": {"a": [1, 2]}}});
        let context = json!({"AI_URL": "http://x", "response": "shadowed"});
        let scope = Scope {
            outputs: outputs.as_object().unwrap(),
            context: context.as_object().unwrap(),
        };
        let value = json!({"s": "${response.status}", "u": "${AI_URL}/chat",
                           "b": "${response.body}", "t": "got ${response.body.a}"});
        assert_eq!(
            scope.resolve(&value).unwrap(),
            json!({"s": 200, "u": "http://x/chat", "b": {"a": [1, 2]}, "t": "got [1,2]"})
        );
        let missing = scope.resolve(&json!("${response.body.z}")).unwrap_err();
        assert!(missing.contains("holds no value at `body.z`"), "{missing}");
        let unset = scope.resolve(&json!("${nothing_named_this}")).unwrap_err();
        assert!(unset.contains("is not set"), "{unset}");
    }
}
