//! `toolgate eval`: score a dataset of agent traces against a policy.
//!
//! A dataset is JSON lines (one trace a line) or a JSON array. A trace is
//! any payload `toolgate::detect` reads, or a row `{"output": <payload>,
//! "policy": {...}, "id", "name", "metadata"}` whose policy keys override
//! the base policy for that trace and whose names name it. An [`Evaluator`] holds the compiled policy; [`run_lines`] streams
//! the lines in batches, checks the batches on all cores, reducing each
//! verdict to counters on the core that made it, and folds the batches in
//! line order into a [`Summary`]; [`text`] prints it.

pub mod aggregate;
pub mod baseline;
mod batch;
pub mod junit;
mod pipeline;
mod read;
pub mod report;
pub mod run;
pub mod scenario;
pub mod summary;
pub mod text;

pub use run::{run_array, run_dataset, run_lines, Progress, RunError, Sinks};
pub use scenario::{Evaluator, Label, Options, Outcome};
pub use summary::{
    BadLine, CodeStats, DatasetDigest, PolicyDigest, Provenance, Summary, ToolStats, TraceRow,
};
