#!/usr/bin/env bash
# Where a proxy's request threads wait, beside what they compute. Each
# proxy in turn (`toolgate serve` with its audit on tmpfs or on disk; the
# pass-through proxy of bench/gateway.sh; the durable pass-through, its
# records synced where the audit is) takes chat completions at a fixed
# rate from the load generator, in front of the mock upstream, on this
# machine's cores; `perf sched record` traces every scheduler event of the
# machine for a few seconds of it. Then, for the proxy's runtime threads
# (the ones that serve requests), bench/sched_table.py prints:
#
# - how often a runtime thread was preempted (switched out while it could
#   still run), per request, and by whom: the load generator, the mock
#   upstream, the proxy's own other threads (the audit writer and
#   indexer), the kernel's threads;
# - how long each preemption kept it off its core, and each wake-up (from
#   being made runnable to running), p50, p90, p99 and the sum per request;
# - how long it had run, without a break, when it was preempted.
#
# A preempted runtime thread holds up every request it had to serve next:
# on a machine whose cores the client and the upstream share, that wait is
# the part of a proxy's tail its own CPU time does not show.
#
#   bash bench/gateway_sched.sh [gateway|passthrough|durable]...
#
# By default the gateway and the pass-through, and with the audit on disk
# the durable pass-through too (the floor of bench/gateway.sh).
#
# Environment: GATEWAY_SCHED_AUDIT (tmpfs, the default, or disk: where the
# gateway's audit is; tmpfs is GATEWAY_TMPFS, default /dev/shm; disk is
# GATEWAY_AUDIT_DIR, default the cargo target directory),
# GATEWAY_SCHED_SECONDS (5: traced, after 3 s of load), GATEWAY_RATE
# (1000), GATEWAY_CONNECTIONS (64), GATEWAY_BINARIES (a directory with
# `toolgate` and the examples `mock_upstream`, `passthrough` and `load`,
# instead of building them). Needs `perf` (Debian: linux-perf) allowed to
# trace the scheduler (root, or kernel.perf_event_paranoid at -1).
# Writes the traces and logs to bench/results/gateway-sched-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/gateway_common.sh
command -v perf >/dev/null || { echo "perf is needed (Debian: apt-get install linux-perf)" >&2; exit 2; }
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
where="${GATEWAY_SCHED_AUDIT:-tmpfs}"
proxies=("$@")
if [ ${#proxies[@]} -eq 0 ]; then
  proxies=(gateway passthrough)
  [ "$where" = disk ] && proxies+=(durable)
fi
for p in "${proxies[@]}"; do
  case "$p" in
    gateway|passthrough|durable) ;;
    *) echo "usage: $0 [gateway|passthrough|durable]..." >&2; exit 2 ;;
  esac
done
seconds="${GATEWAY_SCHED_SECONDS:-5}"
rate="${GATEWAY_RATE:-1000}"
connections="${GATEWAY_CONNECTIONS:-64}"
out="bench/results/gateway-sched-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

binaries "$target"
audit_root "$where" gateway-sched "$target" GATEWAY_SCHED_AUDIT

body="$(python3 bench/gateway_bodies.py | sed -n 1p)"
MOCK_PAUSE_MS=0 "$tools/mock_upstream" 127.0.0.1:0 2> "$out/mock.log" & pids+=($!)
mock_pid=$!
upstream="$(started "$out/mock.log" $!)"

for proxy in "${proxies[@]}"; do
  case "$proxy" in
    gateway)
      policy "$root/audit.db" > "$root/policy.yaml"
      "$bin" serve --policy "$root/policy.yaml" --listen 127.0.0.1:0 \
        --upstream "http://$upstream" 2> "$out/$proxy.log" & pids+=($!) ;;
    passthrough)
      "$tools/passthrough" 127.0.0.1:0 "http://$upstream" 2> "$out/$proxy.log" & pids+=($!) ;;
    durable)
      mkdir -p "$root/durable"
      "$tools/passthrough" 127.0.0.1:0 "http://$upstream" --sync "$root/durable" \
        2> "$out/$proxy.log" & pids+=($!) ;;
  esac
  proxy_pid=$!
  addr="$(started "$out/$proxy.log" $!)"
  # The load (its 1 s warm-up, then seconds + 5) starts 3 s before the
  # trace and goes on 3 s after it.
  "$tools/load" --label "$proxy" --url "http://$addr/v1/chat/completions" --body "$body" \
    --connections "$connections" --duration "$((seconds + 5))" --rate "$rate" --threads 1 \
    > "$out/$proxy.json" &
  load_pid=$!
  sleep 3
  # Every thread of the three processes, by role, for the table.
  for role in "load:$load_pid" "mock:$mock_pid" "proxy:$proxy_pid"; do
    for task in /proc/"${role#*:}"/task/*; do
      echo "${role%%:*} $(basename "$task") $(cat "$task/comm" 2>/dev/null || echo gone)"
    done
  done > "$out/$proxy.threads"
  perf sched record -a -o "$out/$proxy.data" -- sleep "$seconds" 2> "$out/$proxy.perf.log" >/dev/null
  wait "$load_pid"
  kill "$proxy_pid" 2>/dev/null || true
  wait "$proxy_pid" 2>/dev/null || true
  perf script -i "$out/$proxy.data" -F tid,cpu,time,event,trace 2>/dev/null > "$out/$proxy.events"
  rm -f "$out/$proxy.data"
done
python3 bench/sched_table.py "$out" "$where" "${proxies[@]}" | tee "$out/table.txt"
