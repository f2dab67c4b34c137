#!/usr/bin/env bash
# Seed the fuzz corpora with every captured payload under tests/fixtures.
# The sse target reads a selector byte first (bit 0: JSON sequence instead of
# SSE; bits 1-7: how many cut lengths follow), so its seeds get one.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/detect corpus/sse
find ../tests/fixtures -type f \( -name '*.json' -o -name '*.sse' -o -name '*.jsonl' \) |
while read -r file; do
  name=$(basename "$file")
  cp "$file" "corpus/detect/$name"
  case "$name" in
    *.jsonl) whole='\001'; cut='\021' ;;
    *) whole='\000'; cut='\020' ;;
  esac
  { printf "$whole"; cat "$file"; } > "corpus/sse/$name"
  # Eight cuts of 7, 1, 13, 2, 64, 3, 5 and 31 bytes.
  { printf "$cut"; printf '\007\001\015\002\100\003\005\037'; cat "$file"; } > "corpus/sse/cut-$name"
done
