#!/usr/bin/env bash
# The official MCP Python SDK, as server and as client, through toolgate:
# over Streamable HTTP (`toolgate serve` in front of the SDK's server) and
# over stdio (`toolgate mcp -- python server.py --stdio`, started by the
# SDK's client). Starts the server (twice: plain, and resumable with
# Last-Event-ID) and the gateway on free loopback ports, runs pytest on
# tests/mcp, and always stops them. The exit status is pytest's.
#
#   TOOLGATE  the toolgate binary  [${CARGO_TARGET_DIR:-$HOME/.cache/toolgate/target}/debug/toolgate]
#   PYTHON    a python with tests/mcp/requirements.txt installed
#             [$HOME/.cache/toolgate/mcp-venv/bin/python]
# Extra arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$HOME/.cache/toolgate/target}"
TOOLGATE="${TOOLGATE:-$target/debug/toolgate}"
PYTHON="${PYTHON:-$HOME/.cache/toolgate/mcp-venv/bin/python}"
SCRIPT=tests/mcp/run.sh
# shellcheck source=../support/servers.sh
. "$here/../support/servers.sh"
require_executables "$TOOLGATE" "$PYTHON"

work="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-mcp.XXXXXX")"
stop() {
    stop_servers
    rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until the TCP port answers (about 20 s at most).
wait_port() {
    "$PYTHON" - "$1" <<'PY'
import socket, sys, time
deadline = time.monotonic() + 20
while True:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(1)
        time.sleep(0.1)
PY
}

server_port="$(free_port)"
export MCP_RECORD="$work/http-record.jsonl"
: >"$MCP_RECORD"
"$PYTHON" "$here/server.py" --http "$server_port" >"$work/server.log" 2>&1 &
track $!
# The same server, resumable: it keeps every SSE event for Last-Event-ID.
resumable_port="$(free_port)"
"$PYTHON" "$here/server.py" --http "$resumable_port" --resumable >"$work/resumable.log" 2>&1 &
track $!
wait_port "$server_port" || { echo "tests/mcp/run.sh: the MCP server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }
wait_port "$resumable_port" || { echo "tests/mcp/run.sh: the resumable MCP server did not start:" >&2; cat "$work/resumable.log" >&2; exit 1; }

sed -e "s#@PORT@#$server_port#" -e "s#@RESUMABLE_PORT@#$resumable_port#" -e "s#@PINS@#$work/pins.json#" -e "s#@AUDIT@#$work/audit.db#" \
    "$here/policy.yaml" >"$work/policy.yaml"
gate_port="$(free_port)"
(cd "$work" && exec "$TOOLGATE" serve --policy "$work/policy.yaml" --listen "127.0.0.1:$gate_port") \
    >"$work/toolgate.log" 2>&1 &
track $!
wait_port "$gate_port" || { echo "tests/mcp/run.sh: toolgate serve did not start:" >&2; cat "$work/toolgate.log" >&2; exit 1; }

echo "tests/mcp/run.sh: MCP servers on $server_port and $resumable_port (resumable), toolgate serve on $gate_port"
status=0
PYTHONDONTWRITEBYTECODE=1 TOOLGATE="$TOOLGATE" TOOLGATE_URL="http://127.0.0.1:$gate_port/mcp/demo" \
    SERVER_URL="http://127.0.0.1:$server_port/mcp" MCP_WORK="$work" \
    RESUMABLE_SERVER_URL="http://127.0.0.1:$resumable_port/mcp" \
    "$PYTHON" -m pytest "$here" -p no:cacheprovider "$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "== toolgate serve's log" >&2
    tail -n 40 "$work/toolgate.log" >&2
fi
exit "$status"
