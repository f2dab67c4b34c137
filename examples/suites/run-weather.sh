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
SCRIPT=run-weather.sh
# shellcheck source=../../tests/support/servers.sh
. "$here/../../tests/support/servers.sh"
require_executables "$TOOLGATE" "$MOCK_UPSTREAM"

log="$(mktemp "${TMPDIR:-/tmp}/toolgate-mock.XXXXXX")"
stop() {
    stop_servers
    rm -f "$log"
}
trap stop EXIT

"$MOCK_UPSTREAM" 127.0.0.1:0 >"$log" 2>&1 &
track $!
addr="$(listening_on "$log" $! "the mock agent")" || exit 2

AGENT_URL="http://$addr" "$TOOLGATE" test "$here/weather.yaml" "$@"
