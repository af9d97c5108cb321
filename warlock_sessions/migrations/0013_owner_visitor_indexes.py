"""Indexes on the visitor key of session owners and conversations, for the per-owner quotas;
built CONCURRENTLY on PostgreSQL so turns go on while they are."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

VISITOR = ~models.Q(anonymous_key="")
INDEXES = {
    "sessionowner": models.Index(
        fields=["anonymous_key"], condition=VISITOR, name="warlock_owner_visitor"
    ),
    "conversation": models.Index(
        fields=["anonymous_key"], condition=VISITOR, name="warlock_conversation_visitor"
    ),
}


def add_indexes(apps: Any, schema_editor: Any) -> None:
    for model_name, index in INDEXES.items():
        model = apps.get_model("warlock_sessions", model_name)
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.add_index(model, index)
            continue
        table = schema_editor.quote_name(model._meta.db_table)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {index.name} ON {table} "
                "(anonymous_key) WHERE NOT (anonymous_key = '')"
            )


def remove_indexes(apps: Any, schema_editor: Any) -> None:
    for model_name, index in INDEXES.items():
        schema_editor.remove_index(apps.get_model("warlock_sessions", model_name), index)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0012_session_search_full_text")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(model_name=model_name, index=index)
                for model_name, index in INDEXES.items()
            ],
            database_operations=[migrations.RunPython(add_indexes, remove_indexes)],
        )
    ]
