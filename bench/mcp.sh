#!/usr/bin/env bash
# MCP `tools/call` latency: the official MCP Python SDK's server
# (tests/mcp/server.py) called direct and through `toolgate serve` (release
# build, audit on disk, every call checked against the server's inputSchema
# and the policy's schema), requests alternated one by one in the same run
# (bench/mcp_bench.py). Prints p50/p99 of each and what toolgate adds;
# writes them and the load average to bench/results/mcp-<time>/.
#
# Environment: MCP_REQUESTS (per target, default 2000), PYTHON (a python
# with tests/mcp/requirements.txt, default ~/.cache/toolgate/mcp-venv),
# TOOLGATE (default: the release build, built first).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
requests="${MCP_REQUESTS:-2000}"
PYTHON="${PYTHON:-$HOME/.cache/toolgate/mcp-venv/bin/python}"
if [ -z "${TOOLGATE:-}" ]; then
    cargo build --release -q -p toolgate-cli
    TOOLGATE="$target/release/toolgate"
fi
out="bench/results/mcp-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
work="$(mktemp -d "$target/mcp-bench.XXXXXX")"
pids=()
stop() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap stop EXIT

port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 200); do
        "$PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $1), timeout=1)" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

server_port="$(port)"
MCP_RECORD="$work/record.jsonl" "$PYTHON" tests/mcp/server.py --http "$server_port" >"$work/server.log" 2>&1 &
pids+=($!)
wait_port "$server_port"
sed -e "s#@PORT@#$server_port#" -e "s#@PINS@#$work/pins.json#" -e "s#@AUDIT@#$work/audit.db#" \
    tests/mcp/policy.yaml >"$work/policy.yaml"
gate_port="$(port)"
"$TOOLGATE" serve --policy "$work/policy.yaml" --listen "127.0.0.1:$gate_port" >"$work/toolgate.log" 2>&1 &
pids+=($!)
wait_port "$gate_port"

load="$(cut -d' ' -f1-3 /proc/loadavg)"
result="$("$PYTHON" bench/mcp_bench.py "http://127.0.0.1:$server_port/mcp" \
    "http://127.0.0.1:$gate_port/mcp/demo" "$requests")"
echo "$result" | head -n 1 >"$out/result.json"
{
    echo "MCP tools/call, $requests requests each, alternated; $(nproc) cores, load average before: $load"
    echo "$result" | tail -n +2
} | tee "$out/table.md"
