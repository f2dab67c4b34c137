//! `toolgate serve`: the gateway on a socket until SIGTERM or Ctrl-C.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

/// Where the gateway listens when neither `--listen` nor `gateway.listen`
/// says.
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The policy file (YAML or JSON): its `gateway` and `audit` sections
    /// configure the gateway.
    #[arg(long, short)]
    policy: PathBuf,
    /// Address to listen on [default: gateway.listen, else 127.0.0.1:8080].
    #[arg(long)]
    listen: Option<String>,
    /// Base URL of the upstream API [default: gateway.upstream, else
    /// `TOOLGATE_UPSTREAM`].
    #[arg(long)]
    upstream: Option<String>,
    /// Threads serving requests [default: half the cores, at least one].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    workers: Option<u16>,
}

/// The runtime's threads when `--workers` does not say: half the cores,
/// at least one. A request costs the gateway little CPU of its own; the
/// rest of its path runs on other threads (the audit writers and indexer,
/// the kernel's network stack, the upstream beside it): on two cores at
/// 1000 requests/s, one worker switched threads half as often per request
/// as two and answered with a lower p99 (bench/gateway.sh).
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

pub(crate) fn run(args: &Args) -> anyhow::Result<bool> {
    let text = std::fs::read(&args.policy)
        .with_context(|| format!("cannot read {}", args.policy.display()))?;
    let policy = toolgate::Policy::from_text(
        std::str::from_utf8(&text)
            .with_context(|| format!("{}: not UTF-8 text", args.policy.display()))?,
        args.policy.parent(),
    )
    .map_err(|err| anyhow::anyhow!("{}: {err}", args.policy.display()))?;
    let config = match toolgate_gateway::Config::from_policy(&policy, args.upstream.as_deref()) {
        Ok(config) => config,
        // In front of MCP servers only, no model upstream is needed.
        Err(_) if args.upstream.is_none() && !policy.mcp().servers.is_empty() => {
            toolgate_gateway::Config::without_upstream(&policy)
        }
        Err(err) => return Err(err.into()),
    };
    let listen = args
        .listen
        .clone()
        .or_else(|| policy.gateway().listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let upstream = config.upstream.clone();
    let workers = args.workers.map_or_else(default_workers, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async move {
        let gateway = toolgate_gateway::Gateway::start(Arc::new(policy), &text, config)?;
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        let addr = listener.local_addr()?;
        let shutdown = toolgate_gateway::shutdown_signal();
        let upstream = if upstream.is_empty() {
            "none".to_owned()
        } else {
            upstream
        };
        eprintln!("toolgate serve: listening on http://{addr}, upstream {upstream}");
        toolgate_gateway::serve(listener, gateway, shutdown).await?;
        eprintln!("toolgate serve: stopped");
        Ok(true)
    })
}
