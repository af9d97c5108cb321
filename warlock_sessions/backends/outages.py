"""Faults of the services a call depends on, told apart from bugs, and logged in bounded lines.

A database restart, a saturated pool, a Redis server going away: each is met by every request
and turn while it lasts. ``unavailable`` says whether an error is such a fault (so callers
answer ``503 unavailable`` and retry later rather than report a bug), and ``OutageLog`` logs
one outage as a first line with its traceback and a last line when it is over, however many
calls fail in between (one a minute says it goes on)."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

from django.db import InterfaceError, OperationalError

from ..errors import ServiceUnavailableError

#: Seconds a client is told to wait (``Retry-After``) when a service is unavailable.
RETRY_AFTER = 2


def _redis_errors() -> tuple[type[BaseException], ...]:
    try:
        import redis
    except ImportError:
        return ()
    return (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)


#: What redis-py raises when its server is away (empty without redis-py).
REDIS_ERRORS = _redis_errors()

#: SQLSTATEs of a server that is going away, starting or full, besides class 08 (connection
#: exceptions): admin or crash shutdown, cannot connect now, too many connections, out of
#: memory or disk. Not a statement time-out, a lock not available, a missing table: those
#: are the statement's, and a retry would meet them again.
_UNAVAILABLE_STATES = {"57P01", "57P02", "57P03", "53300", "53100", "53200", "53400"}


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` means a service the call needs is down, unreachable or saturated (as
    opposed to a bug or bad data): a lost or refused database connection, a full pool, a
    server shutting down, SQLite's busy database; Redis' connection errors and time-outs. (A
    plain ``ConnectionError`` is not one: it is what a deliverer or a tool raises about its
    own channel.)"""
    if isinstance(error, (ServiceUnavailableError, InterfaceError, *REDIS_ERRORS)):
        return True
    if not isinstance(error, OperationalError):
        return _database_driver_unavailable(error)
    cause = error.__cause__
    return cause is None or _database_driver_unavailable(cause)


def _database_driver_unavailable(error: BaseException) -> bool:
    if isinstance(error, sqlite3.OperationalError):
        return "locked" in str(error) or "busy" in str(error)
    kind = type(error)
    if kind.__module__.partition(".")[0] not in ("psycopg", "psycopg_pool"):
        return False
    if kind.__name__ in (
        "InterfaceError",
        "ConnectionTimeout",
        "PoolTimeout",
        "TooManyRequests",
        "PoolClosed",
    ):
        return True
    state = getattr(error, "sqlstate", None)
    if state is None:  # refused, reset, closed: no server answered with a code
        return kind.__name__ == "OperationalError"
    return str(state).startswith("08") or state in _UNAVAILABLE_STATES


class OutageLog:
    """One outage of ``what``, logged on ``logger``: the first failure with its traceback, at
    most one line a minute while it goes on, and one line when a call succeeds after it.
    Failures and successes that alternate (a pool that is only just full) are one outage:
    within a minute of the last line about ``what``, a failure is counted, not logged."""

    REMIND_EVERY = 60.0

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self.logger = logger
        self.what = what
        self._lock = threading.Lock()
        self._failures = 0
        self._since = 0.0
        self._logged = -self.REMIND_EVERY  # when the last line about ``what`` was written
        self._told = False  # whether this outage's failures were logged

    def failed(self, error: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            if not self._failures:
                self._since = now
            self._failures += 1
            if now - self._logged < self.REMIND_EVERY:
                return  # counted; the next line says how many
            self._logged = now
            first, self._told = not self._told, True
            failures, since = self._failures, self._since
        if first:
            self.logger.warning("%s failed: %s", self.what, error, exc_info=error)
        else:
            self.logger.warning(
                "%s still failing: %d failures in %.0f s, the last: %s",
                self.what,
                failures,
                now - since,
                error,
            )

    def succeeded(self) -> None:
        if not self._failures:  # the usual case, without the lock
            return
        with self._lock:
            failures, since, told = self._failures, self._since, self._told
            self._failures, self._told = 0, False
            if told:
                self._logged = time.monotonic()
        if told:
            self.logger.warning(
                "%s works again after %d failures in %.1f s",
                self.what,
                failures,
                time.monotonic() - since,
            )


class RepeatFilter(logging.Filter):
    """A logging filter for libraries that log every failed attempt during an outage (the
    Redis channel layer's receive task once a second, psycopg_pool each reconnection): a
    message passes at most once a minute, and the next one that passes says how many were
    held back. ``LOGGING["filters"]``: ``{"()": "warlock_sessions.backends.outages.RepeatFilter"}``
    (docs/deployment.md)."""

    def __init__(self, every: float = OutageLog.REMIND_EVERY) -> None:
        super().__init__()
        self.every = every
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        with self._lock:
            passed, held = self._seen.get(key, (-self.every, 0))
            if now - passed < self.every:
                self._seen[key] = (passed, held + 1)
                return False
            self._seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like it in the last minute, not shown)"
        return True
