//! The audit log's writer thread (one: [`WRITERS`]) takes the records
//! waiting as one group when it is free, appends it, then syncs it. A record
//! that comes while a group is being synced waits for that sync to end,
//! then goes in the next group with every record that came meanwhile:
//! one `fdatasync` for them all. (With several writers, each group
//! appended while another syncs and synced at once, the syncs overlap
//! and each takes longer: see [`WRITERS`].)
//!
//! When the log's syncs take microseconds (a tmpfs, say), a record with
//! none waiting before it is committed on the request's own thread
//! ([`Pipeline::at_once`]): handing it to a writer and back cost the
//! request two thread wake-ups, each longer than the sync. One sync
//! slower than [`QUICK_SYNC`] sends records back to the writers, so a
//! request's thread never waits on a disk.
//!
//! Groups are answered in the order they were appended: a group is
//! released only once every group before it is durable. A sync that fails
//! fails its group and every group appended after it until the log has
//! rewound to where the failed group started (a later `fdatasync` may
//! report success for a file whose earlier error another one took).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::log::{LogStore, Shared};
use super::queue::{Queue, Reply, Stopped};
use super::AuditRecord;
use crate::metrics::AuditMetrics;

/// Writer threads: groups synced at once, at most. One: syncs that
/// overlap each take longer on a disk (two threads each writing and
/// syncing 4 KiB in a loop on the 2-core machine's disk: p50 0.158 ms and
/// p99 0.267 a sync, against 0.105 and 0.159 for one thread alone), and
/// the records that wait for one sync to end share the next. With the
/// audit on disk (`bench/gateway_ab.sh`, 8 alternated rounds each, at 1000
/// requests/s), one writer against three added at p50 +0.360 against
/// +0.491 ms (chat completions), +0.422 against +0.434 (Anthropic
/// messages), +0.489 against +0.503 (chat again) and +0.623 against
/// +0.564 (messages again, a noisier hour), the p99s within the noise;
/// as fast as answered (64 connections, 3 runs each), 7.7k to 8.4k
/// requests/s against 7.0k to 8.0k. No slower, one thread instead of
/// three, and more requests a second when the disk is the limit.
const WRITERS: usize = 1;
/// A sync at most this long may block the request's own thread: less
/// than one thread wake-up on a virtual machine, a few times the sync of
/// a tmpfs, a fraction of any disk's `fdatasync` (0.1 ms and more).
const QUICK_SYNC: Duration = Duration::from_micros(50);
/// Syncs in a row within [`QUICK_SYNC`] before records are committed on
/// the requests' threads.
const QUICK_STREAK: u32 = 64;
/// Room a log segment must have left for a record to be committed on the
/// request's thread: starting the next segment (a rename and a directory
/// sync, or a segment of zeros written when no spare is ready) is left
/// to the writers.
const AT_ONCE_ROOM: u64 = 64 << 10;

/// Start the writers of `log`, answering the records of `queue`.
pub(crate) fn spawn(
    log: LogStore,
    queue: &Arc<Queue>,
    metrics: &AuditMetrics,
) -> std::io::Result<Arc<Pipeline>> {
    let pipeline = Arc::new(Pipeline::new(log, Arc::clone(queue), metrics.clone()));
    for n in 0..WRITERS {
        let pipeline = Arc::clone(&pipeline);
        std::thread::Builder::new()
            // 15 bytes at most, as Linux keeps them (`toolgate-index`
            // is the indexer).
            .name(format!("toolgate-log-{n}"))
            .spawn(move || {
                let _stopped = Stopped(Arc::clone(&pipeline.queue));
                while pipeline.turn() {}
            })?;
    }
    Ok(pipeline)
}

pub(crate) struct Pipeline {
    queue: Arc<Queue>,
    /// Taken to append a group (never while waiting for records).
    intake: Mutex<Intake>,
    /// Taken after a sync (never while waiting for the intake), to answer
    /// groups in order.
    order: Mutex<Order>,
    /// Told how far the log is durable, in order, for the indexer.
    shared: Arc<Shared>,
    metrics: AuditMetrics,
    /// Syncs in a row within [`QUICK_SYNC`] (at most [`QUICK_STREAK`]).
    quick: AtomicU32,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("quick", &self.quick)
            .finish_non_exhaustive()
    }
}

struct Intake {
    log: LogStore,
    /// The next group's number.
    seq: u64,
}

#[derive(Default)]
struct Order {
    /// The next group to answer.
    next: u64,
    /// Groups synced (or failed) that wait for an earlier one.
    done: BTreeMap<u64, Synced>,
    /// The first group whose sync failed, while the groups after it are
    /// in doubt.
    failed: Option<u64>,
    /// The first group appended after the log rewound past the failure.
    resumed: Option<u64>,
    /// Where the log must rewind to, for the next append.
    rewind: Option<u64>,
}

struct Synced {
    /// Where the group ends when its sync succeeded; where it starts and
    /// why when it failed (no start when it was never written).
    outcome: Result<u64, (Option<u64>, String)>,
    replies: Vec<Reply>,
}

impl Pipeline {
    fn new(log: LogStore, queue: Arc<Queue>, metrics: AuditMetrics) -> Pipeline {
        Pipeline {
            shared: log.shared(),
            queue,
            intake: Mutex::new(Intake { log, seq: 0 }),
            order: Mutex::new(Order::default()),
            metrics,
            quick: AtomicU32::new(0),
        }
    }

    /// Gather, append, sync and answer one group; false when the queue
    /// has closed (or a writer died holding a lock).
    fn turn(&self) -> bool {
        let mut batch: Vec<AuditRecord> = Vec::new();
        let mut replies = Vec::new();
        if !self.queue.group(&mut batch, &mut replies) {
            return false;
        }
        let began = Instant::now();
        let Ok(intake) = self.intake.lock() else {
            return false;
        };
        self.commit(intake, &batch, replies, began)
    }

    /// Commit `record` on the caller's thread when the log's syncs are
    /// quick, no record waits for the writers, no writer is appending and
    /// the segment has room ([`AT_ONCE_ROOM`]):
    /// the answer, ready unless a group appended before it is still being
    /// synced. `None`: the writers are to commit it.
    pub(crate) fn at_once(
        &self,
        record: &AuditRecord,
    ) -> Option<oneshot::Receiver<Result<(), String>>> {
        if self.quick.load(Ordering::Relaxed) < QUICK_STREAK || !self.queue.is_idle() {
            return None;
        }
        let began = Instant::now();
        let intake = self.intake.try_lock().ok()?;
        if intake.log.room() < AT_ONCE_ROOM {
            return None;
        }
        let (reply, answer) = oneshot::channel();
        self.commit(intake, std::slice::from_ref(record), vec![reply], began);
        self.metrics.at_once.inc();
        Some(answer)
    }

    /// Append `batch` to the log held in `intake`, let go of it, sync the
    /// group and answer it; false if the order lock was poisoned.
    fn commit(
        &self,
        mut intake: MutexGuard<'_, Intake>,
        batch: &[AuditRecord],
        replies: Vec<Reply>,
        began: Instant,
    ) -> bool {
        let seq = intake.seq;
        intake.seq += 1;
        if let Some(at) = self.rewound(seq) {
            intake.log.rewind(at);
        }
        let appended = intake.log.append(batch);
        drop(intake);
        let outcome = match appended {
            Ok(group) => {
                let syncing = Instant::now();
                // A sync that panicked is a failed one: its group is
                // answered, so the groups after it are not left waiting.
                let synced = std::panic::catch_unwind(AssertUnwindSafe(|| group.sync()))
                    .unwrap_or_else(|_| Err("the audit log's sync panicked".to_owned()));
                self.timed(syncing.elapsed());
                synced
                    .map(|()| group.end)
                    .map_err(|err| (Some(group.start), err))
            }
            Err(err) => Err((None, err)),
        };
        self.metrics.group(batch.len(), began.elapsed());
        self.answer(seq, Synced { outcome, replies })
    }

    /// As if the last syncs had been quick.
    #[cfg(test)]
    pub(crate) fn take_as_quick(&self) {
        self.quick.store(QUICK_STREAK, Ordering::Relaxed);
    }

    /// Count a sync that took `took` towards (or against) the quick streak.
    fn timed(&self, took: Duration) {
        if took <= QUICK_SYNC {
            let streak = self.quick.load(Ordering::Relaxed);
            if streak < QUICK_STREAK {
                self.quick.store(streak + 1, Ordering::Relaxed);
            }
        } else {
            self.quick.store(0, Ordering::Relaxed);
        }
    }

    /// Before group `seq` is appended: where to rewind the log to, when a
    /// failed sync asks for it; `seq` is then the first group after it.
    fn rewound(&self, seq: u64) -> Option<u64> {
        let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        let at = order.rewind.take()?;
        order.resumed = Some(seq);
        Some(at)
    }

    /// Record group `seq` as synced, then answer every group whose turn
    /// has come; false if the order lock was poisoned.
    fn answer(&self, seq: u64, synced: Synced) -> bool {
        let Ok(mut order) = self.order.lock() else {
            return false;
        };
        order.done.insert(seq, synced);
        let mut durable = None;
        let mut answers = Vec::new();
        while let Some(synced) = {
            let next = order.next;
            order.done.remove(&next)
        } {
            let seq = order.next;
            order.next += 1;
            let outcome = order.settle(seq, synced.outcome);
            if let Ok(end) = outcome {
                durable = Some(end);
            }
            answers.push((synced.replies, outcome.map(drop)));
        }
        drop(order);
        // Durable first: a client that has its answer and then waits for
        // the index finds its record counted.
        if let Some(end) = durable {
            self.shared.durable_up_to(end);
        }
        for (replies, outcome) in answers {
            if let Err(err) = &outcome {
                tracing::error!(error = %err, records = replies.len(), "audit write failed");
            }
            for reply in replies {
                let _ = reply.send(outcome.clone());
            }
        }
        true
    }
}

impl Order {
    /// The outcome of group `seq`, answered in its turn: where it ends
    /// when it is durable. Its sync failing puts the groups appended after
    /// it in doubt, until the log rewinds.
    fn settle(
        &mut self,
        seq: u64,
        synced: Result<u64, (Option<u64>, String)>,
    ) -> Result<u64, String> {
        let doubt = self.failed.is_some_and(|failed| seq > failed)
            && self.resumed.is_none_or(|resumed| seq < resumed);
        match synced {
            Ok(_) if doubt => Err(
                "an earlier audit group failed to sync, and this one was written after it"
                    .to_owned(),
            ),
            Ok(end) => Ok(end),
            Err((start, err)) => {
                if let (Some(start), false) = (start, doubt) {
                    self.failed = Some(seq);
                    self.resumed = None;
                    self.rewind = Some(start);
                }
                Err(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(dir: &std::path::Path) -> Pipeline {
        let log = LogStore::open(&dir.join("log"), 0).unwrap();
        Pipeline::new(log, Queue::new(1), AuditMetrics::default())
    }

    fn group(
        outcome: Result<u64, (Option<u64>, String)>,
    ) -> (Synced, oneshot::Receiver<Result<(), String>>) {
        let (reply, answer) = oneshot::channel();
        let synced = Synced {
            outcome,
            replies: vec![reply],
        };
        (synced, answer)
    }

    /// A group synced before the one appended before it waits for it; a
    /// failed sync fails the groups appended after it until the log has
    /// rewound, and only what is answered as durable is told to the index.
    #[test]
    fn groups_are_answered_in_order_and_a_failure_fails_what_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let pipeline = pipeline(dir.path());
        let durable = || pipeline.shared.durable();
        let start = durable();

        let (second, mut second_answer) = group(Ok(start + 200));
        pipeline.answer(1, second);
        assert!(second_answer.try_recv().is_err(), "waits for group 0");
        let (first, mut first_answer) = group(Ok(start + 100));
        pipeline.answer(0, first);
        assert_eq!(first_answer.try_recv().unwrap(), Ok(()));
        assert_eq!(second_answer.try_recv().unwrap(), Ok(()));
        assert_eq!(durable(), start + 200);

        let (failed, mut failed_answer) = group(Err((Some(start + 200), "EIO".into())));
        pipeline.answer(2, failed);
        assert_eq!(failed_answer.try_recv().unwrap(), Err("EIO".into()));
        // Appended after the failure, before the rewind: in doubt.
        let (doubtful, mut doubtful_answer) = group(Ok(start + 300));
        pipeline.answer(3, doubtful);
        assert!(doubtful_answer.try_recv().unwrap().is_err());
        assert_eq!(durable(), start + 200);

        assert_eq!(pipeline.rewound(4), Some(start + 200));
        assert_eq!(pipeline.rewound(5), None);
        let (after, mut after_answer) = group(Ok(start + 250));
        pipeline.answer(4, after);
        assert_eq!(after_answer.try_recv().unwrap(), Ok(()));
        assert_eq!(durable(), start + 250);
    }

    /// Once syncs have been quick, a record none waits before is committed
    /// on the caller's thread, answered when every group before it is
    /// durable; a slow sync, a record waiting for the writers or a closed
    /// queue sends it to the writers instead.
    #[test]
    fn a_quick_log_commits_on_the_callers_thread() {
        let dir = tempfile::tempdir().unwrap();
        let pipeline = pipeline(dir.path());
        let start = pipeline.shared.durable();
        let record = AuditRecord::sample(1, 0);
        assert!(pipeline.at_once(&record).is_none(), "not quick yet");

        let quick = |pipeline: &Pipeline| {
            for _ in 0..QUICK_STREAK {
                pipeline.timed(Duration::from_micros(1));
            }
            assert_eq!(pipeline.quick.load(Ordering::Relaxed), QUICK_STREAK);
        };
        quick(&pipeline);
        let mut answer = pipeline.at_once(&record).unwrap();
        assert_eq!(answer.try_recv().unwrap(), Ok(()));
        assert!(pipeline.shared.durable() > start, "the record is durable");

        // Group 1 is appended while a writer still syncs group 0.
        quick(&pipeline);
        let seq = {
            let mut intake = pipeline.intake.lock().unwrap();
            intake.seq += 1;
            intake.seq - 1
        };
        let mut answer = pipeline.at_once(&record).unwrap();
        assert!(answer.try_recv().is_err(), "waits for the group before it");
        let (before, _) = group(Ok(pipeline.shared.durable()));
        pipeline.answer(seq, before);
        assert_eq!(answer.try_recv().unwrap(), Ok(()));

        quick(&pipeline);
        pipeline.timed(QUICK_SYNC + Duration::from_micros(1));
        assert!(pipeline.at_once(&record).is_none(), "a slow sync");

        quick(&pipeline);
        let (reply, _answer) = oneshot::channel();
        pipeline.queue.push(record.clone(), reply).unwrap();
        assert!(pipeline.at_once(&record).is_none(), "a record waits");
        let (mut batch, mut replies) = (Vec::new(), Vec::new());
        assert!(pipeline.queue.group(&mut batch, &mut replies));

        assert!(pipeline.at_once(&record).is_some());
        quick(&pipeline);
        let room = pipeline.intake.lock().unwrap().log.room();
        assert!(room >= AT_ONCE_ROOM);
        let filler = AuditRecord::sample(2, usize::try_from(room - AT_ONCE_ROOM / 2).unwrap());
        let (reply, _filled) = oneshot::channel();
        pipeline.queue.push(filler, reply).unwrap();
        assert!(pipeline.turn(), "a writer appends the filler");
        assert!(pipeline.intake.lock().unwrap().log.room() < AT_ONCE_ROOM);
        quick(&pipeline);
        assert!(
            pipeline.at_once(&record).is_none(),
            "the next segment is the writers'"
        );
        pipeline.queue.close();
        assert!(pipeline.at_once(&record).is_none(), "a closed queue");
    }
}
