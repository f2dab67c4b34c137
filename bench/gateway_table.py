#!/usr/bin/env python3
"""The table of bench/gateway.sh: reads its results directory (results.jsonl,
one line per load run; gateways.jsonl, each gateway's peak RSS, audited
calls and audit file sizes; metrics/, each gateway's /metrics before and
after a run; setup.json; load.txt) and prints, per workload, requests/s and
p50/p90/p99/max latency direct and through the gateway, the latency the
gateway adds, where the gateway's mean time goes, and whether the goals are
met: at most 1 ms added at p99, at most 0.2 ms added to the first streamed
text byte.

usage: gateway_table.py OUT_DIR"""
import json
import os
import sys

GOAL_ADDED_P99_MS = 1.0
GOAL_ADDED_FIRST_TEXT_MS = 0.2
# The gateway's route label of each workload.
ROUTES = {"chat": "chat_completions", "messages": "messages"}


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def histograms(path):
    """{(metric, route): (sum, count)} of a /metrics scrape."""
    found = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("toolgate_") or "_bucket" in line:
                continue
            key, value = line.rsplit(" ", 1)
            for part in ("_sum", "_count"):
                if part + "{" in key:
                    metric, labels = key.split(part + "{", 1)
                    route = labels.split('route="', 1)[1].split('"', 1)[0]
                    pair = found.setdefault((metric, route), [0.0, 0.0])
                    pair[part == "_count"] = float(value)
    return found


def inside(out, run, route):
    """The gateway's mean ms per request during a run, by stage."""
    name = run["label"].replace(" ", "_").replace("=", "_")
    before_path = os.path.join(out, "metrics", name + ".before")
    after_path = os.path.join(out, "metrics", name + ".after")
    if not (os.path.exists(before_path) and os.path.exists(after_path)):
        return None
    before, after = histograms(before_path), histograms(after_path)

    def mean(metric):
        key = (f"toolgate_{metric}_duration_seconds", route)
        if key not in after:
            return None
        s0, c0 = before.get(key, (0.0, 0.0))
        s1, c1 = after[key]
        return (s1 - s0) / (c1 - c0) * 1e3 if c1 > c0 else None

    return {stage: mean(stage) for stage in ("request", "upstream", "check")}


def name_of(run):
    """A run's label without its rate."""
    return run["label"].rsplit(" rate=", 1)[0]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    runs = {r["label"]: r for r in read_lines(os.path.join(out, "results.jsonl"))}
    gateways = {g["gateway"]: g for g in read_lines(os.path.join(out, "gateways.jsonl"))}
    with open(os.path.join(out, "setup.json"), encoding="utf-8") as f:
        setup = json.load(f)

    print(
        f"toolgate serve, {setup['commit']}: {setup['cores']} cores ({setup['model']}) shared by "
        f"the load generator ({setup['load_threads']} thread), the mock upstreams and the gateways"
    )
    print(
        f"{setup['connections']} connections, {setup['duration']} s per run; "
        "closed loop: each connection sends when answered; "
        "open loop: a fixed rate, latency counted from the due time when late"
    )
    audit = ", ".join(f"{g}: {v['audit_fs']}" for g, v in sorted(gateways.items()))
    print(f"audit (SQLite, WAL, synchronous=FULL) on {audit}")
    print()

    goals = []
    failures = []

    def row(name, run, field="latency_ms"):
        if run is None:
            return
        lat = run[field]
        errors = f"  {run['errors']} errors {run['error_samples']}" if run["errors"] else ""
        if lat is None:
            print(f"  {name:<28} {run['rps']:>8.0f}  (no {field}){errors}")
            return
        print(
            f"  {name:<28} {run['rps']:>8.0f}  {lat['p50']:>8.3f} {lat['p90']:>8.3f} "
            f"{lat['p99']:>8.3f} {lat['max']:>8.3f}{errors}"
        )
        if run["errors"]:
            failures.append(f"{run['label']}: {run['errors']} errors")
        if "gateway" in run["label"] and run["with_keys"] < run["requests"]:
            failures.append(
                f"{run['label']}: {run['requests'] - run['with_keys']} answers without idempotency keys"
            )

    def added(name, direct, through, field, goal, percentiles=("p50", "p99")):
        if direct is None or through is None or direct[field] is None or through[field] is None:
            return
        diffs = {p: through[field][p] - direct[field][p] for p in ("p50", "p90", "p99", "max")}
        print(
            f"  {name:<28} {'':>8}  {diffs['p50']:>+8.3f} {diffs['p90']:>+8.3f} "
            f"{diffs['p99']:>+8.3f} {diffs['max']:>+8.3f}"
        )
        note = f", {through['rate']:g}/s" if through["rate"] else ", closed loop"
        what = "first text byte, added" if field == "first_text_ms" else "added"
        for p in percentiles:
            goals.append((f"{name_of(through)}{note}: {what} {p} {diffs[p]:+.3f} ms", diffs[p] <= goal, goal))

    header = f"  {'':<28} {'req/s':>8}  {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}"
    rates = sorted({r["rate"] or 0 for r in runs.values()})

    def label_rate(at):
        return "as fast as answered (closed loop)" if at == 0 else f"{at:g} requests/s (open loop)"

    for title, path in (
        ("chat completions, whole body, one tool call", "chat"),
        ("Anthropic messages, whole body, one tool call", "messages"),
    ):
        for at in rates:
            direct = runs.get(f"{path} direct rate={at:g}")
            if direct is None:
                continue
            print(f"{title}: {label_rate(at)}")
            print(header)
            row("direct", direct)
            for g in ("disk", "tmpfs"):
                through = runs.get(f"{path} gateway-{g} rate={at:g}")
                row(f"through gateway, audit {g}", through)
            for g in ("disk", "tmpfs"):
                through = runs.get(f"{path} gateway-{g} rate={at:g}")
                added(f"added, audit {g}", direct, through, "latency_ms", GOAL_ADDED_P99_MS, ("p99",))
            for g in ("disk", "tmpfs"):
                through = runs.get(f"{path} gateway-{g} rate={at:g}")
                stages = through and inside(out, through, ROUTES[path])
                if stages and None not in stages.values():
                    rest = stages["request"] - stages["upstream"] - stages["check"]
                    print(
                        f"  inside the gateway, audit {g}, mean ms: upstream headers {stages['upstream']:.3f}, "
                        f"check {stages['check']:.3f}, upstream body + audit commit + response {rest:.3f}, "
                        f"all {stages['request']:.3f}"
                    )
            print()

    for at in rates:
        direct = runs.get(f"stream direct rate={at:g}")
        through = runs.get(f"stream gateway-stream rate={at:g}")
        if direct is None:
            continue
        print(
            f"chat completions streams, one event each {setup['pause_ms']} ms, "
            f"audit {gateways.get('stream', {}).get('audit_fs', '?')}: {label_rate(at)}"
        )
        print("  first text byte")
        print(header)
        row("direct", direct, "first_text_ms")
        row("through gateway", through, "first_text_ms")
        added("added", direct, through, "first_text_ms", GOAL_ADDED_FIRST_TEXT_MS)
        print("  last byte")
        row("direct", direct)
        row("through gateway", through)
        added("added", direct, through, "latency_ms", GOAL_ADDED_P99_MS, ())
        print()

    print("gateways after their load")
    for g, v in sorted(gateways.items()):
        print(
            f"  {g:<8} peak RSS (VmHWM) {v['vm_hwm_kb'] / 1024:7.1f} MiB, now {v['vm_rss_kb'] / 1024:7.1f} MiB, "
            f"{v['audited_calls']} calls audited with their keys, "
            f"audit file {v.get('db_bytes', 0) / 2**20:.0f} MiB, its WAL {v.get('wal_bytes', 0) / 2**20:.0f} MiB"
        )
    load_path = os.path.join(out, "load.txt")
    if os.path.exists(load_path):
        with open(load_path, encoding="utf-8") as f:
            loads = [float(line.rsplit("average ", 1)[1].split()[0]) for line in f if "average " in line]
        if loads:
            print(f"  1-minute load average before the runs: {min(loads):.2f} to {max(loads):.2f}")
    print()
    print("goals")
    for text, met, goal in goals:
        print(f"  {'met   ' if met else 'MISSED'}  {text:<66} (goal: at most {goal:g} ms)")
    for text in failures:
        print(f"  FAILED  {text}")


if __name__ == "__main__":
    main()
