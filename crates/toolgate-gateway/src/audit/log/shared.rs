//! What the log's writer, its indexer and the requests waiting for the
//! index share: the segments on disk, how far the log is durable and how
//! far indexed, the spares, and why the index is stuck when it is.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::segments::{self, Dir, SEGMENT_BYTES, SPARES};

/// The state the writer, the indexer and the waiters share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(super) dir: Dir,
    state: Mutex<State>,
    /// The indexer waits here: for records, or out its pause. Told of a
    /// durable group only while it waits for records, so that a group
    /// written during its pause does not wake it for nothing (under load,
    /// that was one more thread switch per group).
    indexer: Condvar,
    /// Those waiting for the index ([`Shared::caught_up`]) wait here.
    changed: Condvar,
}

// Each flag is a separate fact the writer, the indexer and the waiters
// set and wait on under the one lock.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug)]
pub(super) struct State {
    /// The starts of the segments on disk, oldest first; the last is the
    /// one written.
    pub(super) segments: Vec<u64>,
    /// The size of the segment written.
    pub(super) capacity: u64,
    /// Where the last durable record ends.
    pub(super) durable: u64,
    /// Where the index's last record ends.
    pub(super) indexed: u64,
    /// Where the index's last record on disk ends (as of its last
    /// complete checkpoint): the log before it may go.
    pub(super) synced: u64,
    /// Spare slots ready to become a segment.
    pub(super) spares: Vec<usize>,
    /// Spare slots being made.
    pub(super) making: Vec<usize>,
    pub(super) writer_stopped: bool,
    pub(super) indexer_stopped: bool,
    /// Why the index could not take the last records, while it cannot.
    pub(super) index_error: Option<String>,
    /// Someone waits for the index: no pause before the next records.
    pub(super) hurry: bool,
    /// The indexer waits for records (not in its pause, not at work).
    pub(super) idle: bool,
}

/// What the indexer should do next.
pub(crate) enum Work {
    /// Index the records up to this position.
    Records(u64),
    /// Nothing new.
    Idle,
    /// The writer stopped and everything is indexed.
    Done,
}

fn relock<T>(guard: Result<T, PoisonError<T>>) -> T {
    guard.unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(super) fn new(dir: Dir, state: State) -> Shared {
        Shared {
            dir,
            state: Mutex::new(state),
            indexer: Condvar::new(),
            changed: Condvar::new(),
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        relock(self.state.lock())
    }

    /// Where the last durable record ends.
    #[cfg(test)]
    pub(crate) fn durable(&self) -> u64 {
        self.state().durable
    }

    /// Every record up to `position` is durable.
    pub(crate) fn durable_up_to(&self, position: u64) {
        let mut state = self.state();
        state.durable = state.durable.max(position);
        let idle = state.idle;
        drop(state);
        if idle {
            self.indexer.notify_one();
        }
    }

    /// The writer has stopped: no record comes any more.
    pub(super) fn writer_stopped(&self) {
        self.state().writer_stopped = true;
        self.indexer.notify_one();
        self.changed.notify_all();
    }

    pub(crate) fn segment_path(&self, start: u64) -> PathBuf {
        self.dir.segment(start)
    }

    pub(crate) fn dir_path(&self) -> &Path {
        self.dir.path()
    }

    /// Where the indexer starts.
    pub(crate) fn indexed(&self) -> u64 {
        self.state().indexed
    }

    /// The segment holding `position`: its start and the next segment's.
    pub(crate) fn segment_of(&self, position: u64) -> Option<(u64, Option<u64>)> {
        let state = self.state();
        let at = state.segments.partition_point(|&start| start <= position);
        let start = *state.segments.get(at.checked_sub(1)?)?;
        Some((start, state.segments.get(at).copied()))
    }

    /// Wait, at most `wait`, for records past `position`.
    pub(crate) fn work(&self, position: u64, wait: Duration) -> Work {
        let mut state = self.state();
        state.idle = true;
        let (mut state, _) = relock(
            self.indexer
                .wait_timeout_while(state, wait, |s| s.durable <= position && !s.writer_stopped),
        );
        state.idle = false;
        if state.durable > position {
            Work::Records(state.durable)
        } else if state.writer_stopped {
            Work::Done
        } else {
            Work::Idle
        }
    }

    /// The index holds every record up to `position`.
    pub(crate) fn index_reached(&self, position: u64) {
        let mut state = self.state();
        state.indexed = position;
        state.index_error = None;
        drop(state);
        self.changed.notify_all();
    }

    /// The index could not take the next records.
    pub(crate) fn index_failed(&self, why: String) {
        self.state().index_error = Some(why);
        self.changed.notify_all();
    }

    pub(crate) fn indexer_stopped(&self) {
        self.state().indexer_stopped = true;
        self.changed.notify_all();
    }

    /// How far the index is behind the log, in bytes.
    pub(crate) fn lag(&self) -> u64 {
        let state = self.state();
        state.durable.saturating_sub(state.indexed)
    }

    /// Durable log bytes the synced index does not cover yet (its
    /// checkpoint is behind them).
    pub(crate) fn unsynced(&self) -> u64 {
        let state = self.state();
        state.durable.saturating_sub(state.synced)
    }

    /// The indexer's pause between transactions: `wait`, or less when
    /// someone waits for the index or the writer stops.
    pub(crate) fn pause(&self, wait: Duration) {
        let state = self.state();
        let (mut state, _) = relock(
            self.indexer
                .wait_timeout_while(state, wait, |s| !s.hurry && !s.writer_stopped),
        );
        state.hurry = false;
    }

    /// Wait until the index holds every record durable now; an error when
    /// it cannot take them.
    pub(crate) fn caught_up(&self) -> Result<(), String> {
        let mut state = self.state();
        state.hurry = true;
        self.indexer.notify_one();
        let target = state.durable;
        let state = relock(self.changed.wait_while(state, |s| {
            s.indexed < target && s.index_error.is_none() && !s.indexer_stopped
        }));
        match &state.index_error {
            _ if state.indexed >= target => Ok(()),
            Some(why) => Err(format!("the audit index is behind its log: {why}")),
            None => Err("the audit indexer has stopped".to_owned()),
        }
    }

    /// The index is on disk up to `position`: take the segments wholly
    /// below it off the list, and make each a spare when a slot is free,
    /// else delete it.
    pub(crate) fn synced(&self, position: u64) {
        let old: Vec<u64> = {
            let mut state = self.state();
            state.synced = state.synced.max(position);
            let keep = state
                .segments
                .windows(2)
                .take_while(|pair| pair[1] <= position)
                .count();
            state.segments.drain(..keep).collect()
        };
        for start in old {
            let path = self.dir.segment(start);
            let full = std::fs::metadata(&path).is_ok_and(|m| m.len() == SEGMENT_BYTES);
            let slot = if full { self.free_slot() } else { None };
            let kept = slot.is_some_and(|slot| {
                let renamed = std::fs::rename(&path, self.dir.spare(slot)).is_ok();
                self.slot_done(slot, renamed);
                renamed
            });
            if !kept {
                if let Err(err) = std::fs::remove_file(&path) {
                    tracing::warn!(error = %err, path = %path.display(), "cannot remove an indexed audit log segment");
                }
            }
        }
    }

    /// Make a spare when none is ready and the segment written is half
    /// full, so the writer never waits for one.
    pub(crate) fn prepare_spare(&self) {
        let wanted = {
            let state = self.state();
            let written = state.durable - state.segments.last().copied().unwrap_or(0);
            state.spares.is_empty() && state.making.is_empty() && written >= state.capacity / 2
        };
        if let Some(slot) = wanted.then(|| self.free_slot()).flatten() {
            let made = segments::zeroed(&self.dir.spare(slot), SEGMENT_BYTES);
            if let Err(err) = &made {
                tracing::warn!(error = %err, "cannot make a spare audit log segment");
            }
            self.slot_done(slot, made.is_ok());
        }
    }

    /// A spare slot neither ready nor being made, now being made.
    fn free_slot(&self) -> Option<usize> {
        let mut state = self.state();
        let slot = (0..SPARES).find(|s| !state.spares.contains(s) && !state.making.contains(s))?;
        state.making.push(slot);
        Some(slot)
    }

    fn slot_done(&self, slot: usize, ready: bool) {
        let mut state = self.state();
        state.making.retain(|&s| s != slot);
        if ready {
            state.spares.push(slot);
        }
    }
}
