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


def default_store() -> Store:
    """The Store configured by ``WARLOCK_SESSIONS["STORE"]`` and ``["STORE_OPTIONS"]``."""
    from ..conf import warlock_settings

    return warlock_settings.STORE(**warlock_settings.STORE_OPTIONS)
