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

use crate::detect::tape::{Leaf, Tape};
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

/// Arguments on a tape, cleaned: `None` when there is nothing to drop.
/// The cleaned tape holds the object [`clean`] makes of the tape's.
pub(crate) fn clean_tape(tape: &Tape, rules: &Normalize) -> Option<Tape> {
    if rules.is_active() {
        tape.without(&|leaf| rules.drops(&leaf))
    } else {
        None
    }
}

/// Whether a value, as written, is dropped.
fn drops(value: &Value, rules: &Normalize) -> bool {
    let leaf = match value {
        Value::Null => Leaf::Null,
        Value::Object(map) if map.is_empty() => Leaf::Empty,
        Value::Array(items) if items.is_empty() => Leaf::Empty,
        Value::String(text) => Leaf::Text(text),
        Value::Bool(_) | Value::Number(_) | Value::Object(_) | Value::Array(_) => Leaf::Other,
    };
    rules.drops(&leaf)
}

/// Matched trimmed, in any case.
pub(crate) fn is_placeholder(text: &str, placeholders: &[String]) -> bool {
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

    fn tape_strategy() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            prop_oneof![
                Just("a"),
                Just(" None "),
                Just("null"),
                Just("''"),
                Just("x y")
            ]
            .prop_map(|s| Value::String(s.to_owned())),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-e]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Arguments cleaned on their tape are the object cleaned, and a
        /// tape is left as it is exactly when cleaning drops nothing.
        #[test]
        fn a_tape_is_cleaned_as_its_object_is(
            members in proptest::collection::vec(("[a-e]", tape_strategy()), 0..5),
            rules in proptest::prelude::prop_oneof![
                proptest::prelude::Just(both()),
                proptest::prelude::Just(empty_only()),
                proptest::prelude::Just(Normalize { strip_placeholder_strings: true, ..Normalize::default() }),
                proptest::prelude::Just(Normalize::default()),
            ],
        ) {
            let map: Map<String, Value> = members.into_iter().collect();
            let tape = Tape::read(&Value::Object(map.clone()).to_string(), 64).unwrap();
            let mut cleaned = map.clone();
            clean(&mut cleaned, &rules);
            if let Some(on_tape) = clean_tape(&tape, &rules) {
                proptest::prop_assert_ne!(&cleaned, &map);
                proptest::prop_assert_eq!(on_tape.to_map(), cleaned);
                proptest::prop_assert_eq!(on_tape.values(), nodes(&on_tape.to_map()));
            } else {
                proptest::prop_assert_eq!(cleaned, map);
            }
            proptest::prop_assert_eq!(tape.values(), nodes(&tape.to_map()));
        }
    }

    fn nodes(map: &Map<String, Value>) -> usize {
        crate::model::ObjectArguments::from(map.clone()).values()
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
