//! The tool declarations of a request (its `tools` arrays), kept as the
//! JSON text it sent: read into values only when they are compiled
//! ([`Policy::declare_sent`](crate::Policy::declare_sent)), so that a
//! gateway that has compiled a list already finds it by its text alone,
//! without reading it again.

use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// The tool declarations of a request, as sent: the text of each `tools`
/// array the payload holds, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ToolDeclarations {
    /// Each array's JSON text exactly as it stands in the payload, each
    /// followed by a newline.
    text: String,
}

impl ToolDeclarations {
    /// Whether the payload declares no tool list.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The JSON text of each `tools` array, byte for byte as sent, each
    /// followed by a newline. Two payloads have the same text only when
    /// they declare the same lists written the same way: a cache keyed by
    /// it never gives one list another's compiled form (a list written
    /// with its keys in another order is another key).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every declaration, in order, read from the text. An error only for
    /// a list nested past the JSON parser's own depth bound.
    ///
    /// # Errors
    ///
    /// The parser's error when a list cannot be read.
    pub fn values(&self) -> Result<Vec<Value>, serde_json::Error> {
        let mut out = Vec::new();
        for list in serde_json::Deserializer::from_str(&self.text).into_iter::<Vec<Value>>() {
            out.extend(list?);
        }
        Ok(out)
    }

    /// Forget every declaration.
    pub fn clear(&mut self) {
        self.text.clear();
    }

    /// Add a `tools` array: `json` is its text, one JSON array the reader
    /// has already checked.
    pub(crate) fn push(&mut self, json: &str) {
        // Room for the line end too: a list of kilobytes is not copied
        // again when it comes.
        self.text.reserve(json.len() + 1);
        self.text.push_str(json);
        self.text.push('\n');
    }
}

/// Serialized as one array of every declaration, as [`values`](ToolDeclarations::values) reads them.
impl Serialize for ToolDeclarations {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.values()
            .map_err(S::Error::custom)?
            .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::ToolDeclarations;
    use crate::detect::detect;
    use crate::verdict::ViolationCode;
    use crate::Policy;

    #[test]
    fn a_requests_tools_are_kept_as_sent_and_read_when_asked() {
        let body = br#"{"model": "m", "messages": [], "tools": [ {"name": "a",  "parameters": {"type": "object"}} ]}"#;
        let found = detect(body);
        assert_eq!(
            found.tools.as_str(),
            "[ {\"name\": \"a\",  \"parameters\": {\"type\": \"object\"}} ]\n"
        );
        let tool = json!({"name": "a", "parameters": {"type": "object"}});
        assert_eq!(found.tools.values().unwrap(), vec![tool.clone()]);
        assert_eq!(
            serde_json::to_value(&found).unwrap()["tools"],
            json!([tool])
        );
        let none = detect(br#"{"model": "m", "messages": []}"#);
        assert!(none.tools.is_empty());
        assert!(serde_json::to_value(&none).unwrap().get("tools").is_none());
    }

    #[test]
    fn several_lists_read_in_order_and_an_unreadable_one_fails_the_declaration() {
        let mut tools = ToolDeclarations::default();
        tools.push(r#"[{"name": "a"}]"#);
        tools.push(r#"[{"name": "b"}, {"name": "c"}]"#);
        let names: Vec<_> = tools
            .values()
            .unwrap()
            .into_iter()
            .map(|t| t["name"].clone())
            .collect();
        assert_eq!(names, [json!("a"), json!("b"), json!("c")]);
        let mut deep = ToolDeclarations::default();
        deep.push(&format!("[{}{}]", "[".repeat(200), "]".repeat(200)));
        assert!(deep.values().is_err());
        let declared = Policy::default().declare_sent(&deep);
        let codes: Vec<_> = declared.violations().iter().map(|v| v.code).collect();
        assert_eq!(codes, [ViolationCode::InputLimitExceeded]);
        tools.clear();
        assert!(tools.is_empty());
    }
}
