#!/usr/bin/env bash
# The official OpenAI and Anthropic Python SDKs through `toolgate serve`.
#
# Starts the mock upstream (the gateway crate's `mock_upstream` example) and
# `toolgate serve --policy tests/sdk/policy.yaml` in front of it, each on a
# free loopback port, waits for both, runs pytest on tests/sdk, and always
# stops both. The exit status is pytest's.
#
#   TOOLGATE       the toolgate binary      [$TARGET/debug/toolgate]
#   MOCK_UPSTREAM  the mock_upstream example [$TARGET/debug/examples/mock_upstream]
#   PYTHON         a python with tests/sdk/requirements.txt installed
#                                           [$HOME/.cache/toolgate/sdk-venv/bin/python]
#   MOCK_PAUSE_MS  the mock's pause between stream events [2], so each
#                  event reaches the gateway as its own read, as from a model
# where TARGET is ${CARGO_TARGET_DIR:-$HOME/.cache/toolgate/target}.
# Extra arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$HOME/.cache/toolgate/target}"
TOOLGATE="${TOOLGATE:-$target/debug/toolgate}"
MOCK_UPSTREAM="${MOCK_UPSTREAM:-$target/debug/examples/mock_upstream}"
PYTHON="${PYTHON:-$HOME/.cache/toolgate/sdk-venv/bin/python}"

for bin in "$TOOLGATE" "$MOCK_UPSTREAM" "$PYTHON"; do
    if [ ! -x "$bin" ]; then
        echo "tests/sdk/run.sh: $bin is missing or not executable" >&2
        exit 2
    fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-sdk.XXXXXX")"
mock_pid=""
gate_pid=""

stop() {
    local pid
    for pid in "$gate_pid" "$mock_pid"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done
    for pid in "$gate_pid" "$mock_pid"; do
        if [ -n "$pid" ]; then
            # Give each a few seconds to stop on its own, then insist.
            for _ in $(seq 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The address a server printed as `... listening on http://ADDR...` in LOG,
# once it has; fails after about 20 s or if the process PID ended.
listening_on() {
    local log="$1" pid="$2" name="$3" addr
    for _ in $(seq 200); do
        addr="$(sed -n 's#.*listening on http://\([^ ,]*\).*#\1#p' "$log" | head -n 1)"
        if [ -n "$addr" ]; then
            echo "$addr"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "tests/sdk/run.sh: $name exited before listening:" >&2
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "tests/sdk/run.sh: $name did not start listening in time:" >&2
    cat "$log" >&2
    return 1
}

# Wait until URL answers 200 (about 20 s at most).
wait_healthy() {
    local url="$1"
    "$PYTHON" - "$url" <<'PY'
import sys, time, urllib.request

url = sys.argv[1]
deadline = time.monotonic() + 20
while True:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            if answer.status == 200:
                sys.exit(0)
    except OSError:
        pass
    if time.monotonic() > deadline:
        print(f"tests/sdk/run.sh: {url} did not answer 200 in time", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.1)
PY
}

# The mock upstream, on a port the system picks.
MOCK_PAUSE_MS="${MOCK_PAUSE_MS:-2}" "$MOCK_UPSTREAM" 127.0.0.1:0 >"$work/mock.log" 2>&1 &
mock_pid=$!
mock_addr="$(listening_on "$work/mock.log" "$mock_pid" "the mock upstream")"

# The policy, with its audit database in the temporary directory.
audit_db="$work/audit.db"
sed "s#^audit:.*#audit: {sqlite: \"$audit_db\"}#" "$here/policy.yaml" >"$work/policy.yaml"
if ! grep -q "sqlite: \"$audit_db\"" "$work/policy.yaml"; then
    echo "tests/sdk/run.sh: could not point the policy's audit at $audit_db" >&2
    exit 2
fi

# The gateway in front of it, run from the temporary directory so nothing
# it writes lands in the work tree.
(cd "$work" && exec "$TOOLGATE" serve --policy "$work/policy.yaml" \
    --listen 127.0.0.1:0 --upstream "http://$mock_addr") >"$work/toolgate.log" 2>&1 &
gate_pid=$!
gate_addr="$(listening_on "$work/toolgate.log" "$gate_pid" "toolgate serve")"
wait_healthy "http://$gate_addr/healthz"

echo "tests/sdk/run.sh: mock upstream on $mock_addr, toolgate serve on $gate_addr"
status=0
PYTHONDONTWRITEBYTECODE=1 TOOLGATE_URL="http://$gate_addr" \
    TOOLGATE_AUDIT_DB="$audit_db" \
    "$PYTHON" -m pytest "$here" -p no:cacheprovider "$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "== toolgate serve's log" >&2
    tail -n 50 "$work/toolgate.log" >&2
fi
exit "$status"
