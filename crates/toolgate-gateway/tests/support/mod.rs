//! What every gateway test needs: a mock upstream on 127.0.0.1 that speaks
//! the providers' wire formats (replaying captured bodies and streams, with
//! pauses between events, or answering with any status, content type and
//! content coding), a gateway started on a free port in front of it, the
//! captured fixtures, and the three routes with the documented idempotency
//! key.

#![allow(dead_code, unreachable_pub)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;
use toolgate::Policy;
use toolgate_gateway::{AuditStore, Config, Gateway};

pub mod answers;
pub mod coding;
mod postgres;
mod redis;
mod routes;

pub use coding::Coding;
pub use postgres::{query as pg_query, PostgresServer};
pub use redis::RedisServer;
pub use routes::{
    key, key_of_canonical, responses_item_events, sse_event, Route, KEYS, REQUEST_ID,
};

/// A captured payload under tests/fixtures.
pub fn fixture(path: &str) -> Vec<u8> {
    let full = fixtures_root().join(path);
    std::fs::read(&full).unwrap_or_else(|err| panic!("{}: {err}", full.display()))
}

pub fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// The events of an SSE body, each with its blank line, exactly as
/// captured (CRLF or LF).
pub fn sse_events(body: &[u8]) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < body.len() {
        let rest = &body[at..];
        let end = if rest.starts_with(b"\r\n\r\n") {
            Some(4)
        } else if rest.starts_with(b"\n\n") || rest.starts_with(b"\r\r") {
            Some(2)
        } else {
            None
        };
        match end {
            Some(n) => {
                events.push(body[start..at + n].to_vec());
                at += n;
                start = at;
            }
            None => at += 1,
        }
    }
    if start < body.len() {
        events.push(body[start..].to_vec());
    }
    events
}

/// What the mock upstream answers next.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A whole body with this status and content type.
    Body {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// A `text/event-stream`, one chunk at a time with `pause` before each.
    Stream {
        chunks: Vec<Vec<u8>>,
        pause: Duration,
    },
    /// Headers after `delay` (longer than the gateway's timeout: 504).
    Slow { delay: Duration, body: Vec<u8> },
    /// A `text/event-stream` sent step by step: chunks with their own
    /// pauses, waits on a [`Gate`], a broken connection.
    Steps(Vec<Step>),
    /// Anything, exactly as it goes on the wire: this status, these headers
    /// (none added but the framing), and the body in these chunks with
    /// `pause` before each. One chunk and no pause is a whole body with its
    /// `Content-Length`; more are sent chunked. See [`Reply::coded`].
    Raw {
        status: u16,
        headers: Vec<(String, String)>,
        chunks: Vec<Vec<u8>>,
        pause: Duration,
    },
}

/// One step of a [`Reply::Steps`] stream.
#[derive(Debug, Clone)]
pub enum Step {
    /// Wait `pause`, then send `bytes` as one chunk.
    Send { pause: Duration, bytes: Vec<u8> },
    /// Send nothing more until the gate is opened.
    Wait(Gate),
    /// Break the connection: the body stops without its end.
    Break,
}

impl Step {
    /// The events of an SSE body, one [`Step::Send`] each with `pause`
    /// before it.
    pub fn events(body: &[u8], pause: Duration) -> Vec<Step> {
        sse_events(body)
            .into_iter()
            .map(|bytes| Step::Send { pause, bytes })
            .collect()
    }
}

/// Held shut by the upstream until a test opens it.
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Gate {
    pub fn shut() -> Gate {
        Gate(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    /// Let every waiting and later [`Step::Wait`] through.
    pub fn open(&self) {
        self.0.close();
    }

    async fn wait(&self) {
        // Closing the semaphore is what opens the gate.
        let _ = self.0.acquire().await;
    }
}

impl Reply {
    /// A 200 JSON body.
    pub fn json(body: impl Into<Vec<u8>>) -> Reply {
        Reply::Body {
            status: 200,
            content_type: "application/json",
            body: body.into(),
        }
    }

    /// An SSE fixture replayed event by event with `pause` between events.
    pub fn sse(body: &[u8], pause: Duration) -> Reply {
        Reply::Stream {
            chunks: sse_events(body),
            pause,
        }
    }

    /// A [`Reply::Raw`]: `chunks` (the content: one for a whole body, one
    /// per event for a stream) coded with `coding` and labelled with it,
    /// with this status and content type (`None`: no `Content-Type`).
    pub fn coded(
        status: u16,
        content_type: Option<&str>,
        coding: &Coding,
        chunks: &[Vec<u8>],
    ) -> Reply {
        Reply::labelled(status, content_type, coding, coding.encode(chunks))
    }

    /// [`Reply::coded`] for chunks already coded with `coding`.
    pub fn labelled(
        status: u16,
        content_type: Option<&str>,
        coding: &Coding,
        wire: Vec<Vec<u8>>,
    ) -> Reply {
        let mut headers = Vec::new();
        if let Some(content_type) = content_type {
            headers.push(("content-type".to_owned(), content_type.to_owned()));
        }
        if let Some(label) = coding.label {
            headers.push(("content-encoding".to_owned(), label.to_owned()));
        }
        Reply::Raw {
            status,
            headers,
            chunks: wire,
            pause: Duration::ZERO,
        }
    }

    /// A [`Reply::Raw`] with one more header.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        match &mut self {
            Reply::Raw { headers, .. } => headers.push((name.to_owned(), value.to_owned())),
            other => panic!("headers are set on Reply::Raw only, not {other:?}"),
        }
        self
    }
}

/// The request header that picks a reply queued with
/// [`Upstream::reply_to`], so that concurrent requests each get their own.
pub const REPLY_TAG: &str = "x-mock-reply";

/// One request the upstream received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    /// The query string, when there was one.
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Seen {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the upstream received JSON")
    }
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    /// Replies for requests that carry a [`REPLY_TAG`].
    tagged: Mutex<HashMap<String, Reply>>,
    seen: Mutex<Vec<Seen>>,
    /// When each chunk of a streamed reply was handed to the connection.
    sent: Mutex<Vec<std::time::Instant>>,
}

/// A mock provider API on 127.0.0.1. Answers each request with the next
/// scripted [`Reply`]; with none left, 500.
#[derive(Clone)]
pub struct Upstream {
    pub addr: SocketAddr,
    script: Arc<Script>,
}

impl Upstream {
    pub async fn start() -> Upstream {
        let script = Arc::new(Script::default());
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&script));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Upstream { addr, script }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queue the next answer.
    pub fn reply(&self, reply: Reply) -> &Self {
        self.script.replies.lock().unwrap().push_back(reply);
        self
    }

    /// The answer to the request whose [`REPLY_TAG`] header is `tag`.
    pub fn reply_to(&self, tag: &str, reply: Reply) -> &Self {
        self.script
            .tagged
            .lock()
            .unwrap()
            .insert(tag.to_owned(), reply);
        self
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.script.seen.lock().unwrap().clone()
    }

    /// The requests received with this [`REPLY_TAG`].
    pub fn seen_tagged(&self, tag: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|seen| {
                seen.headers
                    .get(REPLY_TAG)
                    .is_some_and(|v| v.as_bytes() == tag.as_bytes())
            })
            .collect()
    }

    /// When each chunk of the streamed replies so far was sent, in order.
    pub fn sent(&self) -> Vec<std::time::Instant> {
        self.script.sent.lock().unwrap().clone()
    }
}

async fn answer(
    State(script): State<Arc<Script>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let tag = headers
        .get(REPLY_TAG)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    script.seen.lock().unwrap().push(Seen {
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers,
        body,
    });
    let next = match tag {
        Some(tag) => script.tagged.lock().unwrap().remove(&tag),
        None => script.replies.lock().unwrap().pop_front(),
    };
    match next {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no reply scripted").into_response(),
        Some(Reply::Raw {
            status,
            headers,
            chunks,
            pause,
        }) => raw_reply(status, &headers, chunks, pause, script),
        Some(Reply::Body {
            status,
            content_type,
            body,
        }) => (
            StatusCode::from_u16(status).unwrap(),
            [("content-type", content_type)],
            body,
        )
            .into_response(),
        Some(Reply::Slow { delay, body }) => {
            tokio::time::sleep(delay).await;
            ([("content-type", "application/json")], body).into_response()
        }
        Some(Reply::Stream { chunks, pause }) => {
            let steps = chunks
                .into_iter()
                .map(|bytes| Step::Send { pause, bytes })
                .collect();
            stream_reply(steps, script)
        }
        Some(Reply::Steps(steps)) => stream_reply(steps, script),
    }
}

/// A [`Reply::Raw`]: nothing but these headers, and the chunks as they are.
fn raw_reply(
    status: u16,
    headers: &[(String, String)],
    chunks: Vec<Vec<u8>>,
    pause: Duration,
    script: Arc<Script>,
) -> Response {
    let body = if chunks.len() == 1 && pause.is_zero() {
        Body::from(chunks.concat())
    } else {
        let stream = futures_util::stream::unfold(
            (chunks.into_iter(), script),
            move |(mut rest, script)| async move {
                let bytes = rest.next()?;
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                script.sent.lock().unwrap().push(std::time::Instant::now());
                Some((
                    Ok::<_, std::convert::Infallible>(Bytes::from(bytes)),
                    (rest, script),
                ))
            },
        );
        Body::from_stream(stream)
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    for (name, value) in headers {
        response.headers_mut().append(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            axum::http::HeaderValue::from_str(value).unwrap(),
        );
    }
    response
}

/// A `text/event-stream` that plays `steps`, noting when each chunk goes.
fn stream_reply(steps: Vec<Step>, script: Arc<Script>) -> Response {
    let stream = futures_util::stream::unfold(
        (steps.into_iter(), script),
        |(mut rest, script)| async move {
            loop {
                match rest.next()? {
                    Step::Send { pause, bytes } => {
                        tokio::time::sleep(pause).await;
                        script.sent.lock().unwrap().push(std::time::Instant::now());
                        return Some((Ok(Bytes::from(bytes)), (rest, script)));
                    }
                    Step::Wait(gate) => gate.wait().await,
                    Step::Break => {
                        let broken = std::io::Error::other("the upstream broke the connection");
                        return Some((Err(broken), (Vec::new().into_iter(), script)));
                    }
                }
            }
        },
    );
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A gateway on 127.0.0.1 in front of an upstream, with its audit in a
/// temporary directory.
pub struct Running {
    pub addr: SocketAddr,
    pub gateway: Arc<Gateway>,
    pub dir: tempfile::TempDir,
}

impl Running {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The SQLite audit file (the default store).
    pub fn audit_db(&self) -> PathBuf {
        self.dir.path().join("audit.db")
    }

    /// The SQLite audit index, once it holds every record committed.
    pub fn audit_index(&self) -> rusqlite::Connection {
        self.gateway.audit().caught_up().unwrap();
        rusqlite::Connection::open(self.audit_db()).unwrap()
    }

    /// Every audit record, oldest first, as JSON.
    pub fn audit_records(&self) -> Vec<Value> {
        let conn = self.audit_index();
        let mut statement = conn
            .prepare("SELECT record FROM audit_requests ORDER BY rowid")
            .unwrap();
        let rows = statement
            .query_map([], |row| row.get::<_, String>(0))
            .unwrap();
        rows.map(|r| serde_json::from_str(&r.unwrap()).unwrap())
            .collect()
    }
}

/// Start a gateway with `policy` (YAML) in front of `upstream`. The audit
/// goes to `audit.db` in a new temporary directory unless the policy names
/// a store; `{dir}` in the policy is replaced by that directory.
pub async fn gateway(policy: &str, upstream: &Upstream) -> Running {
    start(policy, upstream, None).await
}

/// [`gateway`] with its own audit store.
pub async fn gateway_with_store(
    policy: &str,
    upstream: &Upstream,
    store: Box<dyn AuditStore>,
) -> Running {
    start(policy, upstream, Some(store)).await
}

async fn start(policy: &str, upstream: &Upstream, store: Option<Box<dyn AuditStore>>) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let mut text = policy.replace("{dir}", &dir.path().display().to_string());
    if !text.contains("audit:") {
        let db = dir.path().join("audit.db");
        text.push_str("\naudit: {sqlite: '");
        text.push_str(&db.display().to_string());
        text.push_str("'}\n");
    }
    let compiled = Policy::from_text(&text, None).unwrap_or_else(|err| panic!("{err}"));
    let config = Config::from_policy(&compiled, Some(&upstream.url())).unwrap();
    let gateway = match store {
        Some(store) => Gateway::with_store(Arc::new(compiled), text.as_bytes(), config, store),
        None => Gateway::start(Arc::new(compiled), text.as_bytes(), config),
    }
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = Arc::clone(&gateway);
    tokio::spawn(async move {
        toolgate_gateway::serve(listener, serving, std::future::pending())
            .await
            .unwrap();
    });
    Running { addr, gateway, dir }
}

/// A client that never retries and never pools across tests, and sees
/// what the gateway answers: a redirect is not followed.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Read a streamed response: every chunk with the time it arrived.
pub async fn read_stream(mut response: reqwest::Response) -> Vec<(std::time::Instant, Bytes)> {
    let mut chunks = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        chunks.push((std::time::Instant::now(), chunk));
    }
    chunks
}

/// The body text of streamed chunks.
pub fn joined(chunks: &[(std::time::Instant, Bytes)]) -> String {
    let bytes: Vec<u8> = chunks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    String::from_utf8(bytes).unwrap()
}

impl Upstream {
    /// An upstream that is down: a port on 127.0.0.1 that was bound, then
    /// closed, so connecting is refused.
    pub async fn closed() -> Upstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        Upstream {
            addr,
            script: Arc::new(Script::default()),
        }
    }
}
