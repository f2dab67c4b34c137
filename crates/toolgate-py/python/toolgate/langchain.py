"""``ToolgateMiddleware``: check every answer of a LangChain 1.x agent before
its tools run.

The middleware wraps the model call (``wrap_model_call`` /
``awrap_model_call``). When the model answers with tool calls, all of them
are checked as one batch by toolgate's engine: the agent's tool schemas
(Pydantic ``args_schema`` models as their JSON Schema, MCP dict schemas as
they are) and, with ``policy``, every check of a toolgate policy (allowlist,
forbidden tools, schemas, roles, rules, limits). If any call fails, the
model sees its failed answer, an error ``ToolMessage`` for each bad call
and a "not executed" notice for each good sibling, and is asked again, up
to ``max_retries`` times; failed turns accumulate. The retries happen
inside the model node, so only an answer that passed (or the ``on_failure``
outcome) enters the agent's state.

Parameters keep the meaning of ``langchain-tool-args-validation-middleware``
(``tools``, ``max_retries``, ``strip_empty_values``,
``strip_placeholder_strings``, ``placeholder_strings``, ``extra_validators``,
``on_failure``), so it can replace it; ``on_failure`` defaults to
``"block"`` (fail closed) instead of ``"pass"``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import (
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain.agents.structured_output import AutoStrategy, ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, ToolMessage

from . import Policy, ToolCallBlocked, Verdict
from ._toolgate import _Gate, _same_items

__all__ = [
    "DEFAULT_PLACEHOLDER_STRINGS",
    "ExtraValidator",
    "OnFailure",
    "ToolgateMiddleware",
    "tool_declaration",
]

logger = logging.getLogger(__name__)

ExtraValidator = Callable[[str, "dict[str, Any]"], "list[str]"]
"""A domain check of one call: ``(tool name, arguments) -> problems``."""

OnFailure = Literal["block", "raise", "pass"]

DEFAULT_PLACEHOLDER_STRINGS: frozenset[str] = frozenset({"none", "null", "undefined", '""', "''"})
"""The strings ``strip_placeholder_strings`` drops (trimmed, any case)."""

NOT_EXECUTED = (
    "This tool call was not executed because another tool call in the same "
    "batch failed argument validation. Re-issue all tool calls together with "
    "corrected arguments."
)
"""The notice a good call receives when a sibling call failed."""

_HINT = (
    "Fix the arguments and issue all the tool calls of this turn again. If a "
    "field is optional and not needed, omit it rather than setting it to null "
    "or an empty value."
)

# Distinct agent tool lists whose compiled form is kept.
_CACHE_SIZE = 64


def tool_declaration(tool: Any) -> dict[str, Any]:
    """The toolgate declaration of a LangChain tool.

    A tool whose ``args_schema`` is a Pydantic model is declared with that
    model's JSON Schema (of the arguments the model fills, injected ones
    left out); a dict ``args_schema`` (MCP tools) is used as it is; a
    provider tool given as a dict (``{"type": "web_search"}``, an OpenAI
    ``tools`` entry) is passed through.
    """
    if isinstance(tool, Mapping):
        return dict(tool)
    schema = getattr(tool, "args_schema", None)
    if isinstance(schema, Mapping):
        parameters: Any = dict(schema)
    elif schema is None:
        parameters = {"type": "object", "properties": {}}
    else:
        call_schema = getattr(tool, "tool_call_schema", schema)
        parameters = (
            dict(call_schema)
            if isinstance(call_schema, Mapping)
            else call_schema.model_json_schema()
        )
    return {"name": tool.name, "parameters": parameters}


def _structured_tools(response_format: Any) -> list[dict[str, Any]]:
    """The tools an agent's structured output is called as (a
    ``ToolStrategy``'s, or the one a raw schema or ``AutoStrategy`` may
    become); a provider's native structured output has none."""
    if response_format is None or isinstance(response_format, ProviderStrategy):
        return []
    if isinstance(response_format, ToolStrategy):
        specs = response_format.schema_specs
    else:
        schema = response_format.schema if isinstance(response_format, AutoStrategy) else response_format
        specs = ToolStrategy(schema=schema).schema_specs
    return [{"name": spec.name, "parameters": spec.json_schema} for spec in specs]


def _ai_message(response: Any) -> AIMessage | None:
    if type(response) is ModelResponse:
        # What a model node's handler returns, looked at first.
        messages = response.result
    elif isinstance(response, AIMessage):
        return response
    else:
        if isinstance(response, ExtendedModelResponse):
            response = response.model_response
        messages = getattr(response, "result", None) or []
    for message in messages:
        if isinstance(message, AIMessage):
            return message
    return None


def _load_policy(policy: Policy | str | os.PathLike[str] | Mapping[str, Any] | None) -> Policy:
    if policy is None:
        return Policy()
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        return Policy.from_dict(policy)
    if isinstance(policy, (str, os.PathLike)):
        return Policy.from_file(policy)
    raise TypeError(f"policy is a path, a dict or a toolgate.Policy, not {type(policy).__name__}")


class ToolgateMiddleware(AgentMiddleware):
    """Check every tool call of every answer with toolgate, with retries.

    Parameters
    ----------
    tools:
        The tools to check against. ``None`` (the default): the agent's own
        tools (``request.tools``), compiled once per distinct tool list.
    max_retries:
        How many times the model is asked again after an answer with a bad
        call (default 2: up to three model calls per model step).
    strip_empty_values:
        Drop ``None``, ``{}`` and ``[]`` from arguments before checking
        (default ``True``). The cleaned arguments replace the model's: what
        is checked is what executes.
    strip_placeholder_strings:
        Also drop placeholder strings (``placeholder_strings``); off by
        default, and only with ``strip_empty_values``.
    placeholder_strings:
        The placeholders, matched trimmed and in any case.
    extra_validators:
        Domain checks, ``(name, args) -> list[str]``, run on each call's
        cleaned arguments; any message fails the call.
    on_failure:
        When the last retry still fails: ``"block"`` (the default) ends the
        run with an assistant message naming the blocked calls, none of
        which runs; ``"raise"`` raises ``toolgate.ToolCallBlocked`` with the
        verdict; ``"pass"`` returns the last answer unchanged (fail open).
    policy:
        A toolgate policy: a path, a dict of its keys or a ``Policy``. Its
        checks (allowlist, forbidden tools, schemas, roles, rules, limits)
        apply on top of the tools' schemas. Its ``normalize`` section is
        replaced by the three ``strip``/``placeholder`` parameters.
    caller:
        Who the agent acts for, for the policy's roles, rules and limits:
        ``{"id": ..., "roles": [...], "attributes": {...}}``.
    """

    def __init__(
        self,
        *,
        tools: Sequence[Any] | None = None,
        max_retries: int = 2,
        strip_empty_values: bool = True,
        strip_placeholder_strings: bool = False,
        placeholder_strings: Iterable[str] = DEFAULT_PLACEHOLDER_STRINGS,
        extra_validators: Sequence[ExtraValidator] | None = None,
        on_failure: OnFailure = "block",
        policy: Policy | str | os.PathLike[str] | Mapping[str, Any] | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if on_failure not in ("block", "raise", "pass"):
            raise ValueError(f"on_failure is 'block', 'raise' or 'pass', not {on_failure!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries is a whole number from 0, not {max_retries!r}")
        self._max_retries = max_retries
        self._extra_validators = list(extra_validators or [])
        self._on_failure: OnFailure = on_failure
        self._caller = dict(caller) if caller is not None else None
        self._policy = _load_policy(policy).with_normalize(
            {
                "strip_empty_values": bool(strip_empty_values),
                "strip_placeholder_strings": bool(strip_empty_values and strip_placeholder_strings),
                "placeholder_strings": sorted(placeholder_strings),
            }
        )
        self._tools = list(tools) if tools is not None else None
        # The gate of each tool list (its tools compiled, the caller read),
        # by the identity of its tools; each entry holds its tools, so no id
        # is reused while it is cached.
        self._cache: dict[tuple[int, ...], tuple[_Gate, list[Any]]] = {}
        # The gate without tools: the policy's alone.
        self._bare = self._policy._gate(caller=self._caller)
        # The last tool list seen, a copy of it, its response format and
        # its gate: an agent sends the same list object on every model call.
        self._last: tuple[Any, list[Any], Any, _Gate] = ((), [], None, self._bare)
        # With extra validators the verdict is needed even when every call
        # passed the engine's checks.
        self._always = bool(self._extra_validators)

    @property
    def policy(self) -> Policy:
        """The policy answers are checked with (``normalize`` included)."""
        return self._policy

    # Hooks: the first answer is checked inline; a failed one starts the
    # retry generator, which both hooks drive.

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        response = handler(request)
        gate = self._gate(request)
        failed = self._check(_ai_message(response), gate)
        if failed is None:
            return response
        if not self._max_retries:
            return self._exhausted(response, *failed)
        loop = self._loop(request, response, gate, failed)
        try:
            retry = next(loop)
            while True:
                retry = loop.send(handler(retry))
        except StopIteration as stop:
            return stop.value

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        response = await handler(request)
        gate = self._gate(request)
        failed = self._check(_ai_message(response), gate)
        if failed is None:
            return response
        if not self._max_retries:
            return self._exhausted(response, *failed)
        loop = self._loop(request, response, gate, failed)
        try:
            retry = next(loop)
            while True:
                retry = loop.send(await handler(retry))
        except StopIteration as stop:
            return stop.value

    def _loop(
        self,
        request: ModelRequest[Any],
        response: Any,
        gate: _Gate,
        failed: tuple[AIMessage, Verdict, dict[int, list[str]]],
    ) -> Generator[ModelRequest[Any], Any, Any]:
        """Ask again with the errors of ``failed`` (the check of
        ``response``) until an answer passes or the retries run out. Yields
        the request to send; receives the answer; returns what the model
        node returns."""
        conversation = list(request.messages)
        attempt = 0
        while True:
            ai, verdict, extra = failed
            if attempt == self._max_retries:
                return self._exhausted(response, ai, verdict, extra)
            attempt += 1
            _warn("toolgate: tool calls failed their checks (retry %d of %d)", attempt, self._max_retries)
            replies = _replies(ai, verdict, extra)
            conversation = [*conversation, ai, *replies]
            response = yield request.override(messages=conversation)
            checked = self._check(_ai_message(response), gate)
            if checked is None:
                return response
            failed = checked

    def _gate(self, request: ModelRequest[Any]) -> _Gate:
        """The check of the answer's calls against the tools it may call:
        ``tools`` or the agent's, and the structured-output tools of its
        response format, compiled once per tool list."""
        tools = self._tools if self._tools is not None else getattr(request, "tools", None) or ()
        response_format = getattr(request, "response_format", None)
        last = self._last
        # The same list holding the same tools (compared by identity: a
        # list's `==` would ask a tool that is not identical whether it is
        # equal).
        if last[0] is tools and last[2] is response_format and _same_items(tools, last[1]):
            return last[3]
        if not tools and response_format is None:
            return self._bare
        key = (*map(id, tools), id(response_format))
        cached = self._cache.get(key)
        if cached is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            declarations = [tool_declaration(t) for t in tools] + _structured_tools(response_format)
            declared = self._policy.declare(declarations)
            cached = (self._policy._gate(caller=self._caller, tools=declared), [*tools, response_format])
            self._cache[key] = cached
        self._last = (tools, list(tools), response_format, cached[0])
        return cached[0]

    def _check(
        self, ai: AIMessage | None, gate: _Gate
    ) -> tuple[AIMessage, Verdict, dict[int, list[str]]] | None:
        """``None`` when ``ai`` holds no call or every call passed (its
        arguments now the cleaned ones); else the answer, its verdict and
        the problems ``extra_validators`` found, by call."""
        if ai is None:
            return None
        calls = ai.tool_calls
        invalid = ai.invalid_tool_calls
        if not calls and not invalid:
            return None
        # The gate writes the cleaned arguments into `calls`; it gives no
        # verdict when every call passed, unless one is needed.
        verdict = gate.check(calls, [_readable(c) for c in invalid] if invalid else None, self._always)
        if verdict is None:
            return None
        extra = self._extra(calls) if self._always else {}
        if verdict.passed and not extra:
            return None
        return ai, verdict, extra

    def _extra(self, calls: Sequence[Mapping[str, Any]]) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {}
        for index, call in enumerate(calls):
            args = call.get("args")
            for validator in self._extra_validators:
                problems = list(validator(call.get("name") or "", args if isinstance(args, dict) else {}))
                if problems:
                    found.setdefault(index, []).extend(str(p) for p in problems)
        return found

    def _exhausted(
        self, response: Any, ai: AIMessage, verdict: Verdict, extra: Mapping[int, list[str]]
    ) -> Any:
        if self._on_failure == "pass":
            _warn(
                "toolgate: tool calls still failed their checks after %d retries; "
                "passing the answer on unchanged (on_failure='pass')",
                self._max_retries,
            )
            return response
        blocked = [r for r in _replies(ai, verdict, extra) if r.status == "error"]
        names = ", ".join(f"'{r.name}'" for r in blocked) or "the tool calls"
        message = (
            f"Blocked {len(blocked)} tool call(s) that still failed their checks after "
            f"{self._max_retries} retries: {names}. No tool call of this answer was run."
        )
        if self._on_failure == "raise":
            raise ToolCallBlocked(message, verdict)
        reasons = "\n".join(str(r.content) for r in blocked)
        return ModelResponse(result=[AIMessage(content=f"{message}\n{reasons}")])


def _warn(message: str, *args: object) -> None:
    """``logger.warning(message, *args)``, its record made without looking
    for the caller up the stack (``Logger.findCaller``, a fifth of the cost
    of a record, which is most of the cost of a refused answer when no
    retry is left). Every warning of this module is made here, so its
    record names this function, with its file and first line, as where it
    was logged; the rest of the record is what ``logger.warning`` makes."""
    if logger.isEnabledFor(logging.WARNING):
        code = _warn.__code__
        record = logger.makeRecord(
            logger.name, logging.WARNING, code.co_filename, code.co_firstlineno, message, args, None, "_warn"
        )
        logger.handle(record)


def _replies(ai: AIMessage, verdict: Verdict, extra: Mapping[int, list[str]]) -> list[ToolMessage]:
    """A reply to every call of the failed answer ``ai``: an error for
    each bad call, the "not executed" notice for each good one."""
    calls = ai.tool_calls
    everything = [*calls, *ai.invalid_tool_calls]
    problems: dict[int, list[str]] = {}
    whole: list[str] = []
    for violation in verdict.violations:
        where = f" at {violation.path}" if violation.path else ""
        line = f"{violation.message} ({violation.code}{where})"
        if violation.call is None:
            whole.append(line)
        else:
            problems.setdefault(violation.call, []).append(line)
    if len(verdict.calls) != len(everything):
        # The engine read these calls differently from LangChain: fail
        # every call, with what it found.
        whole.extend(f"{f}" for f in verdict.failures if f not in whole)
    for index, lines in extra.items():
        problems.setdefault(index, []).extend(lines)
    replies = []
    for index, call in enumerate(everything):
        name = call.get("name") or ""
        lines = problems.get(index, []) + whole
        if index >= len(calls) and not lines:
            lines = ["the provider could not parse this tool call"]
        if lines:
            content = "\n".join(
                [f"Tool call '{name}' was refused:", *(f"- {line}" for line in lines), _HINT]
            )
            replies.append(
                ToolMessage(
                    content=content, tool_call_id=call.get("id") or "", name=name, status="error"
                )
            )
        else:
            replies.append(ToolMessage(content=NOT_EXECUTED, tool_call_id=call.get("id") or "", name=name))
    return replies


def _readable(call: Mapping[str, Any]) -> dict[str, Any]:
    """An ``invalid_tool_calls`` entry the engine reads as a call: a
    missing name or arguments text becomes empty."""
    return {
        "name": call.get("name") or "",
        "args": call.get("args") or "",
        "id": call.get("id"),
        "error": call.get("error"),
        "type": "invalid_tool_call",
    }
