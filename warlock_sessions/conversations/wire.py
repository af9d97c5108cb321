"""Conversations as the API and the websockets speak them: what an end user may send (text
only), the JSON of a conversation and of a turn's result, and every failure as a status, a
stable code and a sentence. One place, so HTTP and websockets answer alike."""

from __future__ import annotations

import logging
from typing import Any

from ..backends.outages import RETRY_AFTER, unavailable
from ..engine import ProviderError
from ..engine.session import text_problem
from ..errors import (
    AgentDriftError,
    AgentExecutionError,
    AgentNotConfiguredError,
    InvalidInputError,
    LeaseLostError,
    NewVisitorsThrottledError,
    QuotaExceededError,
    ResumeInProgressError,
    RunCancelledError,
    SessionConflictError,
    SessionExistsError,
    SessionLockTimeout,
    SessionNotFoundError,
    ToolPairError,
)
from ..host.wire import provider_failure, session_id_input
from ..models import Conversation
from .agent import AgentResult
from .toolagent import is_summary

logger = logging.getLogger("warlock_sessions.conversations")

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


class ConversationFailure(Exception):
    """A failure as the API and the websockets report it."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.extra = extra


def run_failure(error: BaseException) -> ConversationFailure:
    """A run that failed (the conversation is unchanged)."""
    if isinstance(error, ProviderError):
        return ConversationFailure(
            503, error.code, provider_failure(error), retryable=error.retryable
        )
    logger.warning("a conversation turn failed", exc_info=error)
    return ConversationFailure(
        502, "agent-failed", "The agent failed; the conversation is unchanged. Send it again."
    )


#: Errors of the session's own, as (status, code).
_FAILURES: list[tuple[type[BaseException], int, str]] = [
    (InvalidInputError, 400, "invalid-input"),
    (ToolPairError, 400, "split-tool-pair"),
    (SessionNotFoundError, 404, "conversation-not-found"),
    (SessionExistsError, 409, "conversation-exists"),
    (SessionLockTimeout, 409, "conversation-busy"),
    (ResumeInProgressError, 409, "conversation-busy"),
    (QuotaExceededError, 403, "quota-exceeded"),
    (LeaseLostError, 409, "conversation-conflict"),
    (SessionConflictError, 409, "conversation-conflict"),
    (AgentDriftError, 409, "agent-drift"),
    (AgentExecutionError, 409, "not-resumable"),
    (RunCancelledError, 409, "run-cancelled"),
    (AgentNotConfiguredError, 503, "no-conversation-agent"),
]


def failure(error: BaseException) -> ConversationFailure | None:
    """``error`` as a reported failure, or ``None`` for an error that is a bug."""
    if isinstance(error, ConversationFailure):
        return error
    if isinstance(error, NewVisitorsThrottledError):
        return ConversationFailure(429, "throttled", str(error), retry_after=error.wait)
    for kind, status, code in _FAILURES:
        if isinstance(error, kind):
            extra = {"field": error.field} if isinstance(error, InvalidInputError) else {}
            return ConversationFailure(status, code, str(error), **extra)
    if isinstance(error, ProviderError):
        return run_failure(error)
    if unavailable(error):
        return ConversationFailure(
            503,
            "unavailable",
            "The service is temporarily unavailable; the conversation is unchanged. "
            "Send it again shortly.",
            retry_after=RETRY_AFTER,
        )
    return None
