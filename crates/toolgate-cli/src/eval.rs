//! `toolgate eval`: arguments to an [`Evaluator`](toolgate_eval::Evaluator)
//! run, a progress bar when stderr is a terminal, the printed summary, the
//! output files (JSON, `--out`, HTML, JUnit), the comparison with a
//! baseline, the run's provenance and the CI gates.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use sha2::{Digest, Sha256};
use toolgate_eval::junit::Cases;
use toolgate_eval::{
    DatasetDigest, Evaluator, Options, PolicyDigest, Progress, Provenance, Sinks, Summary,
};
use xxhash_rust::xxh3::Xxh3;

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
    /// Write a JUnit XML report: one test case a trace, named by its row's
    /// id, else its name, else its line.
    #[arg(long, value_name = "FILE.xml")]
    junit: Option<PathBuf>,
    /// Compare with a previous run's --json summary: what got better and
    /// worse, by tool and by violation code (in the text, the JSON and the
    /// report).
    #[arg(long, value_name = "PREVIOUS.json")]
    baseline: Option<PathBuf>,
    /// Exit 1 when the mean score is below X (0 to 1; a line that holds no
    /// trace scores 0).
    #[arg(long, value_name = "X")]
    min_score: Option<f64>,
    /// Exit 1 when the pass rate is below X (0 to 1; a line that holds no
    /// trace counts as a failed trace).
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
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (evaluator, policy_digest) = evaluator(args)?;
    // Read before the run, so that a baseline that cannot be read stops it
    // before any work.
    let baseline = args.baseline.as_deref().map(read_baseline).transpose()?;

    let stdin = args.dataset.as_os_str() == "-";
    let name = args.dataset.display().to_string();
    // Read unbuffered: the run reads straight into its batches, through a
    // fingerprint of the bytes.
    let (input, size): (Box<dyn Read + Send>, Option<u64>) = if stdin {
        (Box::new(std::io::stdin()), None)
    } else {
        let file = File::open(&args.dataset).with_context(|| format!("cannot read {name}"))?;
        let size = file.metadata().ok().map(|m| m.len());
        (Box::new(file), size)
    };
    let fingerprint = Arc::new(Mutex::new((Xxh3::new(), 0u64)));
    let input = Fingerprinted {
        input,
        state: Arc::clone(&fingerprint),
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
    let mut cases = args.junit.as_ref().map(|_| Cases::default());
    let sinks = Sinks {
        out: out.as_mut().map(|w| w as &mut dyn Write),
        junit: cases.as_mut(),
        progress: &mut on_progress,
        strict: args.strict,
    };
    let mut summary = toolgate_eval::run_dataset(&evaluator, &name, input, json_document, sinks)
        .map_err(|err| anyhow::anyhow!("{name}: {err}"))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (hasher, bytes) = &*fingerprint.lock().unwrap_or_else(PoisonError::into_inner);
    summary.provenance = Some(Provenance {
        toolgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at,
        command_line: std::env::args().collect(),
        policy: policy_digest,
        dataset: DatasetDigest {
            path: name.clone(),
            bytes: *bytes,
            xxh3_128: format!("{:032x}", hasher.digest128()),
        },
    });
    if let Some((path, before)) = &baseline {
        summary.baseline = Some(toolgate_eval::baseline::compare(path, before, &summary));
    }

    print!("{}", toolgate_eval::text::render(&summary));
    write_outputs(args, &name, &summary, cases)?;
    let met = gates_met(args, &summary);
    // The process ends here: what the run built (the compiled policy, the
    // summary's tables) is left to the exit rather than freed piece by
    // piece, about a millisecond of one thread at the end of every run.
    std::mem::forget(evaluator);
    std::mem::forget(summary);
    Ok(met)
}

/// Write `--json`, `--report` and `--junit`.
fn write_outputs(
    args: &Args,
    name: &str,
    summary: &Summary,
    cases: Option<Cases>,
) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        let file =
            File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        let mut writer = BufWriter::new(file);
        serde_json::to_writer_pretty(&mut writer, summary)?;
        writeln!(writer)?;
        writer.flush()?;
    }

    if let Some(path) = &args.report {
        std::fs::write(path, toolgate_eval::report::html(summary))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let (Some(path), Some(cases)) = (&args.junit, cases) {
        anyhow::ensure!(
            cases.over == 0,
            "--junit: {name} holds more than {} lines to report ({} more); a JUnit file of one \
             test case a trace is for CI datasets: write every verdict with --out instead",
            toolgate_eval::junit::MAX_CASES,
            cases.over
        );
        let report = toolgate_eval::junit::report(summary, cases.cases);
        let file =
            File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        let mut writer = BufWriter::new(file);
        report
            .serialize(&mut writer)
            .with_context(|| format!("cannot write {}", path.display()))?;
        writer.flush()?;
    }

    Ok(())
}

/// The input, fingerprinted as it is read (XXH3-128 and a byte count).
struct Fingerprinted<R> {
    input: R,
    state: Arc<Mutex<(Xxh3, u64)>>,
}

impl<R: Read> Read for Fingerprinted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.input.read(buf)?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.0.update(&buf[..n]);
        state.1 += n as u64;
        Ok(n)
    }
}

/// A previous run's `--json` summary.
fn read_baseline(path: &Path) -> anyhow::Result<(String, Summary)> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let summary = serde_json::from_slice(&text).with_context(|| {
        format!(
            "{}: not the --json summary of a toolgate eval run",
            path.display()
        )
    })?;
    Ok((path.display().to_string(), summary))
}

/// The base policy, compiled, with the run's options, and the digest of
/// its file.
fn evaluator(args: &Args) -> anyhow::Result<(Evaluator, Option<PolicyDigest>)> {
    let named = |err: &dyn std::fmt::Display| match &args.policy {
        Some(path) => anyhow::anyhow!("{}: {err}", path.display()),
        None => anyhow::anyhow!("{err}"),
    };
    let (value, dir, digest) = match &args.policy {
        Some(path) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            let digest = PolicyDigest {
                path: path.display().to_string(),
                sha256: format!("{:x}", Sha256::digest(&bytes)),
            };
            (
                toolgate::policy::read_value(path).map_err(|err| named(&err))?,
                path.parent().map(PathBuf::from),
                Some(digest),
            )
        }
        None => (serde_json::json!({}), None, None),
    };
    let options = Options {
        results: args.results,
        require_calls: args.require_calls,
        phase: toolgate::Phase::Trajectory,
    };
    let evaluator = Evaluator::new(value, dir, options).map_err(|err| named(&err))?;
    Ok((evaluator, digest))
}

/// Whether the summary meets `--min-score` and `--min-pass-rate`, saying on
/// stderr which one it misses. A dataset without a single trace meets no
/// gate, asked for or not: nothing was evaluated.
fn gates_met(args: &Args, summary: &Summary) -> bool {
    if summary.traces == 0 {
        let what = match summary.bad_lines {
            0 => "it is empty".to_owned(),
            1 => "its only line holds no trace (see above)".to_owned(),
            n => format!("none of its {n} lines holds a trace (see above)"),
        };
        eprintln!(
            "toolgate: {} holds no trace to evaluate: {what}",
            summary.dataset
        );
        return false;
    }
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
            let bad = match summary.bad_lines {
                0 => String::new(),
                1 => " (1 line that held no trace counts as failed)".to_owned(),
                n => format!(" ({n} lines that held no trace count as failed)"),
            };
            eprintln!("toolgate: {what} {value:.3} is below {flag} {min}{bad}");
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
