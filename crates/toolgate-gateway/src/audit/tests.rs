//! The audit as requests use it: redaction, group commit into the log and
//! its index, catch-up after a crash, and failing closed.

use std::collections::HashSet;
use std::sync::mpsc as std_mpsc;
use std::sync::Mutex;

use serde_json::json;

use super::*;

#[test]
fn redaction_reaches_every_depth_and_only_listed_keys() {
    let mut value = json!({"password": "p", "user": {"api_key": "k", "name": "n"},
                           "list": [{"password": 1}], "keep": "v"});
    redact_value(&mut value, &["password".into(), "api_key".into()]);
    assert_eq!(
        value,
        json!({"password": "[REDACTED]", "user": {"api_key": "[REDACTED]", "name": "n"},
               "list": [{"password": "[REDACTED]"}], "keep": "v"})
    );
}

fn sqlite(path: &std::path::Path) -> AuditSettings {
    AuditSettings {
        sqlite: Some(path.display().to_string()),
        ..AuditSettings::default()
    }
}

/// The audit of `settings`, once a handle dropped just before has let go
/// of the log (its threads finish the last records first).
fn reopen(settings: &AuditSettings, metrics: &AuditMetrics) -> Audit {
    for _ in 0..500 {
        match Audit::open(settings, metrics) {
            Ok(audit) => return audit,
            Err(err) if err.0.contains("in use") => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(err) => panic!("{err}"),
        }
    }
    panic!("the audit log stayed locked")
}

/// `(request_id, idempotency_key)` of every call row, and the number of
/// request rows.
fn indexed(path: &std::path::Path) -> (Vec<(String, String)>, usize) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut query = conn
        .prepare("SELECT request_id, idempotency_key FROM audit_calls")
        .unwrap();
    let calls = query
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let requests: i64 = conn
        .query_row("SELECT count(*) FROM audit_requests", [], |row| row.get(0))
        .unwrap();
    (calls, usize::try_from(requests).unwrap())
}

fn each_once(calls: &[(String, String)], count: usize) {
    let distinct: HashSet<&(String, String)> = calls.iter().collect();
    assert_eq!(calls.len(), count, "one call row per record");
    assert_eq!(distinct.len(), count, "no record twice");
    for n in 0..count {
        assert!(
            distinct.contains(&(format!("r-{n}"), format!("{n:064}"))),
            "r-{n}"
        );
    }
}

/// Many requests commit at once: they share groups, each waits for its
/// own record to be durable, and the index holds every record once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_are_grouped_and_each_record_is_indexed_once() {
    const RECORDS: usize = 400;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    let metrics = AuditMetrics::default();
    let audit = Arc::new(Audit::open(&sqlite(&db), &metrics).unwrap());
    let commits: Vec<_> = (0..RECORDS)
        .map(|n| {
            let audit = Arc::clone(&audit);
            tokio::spawn(async move { audit.commit(AuditRecord::sample(n, 50)).await })
        })
        .collect();
    all_indexed_once(&audit, commits, &db, RECORDS).await;
    assert_eq!(metrics.records.get(), RECORDS as u64);
    assert!(metrics.groups.get() <= RECORDS as u64);
}

/// Wait for `commits`, then for `audit`'s index to catch up: it holds
/// `records` requests, each call once.
async fn all_indexed_once(
    audit: &Arc<Audit>,
    commits: Vec<tokio::task::JoinHandle<Result<(), String>>>,
    db: &std::path::Path,
    records: usize,
) {
    for commit in commits {
        commit.await.unwrap().unwrap();
    }
    let waiting = Arc::clone(audit);
    tokio::task::spawn_blocking(move || waiting.caught_up())
        .await
        .unwrap()
        .unwrap();
    let (calls, requests) = indexed(db);
    assert_eq!(requests, records);
    each_once(&calls, records);
}

/// Records committed on the requests' own threads (the log's syncs taken
/// as quick before each, whatever this disk's) and records handed to the
/// writers, some at the same time, are each indexed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_committed_at_once_and_by_the_writers_are_each_indexed_once() {
    const AT_ONCE: usize = 50;
    const RECORDS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    let metrics = AuditMetrics::default();
    let audit = Arc::new(Audit::open(&sqlite(&db), &metrics).unwrap());
    let quick = |audit: &Audit| audit.pipeline.as_ref().unwrap().take_as_quick();
    for n in 0..AT_ONCE {
        quick(&audit);
        audit.commit(AuditRecord::sample(n, 50)).await.unwrap();
    }
    assert_eq!(metrics.at_once.get(), AT_ONCE as u64);
    let commits: Vec<_> = (AT_ONCE..RECORDS)
        .map(|n| {
            let audit = Arc::clone(&audit);
            tokio::spawn(async move {
                if n % 10 == 0 {
                    quick(&audit);
                }
                audit.commit(AuditRecord::sample(n, 50)).await
            })
        })
        .collect();
    all_indexed_once(&audit, commits, &db, RECORDS).await;
    assert_eq!(metrics.records.get(), RECORDS as u64);
}

/// A crash leaves records in the log that the index has not taken (here
/// written to the log alone): the next start indexes them, once, after
/// the ones the index already held.
#[test]
fn the_index_catches_up_with_the_log_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    let settings = sqlite(&db);
    let metrics = AuditMetrics::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let audit = Audit::open(&settings, &metrics).unwrap();
    for n in 0..10 {
        runtime
            .block_on(audit.commit(AuditRecord::sample(n, 20)))
            .unwrap();
    }
    audit.caught_up().unwrap();
    drop(audit);
    // The writer got further than the index: records in the log only.
    let at = {
        let index = sqlite::SqliteIndex::open(db.to_str().unwrap()).unwrap();
        index.position().unwrap()
    };
    let mut log = loop {
        match log::LogStore::open(&log_dir(db.to_str().unwrap()), at) {
            Ok(log) => break log,
            Err(err) if err.contains("in use") => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(err) => panic!("{err}"),
        }
    };
    let more: Vec<AuditRecord> = (10..25).map(|n| AuditRecord::sample(n, 20)).collect();
    log.write(&more[..5]).unwrap();
    log.write(&more[5..]).unwrap();
    drop(log);
    assert_eq!(indexed(&db).1, 10, "the index lacks the last records");

    let audit = reopen(&settings, &metrics);
    audit.caught_up().unwrap();
    let (calls, requests) = indexed(&db);
    assert_eq!(requests, 25);
    each_once(&calls, 25);
}

/// A store that holds each write until told to go on.
#[derive(Debug)]
struct Held {
    entered: std_mpsc::Sender<()>,
    go: Mutex<std_mpsc::Receiver<()>>,
}

impl AuditStore for Held {
    fn write(&mut self, _batch: &[AuditRecord]) -> Result<(), String> {
        let _ = self.entered.send(());
        let _ = self.go.lock().unwrap().recv();
        Ok(())
    }
}

/// With the writer stuck and its queue full, a record is refused at once:
/// its request fails instead of waiting with the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_records_at_once() {
    let (entered, writing) = std_mpsc::channel();
    let (go, wait) = std_mpsc::channel();
    let store = Held {
        entered,
        go: Mutex::new(wait),
    };
    let audit = Arc::new(Audit::start(
        Box::new(store),
        Vec::new(),
        &AuditMetrics::default(),
        1,
    ));
    let first = tokio::spawn({
        let audit = Arc::clone(&audit);
        async move { audit.commit(AuditRecord::sample(0, 0)).await }
    });
    tokio::task::spawn_blocking(move || writing.recv().unwrap())
        .await
        .unwrap();
    let second = tokio::spawn({
        let audit = Arc::clone(&audit);
        async move { audit.commit(AuditRecord::sample(1, 0)).await }
    });
    // The second waits in the queue; the third finds it full.
    while audit.queue.waiting() == 0 {
        tokio::task::yield_now().await;
    }
    let refused = audit
        .commit(AuditRecord::sample(2, 0))
        .await
        .expect_err("a record committed past a stuck writer");
    assert!(refused.contains("records waiting"), "{refused}");
    go.send(()).unwrap();
    go.send(()).unwrap();
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();
}

/// A store that panics: the writer is gone.
#[derive(Debug)]
struct Panics;

impl AuditStore for Panics {
    fn write(&mut self, _batch: &[AuditRecord]) -> Result<(), String> {
        panic!("the store broke")
    }
}

#[tokio::test]
async fn a_stopped_writer_refuses_every_record() {
    let audit = Audit::spawn(Box::new(Panics), Vec::new(), &AuditMetrics::default());
    let err = audit.commit(AuditRecord::sample(0, 0)).await.unwrap_err();
    assert!(err.contains("stopped"), "{err}");
    let err = audit.commit(AuditRecord::sample(1, 0)).await.unwrap_err();
    assert!(err.contains("stopped"), "{err}");
    assert!(!audit.is_open());
}
