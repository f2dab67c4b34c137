//! Prometheus metrics, named `toolgate_<what>_<unit>` with bounded labels:
//! a route, an outcome, a violation code or a failure kind, never a
//! message or a tool name.
//!
//! - `toolgate_requests_total{route, outcome}`: outcome `released`,
//!   `blocked`, `upstream_error` (the upstream's own error, carrying no
//!   call, passed as sent) or `failed`.
//! - `toolgate_calls_checked_total{route}`: tool calls checked (responses
//!   and `/v1/validate`).
//! - `toolgate_blocks_total{code}`: blocked requests, once per violation
//!   code they held.
//! - `toolgate_failures_total{kind}`: requests that failed otherwise
//!   (upstream down or slow, audit unavailable, ...).
//! - `toolgate_request_duration_seconds{route}`,
//!   `toolgate_check_duration_seconds{route}`,
//!   `toolgate_upstream_duration_seconds{route}`: histograms.
//! - `toolgate_tool_lists_total{outcome}`: requests that declared tools,
//!   by whether their list's compiled form was `reused` (the same text
//!   seen before) or `compiled`.
//! - `toolgate_mcp_calls_total{route, tool, outcome}`: MCP `tools/call`s
//!   by server (`mcp/<name>`), tool (only tools the server listed) and
//!   outcome (`released`, `refused`, `result_refused`).
//! - `toolgate_audit_commit_duration_seconds`: a histogram of the audit
//!   writer's groups, from the write to the sync (a request waits for
//!   its group's, and at most for the one before it);
//!   `toolgate_audit_groups_total` and `toolgate_audit_records_total`: the
//!   groups written and the records in them;
//!   `toolgate_audit_records_at_once_total`: the records committed on the
//!   request's own thread, the log's syncs being quick (a tmpfs);
//!   `toolgate_audit_index_lag_bytes`: how far the SQLite index is behind
//!   the audit log; `toolgate_audit_index_unsynced_bytes`: how far its last
//!   completed checkpoint is.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use toolgate::Verdict;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct McpLabels {
    /// `mcp/<server>`.
    route: &'static str,
    /// A tool the server listed, or `(unlisted)`: bounded by the servers'
    /// catalogs.
    tool: String,
    outcome: &'static str,
}

type Histograms = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// The gateway's metrics and their registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    calls: Family<RouteLabels, Counter>,
    blocks: Family<CodeLabels, Counter>,
    failures: Family<KindLabels, Counter>,
    request_seconds: Histograms,
    check_seconds: Histograms,
    upstream_seconds: Histograms,
    mcp_calls: Family<McpLabels, Counter>,
    tool_lists: Family<OutcomeLabels, Counter>,
    audit: AuditMetrics,
}

/// The audit writer's and indexer's metrics.
#[derive(Debug, Clone)]
pub struct AuditMetrics {
    commit_seconds: Histogram,
    pub(crate) groups: Counter,
    pub(crate) records: Counter,
    pub(crate) at_once: Counter,
    index_lag: Gauge,
    index_unsynced: Gauge,
}

impl Default for AuditMetrics {
    fn default() -> Self {
        AuditMetrics {
            commit_seconds: latency(),
            groups: Counter::default(),
            records: Counter::default(),
            at_once: Counter::default(),
            index_lag: Gauge::default(),
            index_unsynced: Gauge::default(),
        }
    }
}

impl AuditMetrics {
    /// How far the index is behind the log: not indexed, and not synced.
    pub(crate) fn index_behind(&self, shared: &crate::audit::log::Shared) {
        let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.index_lag.set(bytes(shared.lag()));
        self.index_unsynced.set(bytes(shared.unsynced()));
    }

    /// A group of `records` was written in `took`.
    pub(crate) fn group(&self, records: usize, took: Duration) {
        self.groups.inc();
        self.records.inc_by(records as u64);
        self.commit_seconds.observe(took.as_secs_f64());
    }
}

fn latency() -> Histogram {
    // 10 µs to about 84 s.
    Histogram::new(exponential_buckets(0.000_01, 2.0, 24))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("toolgate");
        let requests = Family::<RequestLabels, Counter>::default();
        let calls = Family::<RouteLabels, Counter>::default();
        let blocks = Family::<CodeLabels, Counter>::default();
        let failures = Family::<KindLabels, Counter>::default();
        let request_seconds: Histograms = Family::new_with_constructor(latency);
        let check_seconds: Histograms = Family::new_with_constructor(latency);
        let upstream_seconds: Histograms = Family::new_with_constructor(latency);
        registry.register(
            "requests",
            "Requests answered, by route and outcome",
            requests.clone(),
        );
        registry.register("calls_checked", "Tool calls checked", calls.clone());
        registry.register(
            "blocks",
            "Blocked requests, by violation code",
            blocks.clone(),
        );
        registry.register(
            "failures",
            "Requests failed for another reason, by kind",
            failures.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from the request to the last byte released",
            request_seconds.clone(),
        );
        registry.register(
            "check_duration_seconds",
            "Time spent checking (detection, policy, verdict)",
            check_seconds.clone(),
        );
        registry.register(
            "upstream_duration_seconds",
            "Time until the upstream's response headers",
            upstream_seconds.clone(),
        );
        let mcp_calls = Family::<McpLabels, Counter>::default();
        registry.register(
            "mcp_calls",
            "MCP tools/call requests, by server, tool and outcome",
            mcp_calls.clone(),
        );
        let tool_lists = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "tool_lists",
            "Requests that declared tools, by whether their list was reused compiled or compiled",
            tool_lists.clone(),
        );
        let audit = AuditMetrics::default();
        registry.register(
            "audit_commit_duration_seconds",
            "Time to write and sync one group of audit records",
            audit.commit_seconds.clone(),
        );
        registry.register(
            "audit_groups",
            "Groups of audit records written",
            audit.groups.clone(),
        );
        registry.register(
            "audit_records",
            "Audit records written",
            audit.records.clone(),
        );
        registry.register(
            "audit_records_at_once",
            "Audit records committed on the request's own thread, the log's syncs being quick",
            audit.at_once.clone(),
        );
        registry.register(
            "audit_index_lag_bytes",
            "Audit log bytes not yet in the SQLite index",
            audit.index_lag.clone(),
        );
        registry.register(
            "audit_index_unsynced_bytes",
            "Audit log bytes the SQLite index's last completed checkpoint does not cover",
            audit.index_unsynced.clone(),
        );
        Metrics {
            registry,
            requests,
            calls,
            blocks,
            failures,
            request_seconds,
            check_seconds,
            upstream_seconds,
            mcp_calls,
            tool_lists,
            audit,
        }
    }
}

impl Metrics {
    /// The audit's own metrics, for its writer and indexer.
    #[must_use]
    pub fn audit(&self) -> &AuditMetrics {
        &self.audit
    }

    /// A request declared tools: their compiled form was found by the
    /// list's text (`reused`), or compiled.
    pub(crate) fn tool_list(&self, reused: bool) {
        let outcome = if reused { "reused" } else { "compiled" };
        self.tool_lists
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// A verdict was reached on `route` in `took`.
    pub fn checked(&self, route: &'static str, verdict: &Verdict, took: Duration) {
        self.calls
            .get_or_create(&RouteLabels { route })
            .inc_by(verdict.calls.len() as u64);
        self.check_seconds
            .get_or_create(&RouteLabels { route })
            .observe(took.as_secs_f64());
    }

    /// A request was blocked by `verdict`.
    pub fn blocked(&self, route: &'static str, verdict: &Verdict, took: Duration) {
        let mut codes: Vec<&'static str> =
            verdict.violations.iter().map(|v| v.code.as_str()).collect();
        codes.sort_unstable();
        codes.dedup();
        for code in codes {
            self.blocks.get_or_create(&CodeLabels { code }).inc();
        }
        self.finished(route, "blocked", took);
    }

    /// A request failed for a reason other than a violation.
    pub fn failed(&self, route: &'static str, kind: &'static str, took: Duration) {
        self.failures.get_or_create(&KindLabels { kind }).inc();
        self.finished(route, "failed", took);
    }

    /// The upstream's own error, carrying no call, was passed as sent.
    pub fn upstream_error(&self, route: &'static str, took: Duration) {
        self.finished(route, "upstream_error", took);
    }

    /// A response was released.
    pub fn released(&self, route: &'static str, took: Duration) {
        self.finished(route, "released", took);
    }

    pub fn upstream(&self, route: &'static str, took: Duration) {
        self.upstream_seconds
            .get_or_create(&RouteLabels { route })
            .observe(took.as_secs_f64());
    }

    fn finished(&self, route: &'static str, outcome: &'static str, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels { route, outcome })
            .inc();
        self.request_seconds
            .get_or_create(&RouteLabels { route })
            .observe(took.as_secs_f64());
    }

    /// An MCP `tools/call` of `tool` on `route` (`mcp/<server>`) was
    /// `released`, `refused`, or had its result refused (`result_refused`).
    pub fn mcp_call(&self, route: &'static str, tool: &str, outcome: &'static str) {
        self.mcp_calls
            .get_or_create(&McpLabels {
                route,
                tool: tool.to_owned(),
                outcome,
            })
            .inc();
    }

    /// The metrics in the `OpenMetrics` text format.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
