from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, TypedDict, final

__all__ = ["Policy", "DeclaredTools", "_Gate", "Verdict", "Call", "Violation", "PolicyError", "_restore_policy", "_same_items", "__version__"]
__version__: str

_Payload = bytes | str | Mapping[str, Any] | Sequence[Any]
_Phase = Literal["response", "request", "trajectory"]

# {"id": ..., "roles": [...], "attributes": {...}}
_Caller = Mapping[str, Any]

class _Problem(TypedDict):
    path: str
    message: str
    tool: str | None
    severity: Literal["error", "warning"]

class PolicyError(ValueError):
    problems: list[_Problem]

@final
class Violation:
    @property
    def code(self) -> str: ...
    @property
    def call(self) -> int | None: ...
    @property
    def tool(self) -> str | None: ...
    @property
    def path(self) -> str | None: ...
    @property
    def message(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Call:
    @property
    def index(self) -> int: ...
    @property
    def id(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any] | None: ...
    @property
    def format(self) -> str: ...
    @property
    def valid(self) -> bool: ...
    @property
    def violations(self) -> list[Violation]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Verdict:
    @property
    def passed(self) -> bool: ...
    @property
    def label(self) -> Literal["pass", "fail"]: ...
    @property
    def score(self) -> float: ...
    @property
    def reasoning(self) -> str: ...
    @property
    def calls(self) -> list[Call]: ...
    @property
    def violations(self) -> list[Violation]: ...
    @property
    def failures(self) -> list[str]: ...
    @property
    def actual_tools(self) -> list[str]: ...
    @property
    def expected_tools(self) -> list[str]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def _cleaned_arguments(self) -> list[tuple[int, dict[str, Any]]]: ...
    def __bool__(self) -> bool: ...

@final
class DeclaredTools:
    @property
    def problems(self) -> list[str]: ...

_Tools = DeclaredTools | Sequence[Mapping[str, Any]] | None

def _same_items(items: Sequence[Any], last: list[Any], /) -> bool: ...

@final
class _Gate:
    def check(
        self,
        tool_calls: list[Any],
        invalid_tool_calls: Sequence[Mapping[str, Any]] | None = None,
        always: bool = False,
    ) -> Verdict | None: ...

@final
class Policy:
    def __init__(self) -> None: ...
    @staticmethod
    def from_file(path: str | PathLike[str]) -> Policy: ...
    @staticmethod
    def from_dict(keys: Mapping[str, Any], base_dir: str | PathLike[str] | None = None) -> Policy: ...
    @staticmethod
    def from_text(text: str, base_dir: str | PathLike[str] | None = None) -> Policy: ...
    def check(
        self,
        payload: _Payload,
        *,
        results: bool = False,
        phase: _Phase = "trajectory",
        caller: _Caller | None = None,
        require_calls: bool = False,
        tools: _Tools = None,
    ) -> Verdict: ...
    def check_calls(
        self,
        tool_calls: Sequence[Mapping[str, Any]],
        *,
        invalid_tool_calls: Sequence[Mapping[str, Any]] | None = None,
        results: bool = False,
        phase: _Phase = "trajectory",
        caller: _Caller | None = None,
        require_calls: bool = False,
        tools: _Tools = None,
    ) -> Verdict: ...
    def _direct_agrees(
        self,
        tool_calls: Sequence[Mapping[str, Any]],
        invalid_tool_calls: Sequence[Mapping[str, Any]] | None = None,
    ) -> bool | None: ...
    def _gate(self, *, caller: _Caller | None = None, tools: _Tools = None) -> _Gate: ...
    def check_many(
        self,
        payloads: Iterable[_Payload],
        *,
        results: bool = False,
        phase: _Phase = "trajectory",
        caller: _Caller | None = None,
        require_calls: bool = False,
        tools: _Tools = None,
    ) -> list[Verdict]: ...
    def declare(self, tools: Sequence[Mapping[str, Any]]) -> DeclaredTools: ...
    def with_normalize(self, normalize: Mapping[str, Any]) -> Policy: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def declared_tools(self) -> list[str]: ...

def _restore_policy(text: str | None, base_dir: str | None) -> Policy: ...
