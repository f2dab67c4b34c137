#!/usr/bin/env python3
"""toolgate's LangChain middleware against seed 003's published one
(`langchain-tool-args-validation-middleware` on PyPI), in one run, on the
same generated answers and tools.

Workload: ANSWERS model answers (AIMessages with 1 to 4 tool calls) over an
agent's 7 tools: 5 with Pydantic `args_schema` models (`@tool` and
StructuredTool, with patterns, ranges, enums and optional fields) and 2 MCP
tools with dict JSON Schemas. A third of the answers hold exactly one
defective call, of one of these kinds: a missing required argument, a
wrong type, a value out of range or not in an enum, an unknown tool (a name
the agent does not have), a forbidden tool (one the agent has but the
policy forbids: `delete_account`) and arguments the provider could not
parse (`invalid_tool_calls`). Clean answers also carry nulls and empty
lists that both middlewares strip.

Cost: each middleware's `wrap_model_call` on every answer, with a handler
that returns the answer (no retry: max_retries=0, on_failure="pass", so
each answer is checked once), in ROUNDS rounds that alternate the two; the
figure is the median over rounds of the mean µs of CPU time (this thread's)
per answer, which a loaded machine disturbs less than wall time; for the
clean answers, the defective ones and all of them. Caught: with
on_failure="raise", how many defective answers each refuses, and how many
clean ones it refuses by mistake.

usage: python bench/langchain_middleware.py [--answers N] [--rounds R] [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import random
import statistics
import time
from typing import Any, Literal

from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool, tool
from langchain_tool_args_validation_middleware import ToolArgsValidationMiddleware
from pydantic import BaseModel, Field

import toolgate
from toolgate.langchain import ToolgateMiddleware


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


def workload(count: int, seed: int = 3) -> list[tuple[AIMessage, str | None]]:
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


def request() -> ModelRequest[Any]:
    model = GenericFakeChatModel(messages=iter([]))
    return ModelRequest(model=model, messages=[HumanMessage("help")], tools=list(TOOLS))


def time_round(middleware: Any, answers: list[AIMessage]) -> float:
    """Mean µs of CPU time per answer of `middleware.wrap_model_call`."""
    req = request()
    responses = [ModelResponse(result=[a]) for a in answers]
    wrap = middleware.wrap_model_call
    start = time.thread_time_ns()
    for response in responses:
        wrap(req, lambda _r, response=response: response)
    return (time.thread_time_ns() - start) / 1000 / len(responses)


def caught(middleware: Any, answers: list[tuple[AIMessage, str | None]]) -> dict[str, Any]:
    req = request()
    per_kind = {kind: [0, 0] for kind in DEFECTS}
    false_alarms = clean = 0
    for answer, kind in answers:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args()
    # Both middlewares log a warning per refused answer: records are made
    # (that cost is theirs), but not written to the terminal.
    logging.getLogger().addHandler(logging.NullHandler())
    answers = workload(args.answers)
    messages = [a for a, _ in answers]

    ours_fast = ToolgateMiddleware(max_retries=0, on_failure="pass", policy=POLICY)
    seed_fast = ToolArgsValidationMiddleware(max_retries=0, on_failure="pass")
    subsets = {
        "clean": [a for a, kind in answers if kind is None],
        "defective": [a for a, kind in answers if kind is not None],
        "all": messages,
    }
    result: dict[str, Any] = {
        "answers": len(answers),
        "calls": sum(len(a.tool_calls) + len(a.invalid_tool_calls) for a in messages),
        "rounds": args.rounds,
    }
    for name, subset in subsets.items():
        # Warm up (schemas compiled, arguments stripped once) outside the clock.
        time_round(ours_fast, copy.deepcopy(subset))
        time_round(seed_fast, copy.deepcopy(subset))
        ours_us, seed_us = [], []
        for _ in range(args.rounds):
            ours_us.append(time_round(ours_fast, copy.deepcopy(subset)))
            seed_us.append(time_round(seed_fast, copy.deepcopy(subset)))
        result[name] = {
            "answers": len(subset),
            "toolgate_us_per_answer": round(statistics.median(ours_us), 2),
            "seed003_us_per_answer": round(statistics.median(seed_us), 2),
            "ratio_median": round(statistics.median(s / o for o, s in zip(ours_us, seed_us)), 2),
        }
    result["toolgate"] = caught(ToolgateMiddleware(max_retries=0, on_failure="raise", policy=POLICY), answers)
    result["seed003"] = caught(ToolArgsValidationMiddleware(max_retries=0, on_failure="raise"), answers)
    result["load_average"] = [round(x, 1) for x in os.getloadavg()]
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
