"""Who answers a session: ``handover`` and ``handover_since`` repeat the blob's handover record
(``engine.handover``) for the admin's inbox. The columns have database defaults, so PostgreSQL
adds them without rewriting the table; the inbox's partial index is built CONCURRENTLY there,
so turns go on while it is. No session is with people before this migration: nothing to fill."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

INDEX = models.Index(
    fields=["handover_since"],
    name="warlock_session_handover",
    condition=~models.Q(handover=""),
)


def add_index(apps: Any, schema_editor: Any) -> None:
    model = apps.get_model("warlock_sessions", "Session")
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(model._meta.db_table)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX.name} ON {table} "
                "(handover_since) WHERE NOT (handover = '')"
            )
    else:
        schema_editor.add_index(model, INDEX)


def remove_index(apps: Any, schema_editor: Any) -> None:
    schema_editor.remove_index(apps.get_model("warlock_sessions", "Session"), INDEX)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0016_search_text_without_accents")]

    operations = [
        migrations.AddField(
            model_name="session",
            name="handover",
            field=models.CharField(
                blank=True,
                choices=[("waiting", "waiting for a person"), ("taken", "taken by a person")],
                db_default="",
                default="",
                max_length=16,
                verbose_name="with people",
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="handover_since",
            field=models.DateTimeField(blank=True, null=True, verbose_name="with people since"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="session", index=INDEX)],
            database_operations=[migrations.RunPython(add_index, remove_index)],
        ),
    ]
