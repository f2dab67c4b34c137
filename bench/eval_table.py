#!/usr/bin/env python3
"""The table of bench/eval.sh: reads its results directory (the `/usr/bin/time
-v` reports and --json summaries of `toolgate eval`, the Python baseline's
JSON) and prints, per size, toolgate's wall time, traces/s, calls/s (from
the summary's `calls` and the wall time), CPU use and peak RSS beside the
Python baseline's, their ratio, whether the peak RSS at the largest size is
within 10% of the smallest, and every way toolgate's counts differ from the
workload's stats.json. Also writes results.json there.

usage: eval_table.py OUT_DIR TARGET_DIR --sizes N... --runs R --cores C"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workload import KINDS  # noqa: E402  (defect kind -> violation code)

GOAL_CALLS_PER_S = 1_000_000
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("target")
    ap.add_argument("--sizes", nargs="+", type=int, required=True)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--cores", type=int, required=True)
    opts = ap.parse_args()

    results, problems = [], []
    for n in opts.sizes:
        stats = json.load(open(os.path.join(opts.target, f"eval-workload-{n}", "stats.json")))
        want = expected(stats)
        runs = []
        for r in range(1, opts.runs + 1):
            wall, cpu, rss = parse_time(os.path.join(opts.out, f"time-{n}-{r}.txt"))
            summary = json.load(open(os.path.join(opts.out, f"summary-{n}-{r}.json")))
            for d in differences(summary, want):
                problems.append(f"{n} traces, run {r}: {d}")
            load = open(os.path.join(opts.out, f"load-{n}-{r}.txt")).read().split()[0]
            runs.append({"wall": wall, "cpu": cpu, "rss_kb": rss, "summary_seconds": summary["seconds"],
                         "load": float(load), "calls": summary["calls"], "traces": summary["traces"]})
        best = min(runs, key=lambda x: x["wall"])
        row = {
            "size": n,
            "calls": best["calls"],
            "runs": runs,
            "wall": best["wall"],
            "traces_per_s": best["traces"] / best["wall"],
            "calls_per_s": best["calls"] / best["wall"],
            "cpu_percent": 100 * best["cpu"] / best["wall"],
            "peak_rss_mb": max(x["rss_kb"] for x in runs) / 1024,
        }
        for p in sorted({1, opts.cores}):
            path = os.path.join(opts.out, f"python-{n}-p{p}.json")
            py = json.load(open(path)) if os.path.exists(path) else {"skipped": True}
            row[f"python_p{p}"] = py
            if not py.get("skipped"):
                row[f"ratio_p{p}"] = row["calls_per_s"] / py["calls_per_s"]
                if py["calls"] != want["calls"] or py["traces"] != want["traces"]:
                    problems.append(f"{n} traces, python {p}p: traces {py['traces']}, calls {py['calls']}")
        results.append(row)

    multi = opts.cores > 1
    head = ["traces", "tg wall s", "tg traces/s", "tg calls/s", "tg CPU", "tg peak RSS MB",
            "py traces/s", "py calls/s", "ratio"]
    if multi:
        head += [f"py {opts.cores}p calls/s", f"ratio {opts.cores}p"]
    lines = [head]
    for row in results:
        py = row["python_p1"]
        line = [f"{row['size']:,}", f"{row['wall']:.2f}", fmt(row["traces_per_s"]), fmt(row["calls_per_s"]),
                f"{row['cpu_percent']:.0f}%", f"{row['peak_rss_mb']:.1f}",
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
    print(f"toolgate: best wall time of {opts.runs} run(s), largest peak RSS; traces/s and calls/s "
          f"from the summary's counts and the wall time of the whole process (policy load included);")
    print("tg CPU: (user + system) / wall. Python: validators compiled before the clock; ratio = "
          "toolgate calls/s / Python calls/s.")
    for row in results:
        for p in sorted({1, opts.cores}):
            py = row[f"python_p{p}"]
            if py.get("skipped"):
                print(f"python {p}p on {row['size']:,}: skipped, estimated {py.get('estimated_seconds', '?')} s")
            else:
                print(f"python {p}p on {row['size']:,}: {py['seconds']} s, {py['invalid_calls']:,} invalid calls "
                      f"(workload: {want_defective(opts, row['size']):,} defective), "
                      f"peak RSS {py['max_rss_mb']} MB")
        loads = ", ".join(f"{x['load']:.2f}" for x in row["runs"])
        walls = ", ".join(f"{x['wall']:.2f}" for x in row["runs"])
        print(f"toolgate on {row['size']:,}: wall {walls} s; load average at start {loads}")

    small, large = results[0], results[-1]
    growth = large["peak_rss_mb"] / small["peak_rss_mb"] - 1
    flat = abs(growth) <= RSS_TOLERANCE
    print()
    print(f"peak RSS {small['size']:,} -> {large['size']:,}: {small['peak_rss_mb']:.1f} -> "
          f"{large['peak_rss_mb']:.1f} MB ({growth:+.1%}): "
          f"{'within' if flat else 'NOT within'} {RSS_TOLERANCE:.0%}")
    top = max(row["calls_per_s"] for row in results)
    print(f"goal {GOAL_CALLS_PER_S:,} calls/s on {opts.cores} cores: best {top:,.0f} calls/s: "
          f"{'met' if top >= GOAL_CALLS_PER_S else 'NOT met'}")
    if problems:
        print("toolgate counts that differ from the workload:")
        for p in problems:
            print("  " + p)
    else:
        print("toolgate counts match stats.json on every run (traces, calls, passed, invalid calls, "
              "codes, no bad lines)")

    with open(os.path.join(opts.out, "results.json"), "w") as f:
        json.dump({"rows": results, "rss_growth": growth, "rss_flat": flat, "problems": problems}, f, indent=1)


def want_defective(opts, n):
    return json.load(open(os.path.join(opts.target, f"eval-workload-{n}", "stats.json")))["defective"]


if __name__ == "__main__":
    main()
