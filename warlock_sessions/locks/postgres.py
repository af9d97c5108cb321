"""PostgresAdvisoryLock: a session-level advisory lock on a connection of its own."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from ..errors import SessionLockTimeout
from .base import AbortSignal, SessionLock, aborted_error

T = TypeVar("T")


def lock_id(key: str) -> int:
    """The 64-bit advisory lock id of ``key`` (a hash: distinct keys could, in theory,
    share one, and would then serialize each other, never run together)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big", signed=True)


class PostgresAdvisoryLock(SessionLock):
    """``pg_try_advisory_lock`` on a connection opened for the holder from ``conninfo`` (never
    the transaction-level variant): PostgreSQL frees the lock when that connection ends, so a
    killed holder releases it at once. Waiters poll every 50-100 ms."""

    def __init__(self, conninfo: str, *, timeout: float | None = None) -> None:
        self.conninfo = conninfo
        self.timeout = timeout

    def with_lock(self, key: str, fn: Callable[[], T], *, signal: AbortSignal | None = None) -> T:
        import psycopg

        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        with psycopg.connect(self.conninfo, autocommit=True) as connection:
            while not connection.execute(
                "SELECT pg_try_advisory_lock(%s)", [lock_id(key)]
            ).fetchone()[0]:  # type: ignore[index]
                if signal is not None and signal.aborted:
                    raise aborted_error(signal, key)
                if deadline is not None and time.monotonic() >= deadline:
                    raise SessionLockTimeout(key, self.timeout or 0)
                pause = random.uniform(0.05, 0.1)
                (signal.wait if signal is not None else threading.Event().wait)(pause)
            try:
                return fn()
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", [lock_id(key)])
