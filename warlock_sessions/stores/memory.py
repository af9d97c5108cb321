"""MemoryStore: sessions as JSON text in this process, for tests and single-process scripts."""

from __future__ import annotations

import threading

from ..engine.session import Session
from .base import (
    Store,
    check_stored_version,
)


class MemoryStore(Store):
    """Holds each session as JSON text, so no caller can ever mutate stored state.

    Thread-safe: the version check and the write happen under one lock.
    """

    def __init__(self) -> None:
        self._rows: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def _read(self, session_id: str) -> tuple[str, int] | None:
        row = self._rows.get(session_id)
        return None if row is None else (row[1], row[0])

    def _write(self, session: Session, expected: int, text: str) -> None:
        session_id = session["id"]
        with self._lock:
            row = self._rows.get(session_id)
            check_stored_version(session_id, expected, None if row is None else row[0])
            self._rows[session_id] = (expected + 1, text)

    def _remove(self, session_id: str) -> bool:
        with self._lock:
            return self._rows.pop(session_id, None) is not None
