//! `toolgate mcp -- COMMAND ARGS...` (a stdio MCP server behind the
//! checks) and `toolgate pins list|accept|reset` (its tool-definition
//! pins, and `toolgate serve`'s).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use toolgate_gateway::mcp::pins;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The policy file (YAML or JSON).
    #[arg(long, short)]
    policy: PathBuf,
    /// The server's name, in the audit (`mcp/<name>`) and its pins
    /// (`<name>/<tool>`).
    #[arg(long, default_value = "stdio")]
    name: String,
    /// The id of the caller (one of the policy's `callers`) that the local
    /// client acts for: its roles and attributes apply.
    #[arg(long)]
    caller: Option<String>,
    /// The server to start, and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

/// Runs the wrapper; the server's exit status.
pub(crate) fn run(args: &Args) -> anyhow::Result<u8> {
    let (policy, text) = load(&args.policy)?;
    let caller = match &args.caller {
        None => None,
        Some(id) => {
            let entry = policy
                .access()
                .callers
                .iter()
                .find(|c| &c.id == id)
                .with_context(|| format!("--caller {id}: the policy lists no such caller"))?;
            Some(toolgate::Caller {
                id: entry.id.clone(),
                roles: entry.roles.clone(),
                attributes: entry.attributes.clone(),
            })
        }
    };
    let config = toolgate_gateway::Config::without_upstream(&policy);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let code = runtime.block_on(async move {
        let gateway = toolgate_gateway::Gateway::start(Arc::new(policy), &text, config)?;
        let (command, rest) = args.command.split_first().context("no server command")?;
        let code = toolgate_gateway::mcp::stdio::run(gateway, &args.name, caller, command, rest)
            .await
            .map_err(|why| anyhow::anyhow!(why))?;
        anyhow::Ok(code)
    })?;
    Ok(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

fn load(path: &PathBuf) -> anyhow::Result<(toolgate::Policy, Vec<u8>)> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let policy = toolgate::Policy::from_text(
        std::str::from_utf8(&text)
            .with_context(|| format!("{}: not UTF-8 text", path.display()))?,
        path.parent(),
    )
    .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
    Ok((policy, text))
}

#[derive(clap::Subcommand)]
pub(crate) enum PinsCommand {
    /// Print each pinned tool (`<server>/<tool>`), its SHA-256, and the
    /// SHA-256 of a changed definition waiting to be accepted.
    List,
    /// Trust the changed definition of NAME (`<server>/<tool>`, or a tool
    /// name, for that tool on every server).
    Accept { name: String },
    /// Forget every pin: each definition is trusted again when next seen.
    Reset,
}

#[derive(clap::Args)]
pub(crate) struct PinsArgs {
    /// The policy file, whose `mcp.pins` (or audit file) locates the pins.
    #[arg(long, short, global = true)]
    policy: Option<PathBuf>,
    /// The pin file itself.
    #[arg(long, global = true)]
    file: Option<PathBuf>,
    #[command(subcommand)]
    command: PinsCommand,
}

pub(crate) fn pins(args: &PinsArgs) -> anyhow::Result<bool> {
    let path = match (&args.file, &args.policy) {
        (Some(file), _) => file.clone(),
        (None, Some(policy)) => {
            let (policy, _) = load(policy)?;
            policy.mcp().pins_path(policy.audit())
        }
        (None, None) => PathBuf::from("toolgate-pins.json"),
    };
    let mut out = std::io::stdout().lock();
    match &args.command {
        PinsCommand::List => {
            let file = pins::read(&path).map_err(|why| anyhow::anyhow!(why))?;
            for (key, pin) in &file.tools {
                match &pin.changed {
                    Some(changed) => writeln!(out, "{key}\t{}\tchanged: {changed}", pin.sha256)?,
                    None => writeln!(out, "{key}\t{}", pin.sha256)?,
                }
            }
            writeln!(out, "{} pinned in {}", file.tools.len(), path.display())?;
            Ok(true)
        }
        PinsCommand::Accept { name } => {
            let (accepted, _) = pins::update(&path, |file| {
                let mut accepted = Vec::new();
                for (key, pin) in &mut file.tools {
                    let tool = key.split_once('/').map_or(key.as_str(), |(_, tool)| tool);
                    if key == name || tool == name {
                        if let Some(changed) = pin.changed.take() {
                            pin.sha256 = changed;
                            accepted.push(key.clone());
                        }
                    }
                }
                accepted
            })
            .map_err(|why| anyhow::anyhow!(why))?;
            if accepted.is_empty() {
                anyhow::bail!("no pinned tool named `{name}` has a changed definition waiting (see `toolgate pins list`)");
            }
            for key in accepted {
                writeln!(out, "accepted {key}")?;
            }
            Ok(true)
        }
        PinsCommand::Reset => {
            let (count, _) = pins::update(&path, |file| {
                let count = file.tools.len();
                file.tools.clear();
                count
            })
            .or_else(|why| {
                // A corrupt file is what reset is for: start it anew.
                if path.exists() {
                    std::fs::remove_file(&path)
                        .map_err(|err| format!("{why}; and cannot remove it: {err}"))?;
                }
                pins::update(&path, |_| 0usize)
            })
            .map_err(|why| anyhow::anyhow!(why))?;
            writeln!(out, "forgot {count} pins in {}", path.display())?;
            Ok(true)
        }
    }
}
