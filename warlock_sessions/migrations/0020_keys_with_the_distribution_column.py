"""Primary keys a distributed PostgreSQL can take (docs/scaling.md): on PostgreSQL, the
per-session tables' keys become ``(session_id, id)`` (a conversation's messages',
``(conversation_id, id)``), since Citus, and PostgreSQL's own partitioning, require every
primary and unique key to contain the column rows are spread by. ``id`` stays what Django
knows as each model's primary key: it is still unique by itself (an identity column), and
nothing references these tables' rows.

On a live table: the new key's index is built CONCURRENTLY (turns go on meanwhile), then the
key is swapped to it in one short ``ALTER TABLE``. Reversible the same way. Other databases
have nothing to distribute: nothing changes there."""

from __future__ import annotations

from typing import Any

from django.db import migrations

#: Each table's distribution column, by model.
DISTRIBUTED_BY = {
    "SessionEvent": "session_id",
    "Wake": "session_id",
    "OutboundMessage": "session_id",
    "AppliedInput": "session_id",
    "SessionOwner": "session_id",
    "Checkpoint": "session_id",
    "ConversationMessage": "conversation_id",
}


def swap_primary_keys(apps: Any, schema_editor: Any, keys: dict[str, list[str]]) -> None:
    """Each model's primary key made of the columns ``keys`` names for it, on PostgreSQL
    (later migrations do the same for other tables)."""
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    quote = schema_editor.quote_name
    for model_name, columns in keys.items():
        table = apps.get_model("warlock_sessions", model_name)._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.conname, array_agg(a.attname::text ORDER BY k.n) "
                "FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY AS k(attnum, n) "
                "JOIN pg_attribute a ON a.attnum = k.attnum "
                "WHERE c.conrelid = %s::regclass AND c.contype = 'p' "
                "AND a.attrelid = c.conrelid GROUP BY c.conname",
                [table],
            )
            name, current = cursor.fetchone()
            if list(current) == columns:
                continue  # already so (a run interrupted after this table)
            index = f"{table[:50]}_newkey"
            cursor.execute(
                f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {quote(index)} "
                f"ON {quote(table)} ({', '.join(quote(c) for c in columns)})"
            )
            cursor.execute(
                f"ALTER TABLE {quote(table)} DROP CONSTRAINT {quote(name)}, "
                f"ADD CONSTRAINT {quote(name)} PRIMARY KEY USING INDEX {quote(index)}"
            )


def with_distribution_column(apps: Any, schema_editor: Any) -> None:
    keys = {model: [column, "id"] for model, column in DISTRIBUTED_BY.items()}
    swap_primary_keys(apps, schema_editor, keys)


def by_id_alone(apps: Any, schema_editor: Any) -> None:
    swap_primary_keys(apps, schema_editor, {model: ["id"] for model in DISTRIBUTED_BY})


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0019_snapshot_resume")]

    operations = [migrations.RunPython(with_distribution_column, by_id_alone, elidable=False)]
