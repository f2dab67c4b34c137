//! `normalize`: drop empty values and, when asked, placeholder strings from
//! the arguments before they are checked. The cleaned arguments are the
//! ones the verdict reports and the gateway forwards: what is validated is
//! what executes.

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
        clean_value(value, rules);
        !drops(value, rules)
    });
}

fn clean_value(value: &mut Value, rules: &Normalize) {
    match value {
        Value::Object(map) => clean_object(map, rules),
        Value::Array(items) => items.iter_mut().for_each(|item| clean_value(item, rules)),
        _ => {}
    }
}

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

    #[test]
    fn empties_and_placeholders() {
        let args = json!({"a": null, "b": {}, "c": [], "d": {"e": null}, "f": " None ", "g": "''",
                          "h": 0, "i": false, "j": "", "k": [{"l": null}], "m": "nonesuch"});
        let both = Normalize {
            strip_empty_values: true,
            strip_placeholder_strings: true,
            ..Normalize::default()
        };
        assert_eq!(
            cleaned(args.clone(), &both),
            json!({"h": 0, "i": false, "j": "", "k": [{}], "m": "nonesuch"})
        );
        let empty_only = Normalize {
            strip_empty_values: true,
            ..Normalize::default()
        };
        assert_eq!(
            cleaned(args.clone(), &empty_only),
            json!({"f": " None ", "g": "''", "h": 0, "i": false, "j": "", "k": [{}], "m": "nonesuch"})
        );
        assert_eq!(cleaned(args.clone(), &Normalize::default()), args);
    }
}
