//! A pass-through proxy for the gateway benchmark (bench/gateway.sh): the
//! hop `toolgate serve` puts between a client and its upstream, built on
//! the same stack (tokio with the same number of worker threads, hyper's
//! HTTP/1 server with `TCP_NODELAY`, a `reqwest` client with the same pool
//! settings, the same scheduler slice asked for), and nothing else: no
//! reading of the body past its bytes, no check, no audit. What it adds
//! to the direct path is what any proxy on this machine adds; what
//! `toolgate serve` adds over it is toolgate's own.
//!
//! ```sh
//! cargo run --release -p toolgate-gateway --example passthrough -- \
//!     127.0.0.1:9001 http://127.0.0.1:9000
//! ```
//!
//! Each `POST` is sent to the upstream at the same path, with its
//! `content-type` and body; the answer comes back with its status, its
//! `content-type` and its body, whole, or chunk by chunk when it is a
//! `text/event-stream` (each chunk passed on as it arrives). Any failure
//! is a 502. `--workers N` sets the runtime's threads (default: half the
//! cores, at least one, as `toolgate serve`), `--sched-slice MICROS` the
//! scheduler slice its threads ask for (default 100, as `toolgate serve`;
//! 0: the kernel's).
//!
//! `--sync DIR` makes it a durable pass-through: before a whole answer is
//! released, a record of it (the request's path, the answer's status and
//! its first 512 bytes) is written to a file in `DIR` and `fdatasync`ed,
//! in groups as toolgate's audit log commits (one writer thread; the
//! records that come while it syncs share the next sync), into a file of
//! zeros written beforehand (written over, as the log's segments are).
//! What it adds to the plain pass-through is what any proxy that makes a
//! record of each answer durable before releasing it pays on this disk.

use std::convert::Infallible;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};

type Body = BoxBody<Bytes, std::io::Error>;

struct Proxy {
    client: reqwest::Client,
    upstream: String,
    durable: Option<Arc<Durable>>,
}

/// Where a record's writer says whether it is durable.
type Reply = tokio::sync::oneshot::Sender<Result<(), String>>;

/// Records waiting for the writer thread, each with where its sync is
/// answered.
#[derive(Default)]
struct Durable {
    waiting: Mutex<Vec<(Vec<u8>, Reply)>>,
    ready: Condvar,
}

/// The file the durable pass-through writes over: 32 MiB of zeros.
const SYNC_FILE: u64 = 32 << 20;

fn usage(problem: &str) -> ! {
    eprintln!("passthrough: {problem}\nusage: passthrough LISTEN UPSTREAM_URL [--workers N] [--sched-slice MICROS] [--sync DIR]");
    std::process::exit(2)
}

fn main() {
    let mut given = std::env::args().skip(1);
    let (Some(listen), Some(upstream)) = (given.next(), given.next()) else {
        usage("LISTEN and UPSTREAM_URL are required");
    };
    let mut workers = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
    let mut sync = None;
    let mut slice = 100;
    while let Some(flag) = given.next() {
        match (flag.as_str(), given.next()) {
            ("--sched-slice", Some(micros)) => {
                slice = micros
                    .parse()
                    .unwrap_or_else(|_| usage("--sched-slice: microseconds"));
            }
            ("--sync", Some(dir)) => sync = Some(dir),
            ("--workers", Some(n)) => {
                workers = n
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage("--workers: a number of threads, at least 1"));
            }
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    if slice > 0 {
        // Before the writer and the runtime start: their threads inherit
        // the slice, as `toolgate serve`'s do.
        if let Err(err) = toolgate_sched::set_slice(Some(std::time::Duration::from_micros(slice))) {
            eprintln!("passthrough: cannot ask for a scheduler slice: {err}");
        }
    }
    let durable = sync.as_deref().map(start_writer);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .expect("the client builds");
    let proxy = Arc::new(Proxy {
        client,
        upstream: upstream.trim_end_matches('/').to_owned(),
        durable,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a runtime starts");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .unwrap_or_else(|err| usage(&format!("cannot listen on {listen}: {err}")));
        eprintln!(
            "passthrough: listening on http://{}, upstream {}",
            listener.local_addr().expect("a bound address"),
            proxy.upstream
        );
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let proxy = Arc::clone(&proxy);
            let service = hyper::service::service_fn(move |request| {
                let proxy = Arc::clone(&proxy);
                async move { Ok::<_, Infallible>(proxy.forward(request).await) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
}

impl Proxy {
    async fn forward(&self, request: Request<Incoming>) -> Response<Body> {
        match self.send(request).await {
            Ok(response) => response,
            Err(why) => {
                let mut response = Response::new(full(Bytes::from(why)));
                *response.status_mut() = StatusCode::BAD_GATEWAY;
                response
            }
        }
    }

    async fn send(&self, request: Request<Incoming>) -> Result<Response<Body>, String> {
        let (parts, body) = request.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|err| err.to_string())?
            .to_bytes();
        let url = format!("{}{}", self.upstream, parts.uri.path());
        let mut sent = self.client.post(url).body(body);
        if let Some(kind) = parts.headers.get(hyper::header::CONTENT_TYPE) {
            sent = sent.header(hyper::header::CONTENT_TYPE, kind);
        }
        let answer = sent.send().await.map_err(|err| err.to_string())?;
        let status = answer.status();
        let kind = answer.headers().get(hyper::header::CONTENT_TYPE).cloned();
        let streamed = kind
            .as_ref()
            .and_then(|k| k.to_str().ok())
            .is_some_and(|k| k.starts_with("text/event-stream"));
        let body = if streamed {
            let chunks = answer
                .bytes_stream()
                .map_ok(Frame::data)
                .map_err(std::io::Error::other);
            BodyExt::boxed(StreamBody::new(chunks))
        } else {
            let bytes = answer.bytes().await.map_err(|err| err.to_string())?;
            if let Some(durable) = &self.durable {
                let mut record = format!("{} {} ", parts.uri.path(), status.as_u16()).into_bytes();
                record.extend_from_slice(&bytes[..bytes.len().min(512)]);
                record.push(b'\n');
                durable.commit(record).await?;
            }
            full(bytes)
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        if let Some(kind) = kind {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, kind);
        }
        Ok(response)
    }
}

/// Start the writer thread of `--sync DIR`, over a file of zeros in `DIR`.
fn start_writer(dir: &str) -> Arc<Durable> {
    let path = std::path::Path::new(dir).join(format!("passthrough-{}.log", std::process::id()));
    // Written a page at a time, as the audit log's segments are: a larger
    // write would put the file in the page cache as large folios, each of
    // which a record then dirties whole.
    let file = File::create(&path)
        .and_then(|file| {
            let zeros = [0u8; 4096];
            for at in (0..SYNC_FILE).step_by(zeros.len()) {
                file.write_all_at(&zeros, at)?;
            }
            file.sync_all()?;
            Ok(file)
        })
        .unwrap_or_else(|err| usage(&format!("--sync: cannot write {}: {err}", path.display())));
    let durable = Arc::new(Durable::default());
    let writer = Arc::clone(&durable);
    // Named as the gateway's log writer is, for bench/gateway_sched.sh.
    std::thread::Builder::new()
        .name("passthrough-log".into())
        .spawn(move || writer.write(&file))
        .unwrap_or_else(|err| usage(&format!("--sync: cannot start the writer: {err}")));
    durable
}

impl Durable {
    /// Hand `record` to the writer; answered once it is durable.
    async fn commit(&self, record: Vec<u8>) -> Result<(), String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.waiting
            .lock()
            .map_err(|_| "the writer died".to_owned())?
            .push((record, reply));
        self.ready.notify_one();
        answer.await.map_err(|_| "the writer died".to_owned())?
    }

    /// The writer thread: every record waiting as one group, written where
    /// the last ended (from the start again past the file's end), then
    /// one `fdatasync` for the group.
    fn write(&self, file: &File) {
        let mut at = 0u64;
        let mut group = Vec::new();
        let mut bytes = Vec::new();
        loop {
            {
                let Ok(waiting) = self.waiting.lock() else {
                    return;
                };
                let Ok(mut waiting) = self.ready.wait_while(waiting, |w| w.is_empty()) else {
                    return;
                };
                std::mem::swap(&mut group, &mut *waiting);
            }
            bytes.clear();
            for (record, _) in &group {
                bytes.extend_from_slice(record);
            }
            if at + bytes.len() as u64 > SYNC_FILE {
                at = 0;
            }
            let outcome = file
                .write_all_at(&bytes, at)
                .and_then(|()| file.sync_data())
                .map_err(|err| format!("durable write: {err}"));
            at += bytes.len() as u64;
            for (_, reply) in group.drain(..) {
                let _ = reply.send(outcome.clone());
            }
        }
    }
}

fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}
