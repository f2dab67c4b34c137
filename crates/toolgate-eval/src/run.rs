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
const BATCH_BYTES: usize = 2 << 20;
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

/// A block of whole lines: one buffer, and where each line lies in it.
struct Batch {
    data: Vec<u8>,
    /// (1-based line number, start, end) of each line, without its `\n`.
    lines: Vec<(u64, usize, usize)>,
    /// Input bytes the batch stands for (dropped bytes of an over-long
    /// line included).
    bytes: u64,
}

impl Batch {
    fn line(&self, at: usize) -> (u64, &[u8]) {
        let (number, start, end) = self.lines[at];
        (number, &self.data[start..end])
    }
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
        scope.spawn(move || read_batches(input, MAX_LINE_BYTES, &send));
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
        let mut data = Vec::new();
        let mut lines = Vec::with_capacity(chunk.len());
        for (i, raw) in chunk.iter().enumerate() {
            let start = data.len();
            data.extend_from_slice(raw.get().as_bytes());
            lines.push((first + i as u64, start, data.len()));
        }
        let bytes = data.len() as u64;
        Ok(Batch { data, lines, bytes })
    });
    fold(evaluator, dataset, batches, sinks, started)
}

/// Read blocks of about [`BATCH_BYTES`] ending at a line end; a line
/// longer than [`MAX_LINE_BYTES`] keeps its first bytes (it is then not
/// valid JSON) and the rest is skipped, so memory stays bounded.
fn read_batches(
    mut input: impl BufRead,
    max_line: usize,
    send: &mpsc::SyncSender<std::io::Result<Batch>>,
) {
    let mut number = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    let mut skipping = false;
    let mut eof = false;
    while !eof || !carry.is_empty() {
        // `carry` holds no line end: the block's first one is ahead.
        let mut data = std::mem::take(&mut carry);
        let mut bytes = data.len() as u64;
        let mut open_start = 0; // where the last, unfinished, line starts
        let mut has_end = false;
        while !eof && (data.len() < BATCH_BYTES || !has_end) {
            let available = match input.fill_buf() {
                Ok(available) => available,
                Err(err) => {
                    let _ = send.send(Err(err));
                    return;
                }
            };
            if available.is_empty() {
                eof = true;
                break;
            }
            let taken = available.len();
            bytes += taken as u64;
            let mut chunk = available;
            if skipping {
                // The rest of an over-long line: drop up to its end.
                match memchr::memchr(b'\n', chunk) {
                    Some(end) => {
                        skipping = false;
                        chunk = &chunk[end..];
                    }
                    None => chunk = &[],
                }
            }
            let old = data.len();
            data.extend_from_slice(chunk);
            if let Some(last) = memchr::memrchr(b'\n', chunk) {
                open_start = old + last + 1;
                has_end = true;
            }
            if data.len() - open_start > max_line {
                data.truncate(open_start + max_line);
                skipping = true;
            }
            input.consume(taken);
        }
        // Whole lines go now; an unfinished last line waits for the next block.
        if !eof && has_end {
            carry = data.split_off(open_start);
            bytes -= carry.len() as u64;
        }
        let mut lines = Vec::new();
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &data) {
            number += 1;
            lines.push((number, start, end.min(start + max_line)));
            start = end + 1;
        }
        if start < data.len() {
            number += 1;
            lines.push((number, start, data.len().min(start + max_line)));
        }
        if !lines.is_empty() && send.send(Ok(Batch { data, lines, bytes })).is_err() {
            return;
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
        let checked: Vec<(u64, Checked, Vec<u8>)> = (0..batch.lines.len())
            .into_par_iter()
            .map(|at| {
                let (line, text) = batch.line(at);
                let outcome = evaluator.line(line, text);
                let out = if write_out {
                    out_line(line, &outcome)
                } else {
                    Vec::new()
                };
                let checked = match outcome {
                    Outcome::Blank => Checked::Blank,
                    Outcome::Verdict(verdict) => Checked::Facts(Facts::from(verdict)),
                    Outcome::Bad(bad) => Checked::Bad(bad),
                };
                (line, checked, out)
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

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Cursor};
    use std::sync::mpsc;

    use super::read_batches;

    #[test]
    fn an_over_long_line_keeps_its_head_and_the_next_line_survives() {
        let long = "x".repeat(1000);
        let text = format!("short\n{long}\nafter\n");
        for capacity in [3, 64, 4096] {
            let (send, receive) = mpsc::sync_channel(16);
            read_batches(
                BufReader::with_capacity(capacity, Cursor::new(text.clone())),
                10,
                &send,
            );
            drop(send);
            let mut lines = Vec::new();
            let mut bytes = 0;
            for batch in receive {
                let batch = batch.unwrap();
                bytes += batch.bytes;
                for at in 0..batch.lines.len() {
                    let (number, line) = batch.line(at);
                    lines.push((number, String::from_utf8(line.to_vec()).unwrap()));
                }
            }
            let expected = [
                (1, "short".to_owned()),
                (2, "x".repeat(10)),
                (3, "after".to_owned()),
            ];
            assert_eq!(lines, expected, "reads of {capacity}");
            assert_eq!(bytes, text.len() as u64, "every input byte is counted");
        }
    }
}
