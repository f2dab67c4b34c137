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
        .map(<[u8]>::trim_ascii)
        .map(|line| line.strip_prefix(b"data:").unwrap_or(line).trim_ascii())
        .filter(|data| data.first().is_some_and(|b| *b == b'{' || *b == b'['))
        .filter_map(|data| serde_json::from_slice::<serde_json::Value>(data).ok())
        .count()
}

/// What a naive reader does: the baseline, then every `arguments` string
/// parsed into a `Value` too.
fn naive_pipeline(body: &[u8]) -> usize {
    fn walk(value: &serde_json::Value, found: &mut usize) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, item) in map {
                    if let (true, Some(text)) = (key == "arguments", item.as_str()) {
                        *found +=
                            usize::from(serde_json::from_str::<serde_json::Value>(text).is_ok());
                    } else {
                        walk(item, found);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
            _ => {}
        }
    }
    let mut found = 0;
    let mut read = |data: &[u8]| {
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
            walk(&value, &mut found);
        }
    };
    if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() {
        read(body);
    } else {
        body.split(|b| *b == b'\n')
            .map(<[u8]>::trim_ascii)
            .map(|line| line.strip_prefix(b"data:").unwrap_or(line))
            .for_each(&mut read);
    }
    found
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
        group.bench_function("serde_json_value_and_arguments", |b| {
            b.iter(|| naive_pipeline(black_box(&body)));
        });
        if found.framing != toolgate::Framing::Json {
            // The gateway's path: the same stream in 256-byte network chunks,
            // with every frame and call event reported.
            group.bench_function("toolgate_assembler_256b_chunks", |b| {
                b.iter(|| {
                    let mut stream =
                        toolgate::Assembler::new(found.framing, toolgate::Limits::default());
                    let mut events = 0;
                    for chunk in black_box(&body).chunks(256) {
                        events += stream.push(chunk).len();
                    }
                    events += stream.close().len();
                    (events, stream.finish())
                });
            });
        }
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
