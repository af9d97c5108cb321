"""Tenants (``TENANT_RESOLVER``): a ``tenant`` column on every table but the locks, and the
indexes of a tenant's lists. Each column is added with its default in the database, which
PostgreSQL records without rewriting the table; the indexes are partial (only tenants' rows,
none while tenants are off) and built CONCURRENTLY on PostgreSQL, so turns go on meanwhile."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

TENANTED = (
    "appliedinput",
    "cacheentry",
    "checkpoint",
    "conversation",
    "conversationmessage",
    "outboundmessage",
    "session",
    "sessionevent",
    "sessionowner",
    "snapshot",
    "wake",
)
INDEXES = {
    "session": models.Index(
        fields=["tenant", "-updated_at", "id"],
        name="warlock_session_tenant",
        condition=~models.Q(tenant=""),
    ),
    "conversation": models.Index(
        fields=["tenant", "-updated_at"],
        name="warlock_conversation_tenant",
        condition=~models.Q(tenant=""),
    ),
}


def tenant_field() -> models.CharField:  # type: ignore[type-arg]
    return models.CharField(
        blank=True,
        db_default="",
        default="",
        editable=False,
        max_length=64,
        verbose_name="tenant",
    )


def add_indexes(apps: Any, schema_editor: Any) -> None:
    for model_name, index in INDEXES.items():
        model = apps.get_model("warlock_sessions", model_name)
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.add_index(model, index)
            continue
        sql = str(index.create_sql(model, schema_editor, concurrently=True))
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(sql.replace("CONCURRENTLY", "CONCURRENTLY IF NOT EXISTS", 1))


def remove_indexes(apps: Any, schema_editor: Any) -> None:
    for model_name, index in INDEXES.items():
        schema_editor.remove_index(apps.get_model("warlock_sessions", model_name), index)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0020_keys_with_the_distribution_column")]

    operations = [
        *(
            migrations.AddField(model_name=name, name="tenant", field=tenant_field())
            for name in TENANTED
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(model_name=name, index=index)
                for name, index in INDEXES.items()
            ],
            database_operations=[migrations.RunPython(add_indexes, remove_indexes)],
        ),
    ]
