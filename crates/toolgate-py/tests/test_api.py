"""The Python API against the CLI: the same verdict for the same input."""

from __future__ import annotations

import json
import math
import multiprocessing
import pickle
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import toolgate
from conftest import EXAMPLES, FIXTURES, cli_json, payload_files

EXAMPLE_DIRS = sorted(
    d for d in EXAMPLES.iterdir() if d.is_dir() and (d / "policy.yaml").exists() and (d / "payload.json").exists()
)


@pytest.mark.parametrize("path", payload_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_gives_the_cli_verdict(path: Path) -> None:
    policy = toolgate.Policy()
    expected = cli_json("check", path, "--compact", "--results")
    body = path.read_bytes()
    assert policy.check(body, results=True).to_dict() == expected
    assert policy.check(body.decode("utf-8"), results=True).to_dict() == expected
    if path.suffix == ".json":
        # The same document as Python values: what an SDK's model_dump gives.
        assert policy.check(json.loads(body), results=True).to_dict() == expected


@pytest.mark.parametrize("example", EXAMPLE_DIRS, ids=lambda d: d.name)
def test_every_example_policy_gives_the_cli_verdict(example: Path) -> None:
    policy = toolgate.Policy.from_file(example / "policy.yaml")
    for payload in sorted(example.glob("payload*.json")):
        expected = cli_json("check", "--policy", example / "policy.yaml", payload, "--compact")
        verdict = policy.check(payload.read_bytes())
        assert verdict.to_dict() == expected, payload
        assert verdict.passed == expected["passed"]
        assert verdict.label == expected["label"]
        assert verdict.score == expected["score"]
        assert verdict.reasoning == expected["reasoning"]
        assert verdict.failures == expected["failures"]
        assert verdict.actual_tools == expected["actual_tools"]
        assert verdict.expected_tools == expected["expected_tools"]
        assert [c.to_dict() for c in verdict.calls] == expected["calls"]
        assert [v.to_dict() for v in verdict.violations] == expected["violations"]
        for call, want in zip(verdict.calls, expected["calls"]):
            assert (call.index, call.id, call.name, call.arguments, call.format, call.valid) == (
                want["index"], want["id"], want["name"], want["arguments"], want["format"], want["valid"]
            )
        for violation, want in zip(verdict.violations, expected["violations"]):
            assert (violation.code, violation.call, violation.tool, violation.path, violation.message) == (
                want["code"], want["call"], want["tool"], want["path"], want["message"]
            )


def test_the_combined_example_fails_as_the_readme_says() -> None:
    policy = toolgate.Policy.from_file(EXAMPLES / "combined" / "policy.yaml")
    verdict = policy.check((EXAMPLES / "combined" / "payload-fail.json").read_bytes())
    assert not verdict.passed and not verdict
    assert "forbidden" in {v.code for v in verdict.violations}


ROLES_POLICY = {
    "tools": [
        {"name": "search_orders", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
        {"name": "refund", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}},
    ],
    "roles": {"support": {"allow": ["search_orders"], "forbid": ["refund"]}},
    "rules": [{"tool": "search_orders", "when": "args.q.startsWith(caller.prefix)"}],
}
ROLE_PAYLOAD = [
    {"name": "search_orders", "args": {"q": "acme-42"}, "id": "c1"},
    {"name": "refund", "args": {"order": "o-1"}, "id": "c2"},
]


@pytest.mark.parametrize("phase", ["response", "request", "trajectory"])
def test_caller_phase_and_flags_match_the_cli(tmp_path: Path, phase: str) -> None:
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps(ROLES_POLICY))
    caller = {"id": "bot", "roles": ["support"], "attributes": {"prefix": "acme-"}}
    caller_file = tmp_path / "caller.json"
    caller_file.write_text(json.dumps(caller))
    payload_file = tmp_path / "payload.json"
    payload_file.write_text(json.dumps(ROLE_PAYLOAD))
    policy = toolgate.Policy.from_dict(ROLES_POLICY)
    for flags, kwargs in [
        ([], {}),
        (["--caller", caller_file], {"caller": caller}),
        (["--caller", caller_file, "--results", "--require-calls"], {"caller": caller, "results": True, "require_calls": True}),
    ]:
        expected = cli_json("check", "--policy", policy_file, "--phase", phase, *flags, payload_file, "--compact")
        assert policy.check(ROLE_PAYLOAD, phase=phase, **kwargs).to_dict() == expected
    if phase == "request":
        # What an application sends back: calls of past turns are not judged again.
        assert policy.check(ROLE_PAYLOAD, phase=phase).passed
        return
    with_caller = policy.check(ROLE_PAYLOAD, phase=phase, caller=caller)
    assert [v.code for v in with_caller.violations] == ["unauthorized_role"]
    without = policy.check(ROLE_PAYLOAD, phase=phase)
    # No caller: every call is refused (fail closed).
    assert {(v.call, v.code) for v in without.violations if v.code == "unauthorized_role"} == {
        (0, "unauthorized_role"), (1, "unauthorized_role"),
    }


def test_check_calls_reads_langchain_tool_calls() -> None:
    policy = toolgate.Policy.from_dict(
        {"tools": [{"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]}
    )
    ok = policy.check_calls([{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}])
    assert ok.passed and ok.calls[0].arguments == {"q": "x"} and ok.calls[0].id == "c1"
    bad = policy.check_calls(
        [{"name": "search", "args": {}, "id": "c1"}, {"name": "drop_tables", "args": {}, "id": "c2"}],
        invalid_tool_calls=[{"name": "search", "args": "{not json", "id": "c3", "error": "bad"}],
    )
    assert [(v.call, v.code) for v in bad.violations] == [
        (0, "schema_violation"), (1, "not_allowed"), (2, "malformed_arguments"),
    ]
    assert [c.name for c in bad.calls] == ["search", "drop_tables", "search"]


def test_check_many_equals_single_checks() -> None:
    policy = toolgate.Policy.from_file(EXAMPLES / "combined" / "policy.yaml")
    payloads: list[Any] = [p.read_bytes() for p in payload_files()]
    payloads += [p.read_text() for p in sorted(EXAMPLES.glob("*/payload*.json"))]
    payloads += [json.loads(p.read_bytes()) for p in sorted(EXAMPLES.glob("*/payload*.json"))]
    many = policy.check_many(payloads, results=True)
    assert len(many) == len(payloads)
    assert [v.to_dict() for v in many] == [policy.check(p, results=True).to_dict() for p in payloads]


def test_policy_errors_list_every_problem_with_its_path() -> None:
    with pytest.raises(toolgate.PolicyError) as caught:
        toolgate.Policy.from_dict(
            {
                "tools": [{"name": "t", "parameters": {"type": "objekt"}}],
                "max_tool": 3,
                "forbiden": ["x"],
            }
        )
    assert isinstance(caught.value, ValueError)
    problems = caught.value.problems
    paths = {p["path"] for p in problems}
    assert {"max_tool", "forbiden"} <= paths
    assert any(p["path"].startswith("tools[0]") for p in problems)
    assert all(p["severity"] == "error" and p["message"] for p in problems)
    assert "max_tools" in " ".join(p["message"] for p in problems)
    with pytest.raises(toolgate.PolicyError) as missing:
        toolgate.Policy.from_file("/nonexistent/policy.yaml")
    assert "cannot read" in missing.value.problems[0]["message"]
    with pytest.raises(toolgate.PolicyError):
        toolgate.Policy.from_text("tools: [unclosed")


def test_bad_input_is_a_clear_error_or_a_failed_verdict() -> None:
    policy = toolgate.Policy()
    with pytest.raises(TypeError):
        policy.check(object())
    with pytest.raises(TypeError):
        policy.check({1: "not a string key"})
    with pytest.raises(ValueError):
        policy.check({"name": "t", "args": {"x": math.nan}})
    with pytest.raises(ValueError):
        policy.check({"name": "t", "args": {"x": 10**30}})
    deep: Any = {}
    for _ in range(2000):
        deep = {"a": deep}
    with pytest.raises(ValueError):
        policy.check(deep)
    with pytest.raises(ValueError):
        policy.check("[]", phase="sideways")
    with pytest.raises(ValueError):
        policy.check("[]", caller={"roles": ["no id"]})
    for garbage in [b"\xff\xfe", "not json", b"", "[{\"name\": 3}]"]:
        verdict = policy.check(garbage)
        assert verdict.to_dict() == policy.check(garbage).to_dict()
    assert policy.check(b"\xff\xfe").violations[0].code == "malformed_payload"


def test_tools_declared_once_are_reused_and_tied_to_their_policy() -> None:
    policy = toolgate.Policy()
    tools = policy.declare([{"name": "search", "parameters": {"type": "object", "required": ["q"]}}])
    assert policy.check_calls([{"name": "search", "args": {"q": 1}}], tools=tools).passed
    assert not policy.check_calls([{"name": "search", "args": {}}], tools=tools).passed
    assert policy.check_calls([{"name": "other", "args": {}}], tools=tools).violations[0].code == "not_allowed"
    with pytest.raises(ValueError, match="another policy"):
        toolgate.Policy().check("[]", tools=tools)
    broken = policy.declare([{"name": "t", "parameters": {"type": 7}}])
    assert broken.problems
    assert policy.check_calls([{"name": "t", "args": {}}], tools=broken).violations[0].code == "invalid_tool_schema"


def _check_in_child(policy: toolgate.Policy, payload: bytes) -> dict[str, Any]:
    return policy.check(payload).to_dict()


def test_a_pickled_policy_checks_the_same_in_spawned_processes() -> None:
    policy = toolgate.Policy.from_file(EXAMPLES / "combined" / "policy.yaml")
    payloads = [p.read_bytes() for p in sorted(EXAMPLES.glob("*/payload*.json"))]
    copy = pickle.loads(pickle.dumps(policy))
    assert [copy.check(p).to_dict() for p in payloads] == [policy.check(p).to_dict() for p in payloads]
    assert pickle.loads(pickle.dumps(toolgate.Policy())).check("[]").passed
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        remote = list(pool.map(_check_in_child, [policy] * len(payloads), payloads))
    assert remote == [policy.check(p).to_dict() for p in payloads]


def test_eight_threads_share_one_policy() -> None:
    policy = toolgate.Policy.from_file(EXAMPLES / "combined" / "policy.yaml")
    payloads = [p.read_bytes() for p in payload_files()] + [
        p.read_bytes() for p in sorted(EXAMPLES.glob("*/payload*.json"))
    ]
    expected = [policy.check(p).to_dict() for p in payloads]
    start = threading.Barrier(8)

    def worker(_: int) -> list[list[dict[str, Any]]]:
        start.wait()
        return [[policy.check(p).to_dict() for p in payloads] for _ in range(5)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        for rounds in pool.map(worker, range(8)):
            assert all(r == expected for r in rounds)


def test_policy_is_immutable() -> None:
    policy = toolgate.Policy()
    with pytest.raises(AttributeError):
        policy.extra = 1  # type: ignore[attr-defined]
    verdict = policy.check("[]")
    with pytest.raises(AttributeError):
        verdict.passed = False  # type: ignore[misc]


def test_a_policy_with_a_tools_file_unpickles_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tools.json").write_text(
        json.dumps([{"name": "search", "parameters": {"type": "object", "required": ["q"]}}])
    )
    (tmp_path / "policy.yaml").write_text("tools_file: tools.json\nforbidden: [drop]\n")
    monkeypatch.chdir(tmp_path)
    policy = toolgate.Policy.from_file("policy.yaml")
    blob = pickle.dumps(policy)
    monkeypatch.chdir("/")
    copy = pickle.loads(blob)
    assert copy.declared_tools == ["search"]
    verdict = copy.check_calls([{"name": "search", "args": {}}, {"name": "drop", "args": {}}])
    assert [v.code for v in verdict.violations][:2] == ["schema_violation", "forbidden"]
