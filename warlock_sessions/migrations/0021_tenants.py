"""Tenants (``TENANT_RESOLVER``): a ``tenant`` column on every table but the locks and the
cache's removal counters, and the indexes of a tenant's lists, made so turns go on meanwhile.

On PostgreSQL each column is added with its default in the database, which is recorded without
rewriting the table; each ``ALTER TABLE`` waits at most a few seconds for its lock (a long
transaction ahead of it would otherwise hold every turn up behind it) and is tried again, and
``IF NOT EXISTS`` lets a migration stopped half-way run again. The indexes are partial (only
tenants' rows, none while tenants are off) and built CONCURRENTLY; one a failed build left
invalid is dropped and built again. Reversing it drops the columns: with tenants in use, which
row was whose is lost."""

from __future__ import annotations

import time
from typing import Any

from django.db import OperationalError, migrations, models

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
#: How long an ALTER TABLE waits for its table's lock, and how often it is tried.
LOCK_TIMEOUT = "5s"
ATTEMPTS = 12


def tenant_field() -> models.CharField:  # type: ignore[type-arg]
    return models.CharField(
        blank=True,
        db_default="",
        default="",
        editable=False,
        max_length=64,
        verbose_name="tenant",
    )


def named_tenant_field() -> models.CharField:  # type: ignore[type-arg]
    """The column as the schema editor adds or drops it (the state has it only after)."""
    field = tenant_field()
    field.set_attributes_from_name("tenant")
    return field


def add_columns(apps: Any, schema_editor: Any) -> None:
    for name in TENANTED:
        model = apps.get_model("warlock_sessions", name)
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.add_field(model, named_tenant_field())
            continue
        table = schema_editor.quote_name(model._meta.db_table)
        _altered(
            schema_editor.connection,
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS tenant varchar(64) "
            "DEFAULT '' NOT NULL",
        )


def _altered(connection: Any, statement: str) -> None:
    """``statement`` run with a short lock timeout, tried again while the lock is busy."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        try:
            for attempt in range(ATTEMPTS):
                try:
                    cursor.execute(statement)
                    return
                except OperationalError:  # lock_timeout: another transaction holds the table
                    if attempt == ATTEMPTS - 1:
                        raise
                    time.sleep(1)
        finally:
            cursor.execute("RESET lock_timeout")


def remove_columns(apps: Any, schema_editor: Any) -> None:
    for name in TENANTED:
        model = apps.get_model("warlock_sessions", name)
        schema_editor.remove_field(model, named_tenant_field())


def add_indexes(apps: Any, schema_editor: Any) -> None:
    for model_name, index in INDEXES.items():
        model = apps.get_model("warlock_sessions", model_name)
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.add_index(model, index)
            continue
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
                [index.name],
            )
            broken = cursor.fetchone()
            if broken and broken[0]:  # left by a concurrent build that failed
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}")
            sql = str(index.create_sql(model, schema_editor, concurrently=True))
            cursor.execute(sql.replace("CONCURRENTLY", "CONCURRENTLY IF NOT EXISTS", 1))


def remove_indexes(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        for index in INDEXES.values():
            cursor.execute(f"DROP INDEX IF EXISTS {index.name}")


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0020_keys_with_the_distribution_column")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(model_name=name, name="tenant", field=tenant_field())
                for name in TENANTED
            ],
            database_operations=[migrations.RunPython(add_columns, remove_columns)],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(model_name=name, index=index)
                for name, index in INDEXES.items()
            ],
            database_operations=[migrations.RunPython(add_indexes, remove_indexes)],
        ),
    ]
