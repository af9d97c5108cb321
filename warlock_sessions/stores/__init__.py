"""Session stores: one module per backend, all passing the same conformance suite.

===============  =================================================  =========================
class            keeps sessions in                                  needs
===============  =================================================  =========================
``DjangoStore``  the ``warlock_sessions.Session`` model (default)   a configured Django
``MemoryStore``  JSON text in this process                          nothing
``SqliteStore``  a standalone SQLite file (stdlib ``sqlite3``)      nothing
``FileStore``    one JSON file per session in a directory           nothing
``RedisStore``   one Redis hash per session                         the ``redis`` extra
===============  =================================================  =========================

Backends are imported on first use, so ``from warlock_sessions.stores import SqliteStore``
works in a script that never configures Django.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.lazy import lazy_backends
from ..conf import warlock_settings
from .base import Store

if TYPE_CHECKING:
    from .db import DjangoStore
    from .file import FileStore
    from .memory import MemoryStore
    from .redis import RedisStore
    from .sqlite import SqliteStore

_BACKENDS = {
    "DjangoStore": ".db",
    "MemoryStore": ".memory",
    "SqliteStore": ".sqlite",
    "FileStore": ".file",
    "RedisStore": ".redis",
}

__all__ = [
    "DjangoStore",
    "FileStore",
    "MemoryStore",
    "RedisStore",
    "SqliteStore",
    "Store",
    "default_store",
]


__getattr__ = lazy_backends(__name__, _BACKENDS)


def default_store() -> Store:
    """The Store configured by ``WARLOCK_SESSIONS["STORE"]``, built once and shared (every
    backend is safe across threads): a ``MemoryStore`` keeps its sessions between calls, and a
    ``SqliteStore`` or ``RedisStore`` opens its connection or pool once. Built again after the
    settings change (``override_settings`` in tests)."""
    store: Store = warlock_settings.built("STORE")
    return store
