//! Check every payload of the check workload (`bench/workload.py`) a number
//! of times, with toolgate or with the bench's naive pipeline, for a
//! profiler: `valgrind --tool=callgrind
//! target/release/examples/check_workload [ROUNDS] [toolgate|naive|read]`
//! (`read`: toolgate, then every call's arguments read as a `serde_json`
//! object, as the gateway's audit and `eval --out` read them).

#[path = "../benches/workload.rs"]
mod workload;

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args
        .next()
        .map_or(1, |n| n.parse().expect("ROUNDS is a number"));
    let (naive, read) = match args.next().as_deref() {
        None | Some("toolgate") => (false, false),
        Some("naive") => (true, false),
        Some("read") => (false, true),
        Some(other) => panic!("{other}: toolgate, naive or read"),
    };
    let workload = workload::Workload::load();
    let validators = workload::naive_validators(&workload);
    let mut passed = 0;
    for _ in 0..rounds {
        for body in &workload.payloads {
            passed += usize::from(if naive {
                workload::naive_check(&validators, std::hint::black_box(body)) == Some(0)
            } else {
                let verdict = workload.policy.check(body);
                if read {
                    for call in &verdict.calls {
                        std::hint::black_box(call.arguments.as_object().map(serde_json::Map::len));
                    }
                }
                std::hint::black_box(verdict).passed
            });
        }
    }
    let defective = workload.expected.iter().filter(|e| e.is_some()).count();
    println!(
        "{passed} of {} checks passed ({} payloads, {} bytes, {defective} defective)",
        rounds * workload.payloads.len(),
        workload.payloads.len(),
        workload.bytes()
    );
}
