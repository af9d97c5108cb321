"""The turn body as clients send it (host.wire.parse_turn): each error names the field."""

from __future__ import annotations

from typing import Any

import pytest

from warlock_sessions.errors import InvalidInputError
from warlock_sessions.host.wire import parse_turn


@pytest.mark.parametrize(
    ("body", "field", "why"),
    [
        ([], "body", "expected a JSON object"),
        ({}, "input", "give exactly one of"),
        ({"message": {"text": "hi"}, "wake": "w"}, "input", "give exactly one of"),
        ({"message": {"text": "hi"}, "extra": 1}, "extra", "is not a field of a turn"),
        ({"message": {"text": 3}}, "message.text", "expected text"),
        ({"message": {"text": "hi", "id": ""}}, "message.id", "expected text"),
        ({"message": {"text": "hi", "at": 5}}, "message.at", "expected text"),
        ({"message": {"text": "hi", "payload": {}}}, "message.payload", "is not a field"),
        ({"event": {"name": "paid", "key": "k", "at": 5}}, "event.at", "is not a field"),
        ({"event": {"name": "paid", "key": "k", "id": "x"}}, "event.id", "is not a field"),
        ({"start": {"flow": "f", "key": "k", "id": "x"}}, "start.id", "is not a field"),
        ({"start": {"flow": "", "key": "k"}}, "start.flow", "expected text"),
        ({"wake": ""}, "wake", "expected a wake key"),
        ({"wake": "w", "agent": 3}, "agent", "expected an agent name"),
    ],
)
def test_a_bad_body_names_the_field_at_fault(body: Any, field: str, why: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_turn(body)
    assert raised.value.field == field
    assert why in str(raised.value)


def test_payloads_and_inputs_take_any_json() -> None:
    turn_input, context, agent = parse_turn(
        {"event": {"name": "paid", "key": "k", "payload": [1, {"a": None}]}, "context": {"x": 1}}
    )
    assert turn_input == {"event": {"name": "paid", "key": "k", "payload": [1, {"a": None}]}}
    assert (context, agent) == ({"x": 1}, None)
