#!/usr/bin/env bash
# `toolgate eval` over generated workloads (bench/workload.py: OpenAI Chat
# Completions responses, 12 tools, a fifth defective) of 100k and 1M traces,
# and 10M when asked (EVAL_SIZES="100000 1000000 10000000": about 11 GB of
# workload on disk; without the room, the 1M workload ten times through a
# pipe), beside the Python +
# jsonschema baseline (bench/python_baseline.py). Prints traces/s, calls/s
# and peak RSS per size, the ratio to Python, the load average at the start
# of each run, the goals of issue 12 beside the figures, met or missed (at
# least 1,000,000 calls/s on this machine's cores at 100k traces, peak RSS
# under 64 MiB and flat within 10% across the sizes), and whether toolgate's
# counts match the workload's stats.json.
#
# Environment: EVAL_SIZES (default "100000 1000000"), EVAL_RUNS (toolgate
# runs per size, the median wall time and the largest RSS kept; default 3),
# EVAL_STREAM=1 (stream every size a smaller generated one divides, even with
# room on disk),
# EVAL_PY_BUDGET (seconds: Python runs on a larger size only when its
# estimate from the smallest size is under this; default 600).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
sizes="${EVAL_SIZES:-100000 1000000}"
runs="${EVAL_RUNS:-3}"
budget="${EVAL_PY_BUDGET:-600}"
venv="$target/bench-venv"
out="$target/eval-bench"
cores="$(nproc)"
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.txt "$out"/*.err

if [ ! -x /usr/bin/time ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq time
fi

if ! "$venv/bin/python" -c 'import jsonschema, yaml, rfc3339_validator, rfc3986_validator' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'jsonschema[format-nongpl]' pyyaml
fi

# Each size reads its own workload file, generated once; a size with no room
# on disk for it streams the largest generated workload whose size divides it,
# repeated through a pipe ($out/source-N.txt: that size and how many times),
# so memory is still measured over that many traces.
source_of() { # size -> "size repeats"
  [ -f "$target/eval-workload-$1/stats.json" ] && { echo "$1 1"; return; }
  local m best=""
  for m in $sizes; do
    [ "$m" -lt "$1" ] && [ $(( $1 % m )) -eq 0 ] && [ -f "$target/eval-workload-$m/stats.json" ] && best="$m"
  done
  [ -n "$best" ] && echo "$best $(( $1 / best ))"
}
for n in $sizes; do
  dir="$target/eval-workload-$n"
  # stats.json is written last: without it, the workload is incomplete.
  [ -f "$dir/stats.json" ] && continue
  # About 1.1 KB a trace (payloads and defects), and 1 GiB to spare.
  need_kb=$(( n * 11 / 10 + (1 << 20) ))
  free_kb="$(df -Pk "$target" | awk 'NR == 2 {print $4}')"
  if [ "${EVAL_STREAM:-0}" = 1 ] && [ -n "$(source_of "$n")" ]; then
    echo "eval workload of $n traces: streaming $(source_of "$n" | awk '{print $2 " times the workload of " $1}')" >&2
  elif [ "$free_kb" -ge "$need_kb" ]; then
    python3 bench/workload.py "$dir" --count "$n"
  elif [ -n "$(source_of "$n")" ]; then
    echo "eval workload of $n traces: needs about $(( need_kb >> 20 )) GiB, $(( free_kb >> 20 )) GiB free;" \
      "streaming $(source_of "$n" | awk '{print $2 " times the workload of " $1}') traces instead" >&2
  else
    echo "eval workload of $n traces: needs about $(( need_kb >> 20 )) GiB, $(( free_kb >> 20 )) GiB free in $target" >&2
    exit 1
  fi
done

cargo build --release -p toolgate-cli
bin="$target/release/toolgate"

for n in $sizes; do
  read -r m repeats <<< "$(source_of "$n")"
  echo "$m $repeats" > "$out/source-$n.txt"
  dir="$target/eval-workload-$m"
  for r in $(seq 1 "$runs"); do
    echo "toolgate eval, $n traces, run $r of $runs (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    cat /proc/loadavg > "$out/load-$n-$r.txt"
    # stderr is a file, not a terminal: no progress bar. The wall time to
    # the microsecond beside time's (which counts hundredths: 4% of a
    # 0.22 s run).
    started="$(date +%s%N)"
    if [ "$repeats" = 1 ]; then
      /usr/bin/time -v -o "$out/time-$n-$r.txt" \
        "$bin" eval --policy "$dir/policy.yaml" "$dir/payloads.jsonl" --json "$out/summary-$n-$r.json" \
        > "$out/eval-$n-$r.txt" 2> "$out/eval-$n-$r.err"
    else
      for _ in $(seq 1 "$repeats"); do cat "$dir/payloads.jsonl"; done |
        /usr/bin/time -v -o "$out/time-$n-$r.txt" \
          "$bin" eval --policy "$dir/policy.yaml" - --json "$out/summary-$n-$r.json" \
          > "$out/eval-$n-$r.txt" 2> "$out/eval-$n-$r.err"
    fi || {
      echo "toolgate eval exited $? on $n traces (run $r); see $out/eval-$n-$r.err" >&2
      exit 1
    }
    echo "$(( $(date +%s%N) - started ))" > "$out/wall-$n-$r.txt"
  done
done

# Python: always on the smallest size; on a larger one only when the
# estimate from the smallest is under the budget. One process, then one
# process per core.
py_run() { # size processes
  local n="$1" p="$2"
  echo "python baseline, $n traces, $p process(es) (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$venv/bin/python" bench/python_baseline.py "$target/eval-workload-$n" --processes "$p" \
    > "$out/python-$n-p$p.json"
}
first=""
for n in $sizes; do
  for p in 1 "$cores"; do
    [ "$p" = 1 ] || [ "$cores" -gt 1 ] || continue
    if [ ! -f "$target/eval-workload-$n/stats.json" ]; then
      echo "{\"skipped\": true, \"streamed\": true}" > "$out/python-$n-p$p.json"
      continue
    fi
    if [ -n "$first" ]; then
      base="$out/python-$first-p$p.json"
      estimate="$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["seconds"] * int(sys.argv[2]) / int(sys.argv[3])))' "$base" "$n" "$first")"
      if [ "$estimate" -ge "$budget" ]; then
        echo "python baseline, $n traces, $p process(es): skipped, estimated ${estimate}s (budget ${budget}s)" >&2
        echo "{\"skipped\": true, \"estimated_seconds\": $estimate}" > "$out/python-$n-p$p.json"
        continue
      fi
    fi
    py_run "$n" "$p"
  done
  first="${first:-$n}"
done

python3 bench/eval_table.py "$out" "$target" --sizes $sizes --runs "$runs" --cores "$cores" | tee "$out/table.txt"
