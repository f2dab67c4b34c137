//! `toolgate serve`: the fail-closed gateway between a model API and the
//! code that executes its tool calls.
//!
//! A [`Gateway`] holds one compiled [`Policy`], the upstream client, the
//! [`audit`] writer, the shared rate-limit counters and the [`metrics`].
//! [`Gateway::router`] answers:
//!
//! - `POST /v1/chat/completions`, `/v1/responses`, `/v1/messages`: the
//!   request's tool results are checked before the upstream sees it; the
//!   response's tool calls are checked before the client sees them
//!   ([`proxy`] for whole bodies, [`stream`] for `text/event-stream`). A
//!   passing response is audited, then released with an idempotency key
//!   per call ([`idempotency`]); a failing one is blocked with the route's
//!   own error shape ([`providers`]) or sent back to the model (`retry`).
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
mod declared;
mod error;
mod follow_up;
pub mod idempotency;
mod limits;
pub mod metrics;
pub mod providers;
pub mod proxy;
mod request;
pub mod stream;

use std::future::Future;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
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
    pub(crate) audit: Audit,
    pub(crate) counters: Counters,
    /// Request tool lists, compiled once.
    pub(crate) declared: declared::DeclaredCache,
    /// The calls of the Responses answers released, for follow-ups.
    pub(crate) released: follow_up::ReleasedCalls,
    pub(crate) metrics: Metrics,
}

impl Gateway {
    /// A gateway for `policy` (compiled from `policy_text`), writing its
    /// audit where the policy says (SQLite by default).
    pub fn start(
        policy: Arc<Policy>,
        policy_text: &[u8],
        config: Config,
    ) -> Result<Arc<Gateway>, ConfigError> {
        let store = audit::open(policy.audit())?;
        Gateway::with_store(policy, policy_text, config, store)
    }

    /// A gateway writing its audit records to `store`.
    pub fn with_store(
        policy: Arc<Policy>,
        policy_text: &[u8],
        config: Config,
        store: Box<dyn AuditStore>,
    ) -> Result<Arc<Gateway>, ConfigError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .pool_max_idle_per_host(1024)
            .tcp_nodelay(true)
            .no_proxy()
            .build()
            .map_err(|err| ConfigError(format!("cannot build the upstream client: {err}")))?;
        let policy_hash = hex::encode(Sha256::digest(policy_text));
        let counters = Counters::open(policy.access().limits_backend.as_deref())?;
        let audit = Audit::spawn(store, policy.audit().redact.clone());
        Ok(Arc::new(Gateway {
            policy_hash,
            policy,
            config,
            client,
            audit,
            counters,
            declared: declared::DeclaredCache::default(),
            released: follow_up::ReleasedCalls::default(),
            metrics: Metrics::default(),
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
}

/// Serve `gateway` on `listener` until `shutdown` completes, then finish
/// the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = gateway.router();
    // Each event of a stream leaves at once: without TCP_NODELAY, an event
    // written while the previous one waits for its ACK is held until the
    // client's delayed ACK (up to 40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    // Each request waited for its own audit commit: when the last one has
    // been answered, every record is on disk.
}

/// Completes on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
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
    let body = match request::read_body(body, gw.config.max_request_bytes).await {
        Ok(body) => body,
        Err(failure) => return provider.failure_response(&failure),
    };
    let caller = match caller::identify(&gw.policy, &headers) {
        Ok(caller) => caller,
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
