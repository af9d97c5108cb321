"""The session search becomes a full-text match on PostgreSQL (whole words, one posting list
per word) instead of trigrams: at a million sessions the trigrams of "user@example.com" are
shared by nearly every row, and the trigram search took 41 ms (``bench/scale.py``)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def _session_table_on_postgres(apps: Any, schema_editor: Any) -> str | None:
    """The sessions' table, quoted; ``None`` on other databases (no index to change)."""
    if schema_editor.connection.vendor != "postgresql":
        return None
    model = apps.get_model("warlock_sessions", "Session")
    return str(schema_editor.quote_name(model._meta.db_table))


def full_text_index(apps: Any, schema_editor: Any) -> None:
    """On the expression ``SessionQuerySet.saying`` filters by (Django's ``SearchVector``)."""
    table = _session_table_on_postgres(apps, schema_editor)
    if table is None:
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP INDEX CONCURRENTLY IF EXISTS warlock_session_search_trgm")
        cursor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS warlock_session_search_words ON {table} "
            "USING gin (to_tsvector('simple'::regconfig, COALESCE(search_text, ''::text)))"
        )


def trigram_index(apps: Any, schema_editor: Any) -> None:
    """Back to 0010's trigram index, where ``pg_trgm`` is there."""
    table = _session_table_on_postgres(apps, schema_editor)
    if table is None:
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP INDEX CONCURRENTLY IF EXISTS warlock_session_search_words")
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone():
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS warlock_session_search_trgm ON "
                f"{table} USING gin (search_text gin_trgm_ops)"
            )


class Migration(migrations.Migration):
    # Indexes built CONCURRENTLY, so turns go on meanwhile (outside a transaction).
    atomic = False
    dependencies = [("warlock_sessions", "0011_session_recent_index")]

    operations = [migrations.RunPython(full_text_index, trigram_index)]
