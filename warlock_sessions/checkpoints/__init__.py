"""Checkpoint stores: an orchestrator's per-session state, one appended row per turn
(docs/snapshots.md#checkpoints). One conformance suite runs against all four."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name in _BACKENDS:
        return getattr(import_module(_BACKENDS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
