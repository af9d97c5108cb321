"""The session search becomes a full-text match on PostgreSQL (whole words, one posting list
per word) instead of trigrams: at a million sessions the trigrams of "user@example.com" are
shared by nearly every row, and the trigram search took 41 ms (``bench/scale.py``)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def full_text_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS warlock_session_search_trgm")
        cursor.execute(
            "CREATE INDEX IF NOT EXISTS warlock_session_search_words ON warlock_sessions_session "
            "USING gin (to_tsvector('simple', warlock_sessions_session.search_text))"
        )


def trigram_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS warlock_session_search_words")


class Migration(migrations.Migration):
    dependencies = [("warlock_sessions", "0011_session_recent_index")]

    operations = [migrations.RunPython(full_text_index, trigram_index)]
