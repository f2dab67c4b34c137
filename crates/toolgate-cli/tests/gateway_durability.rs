//! `toolgate serve` killed with SIGKILL under load: every idempotency key a
//! client received has its audit record, because a call is released only
//! after its record is durable in the audit log. The SQLite index, filled
//! from the log behind the requests, may lack the last records at the
//! kill; the next start catches up, so once the gateway has started again
//! (and stopped cleanly), the index holds every key a client received,
//! each once.
//!
//! A mock upstream in this test answers `/v1/chat/completions` with one
//! `get_weather` call, whole or streamed (one event per chunk, a
//! millisecond apart); 32 clients send requests in a loop, every second
//! one a stream, and note each key as it arrives (the header of a whole
//! answer, the SSE comment of a stream, even if the stream is then cut);
//! once a few hundred requests are answered, the gateway is killed.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

const KEYS: &str = "x-toolgate-idempotency-keys";
const CLIENTS: usize = 32;
/// Answered requests before the kill.
const ANSWERED_BEFORE_KILL: usize = 300;
/// How long a step may take before the test gives up: a bound on a wait
/// (a debug build on a loaded 2-core machine answered 277 requests in
/// 10 s), never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

const POLICY: &str = "\
tools:
  - type: function
    function:
      name: get_weather
      parameters:
        type: object
        properties: {city: {type: string}}
        required: [city]
";

/// One `get_weather` call per answer, its city numbered so that no two
/// calls are alike.
fn upstream(counter: &AtomicUsize, request: &Bytes) -> Response {
    let request: Value = serde_json::from_slice(request).unwrap_or(Value::Null);
    let n = counter.fetch_add(1, Ordering::Relaxed);
    let arguments = json!({"city": format!("city-{n}")}).to_string();
    if request["stream"] != json!(true) {
        let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "mock",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments}}]}}]});
        return (
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
    }
    let chunk = |delta: Value, finish: Value| {
        let data = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "mock",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {data}\n\n")
    };
    let (head, tail) = arguments.split_at(arguments.len() / 2);
    let events = vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Checking."}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": head}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ];
    let stream = futures_util::stream::unfold(events.into_iter(), |mut rest| async move {
        let event = rest.next()?;
        tokio::time::sleep(Duration::from_millis(1)).await;
        Some((Ok::<_, std::convert::Infallible>(event), rest))
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The gateway process, killed on drop if the test fails first.
pub(crate) struct Gateway {
    pub(crate) child: Child,
    addr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toolgate serve` on a free port in front of `upstream`, with `extra`
/// arguments, once it listens.
pub(crate) fn start_gateway(dir: &Path, upstream: &str, extra: &[&str]) -> Gateway {
    let audit = dir.join("audit.db");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!("{POLICY}audit:\n  sqlite: '{}'\n", audit.display()),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("serve")
        .arg("--policy")
        .arg(&policy)
        .args(["--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolgate starts");
    let stderr = child.stderr.take().unwrap();
    let (found, address) = mpsc::channel();
    // Reads stderr to its end, so the gateway never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("listening on http://") {
                let rest = &line[at + "listening on http://".len()..];
                let addr = rest.split([',', ' ']).next().unwrap_or_default().to_owned();
                let _ = found.send(Ok(addr));
            }
            lines.push(line);
        }
        let _ = found.send(Err(lines.join("\n")));
    });
    match address.recv_timeout(PATIENCE) {
        Ok(Ok(addr)) => Gateway { child, addr },
        Ok(Err(stderr)) => panic!("toolgate serve stopped before listening:\n{stderr}"),
        Err(_) => {
            let _ = child.kill();
            panic!("toolgate serve did not listen within {PATIENCE:?}");
        }
    }
}

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// Every key received, whole answers and streams apart.
    whole: Mutex<Vec<String>>,
    streamed: Mutex<Vec<String>>,
    /// Requests answered in full before the kill.
    answered: AtomicUsize,
    /// Answers that were not 200 while the gateway ran.
    refused: AtomicUsize,
    killed: AtomicBool,
}

fn split_keys(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
}

/// One request; its keys go into `seen` the moment they arrive. `Err`
/// when the connection failed (after the kill, the end of the client).
async fn request(
    client: &reqwest::Client,
    url: &str,
    stream: bool,
    seen: &Seen,
) -> Result<(), reqwest::Error> {
    let body = json!({"model": "mock", "stream": stream,
        "messages": [{"role": "user", "content": "What is the weather?"}]});
    let mut response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await?;
    if !response.status().is_success() {
        if !seen.killed.load(Ordering::SeqCst) {
            seen.refused.fetch_add(1, Ordering::Relaxed);
        }
        while response.chunk().await?.is_some() {}
        return Ok(());
    }
    if let Some(list) = response.headers().get(KEYS).and_then(|v| v.to_str().ok()) {
        seen.whole.lock().unwrap().extend(split_keys(list));
    }
    let comment = format!(": {KEYS}: ");
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await? {
        text.push_str(&String::from_utf8_lossy(&chunk));
        // A comment line counts once its line has ended.
        while let Some(end) = text.find('\n') {
            let line: String = text.drain(..=end).collect();
            if let Some(list) = line.trim_end().strip_prefix(&comment) {
                seen.streamed.lock().unwrap().extend(split_keys(list));
            }
        }
    }
    seen.answered.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_a_client_received_is_audited_after_a_kill() {
    killed_under_load(scratch_dir("durability"), false).await;
}

/// The same with the audit on a tmpfs (`/dev/shm`), whose syncs are
/// quick: records are committed on the requests' own threads, as the
/// gateway's metrics say before the kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_is_audited_after_a_kill_with_the_audit_on_tmpfs() {
    let shm = Path::new("/dev/shm");
    assert!(shm.is_dir(), "this test needs a tmpfs at /dev/shm");
    let dir = shm.join(format!("toolgate-durability-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Memory, not disk: gone when the test ends, passed or failed.
    let _removed = RemovedOnDrop(dir.clone());
    killed_under_load(dir, true).await;
}

/// A directory removed when dropped, a panic's unwinding included.
struct RemovedOnDrop(PathBuf);

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kill a gateway whose audit is in `dir` under load, start it again and
/// check that the index holds every key a client received; `at_once`:
/// check first that records were committed on the requests' threads.
async fn killed_under_load(dir: PathBuf, at_once: bool) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = listener.local_addr().unwrap();
    let counter = Arc::new(AtomicUsize::new(0));
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |body: Bytes| async move { upstream(&counter, &body) }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut gateway = start_gateway(&dir, &format!("http://{upstream_addr}"), &[]);
    let url = format!("http://{}/v1/chat/completions", gateway.addr);
    let seen = Arc::new(Seen::default());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|index| {
            let (url, seen) = (url.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                let client = reqwest::Client::builder()
                    .no_proxy()
                    .timeout(PATIENCE)
                    .build()
                    .unwrap();
                for round in 0usize.. {
                    let stream = (index + round) % 2 == 0;
                    if request(&client, &url, stream, &seen).await.is_err()
                        && seen.killed.load(Ordering::SeqCst)
                    {
                        break;
                    }
                }
            })
        })
        .collect();

    let began = Instant::now();
    while seen.answered.load(Ordering::SeqCst) < ANSWERED_BEFORE_KILL {
        assert!(
            began.elapsed() < PATIENCE,
            "only {} requests answered in {PATIENCE:?}",
            seen.answered.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if at_once {
        let metrics = reqwest::get(format!("http://{}/metrics", gateway.addr))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let committed = metrics
            .lines()
            .find_map(|line| line.strip_prefix("toolgate_audit_records_at_once_total "))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        assert!(committed > 0.0, "no record committed at once:\n{metrics}");
    }
    // SIGKILL: no shutdown, no flush; whatever the gateway had sent stays
    // in the clients' sockets and is still read below.
    seen.killed.store(true, Ordering::SeqCst);
    gateway.child.kill().unwrap();
    gateway.child.wait().unwrap();
    for client in clients {
        tokio::time::timeout(PATIENCE, client)
            .await
            .expect("every client stops once the gateway is gone")
            .unwrap();
    }

    let whole = seen.whole.lock().unwrap().clone();
    let streamed = seen.streamed.lock().unwrap().clone();
    let answered = seen.answered.load(Ordering::SeqCst);
    assert!(
        !whole.is_empty() && !streamed.is_empty(),
        "keys received: {} whole, {} streamed",
        whole.len(),
        streamed.len()
    );
    assert_eq!(seen.refused.load(Ordering::SeqCst), 0, "answers not 200");

    let indexed_at_kill = audited_keys(&dir).len();
    // Started again, the gateway indexes what the log holds past the
    // index; stopped with SIGTERM, it finishes that before it exits.
    let restarted = start_gateway(&dir, &format!("http://{upstream_addr}"), &[]);
    stop(restarted);
    let audited = audited_keys(&dir);
    eprintln!(
        "answered {answered}; keys received {} whole, {} streamed; {indexed_at_kill} indexed at the kill, {} after the restart",
        whole.len(),
        streamed.len(),
        audited.len()
    );
    let missing: Vec<&String> = whole
        .iter()
        .chain(&streamed)
        .filter(|key| !audited.contains(*key))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} keys received have no audit record (answered {answered}, audited {}): {:?}",
        missing.len(),
        whole.len() + streamed.len(),
        audited.len(),
        &missing[..missing.len().min(5)]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every idempotency key in the audit index; each must be there once.
fn audited_keys(dir: &Path) -> HashSet<String> {
    let db = rusqlite::Connection::open(dir.join("audit.db")).unwrap();
    let mut query = db
        .prepare(
            "SELECT idempotency_key, count(*) FROM audit_calls
             WHERE idempotency_key IS NOT NULL GROUP BY idempotency_key",
        )
        .unwrap();
    query
        .query_map([], |row| {
            let (key, count): (String, i64) = (row.get(0)?, row.get(1)?);
            assert_eq!(count, 1, "key {key} audited {count} times");
            Ok(key)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// SIGTERM, then wait for a clean exit.
fn stop(gateway: Gateway) {
    terminate(&gateway);
    exits_cleanly(gateway);
}

fn terminate(gateway: &Gateway) {
    let status = Command::new("kill")
        .args(["-TERM", &gateway.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Wait for the gateway to exit, with status 0.
fn exits_cleanly(mut gateway: Gateway) {
    let began = Instant::now();
    let exit = loop {
        if let Some(exit) = gateway.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            began.elapsed() < PATIENCE,
            "the gateway did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
}

/// SIGTERM: the gateway stops taking connections, finishes the requests in
/// flight (each answered in full, with its keys audited), then exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_requests_in_flight() {
    const IN_FLIGHT: usize = 6;
    let dir = scratch_dir("sigterm");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = listener.local_addr().unwrap();
    let counter = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(AtomicUsize::new(0));
    let seen_asked = Arc::clone(&asked);
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |body: Bytes| async move {
            seen_asked.fetch_add(1, Ordering::SeqCst);
            // Slow enough that SIGTERM arrives while every request waits.
            tokio::time::sleep(Duration::from_millis(400)).await;
            upstream(&counter, &body)
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let gateway = start_gateway(&dir, &format!("http://{upstream_addr}"), &[]);
    let url = format!("http://{}/v1/chat/completions", gateway.addr);
    let seen = Arc::new(Seen::default());
    let requests: Vec<_> = (0..IN_FLIGHT)
        .map(|n| {
            let (url, seen) = (url.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                let client = reqwest::Client::builder().no_proxy().build().unwrap();
                request(&client, &url, n % 2 == 0, &seen).await
            })
        })
        .collect();
    let began = Instant::now();
    while asked.load(Ordering::SeqCst) < IN_FLIGHT {
        assert!(
            began.elapsed() < PATIENCE,
            "requests never reached the upstream"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    terminate(&gateway);
    for request in requests {
        tokio::time::timeout(PATIENCE, request)
            .await
            .expect("a request in flight is answered after SIGTERM")
            .unwrap()
            .expect("answered in full");
    }
    assert_eq!(seen.answered.load(Ordering::SeqCst), IN_FLIGHT);
    assert_eq!(seen.refused.load(Ordering::SeqCst), 0);
    exits_cleanly(gateway);
    let keys: Vec<String> = seen
        .whole
        .lock()
        .unwrap()
        .iter()
        .chain(seen.streamed.lock().unwrap().iter())
        .cloned()
        .collect();
    assert_eq!(keys.len(), IN_FLIGHT, "one call per answer");
    // A clean stop leaves the index complete: no restart needed.
    let audited = audited_keys(&dir);
    for key in &keys {
        assert!(audited.contains(key), "key {key}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
