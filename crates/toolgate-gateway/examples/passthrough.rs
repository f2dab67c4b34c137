//! A pass-through proxy for the gateway benchmark (bench/gateway.sh): the
//! hop `toolgate serve` puts between a client and its upstream, built on
//! the same stack (tokio with the same number of worker threads, hyper's
//! HTTP/1 server with `TCP_NODELAY`, a `reqwest` client with the same pool
//! settings), and nothing else: no reading of the body past its bytes, no
//! check, no audit. What it adds to the direct path is what any proxy on
//! this machine adds; what `toolgate serve` adds over it is toolgate's own.
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
//! cores, at least one, as `toolgate serve`).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};

type Body = BoxBody<Bytes, std::io::Error>;

struct Proxy {
    client: reqwest::Client,
    upstream: String,
}

fn usage(problem: &str) -> ! {
    eprintln!("passthrough: {problem}\nusage: passthrough LISTEN UPSTREAM_URL [--workers N]");
    std::process::exit(2)
}

fn main() {
    let mut given = std::env::args().skip(1);
    let (Some(listen), Some(upstream)) = (given.next(), given.next()) else {
        usage("LISTEN and UPSTREAM_URL are required");
    };
    let mut workers = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
    while let Some(flag) = given.next() {
        match (flag.as_str(), given.next()) {
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
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .expect("the client builds");
    let proxy = Arc::new(Proxy {
        client,
        upstream: upstream.trim_end_matches('/').to_owned(),
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
            full(answer.bytes().await.map_err(|err| err.to_string())?)
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

fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}
