#!/usr/bin/env bash
# Runs weather.yaml against the gateway crate's mock agent: starts
# `mock_upstream` on a free loopback port, runs `toolgate test` on the
# suite (extra arguments go to it, e.g. --junit FILE), always stops the
# mock. The exit status is toolgate's.
#
#   TOOLGATE       the toolgate binary       [$TARGET/debug/toolgate]
#   MOCK_UPSTREAM  the mock_upstream example [$TARGET/debug/examples/mock_upstream]
# where TARGET is ${CARGO_TARGET_DIR:-$HOME/.cache/toolgate/target}; build
# them with `cargo build -p toolgate-cli` and
# `cargo build -p toolgate-gateway --example mock_upstream`.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$HOME/.cache/toolgate/target}"
TOOLGATE="${TOOLGATE:-$target/debug/toolgate}"
MOCK_UPSTREAM="${MOCK_UPSTREAM:-$target/debug/examples/mock_upstream}"
for bin in "$TOOLGATE" "$MOCK_UPSTREAM"; do
    if [ ! -x "$bin" ]; then
        echo "run-weather.sh: $bin is missing or not executable" >&2
        exit 2
    fi
done

log="$(mktemp "${TMPDIR:-/tmp}/toolgate-mock.XXXXXX")"
"$MOCK_UPSTREAM" 127.0.0.1:0 >"$log" 2>&1 &
mock_pid=$!
stop() {
    kill -TERM "$mock_pid" 2>/dev/null || true
    wait "$mock_pid" 2>/dev/null || true
    rm -f "$log"
}
trap stop EXIT

addr=""
for _ in $(seq 200); do
    addr="$(sed -n 's#.*listening on http://\([^ ,]*\).*#\1#p' "$log" | head -n 1)"
    [ -n "$addr" ] && break
    if ! kill -0 "$mock_pid" 2>/dev/null; then
        echo "run-weather.sh: the mock agent exited:" >&2
        cat "$log" >&2
        exit 2
    fi
    sleep 0.1
done
if [ -z "$addr" ]; then
    echo "run-weather.sh: the mock agent did not start listening in time" >&2
    exit 2
fi

AGENT_URL="http://$addr" "$TOOLGATE" test "$here/weather.yaml" "$@"
