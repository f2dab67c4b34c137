//! `toolgate serve`: the fail-closed gateway between a model API and the
//! code that executes its tool calls.
//!
//! A [`Gateway`] holds one compiled [`Policy`], the upstream client, the
//! [`audit`] writer, the shared rate-limit counters and the [`metrics`].
//! [`Gateway::router`] answers:
//!
//! - `POST /v1/chat/completions`, `/v1/responses`, `/v1/messages`
//!   ([`proxy`]): the request's tool results are checked before the
//!   upstream sees it; the answer, decoded ([`upstream`]), has its tool
//!   calls checked before the client sees them (`whole` bodies, or
//!   `stream`s of `text/event-stream`). A passing answer is audited, then
//!   released with an idempotency key per call ([`idempotency`]); a
//!   failing one is blocked with the route's own error shape
//!   ([`providers`]) or sent back to the model (`retry`). The upstream's
//!   own errors, carrying no call, pass as it sent them; one whose body
//!   cannot be read keeps its status, not its bytes.
//!
//! The modules point one way: `proxy` → `request`, `upstream`, `whole`,
//! `stream` → `exchange` (the per-request context: judge, audit, release)
//! → `audit`, `limits`, `metrics`, `providers`.
//! - `POST/GET/DELETE /mcp/<name>` ([`mcp`]): the MCP servers of
//!   `mcp.servers`, every `tools/call` checked before the server sees it,
//!   every `tools/list` filtered; `toolgate mcp` wraps a stdio server the
//!   same way ([`mcp::stdio`]).
//! - `POST /v1/validate`: a payload in, its verdict out.
//! - `GET /healthz`, `GET /metrics`.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use toolgate::Policy;
//! use toolgate_gateway::{Config, Gateway};
//!
//! let policy = Policy::from_text("allowed_functions: [get_weather]", None)?;
//! let config = Config::from_policy(&policy, Some("http://127.0.0.1:9000"))?;
//! let gateway = Gateway::start(Arc::new(policy), b"allowed_functions: [get_weather]", config)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! toolgate_gateway::serve(listener, gateway, std::future::pending()).await?;
//! # Ok(()) }
//! ```

pub mod audit;
mod caller;
mod config;
mod error;
mod exchange;
mod follow_up;
pub mod idempotency;
mod limits;
pub mod mcp;
pub mod metrics;
pub mod providers;
pub mod proxy;
mod request;
mod stream;
mod upstream;
mod whole;

use std::future::Future;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use toolgate::Policy;

pub use self::audit::{Audit, AuditRecord, AuditStore};
pub use self::config::{Config, ConfigError, UPSTREAM_ENV, UPSTREAM_KEY_ENV};
pub use self::error::Failure;
use self::limits::Counters;
use self::metrics::Metrics;
use self::providers::Provider;

/// Everything a request needs, shared by all requests.
#[derive(Debug)]
pub struct Gateway {
    pub(crate) policy: Arc<Policy>,
    /// Lowercase hex SHA-256 of the policy file's bytes, in every audit
    /// record.
    pub(crate) policy_hash: String,
    pub(crate) config: Config,
    pub(crate) client: reqwest::Client,
    /// Each route's upstream URL, parsed.
    pub(crate) urls: upstream::Urls,
    pub(crate) audit: Audit,
    pub(crate) counters: Counters,
    /// The calls of the Responses answers released, for follow-ups.
    pub(crate) released: follow_up::ReleasedCalls,
    /// The caller keys' digests: never sent upstream.
    pub(crate) caller_keys: caller::CallerKeys,
    pub(crate) metrics: Metrics,
    /// The MCP servers of `mcp.servers`, by name.
    pub(crate) mcp: mcp::Servers,
}

impl Gateway {
    /// A gateway for `policy` (compiled from `policy_text`), writing its
    /// audit where the policy says (SQLite by default).
    pub fn start(
        policy: Arc<Policy>,
        policy_text: &[u8],
        config: Config,
    ) -> Result<Arc<Gateway>, ConfigError> {
        let metrics = Metrics::default();
        let audit = Audit::open(policy.audit(), metrics.audit())?;
        Gateway::with_audit(policy, policy_text, config, audit, metrics)
    }

    /// The bounds an upstream answer is read within: the policy's, but
    /// its size is `max_response_bytes` (past it, 502
    /// `upstream_response_too_large`, whole or streamed), not the size of
    /// a payload sent to `check`.
    pub(crate) fn answer_limits(&self) -> toolgate::Limits {
        toolgate::Limits {
            max_payload_bytes: self.config.max_response_bytes,
            ..*self.policy.limits()
        }
    }

    /// A gateway writing its audit records to `store`.
    pub fn with_store(
        policy: Arc<Policy>,
        policy_text: &[u8],
        config: Config,
        store: Box<dyn AuditStore>,
    ) -> Result<Arc<Gateway>, ConfigError> {
        let metrics = Metrics::default();
        let audit = Audit::spawn(store, policy.audit().redact.clone(), metrics.audit());
        Gateway::with_audit(policy, policy_text, config, audit, metrics)
    }

    fn with_audit(
        policy: Arc<Policy>,
        policy_text: &[u8],
        config: Config,
        audit: Audit,
        metrics: Metrics,
    ) -> Result<Arc<Gateway>, ConfigError> {
        // A redirect is the upstream's answer, never followed: the request
        // goes to the upstream the policy names and nowhere else.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout)
            .pool_max_idle_per_host(1024)
            .tcp_nodelay(true)
            .no_proxy()
            .build()
            .map_err(|err| ConfigError(format!("cannot build the upstream client: {err}")))?;
        let urls = upstream::Urls::new(&config.upstream);
        let policy_hash = hex::encode(Sha256::digest(policy_text));
        let caller_keys = caller::CallerKeys::new(&policy);
        let counters = Counters::open(policy.access().limits_backend.as_deref())?;
        let mcp = mcp::Servers::open(&policy)?;
        Ok(Arc::new(Gateway {
            policy_hash,
            policy,
            config,
            urls,
            client,
            audit,
            counters,
            released: follow_up::ReleasedCalls::default(),
            caller_keys,
            metrics,
            mcp,
        }))
    }

    /// The routes, ready to serve.
    pub fn router(self: &Arc<Self>) -> Router {
        let mut router = Router::new();
        for provider in Provider::ALL {
            router = router.route(
                provider.path(),
                post(
                    move |State(gw): State<Arc<Gateway>>,
                          uri: Uri,
                          headers: HeaderMap,
                          body: axum::body::Body| async move {
                        proxy::handle(gw, provider, uri.query(), headers, body).await
                    },
                ),
            );
        }
        if !self.mcp.by_name.is_empty() {
            router = router.route(
                "/mcp/{name}",
                post(
                    |State(gw): State<Arc<Gateway>>,
                     Path(name): Path<String>,
                     headers: HeaderMap,
                     body: axum::body::Body| async move {
                        mcp::http::post(gw, name, headers, body).await
                    },
                )
                .get(
                    |State(gw): State<Arc<Gateway>>,
                     Path(name): Path<String>,
                     headers: HeaderMap| async move {
                        mcp::http::other(gw, name, Method::GET, headers).await
                    },
                )
                .delete(
                    |State(gw): State<Arc<Gateway>>,
                     Path(name): Path<String>,
                     headers: HeaderMap| async move {
                        mcp::http::other(gw, name, Method::DELETE, headers).await
                    },
                ),
            );
        }
        router
            .route("/v1/validate", post(validate))
            .route("/healthz", get(healthz))
            .route("/metrics", get(metrics_text))
            .with_state(Arc::clone(self))
    }

    /// The metrics, for tests and embedding.
    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The audit, for tests and embedding: [`Audit::caught_up`] waits for
    /// the SQLite index to hold every record committed.
    #[must_use]
    pub fn audit(&self) -> &Audit {
        &self.audit
    }
}

/// Serve `gateway` on `listener` until `shutdown` completes, then finish
/// the requests in flight. A client must send a request's headers within
/// `gateway.header_read_timeout` (an idle connection is closed after as
/// long) and its body within `gateway.body_read_timeout`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = gateway.router();
    let header_read_timeout = gateway.config.header_read_timeout;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of descriptors or a connection reset before it
                    // was accepted: wait a little, then accept again.
                    tracing::debug!(error = %err, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Each event of a stream leaves at once: without TCP_NODELAY, an
        // event written while the previous one waits for its ACK is held
        // until the client's delayed ACK (up to 40 ms on Linux).
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "cannot set TCP_NODELAY");
        }
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header_read_timeout)
            .serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    // Each request waited for its own audit commit: when the last one has
    // been answered, every record is on disk. Then the index takes the
    // last of them, so a clean stop leaves it complete.
    graceful.shutdown().await;
    let indexed = tokio::task::spawn_blocking(move || gateway.audit.caught_up()).await;
    if let Ok(Err(err)) = indexed {
        tracing::warn!(error = %err, "stopped with the audit index behind its log; it catches up at the next start");
    }
    Ok(())
}

/// Completes on SIGTERM or Ctrl-C. The handlers are installed when this is
/// called (inside the runtime), not when the future is first polled: a
/// signal sent as soon as the gateway says it listens stops it cleanly.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            let (Ok(mut interrupt), Ok(mut terminate)) = (interrupt, terminate) else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = interrupt.recv() => {},
                _ = terminate.recv() => {},
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[derive(serde::Deserialize)]
struct ValidateQuery {
    #[serde(default)]
    results: bool,
}

/// `POST /v1/validate`: the server's policy on any payload; 200 with the
/// verdict, passed or not.
async fn validate(
    State(gw): State<Arc<Gateway>>,
    Query(query): Query<ValidateQuery>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let provider = Provider::OpenAiChat;
    let config = &gw.config;
    let body =
        match request::read_body(body, config.max_request_bytes, config.body_read_timeout).await {
            Ok(body) => body,
            Err(failure) => return provider.failure_response(&failure),
        };
    let caller = match caller::identify(&gw.policy, &headers) {
        Ok(identity) => identity.caller,
        Err(failure) => return provider.failure_response(&failure),
    };
    let started = std::time::Instant::now();
    let options = toolgate::CheckOptions {
        results: query.results,
        caller: caller.as_ref(),
        ..toolgate::CheckOptions::default()
    };
    let verdict = gw.policy.check_with(&body, options);
    gw.metrics.checked("validate", &verdict, started.elapsed());
    match serde_json::to_vec(&verdict) {
        Ok(json) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            Bytes::from(json),
        )
            .into_response(),
        Err(err) => provider.failure_response(&Failure::Internal(err.to_string())),
    }
}

async fn healthz(State(gw): State<Arc<Gateway>>) -> Response {
    if gw.audit.is_open() {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "audit writer stopped\n").into_response()
    }
}

async fn metrics_text(State(gw): State<Arc<Gateway>>) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        gw.metrics.encode(),
    )
        .into_response()
}
