//! The log's directory: segment files named by the log position of their
//! first record (`00000000000000004096.log`), spare files ready to become
//! the next segment (`spare-0.log`), and the `lock` that keeps a second
//! gateway from writing the same log.
//!
//! Segments are written over, never appended to: each is created full of
//! zeros (or is a spare, an old segment whose records are all indexed), so
//! a record's write changes no file size or block map, and its
//! `fdatasync` flushes data only, with no journal commit.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::frame::{self, HEADER};

/// The segment made when no spare is ready: small, since the writer makes
/// it while requests wait.
pub(crate) const FIRST_SEGMENT_BYTES: u64 = 1 << 20;
/// A spare's size.
pub(crate) const SEGMENT_BYTES: u64 = 16 << 20;
/// Spares kept at most.
pub(crate) const SPARES: usize = 2;

/// The log directory, locked for this gateway while the handle lives.
#[derive(Debug)]
pub(crate) struct Dir {
    path: PathBuf,
    _lock: File,
}

/// What the directory holds.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Segment starts, in order.
    pub(crate) segments: Vec<u64>,
    /// Spare slots present.
    pub(crate) spares: Vec<usize>,
}

impl Dir {
    /// Create `path` if needed and lock it; fails if another gateway holds it.
    pub(crate) fn open(path: &Path) -> Result<Dir, String> {
        let fail = |err: std::io::Error| format!("audit log `{}`: {err}", path.display());
        std::fs::create_dir_all(path).map_err(fail)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.join("lock"))
            .map_err(fail)?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |_| {
                format!(
                    "audit log `{}` is in use by another toolgate serve; give each gateway its own audit.sqlite",
                    path.display()
                )
            },
        )?;
        Ok(Dir {
            path: path.to_owned(),
            _lock: lock,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn segment(&self, start: u64) -> PathBuf {
        self.path.join(format!("{start:020}.log"))
    }

    pub(crate) fn spare(&self, slot: usize) -> PathBuf {
        self.path.join(format!("spare-{slot}.log"))
    }

    /// The segments and spares present; other files are left alone.
    pub(crate) fn list(&self) -> Result<Listing, String> {
        let fail = |err: std::io::Error| format!("audit log `{}`: {err}", self.path.display());
        let mut listing = Listing::default();
        for entry in std::fs::read_dir(&self.path).map_err(fail)? {
            let name = entry.map_err(fail)?.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(start) = name
                .strip_suffix(".log")
                .filter(|digits| digits.len() == 20)
                .and_then(|digits| digits.parse::<u64>().ok())
            {
                listing.segments.push(start);
            } else if let Some(slot) = name
                .strip_prefix("spare-")
                .and_then(|rest| rest.strip_suffix(".log"))
                .and_then(|slot| slot.parse::<usize>().ok())
                .filter(|&slot| slot < SPARES)
            {
                listing.spares.push(slot);
            }
        }
        listing.segments.sort_unstable();
        listing.spares.sort_unstable();
        Ok(listing)
    }

    /// Make the directory's entries durable (a new or renamed segment).
    pub(crate) fn sync(&self) -> std::io::Result<()> {
        File::open(&self.path)?.sync_all()
    }
}

/// The page the log writes in: a write of whole pages, each by itself,
/// never reads a block first nor dirties more than the page it changes.
pub(crate) const PAGE: usize = 4096;

/// A file of `bytes` zeros at `path`, on disk. Written a page at a time:
/// a larger write would put the file in the page cache as large folios,
/// and each record written later would dirty, and make `fdatasync`
/// write, a whole folio (up to a megabyte) for its few hundred bytes.
pub(crate) fn zeroed(path: &Path, bytes: u64) -> std::io::Result<File> {
    const SYNC_EVERY: u64 = 1 << 20;
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)?;
    let zeros = [0u8; PAGE];
    let mut written = 0;
    while written < bytes {
        file.write_all(&zeros)?;
        written += PAGE as u64;
        // Flushed a megabyte at a time: no burst for the log's own
        // `fdatasync` to queue behind.
        if written % SYNC_EVERY == 0 || written >= bytes {
            file.sync_data()?;
        }
    }
    Ok(file)
}

/// Reads the records of one segment in order, from a record's position.
pub(crate) struct SegmentReader {
    reader: BufReader<std::io::Take<File>>,
    position: u64,
}

impl SegmentReader {
    /// The reader of the segment at `path`, which starts at log position
    /// `start`, placed at position `from`; it reads nothing at or past
    /// `until`. Without read-ahead: the pages past what it reads may be
    /// the writer's next ones, and pages read ahead come in as large
    /// folios (see [`zeroed`]).
    pub(crate) fn open(
        path: &Path,
        start: u64,
        from: u64,
        until: Option<u64>,
    ) -> std::io::Result<SegmentReader> {
        let mut file = File::open(path)?;
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random)?;
        // Past the file's end (an index ahead of its log) nothing is read.
        let offset = (from - start).min(file.metadata()?.len());
        file.seek(SeekFrom::Start(offset))?;
        let limit = until.map_or(u64::MAX, |until| until.saturating_sub(from));
        Ok(SegmentReader {
            reader: BufReader::with_capacity(1 << 16, file.take(limit)),
            position: from,
        })
    }

    /// The log position of the next record.
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// Read the next record's payload into `payload`; false where no whole
    /// record is (the end of what was written, a torn tail, zeros, an old
    /// record of a reused segment).
    pub(crate) fn next(&mut self, payload: &mut Vec<u8>) -> std::io::Result<bool> {
        let mut header = [0u8; HEADER];
        if !read_or_end(&mut self.reader, &mut header)? {
            return Ok(false);
        }
        let Some(len) = frame::announced(&header, self.position) else {
            return Ok(false);
        };
        payload.clear();
        payload.resize(len, 0);
        if !read_or_end(&mut self.reader, payload)? || !frame::payload(&header, payload) {
            return Ok(false);
        }
        self.position += (HEADER + len) as u64;
        Ok(true)
    }
}

/// Fill `buf`; false at the end of the file.
fn read_or_end(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    match reader.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(err) => Err(err),
    }
}
