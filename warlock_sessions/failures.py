"""What a client is told of an error, the same over HTTP and a socket: read from the error's
class (``errors``), or, for a service that did not answer, ``unavailable``. Each transport has
one handler that sends it in its own shape: ``api.errors.exception_handler`` (a status and a
JSON body) and ``realtime.base.WarlockConsumer`` (an ``error`` frame, or a close)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from .backends.outages import RETRY_AFTER, unavailable
from .errors import ServiceUnavailableError, WarlockError

logger = logging.getLogger("warlock_sessions.failures")


@dataclass(frozen=True)
class Failure:
    """An error as a client sees it: ``code`` and ``detail`` with ``fields`` beside them, the
    HTTP ``status``; a socket closes with ``close_code`` instead, when there is one."""

    status: int
    code: str
    detail: str
    fields: dict[str, Any] = field(default_factory=dict)
    close_code: int | None = None
    outage: bool = False


#: Any outage of the database, Redis or the channel layer: nothing was changed, try again.
OUTAGE = Failure(
    503,
    "unavailable",
    ServiceUnavailableError.public_detail or "",
    {"retry_after": RETRY_AFTER},
    outage=True,
)


def client_failure(error: BaseException) -> Failure | None:
    """``error`` as its client is told of it; ``None`` for an error that is a bug (the
    transport logs it and answers a server error)."""
    if isinstance(error, WarlockError) and error.default_code is not None:
        return Failure(
            error.status_code,
            error.default_code,
            error.client_detail(),
            error.client_fields(),
            error.close_code,
            outage=unavailable(error),
        )
    return OUTAGE if unavailable(error) else None


def log_for_operators(error: BaseException) -> None:
    """Log what a client is told of only in general terms (``public_detail``): which agent
    has no model, which value did not open, what the provider said."""
    if isinstance(error, WarlockError) and error.logged_as:
        logger.log(error.log_level, "%s: %s", error.logged_as, error, exc_info=error)
