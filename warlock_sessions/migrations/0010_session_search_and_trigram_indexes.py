"""Sessions get a search column (the text of their data), and on PostgreSQL the flow,
run-status and search filters get trigram indexes, so ``LIKE '%x%'`` stays an index scan at
millions of rows (``bench/scale.py``).

The indexes need the ``pg_trgm`` extension, which a database owner may create since
PostgreSQL 13; where it cannot be created, the migration says so and the filters work
without the indexes (slower on large tables).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models, transaction
from django.db.utils import DatabaseError

TRIGRAM_INDEXES = {
    "warlock_session_flows_trgm": "run_flows",
    "warlock_session_statuses_trgm": "run_statuses",
    "warlock_session_search_trgm": "search_text",  # replaced by a full-text index in 0012
}
BACKFILL_BATCH = 1000


def fill_search_text(apps: Any, schema_editor: Any) -> None:
    """The search column of the sessions saved before it existed."""
    from warlock_sessions.engine.session import decode_session
    from warlock_sessions.errors import InvalidSessionError
    from warlock_sessions.models import search_text

    Session = apps.get_model("warlock_sessions", "Session")
    rows = Session.objects.using(schema_editor.connection.alias)
    last = ""
    while True:
        batch = list(rows.filter(id__gt=last).order_by("id").only("id", "blob")[:BACKFILL_BATCH])
        if not batch:
            return
        for row in batch:
            try:
                data = decode_session(row.blob, row.id)["data"]
            except InvalidSessionError:
                continue  # the admin shows such a row with its error
            rows.filter(id=row.id).update(search_text=search_text(data))
        last = batch[-1].id


def add_trigram_indexes(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    table = schema_editor.quote_name(apps.get_model("warlock_sessions", "Session")._meta.db_table)
    with connection.cursor() as cursor:
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except DatabaseError as error:
            print(
                f"\n  warlock_sessions: no trigram indexes ({error}); the flow, status and "
                "search filters will scan large tables"
            )
            return
        for name, column in TRIGRAM_INDEXES.items():
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} "
                f"USING gin ({schema_editor.quote_name(column)} gin_trgm_ops)"
            )


def drop_trigram_indexes(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for name in TRIGRAM_INDEXES:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    # Outside one transaction: the backfill commits row by row and the indexes are built
    # CONCURRENTLY, so live turns neither wait on locked rows nor on the builds.
    atomic = False
    dependencies = [("warlock_sessions", "0009_conversation_owners")]

    operations = [
        migrations.AddField(
            model_name="session",
            name="search_text",
            # db_default: an app server still running the code before this migration inserts
            # sessions without the column.
            field=models.TextField(
                blank=True, default="", db_default="", verbose_name="searchable data"
            ),
        ),
        migrations.RunPython(fill_search_text, migrations.RunPython.noop),
        migrations.RunPython(add_trigram_indexes, drop_trigram_indexes),
    ]
