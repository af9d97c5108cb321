"""Session locks (docs/locks.md): one caller at a time per key, in this process or across
processes and hosts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.lazy import lazy_backends
from .base import AbortSignal, Lease, LeasedLock, NoLock, SessionLock, check_lease
from .memory import InProcessLock

if TYPE_CHECKING:
    from .db import DatabaseLock
    from .postgres import PostgresAdvisoryLock
    from .redis import RedisLock

_BACKENDS = {
    "DatabaseLock": ".db",
    "PostgresAdvisoryLock": ".postgres",
    "RedisLock": ".redis",
}

__all__ = [
    "AbortSignal",
    "DatabaseLock",
    "InProcessLock",
    "Lease",
    "LeasedLock",
    "NoLock",
    "PostgresAdvisoryLock",
    "RedisLock",
    "SessionLock",
    "check_lease",
]

__getattr__ = lazy_backends(__name__, _BACKENDS)
