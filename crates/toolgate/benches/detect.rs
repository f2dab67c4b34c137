//! `detect/<format>`: bytes to calls for one capture of each wire format,
//! beside `serde_json::from_slice::<Value>` of the same bytes in the same
//! run. `bench/detect.sh` prints the medians and their ratio.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

mod cases;

use cases::{load, CASES};

/// The baseline: `serde_json::from_slice::<Value>` of the body, or of each
/// `data:` payload (each line) of a stream.
fn plain_parse(body: &[u8]) -> usize {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        return usize::from(!value.is_null());
    }
    body.split(|b| *b == b'\n')
        .map(|line| line.trim_ascii())
        .map(|line| line.strip_prefix(b"data:").unwrap_or(line))
        .filter(|data| data.first().is_some_and(|b| *b == b'{' || *b == b'['))
        .filter_map(|data| serde_json::from_slice::<serde_json::Value>(data).ok())
        .count()
}

fn bench(c: &mut Criterion) {
    for (name, relative) in CASES {
        let body = load(relative);
        let found = toolgate::detect(&body);
        assert!(
            found.violations.is_empty() && !found.calls.is_empty(),
            "{name}: {found:?}"
        );
        let mut group = c.benchmark_group(format!("detect/{name}"));
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function("toolgate", |b| {
            b.iter(|| toolgate::detect(black_box(&body)));
        });
        group.bench_function("serde_json_value", |b| {
            b.iter(|| plain_parse(black_box(&body)));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
