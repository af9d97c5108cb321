"""MemoryStore: sessions as JSON text in this process, for tests and single-process scripts."""

from __future__ import annotations

import threading

from ..engine.session import Session, decode_session, encode_session
from .base import (
    Store,
    check_expected_version,
    check_session_id,
    check_stored_version,
    saved_copy,
    session_id_of,
)


class MemoryStore(Store):
    """Holds each session as JSON text, so no caller can ever mutate stored state.

    Thread-safe: the version check and the write happen under one lock.
    """

    def __init__(self) -> None:
        self._rows: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def load(self, session_id: str) -> Session | None:
        row = self._rows.get(check_session_id(session_id))
        if row is None:
            return None
        version, text = row
        return decode_session(text, session_id, version)

    def save(self, session: Session, expected_version: int) -> Session:
        session_id = session_id_of(session)
        expected = check_expected_version(expected_version)
        text = encode_session(session, expected + 1)
        with self._lock:
            row = self._rows.get(session_id)
            check_stored_version(session_id, expected, None if row is None else row[0])
            self._rows[session_id] = (expected + 1, text)
        return saved_copy(session, expected + 1)

    def delete(self, session_id: str) -> bool:
        with self._lock:
            return self._rows.pop(check_session_id(session_id), None) is not None
