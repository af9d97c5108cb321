"""Faults of the services a call depends on, told apart from bugs, and logged in bounded lines.

A database restart, a saturated pool, a Redis server going away: each is met by every request
and turn while it lasts. ``unavailable`` says whether an error is such a fault (so callers
answer ``503 unavailable`` and retry later rather than report a bug), and ``OutageLog`` logs
one outage as a first line with its traceback and a last line when it is over, however many
calls fail in between (one a minute says it goes on)."""

from __future__ import annotations

import logging
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


def _psycopg_errors() -> tuple[type[BaseException], ...]:
    try:
        import psycopg
    except ImportError:
        return ()
    # Outside Django's wrappers (the event loop's connections) psycopg's own errors arrive;
    # psycopg_pool's PoolTimeout is one of its OperationalErrors.
    return (psycopg.OperationalError, psycopg.InterfaceError)


_UNAVAILABLE: tuple[type[BaseException], ...] = (
    ServiceUnavailableError,
    OperationalError,
    InterfaceError,
    *_redis_errors(),
    *_psycopg_errors(),
)


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` means a service the call needs is down, unreachable or saturated (as
    opposed to a bug or bad data): the database's connection and pool errors, and Redis'
    connection errors and time-outs. (A plain ``ConnectionError`` is not one: it is what a
    deliverer or a tool raises about its own channel.)"""
    return isinstance(error, _UNAVAILABLE)


class OutageLog:
    """One outage of ``what``, logged on ``logger``: the first failure with its traceback, at
    most one line a minute while it goes on, and one line when the next call succeeds."""

    REMIND_EVERY = 60.0

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self.logger = logger
        self.what = what
        self._lock = threading.Lock()
        self._failures = 0
        self._since = 0.0
        self._reminded = 0.0

    @property
    def ongoing(self) -> bool:
        return self._failures > 0

    def failed(self, error: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self._failures += 1
            first = self._failures == 1
            remind = not first and now - self._reminded >= self.REMIND_EVERY
            if first:
                self._since = self._reminded = now
            elif remind:
                self._reminded = now
            failures, since = self._failures, self._since
        if first:
            self.logger.warning("%s failed: %s", self.what, error, exc_info=error)
        elif remind:
            self.logger.warning(
                "%s still failing after %d attempts in %.0f s: %s",
                self.what,
                failures,
                now - since,
                error,
            )

    def succeeded(self) -> None:
        if not self._failures:  # the usual case, without the lock
            return
        with self._lock:
            failures, since, self._failures = self._failures, self._since, 0
        if failures:
            self.logger.warning(
                "%s works again after %d failed attempts in %.1f s",
                self.what,
                failures,
                time.monotonic() - since,
            )
