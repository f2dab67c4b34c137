//! `toolgate test`: arguments to a [`toolgate_suite`] run, a line per test
//! as it finishes, the summary and the `JUnit` file.

use std::io::Write;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

/// The arguments of `toolgate test`.
// clap prints these comments as the help text, where backticks would show.
#[allow(clippy::doc_markdown)]
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The suite file (JSON or YAML).
    suite: PathBuf,
    /// Write JUnit XML: one testcase per test.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Run N tests at once (their lines still print in the suite's order).
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value = "1")]
    jobs: NonZeroUsize,
    /// Run only the tests whose id or name contains TEXT.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// How long one HttpRequest may take, answer included, in seconds
    /// (a block's `config.timeout` wins).
    #[arg(long, value_name = "SECS", default_value = "120")]
    timeout: f64,
    /// The largest answer body an HttpRequest reads (a block's
    /// `config.max_body_bytes` wins).
    #[arg(long, value_name = "BYTES", default_value = "16777216")]
    max_body_bytes: NonZeroUsize,
}

/// Runs the suite; `Ok(true)` when every test passed.
pub(crate) fn run(args: &Args) -> anyhow::Result<bool> {
    let timeout = Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .with_context(|| {
            format!(
                "--timeout must be a positive number of seconds, not {}",
                args.timeout
            )
        })?;
    let suite = toolgate_suite::Suite::load(&args.suite)?;
    let options = toolgate_suite::RunOptions {
        jobs: args.jobs.get(),
        filter: args.filter.clone(),
        limits: toolgate_suite::Limits {
            timeout,
            max_body_bytes: args.max_body_bytes.get(),
        },
        ..toolgate_suite::RunOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let started = Instant::now();
    let outcomes = runtime.block_on(toolgate_suite::run(&suite, &options, |outcome| {
        let mut stdout = std::io::stdout().lock();
        // A closed stdout must not stop the run: the exit status still says.
        let _ = writeln!(stdout, "{}", toolgate_suite::progress_line(outcome));
        let _ = stdout.flush();
    }))?;
    let elapsed = started.elapsed();
    println!(
        "{}",
        toolgate_suite::summary_line(&suite.name, &outcomes, elapsed)
    );
    if let Some(path) = &args.junit {
        let xml = toolgate_suite::junit(&suite.name, &outcomes, elapsed)
            .map_err(|err| anyhow::anyhow!("cannot write JUnit XML: {err}"))?;
        std::fs::write(path, xml).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(outcomes.iter().all(toolgate_suite::TestOutcome::passed))
}
