"""Tools a ``ToolAgent`` offers its model: Python callables with a JSON schema for their
arguments (written by hand, or read from the function's annotations)."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..errors import ToolArgumentsError
from ..providers.chat import ToolSchema

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


@dataclass(frozen=True)
class Tool:
    """``fn`` is called with the arguments as keywords once ``parameters`` (a JSON schema of
    an object) accepts them; what it returns goes back to the model as JSON."""

    name: str
    fn: Callable[..., Any]
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    validator: Draft202012Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"a tool name is 1-64 letters, digits, '_' or '-', not {self.name!r}")
        parameters = self.parameters or parameters_of(self.fn)
        Draft202012Validator.check_schema(parameters)
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "validator", Draft202012Validator(parameters))

    @property
    def schema(self) -> ToolSchema:
        return ToolSchema(self.name, self.description, self.parameters)

    def run(self, arguments: Any) -> Any:
        """Call ``fn`` with ``arguments``; arguments the schema refuses raise
        ``ToolArgumentsError`` and ``fn`` does not run."""
        if not isinstance(arguments, dict):
            raise ToolArgumentsError(f"the arguments of {self.name} were not a JSON object")
        error = best_match(self.validator.iter_errors(arguments))
        if error is not None:
            raise ToolArgumentsError(f"bad arguments for {self.name}: {error.message}")
        return self.fn(**arguments)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
) -> Any:
    """``@tool`` or ``@tool(name=…, description=…, parameters=…)``: the function as a
    ``Tool``, named after it and described by its docstring unless told otherwise."""

    def wrap(function: Callable[..., Any]) -> Tool:
        return Tool(
            name or function.__name__,
            function,
            description if description is not None else inspect.getdoc(function) or "",
            parameters or {},
        )

    return wrap(fn) if fn is not None else wrap


def as_tool(value: Tool | Callable[..., Any]) -> Tool:
    return value if isinstance(value, Tool) else tool(value)


def parameters_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """The JSON schema of ``fn``'s keyword arguments from its annotations (``str``, ``int``,
    ``float``, ``bool``, ``list``, ``dict`` and optional ones); parameters without a default
    are required."""
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required = []
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        properties[parameter.name] = _json_type(hints.get(parameter.name, Any), fn)
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _json_type(hint: Any, fn: Callable[..., Any]) -> dict[str, Any]:
    if hint is Any:
        return {}
    origin = typing.get_origin(hint) or hint
    if origin in (typing.Union, types.UnionType):
        options = [_json_type(arg, fn) for arg in typing.get_args(hint)]
        return {"anyOf": options}
    if hint is type(None):
        return {"type": "null"}
    if origin in _JSON_TYPES:
        return {"type": _JSON_TYPES[origin]}
    raise TypeError(
        f"cannot describe {hint!r} of {getattr(fn, '__name__', fn)} as JSON: give the tool "
        "parameters= (a JSON schema)"
    )
