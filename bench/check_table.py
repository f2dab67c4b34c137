#!/usr/bin/env python3
"""Print the check bench (bench/check.sh) as a table: per workload shape,
its payloads, calls and bytes a payload, the criterion medians of the
naive pipeline and of toolgate a payload (CPU time) and their ratio
(above 1: toolgate is faster), the median ratio of the rounds in which
both take turns (paired.json beside the workload: what else the machine
runs at a moment weighs on both alike) with its lowest and highest, and
whether the goal, toolgate at least 2x the naive pipeline, is met by the
paired ratio (by the criterion one when there are no rounds).

usage: check_table.py CRITERION_DIR WORKLOADS_DIR SHAPE..."""
import json
import os
import statistics
import sys

from criterion_table import medians

GOAL = 2.0


def paired(directory):
    """(median, lowest, highest) of the naive / toolgate ratios of the
    paired rounds, or None."""
    path = os.path.join(directory, "paired.json")
    if not os.path.exists(path):
        return None
    ratios = [naive / toolgate for toolgate, naive in json.load(open(path))["rounds"]]
    return statistics.median(ratios), min(ratios), max(ratios)


def main():
    root, workloads, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = medians(root, "check/")
    print(f"{'shape':16} {'payloads':>8} {'calls':>6} {'bytes':>7} {'naive µs':>9} {'toolgate µs':>11} "
          f"{'ratio':>6} {'paired (low-high)':>18}  goal ≥ {GOAL:g}x")
    met = 0
    for shape in shapes:
        directory = os.path.join(workloads, shape)
        stats = json.load(open(os.path.join(directory, "stats.json")))
        n = stats["payloads"]
        fns = rows.get(f"check/{shape}", {})
        if "toolgate" not in fns or "naive" not in fns:
            print(f"{shape:16} {n:8} (no criterion result)")
            continue
        toolgate, naive = fns["toolgate"][0] / 1e3, fns["naive"][0] / 1e3
        ratio = naive / toolgate
        pairs = paired(directory)
        judged = pairs[0] if pairs else ratio
        met += judged >= GOAL
        pair_text = f"{pairs[0]:.2f} ({pairs[1]:.2f}-{pairs[2]:.2f})" if pairs else "-"
        print(f"{shape:16} {n:8} {stats['calls'] / n:6.2f} {stats['bytes'] / n:7.0f} {naive:9.2f} "
              f"{toolgate:11.2f} {ratio:6.2f} {pair_text:>18}  {'met' if judged >= GOAL else 'missed'}")
    print(f"goal met on {met} of {len(shapes)} shapes (one run: criterion medians, µs of CPU time a "
          "payload; ratios naive / toolgate)")


if __name__ == "__main__":
    main()
