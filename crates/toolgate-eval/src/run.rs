//! Reading a dataset and checking it on all cores, in constant memory: the
//! layout of the input (JSON lines, streamed in batches read straight into
//! reused buffers, or one JSON document), what a run writes besides its
//! summary, and why it stops. The pipeline (`pipeline.rs`) checks the
//! batches on every core and adds them in input order, so `--out` lines
//! come out in input order.

use std::io::{self, Read, Write};
use std::time::Instant;

use serde_json::value::RawValue;

use crate::junit::Cases;
use crate::pipeline;
use crate::read::{ItemReader, LineReader, Sizes};
use crate::scenario::Evaluator;
use crate::summary::Summary;

/// Bytes a batch reads: a few milliseconds of checks, so that the last
/// batches of a run keep every core busy too.
const BATCH_BYTES: usize = 256 << 10;
/// The longest line read; a longer one is a bad line, not an allocation
/// of any size.
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// How much of the input is read to tell JSON lines from one document:
/// its first line, up to this many bytes.
const HEAD_BYTES: usize = 1 << 20;

const SIZES: Sizes = Sizes {
    batch: BATCH_BYTES,
    max_line: MAX_LINE_BYTES,
};

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
        /// The row's id or name, when the line was a row that had one.
        trace: Option<String>,
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
                trace,
                kind,
                message,
            } => match trace {
                Some(trace) => write!(f, "line {line} ({trace}): {kind}: {message}"),
                None => write!(f, "line {line}: {kind}: {message}"),
            },
        }
    }
}

impl std::error::Error for RunError {}

/// What the run does besides summarising.
pub struct Sinks<'a> {
    /// One verdict (or error) per line, in order (`--out`).
    pub out: Option<&'a mut dyn Write>,
    /// One test case per line that is not blank, in order (`--junit`).
    pub junit: Option<&'a mut Cases>,
    /// Called after each batch.
    pub progress: &'a mut dyn FnMut(Progress),
    /// Stop at the first line that holds no trace.
    pub strict: bool,
}

/// Check every trace of a JSON-lines `input`.
pub fn run_lines(
    evaluator: &Evaluator,
    dataset: &str,
    input: impl Read + Send,
    sinks: Sinks<'_>,
) -> Result<Summary, RunError> {
    let started = Instant::now();
    let mut reader = LineReader::new(input, SIZES);
    pipeline::run(
        evaluator,
        dataset,
        |batch| reader.fill(batch),
        sinks,
        started,
    )
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
        .map_err(|err| RunError::Io(io::Error::new(io::ErrorKind::InvalidData, err)))?;
    let mut reader = ItemReader::new(&items, SIZES);
    pipeline::run(
        evaluator,
        dataset,
        |batch| Ok(reader.fill(batch)),
        sinks,
        started,
    )
}

/// Check a dataset whatever its layout: JSON lines, or one JSON document
/// (an array of traces, or a single trace). `json_document` says the input
/// is one document (a `.json` file); otherwise an input whose first line is
/// an incomplete array is read as one document too (a pretty-printed array),
/// and anything else as JSON lines, streamed.
pub fn run_dataset(
    evaluator: &Evaluator,
    dataset: &str,
    mut input: impl Read + Send,
    json_document: bool,
    sinks: Sinks<'_>,
) -> Result<Summary, RunError> {
    let head = read_head(&mut input).map_err(RunError::Io)?;
    let first = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map(|at| head[at]);
    let document = match first {
        Some(b'[') => {
            json_document || {
                let line = memchr::memchr(b'\n', &head).map_or(&head[..], |end| &head[..end]);
                serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err()
            }
        }
        Some(_) => json_document,
        None => false,
    };
    if !document {
        return run_lines(
            evaluator,
            dataset,
            io::Cursor::new(head).chain(input),
            sinks,
        );
    }
    let mut bytes = head;
    input.read_to_end(&mut bytes).map_err(RunError::Io)?;
    let text = String::from_utf8(bytes)
        .map_err(|err| RunError::Io(io::Error::new(io::ErrorKind::InvalidData, err)))?;
    if text.trim_start().starts_with('[') {
        run_array(evaluator, dataset, &text, sinks)
    } else {
        // One trace.
        let one = format!("[{text}]");
        run_array(evaluator, dataset, &one, sinks)
    }
}

/// The input up to its first line end (included), at most [`HEAD_BYTES`]
/// (or a little more), or all of it.
fn read_head(input: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut chunk = [0; 8 << 10];
    while head.len() < HEAD_BYTES {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        head.extend_from_slice(&chunk[..n]);
        if memchr::memchr(b'\n', &chunk[..n]).is_some() {
            break;
        }
    }
    Ok(head)
}
