"""Conversations as the API and the websockets speak them: what an end user may send (text
only), and the JSON of a conversation and of a turn's result. One place, so HTTP and
websockets answer alike (their failures: ``failures``)."""

from __future__ import annotations

from typing import Any

from ..engine.session import text_problem
from ..errors import AgentFailedError, InvalidInputError, ProviderError
from ..host.wire import session_id_input
from ..models import Conversation
from .agent import AgentResult
from .toolagent import is_summary

#: The longest text an end user may send in one turn, in characters.
MAX_INPUT_CHARS = 32_000


def _fields(body: Any, accepted: tuple[str, ...], first: str) -> dict[str, Any]:
    """``body`` as a JSON object holding only ``accepted`` fields (``first`` names the field
    at fault when the body is not an object)."""
    if not isinstance(body, dict):
        raise InvalidInputError(first, "the body is a JSON object")
    extra = sorted(key for key in body if key not in accepted)
    if extra:
        raise InvalidInputError(extra[0], f"is not accepted here (only {', '.join(accepted)})")
    return body


def send_input(body: Any) -> str:
    """The input of a ``send`` (``{"input": "<text>"}``) from an end user: text, never
    history, tool results or files, so nothing else is accepted."""
    return text_input(_fields(body, ("input", "type"), "input").get("input"))


def fork_input(body: Any) -> tuple[str | None, int | None]:
    """``{"target"?, "message_count"?}``: a target the API can address afterwards (no
    ``/``), or ``None`` for the server to name one."""
    fields = _fields(body, ("target", "message_count"), "target")
    target = fields.get("target")
    if target is not None:
        if not isinstance(target, str) or not target or "/" in target:
            raise InvalidInputError("target", "must be a conversation id: text without '/'")
        target = session_id_input(target, "target")
    count = fields.get("message_count")
    return target, None if count is None else message_count(count)


def truncate_input(body: Any) -> int:
    """``{"message_count"}``."""
    return message_count(_fields(body, ("message_count",), "message_count").get("message_count"))


def text_input(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInputError("input", "must be text")
    if not value.strip():
        raise InvalidInputError("input", "must not be empty")
    if len(value) > MAX_INPUT_CHARS:
        raise InvalidInputError("input", f"must be at most {MAX_INPUT_CHARS} characters")
    problem = text_problem(value)
    if problem:
        raise InvalidInputError("input", problem)
    return value


def message_count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise InvalidInputError("message_count", "must be a whole number, 0 or more")
    return value


def conversation_json(header: Conversation) -> dict[str, Any]:
    return {
        "id": header.id,
        "version": header.version,
        "turns": header.turns,
        "pending": header.pending is not None,
        "forked_from": header.forked_from,
        "created_at": header.created_at.isoformat(),
        "updated_at": header.updated_at.isoformat(),
    }


def turn_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the last turn: from its user message on."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and not is_summary(message):
            return messages[index:]
    return []


def result_json(result: AgentResult, header: Conversation | None) -> dict[str, Any]:
    return {
        "text": result.text,
        "run_id": result.run_id,
        "usage": result.usage,
        "cached": result.cached,
        "messages": turn_messages(result.messages),
        "conversation": conversation_json(header) if header is not None else None,
    }


def run_failure(error: BaseException) -> Exception:
    """What to raise for a run that failed (the conversation is unchanged): a provider's error
    as it is, any other as :class:`AgentFailedError` (``failures`` says what a client sees)."""
    if isinstance(error, ProviderError):
        return error
    failed = AgentFailedError("the conversation's agent failed on a turn")
    failed.__cause__ = error
    return failed
