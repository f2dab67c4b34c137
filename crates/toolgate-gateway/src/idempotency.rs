//! Idempotency keys (docs/gateway.md): the lowercase hex SHA-256 of
//! `request_id`, a newline, the tool name, a newline, and the RFC 8785
//! canonical JSON of the arguments that were checked. An executor that
//! records the keys it ran never runs the same released call twice.

use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate::Arguments;

/// The key of one released call.
#[must_use]
pub fn key(request_id: &str, tool: &str, arguments: &Arguments) -> String {
    let canonical = match arguments {
        Arguments::Object(map) => {
            serde_json_canonicalizer::to_vec(map).unwrap_or_else(|_| b"{}".to_vec())
        }
        Arguments::Text(text) => {
            serde_json_canonicalizer::to_vec(&Value::String(text.clone())).unwrap_or_default()
        }
        // Never released: its key names nothing that can run.
        Arguments::Invalid(_) => Vec::new(),
    };
    key_of_canonical(request_id, tool, &canonical)
}

/// The key for arguments already in canonical form.
#[must_use]
pub fn key_of_canonical(request_id: &str, tool: &str, canonical: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(request_id.as_bytes());
    hash.update(b"\n");
    hash.update(tool.as_bytes());
    hash.update(b"\n");
    hash.update(canonical);
    hex::encode(hash.finalize())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_follow_their_definition() {
        let args = json!({"b": 2.50, "a": "é", "c": [1e2, true]});
        let Value::Object(map) = args else {
            unreachable!()
        };
        let got = key("req-1", "get_weather", &Arguments::Object(map.into()));
        // RFC 8785: keys sorted by UTF-16 code units, numbers in their
        // shortest ECMAScript form.
        let canonical = r#"{"a":"é","b":2.5,"c":[100,true]}"#;
        let mut hash = Sha256::new();
        hash.update(format!("req-1\nget_weather\n{canonical}").as_bytes());
        assert_eq!(got, hex::encode(hash.finalize()));
        assert_eq!(got.len(), 64);
        assert!(got
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    }

    #[test]
    fn the_request_id_and_the_name_change_the_key() {
        let empty = Arguments::Object(serde_json::Map::new().into());
        let a = key("r1", "t", &empty);
        assert_ne!(a, key("r2", "t", &empty));
        assert_ne!(a, key("r1", "u", &empty));
        assert_eq!(a, key("r1", "t", &empty));
    }
}
