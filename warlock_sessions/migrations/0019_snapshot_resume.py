"""A resume asked for in the admin and done by a worker: ``Snapshot.resume`` (null: none
asked), and the partial index a worker's pass finds the asked ones by. Nullable with no
default, so PostgreSQL adds the column without rewriting the table; the index is built
CONCURRENTLY there, so runs go on saving while it is."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

INDEX = models.Index(
    fields=["saved_at"],
    name="warlock_snapshot_resume",
    condition=models.Q(resume__isnull=False),
)


def add_index(apps: Any, schema_editor: Any) -> None:
    model = apps.get_model("warlock_sessions", "Snapshot")
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(model._meta.db_table)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX.name} ON {table} "
                "(saved_at) WHERE resume IS NOT NULL"
            )
    else:
        schema_editor.add_index(model, INDEX)


def remove_index(apps: Any, schema_editor: Any) -> None:
    schema_editor.remove_index(apps.get_model("warlock_sessions", "Snapshot"), INDEX)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0018_chats_with_people")]

    operations = [
        migrations.AddField(
            model_name="snapshot",
            name="resume",
            field=models.JSONField(blank=True, null=True, verbose_name="resume"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="snapshot", index=INDEX)],
            database_operations=[migrations.RunPython(add_index, remove_index)],
        ),
    ]
