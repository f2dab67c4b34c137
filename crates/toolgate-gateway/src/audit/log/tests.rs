//! The log on its own: what a reopened log reads back after a clean stop,
//! a torn write, a failed write and damage; its bound; its segments let go.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use super::*;
use crate::audit::AuditRecord;

fn records(from: usize, count: usize, pad: usize) -> Vec<AuditRecord> {
    (from..from + count)
        .map(|n| AuditRecord::sample(n, pad))
        .collect()
}

/// Every record of the log from `from` to `to`, as request ids.
fn read_back(shared: &Shared, from: u64, to: u64) -> Vec<String> {
    let mut ids = Vec::new();
    let mut position = from;
    let mut payload = Vec::new();
    while position < to {
        let (start, next) = shared.segment_of(position).expect("a segment");
        let end = next.unwrap_or(to).min(to);
        let path = shared.segment_path(start);
        let mut reader = SegmentReader::open(&path, start, position, Some(end)).unwrap();
        while reader.position() < end {
            assert!(
                reader.next(&mut payload).unwrap(),
                "a record at {}",
                reader.position()
            );
            let record: serde_json::Value = serde_json::from_slice(&payload).unwrap();
            ids.push(record["request_id"].as_str().unwrap().to_owned());
        }
        position = reader.position();
    }
    ids
}

fn ids(from: usize, count: usize) -> Vec<String> {
    (from..from + count).map(|n| format!("r-{n}")).collect()
}

fn durable(store: &LogStore) -> u64 {
    store.shared.state().durable
}

/// A new log in a temporary directory, and its path.
fn fresh() -> (tempfile::TempDir, std::path::PathBuf, LogStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let store = LogStore::open(&path, 0).unwrap();
    (dir, path, store)
}

/// Opened again, the log at `path` reads back, up to `end`, the records
/// numbered in `runs` (first, count), in order.
fn reads_back(path: &std::path::Path, end: u64, runs: &[(usize, usize)]) {
    let store = LogStore::open(path, 0).unwrap();
    let expected: Vec<String> = runs
        .iter()
        .flat_map(|&(from, count)| ids(from, count))
        .collect();
    assert_eq!(read_back(&store.shared(), 0, end), expected);
}

#[test]
fn a_reopened_log_reads_back_every_record_written() {
    let (_dir, path, mut store) = fresh();
    store.write(&records(0, 3, 10)).unwrap();
    store.write(&records(3, 1, 10)).unwrap();
    let end = durable(&store);
    drop(store);

    let store = LogStore::open(&path, 0).unwrap();
    let shared = store.shared();
    assert_eq!(durable(&store), end);
    assert_eq!(shared.indexed(), 0);
    assert_eq!(read_back(&shared, 0, end), ids(0, 4));
    // Writing goes on in a new segment where the records end.
    assert_eq!(shared.segment_of(end).unwrap().0, end);
}

/// A group the machine did not finish writing: its first record torn, a
/// later one whole. The log ends before the torn one; the whole one after
/// it is never read, even once new records are written over the tear.
#[test]
fn a_torn_tail_is_cut_and_nothing_after_it_comes_back() {
    let (_dir, path, mut store) = fresh();
    store.write(&records(0, 2, 10)).unwrap();
    let kept = durable(&store);
    store.write(&records(2, 2, 10)).unwrap();
    let segment = store.shared.segment_path(store.start);
    let start = store.start;
    drop(store);
    // Tear the third record: one byte of its payload never reached the disk.
    let file = OpenOptions::new().write(true).open(&segment).unwrap();
    file.write_all_at(&[0], kept - start + frame::HEADER as u64 + 5)
        .unwrap();
    drop(file);

    let mut store = LogStore::open(&path, 0).unwrap();
    assert_eq!(durable(&store), kept);
    store.write(&records(10, 1, 10)).unwrap();
    let end = durable(&store);
    drop(store);
    reads_back(&path, end, &[(0, 2), (10, 1)]);
}

/// A write or sync that fails leaves the segment in doubt: the group is
/// refused, the next one goes to a new segment at the same position, and
/// the log reads back exactly the groups that were acknowledged.
#[test]
fn a_failed_write_is_refused_and_the_log_goes_on_in_a_new_segment() {
    let (_dir, path, mut store) = fresh();
    store.write(&records(0, 2, 10)).unwrap();
    let before = durable(&store);
    // The segment, open for reading only: the next write fails.
    store.file =
        std::sync::Arc::new(std::fs::File::open(store.shared.segment_path(store.start)).unwrap());
    let err = store.write(&records(2, 1, 10)).unwrap_err();
    assert!(err.contains("audit log"), "{err}");
    assert_eq!(
        durable(&store),
        before,
        "nothing of the failed group counts"
    );
    store.write(&records(3, 1, 10)).unwrap();
    assert_eq!(store.start, before, "a new segment where the records end");
    let end = durable(&store);
    drop(store);
    reads_back(&path, end, &[(0, 2), (3, 1)]);
}

/// Groups are synced while later ones are written. When a sync fails,
/// that group and the ones written after it are in doubt: the log rewinds
/// to where it started, and the next group goes there, in a new segment
/// (the doubtful ones, even in segments of their own, are gone).
#[test]
fn a_failed_sync_rewinds_the_log_past_every_later_group() {
    let (_dir, path, mut store) = fresh();
    let first = store.append(&records(0, 1, 10)).unwrap();
    let failed = store.append(&records(1, 1, 10)).unwrap();
    // A later group that did not fit: written to a segment of its own.
    let later = store.append(&records(2, 3, 400_000)).unwrap();
    assert_eq!(store.start, failed.end);
    first.sync().unwrap();
    store.publish(first.end);
    store.rewind(failed.start);
    let next = store.append(&records(5, 1, 10)).unwrap();
    assert_eq!(next.start, failed.start);
    next.sync().unwrap();
    store.publish(next.end);
    assert!(!store.shared.segment_path(later.start).exists());
    assert_eq!(store.shared.state().segments, vec![0, failed.start]);
    drop(store);
    reads_back(&path, next.end, &[(0, 1), (5, 1)]);
}

#[test]
fn damage_before_a_segments_end_stops_the_gateway_from_starting() {
    let (_dir, path, mut store) = fresh();
    store.write(&records(0, 2, 10)).unwrap();
    let first = store.shared.segment_path(store.start);
    drop(store);
    // The first segment is not the last one any more: its records must
    // reach the next one's start.
    LogStore::open(&path, 0).unwrap();
    let file = OpenOptions::new().write(true).open(&first).unwrap();
    file.write_all_at(b"garbage", 20).unwrap();
    let err = LogStore::open(&path, 0).unwrap_err();
    assert!(err.contains("is damaged") && err.contains("Move"), "{err}");
    // Records the index already holds are not read again.
    let second = LogStore::open(&path, 1 << 40).unwrap();
    drop(second);
}

#[test]
fn a_second_gateway_cannot_write_the_same_log() {
    let (_dir, path, store) = fresh();
    let err = LogStore::open(&path, 0).unwrap_err();
    assert!(err.contains("in use by another toolgate serve"), "{err}");
    drop(store);
    LogStore::open(&path, 0).unwrap();
}

/// Writing starts at the index's position when the log holds less (a log
/// directory removed): positions never go back, so the index never skips
/// a new record as one it already holds.
#[test]
fn a_log_behind_its_index_starts_at_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = LogStore::open(&dir.path().join("log"), 5000).unwrap();
    assert_eq!(durable(&store), 5000);
    store.write(&records(0, 1, 10)).unwrap();
    let end = durable(&store);
    assert_eq!(read_back(&store.shared(), 5000, end), ids(0, 1));
}

#[test]
fn records_are_refused_while_the_index_is_too_far_behind() {
    let (_dir, _, mut store) = fresh();
    store.shared.index_failed("the disk is full".into());
    // As if MAX_BACKLOG bytes had been written since the index's position.
    store.next = MAX_BACKLOG + 1;
    store.start = store.next;
    let err = store.write(&records(0, 1, 10)).unwrap_err();
    assert!(
        err.contains("behind its log") && err.contains("the disk is full"),
        "{err}"
    );
    // Indexed, but not on disk: still refused, with why.
    store.shared.index_reached(2);
    let err = store.write(&records(0, 1, 10)).unwrap_err();
    assert!(err.contains("checkpoints do not complete"), "{err}");
    store.shared.synced(2);
    store.write(&records(0, 1, 10)).unwrap();
}

/// Segments the synced index covers are let go: a full-size one becomes
/// a spare, which the writer takes for its next segment; others are
/// deleted. A spare is made before the writer needs one.
#[test]
fn indexed_segments_are_let_go_and_spares_reused() {
    let (_dir, _, mut store) = fresh();
    let shared = store.shared();
    let first = store.start;
    // Past half of the first, small segment: a spare is made.
    store.write(&records(0, 6, 100_000)).unwrap();
    shared.prepare_spare();
    assert_eq!(shared.state().spares, vec![0]);
    // Past its end: the writer takes the spare.
    store.write(&records(6, 6, 100_000)).unwrap();
    assert!(shared.state().spares.is_empty());
    let second = store.start;
    assert_ne!(second, first);
    assert_eq!(
        std::fs::metadata(shared.segment_path(second))
            .unwrap()
            .len(),
        segments::SEGMENT_BYTES
    );
    // Indexed up to the second segment: the first (small) is deleted.
    shared.synced(second);
    assert!(!shared.segment_path(first).exists());
    assert_eq!(shared.state().segments, vec![second]);
    assert_eq!(read_back(&shared, second, durable(&store)), ids(6, 6));
}

/// The indexer is woken by a durable group only while it waits for
/// records: one waiting is told at once; one in its pause is left asleep
/// (it takes the group when the pause ends), and is cut short by someone
/// waiting for the index.
#[test]
fn a_durable_group_wakes_the_indexer_only_while_it_waits_for_records() {
    use std::sync::mpsc;
    use std::time::Duration;

    let (_dir, _, store) = fresh();
    let shared = store.shared();
    let start = durable(&store);
    let long = Duration::from_secs(600);
    let until_idle = |idle: bool| {
        while shared.state().idle != idle {
            std::thread::sleep(Duration::from_millis(1));
        }
    };

    let (told, work) = mpsc::channel();
    let waiting = Arc::clone(&shared);
    std::thread::spawn(move || {
        let found = match waiting.work(start, long) {
            Work::Records(to) => Some(to),
            Work::Idle | Work::Done => None,
        };
        told.send(found).unwrap();
    });
    until_idle(true);
    shared.durable_up_to(start + 100);
    // Told well before its wait of ten minutes ends.
    assert_eq!(work.recv_timeout(long / 10).unwrap(), Some(start + 100));
    until_idle(false);

    // In its pause, a durable group leaves it asleep; a waiter for the
    // index wakes it.
    let (paused, pause) = mpsc::channel();
    let pausing = Arc::clone(&shared);
    std::thread::spawn(move || {
        pausing.pause(long);
        paused.send(()).unwrap();
    });
    shared.durable_up_to(start + 200);
    assert!(!shared.state().idle);
    assert!(pause.recv_timeout(Duration::from_millis(200)).is_err());
    let waiter = Arc::clone(&shared);
    let caught_up = std::thread::spawn(move || waiter.caught_up());
    pause.recv_timeout(long / 10).unwrap();
    shared.index_reached(start + 200);
    caught_up.join().unwrap().unwrap();
    assert!(!shared.state().hurry, "the pause takes the hurry");
}
