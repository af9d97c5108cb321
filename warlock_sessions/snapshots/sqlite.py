"""SqliteSnapshotStore: snapshots in a SQLite file (stdlib), for scripts without Django."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import UTC, datetime

from ..backends.sql import check_sql_name, connect_private
from .base import SnapshotStore


class SqliteSnapshotStore(SnapshotStore):
    """One row per snapshot in ``table``, at ``path`` (a file created 0600 in directories
    created 0700, before SQLite opens it) or on a caller's ``database`` connection, which the
    store never closes or chmods. The table is created on first use unless
    ``create_table=False``; ``list`` matches prefixes with ``substr``, not the
    case-insensitive ``LIKE``."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        database: sqlite3.Connection | None = None,
        table: str = "warlock_snapshots",
        create_table: bool = True,
        timeout: float = 5.0,
    ) -> None:
        if (path is None) == (database is None):
            raise ValueError("give the SqliteSnapshotStore a path or a database, not both")
        self.table = check_sql_name(table)
        self._owned = database is None
        self._connection = database if database is not None else connect_private(str(path), timeout)
        self._lock = threading.Lock()
        if create_table:
            with self._lock:
                self._connection.executescript(self.schema())

    def schema(self) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {self.table} (run_id TEXT PRIMARY KEY, "
            "payload TEXT NOT NULL, saved_at TEXT NOT NULL);\n"
            f"CREATE INDEX IF NOT EXISTS idx_{self.table}_saved_at ON {self.table} (saved_at);"
        )

    def close(self) -> None:
        if self._owned:
            self._connection.close()

    def _execute(self, sql: str, params: tuple[object, ...]) -> sqlite3.Cursor:
        with self._lock:
            return self._connection.execute(sql.format(table=self.table), params)

    def _read(self, key: str) -> tuple[str, int] | None:
        row = self._execute("SELECT payload FROM {table} WHERE run_id = ?", (key,)).fetchone()
        return None if row is None else (row[0], 0)

    def _write(self, key: str, text: str, expected: int | None) -> None:
        self._execute(
            "INSERT INTO {table} (run_id, payload, saved_at) VALUES (?, ?, ?) ON CONFLICT(run_id)"
            " DO UPDATE SET payload = excluded.payload, saved_at = excluded.saved_at",
            (key, text, datetime.now(UTC).isoformat()),
        )

    def _remove(self, key: str) -> bool:
        return self._execute("DELETE FROM {table} WHERE run_id = ?", (key,)).rowcount > 0

    def _keys(self, prefix: str) -> list[str]:
        rows = self._execute(
            "SELECT run_id FROM {table} WHERE substr(run_id, 1, length(?1)) = ?1", (prefix,)
        )
        return [row[0] for row in rows]
