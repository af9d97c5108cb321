"""Inputs as clients send them over HTTP and websockets, checked before anything runs."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError

INPUT_KEYS = ("message", "event", "start", "wake")


def parse_turn(data: Any) -> tuple[dict[str, Any], Any, str | None]:
    """The turn body: exactly one input, plus optional ``context`` and ``agent``."""
    if not isinstance(data, dict):
        raise InvalidInputError("body", "expected a JSON object")
    kinds = [kind for kind in INPUT_KEYS if kind in data]
    unknown = sorted(set(data) - {*INPUT_KEYS, "context", "agent"})
    if unknown:
        raise InvalidInputError(unknown[0], "is not a field of a turn")
    if len(kinds) != 1:
        raise InvalidInputError("input", "give exactly one of message, event, start, wake")
    kind, value = kinds[0], data[kinds[0]]
    if kind == "wake":
        if not isinstance(value, str) or not value:
            raise InvalidInputError("wake", "expected a wake key")
        turn_input: dict[str, Any] = {"wake": value}
    else:
        if not isinstance(value, dict):
            raise InvalidInputError(kind, "expected an object")
        required = {"message": ("text",), "event": ("name", "key"), "start": ("flow", "key")}[kind]
        optional = {"message": ("id", "at"), "event": ("payload",), "start": ("input",)}[kind]
        for name in (*required, *(key for key in optional if key in ("id", "at") and key in value)):
            if not isinstance(value.get(name), str) or (name != "text" and not value[name]):
                raise InvalidInputError(f"{kind}.{name}", "expected text")
        extra = sorted(set(value) - set(required) - set(optional))
        if extra:
            raise InvalidInputError(f"{kind}.{extra[0]}", "is not a field")
        turn_input = {kind: value}
    agent = data.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise InvalidInputError("agent", "expected an agent name")
    return turn_input, data.get("context"), agent
