"""InProcessLock: a FIFO per key among the threads of this process."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from ..errors import SessionLockTimeout
from .base import AbortSignal, SessionLock, aborted_error

T = TypeVar("T")


class _Waiter:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.granted = False


class InProcessLock(SessionLock):
    """Calls on one key run one at a time, in the order they arrived; a key's entry is
    dropped once nobody holds or awaits it. For one process; ``DatabaseLock``,
    ``RedisLock`` and ``PostgresAdvisoryLock`` serialize across processes. A waiter still
    waiting after ``timeout`` seconds (``None``: for ever) raises ``SessionLockTimeout``."""

    def __init__(self, *, timeout: float | None = None) -> None:
        self.timeout = timeout
        self._guard = threading.Lock()
        self._held: set[str] = set()
        self._queues: dict[str, deque[_Waiter]] = {}

    def with_lock(self, key: str, fn: Callable[[], T], *, signal: AbortSignal | None = None) -> T:
        self._acquire(key, signal)
        try:
            return fn()
        finally:
            self._release(key)

    def _acquire(self, key: str, signal: AbortSignal | None) -> None:
        with self._guard:
            if key not in self._held:
                self._held.add(key)  # free: taken, even with an aborted signal
                return
            if signal is not None and signal.aborted:
                raise aborted_error(signal, key)
            waiter = _Waiter()
            self._queues.setdefault(key, deque()).append(waiter)
        if signal is not None:
            signal.on_abort(waiter.event.set)
        timeout = self.timeout
        waiter.event.wait(timeout)
        with self._guard:
            if waiter.granted:
                return  # handed over: the lock is ours, aborted or not
            queue = self._queues[key]
            queue.remove(waiter)
            if not queue:
                del self._queues[key]
        if signal is not None and signal.aborted:
            raise aborted_error(signal, key)
        raise SessionLockTimeout(key, timeout or 0)

    def _release(self, key: str) -> None:
        with self._guard:
            queue = self._queues.get(key)
            if not queue:
                self._held.discard(key)
                return
            waiter = queue.popleft()
            if not queue:
                del self._queues[key]
            waiter.granted = True  # the key stays held: handed to the next in line
            waiter.event.set()
