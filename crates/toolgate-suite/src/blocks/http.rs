//! `HttpRequest`: send one request to the agent and keep its answer as
//! `{status, headers, body, json}`. The body is read within
//! `max_body_bytes` and the whole exchange within `timeout`.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::blocks::{config_map, known_keys, Limits};
use crate::template::Scope;

/// The fields an `HttpRequest` gives.
pub(crate) const OUTPUTS: [&str; 4] = ["status", "headers", "body", "json"];

const INPUT_KEYS: [&str; 4] = ["url", "method", "headers", "body"];
const CONFIG_KEYS: [&str; 4] = ["timeout", "max_body_bytes", "maxBodyBytes", "timeoutMs"];

#[derive(Debug, Clone)]
pub(crate) struct HttpRequest {
    /// `input`: `url`, `method`, `headers`, `body` (references resolved
    /// when the block runs).
    input: Value,
    timeout: Option<Duration>,
    max_body_bytes: Option<usize>,
}

impl HttpRequest {
    pub(crate) fn compile(input: Option<&Value>, config: Option<&Value>) -> Result<Self, String> {
        let Some(Value::Object(input)) = input else {
            return Err(
                "an HttpRequest needs `input`: {\"url\": ..., \"method\": ..., \"headers\": {...}, \"body\": ...}"
                    .into(),
            );
        };
        known_keys("input", input, &INPUT_KEYS)?;
        match input.get("url") {
            Some(Value::String(_)) => {}
            Some(_) => return Err("`input.url` must be a string".into()),
            None => return Err("an HttpRequest needs `input.url`".into()),
        }
        if let Some(method) = input.get("method") {
            if !method.is_string() {
                return Err("`input.method` must be a string (GET, POST, ...)".into());
            }
        }
        if let Some(headers) = input.get("headers") {
            if !headers.is_object() {
                return Err("`input.headers` must be an object of header names and values".into());
            }
        }
        let config = config_map(config)?;
        known_keys("config", &config, &CONFIG_KEYS)?;
        let timeout = match (config.get("timeout"), config.get("timeoutMs")) {
            (Some(_), Some(_)) => {
                return Err("give `timeout` (seconds) or `timeoutMs`, not both".into())
            }
            (Some(seconds), None) => Some(duration(seconds, 1.0, "timeout")?),
            (None, Some(ms)) => Some(duration(ms, 0.001, "timeoutMs")?),
            (None, None) => None,
        };
        let max_body_bytes = match config.get("max_body_bytes").or(config.get("maxBodyBytes")) {
            Some(value) => Some(
                value
                    .as_u64()
                    .filter(|&n| n > 0)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or("`max_body_bytes` must be a positive whole number of bytes")?,
            ),
            None => None,
        };
        Ok(HttpRequest {
            input: Value::Object(input.clone()),
            timeout,
            max_body_bytes,
        })
    }

    pub(crate) fn input(&self) -> &Value {
        &self.input
    }

    pub(crate) async fn run(
        &self,
        scope: &Scope<'_>,
        client: &reqwest::Client,
        limits: &Limits,
    ) -> Result<Value, String> {
        let Value::Object(input) = scope.resolve(&self.input)? else {
            return Err("`input` is not an object".into());
        };
        let url = match input.get("url") {
            Some(Value::String(url)) => url.clone(),
            other => return Err(format!("`input.url` is not a string: {}", json(other))),
        };
        let url =
            reqwest::Url::parse(&url).map_err(|err| format!("`{url}` is not a URL: {err}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("`{url}` is not an http or https URL"));
        }
        let body = input.get("body").filter(|body| !body.is_null());
        let method = match input.get("method") {
            Some(Value::String(method)) => method.to_ascii_uppercase(),
            Some(other) => return Err(format!("`input.method` is not a string: {other}")),
            None if body.is_some() => "POST".to_owned(),
            None => "GET".to_owned(),
        };
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| format!("`{method}` is not an HTTP method"))?;
        let timeout = self.timeout.unwrap_or(limits.timeout);
        let mut request = client.request(method, url).timeout(timeout);
        let mut has_content_type = false;
        if let Some(Value::Object(headers)) = input.get("headers") {
            for (name, value) in headers {
                let value = match value {
                    Value::String(text) => text.clone(),
                    Value::Number(_) | Value::Bool(_) => value.to_string(),
                    other => return Err(format!("header `{name}` is not text: {other}")),
                };
                has_content_type |= name.eq_ignore_ascii_case("content-type");
                request = request.header(name.as_str(), value);
            }
        }
        match body {
            None => {}
            Some(Value::String(text)) => request = request.body(text.clone()),
            Some(value) => {
                if !has_content_type {
                    request = request.header("content-type", "application/json");
                }
                request = request.body(value.to_string());
            }
        }
        let max_body_bytes = self.max_body_bytes.unwrap_or(limits.max_body_bytes);
        let exchange = async {
            let mut response = request.send().await.map_err(|err| describe(&err))?;
            let status = response.status().as_u16();
            let mut headers = Map::new();
            for (name, value) in response.headers() {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                match headers.get_mut(name.as_str()) {
                    Some(Value::String(seen)) => {
                        seen.push_str(", ");
                        seen.push_str(&value);
                    }
                    _ => {
                        headers.insert(name.as_str().to_owned(), Value::String(value));
                    }
                }
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|err| describe(&err))? {
                if bytes.len() + chunk.len() > max_body_bytes {
                    return Err(format!(
                        "the response body is larger than max_body_bytes ({max_body_bytes} bytes)"
                    ));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok((status, headers, bytes))
        };
        // The client's timeout covers the body too; this one also bounds a
        // peer that trickles bytes forever.
        let (status, headers, bytes) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("no whole answer within {}", seconds(timeout)))??;
        let body = String::from_utf8(bytes).map_err(|_| "the response body is not UTF-8 text")?;
        let parsed = serde_json::from_str::<Value>(&body).unwrap_or(Value::Null);
        let mut out = Map::new();
        out.insert("status".into(), Value::from(status));
        out.insert("headers".into(), Value::Object(headers));
        out.insert("body".into(), Value::String(body));
        out.insert("json".into(), parsed);
        Ok(Value::Object(out))
    }
}

fn json(value: Option<&Value>) -> String {
    value.map_or_else(|| "nothing".to_owned(), Value::to_string)
}

fn duration(value: &Value, unit: f64, key: &str) -> Result<Duration, String> {
    value
        .as_f64()
        .filter(|n| n.is_finite() && *n > 0.0)
        .and_then(|n| Duration::try_from_secs_f64(n * unit).ok())
        .ok_or_else(|| format!("`{key}` must be a positive number"))
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// A transport error in words, with its causes.
fn describe(err: &reqwest::Error) -> String {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut message = format!("{kind}: {err}");
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
