"""LangChain's calls read straight from their dicts give the verdict their
JSON text gives: `check_calls` (which reads them directly when it can) and
the middleware's gate against `check` of the message they make (which
writes them as JSON text and reads it), on the calls of every fixture and
example and on generated answers, clean and defective."""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

import toolgate
from conftest import EXAMPLES, FIXTURES, payload_files

TOOLS = [
    {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {
                "q": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "status": {"enum": ["open", "closed"]},
                "when": {"type": "string", "format": "date-time"},
            },
            "required": ["q"],
            "additionalProperties": False,
        },
    },
    {
        "name": "send",
        "parameters": {
            "type": "object",
            "properties": {
                "to": {"type": "string", "format": "email"},
                "cc": {"type": "array", "items": {"type": "string"}},
                "meta": {
                    "type": "object",
                    "properties": {"score": {"type": "number", "exclusiveMinimum": 0}, "tags": {"type": "array"}},
                },
            },
            "required": ["to"],
        },
    },
    {"name": "delete_account", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}},
    {"name": "anything", "parameters": {"type": "object"}},
]

POLICIES: dict[str, dict[str, Any]] = {
    "default": {},
    "schemas": {"forbidden": ["delete_account"], "validate_formats": True},
    "normalize": {
        "forbidden": ["delete_account"],
        "normalize": {"strip_empty_values": True, "strip_placeholder_strings": True},
    },
    "allowlist": {"allowed_functions": ["search", "send"], "normalize": {"strip_empty_values": True}},
    "limits": {"input_limits": {"max_depth": 9, "max_argument_bytes": 300, "max_calls": 4}},
    "authority": {
        "roles": {"support": {"allow": ["search", "send", "anything"], "forbid": ["delete_account"]}},
        "rules": [{"tool": "send", "when": "!args.to.endsWith('@evil.test')", "message": "no mail to evil"}],
        "limits": [{"tool": "search", "max": 2, "per": "1m"}],
    },
}


def policy(name: str) -> toolgate.Policy:
    return toolgate.Policy.from_dict(POLICIES[name])


def outcome(check: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """A check's verdict as JSON and the cleaned arguments, or the error
    it raised."""
    try:
        verdict = check(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as err:  # noqa: BLE001 - the two readings must raise alike
        return "error", (type(err).__name__, str(err))
    return "verdict", (verdict.to_dict(), verdict._cleaned_arguments())


def as_json(p: toolgate.Policy, calls: list[Any], invalid: list[Any] | None, **kwargs: Any) -> tuple[str, Any]:
    """The outcome of the message LangChain's calls make, read from its
    JSON text, with the arguments `normalize` cleaned (those that lost a
    value: it only drops values)."""
    message: dict[str, Any] = {"tool_calls": calls}
    if invalid is not None:
        message["invalid_tool_calls"] = invalid
    kind, found = outcome(p.check, message, **kwargs)
    if kind == "error":
        return kind, found
    verdict, _ = found
    checked = verdict["calls"]
    cleaned = []
    if len(checked) == len(calls) + len(invalid or []):
        for index, call in enumerate(calls):
            arguments = checked[index]["arguments"]
            if isinstance(arguments, dict) and isinstance(call, dict) and lost(call.get("args"), arguments):
                cleaned.append((index, arguments))
    return kind, (verdict, cleaned)


def lost(sent: Any, clean: Any) -> bool:
    """Whether `clean` lost a value of `sent`: a dict or list whose length
    differs, at any depth."""
    if isinstance(clean, dict):
        return isinstance(sent, dict) and (
            len(sent) != len(clean) or any(k not in sent or lost(sent[k], v) for k, v in clean.items())
        )
    if isinstance(clean, list):
        return isinstance(sent, list) and (len(sent) != len(clean) or any(lost(s, c) for s, c in zip(sent, clean)))
    return False


def assert_same(p: toolgate.Policy, calls: list[Any], invalid: list[Any] | None = None, **kwargs: Any) -> None:
    """`check_calls`, the gate and `_direct_agrees` against the JSON text."""
    expected = as_json(p, calls, invalid, **kwargs)
    assert outcome(p.check_calls, calls, invalid_tool_calls=invalid, **kwargs) == expected
    try:
        agrees = p._direct_agrees(calls, invalid)
    except Exception:  # noqa: BLE001 - a value no JSON holds: the JSON text raises too
        assert expected[0] == "error"
        agrees = None
    assert agrees is not False, calls

    # The middleware's gate: the response phase, the cleaned arguments
    # written into the calls.
    response = {**kwargs, "phase": "response"}
    expected = as_json(p, calls, invalid, **response)
    tools = response.get("tools")
    gate = p._gate(caller=response.get("caller"), tools=p.declare(tools) if tools is not None else None)
    mutable = copy.deepcopy(calls)
    try:
        verdict = gate.check(mutable, copy.deepcopy(invalid), True)
    except Exception as err:  # noqa: BLE001
        assert expected == ("error", (type(err).__name__, str(err)))
        return
    assert verdict is not None
    assert expected == ("verdict", (verdict.to_dict(), verdict._cleaned_arguments()))
    cleaned = copy.deepcopy(calls)
    for index, arguments in verdict._cleaned_arguments():
        cleaned[index]["args"] = arguments
    assert typed(mutable) == typed(cleaned)
    lean = copy.deepcopy(calls)
    assert (gate.check(lean, copy.deepcopy(invalid)) is None) == verdict.passed
    assert typed(lean) == typed(cleaned)


def typed(value: Any) -> Any:
    """`value` with the type of every leaf and container: `True` is not
    `1`, nor `1.0`."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple, set)):
        return (type(value).__name__, [typed(v) for v in value])
    return (type(value).__name__, repr(value))


def as_langchain(verdict: toolgate.Verdict) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A verdict's calls as LangChain holds them: readable ones in
    `tool_calls`, the others in `invalid_tool_calls`."""
    calls, invalid = [], []
    for call in verdict.calls:
        if call.arguments is None or not isinstance(call.arguments, dict):
            invalid.append({"name": call.name, "args": "{", "id": call.id, "error": "not JSON", "type": "invalid_tool_call"})
        else:
            calls.append({"name": call.name, "args": call.arguments, "id": call.id, "type": "tool_call"})
    return calls, invalid


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_calls_of_every_fixture_and_example_read_alike(name: str) -> None:
    p = policy(name)
    bodies = [path.read_bytes() for path in payload_files()]
    bodies += [path.read_bytes() for path in sorted(EXAMPLES.rglob("payload*.json"))]
    direct = 0
    for body in bodies:
        calls, invalid = as_langchain(toolgate.Policy().check(body, results=True))
        if not calls and not invalid:
            continue
        assert_same(p, calls, invalid or None)
        assert_same(p, calls, invalid or None, tools=TOOLS, phase="response")
        direct += p._direct_agrees(calls, invalid or None) is True
    # Most fixtures' calls are of the plain shape the direct reading takes.
    assert direct > 50


def test_the_example_policies_judge_their_calls_alike() -> None:
    for path in sorted(EXAMPLES.glob("*/policy.yaml")):
        p = toolgate.Policy.from_file(path)
        for payload in sorted(path.parent.glob("payload*.json")):
            calls, invalid = as_langchain(toolgate.Policy().check(payload.read_bytes()))
            if calls or invalid:
                assert_same(p, calls, invalid or None)
                assert_same(p, calls, invalid or None, phase="response")


def value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(12 if depth < 4 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, 1, -1, 7, 2**31, 2**63 - 1, -(2**63), 2**64 - 1, 10**15])
    if kind == 3:
        return rng.choice([0.1, -0.0, 2.5, 1e20, 1e300, 5e-324, 1 / 3, 9007199254740993.0, 1e16, 123456789.125])
    if kind in (4, 5, 6):
        return rng.choice(["", "x", "é", "日本語", "😀", "a\"b\\c", "line\nbreak\t", "\x00\x1f", "null", " None ", "''", "c@example.com", "2026-01-01T00:00:00Z"])
    if kind == 7:
        return rng.choice([[], {}, "open", "closed"])
    if kind in (8, 9):
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["q", "limit", "status", "to", "cc", "meta", "score", "tags", "camelCase", "ключ", "a b"]
    return {rng.choice(keys): value(rng, depth + 1) for _ in range(rng.randrange(4))}


def answer(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = ["search", "send", "delete_account", "anything", "unknown_tool", "Search", "sеarch"]
    calls = []
    for i in range(rng.randrange(1, 5)):
        args = value(rng, 1)
        if not isinstance(args, dict):
            args = {"q": args}
        call = {"name": rng.choice(names), "args": args, "id": rng.choice([f"call_{i}", "call_0", None]), "type": "tool_call"}
        if rng.random() < 0.1:
            del call["type"]
        calls.append(call)
    invalid = []
    if rng.random() < 0.15:
        invalid.append({"name": "send", "args": '{"to": ', "id": "bad", "error": "not JSON", "type": "invalid_tool_call"})
    return calls, invalid


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_generated_answers_read_alike(name: str) -> None:
    p = policy(name)
    rng = random.Random(f"direct-{name}")
    caller = {"id": "u1", "roles": ["support"], "attributes": {}}
    taken = 0
    for _ in range(400):
        calls, invalid = answer(rng)
        assert_same(p, calls, invalid or None)
        assert_same(p, calls, invalid or None, tools=TOOLS, phase="response", caller=caller)
        taken += p._direct_agrees(calls, invalid or None) is True
    assert taken > 100


DEFECTS: dict[str, list[dict[str, Any]]] = {
    "missing required": [{"name": "search", "args": {"limit": 3}, "id": "c1", "type": "tool_call"}],
    "wrong type": [{"name": "search", "args": {"q": "x", "limit": "many"}, "id": "c1", "type": "tool_call"}],
    "out of range": [{"name": "search", "args": {"q": "x", "limit": 1000}, "id": "c1", "type": "tool_call"}],
    "not in enum": [{"name": "search", "args": {"q": "x", "status": "urgent"}, "id": "c1", "type": "tool_call"}],
    "bad format": [{"name": "send", "args": {"to": "nobody"}, "id": "c1", "type": "tool_call"}],
    "unknown tool": [{"name": "drop_database", "args": {"name": "prod"}, "id": "c1", "type": "tool_call"}],
    "forbidden tool": [{"name": "delete_account", "args": {"id": "a1"}, "id": "c1", "type": "tool_call"}],
    "look-alike": [{"name": "sеarch", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}],
    "nested": [{"name": "send", "args": {"to": "a@b.test", "meta": {"score": -1, "tags": [[], {"x": None}]}}, "id": "c1", "type": "tool_call"}],
    "duplicate id": [
        {"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"},
        {"name": "search", "args": {"q": "y"}, "id": "c1", "type": "tool_call"},
    ],
    "denied by a rule": [{"name": "send", "args": {"to": "x@evil.test"}, "id": "c1", "type": "tool_call"}],
    "past a rate limit": [{"name": "search", "args": {"q": str(i)}, "id": f"c{i}", "type": "tool_call"} for i in range(3)],
    "too many calls": [{"name": "search", "args": {"q": str(i)}, "id": f"c{i}", "type": "tool_call"} for i in range(6)],
    "unicode": [{"name": "send", "args": {"to": "ü@例え.jp", "cc": ["😀", "\u2028"]}, "id": "c1", "type": "tool_call"}],
    "case twins": [{"name": "search", "args": {"q": "x", "Q": "y"}, "id": "c1", "type": "tool_call"}],
    "NUL twin": [{"name": "search", "args": {"q": "x", "q\x00": "y"}, "id": "c1", "type": "tool_call"}],
    "long s twin": [{"name": "search", "args": {"s": "x", "ſ": "y"}, "id": "c1", "type": "tool_call"}],
    "big int": [{"name": "search", "args": {"q": "x", "limit": 2**64}, "id": "c1", "type": "tool_call"}],
    "largest ints": [{"name": "anything", "args": {"a": 2**64 - 1, "b": -(2**63)}, "id": "c1", "type": "tool_call"}],
    "1e400": [{"name": "search", "args": {"q": "x", "limit": float("1e400")}, "id": "c1", "type": "tool_call"}],
    "NaN": [{"name": "search", "args": {"q": "x", "limit": math.nan}, "id": "c1", "type": "tool_call"}],
    "floats": [{"name": "anything", "args": {"a": 1e308, "b": -0.0, "c": 2.0**63, "d": 0.1 + 0.2}, "id": "c1", "type": "tool_call"}],
    "non-str key": [{"name": "search", "args": {1: "x"}, "id": "c1", "type": "tool_call"}],
    "tuple": [{"name": "anything", "args": {"a": (1, 2)}, "id": "c1", "type": "tool_call"}],
    "set": [{"name": "anything", "args": {"a": {1, 2}}, "id": "c1", "type": "tool_call"}],
    "args a string": [{"name": "search", "args": '{"q": "x"}', "id": "c1", "type": "tool_call"}],
    "args None": [{"name": "search", "args": None, "id": "c1", "type": "tool_call"}],
    "no args": [{"name": "search", "id": "c1", "type": "tool_call"}],
    "empty name": [{"name": "", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}],
    "name not a string": [{"name": 3, "args": {"q": "x"}, "id": "c1", "type": "tool_call"}],
    "empty id": [{"name": "search", "args": {"q": "x"}, "id": "", "type": "tool_call"}],
    "another type": [{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "function"}],
    "another key": [{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call", "extra": 1}],
    "deep": [{"name": "anything", "args": {"a": json.loads("[" * 20 + "]" * 20)}, "id": "c1", "type": "tool_call"}],
    "deeper than any bound": [{"name": "anything", "args": {"a": json.loads("[" * 300 + "]" * 300)}, "id": "c1", "type": "tool_call"}],
    "large": [{"name": "search", "args": {"q": "x" * 5000}, "id": "c1", "type": "tool_call"}],
    "escapes past the size bound": [{"name": "search", "args": {"q": "\x01" * 60}, "id": "c1", "type": "tool_call"}],
    "not a dict": ["search"],
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_defective_answers_read_alike(defect: str, name: str) -> None:
    p = policy(name)
    calls = DEFECTS[defect]
    good = {"name": "search", "args": {"q": "fine", "limit": None, "status": []}, "id": "c9", "type": "tool_call"}
    unparseable = [{"name": "send", "args": '{"to":', "id": "c8", "error": "bad JSON", "type": "invalid_tool_call"}]
    caller = {"id": "u1", "roles": ["support"], "attributes": {}}
    for answer_calls in (calls, [good, *calls], [*calls, good]):
        for invalid in (None, unparseable):
            assert_same(p, answer_calls, invalid)
            assert_same(p, answer_calls, invalid, tools=TOOLS, phase="response", caller=caller)


@pytest.mark.parametrize("depth", range(1, 12))
def test_depth_near_the_bound_reads_alike(depth: int) -> None:
    # max_depth 9: the direct reading takes arguments up to 4 levels and
    # declines deeper ones, which the JSON text reads.
    p = policy("limits")
    nested: Any = "x"
    for _ in range(depth - 1):
        nested = {"a": nested}
    calls = [{"name": "anything", "args": {"a": nested} if depth > 1 else {"a": "x"}, "id": "c1", "type": "tool_call"}]
    assert_same(p, calls)
    assert p._direct_agrees(calls) is (True if depth <= 4 else None)


def test_plain_calls_are_read_directly() -> None:
    p = policy("schemas")
    calls = [
        {"name": "search", "args": {"q": "x", "limit": 3}, "id": "c1", "type": "tool_call"},
        {"name": "send", "args": {"to": "a@b.test", "meta": {"score": 0.5, "tags": ["ü", 1, None, True]}}, "id": None},
    ]
    invalid = [{"name": "send", "args": '{"to":', "id": "c3", "error": None, "type": "invalid_tool_call"}]
    assert p._direct_agrees(calls) is True
    assert p._direct_agrees(calls, invalid) is True
    for declined in ("tuple", "big int", "case twins", "another key", "empty name", "1e400"):
        assert p._direct_agrees(DEFECTS[declined]) is None, declined


def test_the_gate_gives_no_verdict_when_every_call_passes() -> None:
    p = policy("normalize")
    gate = p._gate(tools=p.declare(TOOLS))
    calls = [{"name": "search", "args": {"q": "x", "limit": None, "status": [], "when": {}}, "id": "c1", "type": "tool_call"}]
    assert gate.check(calls) is None
    assert calls[0]["args"] == {"q": "x"}
    bad = [{"name": "search", "args": {"limit": None}, "id": "c1", "type": "tool_call"}]
    verdict = gate.check(bad)
    assert verdict is not None and not verdict.passed
    assert bad[0]["args"] == {}
    assert [v.code for v in verdict.violations] == ["schema_violation"]


def test_cleaned_arguments_written_back_are_the_engines() -> None:
    """What the gate writes back is what the engine cleaned, at any depth,
    with `sent`'s own objects wherever nothing was dropped; a value the
    direct reading does not take (a tuple: the JSON text's array) leaves it
    to the engine's object."""
    p = policy("normalize")
    gate = p._gate(tools=p.declare(TOOLS))
    kept = {"deep": ["x", {"y": 1}]}
    args: dict[str, Any] = {
        "q": "x",
        "meta": {"a": None, "b": [None, {}, "None", [], 2.5], "kept": kept},
        "kept": kept,
        "none": "undefined",
    }
    calls = [{"name": "anything", "args": args, "id": "c1", "type": "tool_call"}]
    verdict = gate.check(calls, None, True)
    assert verdict is not None
    assert verdict._cleaned_arguments() == [(0, calls[0]["args"])]
    assert calls[0]["args"] == {"q": "x", "meta": {"b": [2.5], "kept": kept}, "kept": kept}
    assert calls[0]["args"]["kept"] is kept and calls[0]["args"]["meta"]["kept"] is kept
    # A tuple holding a null: the engine reads an array and drops the null.
    calls = [{"name": "anything", "args": {"q": "x", "t": (None, "a"), "n": None}, "id": "c1", "type": "tool_call"}]
    assert p._direct_agrees(calls) is None
    verdict = gate.check(calls, None, True)
    assert verdict is not None
    assert calls[0]["args"] == {"q": "x", "t": ["a"]}
    assert_same(p, [{"name": "anything", "args": args, "id": "c1", "type": "tool_call"}])
