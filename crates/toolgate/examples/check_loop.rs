//! Check every payload of a workload written by `bench/workload.py`, a
//! number of times, in one thread: a steady loop to run under a profiler
//! (`valgrind --tool=callgrind`, `perf record`). `naive` runs the bench's
//! naive pipeline instead; `parse` only its `serde_json::Value` parse.
//!
//! usage: `check_loop WORKLOAD_DIR [ROUNDS] [toolgate|naive|parse]`

use std::hint::black_box;

#[path = "../benches/workload.rs"]
#[allow(dead_code)]
mod workload;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: check_loop WORKLOAD_DIR [ROUNDS] [MODE]");
    std::env::set_var("TOOLGATE_WORKLOAD", &dir);
    let rounds: usize = args
        .next()
        .map_or(1, |n| n.parse().expect("ROUNDS is a number"));
    let mode = args.next().unwrap_or_else(|| "toolgate".to_owned());
    let load = workload::Workload::load();
    let validators = workload::naive_validators(&load);
    let started = std::time::Instant::now();
    let mut failed = 0usize;
    for _ in 0..rounds {
        for body in &load.payloads {
            failed += match mode.as_str() {
                "naive" => usize::from(
                    black_box(workload::naive_check(&validators, black_box(body))) != Some(0),
                ),
                "parse" => usize::from(
                    black_box(serde_json::from_slice::<serde_json::Value>(black_box(body)))
                        .is_err(),
                ),
                _ => usize::from(!black_box(load.policy.check(black_box(body))).passed),
            };
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let per = started.elapsed().as_secs_f64() * 1e6 / (rounds * load.payloads.len()) as f64;
    println!(
        "{mode}: {} payloads x {rounds}: {failed} failed, {per:.2} µs/payload",
        load.payloads.len()
    );
}
