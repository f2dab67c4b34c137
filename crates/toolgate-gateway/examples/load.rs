//! A load generator for the gateway benchmark (bench/gateway.sh): N
//! connections send one JSON body to one URL, for a duration or a number of
//! requests, and one JSON line of results is printed.
//!
//! ```sh
//! cargo run --release -p toolgate-gateway --example load -- \
//!     --url http://127.0.0.1:8080/v1/chat/completions \
//!     --body '{"model": "valid", "messages": [{"role": "user", "content": "hi"}]}' \
//!     --connections 64 --duration 10
//! ```
//!
//! Each connection sends its next request when the last one is answered
//! (closed loop), or, with `--rate R`, on a schedule of R requests/s spread
//! over the connections (open loop): a request sent late because the last
//! answer came late counts from the time it was due, so a stalled server
//! is not hidden by the requests it kept from being sent.
//!
//! Per request: the time to the last body byte and, for a
//! `text/event-stream`, the time to the first body chunk completing an
//! event that holds a text delta (a Chat Completions `delta.content`, an
//! Anthropic `text_delta`, a Responses `response.output_text.delta`). The
//! results: requests, errors, requests/s, p50/p90/p99/max of both times in
//! milliseconds, and how many answers carried toolgate's idempotency keys
//! (the `x-toolgate-idempotency-keys` header or the stream's comment).
//!
//! Flags: `--url`, `--body JSON|@FILE`, `--connections N` (64),
//! `--duration SECONDS` (10), `--requests N` (instead of a duration),
//! `--warmup SECONDS` (1, not recorded), `--rate R` (0: closed loop),
//! `--threads N` (runtime threads; 0: one per core), `--header 'Name: value'`
//! (repeatable), `--label NAME`, `--samples FILE` (each recorded request
//! as a line: milliseconds from the first recorded one to when it was
//! sent or due, then its time to the last byte in milliseconds, to see
//! whether a tail is spread or comes in bursts).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const KEYS: &str = "x-toolgate-idempotency-keys";

#[derive(Debug, Clone)]
struct Args {
    url: String,
    body: Vec<u8>,
    connections: usize,
    duration: Duration,
    requests: Option<u64>,
    warmup: Duration,
    rate: f64,
    threads: usize,
    headers: Vec<(String, String)>,
    label: String,
    samples: Option<String>,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "load: {problem}\nusage: load --url URL --body JSON|@FILE [--connections N] \
         [--duration S | --requests N] [--warmup S] [--rate R] [--threads N] \
         [--header 'Name: value']... [--label NAME] [--samples FILE]"
    );
    std::process::exit(2)
}

fn parse<T: std::str::FromStr>(flag: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| usage(&format!("{flag}: `{value}` is not a number")))
}

fn args() -> Args {
    let mut args = Args {
        url: String::new(),
        body: Vec::new(),
        connections: 64,
        duration: Duration::from_secs(10),
        requests: None,
        warmup: Duration::from_secs(1),
        rate: 0.0,
        threads: 0,
        headers: Vec::new(),
        label: String::new(),
        samples: None,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--url" => args.url = value,
            "--body" => {
                args.body = match value.strip_prefix('@') {
                    Some(path) => std::fs::read(path)
                        .unwrap_or_else(|err| usage(&format!("--body: {path}: {err}"))),
                    None => value.into_bytes(),
                }
            }
            "--connections" => args.connections = parse(&flag, &value),
            "--duration" => args.duration = Duration::from_secs_f64(parse(&flag, &value)),
            "--requests" => args.requests = Some(parse(&flag, &value)),
            "--warmup" => args.warmup = Duration::from_secs_f64(parse(&flag, &value)),
            "--rate" => args.rate = parse(&flag, &value),
            "--threads" => args.threads = parse(&flag, &value),
            "--header" => match value.split_once(':') {
                Some((name, v)) => args.headers.push((name.trim().into(), v.trim().into())),
                None => usage("--header: expected `Name: value`"),
            },
            "--label" => args.label = value,
            "--samples" => args.samples = Some(value),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if args.url.is_empty() || args.body.is_empty() {
        usage("--url and --body are required");
    }
    if args.connections == 0 {
        usage("--connections must be at least 1");
    }
    if args.rate < 0.0 || !args.rate.is_finite() {
        usage("--rate must be a positive number, or 0 for a closed loop");
    }
    args
}

/// One answered request.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When it was sent (or due, with `--rate`).
    start: Instant,
    total: Duration,
    first_text: Option<Duration>,
    keys: bool,
}

/// What one connection saw.
#[derive(Debug, Default)]
struct Seen {
    samples: Vec<Sample>,
    errors: u64,
    /// The first few error messages, to print.
    reasons: Vec<String>,
}

impl Seen {
    fn error(&mut self, reason: String) {
        self.errors += 1;
        if self.reasons.len() < 3 {
            self.reasons.push(reason);
        }
    }
}

/// Whether one SSE event holds a text delta of any of the three APIs.
fn is_text_delta(event: &[u8]) -> bool {
    event
        .split(|&b| b == b'\n' || b == b'\r')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .filter_map(|data| serde_json::from_slice::<Value>(data.trim_ascii()).ok())
        .any(|data| {
            let chat = data["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|text| !text.is_empty());
            let anthropic = data["delta"]["type"] == "text_delta";
            let responses = data["type"] == "response.output_text.delta";
            chat || anthropic || responses
        })
}

/// The end of the first whole event in `buffer` (after its blank line).
fn event_end(buffer: &[u8]) -> Option<usize> {
    (0..buffer.len()).find_map(|at| {
        let rest = &buffer[at..];
        if rest.starts_with(b"\r\n\r\n") {
            Some(at + 4)
        } else if rest.starts_with(b"\n\n") || rest.starts_with(b"\r\r") {
            Some(at + 2)
        } else {
            None
        }
    })
}

/// Send one request and read its answer to the last byte.
async fn one(client: &reqwest::Client, args: &Args, start: Instant) -> Result<Sample, String> {
    let mut request = client
        .post(&args.url)
        .header("content-type", "application/json")
        .body(args.body.clone());
    for (name, value) in &args.headers {
        request = request.header(name, value);
    }
    let mut response = request.send().await.map_err(|err| err.to_string())?;
    let status = response.status();
    let stream = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut keys = response.headers().contains_key(KEYS);
    let mut first_text = None;
    // Whole events not yet looked at, while no text has been seen; the
    // tail of the stream, to find the keys' comment.
    let mut pending: Vec<u8> = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|err| err.to_string())? {
        if !stream {
            continue;
        }
        if first_text.is_none() {
            pending.extend_from_slice(&chunk);
            while let Some(end) = event_end(&pending) {
                if is_text_delta(&pending[..end]) {
                    first_text = Some(start.elapsed());
                    pending.clear();
                    break;
                }
                pending.drain(..end);
            }
        }
        tail.extend_from_slice(&chunk);
        let keep = tail.len().saturating_sub(4096);
        tail.drain(..keep);
    }
    let total = start.elapsed();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    if stream {
        let comment = format!(": {KEYS}: ");
        keys |= tail
            .windows(comment.len())
            .any(|window| window == comment.as_bytes());
    }
    Ok(Sample {
        start,
        total,
        first_text,
        keys,
    })
}

/// One connection's loop.
async fn connection(args: Arc<Args>, index: usize, end: Instant, sent: Arc<AtomicU64>) -> Seen {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .expect("a client builds");
    let mut seen = Seen::default();
    // With a rate, this connection's share of it: one request every
    // `period`, starting at an offset so connections do not send together.
    let period = (args.rate > 0.0).then(|| {
        #[allow(clippy::cast_precision_loss)] // a connection count is far below 2^52
        Duration::from_secs_f64(args.connections as f64 / args.rate)
    });
    let began = Instant::now();
    let mut due = began
        + period.map_or(Duration::ZERO, |p| {
            p.mul_f64(f64::from(u32::try_from(index).unwrap_or(0)))
                / u32::try_from(args.connections).unwrap_or(1)
        });
    loop {
        if let Some(limit) = args.requests {
            if sent.fetch_add(1, Ordering::Relaxed) >= limit {
                break;
            }
        }
        let start = match period {
            Some(p) => {
                if due >= end {
                    break;
                }
                // Behind schedule (the last answer came late): the wait
                // counts. Ahead: count from the send, not from the due
                // time, so the timer's millisecond granularity does not.
                let start = if Instant::now() < due {
                    tokio::time::sleep_until(due.into()).await;
                    Instant::now()
                } else {
                    due
                };
                due += p;
                start
            }
            None => Instant::now(),
        };
        if args.requests.is_none() && start >= end {
            break;
        }
        match one(&client, &args, start).await {
            Ok(sample) => seen.samples.push(sample),
            Err(reason) => seen.error(reason),
        }
    }
    seen
}

/// Nearest-rank percentiles and the maximum, in milliseconds.
fn summary(mut times: Vec<Duration>) -> Value {
    if times.is_empty() {
        return Value::Null;
    }
    times.sort_unstable();
    let at = |p: f64| {
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )] // a sample count is far below 2^52; the rank is in 1..=len
        let rank = (p * times.len() as f64).ceil() as usize;
        ms(times[rank.clamp(1, times.len()) - 1])
    };
    let total: Duration = times.iter().sum();
    json!({
        "p50": at(0.50),
        "p90": at(0.90),
        "p99": at(0.99),
        "max": ms(times[times.len() - 1]),
        "mean": ms(total / u32::try_from(times.len()).unwrap_or(u32::MAX)),
    })
}

/// Each sample as `sent total` in milliseconds, in the order sent.
fn write_samples(path: &str, from: Instant, samples: &[Sample]) {
    use std::fmt::Write as _;
    let mut sorted = samples.to_vec();
    sorted.sort_unstable_by_key(|s| s.start);
    let mut text = String::new();
    for s in &sorted {
        let _ = writeln!(text, "{} {}", ms(s.start - from), ms(s.total));
    }
    if let Err(err) = std::fs::write(path, text) {
        usage(&format!("--samples: {path}: {err}"));
    }
}

fn ms(time: Duration) -> f64 {
    (time.as_secs_f64() * 1e6).round() / 1e3
}

fn main() {
    let args = Arc::new(args());
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if args.threads > 0 {
        runtime.worker_threads(args.threads);
    }
    let runtime = runtime.enable_all().build().expect("a runtime starts");
    let began = Instant::now();
    let measured_from = began + args.warmup;
    let end = measured_from + args.duration;
    let sent = Arc::new(AtomicU64::new(0));
    let seen: Vec<Seen> = runtime.block_on(async {
        let workers: Vec<_> = (0..args.connections)
            .map(|index| {
                let (args, sent) = (Arc::clone(&args), Arc::clone(&sent));
                let end = if args.requests.is_some() {
                    Instant::now() + Duration::from_secs(86_400)
                } else {
                    end
                };
                tokio::spawn(connection(args, index, end, sent))
            })
            .collect();
        let mut seen = Vec::new();
        for worker in workers {
            seen.push(worker.await.expect("a connection's task ends"));
        }
        seen
    });
    let finished = Instant::now();
    // With a duration, the warmup's requests are not recorded; with a
    // count, every request is.
    let from = if args.requests.is_some() {
        began
    } else {
        measured_from
    };
    let samples: Vec<Sample> = seen
        .iter()
        .flat_map(|s| s.samples.iter().copied())
        .filter(|s| s.start >= from)
        .collect();
    if let Some(path) = &args.samples {
        write_samples(path, from, &samples);
    }
    let errors: u64 = seen.iter().map(|s| s.errors).sum();
    let reasons: Vec<&String> = seen.iter().flat_map(|s| &s.reasons).take(3).collect();
    let window = if args.requests.is_some() {
        finished - began
    } else {
        args.duration
    };
    let count = u32::try_from(samples.len()).unwrap_or(u32::MAX);
    let first_text: Vec<Duration> = samples.iter().filter_map(|s| s.first_text).collect();
    let streamed = !first_text.is_empty();
    let out = json!({
        "label": args.label,
        "url": args.url,
        "connections": args.connections,
        "rate": (args.rate > 0.0).then_some(args.rate),
        "seconds": window.as_secs_f64(),
        "requests": samples.len(),
        "errors": errors,
        "error_samples": reasons,
        "rps": (f64::from(count) / window.as_secs_f64()).round(),
        "latency_ms": summary(samples.iter().map(|s| s.total).collect()),
        "first_text_ms": if streamed { summary(first_text) } else { Value::Null },
        "with_keys": samples.iter().filter(|s| s.keys).count(),
    });
    println!("{out}");
}
