"""Score a JSON-lines dataset of agent traces with Ray Data.

For datasets past one machine: every line is one trace (any payload toolgate
reads); the compiled policy is pickled to each Ray worker once, and each
worker checks its batches with toolgate's engine (the GIL released). The
summary counts are those of `toolgate eval` on the same file: traces,
passed, failed, calls, invalid calls, and per violation code the number of
violations and of traces holding one.

    python ray_eval.py --policy policy.yaml traces.jsonl [--address auto]

Lines that `toolgate eval` would read as a scenario (`{"output": ...,
"policy": {...}}`, with per-trace policy keys) need `toolgate eval`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

import numpy as np
import ray

import toolgate


def score_batch(batch: dict[str, np.ndarray], policy: toolgate.Policy) -> dict[str, np.ndarray]:
    """One batch of lines to per-trace counts."""
    lines = [line for line in batch["text"] if str(line).strip()]
    verdicts = policy.check_many([str(line) for line in lines])
    return {
        "passed": np.array([v.passed for v in verdicts], dtype=bool),
        "calls": np.array([len(v.calls) for v in verdicts], dtype=np.int64),
        "invalid_calls": np.array([sum(not c.valid for c in v.calls) for v in verdicts], dtype=np.int64),
        "codes": np.array(
            [json.dumps(Counter(x.code for x in v.violations)) for v in verdicts], dtype=object
        ),
    }


def summarize(dataset: str, policy: toolgate.Policy, concurrency: int = 2) -> dict[str, Any]:
    """The `toolgate eval` counts of `dataset`, computed on the Ray cluster."""
    # Workers receive score_batch by value: this file need not be
    # importable on them, only the toolgate wheel installed.
    if __name__ != "__main__":
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    scored = ray.data.read_text(dataset).map_batches(
        score_batch,
        fn_kwargs={"policy": policy},
        batch_format="numpy",
        concurrency=concurrency,
    )
    summary: dict[str, Any] = {"traces": 0, "passed": 0, "failed": 0, "calls": 0, "invalid_calls": 0}
    codes: dict[str, dict[str, int]] = {}
    for batch in scored.iter_batches(batch_format="numpy"):
        summary["traces"] += len(batch["passed"])
        summary["passed"] += int(batch["passed"].sum())
        summary["failed"] += int((~batch["passed"]).sum())
        summary["calls"] += int(batch["calls"].sum())
        summary["invalid_calls"] += int(batch["invalid_calls"].sum())
        for found in batch["codes"]:
            for code, count in json.loads(found).items():
                stats = codes.setdefault(code, {"count": 0, "traces": 0})
                stats["count"] += count
                stats["traces"] += 1
    summary["codes"] = dict(sorted(codes.items()))
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset")
    parser.add_argument("--policy", required=True)
    parser.add_argument("--address", default=None, help="a Ray cluster to join (default: start a local one)")
    parser.add_argument("--concurrency", type=int, default=2, help="Ray workers scoring batches")
    args = parser.parse_args()
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    try:
        print(json.dumps(summarize(args.dataset, toolgate.Policy.from_file(args.policy), args.concurrency), indent=2))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
