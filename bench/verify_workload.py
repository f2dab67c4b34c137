#!/usr/bin/env python3
"""Run the real `toolgate check` binary on every payload of a workload
(bench/workload.py) and compare each verdict with defects.jsonl: a clean
payload must pass (exit 0); a defective one must fail (exit 1) with exactly
one violation, of the expected code, on the expected call (and at the
expected JSON Pointer when the defect has one). Prints every disagreement.

usage: verify_workload.py TOOLGATE_BIN WORKLOAD_DIR [--every K]"""
import argparse
import json
import os
import subprocess
import sys


def disagreement(record, status, verdict):
    codes = [v["code"] for v in verdict.get("violations", [])]
    if record["code"] is None:
        return None if status == 0 and verdict.get("passed") is True else f"clean payload failed: {codes}"
    if status != 1 or verdict.get("passed") is not False:
        return f"defective payload passed (exit {status})"
    if codes != [record["code"]]:
        return f"expected [{record['code']}], got {codes}"
    found = verdict["violations"][0]
    if found.get("call") != record["call"]:
        return f"violation on call {found.get('call')}, expected call {record['call']}"
    if record.get("path") is not None and found.get("path") != record["path"]:
        return f"violation at {found.get('path')}, expected {record['path']}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("toolgate")
    ap.add_argument("workload")
    ap.add_argument("--every", type=int, default=1, help="check one payload in K")
    opts = ap.parse_args()
    policy = os.path.join(opts.workload, "policy.yaml")
    with open(os.path.join(opts.workload, "payloads.jsonl"), encoding="utf-8") as f:
        payloads = f.read().splitlines()
    with open(os.path.join(opts.workload, "defects.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    checked = wrong = 0
    for i in range(0, len(payloads), opts.every):
        run = subprocess.run([opts.toolgate, "check", "--compact", "--policy", policy, "-"],
                             input=payloads[i].encode(), capture_output=True, check=False)
        if run.returncode not in (0, 1):
            sys.exit(f"payload {i}: exit {run.returncode}: {run.stderr.decode()}")
        verdict = json.loads(run.stdout)
        checked += 1
        why = disagreement(records[i], run.returncode, verdict)
        if why:
            wrong += 1
            print(f"payload {i} ({records[i]['kind']}): {why}\n  payload: {payloads[i]}\n"
                  f"  verdict: {json.dumps(verdict.get('violations'))}")
    print(f"{checked} payloads checked with {opts.toolgate}: {wrong} wrong verdicts", file=sys.stderr)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
