//! Reading what the gateway answers as a client does: the body decoded as
//! its `Content-Encoding` says, the route's error shape (whole, or a
//! stream's error event), and what of the body lies outside the gateway's
//! own report of a block.

use serde_json::Value;

use super::coding::{content_encoding, decode};
use super::{sse_events, Route};

/// An answer as the client received it.
#[derive(Debug)]
pub struct Received {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    /// The bytes as they came, before any decoding.
    pub body: Vec<u8>,
    /// Why reading stopped early, if it did.
    pub broken: Option<String>,
}

impl Received {
    /// Read the whole answer; a connection that breaks ends the body.
    pub async fn read(mut response: reqwest::Response) -> Received {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        let mut broken = None;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(err) => {
                    broken = Some(format!("the answer broke off: {err}"));
                    break;
                }
            }
        }
        Received {
            status,
            headers,
            body,
            broken,
        }
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    }

    pub fn content_type(&self) -> Option<String> {
        self.header("content-type")
    }

    /// Every `Content-Encoding`, as one list.
    pub fn content_encoding(&self) -> Option<String> {
        content_encoding(&self.headers)
    }

    pub fn is_sse(&self) -> bool {
        self.content_type()
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"))
    }

    /// The body as the client reads it.
    pub fn decoded(&self) -> Result<Vec<u8>, String> {
        decode(self.content_encoding().as_deref(), &self.body)
    }

    /// The decoded body as text (panics when it cannot be decoded).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.decoded().unwrap()).into_owned()
    }

    /// The names of every `x-toolgate-*` header.
    pub fn toolgate_headers(&self) -> Vec<String> {
        self.headers
            .keys()
            .map(|name| name.as_str().to_owned())
            .filter(|name| name.starts_with("x-toolgate-"))
            .collect()
    }
}

/// An SSE event's name and its data (its `data` lines joined with LF).
pub fn event_parts(raw: &[u8]) -> (Option<String>, Option<String>) {
    let text = String::from_utf8_lossy(raw);
    let mut name = None;
    let mut data: Option<String> = None;
    for line in text.split(['\n', '\r']) {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = Some(value.to_owned()),
            "data" => {
                let data = data.get_or_insert_with(String::new);
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            _ => {}
        }
    }
    (name, data)
}

/// The error object of a JSON error in the route's shape: OpenAI
/// `{"error": {"type", "message", ...}}`; a Responses stream's error event
/// `{"type": "error", "message", ...}` (its `error` object when it has
/// one); Anthropic `{"type": "error", "error": {"type", "message"}}`.
pub fn error_object(route: Route, value: &Value, in_stream: bool) -> Option<Value> {
    let shaped = |error: &Value| error["type"].is_string() && error["message"].is_string();
    match route {
        Route::Chat => shaped(&value["error"]).then(|| value["error"].clone()),
        Route::Responses if in_stream => {
            if value["type"] != "error" {
                return None;
            }
            if shaped(&value["error"]) {
                return Some(value["error"].clone());
            }
            value["message"].is_string().then(|| value.clone())
        }
        Route::Responses => shaped(&value["error"]).then(|| value["error"].clone()),
        Route::Messages => {
            (value["type"] == "error" && shaped(&value["error"])).then(|| value["error"].clone())
        }
    }
}

/// An error's type and violation code: OpenAI's `code`, Anthropic's
/// first violation in the verdict; `-` for what is missing.
pub fn type_and_code(route: Route, error: &Value) -> (String, String) {
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    let code = match route {
        Route::Chat | Route::Responses => text(&error["code"]),
        Route::Messages => text(&error["verdict"]["violations"][0]["code"]),
    };
    (text(&error["type"]), code)
}

/// JSON text with the gateway's report of a block taken out: `verdict`
/// and `message` of an error in the route's shape (and of a Responses
/// error event).
fn without_report(route: Route, json: &str, in_stream: bool) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(json) else {
        return json.to_owned();
    };
    if error_object(route, &value, in_stream).is_none() {
        return json.to_owned();
    }
    if let Some(object) = value.as_object_mut() {
        object.remove("verdict");
        object.remove("message");
        if let Some(error) = object.get_mut("error").and_then(Value::as_object_mut) {
            error.remove("verdict");
            error.remove("message");
        }
    }
    value.to_string()
}

/// What a client can read in `decoded` besides the gateway's report of a
/// block: the report (an error's `verdict` and `message`) names the call
/// it blocked by design; anything else that names it is the call itself.
pub fn outside_report(route: Route, decoded: &[u8], is_sse: bool) -> String {
    if !is_sse {
        return without_report(route, &String::from_utf8_lossy(decoded), false);
    }
    // Every line but the data lines as it came (a line no SSE parser reads
    // still reached the client), then the data without the report.
    sse_events(decoded)
        .iter()
        .map(|raw| {
            let text = String::from_utf8_lossy(raw);
            let mut kept: Vec<String> = text
                .split(['\n', '\r'])
                .filter(|line| {
                    line.split_once(':')
                        .is_none_or(|(field, _)| field != "data")
                })
                .map(str::to_owned)
                .collect();
            if let (_, Some(data)) = event_parts(raw) {
                kept.push(without_report(route, &data, true));
            }
            kept.join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The messages of every error in the route's shape in `decoded`.
pub fn error_messages(route: Route, decoded: &[u8], is_sse: bool) -> Vec<String> {
    let datas: Vec<String> = if is_sse {
        sse_events(decoded)
            .iter()
            .filter_map(|raw| event_parts(raw).1)
            .collect()
    } else {
        vec![String::from_utf8_lossy(decoded).into_owned()]
    };
    datas
        .iter()
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter_map(|value| error_object(route, &value, is_sse).map(|error| (value, error)))
        .flat_map(|(value, error)| [value["message"].clone(), error["message"].clone()])
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect()
}

/// The error an answer ends with, in the route's shape, or why there is
/// none: a non-2xx JSON error body, or a stream whose one error event
/// (`event: error` on Responses and Messages) is its last event with data.
pub fn final_error(
    route: Route,
    status: u16,
    decoded: &[u8],
    is_sse: bool,
) -> Result<Value, String> {
    if is_sse {
        let events: Vec<(Option<String>, Option<String>)> = sse_events(decoded)
            .iter()
            .map(|raw| event_parts(raw))
            .filter(|(_, data)| data.is_some())
            .collect();
        let errors: Vec<(usize, Value)> = events
            .iter()
            .enumerate()
            .filter_map(|(at, (name, data))| {
                let value: Value = serde_json::from_str(data.as_deref()?).ok()?;
                let named = route == Route::Chat || name.as_deref() == Some("error");
                let error = error_object(route, &value, true).filter(|_| named)?;
                Some((at, error))
            })
            .collect();
        return match errors.as_slice() {
            [] => Err("a stream with no error event".to_owned()),
            [(at, error)] if *at + 1 == events.len() => Ok(error.clone()),
            [_] => Err("a stream whose error event is not its last".to_owned()),
            _ => Err(format!("a stream with {} error events", errors.len())),
        };
    }
    if (200..300).contains(&status) {
        return Err("a 2xx answer".to_owned());
    }
    let value: Value =
        serde_json::from_slice(decoded).map_err(|_| "a body that is not JSON".to_owned())?;
    error_object(route, &value, false).ok_or_else(|| "another JSON body".to_owned())
}

/// Why an answer to a blocked call fails the rules (empty: it does not):
/// the client cannot decode it, it shows `needles` (the call's name and
/// argument values) outside the gateway's report, a message quotes an
/// argument value (`secrets`), or it is no error in the route's shape. The
/// error, when there is one, comes back too.
pub fn leak_problems(
    route: Route,
    got: &Received,
    needles: &[(&str, &str)],
    secrets: &[&str],
) -> (Vec<String>, Option<Value>) {
    let mut problems = Vec::new();
    if let Some(why) = &got.broken {
        problems.push(why.clone());
    }
    let decoded = match got.decoded() {
        Ok(decoded) => decoded,
        Err(why) => {
            problems.push(format!("the client cannot decode it ({why})"));
            let raw = String::from_utf8_lossy(&got.body);
            if needles.iter().any(|(_, needle)| raw.contains(needle)) {
                problems.push("LEAK: the call is in the raw bytes".to_owned());
            }
            return (problems, None);
        }
    };
    let is_sse = got.is_sse();
    let outside = outside_report(route, &decoded, is_sse);
    let leaked: Vec<&str> = needles
        .iter()
        .filter(|(_, needle)| outside.contains(needle))
        .map(|(what, _)| *what)
        .collect();
    if !leaked.is_empty() {
        problems.push(format!("LEAK: {}", leaked.join(" and ")));
    }
    if error_messages(route, &decoded, is_sse)
        .iter()
        .any(|m| secrets.iter().any(|s| m.contains(s)))
    {
        problems.push("an error message quotes an argument value".to_owned());
    }
    match final_error(route, got.status, &decoded, is_sse) {
        Err(why) => {
            problems.push(format!("not an error in the route's shape: {why}"));
            (problems, None)
        }
        Ok(error) => (problems, Some(error)),
    }
}
