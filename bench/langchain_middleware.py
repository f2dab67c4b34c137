#!/usr/bin/env python3
"""toolgate's LangChain middleware against seed 003's published one
(`langchain-tool-args-validation-middleware` on PyPI), in one run, on the
same answers and tools, for several workload shapes.

Shapes:
  pydantic  ANSWERS model answers (AIMessages with 1 to 4 tool calls) over
            an agent's 7 tools: 5 with Pydantic `args_schema` models (`@tool`
            and StructuredTool, with patterns, ranges, enums and optional
            fields; seed 003 validates them with pydantic-core) and 2 MCP
            tools with dict JSON Schemas. A third of the answers hold
            exactly one defective call: a missing required argument, a
            wrong type, a value out of range or not in an enum, an unknown
            tool (a name the agent does not have), a forbidden tool (one the
            agent has but the policy forbids: `delete_account`) and
            arguments the provider could not parse (`invalid_tool_calls`).
            Clean answers also carry nulls and empty lists that both
            middlewares strip.
  workload  the check benchmark's workload (bench/workload.py, shape
            `openai`): ANSWERS Chat Completions responses calling 12 tools
            with nested objects, enums, formats and patterns, about a fifth
            with one defect (defects.jsonl says which and how).
  formats   bench/workload.py's `formats` shape: arguments dense with email,
            date-time, date, uri, uuid and ipv4 strings.
  deep      bench/workload.py's `deep` shape: `$defs`/`$ref`, `oneOf`,
            `allOf` closed with `unevaluatedProperties: false`, recursion.
For the generated shapes each response becomes the AIMessage LangChain's
OpenAI integration makes of it (langchain_core's `parse_tool_call`: `args`
parsed with `json.loads`, arguments that do not parse become
`invalid_tool_calls`), and each tool the StructuredTool an MCP adapter
makes of it (`args_schema` the dict JSON Schema, which seed 003 validates
with `jsonschema`'s Draft7Validator, its default). toolgate's middleware
gets the policy bench/workload.py writes for the shape (policy.yaml: the
same tools, `validate_formats: true`). A defect LangChain's parsing erases
(`duplicate_key`: `json.loads` keeps the last value, itself valid) reaches
neither middleware; it is counted apart, not as defective.

Cost: each middleware's `wrap_model_call` on every answer, with a handler
that returns the answer (no retry: max_retries=0, on_failure="pass", so
each answer is checked once), in ROUNDS rounds that alternate the two; the
figure is the median over rounds of the mean µs of CPU time (this thread's)
per answer, which a loaded machine disturbs less than wall time; for the
clean answers, the defective ones and all of them. Both middlewares are
warmed first (tool lists compiled or resolved, caches full): no setup cost
is counted. Caught: with on_failure="raise", how many defective answers
each refuses, and how many clean ones it refuses by mistake.

usage: python bench/langchain_middleware.py [--answers N] [--rounds R]
           [--shapes pydantic,workload,formats,deep] [--seed S] [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal, NamedTuple

from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from langchain_core.tools import StructuredTool, tool
from langchain_tool_args_validation_middleware import ToolArgsValidationMiddleware
from pydantic import BaseModel, Field

from toolgate.langchain import ToolgateMiddleware

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import SHAPES  # noqa: E402 - bench/shapes, beside this script
from shapes.common import generate  # noqa: E402


@tool
def search_orders(query: str, limit: int = Field(10, ge=1, le=100), status: Literal["open", "closed"] | None = None) -> str:
    """Search orders."""
    return ""


@tool
def send_email(to: str = Field(pattern=r"^[^@\s]+@[^@\s]+$"), subject: str = Field(min_length=1), body: str = "", cc: list[str] = []) -> str:  # noqa: B006
    """Send an email."""
    return ""


class TicketArgs(BaseModel):
    title: str = Field(min_length=3)
    priority: Literal["low", "normal", "high"]
    tags: list[str] = []


class RefundArgs(BaseModel):
    order_id: str = Field(pattern=r"^ORD-\d{5}$")
    amount: float = Field(gt=0, le=500)
    reason: str | None = None


class DeleteArgs(BaseModel):
    account_id: str


def _noop(**_: Any) -> str:
    return ""


create_ticket = StructuredTool.from_function(_noop, name="create_ticket", description="Open a ticket.", args_schema=TicketArgs)
refund = StructuredTool.from_function(_noop, name="refund", description="Refund an order.", args_schema=RefundArgs)
delete_account = StructuredTool.from_function(_noop, name="delete_account", description="Delete an account.", args_schema=DeleteArgs)
read_file = StructuredTool(
    name="read_file",
    description="Read a file (MCP).",
    args_schema={
        "type": "object",
        "properties": {"path": {"type": "string", "pattern": "^/srv/"}, "max_bytes": {"type": "integer", "minimum": 1}},
        "required": ["path"],
    },
    func=_noop,
)
list_dir = StructuredTool(
    name="list_dir",
    description="List a directory (MCP).",
    args_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}, "recursive": {"type": "boolean"}},
        "required": ["path"],
    },
    func=_noop,
)
TOOLS = [search_orders, send_email, create_ticket, refund, delete_account, read_file, list_dir]
POLICY = {"forbidden": ["delete_account"]}


def good_call(rng: random.Random, name: str) -> dict[str, Any]:
    args: dict[str, Any] = {
        "search_orders": {"query": "late deliveries", "limit": rng.randrange(1, 50), "status": None},
        "send_email": {"to": "c@example.com", "subject": "Your order", "body": "Shipped.", "cc": []},
        "create_ticket": {"title": "Broken item", "priority": "normal", "tags": ["damage"]},
        "refund": {"order_id": f"ORD-{rng.randrange(10**5):05d}", "amount": 20.5, "reason": None},
        "read_file": {"path": "/srv/app/log.txt", "max_bytes": 4096},
        "list_dir": {"path": "/srv", "recursive": False},
    }[name]
    return {"name": name, "args": args, "id": f"call_{rng.randrange(10**9)}", "type": "tool_call"}


DEFECTS = ["missing_required", "wrong_type", "out_of_range", "unknown_tool", "forbidden_tool", "unparseable"]


def defective(rng: random.Random, kind: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(a tool call, an invalid tool call): one of them is the defect."""
    cid = f"call_{rng.randrange(10**9)}"
    if kind == "missing_required":
        return {"name": "refund", "args": {"amount": 3.0}, "id": cid, "type": "tool_call"}, None
    if kind == "wrong_type":
        return {"name": "search_orders", "args": {"query": "x", "limit": "many"}, "id": cid, "type": "tool_call"}, None
    if kind == "out_of_range":
        return {"name": "create_ticket", "args": {"title": "Broken", "priority": "urgent"}, "id": cid, "type": "tool_call"}, None
    if kind == "unknown_tool":
        return {"name": "drop_database", "args": {"name": "prod"}, "id": cid, "type": "tool_call"}, None
    if kind == "forbidden_tool":
        return {"name": "delete_account", "args": {"account_id": "acct-1"}, "id": cid, "type": "tool_call"}, None
    return None, {"name": "send_email", "args": '{"to": "c@example.com", "subject": ', "id": cid, "error": "Function send_email arguments are not valid JSON", "type": "invalid_tool_call"}


def pydantic_answers(count: int, seed: int = 3) -> list[tuple[AIMessage, str | None]]:
    rng = random.Random(seed)
    names = ["search_orders", "send_email", "create_ticket", "refund", "read_file", "list_dir"]
    out = []
    for i in range(count):
        calls = [good_call(rng, rng.choice(names)) for _ in range(rng.randrange(1, 5))]
        invalid: list[dict[str, Any]] = []
        kind = DEFECTS[i // 3 % len(DEFECTS)] if i % 3 == 0 else None
        if kind:
            bad, bad_invalid = defective(rng, kind)
            if bad:
                calls[rng.randrange(len(calls))] = bad
            if bad_invalid:
                invalid.append(bad_invalid)
        out.append((AIMessage(content="", tool_calls=calls, invalid_tool_calls=invalid), kind))
    return out


class Shape(NamedTuple):
    """A workload: the agent's tools, toolgate's policy, and the answers
    with the kind of their defect (None: clean)."""

    name: str
    tools: list[Any]
    policy: Any
    answers: list[tuple[AIMessage, str | None]]
    kinds: list[str]
    # Defects LangChain's parsing erases, by kind: counted apart.
    erased: dict[str, int]


def pydantic_shape(count: int) -> Shape:
    return Shape("pydantic", list(TOOLS), POLICY, pydantic_answers(count), DEFECTS, {})


# What LangChain's parsing of a Chat Completions message erases: a key sent
# twice becomes one key (`json.loads` keeps the last value, valid alone).
ERASED_BY_PARSING = {"duplicate_key"}


def ai_message(body: dict[str, Any]) -> AIMessage:
    """The AIMessage LangChain's OpenAI integration makes of a Chat
    Completions response: each tool call parsed by langchain_core's
    `parse_tool_call`, those that fail kept as `invalid_tool_calls`."""
    message = body["choices"][0]["message"]
    calls, invalid = [], []
    for raw in message.get("tool_calls") or []:
        try:
            parsed = parse_tool_call(raw, return_id=True)
            if parsed is None or not isinstance(parsed["args"], dict):
                raise OutputParserException(f"Function {raw['function']['name']} arguments are not a JSON object")
            calls.append(parsed)
        except OutputParserException as err:
            invalid.append(make_invalid_tool_call(raw, str(err)))
    return AIMessage(content=message.get("content") or "", tool_calls=calls, invalid_tool_calls=invalid)


def generated_shape(label: str, shape_name: str, count: int, seed: int, out_dir: Path) -> Shape:
    """bench/workload.py's `shape_name` workload, generated into `out_dir`
    and read back: its responses as AIMessages, its tools as MCP tools,
    its policy.yaml for toolgate, its defects.jsonl for the defects."""
    shape = SHAPES[shape_name]()
    if shape.wire != "openai":
        raise ValueError(f"shape {shape_name} is not Chat Completions responses")
    generate(shape, str(out_dir), count, seed)
    # As an MCP adapter makes them (langchain-mcp-adapters): the tool's
    # input schema as a dict `args_schema`.
    tools = [StructuredTool(name=name, description=description, args_schema=parameters, func=_noop)
             for name, description, parameters in shape.tools]
    answers: list[tuple[AIMessage, str | None]] = []
    erased: dict[str, int] = {}
    with open(out_dir / "payloads.jsonl", encoding="utf-8") as payloads, \
            open(out_dir / "defects.jsonl", encoding="utf-8") as defects:
        for line, record_line in zip(payloads, defects, strict=True):
            record = json.loads(record_line)
            kind = None if record["kind"] == "clean" else record["kind"]
            if kind in ERASED_BY_PARSING:
                erased[kind] = erased.get(kind, 0) + 1
                kind = None
            answers.append((ai_message(json.loads(line)), kind))
    kinds = [k for k in shape.kinds if k not in ERASED_BY_PARSING]
    return Shape(label, tools, out_dir / "policy.yaml", answers, kinds, erased)


def request(tools: list[Any]) -> ModelRequest[Any]:
    model = GenericFakeChatModel(messages=iter([]))
    return ModelRequest(model=model, messages=[HumanMessage("help")], tools=list(tools))


def time_round(middleware: Any, req: ModelRequest[Any], answers: list[AIMessage]) -> float:
    """Mean µs of CPU time per answer of `middleware.wrap_model_call`."""
    responses = [ModelResponse(result=[a]) for a in answers]
    wrap = middleware.wrap_model_call
    start = time.thread_time_ns()
    for response in responses:
        wrap(req, lambda _r, response=response: response)
    return (time.thread_time_ns() - start) / 1000 / len(responses)


def caught(middleware: Any, shape: Shape) -> dict[str, Any]:
    req = request(shape.tools)
    per_kind = {kind: [0, 0] for kind in shape.kinds}
    false_alarms = clean = 0
    for answer, kind in shape.answers:
        response = ModelResponse(result=[copy.deepcopy(answer)])
        try:
            middleware.wrap_model_call(req, lambda _r, response=response: response)
            refused = False
        except Exception:  # noqa: BLE001 - each package raises its own error
            refused = True
        if kind is None:
            clean += 1
            false_alarms += refused
        else:
            per_kind[kind][0] += 1
            per_kind[kind][1] += refused
    defective_total = sum(n for n, _ in per_kind.values())
    refused_total = sum(r for _, r in per_kind.values())
    return {
        "defective": defective_total,
        "let_through": defective_total - refused_total,
        "let_through_by_kind": {k: n - r for k, (n, r) in per_kind.items()},
        "clean": clean,
        "clean_refused": false_alarms,
    }


def measure(shape: Shape, rounds: int) -> dict[str, Any]:
    messages = [a for a, _ in shape.answers]
    ours = ToolgateMiddleware(max_retries=0, on_failure="pass", policy=shape.policy)
    seed = ToolArgsValidationMiddleware(max_retries=0, on_failure="pass")
    req = request(shape.tools)
    subsets = {
        "clean": [a for a, kind in shape.answers if kind is None],
        "defective": [a for a, kind in shape.answers if kind is not None],
        "all": messages,
    }
    result: dict[str, Any] = {
        "answers": len(messages),
        "calls": sum(len(a.tool_calls) + len(a.invalid_tool_calls) for a in messages),
        "tools": len(shape.tools),
    }
    for name, subset in subsets.items():
        # Warm up (schemas compiled, arguments stripped once) outside the clock.
        time_round(ours, req, copy.deepcopy(subset))
        time_round(seed, req, copy.deepcopy(subset))
        ours_us, seed_us = [], []
        for _ in range(rounds):
            ours_us.append(time_round(ours, req, copy.deepcopy(subset)))
            seed_us.append(time_round(seed, req, copy.deepcopy(subset)))
        result[name] = {
            "answers": len(subset),
            "toolgate_us_per_answer": round(statistics.median(ours_us), 2),
            "seed003_us_per_answer": round(statistics.median(seed_us), 2),
            "ratio_median": round(statistics.median(s / o for o, s in zip(ours_us, seed_us)), 2),
        }
    result["toolgate"] = caught(ToolgateMiddleware(max_retries=0, on_failure="raise", policy=shape.policy), shape)
    result["seed003"] = caught(ToolArgsValidationMiddleware(max_retries=0, on_failure="raise"), shape)
    if shape.erased:
        result["erased_by_langchain_parsing"] = shape.erased
    return result


def table(shapes: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| shape | answers | calls | toolgate µs | seed 003 µs | ratio | defective | let through: toolgate | seed 003 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in shapes.items():
        a = r["all"]
        lines.append(
            f"| {name} | {r['answers']} | {r['calls']} | {a['toolgate_us_per_answer']} | "
            f"{a['seed003_us_per_answer']} | {a['ratio_median']} | {r['toolgate']['defective']} | "
            f"{r['toolgate']['let_through']} | {r['seed003']['let_through']} |"
        )
    return "\n".join(lines)


SHAPE_NAMES = {"pydantic": None, "workload": "openai", "formats": "formats", "deep": "deep"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--shapes", default=",".join(SHAPE_NAMES))
    parser.add_argument("--seed", type=int, default=20260101, help="bench/workload.py's seed")
    parser.add_argument("--json")
    args = parser.parse_args()
    names = [n for n in args.shapes.split(",") if n]
    unknown = [n for n in names if n not in SHAPE_NAMES]
    if unknown:
        parser.error(f"unknown shapes {unknown}; the shapes are {list(SHAPE_NAMES)}")
    # Both middlewares log a warning per refused answer: records are made
    # (that cost is theirs), but not written to the terminal.
    logging.getLogger().addHandler(logging.NullHandler())
    result: dict[str, Any] = {"rounds": args.rounds, "seed": args.seed, "shapes": {}}
    with tempfile.TemporaryDirectory(prefix="langchain-middleware-") as tmp:
        for name in names:
            if SHAPE_NAMES[name] is None:
                shape = pydantic_shape(args.answers)
            else:
                shape = generated_shape(name, SHAPE_NAMES[name], args.answers, args.seed, Path(tmp) / name)
            result["shapes"][name] = measure(shape, args.rounds)
            print(f"{name}: done", file=sys.stderr)
    result["load_average"] = [round(x, 1) for x in os.getloadavg()]
    text = json.dumps(result, indent=2)
    print(text)
    print(table(result["shapes"]))
    print(f"load average {result['load_average']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
