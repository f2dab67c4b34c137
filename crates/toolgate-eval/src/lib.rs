//! `toolgate eval`: score a dataset of agent traces against a policy.
//!
//! A dataset is JSON lines (one trace a line) or a JSON array. A trace is
//! any payload `toolgate::detect` reads, or `{"output": <payload>,
//! "policy": {...}}` whose policy keys override the base policy for that
//! trace. [`run`] streams the lines in batches, checks each batch on all
//! cores, and folds the verdicts in line order into a [`Summary`].

pub mod summary;

pub use summary::{BadLine, CodeStats, Summary, ToolStats, TraceRow};
