#!/usr/bin/env bash
# detect per wire format against plain serde_json::Value parsing of the same
# bytes, in one criterion run, and streams through the Assembler in 256-byte
# chunks; prints medians, MB/s, calls/s and each column / toolgate ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo bench -p toolgate --bench detect -- "$@"
cargo run -q -p toolgate --example count_calls > "$target/detect-calls.json"
python3 bench/criterion_table.py "$target/criterion" detect/ serde_json_value,serde_json_value_and_arguments,toolgate_assembler_256b_chunks "$target/detect-calls.json"
