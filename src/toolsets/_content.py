"""Conversation content: what users, models and tools say to each other.

A `Content` is one turn (a role and its parts); a `Part` holds exactly one kind of
payload: text, inline bytes, a file reference, a function call or a function response
(or code a model ran on its provider's servers, and that code's result). All are frozen
values.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from toolsets._json import JsonValue

__all__ = [
    "Blob",
    "CodeExecutionResult",
    "Content",
    "ExecutableCode",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "Part",
    "Role",
    "fast_init",
]

Role = Literal["user", "model", "tool", "system"]

_T = TypeVar("_T")


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def fast_init(cls: type[_T]) -> type[_T]:
    """Give a frozen, keyword-only dataclass an ``__init__`` that stores the fields in
    the instance's ``__dict__`` directly.

    The ``__init__`` that dataclasses writes for a frozen class sets each field through
    ``object.__setattr__`` to get past the frozen guard, a call per field that a value
    built on every tool call (the agent loop builds several) need not pay. This one has
    the same signature, defaults, default factories and ``__post_init__`` call.
    """
    params = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not all(f.kw_only and f.init for f in params) or "__slots__" in vars(cls):
        raise TypeError(f"{cls.__name__}: fast_init needs keyword-only fields and a __dict__")
    # The generated code's own names start with "fast_"; no field may.
    if any(f.name == "self" or f.name.startswith("fast_") for f in params):
        raise TypeError(f"{cls.__name__}: fast_init reserves the names self and fast_*")
    namespace: dict[str, Any] = {"fast_factory": _FACTORY}
    signature: list[str] = []
    body = ["    fast_values = self.__dict__"]
    for f in params:
        name = f.name
        if f.default is not dataclasses.MISSING:
            namespace[f"fast_default_{name}"] = f.default
            signature.append(f"{name}=fast_default_{name}")
            body.append(f"    fast_values[{name!r}] = {name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"fast_make_{name}"] = f.default_factory
            signature.append(f"{name}=fast_factory")
            body.append(
                f"    fast_values[{name!r}] = "
                f"fast_make_{name}() if {name} is fast_factory else {name}"
            )
        else:
            signature.append(name)
            body.append(f"    fast_values[{name!r}] = {name}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    exec(f"def __init__(self, *, {', '.join(signature)}):\n" + "\n".join(body), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


@dataclass(frozen=True, kw_only=True)
class Blob:
    """Bytes carried inline, with their media type."""

    mime_type: str
    """Media type, e.g. ``image/png``."""
    data: bytes = field(repr=False)
    """The raw bytes (not base64)."""

    def to_json(self) -> dict[str, JsonValue]:
        """The blob as JSON, its bytes base64-encoded."""
        return {"mime_type": self.mime_type, "data": base64.b64encode(self.data).decode("ascii")}


@dataclass(frozen=True, kw_only=True)
class FileData:
    """A reference to content stored elsewhere."""

    uri: str
    """Where the file is, e.g. ``https://...`` or ``file://...``."""
    mime_type: str | None = None
    """Media type, when known."""


@dataclass(frozen=True, kw_only=True)
class ExecutableCode:
    """Code the model wrote and ran on its provider's servers (Gemini's code execution)."""

    code: str
    """The code."""
    language: str = "PYTHON"
    """Its language, as the provider names it."""


@dataclass(frozen=True, kw_only=True)
class CodeExecutionResult:
    """What running an `ExecutableCode` gave, on the provider's servers."""

    outcome: str
    """How it ended, as the provider says (Gemini: ``OUTCOME_OK``, ``OUTCOME_FAILED``,
    ``OUTCOME_DEADLINE_EXCEEDED``)."""
    output: str = ""
    """Its standard output, or the error when it failed."""


@fast_init
@dataclass(frozen=True, kw_only=True)
class FunctionCall:
    """A model's request to call a tool."""

    name: str
    """The tool's name, as declared to the model."""
    args: Mapping[str, Any] = field(default_factory=dict)
    """The arguments the model produced (not yet validated)."""
    id: str | None = None
    """The call id; the agent loop fills it in when the model gave none."""


@fast_init
@dataclass(frozen=True, kw_only=True)
class FunctionResponse:
    """A tool's answer to one `FunctionCall`."""

    name: str
    """The tool's name."""
    response: JsonValue
    """The tool's result (``{"error": ...}`` when the call failed in a way the model
    should see)."""
    id: str | None = None
    """The id of the call this answers."""
    will_continue: bool = False
    """True when the call is still pending (long-running, or waiting for the user)."""


@dataclass(frozen=True, kw_only=True)
class Part:
    """One piece of a turn. Exactly one payload field is set."""

    text: str | None = None
    """Plain text."""
    inline_data: Blob | None = None
    """Bytes carried inline (an image, audio, a file's content)."""
    file_data: FileData | None = None
    """A reference to a file stored elsewhere."""
    function_call: FunctionCall | None = None
    """A call the model asks for."""
    function_response: FunctionResponse | None = None
    """A tool's answer."""
    executable_code: ExecutableCode | None = None
    """Code the model ran on its provider's servers."""
    code_execution_result: CodeExecutionResult | None = None
    """The result of that code."""
    thought: bool = False
    """True for a model's reasoning text, which is not part of its answer."""
    provider_data: Mapping[str, Mapping[str, JsonValue]] | None = None
    """Opaque data a provider attached to this part, by provider (``{"gemini":
    {"thoughtSignature": ...}}``): its model sends it back unchanged with the part on
    later turns; other providers' models ignore it."""

    # Written out (dataclass keeps an __init__ the class defines): the payload check runs
    # inline and the fields go straight into __dict__, as with fast_init; the loop builds
    # a Part for every call and every result.
    def __init__(
        self,
        *,
        text: str | None = None,
        inline_data: Blob | None = None,
        file_data: FileData | None = None,
        function_call: FunctionCall | None = None,
        function_response: FunctionResponse | None = None,
        executable_code: ExecutableCode | None = None,
        code_execution_result: CodeExecutionResult | None = None,
        thought: bool = False,
        provider_data: Mapping[str, Mapping[str, JsonValue]] | None = None,
    ) -> None:
        empty = (
            (text is None)
            + (inline_data is None)
            + (file_data is None)
            + (function_call is None)
            + (function_response is None)
            + (executable_code is None)
            + (code_execution_result is None)
        )
        if empty != 6:
            raise ValueError(f"a Part holds exactly one payload, got {7 - empty}")
        values = self.__dict__
        values["text"] = text
        values["inline_data"] = inline_data
        values["file_data"] = file_data
        values["function_call"] = function_call
        values["function_response"] = function_response
        values["executable_code"] = executable_code
        values["code_execution_result"] = code_execution_result
        values["thought"] = thought
        values["provider_data"] = provider_data

    @classmethod
    def from_text(cls, text: str) -> Part:
        """A text part."""
        return cls(text=text)

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str) -> Part:
        """An inline-data part."""
        return cls(inline_data=Blob(mime_type=mime_type, data=data))


@fast_init
@dataclass(frozen=True, kw_only=True)
class Content:
    """One turn of a conversation."""

    role: Role
    """Who speaks: ``user``, ``model``, ``tool`` or ``system``."""
    parts: Sequence[Part] = ()
    """What is said, in order."""

    @classmethod
    def user(cls, text: str) -> Content:
        """A user turn holding one text part."""
        return cls(role="user", parts=(Part(text=text),))

    @property
    def text(self) -> str:
        """The concatenated text of the non-thought text parts (``""`` if none)."""
        return "".join(p.text for p in self.parts if p.text is not None and not p.thought)

    @property
    def function_calls(self) -> tuple[FunctionCall, ...]:
        """The function calls in this turn, in order."""
        return tuple([p.function_call for p in self.parts if p.function_call is not None])
