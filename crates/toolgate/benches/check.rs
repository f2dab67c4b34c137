//! `check`: every payload of the workload (`bench/workload.py`, OpenAI Chat
//! Completions responses calling 12 tools, a fifth of them defective), from
//! bytes to verdict with the compiled policy, beside the naive pipeline
//! users write: a `serde_json::Value` of the body, each `arguments` string
//! parsed, each call validated by its tool's `jsonschema` validator.
//! `bench/check.sh` generates the workload and prints the medians per
//! payload and their ratio.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

mod workload;

use workload::{naive_check, naive_validators, Workload};

/// Both pipelines must judge the workload as generated: toolgate exactly
/// (the expected code, and nothing else), the naive one as far as it can.
fn agree(workload: &Workload, validators: &HashMap<String, jsonschema::Validator>) {
    let mut naive_missed = 0;
    for (i, (body, expected)) in workload.payloads.iter().zip(&workload.expected).enumerate() {
        let verdict = workload.policy.check(body);
        let codes: Vec<&str> = verdict.violations.iter().map(|v| v.code.as_str()).collect();
        let wanted: Vec<&str> = expected.iter().map(String::as_str).collect();
        assert_eq!(codes, wanted, "payload {i}: {}", verdict.reasoning);
        let naive_passed = naive_check(validators, body) == Some(0);
        assert!(
            naive_passed || expected.is_some(),
            "payload {i}: the naive pipeline fails a clean payload"
        );
        naive_missed += usize::from(naive_passed && expected.is_some());
    }
    let defective = workload.expected.iter().filter(|e| e.is_some()).count();
    eprintln!(
        "check: toolgate flags exactly the {defective} defective payloads of {}; \
         the naive pipeline misses {naive_missed} of them",
        workload.payloads.len()
    );
}

fn bench(c: &mut Criterion) {
    let workload = Workload::load();
    let validators = naive_validators(&workload);
    agree(&workload, &validators);

    let mut group = c.benchmark_group("check");
    group.throughput(Throughput::ElementsAndBytes {
        elements: workload.payloads.len() as u64,
        bytes: workload.bytes(),
    });
    // One iteration reads the whole workload (tens of milliseconds).
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    group.bench_function("toolgate", |b| {
        b.iter(|| {
            for body in &workload.payloads {
                black_box(workload.policy.check(black_box(body)));
            }
        });
    });
    group.bench_function("naive", |b| {
        b.iter(|| {
            for body in &workload.payloads {
                black_box(naive_check(&validators, black_box(body)));
            }
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    targets = bench
}
criterion_main!(benches);
