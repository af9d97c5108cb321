"""MemorySnapshotStore: snapshots as JSON text in this process (tests, scripts)."""

from __future__ import annotations

import threading

from .base import SnapshotStore


class MemorySnapshotStore(SnapshotStore):
    """Keeps each snapshot's JSON text and version; copies on save and load, and saves
    conditionally, like the Django store."""

    versioned = True

    def __init__(self) -> None:
        self._rows: dict[str, tuple[str, int]] = {}
        self._lock = threading.Lock()

    def _read(self, key: str) -> tuple[str, int] | None:
        return self._rows.get(key)

    def _write(self, key: str, text: str, expected: int | None) -> None:
        with self._lock:
            stored = self._rows.get(key)
            version = stored[1] if stored else 0
            if expected is not None and version != expected:
                raise self.conflict(key, expected, version if stored else None)
            self._rows[key] = (text, version + 1)

    def _remove(self, key: str) -> bool:
        with self._lock:
            return self._rows.pop(key, None) is not None

    def _keys(self, prefix: str) -> list[str]:
        return list(self._rows)
