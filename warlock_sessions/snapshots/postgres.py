"""PostgresSnapshotStore: snapshots in PostgreSQL through a psycopg pool, connection or conninfo."""

from __future__ import annotations

from typing import Any

from ..backends.postgres import check_connection, cursor_on, like_prefix
from ..backends.sql import check_sql_name
from .base import SnapshotStore


class PostgresSnapshotStore(SnapshotStore):
    """One row per snapshot in ``table`` (``jsonb`` payload), on ``connection``: a
    ``psycopg.Connection`` or a ``psycopg_pool.ConnectionPool`` the caller owns. The table is
    never created for you: run :meth:`schema`'s DDL (a migration of yours, or ``psql``).
    An unsafe table name is refused when the store is built."""

    def __init__(self, connection: Any, *, table: str = "warlock_supervisor_snapshots") -> None:
        self.connection = check_connection(connection, "PostgresSnapshotStore")
        self.table = check_sql_name(table)

    def schema(self) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {self.table} (\n"
            "  run_id    TEXT PRIMARY KEY,\n"
            "  payload   JSONB NOT NULL,\n"
            "  saved_at  TIMESTAMPTZ NOT NULL DEFAULT now()\n"
            ");\n"
            f"CREATE INDEX IF NOT EXISTS idx_{self.table}_saved_at ON {self.table} (saved_at);"
        )

    def _cursor(self) -> Any:
        return cursor_on(self.connection)

    def _read(self, key: str) -> tuple[object, int] | None:
        with self._cursor() as cursor:
            cursor.execute(f"SELECT payload FROM {self.table} WHERE run_id = %s", (key,))
            row = cursor.fetchone()
        return None if row is None else (row[0], 0)

    def _write(self, key: str, text: str, expected: int | None) -> None:
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self.table} (run_id, payload, saved_at) VALUES (%s, %s::jsonb, "
                "now()) ON CONFLICT (run_id) DO UPDATE SET payload = EXCLUDED.payload, "
                "saved_at = EXCLUDED.saved_at",
                (key, text),
            )

    def _remove(self, key: str) -> bool:
        with self._cursor() as cursor:
            cursor.execute(f"DELETE FROM {self.table} WHERE run_id = %s", (key,))
            return bool(cursor.rowcount)

    def _keys(self, prefix: str) -> list[str]:
        with self._cursor() as cursor:
            cursor.execute(
                f"SELECT run_id FROM {self.table} WHERE run_id LIKE %s ESCAPE '\\'",
                (like_prefix(prefix),),
            )
            return [row[0] for row in cursor.fetchall()]
