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
    /// The scheduler slice the gateway's threads ask Linux for, in
    /// microseconds, 100 to 100000 (0: the kernel's default). A woken
    /// request thread with a short slice preempts a thread running a
    /// longer one instead of waiting for it (EEVDF, Linux 6.12 and later).
    #[arg(long, value_name = "MICROS", default_value_t = DEFAULT_SLICE_MICROS,
          value_parser = parse_slice)]
    sched_slice: u64,
}

/// `--sched-slice` when not given: the shortest slice the kernel grants.
/// In alternated rounds at 1000 chat completions a second
/// (`bench/gateway_ab.sh`, medians of 8 rounds, the build before run twice
/// in the same rounds), the added p99 was +0.356 ms against +0.635 and
/// +0.685 with the audit on tmpfs, and +1.169 against +1.333 and +1.374 on
/// disk; as fast as answered, the same requests a second.
const DEFAULT_SLICE_MICROS: u64 = 100;

fn parse_slice(text: &str) -> Result<u64, String> {
    let micros: u64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of microseconds"))?;
    let (min, max) = (toolgate_sched::MIN, toolgate_sched::MAX);
    if micros == 0 || (min..=max).contains(&std::time::Duration::from_micros(micros)) {
        Ok(micros)
    } else {
        Err(format!(
            "0 (the kernel's default), or {} to {}",
            min.as_micros(),
            max.as_micros()
        ))
    }
}

/// Ask for the `--sched-slice` for this thread and every thread started
/// after it (the runtime's workers, the audit's writers; the audit's
/// indexer gives it back).
fn ask_for_slice(micros: u64) {
    if micros == 0 {
        return;
    }
    match toolgate_sched::set_slice(Some(std::time::Duration::from_micros(micros))) {
        Ok(true) => {}
        Ok(false) => tracing::debug!("not under the fair scheduler: its slice left as it is"),
        Err(err) => {
            tracing::warn!(error = %err, micros, "cannot ask for a scheduler slice (--sched-slice 0 to not ask)");
        }
    }
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
    ask_for_slice(args.sched_slice);
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

#[cfg(test)]
mod tests {
    use super::parse_slice;

    #[test]
    fn a_slice_is_zero_or_within_the_kernels_bounds() {
        assert_eq!(parse_slice("0"), Ok(0));
        assert_eq!(parse_slice("100"), Ok(100));
        assert_eq!(parse_slice("100000"), Ok(100_000));
        for refused in ["1", "99", "100001", "-1", "0.5", "", "1ms"] {
            assert!(parse_slice(refused).is_err(), "{refused:?}");
        }
    }
}
