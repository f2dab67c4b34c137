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
mod shared;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

pub(crate) use self::segments::SegmentReader;
use self::segments::{Dir, FIRST_SEGMENT_BYTES, PAGE};
use self::shared::State;
pub(crate) use self::shared::{Shared, Work};
use super::{AuditRecord, AuditStore};

/// Log bytes not yet indexed past which records are refused.
pub(crate) const MAX_BACKLOG: u64 = 512 << 20;

/// The writer's end of the log. [`LogStore::append`] writes a group of
/// records at the end (one sequential write), [`Appended::sync`] makes it
/// durable (one `fdatasync`), and groups may be synced while later ones
/// are appended; [`LogStore::rewind`] takes back what a failed sync left
/// in doubt. As an [`AuditStore`], it does both in turn.
#[derive(Debug)]
pub(crate) struct LogStore {
    shared: Arc<Shared>,
    file: Arc<File>,
    /// The position of the segment written, and its size.
    start: u64,
    capacity: u64,
    /// Where the next record goes.
    next: u64,
    /// A write failed, or a sync: what the segment holds past `next` is
    /// unknown, so the next group starts a new segment.
    damaged: bool,
    /// What the segment holds from the start of the page `next` is in up
    /// to `next`: written again with each group, so that every write is
    /// of whole pages.
    page: Vec<u8>,
    /// The pages of the group being written.
    pages: Vec<u8>,
    json: Vec<u8>,
}

/// A group written, to be synced.
#[derive(Debug)]
pub(crate) struct Appended {
    file: Arc<File>,
    /// Where the group starts and ends in the log.
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl Appended {
    /// Make the group durable, and every group written before it in its
    /// segment (`fdatasync` flushes the whole file).
    pub(crate) fn sync(&self) -> Result<(), String> {
        self.file
            .sync_data()
            .map_err(|err| format!("audit log: {err}"))
    }
}

impl Drop for LogStore {
    fn drop(&mut self) {
        self.shared.writer_stopped();
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
        let shared = Arc::new(Shared::new(
            dir,
            State {
                segments: std::mem::take(&mut segments),
                capacity: 0,
                durable: end,
                indexed: from,
                synced: from,
                spares: listing.spares,
                making: Vec::new(),
                writer_stopped: false,
                indexer_stopped: false,
                index_error: None,
                hurry: false,
                idle: false,
            },
        ));
        let (file, capacity) = start_segment(&shared, end)?;
        Ok(LogStore {
            shared,
            file: Arc::new(file),
            start: end,
            capacity,
            next: end,
            damaged: false,
            page: Vec::with_capacity(PAGE),
            pages: Vec::new(),
            json: Vec::new(),
        })
    }

    /// Bytes the segment written can still take before the next group
    /// starts a new one (none when it is damaged).
    pub(crate) fn room(&self) -> u64 {
        if self.damaged {
            return 0;
        }
        self.capacity
            .saturating_sub(self.next.saturating_sub(self.start))
    }

    pub(crate) fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.shared)
    }

    /// Frame `batch` and write it where the log ends, in a new segment
    /// when the one written is damaged or too full. Not durable yet.
    pub(crate) fn append(&mut self, batch: &[AuditRecord]) -> Result<Appended, String> {
        self.check_backlog()?;
        let mut frames = std::mem::take(&mut self.pages);
        frames.clear();
        for record in batch {
            self.json.clear();
            serde_json::to_writer(&mut self.json, record).map_err(|err| err.to_string())?;
            let at = self.next + frames.len() as u64;
            frame::encode(&mut frames, at, &self.json)?;
        }
        let len = frames.len() as u64;
        // A rewound log (damaged) may be before the segment's start.
        let full = |used: u64| used > 0 && used + len > self.capacity;
        if self.damaged || full(self.next - self.start) {
            let (file, capacity) = start_segment(&self.shared, self.next)?;
            self.file = Arc::new(file);
            self.start = self.next;
            self.capacity = capacity;
            self.damaged = false;
            self.page.clear();
        }
        // The partial page again, the frames, zeros to the page's end.
        frames.splice(0..0, self.page.iter().copied());
        let used = frames.len();
        frames.resize(used.div_ceil(PAGE) * PAGE, 0);
        let first = self.next - self.start - self.page.len() as u64;
        let written = frames
            .chunks(PAGE)
            .zip((first..).step_by(PAGE))
            .try_for_each(|(page, offset)| self.file.write_all_at(page, offset));
        if let Err(err) = written {
            self.damaged = true;
            self.pages = frames;
            return Err(format!(
                "audit log `{}`: {err}",
                self.shared.dir.segment(self.start).display()
            ));
        }
        let start = self.next;
        self.next += len;
        self.page.clear();
        self.page
            .extend_from_slice(&frames[used / PAGE * PAGE..used]);
        if frames.capacity() <= 4 << 20 {
            self.pages = frames;
        }
        Ok(Appended {
            file: Arc::clone(&self.file),
            start,
            end: self.next,
        })
    }

    /// The sync of the group written at `at` failed: it, and every group
    /// written after it, are in doubt. The next group is written at `at`,
    /// in a new segment.
    pub(crate) fn rewind(&mut self, at: u64) {
        if at < self.next {
            self.next = at;
            self.damaged = true;
        }
    }

    /// Every record up to `end` is durable: the indexer may take them.
    pub(crate) fn publish(&self, end: u64) {
        self.shared.durable_up_to(end);
    }

    /// Refuse records while the log holds too much that the index does
    /// not hold on disk: the log may not grow without end.
    fn check_backlog(&self) -> Result<(), String> {
        let state = self.shared.state();
        let behind = self.next.saturating_sub(state.synced);
        if behind <= MAX_BACKLOG {
            return Ok(());
        }
        let why = match &state.index_error {
            Some(why) => why.as_str(),
            None if state.indexed > state.synced => {
                "its checkpoints do not complete: does a reader keep a transaction open on it?"
            }
            None => "it is not keeping up",
        };
        Err(format!(
            "the audit index is {} MiB behind its log ({why}); nothing is released until it catches up",
            behind >> 20
        ))
    }
}

impl AuditStore for LogStore {
    fn write(&mut self, batch: &[AuditRecord]) -> Result<(), String> {
        let appended = self.append(batch)?;
        if let Err(err) = appended.sync() {
            self.rewind(appended.start);
            return Err(err);
        }
        self.publish(appended.end);
        Ok(())
    }
}

/// A new segment at `position`, on disk with its name: a spare renamed,
/// else a small one made now. The segments at or past `position` hold
/// nothing durable (none, or groups whose sync failed): they go. The file
/// and its size.
fn start_segment(shared: &Shared, position: u64) -> Result<(File, u64), String> {
    let fail = |path: &Path, err: std::io::Error| format!("audit log `{}`: {err}", path.display());
    let doubtful: Vec<u64> = {
        let mut state = shared.state();
        let keep = state.segments.partition_point(|&start| start < position);
        state.segments.split_off(keep)
    };
    for start in doubtful {
        let path = shared.dir.segment(start);
        match std::fs::remove_file(&path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(fail(&path, err)),
            _ => {}
        }
    }
    let path = shared.dir.segment(position);
    let spare = shared.state().spares.pop();
    let file = match spare {
        Some(slot) => std::fs::rename(shared.dir.spare(slot), &path)
            .and_then(|()| OpenOptions::new().read(true).write(true).open(&path)),
        None => segments::zeroed(&path, FIRST_SEGMENT_BYTES),
    }
    .map_err(|err| fail(&path, err))?;
    let capacity = file.metadata().map_err(|err| fail(&path, err))?.len();
    shared.dir.sync().map_err(|err| fail(&path, err))?;
    let mut state = shared.state();
    state.segments.push(position);
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
        let mut reader = SegmentReader::open(&path, start, from.max(start), None).map_err(fail)?;
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
