"""ToolgateMiddleware in a real LangChain agent (`create_agent`), with a
scripted chat model that records what it is sent and real `@tool` tools
that record whether they ran. Every behaviour runs sync and async."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool, tool
from pydantic import BaseModel, Field

import toolgate
from toolgate.langchain import NOT_EXECUTED, ToolgateMiddleware


class ScriptedModel(BaseChatModel):
    """Answers with the scripted messages in turn (then plain text) and
    records the messages of every request."""

    script: list[AIMessage]
    seen: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        turn = len(self.seen) - 1
        answer = copy.deepcopy(self.script[turn]) if turn < len(self.script) else AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=answer)])


RAN: list[tuple[str, dict[str, Any]]] = []


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """The weather in a city."""
    RAN.append(("get_weather", {"city": city, "unit": unit}))
    return f"sunny in {city}"


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email."""
    RAN.append(("send_email", {"to": to, "subject": subject, "body": body}))
    return "sent"


class RefundArgs(BaseModel):
    order_id: str = Field(pattern=r"^ORD-\d{5}$")
    amount: float = Field(gt=0, le=500)


def _refund(order_id: str, amount: float) -> str:
    RAN.append(("refund", {"order_id": order_id, "amount": amount}))
    return "refunded"


refund = StructuredTool.from_function(_refund, name="refund", description="Refund an order.", args_schema=RefundArgs)

MCP_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "pattern": "^/srv/"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["path"],
    "additionalProperties": False,
}


def _read_file(**kwargs: Any) -> str:
    RAN.append(("read_file", dict(kwargs)))
    return "contents"


read_file = StructuredTool(name="read_file", description="Read a file (MCP).", args_schema=MCP_SCHEMA, func=_read_file)

TOOLS = [get_weather, send_email, refund, read_file]


def call(name: str, args: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def answer(*calls: dict[str, Any], invalid: list[dict[str, Any]] | None = None) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls), invalid_tool_calls=invalid or [])


Run = Callable[[Any, str], dict[str, Any]]


def run_sync(agent: Any, text: str) -> dict[str, Any]:
    return agent.invoke({"messages": [{"role": "user", "content": text}]})


def run_async(agent: Any, text: str) -> dict[str, Any]:
    return asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": text}]}))


@pytest.fixture(params=[run_sync, run_async], ids=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Run:
    RAN.clear()
    return request.param


def agent_with(model: ScriptedModel, **options: Any) -> Any:
    return create_agent(model, tools=TOOLS, middleware=[ToolgateMiddleware(**options)])


def replies(messages: list[BaseMessage]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def test_a_good_answer_runs_its_tools(run: Run) -> None:
    model = ScriptedModel(script=[answer(call("get_weather", {"city": "Paris"}, "c1"))])
    state = run(agent_with(model), "weather?")
    assert RAN == [("get_weather", {"city": "Paris", "unit": "celsius"})]
    assert len(model.seen) == 2
    assert state["messages"][-1].content == "done"


def test_a_bad_call_is_retried_with_errors_and_not_executed_notices(run: Run) -> None:
    bad = answer(
        call("get_weather", {"city": "Paris"}, "c1"),
        call("send_email", {"to": "a@example.com", "subject": "hi"}, "c2"),
    )
    good = answer(
        call("get_weather", {"city": "Paris"}, "c3"),
        call("send_email", {"to": "a@example.com", "subject": "hi", "body": "b"}, "c4"),
    )
    model = ScriptedModel(script=[bad, good])
    state = run(agent_with(model), "go")
    # The model was asked again, and saw its failed answer then one reply per call.
    second = model.seen[1]
    assert isinstance(second[-3], AIMessage) and [c["id"] for c in second[-3].tool_calls] == ["c1", "c2"]
    sent = replies(second)
    assert sent["c1"].content == NOT_EXECUTED and sent["c1"].status == "success"
    assert sent["c2"].status == "error"
    assert "'body' is a required property" in sent["c2"].content
    assert "schema_violation" in sent["c2"].content
    # Nothing ran until the corrected answer, which ran whole.
    assert sorted(name for name, _ in RAN) == ["get_weather", "send_email"]
    # Only the answer that passed entered the agent's state.
    ids = [c["id"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert ids == ["c3", "c4"]


def test_failed_turns_accumulate(run: Run) -> None:
    model = ScriptedModel(
        script=[
            answer(call("get_weather", {}, "a1")),
            answer(call("get_weather", {"town": "Paris"}, "a2")),
            answer(call("get_weather", {"city": "Paris"}, "a3")),
        ]
    )
    run(agent_with(model), "go")
    third = model.seen[2]
    failed = [m for m in third if isinstance(m, AIMessage)]
    assert [m.tool_calls[0]["id"] for m in failed] == ["a1", "a2"]
    assert set(replies(third)) == {"a1", "a2"}
    assert RAN == [("get_weather", {"city": "Paris", "unit": "celsius"})]


def test_cleaned_arguments_are_what_executes(run: Run) -> None:
    model = ScriptedModel(script=[answer(call("read_file", {"path": "/srv/a", "limit": None, "extra": {}}, "c1"))])
    state = run(agent_with(model), "go")
    assert RAN == [("read_file", {"path": "/srv/a"})]
    executed = next(m for m in state["messages"] if isinstance(m, AIMessage) and m.tool_calls)
    assert executed.tool_calls[0]["args"] == {"path": "/srv/a"}
    assert len(model.seen) == 2


def test_placeholder_strings_are_kept_unless_asked(run: Run) -> None:
    script = [answer(call("read_file", {"path": "/srv/a", "limit": "null"}, "c1")), answer(call("read_file", {"path": "/srv/a"}, "c2"))]
    model = ScriptedModel(script=script)
    run(agent_with(model), "go")
    assert "limit" in replies(model.seen[1])["c1"].content
    RAN.clear()
    model = ScriptedModel(script=script[:1])
    run(agent_with(model, strip_placeholder_strings=True), "go")
    assert RAN == [("read_file", {"path": "/srv/a"})]


def test_invalid_tool_calls_are_answered(run: Run) -> None:
    broken = answer(
        call("get_weather", {"city": "Paris"}, "c1"),
        invalid=[{"name": "send_email", "args": '{"to": "a@', "id": "c2", "error": "bad json", "type": "invalid_tool_call"}],
    )
    model = ScriptedModel(script=[broken, answer(call("get_weather", {"city": "Paris"}, "c3"))])
    run(agent_with(model), "go")
    sent = replies(model.seen[1])
    assert sent["c2"].status == "error" and "malformed_arguments" in sent["c2"].content
    assert sent["c1"].content == NOT_EXECUTED
    assert RAN == [("get_weather", {"city": "Paris", "unit": "celsius"})]


def test_pydantic_and_mcp_schemas_and_unknown_tools_are_checked(run: Run) -> None:
    model = ScriptedModel(
        script=[
            answer(
                call("refund", {"order_id": "12", "amount": 900}, "c1"),
                call("read_file", {"path": "/etc/passwd"}, "c2"),
                call("drop_database", {}, "c3"),
            ),
            answer(call("refund", {"order_id": "ORD-12345", "amount": 20}, "c4")),
        ]
    )
    run(agent_with(model), "go")
    sent = replies(model.seen[1])
    assert "/order_id" in sent["c1"].content and "/amount" in sent["c1"].content
    assert "/path" in sent["c2"].content
    assert "not_allowed" in sent["c3"].content
    assert RAN == [("refund", {"order_id": "ORD-12345", "amount": 20.0})]


@pytest.mark.parametrize("max_retries", [0, 2])
def test_block_ends_the_run_and_runs_nothing(run: Run, max_retries: int) -> None:
    model = ScriptedModel(script=[answer(call("get_weather", {}, f"c{i}"), call("send_email", {"to": "x", "subject": "s", "body": "b"}, f"d{i}")) for i in range(5)])
    state = run(agent_with(model, max_retries=max_retries), "go")
    assert len(model.seen) == max_retries + 1
    assert RAN == []
    last = state["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    assert "Blocked 1 tool call(s)" in last.content and "'get_weather'" in last.content
    assert not any(isinstance(m, AIMessage) and m.tool_calls for m in state["messages"])


def test_raise_carries_the_verdict(run: Run) -> None:
    model = ScriptedModel(script=[answer(call("get_weather", {}, "c1"))] * 3)
    with pytest.raises(toolgate.ToolCallBlocked) as caught:
        run(agent_with(model, on_failure="raise"), "go")
    assert isinstance(caught.value.verdict, toolgate.Verdict)
    assert caught.value.verdict.violations[0].code == "schema_violation"
    assert RAN == []


def test_pass_returns_the_last_answer_unchanged(run: Run) -> None:
    def no_paris(name: str, args: dict[str, Any]) -> list[str]:
        return ["Paris is closed"] if args.get("city") == "Paris" else []

    model = ScriptedModel(script=[answer(call("get_weather", {"city": "Paris"}, f"c{i}")) for i in range(3)])
    state = run(agent_with(model, on_failure="pass", extra_validators=[no_paris]), "go")
    assert len(model.seen) == 4
    assert "Paris is closed" in replies(model.seen[1])["c0"].content
    assert RAN == [("get_weather", {"city": "Paris", "unit": "celsius"})]
    assert [c["id"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls] == ["c2"]


def test_retries_and_passing_on_are_logged_as_warnings(run: Run, caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel(script=[answer(call("get_weather", {}, f"c{i}")) for i in range(3)])
    with caplog.at_level(logging.WARNING, logger="toolgate.langchain"):
        run(agent_with(model, on_failure="pass"), "go")
    records = [r for r in caplog.records if r.name == "toolgate.langchain"]
    assert [r.getMessage() for r in records] == [
        "toolgate: tool calls failed their checks (retry 1 of 2)",
        "toolgate: tool calls failed their checks (retry 2 of 2)",
        "toolgate: tool calls still failed their checks after 2 retries; "
        "passing the answer on unchanged (on_failure='pass')",
    ]
    # The record logger.warning makes, its caller named without a stack walk.
    for record in records:
        assert record.levelno == logging.WARNING
        assert record.funcName == "_warn"
        assert record.pathname.endswith("langchain.py") and record.lineno > 0
        assert record.exc_info is None and record.stack_info is None


def test_a_policy_and_caller_apply(run: Run, tmp_path: Any) -> None:
    policy = {
        "forbidden": ["refund"],
        "roles": {"support": {"allow": ["get_weather", "send_email", "refund"]}},
        "rules": [{"tool": "send_email", "when": "args.to.endsWith('@' + caller.domain)", "message": "recipient outside your domain"}],
    }
    script = [
        answer(
            call("refund", {"order_id": "ORD-12345", "amount": 5}, "c1"),
            call("send_email", {"to": "a@evil.test", "subject": "s", "body": "b"}, "c2"),
        ),
        answer(call("send_email", {"to": "a@example.com", "subject": "s", "body": "b"}, "c3")),
    ]
    model = ScriptedModel(script=script)
    caller = {"id": "bot", "roles": ["support"], "attributes": {"domain": "example.com"}}
    path = tmp_path / "policy.json"
    path.write_text(__import__("json").dumps(policy))
    run(agent_with(model, policy=str(path), caller=caller), "go")
    sent = replies(model.seen[1])
    assert "forbidden" in sent["c1"].content
    assert "recipient outside your domain" in sent["c2"].content
    assert RAN == [("send_email", {"to": "a@example.com", "subject": "s", "body": "b"})]
    # Without the caller, the roles deny every call: fail closed.
    RAN.clear()
    model = ScriptedModel(script=[script[1]])
    run(agent_with(model, policy=toolgate.Policy.from_dict(policy)), "go")
    assert RAN == []


def test_explicit_tools_replace_the_agents() -> None:
    RAN.clear()
    model = ScriptedModel(script=[answer(call("get_weather", {"city": "Paris"}, f"c{i}")) for i in range(1, 4)])
    agent = create_agent(model, tools=TOOLS, middleware=[ToolgateMiddleware(tools=[send_email])])
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert RAN == []
    assert "not_allowed" in replies(model.seen[1])["c1"].content
    assert "Blocked" in state["messages"][-1].content


def test_a_tool_list_changed_in_place_is_compiled_again() -> None:
    """The gate of the last tool list is kept while the list holds the
    very same tools: replaced in place, or by a tool equal to the old one
    but not it, the list is compiled again."""
    from langchain.agents.middleware.types import ModelRequest, ModelResponse

    class Loose(BaseModel):
        city: str

    class Strict(BaseModel):
        city: str = Field(pattern="^[A-Z]")

    def weather(city: str) -> str:
        """The weather in a city."""
        return city

    loose = StructuredTool.from_function(weather, name="weather", args_schema=Loose)
    strict = StructuredTool.from_function(weather, name="weather", args_schema=Strict)
    tools: list[Any] = [loose]
    middleware = ToolgateMiddleware(max_retries=0, on_failure="raise")
    request = ModelRequest(model=ScriptedModel(script=[]), messages=[], tools=tools)

    def check() -> bool:
        response = ModelResponse(result=[answer(call("weather", {"city": "paris"}, "c1"))])
        try:
            middleware.wrap_model_call(request, lambda _r: response)
        except toolgate.ToolCallBlocked:
            return False
        return True

    assert check() and check()
    tools[0] = strict
    assert not check()
    # Equal (a model's `==`) but not the same tool: compiled again too.
    twin = strict.model_copy()
    assert twin == strict
    tools[0] = twin
    assert not check()
    tools[0] = loose
    assert check()
    assert toolgate._toolgate._same_items((loose,), [loose])
    assert not toolgate._toolgate._same_items((loose,), [twin])
    assert not toolgate._toolgate._same_items([loose], [loose, loose])
    assert not toolgate._toolgate._same_items(iter([loose]), [loose])


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError):
        ToolgateMiddleware(on_failure="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ToolgateMiddleware(max_retries=-1)
    with pytest.raises(toolgate.PolicyError):
        ToolgateMiddleware(policy={"forbiden": ["x"]})


class Forecast(BaseModel):
    city: str
    high: int = Field(ge=-90, le=60)


def test_structured_output_tools_are_the_agents_too(run: Run) -> None:
    from langchain.agents.structured_output import ToolStrategy

    model = ScriptedModel(
        script=[
            answer(call("Forecast", {"city": "Paris", "high": 99}, "s1")),
            answer(call("Forecast", {"city": "Paris", "high": 21}, "s2")),
        ]
    )
    agent = create_agent(model, tools=TOOLS, response_format=ToolStrategy(Forecast), middleware=[ToolgateMiddleware()])
    state = run(agent, "forecast?")
    # Checked against the schema the agent gave the model: 99 is refused,
    # and the corrected answer is the structured response.
    assert "/high" in replies(model.seen[1])["s1"].content
    assert state["structured_response"] == Forecast(city="Paris", high=21)
    assert RAN == []
