#!/usr/bin/env python3
"""Print the check bench (bench/check.sh) as a table: per workload shape,
its payloads, calls and bytes a payload, the criterion medians of the
naive pipeline and of toolgate a payload, their ratio (above 1: toolgate
is faster) and whether the goal, toolgate at least 2x the naive pipeline,
is met.

usage: check_table.py CRITERION_DIR WORKLOADS_DIR SHAPE..."""
import json
import os
import sys

from criterion_table import medians

GOAL = 2.0


def main():
    root, workloads, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = medians(root, "check/")
    print(f"{'shape':10} {'payloads':>8} {'calls':>6} {'bytes':>7} {'naive µs':>9} "
          f"{'toolgate µs':>11} {'naive/toolgate':>14}  goal ≥ {GOAL:g}x")
    met = 0
    for shape in shapes:
        stats = json.load(open(os.path.join(workloads, shape, "stats.json")))
        n = stats["payloads"]
        fns = rows.get(f"check/{shape}", {})
        if "toolgate" not in fns or "naive" not in fns:
            print(f"{shape:10} {n:8} (no criterion result)")
            continue
        toolgate, naive = fns["toolgate"][0] / 1e3, fns["naive"][0] / 1e3
        ratio = naive / toolgate
        met += ratio >= GOAL
        print(f"{shape:10} {n:8} {stats['calls'] / n:6.2f} {stats['bytes'] / n:7.0f} {naive:9.2f} "
              f"{toolgate:11.2f} {ratio:14.2f}  {'met' if ratio >= GOAL else 'missed'}")
    print(f"goal met on {met} of {len(shapes)} shapes (medians of one run; µs a payload)")


if __name__ == "__main__":
    main()
