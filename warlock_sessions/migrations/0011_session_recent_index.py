"""An index on the sessions list's order, built CONCURRENTLY on PostgreSQL so turns go on
while it is (on a million sessions it takes a while)."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

INDEX = models.Index(fields=["-updated_at", "id"], name="warlock_session_recent")


def add_index(apps: Any, schema_editor: Any) -> None:
    model = apps.get_model("warlock_sessions", "Session")
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(model._meta.db_table)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX.name} ON {table} "
                "(updated_at DESC, id)"
            )
    else:
        schema_editor.add_index(model, INDEX)


def remove_index(apps: Any, schema_editor: Any) -> None:
    schema_editor.remove_index(apps.get_model("warlock_sessions", "Session"), INDEX)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0010_session_search_and_trigram_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="session", index=INDEX)],
            database_operations=[migrations.RunPython(add_index, remove_index)],
        )
    ]
