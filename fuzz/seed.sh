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

# The policy target reads policy text: seed it with the example policies and
# every policy of the conformance suite.
mkdir -p corpus/policy
find ../examples -type f \( -name '*.yaml' -o -name '*.json' \) -name 'policy*' |
while read -r file; do
  cp "$file" "corpus/policy/$(echo "$file" | tr '/' '_')"
done
# CEL comprehension macros (all, exists, exists_one, filter, map with two
# and three arguments), nested and beside namespaced tool names.
cat > corpus/policy/cel-macros.yaml <<'YAML'
rules:
  - {tool: send_email, when: "args.to.all(r, r.endsWith('@example.com'))"}
  - {tool: send_email, when: "args.to.exists(r, r == caller.id) || !args.to.exists_one(r, r == '')"}
  - {tool: "*", when: "args.to.filter(r, r.startsWith('a')).size() <= 1"}
  - {tool: route, when: "args.stops.map(s, s.nights).all(n, n >= 1)"}
  - {tool: route, when: "args.stops.map(s, s.nights > 1, s.city).size() <= 2"}
  - {tool: route, when: "args.stops.all(s, args.stops.exists(t, t.city == s.city))"}
YAML
cat > corpus/policy/cel-macros-scope.yaml <<'YAML'
rules:
  - {tool: send_email, when: "args.to.all(r, r.endsWith('@' + caller.org_domain)) && r == ''"}
YAML
cat > corpus/policy/cel-macros-namespaced.json <<'JSON'
{"forbidden": ["delete_user"], "schema": {"mcp__db__search": {"type": "object"}},
 "rules": [{"tool": "functions.send_email", "when": "args.to.exists_one(r, r.endsWith('@x.io'))"}],
 "limits": [{"tool": "Send-Email", "max": 1, "per": "1m", "by": "global"}]}
JSON

python3 - <<'PY'
import json, pathlib, re
for path in sorted(pathlib.Path("../tests/conformance").glob("*.yaml")):
    text = path.read_text()
    # Each case's policy block, as written (flow mappings are valid YAML).
    for n, m in enumerate(re.finditer(r"^  policy:(.*(?:\n    .*)*)", text, re.M)):
        body = m.group(1)
        block = body.strip() if body.strip() else ""
        out = pathlib.Path("corpus/policy") / f"{path.stem}-{n}.yaml"
        if block.startswith("{") or block.startswith('"') or block.startswith("'"):
            out.write_text(block + "\n")
        else:
            out.write_text("\n".join(line[4:] for line in body.splitlines()[1:]) + "\n")
PY
