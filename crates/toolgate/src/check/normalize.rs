//! `normalize`: drop empty values and, when asked, placeholder strings from
//! the arguments before they are checked. The cleaned arguments are the
//! ones the verdict reports and the gateway forwards: what is validated is
//! what executes.
//!
//! Cleaning is seed 003's `strip_empty`, exactly: recursive, through
//! objects and arrays alike. An entry of an object or an item of an array
//! is dropped when it is, as written, `null`, `{}` or `[]`
//! (`strip_empty_values`) or a placeholder string
//! (`strip_placeholder_strings`); what is kept is cleaned in turn. A
//! container that only becomes empty by cleaning is kept (`{"a": {"b":
//! null}}` is `{"a": {}}`), as seed 003 keeps it.

use serde_json::{Map, Value};

use crate::policy::Normalize;

/// Clean an arguments object in place.
pub(crate) fn clean(arguments: &mut Map<String, Value>, rules: &Normalize) {
    if rules.is_active() {
        clean_object(arguments, rules);
    }
}

fn clean_object(map: &mut Map<String, Value>, rules: &Normalize) {
    map.retain(|_, value| {
        let keep = !drops(value, rules);
        if keep {
            clean_value(value, rules);
        }
        keep
    });
}

fn clean_array(items: &mut Vec<Value>, rules: &Normalize) {
    items.retain(|item| !drops(item, rules));
    for item in items {
        clean_value(item, rules);
    }
}

fn clean_value(value: &mut Value, rules: &Normalize) {
    match value {
        Value::Object(map) => clean_object(map, rules),
        Value::Array(items) => clean_array(items, rules),
        _ => {}
    }
}

/// Whether a value, as written, is dropped.
fn drops(value: &Value, rules: &Normalize) -> bool {
    match value {
        Value::Null => rules.strip_empty_values,
        Value::Object(map) => rules.strip_empty_values && map.is_empty(),
        Value::Array(items) => rules.strip_empty_values && items.is_empty(),
        Value::String(text) => {
            rules.strip_placeholder_strings && is_placeholder(text, &rules.placeholder_strings)
        }
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Matched trimmed, in any case.
fn is_placeholder(text: &str, placeholders: &[String]) -> bool {
    let text = text.trim();
    placeholders.iter().any(|p| {
        p.trim()
            .chars()
            .flat_map(char::to_lowercase)
            .eq(text.chars().flat_map(char::to_lowercase))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cleaned(value: Value, rules: &Normalize) -> Value {
        let Value::Object(mut map) = value else {
            unreachable!()
        };
        clean(&mut map, rules);
        Value::Object(map)
    }

    fn both() -> Normalize {
        Normalize {
            strip_empty_values: true,
            strip_placeholder_strings: true,
            ..Normalize::default()
        }
    }

    fn empty_only() -> Normalize {
        Normalize {
            strip_empty_values: true,
            ..Normalize::default()
        }
    }

    #[test]
    fn empties_and_placeholders() {
        let args = json!({"a": null, "b": {}, "c": [], "d": {"e": null}, "f": " None ", "g": "''",
                          "h": 0, "i": false, "j": "", "k": [{"l": null}], "m": "nonesuch"});
        assert_eq!(
            cleaned(args.clone(), &both()),
            json!({"d": {}, "h": 0, "i": false, "j": "", "k": [{}], "m": "nonesuch"})
        );
        assert_eq!(
            cleaned(args.clone(), &empty_only()),
            json!({"d": {}, "f": " None ", "g": "''", "h": 0, "i": false, "j": "", "k": [{}], "m": "nonesuch"})
        );
        assert_eq!(cleaned(args.clone(), &Normalize::default()), args);
    }

    /// Seed 003's own cases (`tests/test_strip.py`).
    #[test]
    fn seed_003_cases() {
        assert_eq!(
            cleaned(json!({"a": 1, "b": null, "c": {}, "d": []}), &empty_only()),
            json!({"a": 1})
        );
        assert_eq!(
            cleaned(
                json!({"x": {"y": null, "z": 2}, "items": [{"k": null, "v": 1}]}),
                &empty_only()
            ),
            json!({"x": {"z": 2}, "items": [{"v": 1}]})
        );
        assert_eq!(
            cleaned(json!({"country": "NA", "note": "none"}), &empty_only()),
            json!({"country": "NA", "note": "none"})
        );
        assert_eq!(
            cleaned(json!({"country": "NA", "note": "null"}), &both()),
            json!({"country": "NA"})
        );
        assert_eq!(
            cleaned(
                json!({"count": 0, "flag": false, "name": ""}),
                &empty_only()
            ),
            json!({"count": 0, "flag": false, "name": ""})
        );
    }

    #[test]
    fn inside_arrays() {
        let args = json!({"tags": ["a", null, {}, [], "b", "null", " UNDEFINED "],
                          "rows": [[null, 1], [], [[]], {"x": []}],
                          "only_empty": [null, {}, []]});
        assert_eq!(
            cleaned(args.clone(), &empty_only()),
            json!({"tags": ["a", "b", "null", " UNDEFINED "],
                   "rows": [[1], [], {}],
                   "only_empty": []})
        );
        assert_eq!(
            cleaned(args.clone(), &both()),
            json!({"tags": ["a", "b"], "rows": [[1], [], {}], "only_empty": []})
        );
        // Placeholders alone: empty containers stay, placeholder items go.
        let placeholders_only = Normalize {
            strip_placeholder_strings: true,
            ..Normalize::default()
        };
        assert_eq!(
            cleaned(
                json!({"tags": ["a", null, "None", {}], "q": "''"}),
                &placeholders_only
            ),
            json!({"tags": ["a", null, {}]})
        );
    }
}
