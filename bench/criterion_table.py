#!/usr/bin/env python3
"""Print criterion medians as a table: per group, toolgate beside the
baseline of the same run, in µs, MB/s and the ratio baseline / toolgate
(above 1: toolgate is faster).

usage: criterion_table.py CRITERION_DIR GROUP_PREFIX BASELINE_FUNCTION [CALLS_JSON]
CALLS_JSON maps a group name to its number of calls, for calls/s."""
import json
import os
import sys


def main():
    root, prefix, baseline = sys.argv[1], sys.argv[2], sys.argv[3]
    calls = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else {}
    rows = {}
    for dirpath, _, files in os.walk(root):
        if "benchmark.json" not in files or not dirpath.endswith("/new"):
            continue
        meta = json.load(open(os.path.join(dirpath, "benchmark.json")))
        if not meta["group_id"].startswith(prefix):
            continue
        est = json.load(open(os.path.join(dirpath, "estimates.json")))
        nbytes = (meta.get("throughput") or {}).get("Bytes")
        rows.setdefault(meta["group_id"], {})[meta["function_id"]] = (
            est["median"]["point_estimate"],
            nbytes,
        )
    print(f"{'group':44} {'bytes':>7} {'toolgate µs':>12} {'MB/s':>8} {'calls/s':>10} {'baseline µs':>12} {'MB/s':>8} {'ratio':>6}")
    ratios = []
    for group in sorted(rows):
        fns = rows[group]
        if "toolgate" not in fns or baseline not in fns:
            continue
        (t_ns, nbytes), (b_ns, _) = fns["toolgate"], fns[baseline]
        nbytes = nbytes or 0
        name = group[len(prefix):].lstrip("/")
        n_calls = calls.get(name)
        calls_s = f"{n_calls / (t_ns / 1e9):10.0f}" if n_calls else f"{'':>10}"
        ratio = b_ns / t_ns
        ratios.append(ratio)
        print(f"{group:44} {nbytes:7d} {t_ns / 1e3:12.2f} {nbytes / t_ns * 1e3:8.1f} {calls_s} {b_ns / 1e3:12.2f} {nbytes / b_ns * 1e3:8.1f} {ratio:6.2f}")
    if ratios:
        ratios.sort()
        median = ratios[len(ratios) // 2]
        print(f"median ratio baseline/toolgate over {len(ratios)} groups: {median:.2f} (min {ratios[0]:.2f}, max {ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
