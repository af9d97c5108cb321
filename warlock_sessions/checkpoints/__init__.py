"""Checkpoint stores: an orchestrator's per-session state, one appended row per turn
(docs/snapshots.md#checkpoints). One conformance suite runs against all four."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.lazy import lazy_backends
from ..conf import warlock_settings
from .base import CheckpointStore, DuplicateCheckpointError

if TYPE_CHECKING:
    from .db import DjangoCheckpointStore
    from .memory import MemoryCheckpointStore
    from .postgres import PostgresCheckpointStore
    from .redis import RedisCheckpointStore

_BACKENDS = {
    "DjangoCheckpointStore": ".db",
    "MemoryCheckpointStore": ".memory",
    "PostgresCheckpointStore": ".postgres",
    "RedisCheckpointStore": ".redis",
}

__all__ = [
    "CheckpointStore",
    "DjangoCheckpointStore",
    "DuplicateCheckpointError",
    "MemoryCheckpointStore",
    "PostgresCheckpointStore",
    "RedisCheckpointStore",
    "default_checkpoint_store",
]


__getattr__ = lazy_backends(__name__, _BACKENDS)


def default_checkpoint_store() -> CheckpointStore | None:
    """The store of ``WARLOCK_SESSIONS["CHECKPOINT_STORE"]``, built once, or ``None`` when
    none is configured."""
    store: CheckpointStore | None = warlock_settings.built("CHECKPOINT_STORE")
    return store
