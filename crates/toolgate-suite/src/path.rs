//! Dotted paths into JSON values: `toolValidation.score`,
//! `response.headers.content-type`, `toolCalls.0.name` (a number indexes
//! an array).

use serde_json::Value;

/// The value at `segments` inside `value`.
pub(crate) fn get<'v>(value: &'v Value, segments: &[String]) -> Option<&'v Value> {
    segments.iter().try_fold(value, |here, segment| match here {
        Value::Object(map) => map.get(segment.as_str()),
        Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => None,
    })
}

/// `a.b.c` as its segments; `None` when a segment is empty.
pub(crate) fn split(path: &str) -> Option<Vec<String>> {
    let segments: Vec<String> = path.split('.').map(|s| s.trim().to_owned()).collect();
    (!segments.iter().any(String::is_empty)).then_some(segments)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_objects_and_arrays() {
        let value = json!({"a": {"calls": [{"name": "x"}]}});
        let path = split("a.calls.0.name").unwrap();
        assert_eq!(get(&value, &path), Some(&json!("x")));
        assert_eq!(get(&value, &split("a.calls.1").unwrap()), None);
        assert_eq!(get(&value, &split("a.calls.name").unwrap()), None);
        assert_eq!(get(&value, &[]), Some(&value));
        assert!(split("a..b").is_none());
    }
}
