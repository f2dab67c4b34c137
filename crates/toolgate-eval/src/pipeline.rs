//! Checking batches on every core, and adding them in input order.
//!
//! Every thread of a run is a worker: it takes a free batch, fills it from
//! the input (one thread at a time), checks its lines, and hands it to the
//! fold. The calling thread is a worker too, and the fold: between its own
//! batches it adds every checked batch that is next in input order, writes
//! its `--out` lines and gives it back. No thread waits for a reader or a
//! fold to be scheduled, and a fixed number of batches exists, so memory
//! holds a few batches whatever the size of the dataset. When a worker is
//! slow with a batch (descheduled, a long line), the others go on with the
//! next ones, until every batch in use is checked and waits behind it.

use std::collections::BTreeMap;
use std::io;
use std::num::NonZeroUsize;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::aggregate::{Aggregate, RowHints};
use crate::batch::{Batch, Wanted};
use crate::run::{Progress, RunError, Sinks};
use crate::scenario::Evaluator;
use crate::summary::Summary;

/// Batches per worker: the one it checks, and enough checked ahead to
/// keep the others busy while one is descheduled for a few batches.
const BATCHES_PER_WORKER: usize = 4;

/// Check every batch that `fill` cuts from the input (it returns `false`
/// at the end) and fold them into a summary.
pub(crate) fn run(
    evaluator: &Evaluator,
    dataset: &str,
    fill: impl FnMut(&mut Batch) -> io::Result<bool> + Send,
    sinks: Sinks<'_>,
    started: Instant,
) -> Result<Summary, RunError> {
    let workers = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let shared = Shared {
        evaluator,
        wanted: Wanted {
            out: sinks.out.is_some(),
            junit: sinks.junit.is_some(),
        },
        hints: RowHints::default(),
        stop: AtomicBool::new(false),
        slots: Mutex::new(Slots {
            free: Vec::new(),
            made: 0,
            limit: BATCHES_PER_WORKER * workers + 2,
        }),
        freed: Condvar::new(),
        source: Mutex::new(Source {
            fill,
            seq: 0,
            done: false,
        }),
    };
    std::thread::scope(|scope| {
        let (to_fold, checked) = mpsc::channel();
        for _ in 1..workers {
            let (shared, to_fold) = (&shared, to_fold.clone());
            scope.spawn(move || shared.work(&to_fold));
        }
        drop(to_fold);
        // However the fold ends (done, an error, a panic), the workers stop.
        let _stop = StopOnExit(&shared);
        let mut fold = Fold {
            aggregate: Aggregate::new(dataset),
            sinks,
            progress: Progress::default(),
            ahead: BTreeMap::new(),
            next: 0,
        };
        fold.lead(&shared, &checked)?;
        fold.finish(started)
    })
}

/// What the threads of a run share.
struct Shared<'a, F> {
    evaluator: &'a Evaluator,
    wanted: Wanted,
    hints: RowHints,
    /// The run is over: whatever still runs ends.
    stop: AtomicBool,
    slots: Mutex<Slots>,
    /// A batch was given back (or the run stopped).
    freed: Condvar,
    /// The input, read by one thread at a time.
    source: Mutex<Source<F>>,
}

/// The batches not in use, and how many exist.
struct Slots {
    free: Vec<Batch>,
    made: usize,
    limit: usize,
}

struct Source<F> {
    fill: F,
    /// The number of the next batch.
    seq: u64,
    /// The input is read to its end (or failed).
    done: bool,
}

impl<F: FnMut(&mut Batch) -> io::Result<bool> + Send> Shared<'_, F> {
    /// A spawned worker: fill, check, hand to the fold, until the input
    /// ends or the run stops.
    fn work(&self, to_fold: &mpsc::Sender<Batch>) {
        while let Some(batch) = self.take(true) {
            let Some(mut batch) = self.fill(batch) else {
                return;
            };
            self.check(&mut batch);
            if to_fold.send(batch).is_err() {
                return;
            }
        }
    }

    /// A free batch; when every batch is in use, wait for one (`wait`) or
    /// return `None`, as after a stop.
    fn take(&self, wait: bool) -> Option<Batch> {
        let mut slots = lock(&self.slots);
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(batch) = slots.free.pop() {
                return Some(batch);
            }
            if slots.made < slots.limit {
                slots.made += 1;
                return Some(Batch::default());
            }
            if !wait {
                return None;
            }
            slots = self
                .freed
                .wait(slots)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn give_back(&self, batch: Batch) {
        lock(&self.slots).free.push(batch);
        self.freed.notify_one();
    }

    /// `batch` filled with the next lines, numbered; `None` (the batch
    /// given back) at the end of the input. A read error travels in its
    /// batch, to stop the fold where it happened.
    fn fill(&self, mut batch: Batch) -> Option<Batch> {
        let mut source = lock(&self.source);
        if source.done || self.stop.load(Ordering::Relaxed) {
            drop(source);
            self.give_back(batch);
            return None;
        }
        batch.seq = source.seq;
        source.seq += 1;
        match (source.fill)(&mut batch) {
            Ok(true) => Some(batch),
            Ok(false) => {
                source.done = true;
                drop(source);
                self.give_back(batch);
                None
            }
            Err(err) => {
                source.done = true;
                batch.lines.clear();
                batch.bytes = 0;
                batch.error = Some(err);
                Some(batch)
            }
        }
    }

    /// Check a batch's lines; a panic is kept for the fold to raise.
    fn check(&self, batch: &mut Batch) {
        if batch.error.is_none() {
            let checked = std::panic::catch_unwind(AssertUnwindSafe(|| {
                batch.check(self.evaluator, self.wanted, &self.hints, &self.stop);
            }));
            batch.panic = checked.err();
        }
    }
}

/// Stops the run when the fold ends, waking every waiting worker.
struct StopOnExit<'s, 'a, F>(&'s Shared<'a, F>);

impl<F> Drop for StopOnExit<'_, '_, F> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
        let _slots = lock(&self.0.slots);
        self.0.freed.notify_all();
    }
}

/// The summary being built, on the calling thread.
struct Fold<'s> {
    aggregate: Aggregate,
    sinks: Sinks<'s>,
    progress: Progress,
    /// Checked batches waiting for an earlier one (at most as many as
    /// there are batches).
    ahead: BTreeMap<u64, Batch>,
    /// The number of the next batch to add.
    next: u64,
}

impl Fold<'_> {
    /// Work and fold until every batch is added: check a batch of its own
    /// whenever one is free, else wait for the workers'.
    fn lead<F: FnMut(&mut Batch) -> io::Result<bool> + Send>(
        &mut self,
        shared: &Shared<'_, F>,
        checked: &mpsc::Receiver<Batch>,
    ) -> Result<(), RunError> {
        let mut reading = true;
        loop {
            while let Ok(batch) = checked.try_recv() {
                self.take(batch, shared)?;
            }
            if reading {
                if let Some(batch) = shared.take(false) {
                    match shared.fill(batch) {
                        Some(mut batch) => {
                            shared.check(&mut batch);
                            self.take(batch, shared)?;
                        }
                        None => reading = false,
                    }
                    continue;
                }
            }
            // Every batch is in use, or the input is read: the workers
            // hold the next one.
            let Ok(batch) = checked.recv() else {
                debug_assert!(self.ahead.is_empty(), "every batch is added");
                return Ok(());
            };
            self.take(batch, shared)?;
        }
    }

    /// Take a checked batch and add every batch that is next in order.
    fn take<F: FnMut(&mut Batch) -> io::Result<bool> + Send>(
        &mut self,
        batch: Batch,
        shared: &Shared<'_, F>,
    ) -> Result<(), RunError> {
        self.ahead.insert(batch.seq, batch);
        while let Some(mut batch) = self.ahead.remove(&self.next) {
            self.next += 1;
            self.add(&mut batch, &shared.hints)?;
            self.progress.lines += batch.lines.len() as u64;
            self.progress.bytes += batch.bytes;
            (self.sinks.progress)(self.progress);
            shared.give_back(batch);
        }
        Ok(())
    }

    /// Add one batch: its `--out` lines, its tally, its bad lines; under
    /// `--strict`, its lines up to the first bad one, then stop.
    fn add(&mut self, batch: &mut Batch, hints: &RowHints) -> Result<(), RunError> {
        if let Some(panic) = batch.panic.take() {
            std::panic::resume_unwind(panic);
        }
        if let Some(err) = batch.error.take() {
            return Err(RunError::Io(err));
        }
        let strict = self.sinks.strict;
        // Under `--strict`, the `--out` lines end with the first bad line's.
        let out = match batch.bad.first() {
            Some(&(_, end)) if strict => &batch.out[..end],
            _ => &batch.out[..],
        };
        if let Some(sink) = self.sinks.out.as_mut() {
            sink.write_all(out).map_err(RunError::Io)?;
        }
        if let Some(cases) = self.sinks.junit.as_mut() {
            cases.extend(&mut batch.cases);
        }
        if strict {
            if let Some((bad, _)) = batch.bad.drain(..).next() {
                return Err(RunError::Strict {
                    line: bad.line,
                    trace: bad.id.or(bad.name),
                    kind: bad.kind,
                    message: bad.message,
                });
            }
        }
        self.aggregate.add(&mut batch.tally, hints);
        for (bad, _) in batch.bad.drain(..) {
            self.aggregate.bad_line(bad);
        }
        Ok(())
    }

    fn finish(mut self, started: Instant) -> Result<Summary, RunError> {
        if let Some(sink) = self.sinks.out.as_mut() {
            sink.flush().map_err(RunError::Io)?;
        }
        Ok(self.aggregate.finish(started.elapsed().as_secs_f64()))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
