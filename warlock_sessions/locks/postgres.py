"""PostgresAdvisoryLock: a session-level advisory lock on a connection of its own."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..backends.postgres import check_connection, connection_on
from ..errors import SessionLockTimeout
from .base import AbortSignal, SessionLock, aborted_error

T = TypeVar("T")


def lock_id(key: str) -> int:
    """The 64-bit advisory lock id of ``key`` (a hash: distinct keys could, in theory,
    share one, and would then serialize each other, never run together)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big", signed=True)


def _ask(connection: Any, statement: str, key: str) -> bool:
    """One statement about ``key``'s lock, committed: a pooled connection is not in autocommit,
    and a transaction left open would keep the connection idle in it while the lock is held."""
    row = connection.execute(statement, [lock_id(key)]).fetchone()
    if not connection.autocommit:
        connection.commit()
    return bool(row and row[0])


class PostgresAdvisoryLock(SessionLock):
    """``pg_try_advisory_lock`` on a connection the holder has to itself for the whole hold,
    borrowed from a ``psycopg_pool.ConnectionPool`` or opened from a conninfo string
    (``connection``), never the transaction-level variant:
    PostgreSQL frees the lock when that connection ends, so a killed holder releases it at
    once. Waiters poll every 50-100 ms."""

    def __init__(self, connection: Any, *, timeout: float | None = None) -> None:
        self.connection = check_connection(connection, "PostgresAdvisoryLock", own=True)
        self.timeout = timeout

    def with_lock(self, key: str, fn: Callable[[], T], *, signal: AbortSignal | None = None) -> T:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        with connection_on(self.connection) as connection:
            while not _ask(connection, "SELECT pg_try_advisory_lock(%s)", key):
                if signal is not None and signal.aborted:
                    raise aborted_error(signal, key)
                if deadline is not None and time.monotonic() >= deadline:
                    raise SessionLockTimeout(key, self.timeout or 0)
                pause = random.uniform(0.05, 0.1)
                (signal.wait if signal is not None else threading.Event().wait)(pause)
            try:
                return fn()
            finally:
                _ask(connection, "SELECT pg_advisory_unlock(%s)", key)
