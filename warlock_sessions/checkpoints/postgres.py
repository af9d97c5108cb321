"""PostgresCheckpointStore: checkpoint rows in PostgreSQL, on a caller's connection or pool."""

from __future__ import annotations

import builtins
import json
from typing import Any

from ..backends.postgres import check_connection, cursor_on, like_prefix
from ..backends.sql import check_sql_name
from .base import (
    COLUMNS,
    CheckpointStore,
    DuplicateCheckpointError,
    decode_route,
    encode_route,
)


class PostgresCheckpointStore(CheckpointStore):
    """``table`` (default ``warlock_orchestrator_sessions``) as :meth:`schema` creates it; the
    primary key is the append-only guard."""

    def __init__(self, connection: Any, *, table: str = "warlock_orchestrator_sessions") -> None:
        self.connection = check_connection(connection, "PostgresCheckpointStore")
        self.table = check_sql_name(table)

    def schema(self) -> str:
        t = self.table
        return (
            f"CREATE TABLE IF NOT EXISTS {t} (\n"
            "  orchestrator_name TEXT NOT NULL, session_id TEXT NOT NULL, "
            "turn_index INTEGER NOT NULL,\n"
            "  state JSONB NOT NULL, last_route TEXT, signature TEXT NOT NULL, version TEXT,\n"
            "  summarized_through INTEGER, lock_acquired_at TIMESTAMPTZ, "
            "lock_expires_at TIMESTAMPTZ,\n"
            "  saved_at TIMESTAMPTZ NOT NULL DEFAULT now(),\n"
            "  PRIMARY KEY (orchestrator_name, session_id, turn_index));\n"
            f"CREATE INDEX IF NOT EXISTS idx_{t}_saved_at ON {t} (saved_at);\n"
            f"CREATE INDEX IF NOT EXISTS idx_{t}_lookup ON {t} "
            "(orchestrator_name, session_id, turn_index DESC);"
        )

    def _load(self, name: str, session_id: str) -> dict[str, Any] | None:
        with cursor_on(self.connection) as cursor:
            cursor.execute(
                f"SELECT {', '.join(COLUMNS)} FROM {self.table} WHERE orchestrator_name = %s "
                "AND session_id = %s ORDER BY turn_index DESC LIMIT 1",
                (name, session_id),
            )
            found = cursor.fetchone()
        if found is None:
            return None
        row = dict(zip(COLUMNS, found, strict=True))
        if isinstance(row["state"], str):
            row["state"] = json.loads(row["state"])
        row["last_route"] = decode_route(row["last_route"])
        return row  # moments as datetimes: the template writes them as text

    def _save(self, row: dict[str, Any]) -> None:
        import psycopg

        checked = row
        values = [checked[column] for column in COLUMNS]
        values[COLUMNS.index("state")] = json.dumps(checked["state"], ensure_ascii=False)
        values[COLUMNS.index("last_route")] = encode_route(checked["last_route"])
        placeholders = ", ".join("%s::jsonb" if c == "state" else "%s" for c in COLUMNS)
        try:
            with cursor_on(self.connection) as cursor:
                cursor.execute(
                    f"INSERT INTO {self.table} ({', '.join(COLUMNS)}) VALUES ({placeholders})",
                    values,
                )
        except psycopg.errors.UniqueViolation:
            raise DuplicateCheckpointError(
                checked["orchestrator_name"], checked["session_id"], checked["turn_index"]
            ) from None

    def _run(self, sql: str, params: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        with cursor_on(self.connection) as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def _delete(self, name: str, session_id: str) -> bool:
        deleted = self._run(
            f"DELETE FROM {self.table} WHERE orchestrator_name = %s AND session_id = %s "
            "RETURNING 1",
            (name, session_id),
        )
        return bool(deleted)

    def _list(self, name: str, prefix: str | None) -> builtins.list[str]:
        rows = self._run(
            f"SELECT DISTINCT session_id FROM {self.table} WHERE orchestrator_name = %s "
            "AND session_id LIKE %s ESCAPE '\\'",
            (name, like_prefix(prefix or "")),
        )
        return sorted(row[0] for row in rows)

    def _prune(self, name: str, session_id: str, keep_before: int) -> None:
        self._run(
            f"DELETE FROM {self.table} WHERE orchestrator_name = %s AND session_id = %s "
            "AND turn_index < %s",
            (name, session_id, keep_before),
        )
