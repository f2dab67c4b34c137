#!/usr/bin/env bash
# Policy::check, bytes to verdict on one core, over each workload shape of
# bench/workload.py beside the naive pipeline users write for its wire
# format (serde_json + jsonschema, formats on), in one criterion run
# (crates/toolgate/benches/check.rs, which first asserts that every
# verdict is the one recorded in bench/verdicts.json); then prints a
# table: shape, payloads, calls and bytes a payload, naive and toolgate
# µs of CPU time a payload, the ratio naive / toolgate, the median ratio
# of 15 rounds in which both take turns (steadier on a shared machine),
# and the goal (≥ 2x) met or missed.
#
# usage: bash bench/check.sh [SHAPE...]       (or TOOLGATE_SHAPES=large,deep)
# Shapes: openai anthropic responses gemini bedrock chat-sse messages-sse responses-sse gemini-sse bedrock-stream vercel-sse small large deep formats numbers openai-thinking anthropic-thinking gemini-thinking bedrock-thinking large-anthropic openai-request anthropic-request;
# a whole body's shape in another layout (bench/workload.py --layout):
# SHAPE-indent (a line a member, two spaces a level), SHAPE-spaced (`, `
# and `: `). By default all shapes, and openai-indent, responses-indent
# and gemini-indent: the OpenAI and Gemini APIs serve their answers
# indented, and a reader that skips whitespace a byte at a time pays for
# it there.
# A shape whose calls hold free text (openai to vercel-sse) may also be
# named with that text written another way (bench/workload.py --text):
# SHAPE-unicode (in other scripts, as UTF-8), SHAPE-escaped (the same,
# every character past ASCII a \uXXXX escape in the arguments, as Python's
# json.dumps writes it by default). By default also openai-escaped and
# gemini-escaped.
# Workloads: $CARGO_TARGET_DIR/workloads/<shape> (or $TOOLGATE_WORKLOADS),
# 10,000 payloads each but large, 2,000 (37 KB each, 73 MB in all),
# chat-sse, 2,000 (25 KB each, 51 MB), responses-sse, 2,000 (43 KB
# each, 87 MB; the `-sse` shapes' lines are event-stream bodies as JSON
# strings), and responses-indent, 4,000 (16 KB each, 65 MB);
# written again when bench/workload.py or bench/shapes/ is newer.
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
shapes="${*:-${TOOLGATE_SHAPES:-openai anthropic responses gemini bedrock chat-sse messages-sse responses-sse gemini-sse bedrock-stream vercel-sse small large deep formats numbers openai-thinking anthropic-thinking gemini-thinking bedrock-thinking large-anthropic openai-request anthropic-request openai-indent responses-indent gemini-indent openai-escaped gemini-escaped}}"
shapes="${shapes//,/ }"
export TOOLGATE_WORKLOADS="$(realpath -m "${TOOLGATE_WORKLOADS:-$target/workloads}")"
for shape in $shapes; do
  # By the shape, in any layout or text.
  count=10000
  case "$shape" in
    large | large-* | chat-sse | chat-sse-* | responses-sse | responses-sse-*) count=2000 ;;
    responses-indent) count=4000 ;;
  esac
  dir="$TOOLGATE_WORKLOADS/$shape"
  # stats.json is written last: without it, the workload is incomplete;
  # one of another size is written again too.
  if [ ! -f "$dir/stats.json" ] || ! grep -q "\"payloads\": $count," "$dir/stats.json" \
    || [ -n "$(find bench/workload.py bench/shapes -newer "$dir/stats.json")" ]; then
    python3 bench/workload.py "$dir" --name "$shape" --count "$count"
  fi
  rm -f "$dir/paired.json"
done
TOOLGATE_SHAPES="$(echo $shapes | tr ' ' ',')" cargo bench -p toolgate --bench check
python3 bench/check_table.py "$target/criterion" "$TOOLGATE_WORKLOADS" $shapes
