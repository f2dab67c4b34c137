"""The Ray Data example on a local Ray cluster with 2 workers: the same
summary counts as `toolgate eval` on the same file."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import ray

import toolgate
from conftest import EXAMPLES, REPO, toolgate_binary

sys.path.insert(0, str(REPO / "crates" / "toolgate-py" / "examples"))
import ray_eval  # noqa: E402


def traces(count: int) -> list[str]:
    """Agent traces against the combined example's policy: good and bad
    order lookups, emails and a forbidden refund, in several wire formats."""
    rng = random.Random(7)
    out = [json.dumps(json.loads(p.read_bytes())) for p in sorted(EXAMPLES.glob("*/payload*.json"))]
    while len(out) < count:
        calls: list[dict[str, Any]] = []
        if rng.random() < 0.9:
            order = f"ORD-{rng.randrange(10**5):05d}" if rng.random() < 0.8 else "ORD-1"
            calls.append({"name": "lookup_order", "input": {"order_id": order}})
        if rng.random() < 0.8:
            email = {"to": "c@example.com", "subject": "Your order", "body": "Shipped."}
            if rng.random() < 0.2:
                email["to"] = "not an email"
            if rng.random() < 0.2:
                email["cc"] = None
            calls.append({"name": "send_email", "input": email})
        if rng.random() < 0.1:
            calls.append({"name": "issue_refund", "input": {"order_id": "ORD-00001", "amount": 5}})
        content = [{"type": "tool_use", "id": f"toolu_{i}", **c} for i, c in enumerate(calls)]
        out.append(json.dumps({"role": "assistant", "content": content}))
    return out


def test_ray_data_gives_the_eval_counts(tmp_path: Path) -> None:
    dataset = tmp_path / "traces.jsonl"
    dataset.write_text("\n".join(traces(400)) + "\n")
    policy_file = EXAMPLES / "combined" / "policy.yaml"
    summary_file = tmp_path / "summary.json"
    subprocess.run(
        [toolgate_binary(), "eval", "--policy", str(policy_file), "--json", str(summary_file), str(dataset)],
        check=False,
        capture_output=True,
    )
    expected = json.loads(summary_file.read_text())
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        found = ray_eval.summarize(str(dataset), toolgate.Policy.from_file(policy_file), concurrency=2)
    finally:
        ray.shutdown()
    assert expected["traces"] == 400
    assert 0 < expected["passed"] < expected["traces"]
    for key in ("traces", "passed", "failed", "calls", "invalid_calls"):
        assert found[key] == expected[key], key
    assert found["codes"] == {
        code: {"count": stats["count"], "traces": stats["traces"]} for code, stats in expected["codes"].items()
    }
