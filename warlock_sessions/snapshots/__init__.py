"""Snapshot stores: where workflow, supervisor and agent runs keep their state between steps,
so a run resumes after a crash (docs/snapshots.md). One conformance suite runs against all.

======================== ================================================ ===================
class                    keeps snapshots in                               needs
======================== ================================================ ===================
``DjangoSnapshotStore``  the ``warlock_sessions.Snapshot`` model          a configured Django
``MemorySnapshotStore``  this process                                     nothing
``PostgresSnapshotStore`` a table, on your psycopg connection or pool     the ``postgres`` extra
``RedisSnapshotStore``   one Redis string per snapshot                    the ``redis`` extra
``FileSnapshotStore``    one JSON file per snapshot in a directory        nothing (POSIX)
``SqliteSnapshotStore``  a SQLite file                                    nothing
======================== ================================================ ===================

Backends are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.lazy import lazy_backends
from ..conf import warlock_settings
from ..errors import (
    ConditionalSaveUnsupportedError,
    InvalidSnapshotError,
    SnapshotCorruptError,
)
from .base import SnapshotStore

if TYPE_CHECKING:
    from .db import DjangoSnapshotStore
    from .file import FileSnapshotStore
    from .memory import MemorySnapshotStore
    from .postgres import PostgresSnapshotStore
    from .redis import RedisSnapshotStore
    from .sqlite import SqliteSnapshotStore

_BACKENDS = {
    "DjangoSnapshotStore": ".db",
    "MemorySnapshotStore": ".memory",
    "PostgresSnapshotStore": ".postgres",
    "RedisSnapshotStore": ".redis",
    "FileSnapshotStore": ".file",
    "SqliteSnapshotStore": ".sqlite",
    # The checkpoint stores are importable from here too (the public path the app's users
    # were given); they build on this package, a layer above it, so reached only when asked.
    **dict.fromkeys(
        [
            "CheckpointStore",
            "DjangoCheckpointStore",
            "MemoryCheckpointStore",
            "PostgresCheckpointStore",
            "RedisCheckpointStore",
        ],
        "warlock_sessions.checkpoints",
    ),
}

__all__ = [
    "CheckpointStore",
    "ConditionalSaveUnsupportedError",
    "DjangoCheckpointStore",
    "DjangoSnapshotStore",
    "FileSnapshotStore",
    "InvalidSnapshotError",
    "MemoryCheckpointStore",
    "MemorySnapshotStore",
    "PostgresCheckpointStore",
    "PostgresSnapshotStore",
    "RedisCheckpointStore",
    "RedisSnapshotStore",
    "SnapshotCorruptError",
    "SnapshotStore",
    "SqliteSnapshotStore",
    "default_snapshot_store",
]


__getattr__ = lazy_backends(__name__, _BACKENDS)


def default_snapshot_store() -> SnapshotStore | None:
    """The store of ``WARLOCK_SESSIONS["SNAPSHOT_STORE"]``, built once, or ``None`` when none
    is configured: runs then skip their snapshot writes and cannot resume."""
    store: SnapshotStore | None = warlock_settings.built("SNAPSHOT_STORE")
    return store
