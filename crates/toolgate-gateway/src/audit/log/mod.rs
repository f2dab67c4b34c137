//! The audit log: the durable record of `audit.sqlite`. Records are
//! appended in groups, each group one sequential write and one
//! `fdatasync`, before any request of the group is released; the SQLite
//! file is an index built from the log behind it ([`super::index`]).
//!
//! The log is a directory of segments (`<audit.sqlite>-log/`), each full
//! of zeros or of old records when it starts; records are framed with
//! their own position and a checksum ([`frame`]), so a write the machine
//! did not finish is found and cut when the gateway starts again. Writing
//! resumes in a new segment where the last whole record ends, and the
//! index catches up with every record past its own position: nothing a
//! client saw is lost to a crash. Segments whose records are indexed (and
//! the index synced) become spares or are deleted, so the log holds little
//! more than what the index has not taken yet; that is bounded too: past
//! [`MAX_BACKLOG`] bytes not indexed, writes fail and nothing is released.

mod frame;
mod segments;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub(crate) use self::segments::SegmentReader;
use self::segments::{Dir, FIRST_SEGMENT_BYTES, SEGMENT_BYTES, SPARES};
use super::{AuditRecord, AuditStore};

/// Log bytes not yet indexed past which records are refused.
pub(crate) const MAX_BACKLOG: u64 = 512 << 20;

/// The state the writer, the indexer and the waiters share.
#[derive(Debug)]
pub(crate) struct Shared {
    dir: Dir,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug)]
struct State {
    /// The starts of the segments on disk, oldest first; the last is the
    /// one written.
    segments: Vec<u64>,
    /// The size of the segment written.
    capacity: u64,
    /// Where the last durable record ends.
    durable: u64,
    /// Where the index's last record ends.
    indexed: u64,
    /// Spare slots ready to become a segment.
    spares: Vec<usize>,
    /// Spare slots being made.
    making: Vec<usize>,
    writer_stopped: bool,
    indexer_stopped: bool,
    /// Why the index could not take the last records, while it cannot.
    index_error: Option<String>,
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
    fn state(&self) -> MutexGuard<'_, State> {
        relock(self.state.lock())
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
        let state = self.state();
        let (state, _) = relock(
            self.changed
                .wait_timeout_while(state, wait, |s| s.durable <= position && !s.writer_stopped),
        );
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

    /// Wait until the index holds every record durable now; an error when
    /// it cannot take them.
    pub(crate) fn caught_up(&self) -> Result<(), String> {
        let state = self.state();
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

    /// Take the segments wholly below `position` (indexed and synced) off
    /// the list, and make each a spare when a slot is free, else delete it.
    pub(crate) fn recycle(&self, position: u64) {
        let old: Vec<u64> = {
            let mut state = self.state();
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

/// The writer's end of the log: an [`AuditStore`] whose `write` is one
/// sequential write and one `fdatasync` per group of records.
#[derive(Debug)]
pub(crate) struct LogStore {
    shared: Arc<Shared>,
    file: File,
    /// The position of the segment written, and its size.
    start: u64,
    capacity: u64,
    /// Where the next record goes.
    next: u64,
    /// The last write or sync failed: what the segment holds past `next`
    /// is unknown, so the next group starts a new segment.
    damaged: bool,
    frames: Vec<u8>,
    json: Vec<u8>,
}

impl Drop for LogStore {
    fn drop(&mut self) {
        self.shared.state().writer_stopped = true;
        self.shared.changed.notify_all();
    }
}

impl LogStore {
    /// Open the log at `path`, whose index holds every record up to
    /// `indexed`: find where its records end (a torn tail is cut there),
    /// check that every record the index lacks can be read, and start a
    /// new segment at the end.
    pub(crate) fn open(path: &Path, indexed: u64) -> Result<LogStore, String> {
        let dir = Dir::open(path)?;
        let listing = dir.list()?;
        let mut segments = listing.segments;
        let from = match segments.first() {
            Some(&first) if indexed < first => {
                tracing::warn!(indexed, first, path = %path.display(),
                    "the audit index is behind the oldest log segment: records between are lost to it");
                first
            }
            _ => indexed,
        };
        let end = verify(&dir, &segments, from)?;
        if segments.last() == Some(&end) {
            // A segment with no whole record: made just before a crash.
            let fail = |err: std::io::Error| format!("audit log `{}`: {err}", path.display());
            std::fs::remove_file(dir.segment(end)).map_err(fail)?;
            segments.pop();
        }
        let shared = Arc::new(Shared {
            dir,
            state: Mutex::new(State {
                segments,
                capacity: 0,
                durable: end,
                indexed: from,
                spares: listing.spares,
                making: Vec::new(),
                writer_stopped: false,
                indexer_stopped: false,
                index_error: None,
            }),
            changed: Condvar::new(),
        });
        let (file, capacity) = start_segment(&shared, end)?;
        Ok(LogStore {
            shared,
            file,
            start: end,
            capacity,
            next: end,
            damaged: false,
            frames: Vec::new(),
            json: Vec::new(),
        })
    }

    pub(crate) fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.shared)
    }

    /// Go on in a new segment.
    fn begin(&mut self) -> Result<(), String> {
        let (file, capacity) = start_segment(&self.shared, self.next)?;
        self.file = file;
        self.start = self.next;
        self.capacity = capacity;
        self.damaged = false;
        Ok(())
    }

    /// Refuse records while the index is too far behind.
    fn check_backlog(&self) -> Result<(), String> {
        let state = self.shared.state();
        let behind = self.next.saturating_sub(state.indexed);
        if behind <= MAX_BACKLOG {
            return Ok(());
        }
        let why = state
            .index_error
            .as_deref()
            .unwrap_or("it is not keeping up");
        Err(format!(
            "the audit index is {} MiB behind its log ({why}); nothing is released until it catches up",
            behind >> 20
        ))
    }
}

impl AuditStore for LogStore {
    fn write(&mut self, batch: &[AuditRecord]) -> Result<(), String> {
        self.check_backlog()?;
        self.frames.clear();
        for record in batch {
            self.json.clear();
            serde_json::to_writer(&mut self.json, record).map_err(|err| err.to_string())?;
            let at = self.next + self.frames.len() as u64;
            frame::encode(&mut self.frames, at, &self.json)?;
        }
        let used = self.next - self.start;
        if self.damaged || (used > 0 && used + self.frames.len() as u64 > self.capacity) {
            self.begin()?;
        }
        let written = self
            .file
            .write_all_at(&self.frames, self.next - self.start)
            .and_then(|()| self.file.sync_data());
        if let Err(err) = written {
            self.damaged = true;
            return Err(format!(
                "audit log `{}`: {err}",
                self.shared.dir.segment(self.start).display()
            ));
        }
        self.next += self.frames.len() as u64;
        if self.frames.capacity() > 4 << 20 {
            self.frames = Vec::new();
        }
        self.shared.state().durable = self.next;
        self.shared.changed.notify_all();
        Ok(())
    }
}

/// A new segment at `position`, on disk with its name: a spare renamed,
/// else a small one made now. The file and its size.
fn start_segment(shared: &Shared, position: u64) -> Result<(File, u64), String> {
    let path = shared.dir.segment(position);
    let fail = |err: std::io::Error| format!("audit log `{}`: {err}", path.display());
    // A damaged segment at this very position is replaced, not reused.
    match std::fs::remove_file(&path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(fail(err)),
        _ => {}
    }
    let spare = shared.state().spares.pop();
    let file = match spare {
        Some(slot) => std::fs::rename(shared.dir.spare(slot), &path)
            .and_then(|()| OpenOptions::new().read(true).write(true).open(&path)),
        None => segments::zeroed(&path, FIRST_SEGMENT_BYTES),
    }
    .map_err(fail)?;
    let capacity = file.metadata().map_err(fail)?.len();
    shared.dir.sync().map_err(fail)?;
    let mut state = shared.state();
    if state.segments.last() != Some(&position) {
        state.segments.push(position);
    }
    state.capacity = capacity;
    Ok((file, capacity))
}

/// Read every record from `from` on: each segment but the last must hold
/// whole records up to the next one's start; the last ends at its first
/// place without a whole record. Where the records end.
fn verify(dir: &Dir, segments: &[u64], from: u64) -> Result<u64, String> {
    let mut end = from;
    let mut payload = Vec::new();
    for (at, &start) in segments.iter().enumerate() {
        let next = segments.get(at + 1).copied();
        if next.is_some_and(|next| next <= from) {
            continue;
        }
        let path = dir.segment(start);
        let fail = |err: std::io::Error| format!("audit log `{}`: {err}", path.display());
        let mut reader = SegmentReader::open(&path, start, from.max(start)).map_err(fail)?;
        while next.is_none_or(|next| reader.position() < next)
            && reader.next(&mut payload).map_err(fail)?
        {}
        if next.is_some_and(|next| reader.position() != next) {
            return Err(damaged(dir.path(), &path, reader.position() - start));
        }
        end = reader.position();
    }
    Ok(end.max(from))
}

/// The error of a segment whose records stop before its end.
pub(crate) fn damaged(dir: &Path, segment: &Path, at: u64) -> String {
    format!(
        "audit log segment `{}` is damaged: no whole record at byte {at}; the records after it \
         cannot be indexed. Move `{}` away to start a new log (the index keeps what it holds)",
        segment.display(),
        dir.display()
    )
}

#[cfg(test)]
mod tests;
