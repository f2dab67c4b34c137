//! JSON-RPC messages as the MCP gateway reads them: one message or a
//! batch, each read by its envelope only (`id`, `method`, `params`,
//! `result`, `error` kept as their raw text), so that what passes is
//! forwarded byte for byte. A message in no JSON-RPC shape is an error,
//! never forwarded.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// JSON-RPC error codes the gateway answers with.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
/// 2026-07-28: the HTTP headers disagree with the body.
pub(crate) const HEADER_MISMATCH: i64 = -32020;

/// Most messages read from one batch.
pub(crate) const MAX_BATCH: usize = 256;

#[derive(Debug, Deserialize)]
struct Envelope<'a> {
    /// Present, even as `null`: a request or an error answer with a `null`
    /// id is still one, never a notification.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// A key's raw value whenever the key is there, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(value: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as serde::Deserialize>::deserialize(value).map(Some)
}

/// What a message is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request: it has an `id` and a `method`.
    Request,
    /// A notification: a `method` and no `id`.
    Notification,
    /// A response: an `id` and a `result` or an `error`.
    Response,
}

/// One message: its own bytes and what the gateway reads of it.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    /// The message exactly as received.
    pub(crate) raw: String,
    pub(crate) kind: Kind,
    /// The raw text of the `id` (`1`, `"a"`): the key a response is
    /// matched by.
    pub(crate) id: Option<String>,
    pub(crate) method: Option<String>,
    pub(crate) params: Option<String>,
    pub(crate) result: Option<String>,
}

/// A body: one message or a batch of them.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pub(crate) batch: bool,
    pub(crate) messages: Vec<Message>,
}

impl Message {
    /// Read one message; why not, when it is in no JSON-RPC shape.
    pub(crate) fn read(raw: &str) -> Result<Message, String> {
        let envelope: Envelope<'_> = serde_json::from_str(raw).map_err(|err| {
            if err.is_data() {
                format!("not a JSON-RPC message: {}", reason(&err))
            } else {
                format!("not valid JSON: {}", reason(&err))
            }
        })?;
        if envelope.id.is_some_and(|id| {
            let text = id.get();
            !(text.starts_with('"') || text.starts_with('-') || text.as_bytes()[0].is_ascii_digit())
                && text != "null"
        }) {
            return Err("a JSON-RPC id must be a string or a number".to_owned());
        }
        let id = envelope.id.map(|id| id.get().to_owned());
        let kind = match (&envelope.method, &id, envelope.result, envelope.error) {
            (Some(_), Some(_), None, None) => Kind::Request,
            (Some(_), None, None, None) => Kind::Notification,
            (None, Some(_), Some(_), None) | (None, Some(_), None, Some(_)) => Kind::Response,
            _ => {
                return Err(
                    "not a JSON-RPC request, notification or response (method, id, result and error do not fit)"
                        .to_owned(),
                )
            }
        };
        Ok(Message {
            raw: raw.to_owned(),
            kind,
            id,
            method: envelope.method,
            params: envelope.params.map(|p| p.get().to_owned()),
            result: envelope.result.map(|r| r.get().to_owned()),
        })
    }

    pub(crate) fn is_method(&self, method: &str) -> bool {
        self.method.as_deref() == Some(method)
    }

    /// `params` read as an object of raw values (empty when absent).
    pub(crate) fn params_object(&self) -> Result<serde_json::Map<String, Value>, String> {
        match self.params.as_deref() {
            None => Ok(serde_json::Map::new()),
            Some(text) => {
                serde_json::from_str(text).map_err(|_| "params must be a JSON object".to_owned())
            }
        }
    }
}

impl Body {
    /// One message, or a batch of at most [`MAX_BATCH`].
    pub(crate) fn read(bytes: &[u8]) -> Result<Body, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "the body is not UTF-8".to_owned())?;
        let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace());
        if trimmed.starts_with('[') {
            let items: Vec<&RawValue> = serde_json::from_str(trimmed)
                .map_err(|err| format!("not a JSON-RPC batch: {}", reason(&err)))?;
            if items.is_empty() {
                return Err("an empty batch".to_owned());
            }
            if items.len() > MAX_BATCH {
                return Err(format!("a batch of more than {MAX_BATCH} messages"));
            }
            let messages = items
                .iter()
                .map(|item| Message::read(item.get()))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Body {
                batch: true,
                messages,
            });
        }
        if !trimmed.starts_with('{') {
            return Err("the body is not a JSON-RPC message".to_owned());
        }
        Ok(Body {
            batch: false,
            messages: vec![Message::read(trimmed)?],
        })
    }

    /// The body again, each message as given.
    pub(crate) fn write(batch: bool, messages: &[String]) -> String {
        if batch {
            format!("[{}]", messages.join(","))
        } else {
            messages.first().cloned().unwrap_or_default()
        }
    }
}

/// A serde error's reason, without the text it may quote.
fn reason(err: &serde_json::Error) -> String {
    format!("line {} column {}", err.line(), err.column())
}

/// A JSON-RPC error response to `id` (`null` when unknown).
pub(crate) fn error(id: Option<&str>, code: i64, message: &str, data: Option<Value>) -> String {
    let id: Value = id
        .and_then(|id| serde_json::from_str(id).ok())
        .unwrap_or(Value::Null);
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

/// A JSON-RPC response to `id` carrying `result`.
pub(crate) fn result(id: Option<&str>, result: &Value) -> String {
    let id: Value = id
        .and_then(|id| serde_json::from_str(id).ok())
        .unwrap_or(Value::Null);
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// `message` with `params._meta[key] = value` added, every other byte of
/// `params` (the arguments above all) kept exactly as received.
pub(crate) fn with_meta(message: &Message, key: &str, value: &str) -> Result<String, String> {
    let top: Vec<(String, &RawValue)> = raw_entries(&message.raw)?;
    let mut out = String::with_capacity(message.raw.len() + key.len() + value.len() + 32);
    out.push('{');
    let mut first = true;
    for (name, raw) in &top {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&Value::String(name.clone()).to_string());
        out.push(':');
        if name == "params" {
            out.push_str(&params_with_meta(raw.get(), key, value)?);
        } else {
            out.push_str(raw.get());
        }
    }
    out.push('}');
    Ok(out)
}

/// The keys of a JSON object, in order, each with its raw value.
fn raw_entries(text: &str) -> Result<Vec<(String, &RawValue)>, String> {
    use serde::de::{MapAccess, Visitor};
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
                out.push((key, value));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde::Deserializer::deserialize_map(&mut de, Entries)
        .map_err(|_| "params must be a JSON object".to_owned())
}

fn params_with_meta(params: &str, key: &str, value: &str) -> Result<String, String> {
    let entries = raw_entries(params)?;
    let mut out = String::with_capacity(params.len() + key.len() + value.len() + 32);
    out.push('{');
    let mut meta_seen = false;
    for (at, (name, raw)) in entries.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(name.clone()).to_string());
        out.push(':');
        if name == "_meta" {
            meta_seen = true;
            let mut meta: Vec<(String, &RawValue)> = raw_entries(raw.get())
                .map_err(|_| "params._meta must be a JSON object".to_owned())?;
            meta.retain(|(k, _)| k != key);
            out.push('{');
            for (name, raw) in &meta {
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                out.push_str(raw.get());
                out.push(',');
            }
            out.push_str(&Value::String(key.to_owned()).to_string());
            out.push(':');
            out.push_str(&Value::String(value.to_owned()).to_string());
            out.push('}');
        } else {
            out.push_str(raw.get());
        }
    }
    if !meta_seen {
        if !entries.is_empty() {
            out.push(',');
        }
        out.push_str("\"_meta\":");
        out.push_str(&json!({ key: value }).to_string());
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_by_their_envelope() {
        let m = Message::read(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a"}}"#,
        )
        .unwrap();
        assert_eq!(m.kind, Kind::Request);
        assert_eq!(m.id.as_deref(), Some("7"));
        let m = Message::read(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
            .unwrap();
        assert_eq!(m.kind, Kind::Notification);
        let m = Message::read(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#).unwrap();
        assert_eq!(m.kind, Kind::Response);
        assert_eq!(m.id.as_deref(), Some("\"x\""));
        // A `null` id is an id: a request (checked as one), or an error
        // answer to a request the server could not read.
        let m = Message::read(r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}"#)
            .unwrap();
        assert_eq!((m.kind, m.id.as_deref()), (Kind::Request, Some("null")));
        let m = Message::read(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}"#,
        )
        .unwrap();
        assert_eq!((m.kind, m.id.as_deref()), (Kind::Response, Some("null")));
        for bad in [
            r#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"a"}"#,
            r#"{"jsonrpc":"2.0"}"#,
            "nope",
        ] {
            assert!(Message::read(bad).is_err(), "{bad}");
        }
        assert!(Body::read(b"[]").is_err());
        assert_eq!(
            Body::read(br#"[{"id":1,"method":"a"},{"method":"b"}]"#)
                .unwrap()
                .messages
                .len(),
            2
        );
    }

    #[test]
    fn meta_is_added_and_the_arguments_kept_byte_for_byte() {
        let raw = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"n":1.50,"big":123456789012345678901234567890}}}"#;
        let m = Message::read(raw).unwrap();
        let out = with_meta(&m, "k", "v").unwrap();
        assert!(
            out.contains(r#""arguments":{"n":1.50,"big":123456789012345678901234567890}"#),
            "{out}"
        );
        assert!(out.contains(r#""_meta":{"k":"v"}"#), "{out}");
        let raw = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"p":1,"k":"old"},"name":"a"}}"#;
        let out = with_meta(&Message::read(raw).unwrap(), "k", "v").unwrap();
        assert!(out.contains(r#""_meta":{"p":1,"k":"v"}"#), "{out}");
    }
}
