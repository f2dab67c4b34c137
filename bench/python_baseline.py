#!/usr/bin/env python3
"""The baseline users run today, on a workload of bench/workload.py: Python
and the `jsonschema` package (with its format checkers), one compiled
validator per tool of the policy, over payloads.jsonl line by line.

For each line: json.loads the response, then for each tool call json.loads
its `function.arguments` (empty arguments count as `{}`) and validate them
against the tool's schema. A call is invalid when its tool is not in the
policy, its arguments are not JSON, or they do not match the schema; a trace
passes when all its calls are valid. Duplicate keys in the arguments are not
detected: json.loads keeps the last value, as users' code does.

Validators are compiled once, before the clock starts; the time covers
reading the file and checking. Prints a JSON object: traces, passed, calls,
invalid_calls, seconds, traces_per_s, calls_per_s, processes, max_rss_mb.

usage: python_baseline.py WORKLOAD_DIR [--processes N] [--defects]

--processes N splits the file into N byte ranges, each checked by its own
process (multiprocessing); the default, 1, is a plain loop in this process.
--defects compares the verdicts with defects.jsonl afterwards (not timed)
and adds, per defect kind, how many defective payloads were caught."""
import argparse
import json
import multiprocessing
import os
import resource
import sys
import time

import jsonschema
import yaml
from jsonschema import FormatChecker
from jsonschema.validators import validator_for


def load_validators(policy_path):
    """One compiled validator per tool: {name: validator.is_valid}."""
    with open(policy_path, encoding="utf-8") as f:
        policy = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    formats = FormatChecker() if policy.get("validate_formats", True) else None
    validators = {}
    for tool in policy.get("tools", []):
        function = tool.get("function", tool)
        schema = function.get("parameters") or {"type": "object"}
        cls = validator_for(schema)
        cls.check_schema(schema)
        validators[function["name"]] = cls(schema, format_checker=formats).is_valid
    return validators


def check_lines(lines, validators, verdicts=None):
    """Checks an iterable of JSONL lines: (traces, passed, calls, invalid).
    Appends each trace's invalid call indexes to `verdicts` when given."""
    loads = json.loads
    traces = passed = calls = invalid = 0
    for line in lines:
        if not line.strip():
            continue
        body = loads(line)
        traces += 1
        bad = []
        index = 0
        for choice in body.get("choices") or ():
            for call in (choice.get("message") or {}).get("tool_calls") or ():
                function = call.get("function") or {}
                is_valid = validators.get(function.get("name"))
                ok = False
                if is_valid is not None:
                    text = function.get("arguments")
                    try:
                        args = loads(text) if text and text.strip() else {}
                    except ValueError:
                        args = None
                    ok = args is not None and is_valid(args)
                if not ok:
                    bad.append(index)
                index += 1
        calls += index
        invalid += len(bad)
        if not bad:
            passed += 1
        if verdicts is not None:
            verdicts.append(bad)
    return traces, passed, calls, invalid


def byte_ranges(path, n):
    """`n` ranges [start, end) of the file, each starting at a line."""
    size = os.path.getsize(path)
    bounds = [0]
    with open(path, "rb") as f:
        for k in range(1, n):
            f.seek(max(size * k // n, bounds[-1]))
            if f.tell() > 0:
                f.readline()
            bounds.append(max(f.tell(), bounds[-1]))
    bounds.append(size)
    return list(zip(bounds, bounds[1:]))


def range_lines(path, start, end):
    with open(path, "rb") as f:
        f.seek(start)
        while f.tell() < end:
            line = f.readline()
            if not line:
                break
            yield line


_VALIDATORS = None


def _init(policy_path):
    global _VALIDATORS
    _VALIDATORS = load_validators(policy_path)


def _ready(_):
    return _VALIDATORS is not None


def _check_range(job):
    path, start, end = job
    return check_lines(range_lines(path, start, end), _VALIDATORS)


def compare(defects_path, verdicts):
    """Per defect kind: payloads, how many the baseline flagged, and clean
    payloads it failed."""
    per_kind = {}
    with open(defects_path, encoding="utf-8") as f:
        for record, bad in zip(map(json.loads, f), verdicts):
            row = per_kind.setdefault(record["kind"], {"payloads": 0, "flagged": 0})
            row["payloads"] += 1
            if record["kind"] == "clean":
                row["flagged"] += bool(bad)
            else:
                row["flagged"] += record["call"] in bad
    return per_kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--defects", action="store_true")
    opts = ap.parse_args()
    policy = os.path.join(opts.workload, "policy.yaml")
    payloads = os.path.join(opts.workload, "payloads.jsonl")
    verdicts = [] if opts.defects else None

    if opts.processes <= 1:
        validators = load_validators(policy)
        start = time.perf_counter()
        with open(payloads, "rb") as f:
            totals = check_lines(f, validators, verdicts)
        seconds = time.perf_counter() - start
        children = 0
    else:
        if opts.defects:
            sys.exit("--defects needs --processes 1")
        ranges = byte_ranges(payloads, opts.processes)
        with multiprocessing.Pool(opts.processes, initializer=_init, initargs=(policy,)) as pool:
            # Every worker has compiled its validators before the clock starts.
            assert all(pool.map(_ready, range(opts.processes), chunksize=1))
            start = time.perf_counter()
            parts = pool.map(_check_range, [(payloads, a, b) for a, b in ranges], chunksize=1)
            seconds = time.perf_counter() - start
        totals = tuple(map(sum, zip(*parts)))
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    traces, passed, calls, invalid = totals
    result = {
        "baseline": f"python {sys.version.split()[0]} jsonschema {jsonschema_version()}",
        "processes": max(opts.processes, 1),
        "traces": traces,
        "passed": passed,
        "calls": calls,
        "invalid_calls": invalid,
        "seconds": round(seconds, 3),
        "traces_per_s": round(traces / seconds) if seconds else None,
        "calls_per_s": round(calls / seconds) if seconds else None,
        # Linux reports kilobytes; for several processes, the largest one.
        "max_rss_mb": round(max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, children) / 1024, 1),
    }
    if verdicts is not None:
        result["defects"] = compare(os.path.join(opts.workload, "defects.jsonl"), verdicts)
    print(json.dumps(result, indent=1))


def jsonschema_version():
    try:
        from importlib.metadata import version
        return version("jsonschema")
    except Exception:  # noqa: BLE001 - only a label
        return getattr(jsonschema, "__version__", "?")


if __name__ == "__main__":
    main()
