//! `toolgate serve --sched-slice`: every thread of the gateway runs with the
//! slice asked for, but the audit's indexer (the one thread at nice 10),
//! which keeps the kernel's default; `--sched-slice 0` leaves every thread
//! at the default. Read from outside, in `/proc/<pid>/task/*/sched`.

use std::path::Path;
use std::time::{Duration, Instant};

use super::gateway_durability::{scratch_dir, start_gateway};

/// Each thread of `pid`: its nice value and its slice in nanoseconds.
fn threads(pid: u32) -> Vec<(String, i64, u64)> {
    let mut found = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap().path();
        let (Ok(comm), Ok(stat), Ok(sched)) = (
            std::fs::read_to_string(task.join("comm")),
            std::fs::read_to_string(task.join("stat")),
            std::fs::read_to_string(task.join("sched")),
        ) else {
            continue; // a thread that ended meanwhile
        };
        // The nice value is the 19th field, the 17th after the name's `)`.
        let nice = stat.rsplit_once(')').unwrap().1.split_whitespace().nth(16);
        let slice = sched
            .lines()
            .find_map(|line| line.strip_prefix("se.slice"))
            .map(|rest| rest.trim_start_matches([' ', ':']).trim());
        found.push((
            comm.trim().to_owned(),
            nice.unwrap().parse().unwrap(),
            slice.unwrap().parse().unwrap(),
        ));
    }
    found
}

/// The kernel's default slice, and whether it grants a thread a slice of
/// its own (Linux 6.12 and later), tried on a thread of this process.
fn kernel() -> Option<u64> {
    std::thread::spawn(|| {
        let default = toolgate_sched::slice().unwrap()?;
        toolgate_sched::set_slice(Some(toolgate_sched::MIN)).unwrap();
        let asked = toolgate_sched::slice().unwrap()?;
        (asked != default).then(|| u64::try_from(default.as_nanos()).unwrap())
    })
    .join()
    .unwrap()
}

/// The threads of a gateway started with `extra`, once its indexer (started
/// with the audit, before the gateway listens) has set its own nice value
/// and slice: that happens on the indexer's thread, so it is waited for,
/// within a bound that is no timing assertion.
fn start(dir: &Path, extra: &[&str], default: u64) -> Vec<(String, i64, u64)> {
    std::fs::create_dir_all(dir).unwrap();
    let gateway = start_gateway(dir, "http://127.0.0.1:9", extra);
    let patience = Instant::now() + Duration::from_secs(30);
    loop {
        let threads = threads(gateway.child.id());
        let indexer_settled = threads
            .iter()
            .any(|(_, nice, slice)| *nice == 10 && *slice == default);
        if indexer_settled {
            return threads;
        }
        assert!(Instant::now() < patience, "no indexer settled: {threads:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_gateway_threads_ask_for_the_slice_and_the_indexer_does_not() {
    let Some(default) = kernel() else {
        eprintln!("this kernel grants no slice of a thread's own: nothing to see");
        return;
    };
    let dir = scratch_dir("sched");
    let asked = u64::try_from(Duration::from_micros(250).as_nanos()).unwrap();
    let threads = start(&dir.join("a"), &["--sched-slice", "250"], default);
    assert!(threads
        .iter()
        .any(|(name, _, _)| name.starts_with("tokio-rt")));
    for (name, nice, slice) in &threads {
        let expected = if *nice == 10 { default } else { asked };
        assert_eq!(*slice, expected, "{name} at nice {nice}: {threads:?}");
    }

    let threads = start(&dir.join("b"), &["--sched-slice", "0"], default);
    for (name, nice, slice) in &threads {
        assert_eq!(*slice, default, "{name} at nice {nice}: {threads:?}");
    }
}
