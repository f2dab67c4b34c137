"""toolgate: check LLM tool calls before they run.

Compile a policy once, then check payloads in any wire format (OpenAI,
Anthropic, Bedrock, Gemini, Vercel AI, MCP, LangChain messages, SSE
streams) with toolgate's Rust engine, the GIL released::

    import toolgate

    policy = toolgate.Policy.from_file("policy.yaml")
    verdict = policy.check(payload)
    if not verdict.passed:
        print(verdict.failures)

``toolgate.langchain.ToolgateMiddleware`` checks every answer of a
LangChain agent before its tools run.
"""

from __future__ import annotations

from typing import Any

from ._toolgate import (
    Call,
    DeclaredTools,
    Policy,
    PolicyError,
    Verdict,
    Violation,
    __version__,
)

__all__ = [
    "Call",
    "DeclaredTools",
    "Policy",
    "PolicyError",
    "ToolCallBlocked",
    "Verdict",
    "Violation",
    "__version__",
]


class ToolCallBlocked(RuntimeError):
    """Tool calls that failed their checks after every retry.

    Raised by ``ToolgateMiddleware(on_failure="raise")``; ``verdict`` is the
    verdict of the last answer.
    """

    def __init__(self, message: str, verdict: Verdict) -> None:
        super().__init__(message)
        self.verdict = verdict

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.verdict))
