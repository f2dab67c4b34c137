#!/usr/bin/env bash
# `toolgate serve` under load, beside the same requests sent straight to the
# upstream: the mock upstream (crates/toolgate-gateway/examples/mock_upstream.rs)
# answers, the load generator (examples/load.rs) sends JSON bodies over 64
# connections and prints one JSON line per run. In one run:
#
# - chat completions, whole body, one tool call (get_weather {"city":
#   "Paris"}), the request declaring 8 tools with JSON Schemas, as agents
#   send them: direct, through a pass-through proxy on the gateway's own
#   stack (examples/passthrough.rs: tokio, hyper, reqwest, nothing
#   checked or audited: what the hop alone costs on this machine) and
#   through the gateway, as fast as the connections go
#   (closed loop: requests/s) and at a fixed rate (open loop: the latency a
#   client sees at a load the machine carries); through the gateway twice,
#   with the audit (`audit.sqlite`: its log and its index) on disk (the
#   default setup) and on tmpfs (to show the cost of the commit's
#   fdatasync), and through the pass-through made durable with its
#   records on disk (`passthrough --sync`: a record of each answer written
#   and `fdatasync`ed in groups before the answer is released, as the audit
#   log commits: the floor any proxy that syncs a record per answer pays
#   on this disk);
# - chat completions, Anthropic messages and OpenAI Responses streams
#   from a second mock sending one event each MOCK_PAUSE_MS: the time to
#   the first text byte and to the last byte, direct, through the
#   pass-through proxy and through the gateway;
# - Anthropic /v1/messages and OpenAI /v1/responses, whole body, direct,
#   through the pass-through proxies and through the gateway
#   (audit on disk and on tmpfs, as for chat completions);
# - the disk's own `fdatasync`, on the filesystem of the on-disk audit,
#   before the runs and after them: 4 KiB written then `fdatasync`ed, a few
#   thousand times, into a file written before (as the audit log writes its
#   segments) and appended to a growing file (as a plain append-only file
#   would); and the same on the tmpfs;
# - each gateway's peak RSS (VmHWM) after its load, and the size of its
#   audit index, its WAL and its log (removed on exit);
# - from the gateway's own /metrics before and after each whole-body run:
#   the mean time per request to the upstream's headers, in the check, and
#   in the rest (the upstream body, the audit commit, the response); the
#   audit writer's mean group and the mean time to write and sync it;
#   and, from /proc, the gateway process's CPU time (user + system) and
#   its threads' switches (voluntary: a thread waited; involuntary: it
#   was preempted) and the bytes it had written to storage (its page
#   writeback: the audit log's and its index's) per request: figures the
#   other load on the machine changes far less than its tail latency.
#
# The closed-loop runs go once; the fixed-rate runs go in GATEWAY_ROUNDS
# rounds (each round every workload direct, through the pass-through and
# through the gateways, one after the other), and the table gives the
# median of the rounds: of each percentile, and of what each round's run
# added to that round's direct one. A stall of a few milliseconds in one
# run moves one round's figure, not the median.
#
# Prints a table (added latency at p50/p99 and added time to the first text
# byte) and, at 1000 requests/s, each goal beside its figure, met or
# missed: with the audit on disk, added p99 at most the disk's own
# `fdatasync` p99 (into a file written before) plus 0.5 ms; with the audit
# on tmpfs, at most 0.5 ms; the same for Anthropic messages and OpenAI
# Responses as for chat completions; the first streamed text byte at most
# 0.3 ms later at p99.
# Writes it, the JSON lines and the logs to bench/results/gateway-<time>/.
# The load generator, the mocks and the gateways share the machine's
# cores: the table says how many, and the load average before each run.
#
# Environment: GATEWAY_DURATION (seconds per run, default 10),
# GATEWAY_CONNECTIONS (64), GATEWAY_RATE (requests/s of the fixed-rate
# runs, 1000), GATEWAY_STREAM_RATE (streams/s, 500), GATEWAY_ROUNDS (rounds
# of the fixed-rate runs, 5), GATEWAY_PAUSE_MS (2),
# GATEWAY_LOAD_THREADS (the load generator's threads, 1),
# GATEWAY_AUDIT_DIR (where the on-disk audit goes; default the cargo
# target directory, which is on disk where /tmp may be tmpfs),
# GATEWAY_TMPFS (the tmpfs directory, default /dev/shm; empty: skip),
# GATEWAY_SYNCS (fdatasync calls per probe, 3000), GATEWAY_BINARIES (a
# directory holding `toolgate`, `mock_upstream`, `passthrough` and `load`
# to run instead of building them: to compare two builds run after run,
# turn about).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/gateway_common.sh
target="${CARGO_TARGET_DIR:-target}"
duration="${GATEWAY_DURATION:-10}"
connections="${GATEWAY_CONNECTIONS:-64}"
rate="${GATEWAY_RATE:-1000}"
stream_rate="${GATEWAY_STREAM_RATE:-500}"
rounds="${GATEWAY_ROUNDS:-5}"
pause="${GATEWAY_PAUSE_MS:-2}"
threads="${GATEWAY_LOAD_THREADS:-1}"
syncs="${GATEWAY_SYNCS:-3000}"
tmpfs="${GATEWAY_TMPFS-/dev/shm}"
out="bench/results/gateway-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out" "${GATEWAY_AUDIT_DIR:-$target}"

binaries "$target"
mock="$tools/mock_upstream"
passthrough="$tools/passthrough"
load="$tools/load"

disk="$(mktemp -d "${GATEWAY_AUDIT_DIR:-$target}/gateway-bench.XXXXXX")"
shm=""
if [ -n "$tmpfs" ] && [ -d "$tmpfs" ]; then
  shm="$(mktemp -d "$tmpfs/toolgate-gateway-bench.XXXXXX")"
fi
stop() {
  stop_started
  rm -rf "$disk" ${shm:+"$shm"}
}
trap stop EXIT
trap 'exit 130' INT TERM

MOCK_PAUSE_MS=0 "$mock" 127.0.0.1:0 2> "$out/mock.log" & pids+=($!)
upstream="$(started "$out/mock.log" $!)"
MOCK_PAUSE_MS="$pause" "$mock" 127.0.0.1:0 2> "$out/mock-stream.log" & pids+=($!)
stream_upstream="$(started "$out/mock-stream.log" $!)"
"$passthrough" 127.0.0.1:0 "http://$upstream" 2> "$out/passthrough.log" & pids+=($!)
pass="$(started "$out/passthrough.log" $!)"
mkdir -p "$disk/durable"
"$passthrough" 127.0.0.1:0 "http://$upstream" --sync "$disk/durable" 2> "$out/passthrough-durable.log" & pids+=($!)
durable="$(started "$out/passthrough-durable.log" $!)"
"$passthrough" 127.0.0.1:0 "http://$stream_upstream" 2> "$out/passthrough-stream.log" & pids+=($!)
stream_pass="$(started "$out/passthrough-stream.log" $!)"

declare -A gateway_pid gateway_addr gateway_db pid_at
gateway() { # name audit-dir upstream
  local name="$1" db="$2/audit.db"
  policy "$db" > "$2/policy.yaml"
  "$bin" serve --policy "$2/policy.yaml" --listen 127.0.0.1:0 --upstream "http://$3" \
    2> "$out/gateway-$name.log" & pids+=($!)
  gateway_pid[$name]=$!
  gateway_addr[$name]="$(started "$out/gateway-$name.log" $!)"
  pid_at[${gateway_addr[$name]}]=$!
  gateway_db[$name]="$db"
}
mkdir -p "$disk/whole" "$disk/stream"
gateway disk "$disk/whole" "$upstream"
gateway stream "$disk/stream" "$stream_upstream"
[ -z "$shm" ] || gateway tmpfs "$shm" "$upstream"

# The disk's own fdatasync, where the audit is: 4 KiB a call, into a file
# written before (written over, as the audit log's segments are) and
# appended to a growing one. One JSON line per probe.
probe() { # label dir
  python3 - "$1" "$2" "$syncs" <<'PY' >> "$out/fdatasync.jsonl"
import json, os, subprocess, sys, time
label, where, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fs = (subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", where], capture_output=True, text=True).stdout
      or subprocess.run(["stat", "-f", "-c", "%T", where], capture_output=True, text=True).stdout).split("\n")[0]
block = os.urandom(4096)
found = {"probe": label, "fs": fs, "calls": n}
for mode in ("written_over", "appended"):
    path = os.path.join(where, f"fdatasync-probe-{os.getpid()}")
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    try:
        if mode == "written_over":
            os.write(fd, bytes(4096 * n))
            os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_SET)
        took = []
        for _ in range(n):
            began = time.perf_counter()
            os.write(fd, block)
            os.fdatasync(fd)
            took.append((time.perf_counter() - began) * 1e3)
    finally:
        os.close(fd)
        os.unlink(path)
    took.sort()
    at = lambda q: took[min(len(took) - 1, int(q * len(took)))]
    found[mode] = {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": took[-1]}
print(json.dumps(found))
PY
}
: > "$out/fdatasync.jsonl"
echo "fdatasync probes before the runs" >&2
probe "disk before" "$disk"
[ -z "$shm" ] || probe "tmpfs before" "$shm"

# Requests as agents send them: with their tool list (8 tools with JSON
# Schemas), which the gateway merges with the policy's.
bodies="$(python3 bench/gateway_bodies.py)"
chat="$(sed -n 1p <<< "$bodies")"
chat_stream="$(sed -n 2p <<< "$bodies")"
messages="$(sed -n 3p <<< "$bodies")"
responses="$(sed -n 4p <<< "$bodies")"
messages_stream="$(sed -n 5p <<< "$bodies")"
responses_stream="$(sed -n 6p <<< "$bodies")"
# The header every Anthropic request carries.
anthropic=(--header 'anthropic-version: 2023-06-01')

results="$out/results.jsonl"
: > "$results"
mkdir -p "$out/metrics"
scrape() { # addr file
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' \
    "http://$1/metrics" > "$2"
}
run() { # label addr path body rate [load flags...]
  local label="$1" addr="$2" path="$3" body="$4" at="$5" name waited=""
  shift 5
  name="$(echo "$label" | tr ' =' '__')"
  case "$label" in *gateway*) waited=", $(settled "$addr")" ;; esac
  echo "$label (load average $(cut -d' ' -f1-3 /proc/loadavg)$waited)" | tee -a "$out/load.txt" >&2
  # A gateway's own histograms before and after: where its time goes.
  case "$label" in *gateway*)
    scrape "$addr" "$out/metrics/$name.before"
    usage "${pid_at[$addr]}" > "$out/metrics/$name.usage.before" ;;
  esac
  "$load" --label "$label" --url "http://$addr$path" --body "$body" \
    --connections "$connections" --duration "$duration" --rate "$at" --threads "$threads" "$@" \
    >> "$results"
  case "$label" in *gateway*)
    scrape "$addr" "$out/metrics/$name.after"
    usage "${pid_at[$addr]}" > "$out/metrics/$name.usage.after" ;;
  esac
}
through=(disk)
[ -z "$shm" ] || through+=(tmpfs)

# The closed loop once; the fixed-rate runs in rounds, each round every
# workload direct, through the pass-through and through the gateways, so
# that a stall in one run moves one round's figure, not the median's.
chat_runs() { # rate [label suffix]
  run "chat direct rate=$1${2:-}" "$upstream" /v1/chat/completions "$chat" "$1"
  run "chat pass rate=$1${2:-}" "$pass" /v1/chat/completions "$chat" "$1"
  run "chat pass-durable rate=$1${2:-}" "$durable" /v1/chat/completions "$chat" "$1"
  for g in "${through[@]}"; do
    run "chat gateway-$g rate=$1${2:-}" "${gateway_addr[$g]}" /v1/chat/completions "$chat" "$1"
  done
}
stream_runs() { # rate [label suffix]
  run "stream direct rate=$1${2:-}" "$stream_upstream" /v1/chat/completions "$chat_stream" "$1"
  run "stream pass rate=$1${2:-}" "$stream_pass" /v1/chat/completions "$chat_stream" "$1"
  run "stream gateway-stream rate=$1${2:-}" "${gateway_addr[stream]}" /v1/chat/completions "$chat_stream" "$1"
  run "messages-stream direct rate=$1${2:-}" "$stream_upstream" /v1/messages "$messages_stream" "$1" "${anthropic[@]}"
  run "messages-stream pass rate=$1${2:-}" "$stream_pass" /v1/messages "$messages_stream" "$1" "${anthropic[@]}"
  run "messages-stream gateway-stream rate=$1${2:-}" "${gateway_addr[stream]}" /v1/messages "$messages_stream" "$1" \
    "${anthropic[@]}"
  run "responses-stream direct rate=$1${2:-}" "$stream_upstream" /v1/responses "$responses_stream" "$1"
  run "responses-stream pass rate=$1${2:-}" "$stream_pass" /v1/responses "$responses_stream" "$1"
  run "responses-stream gateway-stream rate=$1${2:-}" "${gateway_addr[stream]}" /v1/responses "$responses_stream" "$1"
}
messages_runs() { # rate [label suffix]
  run "messages direct rate=$1${2:-}" "$upstream" /v1/messages "$messages" "$1" "${anthropic[@]}"
  run "messages pass rate=$1${2:-}" "$pass" /v1/messages "$messages" "$1" "${anthropic[@]}"
  run "messages pass-durable rate=$1${2:-}" "$durable" /v1/messages "$messages" "$1" "${anthropic[@]}"
  for g in "${through[@]}"; do
    run "messages gateway-$g rate=$1${2:-}" "${gateway_addr[$g]}" /v1/messages "$messages" "$1" "${anthropic[@]}"
  done
}
responses_runs() { # rate [label suffix]
  run "responses direct rate=$1${2:-}" "$upstream" /v1/responses "$responses" "$1"
  run "responses pass rate=$1${2:-}" "$pass" /v1/responses "$responses" "$1"
  run "responses pass-durable rate=$1${2:-}" "$durable" /v1/responses "$responses" "$1"
  for g in "${through[@]}"; do
    run "responses gateway-$g rate=$1${2:-}" "${gateway_addr[$g]}" /v1/responses "$responses" "$1"
  done
}
chat_runs 0
stream_runs 0
messages_runs 0
responses_runs 0
for r in $(seq 1 "$rounds"); do
  echo "fixed-rate round $r of $rounds" >&2
  chat_runs "$rate" " round=$r"
  stream_runs "$stream_rate" " round=$r"
  messages_runs "$rate" " round=$r"
  responses_runs "$rate" " round=$r"
done
echo "fdatasync probes after the runs" >&2
probe "disk after" "$disk"
[ -z "$shm" ] || probe "tmpfs after" "$shm"

# Each gateway after its load: peak RSS, the calls it audited, the size of
# its audit index, of the index's WAL and of the audit log.
{
  for g in "${!gateway_pid[@]}"; do
    fs="$( (findmnt -n -o FSTYPE -T "$(dirname "${gateway_db[$g]}")" 2>/dev/null || stat -f -c %T "$(dirname "${gateway_db[$g]}")") | tail -1)"
    python3 - "$g" "${gateway_pid[$g]}" "${gateway_db[$g]}" "$fs" <<'PY'
import json, os, sqlite3, sys
name, pid, db, fs = sys.argv[1:]
status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
calls = sqlite3.connect(db).execute(
    "SELECT count(*) FROM audit_calls WHERE idempotency_key IS NOT NULL").fetchone()[0]
size = lambda path: os.path.getsize(path) if os.path.exists(path) else 0
log = db + "-log"
log_bytes = sum(size(os.path.join(log, f)) for f in os.listdir(log)) if os.path.isdir(log) else 0
print(json.dumps({"gateway": name, "vm_hwm_kb": int(status["VmHWM"].split()[0]),
                  "vm_rss_kb": int(status["VmRSS"].split()[0]), "audited_calls": calls,
                  "audit_fs": fs, "db_bytes": size(db), "wal_bytes": size(db + "-wal"),
                  "log_bytes": log_bytes}))
PY
  done
} > "$out/gateways.jsonl"
{
  echo "{\"cores\": $(nproc), \"model\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\","
  if [ -n "${GATEWAY_BINARIES:-}" ]; then
    echo " \"commit\": \"binaries in $GATEWAY_BINARIES\","
  else
    echo " \"commit\": \"$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo '+changes')\","
  fi
  echo " \"duration\": $duration, \"connections\": $connections, \"rate\": $rate,"
  echo " \"stream_rate\": $stream_rate, \"pause_ms\": $pause, \"load_threads\": $threads,"
  echo " \"rounds\": $rounds}"
} > "$out/setup.json"

python3 bench/gateway_table.py "$out" | tee "$out/table.txt"
