//! The indexer: one thread that fills the SQLite index from the audit log
//! behind the requests, never on their path.
//!
//! It takes every durable record past the index's position and inserts
//! them with the new position in one transaction; after a transaction it
//! pauses (unless someone waits for the index), so that under load each
//! takes the records of [`PAUSE`]. A [`CHECKPOINT_EVERY`] after the last
//! checkpoint that had records to cover, it syncs the index, then lets go
//! of the log segments the synced index covers, and makes a spare segment
//! when the writer will soon need one. At startup it begins where the
//! index stopped, so the records a crash left out of the index are taken
//! first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::log::{self, Shared, Work};
use super::sqlite::SqliteIndex;
use crate::metrics::AuditMetrics;

/// How soon after records are indexed the index is synced and the
/// segments it covers let go. Small on purpose: the log's `fdatasync`
/// waits behind whatever the disk was given before it, so the index's
/// writes go out in small steps rather than in bursts. At 1000 records a
/// second (`bench/gateway.sh`'s fixed rate, audit on disk), syncing every
/// second put 2.8 to 4.2 ms on a request's p99; every 100 ms, 2.0 to 2.6;
/// every 20 ms, 1.5 to 1.9 (direct: 0.57), though the index then writes
/// 25 MB/s to the disk rather than 17 (less is gathered into each page
/// write). Every 5 ms was no better.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(20);
/// With nothing new to sync: how often the indexer looks again (a
/// checkpoint a reader held back is tried again, a spare segment made).
const IDLE_CHECK: Duration = Duration::from_secs(1);
/// The pause after a transaction, so that under load one transaction
/// takes many records: each transaction writes every page it changed. As
/// short as the checkpoints, which only sync what was committed. A
/// request waiting for the index ([`Shared::caught_up`]) cuts it short.
const PAUSE: Duration = Duration::from_millis(20);
/// After a failure, the wait before trying again.
const RETRY: Duration = Duration::from_millis(500);
/// Log bytes read at most per transaction.
const READ_AT_MOST: u64 = 4 << 20;
/// The indexer's nice value: when the cores are busy, the requests' own
/// threads (the runtime's, the audit writer) go first.
const NICE: i32 = 10;

/// Start the indexer of `shared`'s log into `index`.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    index: SqliteIndex,
    metrics: AuditMetrics,
) -> Result<(), String> {
    let position = shared.indexed();
    let indexer = Indexer {
        shared,
        index,
        position,
        // Nothing is let go before a checkpoint of this run completes.
        synced: 0,
        checkpointed: Instant::now(),
        checkpointed_at: position,
        metrics,
    };
    std::thread::Builder::new()
        // Linux keeps 15 bytes of a thread's name: short enough to tell
        // the indexer from the log's writers in `top -H` and `perf`.
        .name("toolgate-index".into())
        .spawn(move || {
            let me = rustix::thread::gettid();
            if let Err(err) = rustix::process::setpriority_process(Some(me), NICE) {
                tracing::debug!(error = %err, "cannot lower the audit indexer's priority");
            }
            // A short slice inherited from the thread that started it
            // (`toolgate serve --sched-slice`) is for the requests' threads:
            // the indexer's long transactions take the kernel's default.
            if let Err(err) = toolgate_sched::set_slice(None) {
                tracing::debug!(error = %err, "cannot give back the audit indexer's slice");
            }
            indexer.run();
        })
        .map(drop)
        .map_err(|err| format!("cannot start the audit indexer: {err}"))
}

struct Indexer {
    shared: Arc<Shared>,
    index: SqliteIndex,
    /// Where the last record indexed ends.
    position: u64,
    /// Where the last record indexed and synced ends.
    synced: u64,
    /// When the last checkpoint was tried, and where the records indexed
    /// then ended.
    checkpointed: Instant,
    checkpointed_at: u64,
    metrics: AuditMetrics,
}

impl Indexer {
    fn run(mut self) {
        loop {
            match self.shared.work(self.position, self.until_checkpoint()) {
                Work::Records(durable) => match self.take(durable) {
                    Ok(()) => self.shared.pause(PAUSE),
                    Err(err) => {
                        tracing::error!(error = %err, "the audit index cannot take the log's records");
                        self.shared.index_failed(err);
                        std::thread::sleep(RETRY);
                    }
                },
                Work::Idle => {}
                Work::Done => {
                    self.maintain();
                    break;
                }
            }
            if self.until_checkpoint().is_zero() {
                self.maintain();
            }
        }
        self.shared.indexer_stopped();
    }

    /// How long until the next checkpoint is due: [`CHECKPOINT_EVERY`]
    /// after the last when records were indexed since, else
    /// [`IDLE_CHECK`] after it.
    fn until_checkpoint(&self) -> Duration {
        let every = if self.position > self.checkpointed_at {
            CHECKPOINT_EVERY
        } else {
            IDLE_CHECK
        };
        every.saturating_sub(self.checkpointed.elapsed())
    }

    /// Index the records from the position on, up to `durable` and at
    /// most [`READ_AT_MOST`] bytes of them, in one transaction.
    fn take(&mut self, durable: u64) -> Result<(), String> {
        let mut records = Vec::new();
        let mut to = self.position;
        while to < durable && to - self.position < READ_AT_MOST {
            let (start, next) = self
                .shared
                .segment_of(to)
                .ok_or_else(|| format!("the audit log has no segment holding position {to}"))?;
            let path = self.shared.segment_path(start);
            let fail = |err: std::io::Error| format!("audit log `{}`: {err}", path.display());
            let end = next.map_or(durable, |next| next.min(durable));
            let mut reader = log::SegmentReader::open(&path, start, to, Some(end)).map_err(fail)?;
            while reader.position() < end && reader.position() - self.position < READ_AT_MOST {
                let mut payload = Vec::new();
                if !reader.next(&mut payload).map_err(fail)? {
                    return Err(log::damaged(
                        self.shared.dir_path(),
                        &path,
                        reader.position() - start,
                    ));
                }
                records.push(payload);
            }
            to = reader.position();
        }
        // Between two records the indexer yields its core to any thread
        // waiting for it: a transaction of a few hundred microseconds
        // would otherwise hold a request's thread, woken on this core,
        // until the scheduler ends the indexer's turn.
        self.index.insert(&records, to, std::thread::yield_now)?;
        self.position = to;
        self.shared.index_reached(to);
        self.metrics.index_behind(&self.shared);
        Ok(())
    }

    /// Sync the index; let go of the segments it covers; make a spare.
    fn maintain(&mut self) {
        self.checkpointed = Instant::now();
        self.checkpointed_at = self.position;
        match self.index.checkpoint() {
            Ok(true) => self.synced = self.position,
            Ok(false) => {}
            Err(err) => tracing::warn!(error = %err, "audit index checkpoint failed"),
        }
        self.shared.synced(self.synced);
        self.shared.prepare_spare();
        self.metrics.index_behind(&self.shared);
    }
}
