#!/usr/bin/env bash
# Two builds of the check bench alternated, to tell a change from this
# machine's noise (the same binary can give a shape's paired ratio 1.79 in
# one run and 1.95 in the next): each binary in turn runs only its
# verdict checks and its paired rounds (no criterion measurement) on each
# shape, RUNS times, and the median of each run's paired ratios is printed,
# then per shape and binary the median over the runs.
#
# usage: bash bench/check_ab.sh OLD_BINARY NEW_BINARY [SHAPE...]
#   (the shapes of bench/check.sh; openai anthropic gemini bedrock small
#   by default)
# The binaries are check bench executables, as built by
#   cargo bench -p toolgate --bench check --no-run
# (cargo prints the path: target/release/deps/check-<hash>); copy the first
# aside before building the second. The workloads are bench/check.sh's
# ($TOOLGATE_WORKLOADS, else the cargo target directory's workloads/): run
# it once first. Environment: RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old="$(realpath "$1")" new="$(realpath "$2")"
shift 2
shapes="${*:-openai anthropic gemini bedrock small}"
runs="${RUNS:-3}"
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
export TOOLGATE_WORKLOADS="$(realpath -m "${TOOLGATE_WORKLOADS:-$target/workloads}")"
for shape in $shapes; do
  [ -f "$TOOLGATE_WORKLOADS/$shape/stats.json" ] \
    || { echo "no workload $TOOLGATE_WORKLOADS/$shape: run bash bench/check.sh $shape first" >&2; exit 1; }
done
results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for run in $(seq 1 "$runs"); do
  for which in old new; do
    binary="$old"
    [ "$which" = new ] && binary="$new"
    for shape in $shapes; do
      paired="$TOOLGATE_WORKLOADS/$shape/paired.json"
      rm -f "$paired"
      # A filter no benchmark matches: the verdicts are still checked
      # (a binary whose verdicts differ fails here) and the rounds run.
      TOOLGATE_SHAPES="$shape" "$binary" --bench no-criterion-benchmark > /dev/null
      python3 - "$paired" "$run" "$which" "$shape" <<'PY' | tee -a "$results"
import json, statistics, sys
path, run, which, shape = sys.argv[1:]
rounds = json.load(open(path))["rounds"]
ratios = sorted(naive / toolgate for toolgate, naive in rounds)
print(json.dumps({"run": int(run), "build": which, "shape": shape,
                  "ratio": round(statistics.median(ratios), 3),
                  "low": round(ratios[0], 3), "high": round(ratios[-1], 3),
                  "toolgate_ms": round(statistics.median(t for t, _ in rounds) / 1e6, 2)}))
PY
    done
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"\n{'shape':14} {'old ratio':>9} {'new ratio':>9} {'new/old':>8} {'old tg ms':>9} {'new tg ms':>9}"
      "  (medians over the runs of each run's paired median; ratios naive / toolgate)")
for shape in dict.fromkeys(r["shape"] for r in rows):
    med = {b: statistics.median(r["ratio"] for r in rows if r["shape"] == shape and r["build"] == b)
           for b in ("old", "new")}
    ms = {b: statistics.median(r["toolgate_ms"] for r in rows if r["shape"] == shape and r["build"] == b)
          for b in ("old", "new")}
    print(f"{shape:14} {med['old']:9.3f} {med['new']:9.3f} {med['new'] / med['old']:8.3f} "
          f"{ms['old']:9.2f} {ms['new']:9.2f}")
PY
