"""SqliteStore: sessions in a standalone SQLite file (stdlib), for scripts without Django."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import UTC, datetime

from ..backends.sql import check_sql_name, connect_private
from ..engine.session import Session
from ..errors import SessionConflictError
from .base import Store


class SqliteStore(Store):
    """One row per session in ``table`` of the SQLite database at ``path``.

    The version check is the ``WHERE`` of one ``UPDATE`` (or an ``INSERT … ON CONFLICT DO
    NOTHING`` for version 0), so it holds across threads and processes sharing the file. A new
    database file is created with mode 0600 in directories created 0700: sessions hold
    personal data. ``":memory:"`` keeps everything in this process.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, table: str = "warlock_sessions", timeout: float = 5.0
    ) -> None:
        self.table = check_sql_name(table)
        self.path = str(path)
        self._connection = connect_private(self.path, timeout)
        self._lock = threading.Lock()
        self._connection.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
            " blob TEXT NOT NULL, updated_at TEXT NOT NULL)"
        )

    def close(self) -> None:
        self._connection.close()

    def _execute(self, sql: str, params: tuple[object, ...]) -> sqlite3.Cursor:
        with self._lock:
            return self._connection.execute(sql.format(table=self.table), params)

    def _read(self, session_id: str) -> tuple[str, int] | None:
        row = self._execute("SELECT blob, version FROM {table} WHERE id = ?", (session_id,))
        found = row.fetchone()
        return None if found is None else (found[0], found[1])

    def _write(self, session: Session, expected: int, text: str) -> None:
        session_id = session["id"]
        now = datetime.now(UTC).isoformat()
        if expected == 0:
            written = self._execute(
                "INSERT INTO {table} (id, version, blob, updated_at) VALUES (?, 1, ?, ?)"
                " ON CONFLICT (id) DO NOTHING",
                (session_id, text, now),
            ).rowcount
        else:
            written = self._execute(
                "UPDATE {table} SET version = ?, blob = ?, updated_at = ?"
                " WHERE id = ? AND version = ?",
                (expected + 1, text, now, session_id, expected),
            ).rowcount
        if written != 1:
            row = self._execute(
                "SELECT version FROM {table} WHERE id = ?", (session_id,)
            ).fetchone()
            raise SessionConflictError(session_id, expected, None if row is None else row[0])

    def _remove(self, session_id: str) -> bool:
        return self._execute("DELETE FROM {table} WHERE id = ?", (session_id,)).rowcount == 1
