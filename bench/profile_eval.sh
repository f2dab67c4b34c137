#!/usr/bin/env bash
# Where the whole `toolgate eval` process spends its time, the check beside
# everything around it: perf samples (cpu-clock, with DWARF call graphs) of
# one run over bench/eval.sh's 100k-trace workload, every thread and the
# kernel's work for the process included, split by bench/eval_profile.py
# into the check (detect, judge), dropping the verdict and tallying it, the
# search for dataset rows, reading the input (system calls, fingerprint,
# lines), start-up (policy load and compile), the fold and the outputs.
#
# usage: bash bench/profile_eval.sh [SIZE]   (100000 by default; the
# workload is generated as bench/eval.sh does, if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
size="${1:-100000}"
dir="$target/eval-workload-$size"
out="$target/profile-eval"
mkdir -p "$out"
if ! command -v perf > /dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq linux-perf
fi
[ -f "$dir/stats.json" ] || python3 bench/workload.py "$dir" --count "$size"
cargo build --release -p toolgate-cli
echo "toolgate eval, $size traces, under perf (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
perf record -q -e cpu-clock -F 4000 --call-graph dwarf,16384 -o "$out/perf.data" \
  "$target/release/toolgate" eval --policy "$dir/policy.yaml" "$dir/payloads.jsonl" \
  --json "$out/summary.json" > /dev/null
perf script -i "$out/perf.data" -F tid,ip,sym > "$out/stacks.txt" 2> /dev/null
python3 bench/eval_profile.py "$out/stacks.txt"
