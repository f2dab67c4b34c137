#!/usr/bin/env bash
# Two or more builds of `toolgate serve` at a fixed rate, alternated run
# after run on one machine, beside the direct path and a pass-through proxy
# in each round: what bench/gateway.sh measures once, measured in rounds,
# with the medians of the rounds. For a change to the gateway whose effect
# on a p99 is smaller than one run's noise.
#
#   bash bench/gateway_ab.sh OLD_DIR NEW_DIR [MORE_DIRS...]
#
# Each directory holds a `toolgate` binary (copy one aside before building
# the next). The mock upstream, the pass-through proxy and the load
# generator are built from the tree (or taken from GATEWAY_BINARIES, as in
# bench/gateway.sh). Every build gets a gateway of its own, started once,
# with its audit on tmpfs or on disk; each round runs the direct path, the
# pass-through and every gateway (in an order that turns each round) for
# GATEWAY_DURATION seconds at GATEWAY_RATE requests/s over 64 connections.
#
# With the audit on disk (whole answers: not streams), each round also
# runs the pass-through made durable (`passthrough --sync`: a record of
# each answer written and `fdatasync`ed in groups before it is released,
# in the same directory as the audits): the floor any proxy that syncs a
# record per answer pays on this disk.
#
# Prints, per round and as medians, the latency each adds to the direct
# path at p50 and p99, and each process's CPU time, thread switches and
# bytes written to storage per request (from /proc). Environment:
# GATEWAY_AB_ROUNDS (6), GATEWAY_AB_AUDIT (tmpfs or disk: where the
# audit is; tmpfs is GATEWAY_TMPFS, default /dev/shm; disk is
# GATEWAY_AUDIT_DIR, default the cargo target directory),
# GATEWAY_AB_ROUTE (chat, messages, responses: OpenAI's Responses API,
# or stream: chat completions streamed by a mock sending one event each
# GATEWAY_PAUSE_MS (2), compared by the first text byte, at
# GATEWAY_STREAM_RATE streams/s (500); messages-stream and
# responses-stream: the same for the other two APIs),
# GATEWAY_DURATION (10), GATEWAY_RATE (1000), GATEWAY_CONNECTIONS (64),
# GATEWAY_AB_AGE (0: seconds each gateway is first sent requests as fast
# as answered, its index caught up after, so that the builds are compared
# with the aged index of a gateway that has run a while rather than an
# empty one: a change to the indexer can measure one way on each).
# Writes the JSON lines and logs to bench/results/gateway-ab-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/gateway_common.sh
[ $# -ge 2 ] || { echo "usage: $0 OLD_DIR NEW_DIR [MORE_DIRS...]" >&2; exit 2; }
builds=("$@")
for b in "${builds[@]}"; do
  [ -x "$b/toolgate" ] || { echo "no toolgate binary in $b" >&2; exit 2; }
done
target="${CARGO_TARGET_DIR:-target}"
rounds="${GATEWAY_AB_ROUNDS:-6}"
where="${GATEWAY_AB_AUDIT:-tmpfs}"
route="${GATEWAY_AB_ROUTE:-chat}"
duration="${GATEWAY_DURATION:-10}"
rate="${GATEWAY_RATE:-1000}"
connections="${GATEWAY_CONNECTIONS:-64}"
age="${GATEWAY_AB_AGE:-0}"
out="bench/results/gateway-ab-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

binaries "$target"
audit_root "$where" gateway-ab "$target" GATEWAY_AB_AUDIT

# The route: its path and body (its line of bench/gateway_bodies.py), the
# mock's pause between stream events, and what is compared (the whole
# answer's latency, or a stream's first text byte).
case "$route" in
  chat) path=/v1/chat/completions line=1 ;;
  stream) path=/v1/chat/completions line=2 ;;
  messages) path=/v1/messages line=3 ;;
  responses) path=/v1/responses line=4 ;;
  messages-stream) path=/v1/messages line=5 ;;
  responses-stream) path=/v1/responses line=6 ;;
  *) echo "GATEWAY_AB_ROUTE: chat, messages, responses, stream, messages-stream or responses-stream" >&2; exit 2 ;;
esac
body="$(python3 bench/gateway_bodies.py | sed -n "${line}p")"
extra=()
if [ "$path" = /v1/messages ]; then
  extra=(--header 'anthropic-version: 2023-06-01')
fi
pause=0 measure=latency_ms
case "$route" in
  *stream) pause="${GATEWAY_PAUSE_MS:-2}" measure=first_text_ms rate="${GATEWAY_STREAM_RATE:-500}" ;;
esac

MOCK_PAUSE_MS="$pause" "$tools/mock_upstream" 127.0.0.1:0 2> "$out/mock.log" & pids+=($!)
upstream="$(started "$out/mock.log" $!)"
"$tools/passthrough" 127.0.0.1:0 "http://$upstream" 2> "$out/passthrough.log" & pids+=($!)
pass_pid=$!
pass="$(started "$out/passthrough.log" $!)"
durable=""
if [ "$where" = disk ] && [ "$measure" = latency_ms ]; then
  mkdir -p "$root/durable"
  "$tools/passthrough" 127.0.0.1:0 "http://$upstream" --sync "$root/durable" \
    2> "$out/passthrough-durable.log" & pids+=($!)
  durable_pid=$!
  durable="$(started "$out/passthrough-durable.log" $!)"
fi
declare -a gateway_addr gateway_pid
for i in "${!builds[@]}"; do
  dir="$root/build$i"
  mkdir -p "$dir"
  policy "$dir/audit.db" > "$dir/policy.yaml"
  "${builds[$i]}/toolgate" serve --policy "$dir/policy.yaml" --listen 127.0.0.1:0 \
    --upstream "http://$upstream" 2> "$out/gateway$i.log" & pids+=($!)
  gateway_pid[$i]=$!
  gateway_addr[$i]="$(started "$out/gateway$i.log" $!)"
done

results="$out/results.jsonl"
: > "$results"
: > "$out/usage.txt"
run() { # round name addr [pid]
  local before=""
  [ -z "${4:-}" ] || before="$(usage "$4")"
  "$tools/load" --label "$1 $2" --url "http://$3$path" --body "$body" --connections "$connections" \
    --duration "$duration" --rate "$rate" --threads 1 "${extra[@]}" >> "$results"
  [ -z "${4:-}" ] || printf '%s\t%s\t%s\n' "$2" "$before" "$(usage "$4")" >> "$out/usage.txt"
}
n=${#builds[@]}
if [ "$age" != 0 ]; then
  for i in "${!builds[@]}"; do
    "$tools/load" --label "age build$i" --url "http://${gateway_addr[$i]}$path" --body "$body" \
      --connections "$connections" --duration "$age" --threads 1 "${extra[@]}" >> "$out/age.jsonl"
  done
  for i in "${!builds[@]}"; do
    echo "build$i aged: $(settled "${gateway_addr[$i]}")" >&2
  done
fi
for r in $(seq 1 "$rounds"); do
  echo "round $r of $rounds (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  run "r$r" direct "$upstream"
  run "r$r" pass "$pass" "$pass_pid"
  [ -z "$durable" ] || run "r$r" durable "$durable" "$durable_pid"
  for k in $(seq 0 $((n - 1))); do
    j=$(( (k + r) % n ))
    run "r$r" "build$j" "${gateway_addr[$j]}" "${gateway_pid[$j]}"
  done
done
{
  echo "gateway builds: ${builds[*]}; audit on $where; $route at $rate requests/s, $duration s runs, $rounds rounds$([ "$age" = 0 ] || echo "; each aged $age s as fast as answered first")"
  python3 - "$results" "$out/usage.txt" "$duration" "$rate" "$measure" <<'PY'
import collections, json, statistics, sys
results, usage = sys.argv[1], sys.argv[2]
duration, rate, measure = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
by = collections.defaultdict(dict)
for line in open(results):
    r = json.loads(line)
    rnd, name = r["label"].split(" ", 1)
    by[rnd][name] = r[measure]
names = sorted({n for d in by.values() for n in d if n != "direct"})
print(f"added to the direct path, p50/p99 ms ({measure})")
print(f"{'round':7}" + "".join(f"{n:>18}" for n in names) + f"{'direct':>18}")
added = collections.defaultdict(lambda: ([], []))
for rnd, d in by.items():
    cells = []
    for n in names:
        a50, a99 = d[n]["p50"] - d["direct"]["p50"], d[n]["p99"] - d["direct"]["p99"]
        added[n][0].append(a50)
        added[n][1].append(a99)
        cells.append(f"{a50:+.3f}/{a99:+.3f}")
    print(f"{rnd:7}" + "".join(f"{c:>18}" for c in cells) + f"{d['direct']['p50']:>10.3f}/{d['direct']['p99']:.3f}")
print(f"{'median':7}" + "".join(
    f"{statistics.median(added[n][0]):>+10.3f}/{statistics.median(added[n][1]):+.3f}" for n in names))
# Per request: the load generator's warm-up second (not recorded) is
# sent at the same rate, so each run sent (duration + 1) * rate requests.
use = collections.defaultdict(list)
for line in open(usage):
    name, before, after = line.rstrip("\n").split("\t")
    a, b = json.loads(before), json.loads(after)
    use[name].append(((b["cpu_ticks"] - a["cpu_ticks"]) / b["ticks_per_second"] * 1e3,
                      b["voluntary"] - a["voluntary"], b["involuntary"] - a["involuntary"],
                      (b["write_bytes"] - a["write_bytes"]) / 1024))
sent = (duration + 1) * rate
print("per request (medians of the rounds): CPU ms, voluntary and involuntary thread switches,"
      " KiB written to storage")
for name in names:
    rows = use.get(name)
    if rows:
        print(f"  {name:8} {statistics.median(r[0] for r in rows) / sent:7.3f} ms"
              f" {statistics.median(r[1] for r in rows) / sent:6.2f} {statistics.median(r[2] for r in rows) / sent:6.2f}"
              f" {statistics.median(r[3] for r in rows) / sent:8.1f} KiB")
PY
} | tee "$out/table.txt"
