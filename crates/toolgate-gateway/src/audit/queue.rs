//! The records waiting for the audit's writers: bounded, taken a group at
//! a time by whichever writer is free. A record wakes one idle writer and
//! no other thread: with several writers, a writer that is syncing its
//! group leaves the next one to a writer that is not.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use super::AuditRecord;

/// Most records in one group.
pub(crate) const MAX_BATCH: usize = 512;

/// Where a request learns whether its record is durable.
pub(crate) type Reply = oneshot::Sender<Result<(), String>>;

/// The queue between requests and writers.
#[derive(Debug)]
pub(crate) struct Queue {
    state: Mutex<State>,
    ready: Condvar,
    capacity: usize,
    /// Whether the writers run.
    open: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    jobs: VecDeque<(AuditRecord, Reply)>,
    closed: bool,
}

impl Queue {
    pub(crate) fn new(capacity: usize) -> Arc<Queue> {
        Arc::new(Queue {
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
            capacity,
            open: AtomicBool::new(true),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Add a record; refused at once when the queue is full or closed.
    pub(crate) fn push(&self, record: AuditRecord, reply: Reply) -> Result<(), String> {
        let mut state = self.state();
        if state.closed {
            return Err("the audit writer has stopped".to_owned());
        }
        if state.jobs.len() >= self.capacity {
            return Err(format!(
                "the audit writer has {} records waiting (is the disk stalled?)",
                self.capacity
            ));
        }
        state.jobs.push_back((record, reply));
        drop(state);
        self.ready.notify_one();
        Ok(())
    }

    /// Wait for a record, then take every record waiting, up to
    /// [`MAX_BATCH`], into `batch` and their replies into `replies` (both
    /// emptied first). False once the queue is closed and empty.
    pub(crate) fn group(&self, batch: &mut Vec<AuditRecord>, replies: &mut Vec<Reply>) -> bool {
        batch.clear();
        replies.clear();
        let state = self.state();
        let mut state = self
            .ready
            .wait_while(state, |s| s.jobs.is_empty() && !s.closed)
            .unwrap_or_else(PoisonError::into_inner);
        let take = state.jobs.len().min(MAX_BATCH);
        for (record, reply) in state.jobs.drain(..take) {
            batch.push(record);
            replies.push(reply);
        }
        let more = !state.jobs.is_empty();
        drop(state);
        if more {
            // A writer for the rest.
            self.ready.notify_one();
        }
        !batch.is_empty()
    }

    /// No record is taken any more; the writers finish those waiting.
    pub(crate) fn close(&self) {
        self.state().closed = true;
        self.ready.notify_all();
    }

    /// A writer has stopped: refuse every record from now on, and fail
    /// those waiting (their replies dropped).
    pub(crate) fn stopped(&self) {
        self.open.store(false, Ordering::SeqCst);
        let waiting = {
            let mut state = self.state();
            state.closed = true;
            std::mem::take(&mut state.jobs)
        };
        drop(waiting);
        self.ready.notify_all();
    }

    /// Whether the queue takes records and none waits.
    pub(crate) fn is_idle(&self) -> bool {
        let state = self.state();
        !state.closed && state.jobs.is_empty()
    }

    /// Whether the writers run.
    pub(crate) fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.state().jobs.len()
    }
}

/// Held by each writer: when it ends, however (a panic included), the
/// queue stops.
pub(crate) struct Stopped(pub(crate) Arc<Queue>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.stopped();
    }
}
