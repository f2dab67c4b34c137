#!/usr/bin/env python3
"""The table of bench/eval.sh: reads its results directory (the `/usr/bin/time
-v` reports and --json summaries of `toolgate eval`, the Python baseline's
JSON) and prints, per size, toolgate's wall time, traces/s, calls/s (from
the summary's `calls` and the wall time of the whole process), CPU use and
peak RSS beside the Python baseline's, their ratio, the load average at the
start of each run, and the goals beside the figures, met or missed: at least
1,000,000 calls/s on the machine's cores at 100k traces (the median run), a
peak RSS under 64 MiB in every run, and the median peak RSS flat (within 10%)
from the smallest size to every larger one. Also lists every way toolgate's counts
differ from the workload's stats.json, and writes results.json there.

usage: eval_table.py OUT_DIR TARGET_DIR --sizes N... --runs R --cores C"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shapes.common import CODES as KINDS  # noqa: E402  (defect kind -> violation code)

GOAL_CALLS_PER_S = 1_000_000
GOAL_SIZE = 100_000
GOAL_RSS_MIB = 64
RSS_TOLERANCE = 0.10


def parse_time(path):
    """Wall seconds, user + system seconds and peak RSS (kB) from `time -v`."""
    text = open(path, encoding="utf-8").read()

    def field(name):
        m = re.search(re.escape(name) + r".*?:\s*(\S+)\s*$", text, re.M)
        if not m:
            sys.exit(f"{path}: no '{name}'")
        return m.group(1)

    wall = 0.0
    for part in field("Elapsed (wall clock) time").split(":"):
        wall = wall * 60 + float(part)
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    return wall, cpu, int(field("Maximum resident set size (kbytes)"))


def expected(stats):
    codes = {}
    for kind, count in stats["per_kind"].items():
        if count:
            codes[KINDS[kind]] = codes.get(KINDS[kind], 0) + count
    return {
        "traces": stats["payloads"],
        "calls": stats["calls"],
        "passed": stats["payloads"] - stats["defective"],
        "invalid_calls": stats["defective"],
        "bad_lines": 0,
        "codes": codes,
    }


def differences(summary, want):
    """Every way a summary differs from what the workload holds."""
    found = []
    for key in ("traces", "calls", "passed", "invalid_calls", "bad_lines"):
        if summary.get(key) != want[key]:
            found.append(f"{key} {summary.get(key)}, expected {want[key]}")
    got = {code: row["count"] for code, row in summary.get("codes", {}).items()}
    for code in sorted(set(got) | set(want["codes"])):
        if got.get(code, 0) != want["codes"].get(code, 0):
            found.append(f"code {code}: {got.get(code, 0)}, expected {want['codes'].get(code, 0)}")
    for code, row in summary.get("codes", {}).items():
        if row["traces"] != row["count"]:
            found.append(f"code {code}: {row['count']} violations in {row['traces']} traces, expected one each")
    return found


def fmt(x, unit=""):
    if x is None:
        return "-"
    if isinstance(x, float) and x < 100:
        return f"{x:.2f}{unit}"
    return f"{x:,.0f}{unit}"


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def workload_stats(opts, n):
    """The stats of the traces a size ran: its own workload's, or those of the
    workload it streamed, times the repeats (source-N.txt)."""
    base, repeats = n, 1
    path = os.path.join(opts.out, f"source-{n}.txt")
    if os.path.exists(path):
        base, repeats = (int(x) for x in open(path).read().split())
    stats = json.load(open(os.path.join(opts.target, f"eval-workload-{base}", "stats.json")))
    for key in ("payloads", "calls", "bytes", "defective"):
        stats[key] *= repeats
    stats["per_kind"] = {kind: count * repeats for kind, count in stats["per_kind"].items()}
    stats["streamed_from"] = base if repeats > 1 else None
    return stats


def toolgate_row(opts, n, problems):
    """One size: every run's figures, the median and best wall times."""
    stats = workload_stats(opts, n)
    want = expected(stats)
    runs = []
    for r in range(1, opts.runs + 1):
        wall, cpu, rss = parse_time(os.path.join(opts.out, f"time-{n}-{r}.txt"))
        # The wall time to the microsecond, when the run recorded it
        # (`time` counts hundredths).
        precise = os.path.join(opts.out, f"wall-{n}-{r}.txt")
        if os.path.exists(precise):
            wall = int(open(precise).read()) / 1e9
        summary = json.load(open(os.path.join(opts.out, f"summary-{n}-{r}.json")))
        for d in differences(summary, want):
            problems.append(f"{n} traces, run {r}: {d}")
        load = open(os.path.join(opts.out, f"load-{n}-{r}.txt")).read().split()[0]
        runs.append({"wall": wall, "cpu": cpu, "rss_kb": rss, "summary_seconds": summary["seconds"],
                     "load": float(load), "calls": summary["calls"], "traces": summary["traces"]})
    calls, traces = runs[0]["calls"], runs[0]["traces"]
    wall = median([x["wall"] for x in runs])
    best = min(x["wall"] for x in runs)
    return {
        "size": n,
        "streamed_from": stats["streamed_from"],
        "calls": calls,
        "runs": runs,
        "wall": wall,
        "best_wall": best,
        "traces_per_s": traces / wall,
        "calls_per_s": calls / wall,
        "best_calls_per_s": calls / best,
        "cpu_percent": 100 * median([x["cpu"] for x in runs]) / wall,
        # The peak comes early (the policy's compilation overlaps the first
        # batches) and varies from run to run: the largest for the limit,
        # the median to compare sizes.
        "peak_rss_mib": max(x["rss_kb"] for x in runs) / 1024,
        "median_rss_mib": median([x["rss_kb"] for x in runs]) / 1024,
    }


def python_figures(opts, row, problems):
    n = row["size"]
    stats = workload_stats(opts, n)
    for p in sorted({1, opts.cores}):
        path = os.path.join(opts.out, f"python-{n}-p{p}.json")
        py = json.load(open(path)) if os.path.exists(path) else {"skipped": True}
        row[f"python_p{p}"] = py
        if not py.get("skipped"):
            row[f"ratio_p{p}"] = row["calls_per_s"] / py["calls_per_s"]
            if py["calls"] != stats["calls"] or py["traces"] != stats["payloads"]:
                problems.append(f"{n} traces, python {p}p: traces {py['traces']}, calls {py['calls']}")


def print_table(opts, results):
    multi = opts.cores > 1
    head = ["traces", "tg wall s", "tg traces/s", "tg calls/s", "best calls/s", "tg CPU", "peak RSS MiB", "median",
            "py traces/s", "py calls/s", "ratio"]
    if multi:
        head += [f"py {opts.cores}p calls/s", f"ratio {opts.cores}p"]
    lines = [head]
    for row in results:
        py = row["python_p1"]
        line = [f"{row['size']:,}", f"{row['wall']:.3f}", fmt(row["traces_per_s"]), fmt(row["calls_per_s"]),
                fmt(row["best_calls_per_s"]), f"{row['cpu_percent']:.0f}%", f"{row['peak_rss_mib']:.1f}",
                f"{row['median_rss_mib']:.1f}",
                "skipped" if py.get("skipped") else fmt(py["traces_per_s"]),
                "skipped" if py.get("skipped") else fmt(py["calls_per_s"]),
                fmt(row.get("ratio_p1"), "x")]
        if multi:
            pm = row[f"python_p{opts.cores}"]
            line += ["skipped" if pm.get("skipped") else fmt(pm["calls_per_s"]),
                     fmt(row.get(f"ratio_p{opts.cores}"), "x")]
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for k, line in enumerate(lines):
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths)))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print()
    print(f"toolgate: the median wall time of {opts.runs} run(s) (best calls/s: the fastest run); peak RSS: the "
          f"largest of the runs, and their median; traces/s and calls/s from the summary's counts and the wall "
          f"time of the whole process (policy load included);")
    print("tg CPU: (user + system) / wall, medians; 100% a core. Python: validators compiled before the clock; "
          "ratio = toolgate calls/s / Python calls/s.")
    for row in results:
        for p in sorted({1, opts.cores}):
            py = row[f"python_p{p}"]
            if py.get("streamed"):
                print(f"python {p}p on {row['size']:,}: skipped, the traces were streamed")
            elif py.get("skipped"):
                print(f"python {p}p on {row['size']:,}: skipped, estimated {py.get('estimated_seconds', '?')} s")
            else:
                print(f"python {p}p on {row['size']:,}: {py['seconds']} s, {py['invalid_calls']:,} invalid calls "
                      f"(workload: {want_defective(opts, row['size']):,} defective), "
                      f"peak RSS {py['max_rss_mb']} MB")
        loads = ", ".join(f"{x['load']:.2f}" for x in row["runs"])
        walls = ", ".join(f"{x['wall']:.3f}" for x in row["runs"])
        print(f"toolgate on {row['size']:,}: wall {walls} s; 1-minute load average at the start of each: {loads}")
        if row["streamed_from"]:
            print(f"  (streamed: the workload of {row['streamed_from']:,} traces "
                  f"{row['size'] // row['streamed_from']} times through a pipe, read from standard input)")


def goals(opts, results):
    """(text, met, goal) for each goal of issue 12 that these sizes measure."""
    found = []
    at = next((row for row in results if row["size"] == GOAL_SIZE), None)
    if at is None:
        found.append((f"calls/s at {GOAL_SIZE:,} traces: not run (EVAL_SIZES)", False,
                      f"at least {GOAL_CALLS_PER_S:,} on {opts.cores} cores"))
    else:
        found.append((f"calls/s at {GOAL_SIZE:,} traces on {opts.cores} cores (median of {opts.runs}): "
                      f"{at['calls_per_s']:,.0f}", at["calls_per_s"] >= GOAL_CALLS_PER_S,
                      f"at least {GOAL_CALLS_PER_S:,}"))
    for row in results:
        found.append((f"peak RSS at {row['size']:,} traces: {row['peak_rss_mib']:.1f} MiB",
                      row["peak_rss_mib"] < GOAL_RSS_MIB, f"under {GOAL_RSS_MIB} MiB"))
    small = results[0]
    for row in results[1:]:
        growth = row["median_rss_mib"] / small["median_rss_mib"] - 1
        found.append((f"median peak RSS {small['size']:,} -> {row['size']:,} traces: "
                      f"{small['median_rss_mib']:.1f} -> {row['median_rss_mib']:.1f} MiB ({growth:+.1%})",
                      abs(growth) <= RSS_TOLERANCE, f"flat, within {RSS_TOLERANCE:.0%}"))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("target")
    ap.add_argument("--sizes", nargs="+", type=int, required=True)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--cores", type=int, required=True)
    opts = ap.parse_args()

    problems = []
    results = []
    for n in opts.sizes:
        row = toolgate_row(opts, n, problems)
        python_figures(opts, row, problems)
        results.append(row)

    print_table(opts, results)
    print()
    print("goals")
    found = goals(opts, results)
    for text, met, goal in found:
        print(f"  {'met   ' if met else 'MISSED'}  {text:<72} (goal: {goal})")
    if problems:
        print("toolgate counts that differ from the workload:")
        for p in problems:
            print("  " + p)
    else:
        print("toolgate counts match stats.json on every run (traces, calls, passed, invalid calls, "
              "codes, no bad lines)")

    with open(os.path.join(opts.out, "results.json"), "w") as f:
        json.dump({"rows": results, "goals": [{"text": t, "met": m, "goal": g} for t, m, g in found],
                   "problems": problems}, f, indent=1)


def want_defective(opts, n):
    return workload_stats(opts, n)["defective"]


if __name__ == "__main__":
    main()
