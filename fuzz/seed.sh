#!/usr/bin/env bash
# Seed the fuzz corpora with every captured payload under tests/fixtures.
set -euo pipefail
cd "$(dirname "$0")"
for target in detect sse; do
  mkdir -p "corpus/$target"
  find ../tests/fixtures -type f \( -name '*.json' -o -name '*.sse' -o -name '*.jsonl' \) \
    -exec cp {} "corpus/$target/" \;
done
