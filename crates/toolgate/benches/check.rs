//! `check`: every payload of each workload shape (`bench/workload.py
//! --shape`: `openai`, `anthropic`, `responses`, `gemini`, `bedrock`, `chat-sse`,
//! `messages-sse`, `responses-sse`, `gemini-sse`, `bedrock-stream`, `vercel-sse`, `small`, `large`, `deep`, `formats`, `numbers`), from bytes to verdict with the compiled
//! policy, beside the naive pipeline users write for that wire format: a
//! `serde_json::Value` of the body (of each event's data, for a stream,
//! the calls' fragments gathered by index), each call's arguments (parsed
//! from the `arguments` string, or the Anthropic `input` as it is)
//! validated by its tool's `jsonschema` validator. One criterion group per shape, `check/<shape>`, then 15
//! rounds of both pipelines taking turns (`paired.json` beside the
//! workload). Times are the thread's CPU time, not wall time: the machines
//! this runs on are shared.
//!
//! Before timing, each shape's verdicts are checked twice: toolgate
//! reports exactly the defect the workload holds (the code, on the call,
//! at the JSON Pointer), and the digest of every verdict is the one
//! recorded in `bench/verdicts.json`, so a change that alters any verdict
//! fails the bench. `TOOLGATE_BLESS_VERDICTS=1` records this run's
//! digests instead.
//!
//! A whole body's shape may also be named with a layout after it
//! (`gemini-indent`, `openai-spaced`: `bench/workload.py --layout`), the
//! same calls laid out another way; its verdicts are recorded under that
//! name (they differ from the compact ones only where a message gives a
//! line and column). A shape whose calls hold free text may also be named
//! with its text written another way (`openai-unicode`, `gemini-escaped`:
//! `bench/workload.py --text`), its calls and defects drawn the same way.
//!
//! Workloads are read from `$TOOLGATE_WORKLOADS/<shape>` (else
//! `target/workloads/<shape>`), the shapes from `$TOOLGATE_SHAPES` (a
//! comma-separated list; all by default). `bench/check.sh` writes the
//! workloads and prints the medians per payload and their ratio.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

mod workload;

use workload::{lines, naive_check, naive_validators, read, Naive, Workload};

/// The time a pass spends on its core (the thread's CPU time), whatever
/// else the shared machine runs meanwhile: wall time would count the
/// waits for a core too. Shown as criterion shows wall time.
struct CpuTime;

static WALL_TIME: WallTime = WallTime;

impl Measurement for CpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu()
    }

    fn end(&self, start: Duration) -> Duration {
        thread_cpu().saturating_sub(start)
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_secs_f64() * 1e9
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        WALL_TIME.formatter()
    }
}

fn thread_cpu() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or_default(),
        u32::try_from(now.tv_nsec).unwrap_or_default(),
    )
}

const SHAPES: [&str; 23] = [
    "openai",
    "anthropic",
    "responses",
    "gemini",
    "bedrock",
    "chat-sse",
    "messages-sse",
    "responses-sse",
    "gemini-sse",
    "bedrock-stream",
    "vercel-sse",
    "small",
    "large",
    "deep",
    "formats",
    "numbers",
    "openai-thinking",
    "anthropic-thinking",
    "gemini-thinking",
    "bedrock-thinking",
    "large-anthropic",
    "openai-request",
    "anthropic-request",
];

/// The layouts a whole body may also be sent in (`bench/workload.py
/// --layout`), named after its shape's: `gemini-indent`.
const LAYOUTS: [&str; 2] = ["spaced", "indent"];

/// The other ways a shape's free text may be written (`bench/workload.py
/// --text`), named after its shape's: `openai-escaped`.
const TEXTS: [&str; 2] = ["unicode", "escaped"];

/// The shapes whose calls hold no free text to write otherwise.
const NO_FREE_TEXT: [&str; 6] = [
    "small",
    "large",
    "deep",
    "formats",
    "numbers",
    "large-anthropic",
];

/// Whether `name` is a shape, a whole-body shape in another layout, or a
/// shape with free text written another way.
fn known(name: &str) -> bool {
    let base = |suffix: &str| {
        name.strip_suffix(suffix)
            .and_then(|shape| shape.strip_suffix('-'))
            .filter(|shape| SHAPES.contains(shape))
    };
    SHAPES.contains(&name)
        || LAYOUTS.iter().any(|layout| {
            base(layout)
                .is_some_and(|shape| !shape.ends_with("-sse") && !shape.ends_with("-stream"))
        })
        || TEXTS
            .iter()
            .any(|text| base(text).is_some_and(|shape| !NO_FREE_TEXT.contains(&shape)))
}

/// Where `bench/verdicts.json` is.
fn verdicts_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/verdicts.json")
}

/// The shapes to run: `$TOOLGATE_SHAPES`, else all.
fn shapes() -> Vec<String> {
    let Ok(list) = std::env::var("TOOLGATE_SHAPES") else {
        return SHAPES.iter().map(|s| (*s).to_owned()).collect();
    };
    let chosen: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    for shape in &chosen {
        assert!(
            known(shape),
            "TOOLGATE_SHAPES: unknown shape `{shape}`; the shapes are {}, and a whole body's \
             with -{} after it",
            SHAPES.join(", "),
            LAYOUTS.join(" or -")
        );
    }
    chosen
}

fn workload_dir(shape: &str) -> PathBuf {
    std::env::var_os("TOOLGATE_WORKLOADS")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/workloads"),
            PathBuf::from,
        )
        .join(shape)
}

/// Both pipelines must judge the workload as generated: toolgate exactly
/// (the expected code on the expected call at the expected pointer, and
/// nothing else), the naive one as far as it can. Returns every verdict
/// as a JSON line, in payload order.
fn agree(workload: &Workload, naive: &Naive) -> Vec<u8> {
    let defects: Vec<Value> = lines(&read(&workload.dir, "defects.jsonl"))
        .map(|line| serde_json::from_slice(line).expect("defects.jsonl"))
        .collect();
    let mut verdicts = Vec::new();
    let mut naive_missed = 0;
    for (i, (body, defect)) in workload.payloads.iter().zip(&defects).enumerate() {
        let verdict = workload.policy.check(body);
        serde_json::to_writer(&mut verdicts, &verdict).expect("a verdict is JSON");
        verdicts.push(b'\n');
        let codes: Vec<&str> = verdict.violations.iter().map(|v| v.code.as_str()).collect();
        let wanted: Vec<&str> = defect["code"].as_str().into_iter().collect();
        let shape = workload.name();
        assert_eq!(codes, wanted, "{shape} payload {i}: {}", verdict.reasoning);
        if let [found] = verdict.violations.as_slice() {
            let call = defect["call"]
                .as_u64()
                .and_then(|c| usize::try_from(c).ok());
            assert_eq!(found.call, call, "{shape} payload {i}: the call");
            if let Some(path) = defect["path"].as_str() {
                assert_eq!(found.path.as_deref(), Some(path), "{shape} payload {i}");
            }
        }
        let naive_passed = naive_check(naive, body) == Some(0);
        assert!(
            naive_passed || !wanted.is_empty(),
            "{shape} payload {i}: the naive pipeline fails a clean payload"
        );
        naive_missed += usize::from(naive_passed && !wanted.is_empty());
    }
    let defective = workload.expected.iter().filter(|e| e.is_some()).count();
    eprintln!(
        "check/{}: toolgate flags exactly the {defective} defective payloads of {}; \
         the naive pipeline misses {naive_missed} of them",
        workload.name(),
        workload.payloads.len()
    );
    verdicts
}

fn sha256(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// The verdicts must be those recorded for this workload in
/// `bench/verdicts.json` (the same payloads, seed and bytes): compared by
/// the SHA-256 of the verdict lines.
fn same_verdicts(workload: &Workload, verdicts: &[u8]) {
    let dir = &workload.dir;
    // Kept for a diff with another run's.
    std::fs::write(dir.join("verdicts.jsonl"), verdicts).expect("write the verdicts");
    let stats: Value = serde_json::from_slice(&read(dir, "stats.json")).expect("stats.json");
    let record = serde_json::json!({
        "payloads": stats["payloads"],
        "seed": stats["seed"],
        "workload": sha256(&[&read(dir, "policy.yaml"), &read(dir, "payloads.jsonl")]),
        "verdicts": sha256(&[verdicts]),
    });
    let file = verdicts_file();
    let mut recorded: Map<String, Value> = std::fs::read(&file)
        .ok()
        .map(|text| serde_json::from_slice(&text).expect("bench/verdicts.json is JSON"))
        .unwrap_or_default();
    let name = workload.name();
    let shape = name.as_str();
    if std::env::var_os("TOOLGATE_BLESS_VERDICTS").is_some_and(|v| v == "1") {
        recorded.insert(shape.to_owned(), record);
        // Each shape, then its other layouts.
        let ordered: Map<String, Value> = SHAPES
            .iter()
            .flat_map(|s| {
                std::iter::once((*s).to_owned())
                    .chain(LAYOUTS.iter().map(move |layout| format!("{s}-{layout}")))
                    .chain(TEXTS.iter().map(move |text| format!("{s}-{text}")))
            })
            .filter_map(|s| {
                let record = recorded.get(&s)?.clone();
                Some((s, record))
            })
            .collect();
        let text = serde_json::to_string_pretty(&ordered).expect("JSON") + "\n";
        std::fs::write(&file, text).expect("write bench/verdicts.json");
        eprintln!("check/{shape}: verdicts recorded in bench/verdicts.json");
        return;
    }
    let Some(before) = recorded.get(shape) else {
        panic!(
            "check/{shape}: no verdicts recorded in bench/verdicts.json; record them with \
             TOOLGATE_BLESS_VERDICTS=1 at a commit whose verdicts are right"
        );
    };
    if before["payloads"] != record["payloads"] || before["seed"] != record["seed"] {
        eprintln!(
            "check/{shape}: verdicts are recorded for {} payloads of seed {}, not {} of seed {}: \
             not compared",
            before["payloads"], before["seed"], record["payloads"], record["seed"]
        );
        return;
    }
    assert_eq!(
        before["workload"],
        record["workload"],
        "check/{shape}: {} is not the workload the verdicts were recorded for \
         (bench/workload.py changed?); record them again with TOOLGATE_BLESS_VERDICTS=1 \
         at a commit whose verdicts are right",
        dir.display()
    );
    assert_eq!(
        before["verdicts"],
        record["verdicts"],
        "check/{shape}: the verdicts differ from those recorded in bench/verdicts.json; this \
         run's are in {}, one a payload: keep a copy, run the bench at the recorded commit \
         and diff the two",
        dir.join("verdicts.jsonl").display()
    );
}

fn bench_shape(c: &mut Criterion<CpuTime>, shape: &str) {
    let dir = workload_dir(shape);
    let workload = Workload::from_dir(&dir);
    assert_eq!(
        workload.name(),
        shape,
        "{}: a workload of another shape or layout",
        dir.display()
    );
    let naive = naive_validators(&workload);
    let verdicts = agree(&workload, &naive);
    same_verdicts(&workload, &verdicts);
    drop(verdicts);

    let run_toolgate = |bodies: &[Vec<u8>]| {
        for body in bodies {
            black_box(workload.policy.check(black_box(body)));
        }
    };
    let run_naive = |bodies: &[Vec<u8>]| {
        for body in bodies {
            black_box(naive_check(&naive, black_box(body)));
        }
    };
    let mut group = c.benchmark_group(format!("check/{}", workload.name()));
    group.throughput(Throughput::ElementsAndBytes {
        elements: workload.payloads.len() as u64,
        bytes: workload.bytes(),
    });
    // One iteration reads the whole workload (tens of milliseconds).
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    group.bench_function("toolgate", |b| b.iter(|| run_toolgate(&workload.payloads)));
    group.bench_function("naive", |b| b.iter(|| run_naive(&workload.payloads)));
    group.finish();
    if !std::env::args().any(|arg| arg == "--test" || arg == "--list") {
        paired(&workload, [&run_toolgate, &run_naive]);
    }
}

/// One pipeline over some payloads.
type Pass<'a> = dyn Fn(&[Vec<u8>]) + 'a;

/// Rounds of both pipelines over the whole workload, taking turns every
/// 256 payloads (`$TOOLGATE_PAIRED_CHUNK`; in turn, which goes first), written to `paired.json`
/// beside the workload as `[toolgate ns, naive ns]` of CPU time a round:
/// what else the shared machine runs at a moment weighs on both alike, so
/// the median of the rounds' ratios is steadier than the ratio of two
/// criterion runs seconds apart.
fn paired(workload: &Workload, pipelines: [&Pass<'_>; 2]) {
    const ROUNDS: usize = 15;
    // How many payloads between turns: `$TOOLGATE_PAIRED_CHUNK`, else 256.
    let chunk = std::env::var("TOOLGATE_PAIRED_CHUNK")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(256);
    let rounds: Vec<[u128; 2]> = (0..ROUNDS)
        .map(|round| {
            let mut spent = [Duration::ZERO; 2];
            for (k, chunk) in workload.payloads.chunks(chunk).enumerate() {
                let first = (round + k) % 2;
                for which in [first, 1 - first] {
                    let start = thread_cpu();
                    pipelines[which](chunk);
                    spent[which] += thread_cpu().saturating_sub(start);
                }
            }
            spent.map(|d| d.as_nanos())
        })
        .collect();
    let text = serde_json::to_string(&serde_json::json!({ "rounds": rounds })).expect("JSON");
    std::fs::write(workload.dir.join("paired.json"), text).expect("write paired.json");
}

fn bench(c: &mut Criterion<CpuTime>) {
    for shape in shapes() {
        bench_shape(c, &shape);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .with_measurement(CpuTime)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    targets = bench
}
criterion_main!(benches);
