#!/usr/bin/env bash
# The eval report as a person sees it: runs `toolgate eval` on a generated
# support-agent dataset (rows with ids and names, a hallucinated tool,
# forbidden calls, bad lines) against a baseline run, then renders the HTML
# report in headless Chromium at a desktop and a phone width, and checks
# what a screenshot cannot: that the page's script ran under its content
# security policy and that nothing is wider than the phone's screen.
#
#   bash tests/report/render.sh [OUT_DIR]    # default: target/report-render
#
# Environment: TOOLGATE (the binary; default: built here), CHROMIUM
# (default: chromium, installed with apt-get when absent).
# Look at OUT_DIR/desktop.png and OUT_DIR/phone.png.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
target="${CARGO_TARGET_DIR:-target}"
out="${1:-$target/report-render}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if [ -z "${TOOLGATE:-}" ]; then
    cargo build -q -p toolgate-cli
    TOOLGATE="$target/debug/toolgate"
fi
chromium="${CHROMIUM:-chromium}"
if ! command -v "$chromium" > /dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y -qq chromium > /dev/null \
        || { $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium > /dev/null; }
fi

python3 "$here/make_dataset.py" "$out"
"$TOOLGATE" eval --policy "$here/policy.yaml" "$out/previous.jsonl" --json "$out/previous.json" > /dev/null || true
"$TOOLGATE" eval --policy "$here/policy.yaml" "$out/current.jsonl" --baseline "$out/previous.json" \
    --report "$out/report.html" --json "$out/current.json" > "$out/current.txt" || true

# The report, with a probe after the page's own script that sends the
# page's facts to the frame around it (reading the widths lays the page
# out); the frame writes them into its DOM, which Chromium's --dump-dom
# prints. The probe is a copy's, never the report's. Each width is a frame
# of that width: headless Chromium's window is at least 500 pixels wide.
probe='<script>(function(){var d=document.documentElement,f=document.querySelector(".filter");parent.postMessage(JSON.stringify({scrollWidth:d.scrollWidth,clientWidth:d.clientWidth,filterShown:!!f\&\&!f.hidden}),"*")})()</script>'
sed "s#</body>#$probe</body>#" "$out/report.html" > "$out/probe.html"

frame() { # page width height -> a page holding `page` in a frame of that size
    printf '<!doctype html><html><body style="margin:0;background:#fff"><iframe src="%s" style="border:0;width:%spx;height:%spx"></iframe><script>addEventListener("message",function(e){document.body.setAttribute("data-probe",e.data)})</script></body></html>\n' "$1" "$2" "$3"
}

render() { # name width height
    local window=$(( $2 < 500 ? 500 : $2 ))
    frame report.html "$2" "$3" > "$out/frame-$1.html"
    frame probe.html "$2" "$3" > "$out/frame-probe-$1.html"
    "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
        --window-size="$window,$3" --screenshot="$out/$1.png" "file://$out/frame-$1.html" 2> /dev/null
    "$chromium" --headless --no-sandbox --disable-gpu --window-size="$window,$3" --virtual-time-budget=3000 \
        --dump-dom "file://$out/frame-probe-$1.html" 2> /dev/null \
        | grep -o 'data-probe="[^"]*"' | sed 's/&quot;/"/g; s/^data-probe="//; s/"$//' > "$out/$1.json"
    python3 - "$out/$1.json" "$1" "$2" << 'PY'
import json, sys
facts = json.load(open(sys.argv[1]))
name, width = sys.argv[2], int(sys.argv[3])
assert facts["filterShown"], f"{name}: the failing traces' filter script did not run"
assert facts["clientWidth"] <= width, f"{name}: rendered {facts['clientWidth']}px wide, not {width}px"
assert facts["scrollWidth"] <= facts["clientWidth"], f"{name}: the page is {facts['scrollWidth']}px wide on a {facts['clientWidth']}px screen"
print(f"{name}: {facts['clientWidth']}px wide, nothing wider; the filter script ran")
PY
}
render desktop 1280 4400
render phone 390 9000
echo "screenshots: $out/desktop.png $out/phone.png"
