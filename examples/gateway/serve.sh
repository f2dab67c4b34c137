#!/usr/bin/env bash
# Build toolgate and the mock upstream, start the mock on 127.0.0.1:9000 and
# `toolgate serve` on 127.0.0.1:8080 in front of it; Ctrl-C stops both.
# The mock answers in each API's wire format; the request's `model` picks
# the answer: text, valid, invalid, forbidden, parallel-one-bad.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cargo build -q -p toolgate-cli -p toolgate-gateway --example mock_upstream
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

"$target/debug/examples/mock_upstream" 127.0.0.1:9000 &
mock=$!
trap 'kill $mock 2>/dev/null || true' EXIT
"$target/debug/toolgate" serve --policy examples/gateway/policy.yaml --listen "${LISTEN:-127.0.0.1:8080}"
