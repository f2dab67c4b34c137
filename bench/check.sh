#!/usr/bin/env bash
# Policy::check over a generated workload of OpenAI Chat Completions
# responses (bench/workload.py: 10,000 payloads, 12 tools, a fifth
# defective) beside the naive serde_json + jsonschema pipeline, in one
# criterion run; prints µs per payload, payloads/s, calls/s and the ratio
# naive / toolgate (above 1: toolgate is faster).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
export TOOLGATE_WORKLOAD="${TOOLGATE_WORKLOAD:-$target/workload}"
[ -f "$TOOLGATE_WORKLOAD/stats.json" ] || python3 bench/workload.py "$TOOLGATE_WORKLOAD" --count 10000
cargo bench -p toolgate --bench check -- "$@"
python3 -c 'import json, sys; print(json.dumps({"check": json.load(open(sys.argv[1]))["calls"]}))' \
  "$TOOLGATE_WORKLOAD/stats.json" > "$target/check-calls.json"
python3 bench/criterion_table.py "$target/criterion" check naive "$target/check-calls.json"
