# Starting and stopping the servers a test script runs toolgate against:
# sourced (not run) by tests/sdk/run.sh, tests/mcp/run.sh and
# examples/suites/run-weather.sh. Set SCRIPT, the name messages give, first.

# Fail with status 2 unless each argument is an executable file.
require_executables() {
    local bin
    for bin in "$@"; do
        if [ ! -x "$bin" ]; then
            echo "$SCRIPT: $bin is missing or not executable" >&2
            exit 2
        fi
    done
}

# The servers started, by process id, in the order they started.
server_pids=()

# Remember a server just started in the background: `track $!`.
track() {
    server_pids+=("$1")
}

# Stop every tracked server, the last started first: each gets a few
# seconds to stop on its own after SIGTERM, then SIGKILL.
stop_servers() {
    local i pid
    for ((i = ${#server_pids[@]} - 1; i >= 0; i--)); do
        pid="${server_pids[$i]}"
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
}

# The address a server printed as `... listening on http://ADDR...` in LOG,
# once it has; fails after about 20 s, or when process PID has ended.
listening_on() { # LOG PID NAME
    local log="$1" pid="$2" name="$3" addr
    for _ in $(seq 200); do
        addr="$(sed -n 's#.*listening on http://\([^ ,]*\).*#\1#p' "$log" | head -n 1)"
        if [ -n "$addr" ]; then
            echo "$addr"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$SCRIPT: $name exited before listening:" >&2
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "$SCRIPT: $name did not start listening in time:" >&2
    cat "$log" >&2
    return 1
}
