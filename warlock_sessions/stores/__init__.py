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

import threading
from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name in _BACKENDS:
        return getattr(import_module(_BACKENDS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_default: Store | None = None
_default_lock = threading.Lock()


def default_store() -> Store:
    """The Store configured by ``WARLOCK_SESSIONS["STORE"]`` and ``["STORE_OPTIONS"]``, built
    once and shared (every backend is safe across threads): a ``MemoryStore`` keeps its
    sessions between calls, and a ``SqliteStore`` or ``RedisStore`` opens its connection or
    pool once. Built again after the settings change (``override_settings`` in tests)."""
    global _default
    with _default_lock:
        if _default is None:
            from ..conf import warlock_settings

            _default = warlock_settings.STORE(**warlock_settings.STORE_OPTIONS)
        return _default


def forget_default_store() -> None:
    """Drop the shared default store; the next ``default_store()`` builds it again."""
    global _default
    with _default_lock:
        _default = None
