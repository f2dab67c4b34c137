# Helpers of the gateway benchmarks (bench/gateway.sh, bench/gateway_ab.sh),
# sourced by both.

# The processes a benchmark started (each script adds to it), and how it
# stops them: each is killed, then waited for.
pids=()
stop_started() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# The binaries: `bin` (toolgate) and `tools` (the directory of the examples
# mock_upstream, passthrough and load), from GATEWAY_BINARIES when set,
# else built in release into the cargo target directory `target`.
binaries() { # target
  if [ -n "${GATEWAY_BINARIES:-}" ]; then
    bin="$GATEWAY_BINARIES/toolgate"
    tools="$GATEWAY_BINARIES"
  else
    cargo build --release -p toolgate-cli -p toolgate-gateway --bins --examples
    bin="$1/release/toolgate"
    tools="$1/release/examples"
  fi
}

# A scratch directory for the audits, set as `root`, on a tmpfs
# (GATEWAY_TMPFS, default /dev/shm) or on disk (GATEWAY_AUDIT_DIR, default
# the cargo target directory `target`) as `where` says; when the script
# exits, the processes it started are stopped and the directory removed.
audit_root() { # where name target setting
  case "$1" in
    tmpfs) root="$(mktemp -d "${GATEWAY_TMPFS:-/dev/shm}/toolgate-$2.XXXXXX")" ;;
    disk) mkdir -p "${GATEWAY_AUDIT_DIR:-$3}"
          root="$(mktemp -d "${GATEWAY_AUDIT_DIR:-$3}/$2.XXXXXX")" ;;
    *) echo "$4: tmpfs or disk" >&2; exit 2 ;;
  esac
  trap 'stop_started; rm -rf "$root"' EXIT
  trap 'exit 130' INT TERM
}

# Start a server whose stderr names its address; print the address.
started() { # log pid
  local log="$1" pid="$2" addr=""
  for _ in $(seq 1 100); do
    addr="$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | cut -d/ -f3 || true)"
    [ -n "$addr" ] && { echo "$addr"; return; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "did not start; see $log" >&2
  cat "$log" >&2
  exit 1
}

# The gateways' policy: one tool, the audit in audit-file.
policy() { # audit-file
  cat <<POLICY
tools:
  - type: function
    function:
      name: get_weather
      description: The weather in a city.
      parameters:
        type: object
        properties: {city: {type: string}, units: {enum: [c, f]}}
        required: [city]
audit:
  sqlite: $1
POLICY
}

# A process's CPU time (clock ticks, user + system), its threads'
# voluntary and involuntary switches, and the bytes it has had written to
# storage (`write_bytes` of /proc/PID/io: page writeback it caused,
# nothing on a tmpfs), as one JSON line.
usage() { # pid
  python3 - "$1" <<'PY'
import glob, json, os, sys
pid = sys.argv[1]
fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
switches = {"voluntary": 0, "involuntary": 0}
named = {"voluntary_ctxt_switches": "voluntary", "nonvoluntary_ctxt_switches": "involuntary"}
for status in glob.glob(f"/proc/{pid}/task/*/status"):
    try:
        lines = open(status).read().splitlines()
    except OSError:
        continue
    for line in lines:
        key, _, value = line.partition(":")
        if key in named:
            switches[named[key]] += int(value)
io = dict(line.split(": ") for line in open(f"/proc/{pid}/io").read().splitlines())
print(json.dumps({"cpu_ticks": int(fields[11]) + int(fields[12]),
                  "ticks_per_second": os.sysconf("SC_CLK_TCK"),
                  "write_bytes": int(io["write_bytes"]), **switches}))
PY
}

# Wait until a gateway's audit index has caught up with its log and its
# checkpoint with the index (at most two minutes), so that a run at a fixed
# rate is not also paying for the index writes a closed-loop run before it
# left behind; print the wait.
settled() { # addr
  python3 - "http://$1/metrics" <<'PY'
import re, sys, time, urllib.request
began = time.monotonic()
while True:
    text = urllib.request.urlopen(sys.argv[1]).read().decode()
    behind = [float(m.group(1)) for m in re.finditer(
        r"^toolgate_audit_index_(?:lag|unsynced)_bytes\s+(\S+)", text, re.M)]
    if not any(behind) or time.monotonic() - began > 120:
        break
    time.sleep(0.1)
print(f"{time.monotonic() - began:.1f} s for the audit index to catch up", end="")
PY
}
