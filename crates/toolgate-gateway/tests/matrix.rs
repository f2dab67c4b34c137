//! The leak matrix: every route × request kind (whole, stream) × upstream
//! status × content type × body shape (a JSON body, an SSE stream) ×
//! content coding the mock upstream can send, each answer holding one
//! forbidden call (`delete_user` with `{"user_id": "u-matrix-7f3a"}`) under
//! `forbidden: [delete_user]`.
//!
//! For every cell, whatever the gateway makes of the answer:
//! - no byte of the call reaches the client: what the client receives,
//!   decoded as its `Content-Encoding` says (a body the client cannot
//!   decode is a failure: bytes it could not read are bytes nobody
//!   checked), holds neither the tool name nor the argument value outside
//!   the gateway's own report of the block (the error's `verdict` and
//!   `message`, which name the blocked call by design; a message never
//!   quotes the argument value);
//! - the client gets an error in the route's shape: a non-2xx JSON error
//!   body, or a stream that ends with one error event;
//! - when the body can be read (a known coding over intact bytes) and is
//!   not a JSON body labelled `text/event-stream` (whose reading as a
//!   stream the rules leave open), the error is the block itself:
//!   `guardrails_violation` with the violation code `forbidden`.
//!
//! One run checks every cell and reports the failing ones in one table.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use futures_util::StreamExt;
use toolgate_gateway::{AuditRecord, AuditStore};

use crate::support::answers::{leak_problems, type_and_code, Received};
use crate::support::coding::{decode, Codec};
use crate::support::{
    client, gateway_with_store, Coding, Reply, Route, Running, Upstream, REPLY_TAG,
};

const TOOL: &str = "delete_user";
const SECRET: &str = "u-matrix-7f3a";
const ARGS: &str = r#"{"user_id":"u-matrix-7f3a"}"#;
const POLICY: &str = "forbidden: [delete_user]";
const STATUSES: [u16; 6] = [200, 201, 400, 429, 500, 503];
const CONTENT_TYPES: [Option<&str>; 4] = [
    Some("application/json"),
    Some("text/event-stream"),
    Some("text/plain"),
    None,
];
/// Requests in flight at once.
const PARALLEL: usize = 12;
/// Longer than any cell takes.
const CELL_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Whole,
    Stream,
}

/// What the upstream's body is, whatever its label says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Shape {
    Json,
    Sse,
}

#[derive(Debug, Clone, Copy)]
struct Cell {
    route: Route,
    kind: Kind,
    status: u16,
    content_type: Option<&'static str>,
    shape: Shape,
    coding: Coding,
}

impl Cell {
    /// Whether the gateway must answer with the block itself.
    fn expects_block(&self) -> bool {
        self.coding.readable()
            && !(self.shape == Shape::Json && self.content_type == Some("text/event-stream"))
    }
}

/// The audit is not what this matrix checks: records are dropped.
#[derive(Debug)]
struct Discard;

impl AuditStore for Discard {
    fn write(&mut self, _batch: &[AuditRecord]) -> Result<(), String> {
        Ok(())
    }
}

fn short_type(content_type: Option<&str>) -> String {
    match content_type {
        None => "none".to_owned(),
        Some(t) if t.starts_with("application/json") => "json".to_owned(),
        Some(t) if t.starts_with("text/event-stream") => "sse".to_owned(),
        Some(t) if t.starts_with("text/plain") => "plain".to_owned(),
        Some(t) => t.to_owned(),
    }
}

async fn ask(
    http: &reqwest::Client,
    gw: &Running,
    cell: &Cell,
    tag: &str,
) -> Result<Received, String> {
    let request = match cell.kind {
        Kind::Whole => cell.route.request(),
        Kind::Stream => cell.route.stream_request(),
    };
    let response = http
        .post(gw.url(cell.route.path()))
        .header("content-type", "application/json")
        // What an SDK's HTTP client says it reads.
        .header("accept-encoding", "gzip, deflate, br, zstd")
        .header(REPLY_TAG, tag)
        .body(request)
        .send()
        .await
        .map_err(|err| format!("no answer: {err}"))?;
    Ok(Received::read(response).await)
}

/// Why a cell fails (empty: it passes), and what the client got.
fn judge(cell: &Cell, got: &Received) -> (Vec<String>, String) {
    let (mut problems, error) = leak_problems(
        cell.route,
        got,
        &[("tool name", TOOL), ("argument value", SECRET)],
        &[SECRET],
    );
    // What the client got, relative to what the upstream sent, so that
    // rows group.
    let same = |same: bool, other: String| if same { "=".to_owned() } else { other };
    let content_type = got.content_type();
    let coding = got.content_encoding();
    let mut seen = format!(
        "status {}, type {}, coding {}",
        same(got.status == cell.status, got.status.to_string()),
        same(
            content_type.as_deref() == cell.content_type,
            short_type(content_type.as_deref())
        ),
        same(
            coding.as_deref() == cell.coding.label,
            coding.unwrap_or_else(|| "none".to_owned())
        ),
    );
    if let Some(error) = error {
        let (kind, code) = type_and_code(cell.route, &error);
        write!(seen, ", error {kind}/{code}").unwrap();
        if cell.expects_block() && (kind != "guardrails_violation" || code != "forbidden") {
            problems.push("not blocked as guardrails_violation/forbidden".to_owned());
        }
    }
    (problems, seen)
}

/// The upstream's answer in a cell: the content before coding.
fn content(route: Route, shape: Shape) -> Vec<Vec<u8>> {
    match shape {
        Shape::Json => vec![route.calls(&[(TOOL, ARGS)])],
        Shape::Sse => route.events("Let me look that up.", &[(TOOL, ARGS)]),
    }
}

/// A failing cell: where, why, what the client got.
struct Failure {
    kind: Kind,
    shape: Shape,
    coding: &'static str,
    content_type: String,
    status: u16,
    why: String,
}

async fn run_matrix(route: Route) {
    let upstream = Upstream::start().await;
    let gw = gateway_with_store(POLICY, &upstream, Box::new(Discard)).await;
    let mut cells = Vec::new();
    for kind in [Kind::Whole, Kind::Stream] {
        for shape in [Shape::Json, Shape::Sse] {
            let content = content(route, shape);
            for coding in Coding::ALL {
                // Coded once, replayed under every status and type.
                let wire = coding.encode(&content);
                for status in STATUSES {
                    for content_type in CONTENT_TYPES {
                        let cell = Cell {
                            route,
                            kind,
                            status,
                            content_type,
                            shape,
                            coding,
                        };
                        cells.push((cell, wire.clone()));
                    }
                }
            }
        }
    }
    let total = cells.len();
    // One client (building one is costly), which never retries.
    let http = &client();
    let upstream = &upstream;
    let gw = &gw;
    let failures: Vec<Failure> = futures_util::stream::iter(cells.into_iter().enumerate())
        .map(|(at, (cell, wire))| async move {
            let tag = format!("cell-{at}");
            let reply = Reply::labelled(cell.status, cell.content_type, &cell.coding, wire);
            upstream.reply_to(&tag, reply);
            let (problems, seen) =
                match tokio::time::timeout(CELL_TIMEOUT, ask(http, gw, &cell, &tag)).await {
                    Ok(Ok(got)) => judge(&cell, &got),
                    Ok(Err(why)) => (vec![why], String::new()),
                    Err(_) => (
                        vec![format!("no answer in {CELL_TIMEOUT:?}")],
                        String::new(),
                    ),
                };
            (!problems.is_empty()).then(|| Failure {
                kind: cell.kind,
                shape: cell.shape,
                coding: cell.coding.name,
                content_type: short_type(cell.content_type),
                status: cell.status,
                why: format!("{} [client got {seen}]", problems.join("; ")),
            })
        })
        .buffer_unordered(PARALLEL)
        .filter_map(|failure| async move { failure })
        .collect()
        .await;
    assert!(
        failures.is_empty(),
        "{route:?}: {} of {total} cells fail (upstream statuses × content types, per row):\n{}",
        failures.len(),
        table(&failures)
    );
}

/// The failing cells, one row per request kind, body shape, coding and
/// reason, with the statuses and content types it holds.
fn table(failures: &[Failure]) -> String {
    type Row = (Kind, Shape, &'static str, String);
    let mut rows: BTreeMap<Row, BTreeMap<u16, BTreeSet<String>>> = BTreeMap::new();
    for f in failures {
        rows.entry((f.kind, f.shape, f.coding, f.why.clone()))
            .or_default()
            .entry(f.status)
            .or_default()
            .insert(f.content_type.clone());
    }
    let mut out = String::new();
    for ((kind, shape, coding, why), statuses) in rows {
        // Statuses with the same content types share one group.
        let mut groups: BTreeMap<Vec<String>, Vec<u16>> = BTreeMap::new();
        for (status, types) in statuses {
            groups
                .entry(types.into_iter().collect())
                .or_default()
                .push(status);
        }
        let cells: Vec<String> = groups
            .into_iter()
            .map(|(types, statuses)| {
                let statuses: Vec<String> = statuses.iter().map(u16::to_string).collect();
                format!("{} × {}", statuses.join(","), types.join(","))
            })
            .collect();
        writeln!(
            out,
            "  {:<6} {:<4} body {:<17} | {:<48} | {why}",
            format!("{kind:?}"),
            format!("{shape:?}"),
            coding,
            cells.join(" + ")
        )
        .unwrap();
    }
    out
}

#[tokio::test]
async fn no_byte_of_a_forbidden_call_reaches_a_chat_client() {
    run_matrix(Route::Chat).await;
}

#[tokio::test]
async fn no_byte_of_a_forbidden_call_reaches_a_responses_client() {
    run_matrix(Route::Responses).await;
}

#[tokio::test]
async fn no_byte_of_a_forbidden_call_reaches_a_messages_client() {
    run_matrix(Route::Messages).await;
}

/// The matrix's judgement rests on the mock: each coding is what it
/// claims, and the client's decoder reads exactly the readable ones.
#[test]
fn the_mock_codings_are_what_they_say() {
    let content = Route::Messages.events("Some text.", &[(TOOL, ARGS)]);
    let plain = content.concat();
    for coding in Coding::ALL {
        let wire = coding.encode(&content).concat();
        let decoded = decode(coding.label, &wire);
        if coding.readable() {
            assert_eq!(decoded.as_deref(), Ok(&plain[..]), "{}", coding.name);
        } else {
            assert!(decoded.is_err(), "{}: the client reads it", coding.name);
        }
        if !coding.codecs.is_empty() {
            assert_ne!(wire, plain, "{}", coding.name);
            assert!(
                toolgate::detect(&wire).calls.is_empty(),
                "{}: no call can be read in the coded bytes",
                coding.name
            );
        }
    }
    // Each flushed chunk decodes on its own prefix: a coded stream can be
    // read event by event.
    for coding in Coding::COMPRESSIONS {
        let wire = coding.encode(&content);
        let first = &wire[0];
        let mut prefix = Vec::new();
        match coding.codecs[0] {
            Codec::Gzip => {
                let _ = std::io::Read::read_to_end(
                    &mut flate2::read::GzDecoder::new(&first[..]),
                    &mut prefix,
                );
            }
            Codec::Deflate => {
                let _ = std::io::Read::read_to_end(
                    &mut flate2::read::ZlibDecoder::new(&first[..]),
                    &mut prefix,
                );
            }
            Codec::Br => {
                let _ = std::io::Read::read_to_end(
                    &mut brotli::Decompressor::new(&first[..], 4096),
                    &mut prefix,
                );
            }
            Codec::Zstd => {
                let mut decoder = zstd::stream::read::Decoder::new(&first[..]).unwrap();
                let _ = std::io::Read::read_to_end(&mut decoder, &mut prefix);
            }
        }
        assert!(
            prefix.starts_with(&content[0]),
            "{}: the first event decodes from the first chunk",
            coding.name
        );
    }
}
