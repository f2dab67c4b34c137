//! A batch of lines and what checking it came to. A batch goes from the
//! reader to a worker, to the fold and back to the reader: its buffers (the
//! lines, the `--out` bytes, the tally) are reused, so how many batches
//! exist bounds the memory of a run.

use std::any::Any;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::aggregate::{RowHints, Tally};
use crate::junit::Case;
use crate::scenario::{Evaluator, Label, Outcome};
use crate::summary::BadLine;

/// A block of whole lines, then what their checks found.
#[derive(Default)]
pub(crate) struct Batch {
    /// Its place in the input: the fold adds batches in this order.
    pub(crate) seq: u64,
    /// The 1-based number of its first line.
    pub(crate) first: u64,
    /// The lines, in the first `filled` bytes.
    pub(crate) data: Vec<u8>,
    pub(crate) filled: usize,
    /// Where each line lies in `data`, without its line end.
    pub(crate) lines: Vec<(usize, usize)>,
    /// Input bytes the batch stands for (skipped bytes of an over-long
    /// line included).
    pub(crate) bytes: u64,
    /// Reading failed after the lines of this batch.
    pub(crate) error: Option<io::Error>,
    /// The `--out` lines of its lines, in order.
    pub(crate) out: Vec<u8>,
    pub(crate) tally: Tally,
    /// The lines that held no trace, each with where its `--out` line ends.
    pub(crate) bad: Vec<(BadLine, usize)>,
    /// One test case a line (`--junit`), in order.
    pub(crate) cases: Vec<Case>,
    /// A check panicked: the fold raises it again.
    pub(crate) panic: Option<Box<dyn Any + Send>>,
}

impl Batch {
    /// Check every line, writing `--out` lines when `sinks.out` and test
    /// cases when `sinks.junit`; stops early when `stop` is set (the run is
    /// over).
    pub(crate) fn check(
        &mut self,
        evaluator: &Evaluator,
        sinks: Wanted,
        hints: &RowHints,
        stop: &AtomicBool,
    ) {
        self.out.clear();
        self.bad.clear();
        self.cases.clear();
        for (at, &(start, end)) in self.lines.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let line = self.first + at as u64;
            // A passing verdict is built whole only for a sink that
            // writes it.
            let whole = sinks.out || sinks.junit;
            match evaluator.line_with(line, &self.data[start..end], whole) {
                Outcome::Blank => {}
                Outcome::Verdict(verdict, label) => {
                    let label = label.as_deref();
                    if sinks.out {
                        out_line(&mut self.out, line, label, "verdict", &verdict);
                    }
                    if sinks.junit {
                        self.cases.push(Case::of_verdict(line, label, &verdict));
                    }
                    self.tally.verdict(line, verdict, label, hints);
                }
                Outcome::Bad(bad) => {
                    if sinks.out {
                        out_line(&mut self.out, line, None, "error", &bad);
                    }
                    if sinks.junit {
                        self.cases.push(Case::of_bad_line(&bad));
                    }
                    self.bad.push((bad, self.out.len()));
                }
            }
        }
    }
}

/// What a run writes besides its summary.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted {
    pub(crate) out: bool,
    pub(crate) junit: bool,
}

/// Append `{"line": N, <the row's names>, "<key>": value}` and a line end
/// to `out`; only the line end when the value cannot be written.
fn out_line(
    out: &mut Vec<u8>,
    line: u64,
    label: Option<&Label>,
    key: &str,
    value: &impl Serialize,
) {
    let start = out.len();
    // Writing to a `Vec` cannot fail.
    let _ = write!(out, "{{\"line\":{line},");
    if let Some(label) = label {
        let names = [("id", label.id.as_deref()), ("name", label.name.as_deref())];
        for (field, text) in names {
            if let Some(text) = text {
                let _ = write!(out, "\"{field}\":");
                let _ = serde_json::to_writer(&mut *out, text);
                out.push(b',');
            }
        }
        if let Some(metadata) = &label.metadata {
            let _ = write!(out, "\"metadata\":{},", metadata.get());
        }
    }
    let _ = write!(out, "\"{key}\":");
    if serde_json::to_writer(&mut *out, value).is_ok() {
        out.push(b'}');
    } else {
        out.truncate(start);
    }
    out.push(b'\n');
}
