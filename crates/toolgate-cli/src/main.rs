//! The `toolgate` command. Argument parsing and output only: every decision
//! is made by the `toolgate` library.
//!
//! Exit status: 0 when the input is clean, 1 when it holds a violation,
//! 2 for a usage or I/O error (with a one-line reason on stderr).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "Check LLM tool calls before they run"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read a payload in any wire format (JSON, SSE, JSON lines) and print
    /// the tool calls and tool results it holds, as JSON.
    Detect {
        /// The payload file; `-` or nothing reads standard input.
        file: Option<PathBuf>,
        /// Print the raw arguments text of each call too.
        #[arg(long)]
        raw: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("toolgate: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs a command; `Ok(true)` when the input is clean.
fn run(cli: Cli) -> anyhow::Result<bool> {
    match cli.command {
        Command::Detect { file, raw } => {
            let body = read_input(file.as_ref())?;
            let found = toolgate::detect(&body);
            let mut value = serde_json::to_value(&found)?;
            if !raw {
                strip_raw_arguments(&mut value);
            }
            let mut stdout = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut stdout, &value)?;
            writeln!(stdout)?;
            Ok(found.is_clean())
        }
    }
}

fn read_input(file: Option<&PathBuf>) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    match file {
        Some(path) if path.as_os_str() != "-" => {
            body =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        }
        _ => {
            std::io::stdin()
                .read_to_end(&mut body)
                .context("cannot read standard input")?;
        }
    }
    Ok(body)
}

fn strip_raw_arguments(value: &mut serde_json::Value) {
    if let Some(calls) = value.get_mut("calls").and_then(|c| c.as_array_mut()) {
        for call in calls {
            if let Some(call) = call.as_object_mut() {
                call.remove("raw_arguments");
            }
        }
    }
}
