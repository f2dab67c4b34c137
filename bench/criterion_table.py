#!/usr/bin/env python3
"""Print criterion medians as a table: per group, toolgate beside the other
functions of the same run, in µs and MB/s, with the ratio column / toolgate
(for a baseline, above 1: toolgate is faster). A group whose throughput
counts elements (one element: one payload) is shown per payload, with a
payloads/s column.

usage: criterion_table.py CRITERION_DIR GROUP_PREFIX BASELINE[,BASELINE...] [CALLS_JSON]
CALLS_JSON maps a group name (without the prefix) to its number of calls,
for calls/s."""
import json
import os
import sys


def medians(root, prefix):
    rows = {}
    for dirpath, _, files in os.walk(root):
        if "benchmark.json" not in files or not dirpath.endswith("/new"):
            continue
        meta = json.load(open(os.path.join(dirpath, "benchmark.json")))
        if not meta["group_id"].startswith(prefix):
            continue
        est = json.load(open(os.path.join(dirpath, "estimates.json")))
        throughput = meta.get("throughput") or {}
        both = throughput.get("ElementsAndBytes") or {}
        nbytes = throughput.get("Bytes") or both.get("bytes") or 0
        elements = throughput.get("Elements") or both.get("elements") or 1
        # Per element: a payload's time and bytes.
        rows.setdefault(meta["group_id"], {})[meta["function_id"]] = (
            est["median"]["point_estimate"] / elements,
            nbytes / elements,
            elements,
        )
    return rows


def main():
    root, prefix, baselines = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    calls = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else {}
    rows = medians(root, prefix)
    per_payload = any(fn[2] > 1 for fns in rows.values() for fn in fns.values())
    head = f"{'case':34} {'bytes':>7} {'calls':>5} {'toolgate µs':>11} {'MB/s':>7} {'calls/s':>10}"
    if per_payload:
        head += f" {'payloads/s':>10}"
    for b in baselines:
        head += f" | {b[:30]:>30} µs {'ratio':>6}"
    print(head)
    ratios = {b: [] for b in baselines}
    for group in sorted(rows):
        fns = rows[group]
        if "toolgate" not in fns:
            continue
        t_ns, nbytes, elements = fns["toolgate"]
        name = group[len(prefix):].lstrip("/") or group
        n_calls = calls.get(name, 0) / elements
        calls_s = f"{n_calls / (t_ns / 1e9):10.0f}" if n_calls else f"{'':>10}"
        calls_n = f"{n_calls:5.0f}" if elements == 1 else f"{n_calls:5.2f}"
        line = f"{name:34} {nbytes:7.0f} {calls_n} {t_ns / 1e3:11.2f} {nbytes / t_ns * 1e3:7.1f} {calls_s}"
        if per_payload:
            line += f" {1e9 / t_ns:10.0f}"
        for b in baselines:
            if b in fns:
                b_ns = fns[b][0]
                ratios[b].append(b_ns / t_ns)
                line += f" | {b_ns / 1e3:33.2f} {b_ns / t_ns:6.2f}"
            else:
                line += f" | {'-':>33} {'-':>6}"
        print(line)
    for b, rs in ratios.items():
        if rs:
            rs.sort()
            print(f"median ratio {b} / toolgate over {len(rs)} cases: {rs[len(rs) // 2]:.2f} (min {rs[0]:.2f}, max {rs[-1]:.2f})")


if __name__ == "__main__":
    main()
