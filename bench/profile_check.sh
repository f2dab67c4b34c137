#!/usr/bin/env bash
# Where check spends its instructions on each workload shape, toolgate
# beside the naive pipeline (bench/callgrind_split.py says what each column
# holds): callgrind over examples/check_workload, on smaller workloads than
# bench/check.sh's (2,000 payloads, 400 for large; same seed).
#
# usage: bash bench/profile_check.sh [SHAPE...]   (all shapes by default;
# a whole body's shape in another layout, or a shape's free text written
# another way, as bench/check.sh names them: gemini-indent, openai-escaped)
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
shapes="${*:-openai anthropic responses gemini bedrock chat-sse messages-sse responses-sse gemini-sse bedrock-stream vercel-sse small large deep formats numbers openai-thinking anthropic-thinking gemini-thinking bedrock-thinking large-anthropic}"
out="$target/profile-check"
mkdir -p "$out"
cargo build --release -p toolgate --example check_workload
example="$target/release/examples/check_workload"
for shape in $shapes; do
  # By the shape, in any layout or text.
  count=2000
  case "$shape" in
    large | large-* | chat-sse | chat-sse-* | responses-sse | responses-sse-*) count=400 ;;
  esac
  python3 bench/workload.py "$out/$shape" --name "$shape" --count "$count" 2>/dev/null
  # One pass and two: the difference is one pass in the steady state (the
  # first compiles what is compiled on first use, as a schema's validator
  # for serde_json values).
  for pipeline in toolgate naive; do
    for more in 0 1; do
      TOOLGATE_WORKLOAD="$out/$shape" valgrind --tool=callgrind \
        --callgrind-out-file="$out/$shape.$pipeline.$more.cg" "$example" "$((more + 1))" "$pipeline" >/dev/null 2>&1
    done
  done
done
python3 bench/callgrind_split.py "$out" $shapes
