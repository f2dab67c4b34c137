"""The table of bench/gateway_sched.sh: for each proxy traced, how its
runtime threads (tokio-rt-worker) waited for a core.

usage: python3 bench/sched_table.py OUT_DIR AUDIT PROXY...

OUT_DIR holds, per proxy, `<proxy>.threads` (role, thread id and name of
every thread of the load generator, the mock upstream and the proxy),
`<proxy>.events` (`perf script -F tid,cpu,time,event,trace` of a
`perf sched record -a`) and `<proxy>.json` (the load generator's line).
"""

import json
import re
import sys
from collections import Counter

EVENT = re.compile(r"\s*(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)")
WAKING = re.compile(r" pid=(\d+)")
SWITCH = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)")


def threads(path):
    """Thread id to (role, name)."""
    known = {}
    for line in open(path):
        role, tid, name = line.split(maxsplit=2)
        known[int(tid)] = (role, name.strip())
    return known


def who(tid, comm, known):
    """Whom a thread stands for in the table."""
    if tid in known:
        role, name = known[tid]
        if role == "proxy":
            if name == "tokio-rt-worker":
                return "the proxy's runtime"
            if name.startswith("toolgate-log-") or name == "passthrough-log":
                return "the proxy's log writer"
            if name == "toolgate-index":
                return "the proxy's indexer"
            # Builds before the names above: `toolgate-audit-*`, cut to 15
            # bytes, the writer and the indexer alike.
            return "the proxy's audit" if name.startswith("toolgate-audit") else f"the proxy's {name}"
        return {"load": "the load generator", "mock": "the mock upstream"}[role]
    return "the kernel's threads" if tid == 0 or re.match(
        r"(ksoftirqd|kworker|rcu_|migration|kcompactd|jbd2|kswapd|swapper)", comm
    ) else "other processes"


def percentiles(values):
    values = sorted(values)
    if not values:
        return "none"
    at = lambda q: values[min(len(values) - 1, int(len(values) * q))]
    return f"p50 {at(0.5):6.1f}  p90 {at(0.9):6.1f}  p99 {at(0.99):6.1f} µs"


def table(out, proxy):
    known = threads(f"{out}/{proxy}.threads")
    runtime = {tid for tid, (role, name) in known.items()
               if role == "proxy" and name == "tokio-rt-worker"}
    waiting = {}  # tid -> (since, why)
    running = {}  # tid -> since
    waits = {"preempted": [], "woken": []}
    ran_before = []
    by = Counter()
    first = last = None
    for line in open(f"{out}/{proxy}.events"):
        m = EVENT.match(line)
        if not m:
            continue
        time, event, trace = float(m[3]), m[4], m[5]
        first = first if first is not None else time
        last = time
        if event == "sched:sched_waking":
            tid = int(WAKING.search(trace)[1])
            # A thread woken as it was about to sleep never left its core.
            if tid in runtime and tid not in waiting and tid not in running:
                waiting[tid] = (time, "woken")
        elif event == "sched:sched_switch":
            s = SWITCH.search(trace)
            if not s:
                continue
            prev, state, next_comm, next_tid = int(s[1]), s[2], s[3], int(s[4])
            if prev in runtime:
                if state.startswith("R"):
                    waiting[prev] = (time, "preempted")
                    by[who(next_tid, next_comm, known)] += 1
                    if prev in running:
                        ran_before.append((time - running[prev]) * 1e6)
                running.pop(prev, None)
            if next_tid in runtime:
                running[next_tid] = time
                if next_tid in waiting:
                    since, why = waiting.pop(next_tid)
                    waits[why].append((time - since) * 1e6)
    seconds = (last - first) if first is not None else 0.0
    line = json.loads(open(f"{out}/{proxy}.json").read())
    requests = line["rps"] * seconds
    per = lambda n: n / requests if requests else float("nan")
    print(f"{proxy}: {len(runtime)} runtime thread(s), {seconds:.1f} s traced at "
          f"{line['rps']:.0f} requests/s (p50 {line['latency_ms']['p50']:.3f} ms, "
          f"p99 {line['latency_ms']['p99']:.3f} ms over the whole load run)")
    for why in ("preempted", "woken"):
        values = waits[why]
        print(f"  {why:9s} {per(len(values)):5.2f} a request   off the core: "
              f"{percentiles(values)}, {per(sum(values)):5.1f} µs a request in all")
    print(f"  ran before preempted: {percentiles(ran_before)}")
    total = sum(by.values())
    for name, n in by.most_common():
        print(f"    preempted by {name:24s} {per(n):5.2f} a request ({100 * n / total:3.0f}%)")


def main():
    out, audit, proxies = sys.argv[1], sys.argv[2], sys.argv[3:]
    print(f"runtime threads of each proxy off their core, chat completions at a fixed rate "
          f"(the gateway's audit on {audit}); from `perf sched record -a`")
    for proxy in proxies:
        table(out, proxy)


if __name__ == "__main__":
    main()
