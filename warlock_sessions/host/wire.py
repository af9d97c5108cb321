"""Inputs as clients send them over HTTP and websockets, checked before anything runs: the
JSON itself, session ids, the turn body, and what an end user may send (the trust model).
The API and the websocket consumer both call these, so the two never disagree."""

from __future__ import annotations

import json
import re
from typing import Any

from ..agents import default_agent_name, get_agent
from ..conf import warlock_settings
from ..engine import Agent
from ..engine.session import json_problem, text_problem
from ..engine.turn import MAX_INPUT_DEPTH, check_input
from ..errors import InputNotAllowedError, InvalidInputError
from ..stores.base import check_session_id

INPUT_KEYS = ("message", "event", "start", "wake", "handover")
#: The longest name a customer sees a person by (a longer account name is cut).
MAX_STAFF_NAME = 100
#: How deeply a request body or websocket frame may nest (checked before it is parsed: the
#: parser recurses, and a DEBUG error page would render every frame).
MAX_BODY_DEPTH = 64

# A string (its closing quote optional, so an unclosed one is consumed in one match instead of
# being rescanned from every quote in it) or a bracket: one linear pass over the text.
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def _nests_deeper_than(text: str, limit: int) -> bool:
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise InvalidInputError("body", f"has the number {text[:40]}, which is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise InvalidInputError("body", f"has {name}, which is not JSON")


def loads(raw: str | bytes) -> Any:
    """A request body or frame as JSON, refusing what the rest could not handle: invalid UTF-8,
    nesting deeper than ``MAX_BODY_DEPTH``, ``NaN``/``Infinity`` and numbers out of range."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise InvalidInputError("body", "is not UTF-8") from None
    if _nests_deeper_than(text, MAX_BODY_DEPTH):
        raise InvalidInputError("body", f"nests deeper than {MAX_BODY_DEPTH} levels")
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        if isinstance(error, InvalidInputError):
            raise
        raise InvalidInputError("body", f"is not JSON ({error})") from None


def session_id_input(session_id: Any, field: str = "session_id") -> str:
    """A session (or conversation) id from a URL or a body's ``field``, checked like every
    store checks it (400, never a 500)."""
    try:
        return check_session_id(session_id)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(field, str(error)) from None


def clean_text_param(name: str, value: str) -> str:
    """A query parameter that reaches the database: no NUL or lone surrogate."""
    problem = text_problem(value)
    if problem:
        raise InvalidInputError(name, problem)
    return value


#: Each input object's fields: required ones (non-empty text, but a message's text may be
#: empty), optional non-empty text, and optional values of any JSON type.
INPUT_FIELDS = {
    "message": (("text",), ("id", "at"), ()),
    "event": (("name", "key"), (), ("payload",)),
    "start": (("flow", "key"), (), ("input",)),
    "handover": (("action", "key"), ("by", "reason", "text"), ()),
}


def parse_turn(data: Any) -> tuple[dict[str, Any], Any, str | None]:
    """The turn body: exactly one input, plus optional ``context`` and ``agent``."""
    if not isinstance(data, dict):
        raise InvalidInputError("body", "expected a JSON object")
    kinds = [kind for kind in INPUT_KEYS if kind in data]
    unknown = sorted(set(data) - {*INPUT_KEYS, "context", "agent"})
    if unknown:
        raise InvalidInputError(unknown[0], "is not a field of a turn")
    if len(kinds) != 1:
        raise InvalidInputError(
            "input", "give exactly one of message, event, start, wake, handover"
        )
    kind = kinds[0]
    turn_input = {kind: _input_value(kind, data[kind])}
    check_input(**turn_input)  # all the engine would refuse, before anything acts on it
    agent = data.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise InvalidInputError("agent", "expected an agent name")
    context = data.get("context")
    problem = json_problem(context, MAX_INPUT_DEPTH)
    if problem is not None:
        raise InvalidInputError(f"context{problem[0]}", problem[1])
    return turn_input, context, agent


def _input_value(kind: str, value: Any) -> Any:
    """The input's own value, its fields and their types checked."""
    if kind == "wake":
        if not isinstance(value, str) or not value:
            raise InvalidInputError("wake", "expected a wake key")
        return value
    if not isinstance(value, dict):
        raise InvalidInputError(kind, "expected an object")
    required, optional_text, optional = INPUT_FIELDS[kind]
    for name in (*required, *(key for key in optional_text if key in value)):
        if not isinstance(value.get(name), str) or (name != "text" and not value[name]):
            raise InvalidInputError(f"{kind}.{name}", "expected text")
    extra = sorted(set(value) - {*required, *optional_text, *optional})
    if extra:
        raise InvalidInputError(f"{kind}.{extra[0]}", "is not a field")
    if "text" in value:
        limit = warlock_settings.MAX_BODY_BYTES
        text = value["text"]
        if len(text) > limit or len(text.encode("utf-8", "ignore")) > limit:
            raise InvalidInputError(f"{kind}.text", f"is longer than {limit} bytes")
    return value


def check_allowed(
    turn_input: dict[str, Any], context: Any, agent_name: str | None, agent: Agent
) -> None:
    """What an end user (a session's owner, not staff) may send: messages (``text``, ``id``),
    the events and flow starts ``agent`` declares public, a start without ``input``. Context,
    the agent, wakes, handovers, ``message.at``, other events and starts come only from server
    code or staff; each is refused with :class:`InputNotAllowedError` naming it."""
    check_server_fields(context, agent_name)
    kind, value = next(iter(turn_input.items()))
    if kind == "wake":
        raise InputNotAllowedError("wake", "wakes are fired by the worker, not sent")
    if kind == "handover":
        raise InputNotAllowedError(
            "handover", "only staff or server code hand a session over, answer in it or back"
        )
    if kind == "message" and "at" in value:
        raise InputNotAllowedError("message.at", "the server stamps when a message arrived")
    if kind == "event" and value["name"] not in agent.public_events:
        raise InputNotAllowedError("event.name", f"the event {value['name']!r} is not public")
    if kind == "start":
        if value["flow"] not in agent.public_starts:
            raise InputNotAllowedError("start.flow", f"the flow {value['flow']!r} is not public")
        if "input" in value:
            raise InputNotAllowedError("start.input", "only server code or staff give input")


def check_server_fields(context: Any, agent_name: str | None) -> None:
    """A turn's ``context`` and ``agent`` come only from server code or the trusted."""
    if context is not None:
        raise InputNotAllowedError("context", "only server code or staff set a turn's context")
    if agent_name is not None:
        raise InputNotAllowedError("agent", "only server code or staff pick the agent")


def admitted_turn(
    data: Any, *, trusted: bool, user: Any, hands_over: bool = False
) -> tuple[dict[str, Any], Any, str | None]:
    """A turn body as the API and the websocket both take it (``parse_turn``): an end user's
    held to ``check_allowed``; a handover only from a requester who ``hands_over`` (the
    policy's ``handover`` action: ``handle_chats``; being ``trusted`` is not enough), signed
    with who sent it: ``by`` (the name the customer sees) unless the body names one, and
    ``user`` (the account, for the log)."""
    body = data if isinstance(data, dict) else {}
    handover = "handover" in body
    if handover and not hands_over:
        # Refused before its shape is read: writing it wrong tells an end user nothing more.
        check_allowed({"handover": body["handover"]}, None, None, get_agent(default_agent_name()))
    account = staff_account(user) if handover else None
    if account is not None and isinstance(body.get("handover"), dict):
        data = {**body, "handover": {"by": account[1], **body["handover"]}}
    turn_input, context, agent_name = parse_turn(data)
    if not trusted and "handover" in turn_input:  # from whoever handles chats: that alone
        check_server_fields(context, agent_name)
    elif not trusted:
        check_allowed(turn_input, context, agent_name, get_agent(default_agent_name()))
    if account is not None and "handover" in turn_input:
        turn_input = {"handover": {**turn_input["handover"], "user": account[0]}}
    return turn_input, context, agent_name


def staff_account(user: Any) -> tuple[str, str] | None:
    """A signed-in user's id and the name people see them by (``None``: no one signed in)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    name = (user.get_full_name() or user.get_username()).strip()
    return str(user.pk), name[:MAX_STAFF_NAME] or str(user.pk)
