"""Checkpoint stores: an orchestrator's per-session state, one appended row per turn
(docs/snapshots.md#checkpoints). One conformance suite runs against all four."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..stores.lazy import lazy_backends
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
]


__getattr__ = lazy_backends(__name__, _BACKENDS)
