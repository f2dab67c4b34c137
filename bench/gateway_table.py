#!/usr/bin/env python3
"""The table of bench/gateway.sh: reads its results directory (results.jsonl,
one line per load run; gateways.jsonl, each gateway's peak RSS, audited
calls and audit file sizes; fdatasync.jsonl, the disk's own fdatasync;
metrics/, each gateway's /metrics, CPU time and thread switches before
and after a run; setup.json;
load.txt) and prints, per workload, requests/s and p50/p90/p99/max latency
direct, through a pass-through proxy on the gateway's stack (the hop
alone), through the same proxy made durable (a record of each answer
synced to the disk before it is released: the floor of any proxy that
does so) and through the gateway, the latency each adds to the direct
path and the gateway adds to the pass-throughs (toolgate's own share), where
the gateway's mean time goes, the fdatasync figures, and each goal of the
fixed-rate runs beside its figure, met or missed. Runs labelled
` round=N` (the fixed-rate runs, in rounds) are one run in the table: each
percentile the median of the rounds', each added figure the median of
what each round's run added to that round's other run. The goals:

- audit on disk: added p99 at most the disk's own fdatasync p99 (4 KiB
  written over a file written before, as the audit log writes) plus 0.5 ms;
- audit on tmpfs: added p99 at most 0.5 ms;
- the same for Anthropic messages and OpenAI Responses as for chat
  completions;
- streams (chat completions, Anthropic messages, OpenAI Responses): the
  first text byte at most 0.3 ms later at p99.

usage: gateway_table.py OUT_DIR"""
import json
import os
import statistics
import sys

# Added p99 over the disk's own fdatasync p99, audit on disk.
GOAL_OVER_FDATASYNC_MS = 0.5
# Added p99, audit on tmpfs.
GOAL_TMPFS_P99_MS = 0.5
GOAL_ADDED_FIRST_TEXT_MS = 0.3
# The gateway's route label of each workload.
ROUTES = {"chat": "chat_completions", "messages": "messages", "responses": "responses"}


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def by_label(lines):
    """Runs by label; a run in rounds (labels ending ` round=N`) as one run
    under the label without it: each figure the median of its rounds',
    errors and requests summed, its rounds kept (`rounds`: {N: run})."""
    runs, rounds = {}, {}
    for run in lines:
        base, sep, n = run["label"].rpartition(" round=")
        if sep:
            rounds.setdefault(base, {})[int(n)] = run
        else:
            runs[run["label"]] = run
    for base, by in rounds.items():
        each = [by[n] for n in sorted(by)]
        merged = dict(each[0], label=base, rounds=by)
        merged["rps"] = statistics.median(r["rps"] for r in each)
        for field in ("latency_ms", "first_text_ms"):
            found = [r.get(field) for r in each]
            merged[field] = (
                None
                if any(f is None for f in found)
                else {q: statistics.median(f[q] for f in found) for q in found[0]}
            )
        for count in ("errors", "requests", "with_keys"):
            merged[count] = sum(r[count] for r in each)
        merged["error_samples"] = [e for r in each for e in r["error_samples"]][:3]
        runs[base] = merged
    return runs


def histograms(path):
    """{(metric, route): (sum, count)} of a /metrics scrape; route None for
    a metric without one (the audit's), whose counters (`..._total`) come
    as (value, 0)."""
    found = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("toolgate_") or "_bucket" in line:
                continue
            key, value = line.rsplit(" ", 1)
            if key.startswith("toolgate_audit_") and "{" not in key:
                for part in ("_sum", "_count", "_total"):
                    if key.endswith(part):
                        metric = key[: -len(part)]
                        pair = found.setdefault((metric, None), [0.0, 0.0])
                        pair[part == "_count"] = float(value)
                continue
            for part in ("_sum", "_count"):
                if part + "{" in key:
                    metric, labels = key.split(part + "{", 1)
                    route = labels.split('route="', 1)[1].split('"', 1)[0]
                    pair = found.setdefault((metric, route), [0.0, 0.0])
                    pair[part == "_count"] = float(value)
    return found


def bucket_quantiles(pairs, metric, quantiles=(0.5, 0.99)):
    """Upper bounds, in ms, of the quantiles of a histogram without labels
    over a run (from its buckets before and after each (before, after)
    pair of scrapes), or None."""

    def buckets(path):
        found = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith(metric + "_bucket{"):
                    le = line.split('le="', 1)[1].split('"', 1)[0]
                    found[le] = float(line.rsplit(" ", 1)[1])
        return found

    diff = {}
    for before_path, after_path in pairs:
        before, after = buckets(before_path), buckets(after_path)
        for le in after:
            diff[le] = diff.get(le, 0.0) + after[le] - before.get(le, 0.0)
    total = diff.get("+Inf", 0.0)
    if total <= 0:
        return None
    bounds = []
    for q in quantiles:
        le = next(le for le, count in diff.items() if count >= q * total)
        bounds.append(float("inf") if le == "+Inf" else float(le) * 1e3)
    return bounds


def run_names(run):
    """The file names of a run's metrics: one per round."""
    labels = [f"{run['label']} round={n}" for n in sorted(run["rounds"])] if "rounds" in run else [run["label"]]
    return [label.replace(" ", "_").replace("=", "_") for label in labels]


def scrapes(out, run):
    """(before, after) paths of each of a run's /metrics scrapes, or None
    when one is missing."""
    pairs = [
        tuple(os.path.join(out, "metrics", f"{name}.{at}") for at in ("before", "after"))
        for name in run_names(run)
    ]
    return pairs if all(os.path.exists(p) for pair in pairs for p in pair) else None


def inside(out, run, route):
    """The gateway's mean ms per request during a run (all its rounds), by
    stage."""
    pairs = scrapes(out, run)
    if not pairs:
        return None
    # (sum, count) gained over the run, summed over its rounds.
    gained = {}
    for before_path, after_path in pairs:
        before, after = histograms(before_path), histograms(after_path)
        for key, (s1, c1) in after.items():
            s0, c0 = before.get(key, (0.0, 0.0))
            pair = gained.setdefault(key, [0.0, 0.0])
            pair[0] += s1 - s0
            pair[1] += c1 - c0

    def mean(metric):
        s, c = gained.get((f"toolgate_{metric}_duration_seconds", route), (0.0, 0.0))
        return s / c * 1e3 if c > 0 else None

    stages = {stage: mean(stage) for stage in ("request", "upstream", "check")}

    def delta(metric, at):
        return gained.get((f"toolgate_{metric}", None), (0.0, 0.0))[at]

    groups, records = delta("audit_groups", 0), delta("audit_records", 0)
    commit_sum, commit_count = delta("audit_commit_duration_seconds", 0), delta(
        "audit_commit_duration_seconds", 1
    )
    if groups > 0 and commit_count > 0:
        stages["audit_group"] = records / groups
        stages["audit_at_once"] = delta("audit_records_at_once", 0) / records if records else 0.0
        stages["audit_commit"] = commit_sum / commit_count * 1e3
        stages["audit_commit_quantiles"] = bucket_quantiles(pairs, "toolgate_audit_commit_duration_seconds")
    requests = gained.get(("toolgate_request_duration_seconds", route), (0.0, 0.0))[1]
    stages["usage"] = usage(out, run, requests)
    return stages


def usage(out, run, requests):
    """The gateway's CPU time (ms), thread switches and bytes written to
    storage per request during a run (all its rounds), from its /proc
    figures before and after each (None without them; no bytes from
    figures taken before they were); `requests` counted by its request
    histogram."""
    if requests <= 0:
        return None
    ticks = voluntary = involuntary = 0
    written = 0
    for name in run_names(run):
        paths = [os.path.join(out, "metrics", f"{name}.usage.{at}") for at in ("before", "after")]
        if not all(os.path.exists(p) for p in paths):
            return None
        before, after = (read_lines(p)[0] for p in paths)
        ticks += after["cpu_ticks"] - before["cpu_ticks"]
        voluntary += after["voluntary"] - before["voluntary"]
        involuntary += after["involuntary"] - before["involuntary"]
        if written is not None and "write_bytes" in before and "write_bytes" in after:
            written += after["write_bytes"] - before["write_bytes"]
        else:
            written = None
    return {
        "cpu_ms": ticks / after["ticks_per_second"] * 1e3 / requests,
        "voluntary": voluntary / requests,
        "involuntary": involuntary / requests,
        "written_kib": None if written is None else written / 1024 / requests,
    }


def name_of(run):
    """A run's label without its rate."""
    return run["label"].rsplit(" rate=", 1)[0]


def fdatasync_lines(out):
    """The probes of fdatasync.jsonl, and the disk's p99 the goal adds to:
    written over, the mean of the disk probes' p99."""
    path = os.path.join(out, "fdatasync.jsonl")
    probes = read_lines(path) if os.path.exists(path) else []
    disk = [p["written_over"]["p99"] for p in probes if p["probe"].startswith("disk")]
    return probes, (sum(disk) / len(disk) if disk else None)


def print_fdatasync(probes):
    if not probes:
        return
    print("the disk's own fdatasync, 4 KiB a call, where the audit is (ms)")
    print(f"  {'':<36} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for probe in probes:
        for mode, what in (("written_over", "written over"), ("appended", "appended")):
            q = probe[mode]
            name = f"{probe['probe']} ({probe['fs']}), {what}"
            print(f"  {name:<36} {q['p50']:>8.3f} {q['p90']:>8.3f} {q['p99']:>8.3f} {q['max']:>8.3f}")
    print()


def print_header(setup, gateways):
    print(
        f"toolgate serve, {setup['commit']}: {setup['cores']} cores ({setup['model']}) shared by "
        f"the load generator ({setup['load_threads']} thread), the mock upstreams and the gateways"
    )
    print(
        f"{setup['connections']} connections, {setup['duration']} s per run; "
        "closed loop: each connection sends when answered; "
        "open loop: a fixed rate, latency counted from the due time when late"
    )
    if setup.get("rounds", 1) > 1:
        print(
            f"the fixed-rate runs in {setup['rounds']} rounds: each percentile the median of the rounds', "
            "each added figure the median of what each round's run added to that round's direct run"
        )
    audit = ", ".join(f"{g}: {v['audit_fs']}" for g, v in sorted(gateways.items()))
    print(f"audit (audit.sqlite: its log and its index, or the SQLite file alone before the log) on {audit}")
    print()


class Table:
    """Rows, added latencies and the goals they are held to."""

    HEADER = f"  {'':<28} {'req/s':>8}  {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}"

    def __init__(self):
        self.goals = []
        self.failures = []
        self.added_p99 = {}
        # What the pass-through proxy adds at p99, by workload and rate.
        self.hop_p99 = {}

    def row(self, name, run, field="latency_ms"):
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
            self.failures.append(f"{run['label']}: {run['errors']} errors")
        if "gateway" in run["label"] and run["with_keys"] < run["requests"]:
            self.failures.append(
                f"{run['label']}: {run['requests'] - run['with_keys']} answers without idempotency keys"
            )

    def added(self, name, direct, through, field, goal=None, why=""):
        """Print what `through` adds to `direct`; hold its p99 to `goal`
        (ms) when one is given."""
        if direct is None or through is None or direct[field] is None or through[field] is None:
            return
        quantiles = ("p50", "p90", "p99", "max")
        common = sorted(set(direct.get("rounds", {})) & set(through.get("rounds", {})))
        if common:
            # The median of what each round's run added to that round's
            # other run.
            pairs = [(direct["rounds"][n][field], through["rounds"][n][field]) for n in common]
            if any(d is None or t is None for d, t in pairs):
                return
            diffs = {p: statistics.median(t[p] - d[p] for d, t in pairs) for p in quantiles}
        else:
            diffs = {p: through[field][p] - direct[field][p] for p in quantiles}
        print(
            f"  {name:<28} {'':>8}  {diffs['p50']:>+8.3f} {diffs['p90']:>+8.3f} "
            f"{diffs['p99']:>+8.3f} {diffs['max']:>+8.3f}"
        )
        self.added_p99[(direct["label"], through["label"], field)] = diffs["p99"]
        if goal is not None:
            note = f", {through['rate']:g}/s"
            what = "first text byte, added" if field == "first_text_ms" else "added"
            text = f"{name_of(through)}{note}: {what} p99 {diffs['p99']:+.3f} ms"
            self.goals.append((text, diffs["p99"] <= goal, f"at most {why}{goal:.3f} ms"))


def print_whole(out, runs, table, disk_p99):
    rates = sorted({r["rate"] or 0 for r in runs.values()})
    for title, path in (
        ("chat completions, whole body, one tool call", "chat"),
        ("Anthropic messages, whole body, one tool call", "messages"),
        ("OpenAI Responses, whole body, one tool call", "responses"),
    ):
        for at in rates:
            direct = runs.get(f"{path} direct rate={at:g}")
            if direct is None:
                continue
            print(f"{title}: {label_rate(at)}")
            print(Table.HEADER)
            table.row("direct", direct)
            passed = runs.get(f"{path} pass rate={at:g}")
            table.row("through a pass-through", passed)
            durable = runs.get(f"{path} pass-durable rate={at:g}")
            table.row("durable pass-through, disk", durable)
            for g in ("disk", "tmpfs"):
                table.row(f"through gateway, audit {g}", runs.get(f"{path} gateway-{g} rate={at:g}"))
            table.added("added, pass-through", direct, passed, "latency_ms")
            table.added("added, durable pass-through", direct, durable, "latency_ms")
            for g in ("disk", "tmpfs"):
                through = runs.get(f"{path} gateway-{g} rate={at:g}")
                goal, why = None, ""
                if at and g == "tmpfs":
                    goal = GOAL_TMPFS_P99_MS
                elif at and disk_p99 is not None:
                    goal = disk_p99 + GOAL_OVER_FDATASYNC_MS
                    why = f"fdatasync p99 {disk_p99:.3f} + {GOAL_OVER_FDATASYNC_MS} = "
                table.added(f"added, audit {g}", direct, through, "latency_ms", goal, why)
            for g in ("disk", "tmpfs"):
                through = runs.get(f"{path} gateway-{g} rate={at:g}")
                table.added(f"over the pass-through, {g}", passed, through, "latency_ms")
            table.added(
                "over the durable one, disk", durable, runs.get(f"{path} gateway-disk rate={at:g}"), "latency_ms"
            )
            for g in ("disk", "tmpfs"):
                through = runs.get(f"{path} gateway-{g} rate={at:g}")
                print_inside(out, through, ROUTES[path], g)
            print()


def print_inside(out, through, route, g):
    stages = through and inside(out, through, route)
    if not stages or None in (stages["request"], stages["upstream"], stages["check"]):
        return
    rest = stages["request"] - stages["upstream"] - stages["check"]
    print(
        f"  inside the gateway, audit {g}, mean ms: upstream headers {stages['upstream']:.3f}, "
        f"check {stages['check']:.3f}, upstream body + audit commit + response {rest:.3f}, "
        f"all {stages['request']:.3f}"
    )
    if stages.get("usage"):
        use = stages["usage"]
        print(
            f"    per request: {use['cpu_ms']:.3f} ms of CPU (the whole process: its indexer too), "
            f"{use['voluntary']:.2f} voluntary and {use['involuntary']:.2f} involuntary thread switches"
            + (f", {use['written_kib']:.1f} KiB written to storage" if use.get("written_kib") is not None else "")
        )
    if "audit_commit" in stages:
        bounds = stages.get("audit_commit_quantiles")
        spread = f" (p50 at most {bounds[0]:g}, p99 at most {bounds[1]:g} ms)" if bounds else ""
        print(
            f"    audit: {stages['audit_group']:.2f} records a group, "
            f"{stages['audit_commit']:.3f} ms to write and sync one{spread}; "
            f"{100 * stages.get('audit_at_once', 0.0):.0f}% committed on the request's own thread"
        )


# Each API's streams: its title, and its runs' label.
STREAMS = (
    ("chat completions streams", "stream"),
    ("Anthropic messages streams", "messages-stream"),
    ("OpenAI Responses streams", "responses-stream"),
)


def print_streams(runs, table, setup, gateways):
    for title, path in STREAMS:
        for at in sorted({r["rate"] or 0 for r in runs.values()}):
            print_stream(runs, table, setup, gateways, title, path, at)


def print_stream(runs, table, setup, gateways, title, path, at):
    """One API's streams at one rate: first text byte and last byte."""
    direct = runs.get(f"{path} direct rate={at:g}")
    through = runs.get(f"{path} gateway-stream rate={at:g}")
    if direct is None:
        return
    print(
        f"{title}, one event each {setup['pause_ms']} ms, "
        f"audit {gateways.get('stream', {}).get('audit_fs', '?')}: {label_rate(at)}"
    )
    print("  first text byte")
    print(Table.HEADER)
    passed = runs.get(f"{path} pass rate={at:g}")
    table.row("direct", direct, "first_text_ms")
    table.row("through a pass-through", passed, "first_text_ms")
    table.row("through gateway", through, "first_text_ms")
    table.added("added, pass-through", direct, passed, "first_text_ms")
    goal = GOAL_ADDED_FIRST_TEXT_MS if at else None
    table.added("added", direct, through, "first_text_ms", goal)
    table.added("over the pass-through", passed, through, "first_text_ms")
    print("  last byte")
    table.row("direct", direct)
    table.row("through a pass-through", passed)
    table.row("through gateway", through)
    table.added("added, pass-through", direct, passed, "latency_ms")
    table.added("added", direct, through, "latency_ms")
    table.added("over the pass-through", passed, through, "latency_ms")
    print()


def label_rate(at):
    return "as fast as answered (closed loop)" if at == 0 else f"{at:g} requests/s (open loop)"


def print_gateways(out, gateways):
    print("gateways after their load")
    for g, v in sorted(gateways.items()):
        print(
            f"  {g:<8} peak RSS (VmHWM) {v['vm_hwm_kb'] / 1024:7.1f} MiB, now {v['vm_rss_kb'] / 1024:7.1f} MiB, "
            f"{v['audited_calls']} calls audited with their keys, "
            f"audit index {v.get('db_bytes', 0) / 2**20:.0f} MiB, its WAL {v.get('wal_bytes', 0) / 2**20:.0f} MiB, "
            f"audit log {v.get('log_bytes', 0) / 2**20:.0f} MiB"
        )
    load_path = os.path.join(out, "load.txt")
    if os.path.exists(load_path):
        with open(load_path, encoding="utf-8") as f:
            loads = [float(line.rsplit("average ", 1)[1].split()[0]) for line in f if "average " in line]
        if loads:
            print(f"  1-minute load average before the runs: {min(loads):.2f} to {max(loads):.2f}")
    print()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    runs = by_label(read_lines(os.path.join(out, "results.jsonl")))
    gateways = {g["gateway"]: g for g in read_lines(os.path.join(out, "gateways.jsonl"))}
    with open(os.path.join(out, "setup.json"), encoding="utf-8") as f:
        setup = json.load(f)
    probes, disk_p99 = fdatasync_lines(out)

    print_header(setup, gateways)
    print_fdatasync(probes)
    table = Table()
    print_whole(out, runs, table, disk_p99)
    print_streams(runs, table, setup, gateways)
    print_gateways(out, gateways)

    print("goals (fixed rate)")
    for text, met, goal in table.goals:
        print(f"  {'met   ' if met else 'MISSED'}  {text:<58} (goal: {goal})")
    for g in ("disk", "tmpfs"):
        rate = setup["rate"]
        chat = table.added_p99.get(
            (f"chat direct rate={rate:g}", f"chat gateway-{g} rate={rate:g}", "latency_ms")
        )
        for path, what in (("messages", "Anthropic messages"), ("responses", "OpenAI Responses")):
            other = table.added_p99.get(
                (f"{path} direct rate={rate:g}", f"{path} gateway-{g} rate={rate:g}", "latency_ms")
            )
            if chat is not None and other is not None:
                print(
                    f"          {what} beside chat completions, audit {g}, {rate:g}/s: "
                    f"added p99 {other:+.3f} against {chat:+.3f} ms ({other - chat:+.3f})"
                )
    # The hop alone: what any proxy on this machine's stack adds, and
    # toolgate's share over it, beside each goal's figure.
    hops = []
    for path, at, field, what in (
        ("chat", setup["rate"], "latency_ms", "chat"),
        ("messages", setup["rate"], "latency_ms", "messages"),
        ("responses", setup["rate"], "latency_ms", "responses"),
        ("stream", setup["stream_rate"], "first_text_ms", "stream first text byte"),
        ("messages-stream", setup["stream_rate"], "first_text_ms", "messages stream first text byte"),
        ("responses-stream", setup["stream_rate"], "first_text_ms", "responses stream first text byte"),
    ):
        hop = table.added_p99.get((f"{path} direct rate={at:g}", f"{path} pass rate={at:g}", field))
        if hop is not None:
            hops.append(f"{what} {hop:+.3f}")
    if hops:
        print(f"          the hop alone, a pass-through proxy on the same stack, added p99: {', '.join(hops)} ms")
    # The floor of the disk goal: the same proxy syncing a record of each
    # answer before releasing it, on the same disk.
    floors = []
    at = setup["rate"]
    for path in ("chat", "messages", "responses"):
        floor = table.added_p99.get((f"{path} direct rate={at:g}", f"{path} pass-durable rate={at:g}", "latency_ms"))
        if floor is not None:
            floors.append(f"{path} {floor:+.3f}")
    if floors:
        print(
            "          the floor of the disk goal, that proxy syncing a record of each answer to the disk "
            f"before releasing it, added p99: {', '.join(floors)} ms"
        )
    for text in table.failures:
        print(f"  FAILED  {text}")


if __name__ == "__main__":
    main()
