"""The SessionLock contract (docs/locks.md): ``with_lock(key, fn, signal=None)`` runs ``fn``
while holding ``key``. Calls on one key run one at a time; different keys never contend; the
lock is released even when ``fn`` raises. ``signal`` aborts only the *wait*: a waiter whose
signal is aborted raises the signal's reason (``SessionLockAborted`` by default), and the
others are unaffected; a free lock is taken even with an aborted signal (``fn`` owns
cancellation)."""

from __future__ import annotations

import logging
import random
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from ..conf import Expected, expect
from ..errors import LeaseLostError, SessionLockAborted, SessionLockTimeout

logger = logging.getLogger("warlock_sessions.locks")

#: Seconds between two tries of a renewal that failed.
RENEW_RETRY = 0.5

T = TypeVar("T")


class AbortSignal:
    """A thread-safe abort flag with a reason, like the web's ``AbortSignal``: ``abort()``
    wakes every wait that watches it."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.reason: BaseException | None = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self, reason: BaseException | None = None) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_abort(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the signal is aborted (at once if it is already)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


def aborted_error(signal: AbortSignal, key: str) -> BaseException:
    return signal.reason if signal.reason is not None else SessionLockAborted(key)


class Lease:
    """A lock as its holder holds it: ``lost`` once a renewal failed (the service did not
    answer, or another holder took the key over after the lease ran out)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.lost = threading.Event()

    def check(self) -> None:
        """Raise ``LeaseLostError`` if the lease was lost: what the holder would write now
        could overwrite the next holder's work."""
        if self.lost.is_set():
            raise LeaseLostError(self.key)


_held = threading.local()


@contextmanager
def holding(lease: Lease) -> Iterator[Lease]:
    """``lease`` is this thread's innermost held lease while the block runs."""
    stack: list[Lease] = _held.__dict__.setdefault("leases", [])
    stack.append(lease)
    try:
        yield lease
    finally:
        stack.remove(lease)


def check_lease() -> None:
    """Before a write the lock protects: ``LeaseLostError`` if this thread's innermost lease
    (a ``LeasedLock``'s) was lost meanwhile; nothing for other locks."""
    stack = getattr(_held, "leases", None)
    if stack:
        stack[-1].check()


class SessionLock(ABC):
    @abstractmethod
    def with_lock(
        self, key: str, fn: Callable[[], T], *, signal: AbortSignal | None = None
    ) -> T: ...


class NoLock(SessionLock):
    """``lock=False``: ``fn`` runs at once, serialized with nothing."""

    def with_lock(self, key: str, fn: Callable[[], T], *, signal: AbortSignal | None = None) -> T:
        return fn()


class LeasedLock(SessionLock):
    """A lock held in a shared service for ``ttl`` seconds at a time, renewed every ``ttl/3``
    while ``fn`` runs: a holder that dies stops renewing and is taken over after ``ttl``.
    Waiters poll every 50-100 ms (with jitter) until the lock is theirs, the signal aborts or
    ``timeout`` passes (``SessionLockTimeout``). Waiters are not served in arrival order
    across processes. A backend implements three calls on ``(key, token)``.

    A renewal that fails marks the lease lost and stops: ``check_lease()`` (which conversation
    sessions call before they write) then raises ``LeaseLostError``. That spares most late
    writes; the version every conditional store checks refuses the rest."""

    def __init__(self, *, ttl: float = 30.0, timeout: float | None = None) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl is seconds > 0, not {ttl!r}")
        self.ttl = ttl
        self.timeout = timeout

    @abstractmethod
    def _try_acquire(self, key: str, token: str) -> bool:
        """Take ``key`` for ``token`` if it is free or its holder's lease ran out."""

    @abstractmethod
    def _renew(self, key: str, token: str) -> bool:
        """Extend the lease, if ``token`` still holds ``key``."""

    @abstractmethod
    def _release(self, key: str, token: str) -> None:
        """Free ``key`` if ``token`` holds it; nothing else."""

    def with_lock(self, key: str, fn: Callable[[], T], *, signal: AbortSignal | None = None) -> T:
        token = secrets.token_hex(16)
        self._acquire(key, token, signal)
        stop = threading.Event()
        lease = Lease(key)
        renewer = threading.Thread(target=self._keep, args=(lease, token, stop), daemon=True)
        renewer.start()
        try:
            with holding(lease):
                return fn()
        finally:
            stop.set()
            renewer.join()
            self._release(key, token)

    def _acquire(self, key: str, token: str, signal: AbortSignal | None) -> None:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while not self._try_acquire(key, token):
            if signal is not None and signal.aborted:
                raise aborted_error(signal, key)
            if deadline is not None and time.monotonic() >= deadline:
                raise SessionLockTimeout(key, self.timeout or 0)
            pause = random.uniform(0.05, 0.1)
            if signal is not None:
                signal.wait(pause)
            else:
                time.sleep(pause)

    def _keep(self, lease: Lease, token: str, stop: threading.Event) -> None:
        """Renew every third of the lease. A renewal that fails (the service did not answer)
        is tried again, quickly, until the lease would have run out; one that finds another
        holder marks the lease lost at once."""
        renewed_at = time.monotonic()
        pause = self.ttl / 3
        while not stop.wait(pause):
            try:
                if not self._renew(lease.key, token):
                    break  # another holder has it
            except Exception:
                logger.warning("could not renew the lock on %r", lease.key, exc_info=True)
                if time.monotonic() - renewed_at + RENEW_RETRY < self.ttl:
                    pause = min(RENEW_RETRY, self.ttl / 10)
                    continue
                break
            renewed_at, pause = time.monotonic(), self.ttl / 3
        else:
            return
        logger.warning("the lock on %r was lost while held", lease.key)
        lease.lost.set()


expect("CONVERSATION_LOCK", Expected(SessionLock, "a SessionLock class", "warlock_sessions.E024"))
