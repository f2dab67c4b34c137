//! Reading a dataset and checking it on all cores. A reader thread cuts
//! the input into batches of lines; each batch is checked in parallel and
//! folded in line order, so memory holds a few batches whatever the size of
//! the dataset, and `--out` lines come out in input order.

use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::Instant;

use rayon::prelude::*;
use serde_json::value::RawValue;

use crate::aggregate::{Aggregate, Facts};
use crate::scenario::{Evaluator, Outcome};
use crate::summary::BadLine;
use crate::summary::Summary;

/// Lines per batch.
const BATCH_LINES: usize = 2048;
/// Bytes per batch, whichever comes first.
const BATCH_BYTES: usize = 4 << 20;
/// The longest line read; a longer one is a bad line, not an allocation
/// of any size.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// How far a run has come, for a progress bar.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub lines: u64,
    pub bytes: u64,
}

/// Why a run stopped.
#[derive(Debug)]
pub enum RunError {
    Io(std::io::Error),
    /// `--strict`: a line held no trace.
    Strict {
        line: u64,
        kind: String,
        message: String,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Io(err) => write!(f, "cannot read the dataset: {err}"),
            RunError::Strict {
                line,
                kind,
                message,
            } => write!(f, "line {line}: {kind}: {message}"),
        }
    }
}

impl std::error::Error for RunError {}

/// What the run does besides summarising.
pub struct Sinks<'a> {
    /// One verdict (or error) per line, in order (`--out`).
    pub out: Option<&'a mut dyn Write>,
    /// Called after each batch.
    pub progress: &'a mut dyn FnMut(Progress),
    /// Stop at the first line that holds no trace.
    pub strict: bool,
}

/// A line, reduced on the worker thread to what the summary keeps.
enum Checked {
    Blank,
    Facts(Facts),
    Bad(BadLine),
}

struct Batch {
    /// (1-based line number, its bytes).
    lines: Vec<(u64, Vec<u8>)>,
    bytes: u64,
}

/// Check every trace of a JSON-lines `input`.
pub fn run_lines(
    evaluator: &Evaluator,
    dataset: &str,
    input: impl BufRead + Send,
    sinks: Sinks<'_>,
) -> Result<Summary, RunError> {
    let started = Instant::now();
    std::thread::scope(|scope| {
        let (send, receive) = mpsc::sync_channel::<std::io::Result<Batch>>(2);
        scope.spawn(move || read_batches(input, &send));
        fold(evaluator, dataset, receive.into_iter(), sinks, started)
    })
}

/// Check every element of a JSON array (a dataset written as one document).
pub fn run_array(
    evaluator: &Evaluator,
    dataset: &str,
    text: &str,
    sinks: Sinks<'_>,
) -> Result<Summary, RunError> {
    let started = Instant::now();
    let items: Vec<&RawValue> = serde_json::from_str(text)
        .map_err(|err| RunError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, err)))?;
    let batches = items.chunks(BATCH_LINES).enumerate().map(|(at, chunk)| {
        let first = (at * BATCH_LINES) as u64 + 1;
        let lines: Vec<(u64, Vec<u8>)> = chunk
            .iter()
            .enumerate()
            .map(|(i, raw)| (first + i as u64, raw.get().as_bytes().to_vec()))
            .collect();
        let bytes = lines.iter().map(|(_, l)| l.len() as u64).sum();
        Ok(Batch { lines, bytes })
    });
    fold(evaluator, dataset, batches, sinks, started)
}

fn read_batches(mut input: impl BufRead, send: &mpsc::SyncSender<std::io::Result<Batch>>) {
    let mut number = 0u64;
    loop {
        let mut batch = Batch {
            lines: Vec::with_capacity(BATCH_LINES),
            bytes: 0,
        };
        let mut size = 0usize;
        while batch.lines.len() < BATCH_LINES && size < BATCH_BYTES {
            let mut line = Vec::new();
            match read_line(&mut input, &mut line) {
                Ok(0) => break,
                Ok(read) => {
                    number += 1;
                    batch.bytes += read as u64;
                    size += line.len();
                    batch.lines.push((number, line));
                }
                Err(err) => {
                    let _ = send.send(Err(err));
                    return;
                }
            }
        }
        let done = batch.lines.is_empty();
        if done || send.send(Ok(batch)).is_err() {
            return;
        }
    }
}

/// One line without its end, at most [`MAX_LINE_BYTES`] kept (the rest is
/// read and dropped, so the line is then not valid JSON); returns the bytes
/// consumed.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(consumed);
        }
        let (chunk, end) = match memchr::memchr(b'\n', available) {
            Some(at) => (&available[..at], at + 1),
            None => (available, available.len()),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let newline = end > chunk.len();
        input.consume(end);
        consumed += end;
        if newline {
            return Ok(consumed);
        }
    }
}

fn fold(
    evaluator: &Evaluator,
    dataset: &str,
    batches: impl Iterator<Item = std::io::Result<Batch>>,
    mut sinks: Sinks<'_>,
    started: Instant,
) -> Result<Summary, RunError> {
    let mut aggregate = Aggregate::new(dataset);
    let mut progress = Progress::default();
    let write_out = sinks.out.is_some();
    for batch in batches {
        let batch = batch.map_err(RunError::Io)?;
        let checked: Vec<(u64, Checked, Vec<u8>)> = batch
            .lines
            .par_iter()
            .map(|(line, text)| {
                let outcome = evaluator.line(*line, text);
                let out = if write_out {
                    out_line(*line, &outcome)
                } else {
                    Vec::new()
                };
                let checked = match outcome {
                    Outcome::Blank => Checked::Blank,
                    Outcome::Verdict(verdict) => Checked::Facts(Facts::from(verdict)),
                    Outcome::Bad(bad) => Checked::Bad(bad),
                };
                (*line, checked, out)
            })
            .collect();
        for (line, checked, out) in checked {
            if let Some(sink) = sinks.out.as_mut() {
                sink.write_all(&out).map_err(RunError::Io)?;
            }
            match checked {
                Checked::Blank => {}
                Checked::Facts(facts) => aggregate.facts(line, facts),
                Checked::Bad(bad) if sinks.strict => {
                    return Err(RunError::Strict {
                        line: bad.line,
                        kind: bad.kind,
                        message: bad.message,
                    });
                }
                Checked::Bad(bad) => aggregate.bad_line(bad),
            }
        }
        progress.lines += batch.lines.len() as u64;
        progress.bytes += batch.bytes;
        (sinks.progress)(progress);
    }
    if let Some(sink) = sinks.out.as_mut() {
        sink.flush().map_err(RunError::Io)?;
    }
    Ok(aggregate.finish(started.elapsed().as_secs_f64()))
}

/// The `--out` line of one outcome: `{"line": N, "verdict": ...}` or
/// `{"line": N, "error": {...}}`; nothing for a blank line.
fn out_line(line: u64, outcome: &Outcome) -> Vec<u8> {
    let mut out = match outcome {
        Outcome::Blank => return Vec::new(),
        Outcome::Verdict(verdict) => {
            serde_json::to_vec(&serde_json::json!({"line": line, "verdict": verdict}))
        }
        Outcome::Bad(bad) => serde_json::to_vec(&serde_json::json!({"line": line, "error": bad})),
    }
    .unwrap_or_default();
    out.push(b'\n');
    out
}

/// Check a dataset whatever its layout: JSON lines, or one JSON document
/// (an array of traces, or a single trace). `json_document` says the input
/// is one document (a `.json` file); otherwise an input whose first line is
/// an incomplete array is read as one document too (a pretty-printed array),
/// and anything else as JSON lines, streamed.
pub fn run_dataset(
    evaluator: &Evaluator,
    dataset: &str,
    mut input: impl BufRead + Send,
    json_document: bool,
    sinks: Sinks<'_>,
) -> Result<Summary, RunError> {
    let head = input.fill_buf().map_err(RunError::Io)?;
    let first = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map(|at| head[at]);
    let document = match first {
        Some(b'[') => {
            json_document || {
                let line = memchr::memchr(b'\n', head).map_or(head, |end| &head[..end]);
                serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err()
            }
        }
        Some(_) => json_document,
        None => false,
    };
    if !document {
        return run_lines(evaluator, dataset, input, sinks);
    }
    let mut text = String::new();
    input.read_to_string(&mut text).map_err(RunError::Io)?;
    if text.trim_start().starts_with('[') {
        run_array(evaluator, dataset, &text, sinks)
    } else {
        // One trace.
        let one = format!("[{text}]");
        run_array(evaluator, dataset, &one, sinks)
    }
}
