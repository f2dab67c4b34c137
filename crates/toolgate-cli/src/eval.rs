//! `toolgate eval`: arguments to an [`Evaluator`](toolgate_eval::Evaluator)
//! run, a progress bar when stderr is a terminal, the printed summary, the
//! output files and the CI gates.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use toolgate_eval::{Evaluator, Options, Progress, Sinks};

/// The arguments of `toolgate eval`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The dataset: one trace a line (any payload, or
    /// {"output": ..., "policy": {...}}), a JSON array, or `-`.
    dataset: PathBuf,
    /// The policy file (YAML or JSON).
    #[arg(long, short)]
    policy: Option<PathBuf>,
    /// Write the summary as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one verdict per line, in input order.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write a self-contained HTML report with charts.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Exit 1 when the mean score is below X.
    #[arg(long, value_name = "X")]
    min_score: Option<f64>,
    /// Exit 1 when the pass rate is below X (0 to 1).
    #[arg(long, value_name = "X")]
    min_pass_rate: Option<f64>,
    /// Stop at the first line that holds no trace (exit 2).
    #[arg(long)]
    strict: bool,
    /// Also check the tool results of each trace.
    #[arg(long)]
    results: bool,
    /// A trace without tool calls fails.
    #[arg(long)]
    require_calls: bool,
}

/// Runs the evaluation; `Ok(true)` when every gate is met.
pub(crate) fn run(args: &Args) -> anyhow::Result<bool> {
    for (flag, gate) in [
        ("--min-score", args.min_score),
        ("--min-pass-rate", args.min_pass_rate),
    ] {
        if let Some(x) = gate {
            anyhow::ensure!(
                (0.0..=1.0).contains(&x),
                "{flag} must be between 0 and 1, not {x}"
            );
        }
    }
    let evaluator = evaluator(args)?;

    let stdin = args.dataset.as_os_str() == "-";
    let name = args.dataset.display().to_string();
    // Read unbuffered: the run reads straight into its batches.
    let (input, size): (Box<dyn Read + Send>, Option<u64>) = if stdin {
        (Box::new(std::io::stdin()), None)
    } else {
        let file = File::open(&args.dataset).with_context(|| format!("cannot read {name}"))?;
        let size = file.metadata().ok().map(|m| m.len());
        (Box::new(file), size)
    };
    let json_document = args.dataset.extension().is_some_and(|e| e == "json");

    let mut out = match &args.out {
        Some(path) => {
            Some(BufWriter::new(File::create(path).with_context(|| {
                format!("cannot write {}", path.display())
            })?))
        }
        None => None,
    };
    let bar = progress_bar(size);
    let mut on_progress = |p: Progress| {
        if let Some(bar) = &bar {
            if size.is_some() {
                bar.set_position(p.bytes);
            } else {
                bar.set_position(p.lines);
            }
            bar.set_message(format!("{} lines", p.lines));
        }
    };
    let sinks = Sinks {
        out: out.as_mut().map(|w| w as &mut dyn Write),
        progress: &mut on_progress,
        strict: args.strict,
    };
    let summary = toolgate_eval::run_dataset(&evaluator, &name, input, json_document, sinks)
        .map_err(|err| anyhow::anyhow!("{name}: {err}"))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }

    print!("{}", toolgate_eval::text::render(&summary));
    if let Some(path) = &args.json {
        let file =
            File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        let mut writer = BufWriter::new(file);
        serde_json::to_writer_pretty(&mut writer, &summary)?;
        writeln!(writer)?;
        writer.flush()?;
    }

    if let Some(path) = &args.report {
        std::fs::write(path, toolgate_eval::report::html(&summary))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }

    Ok(gates_met(args, &summary))
}

/// The base policy, compiled, with the run's options.
fn evaluator(args: &Args) -> anyhow::Result<Evaluator> {
    let named = |err: &dyn std::fmt::Display| match &args.policy {
        Some(path) => anyhow::anyhow!("{}: {err}", path.display()),
        None => anyhow::anyhow!("{err}"),
    };
    let (value, dir) = match &args.policy {
        Some(path) => (
            toolgate::policy::read_value(path).map_err(|err| named(&err))?,
            path.parent().map(PathBuf::from),
        ),
        None => (serde_json::json!({}), None),
    };
    let options = Options {
        results: args.results,
        require_calls: args.require_calls,
        phase: toolgate::Phase::Trajectory,
    };
    Evaluator::new(value, dir, options).map_err(|err| named(&err))
}

/// Whether the summary meets `--min-score` and `--min-pass-rate`, saying on
/// stderr which one it misses.
fn gates_met(args: &Args, summary: &toolgate_eval::Summary) -> bool {
    let mut met = true;
    for (what, flag, min, value) in [
        (
            "mean score",
            "--min-score",
            args.min_score,
            summary.mean_score,
        ),
        (
            "pass rate",
            "--min-pass-rate",
            args.min_pass_rate,
            summary.pass_rate,
        ),
    ] {
        if let Some(min) = min.filter(|&min| value < min) {
            eprintln!("toolgate: {what} {value:.3} is below {flag} {min}");
            met = false;
        }
    }
    met
}

/// A bar on stderr when it is a terminal: bytes of the file (with an ETA),
/// or lines of standard input.
fn progress_bar(size: Option<u64>) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = match size {
        Some(bytes) => indicatif::ProgressBar::new(bytes).with_style(
            indicatif::ProgressStyle::with_template(
                "{bar:24} {bytes}/{total_bytes} {msg} {binary_bytes_per_sec} eta {eta}",
            )
            .ok()?,
        ),
        None => indicatif::ProgressBar::new_spinner().with_style(
            indicatif::ProgressStyle::with_template("{spinner} {pos} lines {per_sec}").ok()?,
        ),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    Some(bar)
}
