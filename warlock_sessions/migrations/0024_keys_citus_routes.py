"""Keys and columns that let a distributed PostgreSQL (Citus) route every hot statement to one
shard (docs/scaling.md):

* ``warlock_owner_tallies``: how many sessions and conversations each owner has
  (``models.quotas``), filled here from the owner rows there are; a quota is then decided on
  one row instead of a count over every shard.
* Wakes and outbox rows get their session's ``bucket`` (``models.bucket_of``), the column
  they are spread by, so that a worker's claim of one bucket's due rows reads one shard; it
  joins their unique keys and, on PostgreSQL, their primary keys (``(bucket, id)``).
* On PostgreSQL, the semantic cache's tables' primary keys become ``(scope, id)``.

Primary keys are swapped as migration 0020 does (the new key's index built CONCURRENTLY, then
one short ``ALTER TABLE``), and back the same way. Unlike 0020, run it with the servers and
workers stopped: the code before it writes wakes and outbox rows without a bucket, against the
unique keys it replaces, and makes and deletes owner rows it would not count (should some slip
by, ``warlock_recount_quotas`` counts them again)."""

from __future__ import annotations

import hashlib
import importlib
from collections import Counter
from typing import Any

from django.db import migrations, models

BUCKETS = 32  # models.WORK_BUCKETS, as it is here
DUE_WORK = ("Wake", "OutboundMessage")
COUNTED = {"SessionOwner": "sessions", "Conversation": "conversations"}
#: Each table's primary key, after and before this migration (PostgreSQL).
KEYS = {
    "Wake": (["bucket", "id"], ["session_id", "id"]),
    "OutboundMessage": (["bucket", "id"], ["session_id", "id"]),
    "CacheEntry": (["scope", "id"], ["id"]),
    "CacheScope": (["scope", "id"], ["id"]),
}


def _swap(apps: Any, schema_editor: Any, which: int) -> None:
    keys = importlib.import_module(
        "warlock_sessions.migrations.0020_keys_with_the_distribution_column"
    )
    chosen = {model: columns[which] for model, columns in KEYS.items()}
    keys.swap_primary_keys(apps, schema_editor, chosen)


def with_distribution_columns(apps: Any, schema_editor: Any) -> None:
    _swap(apps, schema_editor, 0)


def as_before(apps: Any, schema_editor: Any) -> None:
    _swap(apps, schema_editor, 1)


def fill_buckets(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    for model_name in DUE_WORK:
        model = apps.get_model("warlock_sessions", model_name)
        rows = model._base_manager.using(connection.alias)
        if connection.vendor == "postgresql":
            table = schema_editor.quote_name(model._meta.db_table)
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET bucket = "
                    f"get_byte(decode(md5(session_id), 'hex'), 0) % {BUCKETS}"
                )
            continue
        for session_id in rows.values_list("session_id", flat=True).distinct():
            digest = hashlib.md5(session_id.encode(), usedforsecurity=False).digest()
            rows.filter(session_id=session_id).update(bucket=digest[0] % BUCKETS)


def count_owned_rows(apps: Any, schema_editor: Any) -> None:
    from warlock_sessions.models.quotas import tally_key

    using = schema_editor.connection.alias
    counts: Counter[str] = Counter()
    for model_name, kind in COUNTED.items():
        rows = apps.get_model("warlock_sessions", model_name)._base_manager.using(using)
        owners = rows.values_list("user_id", "anonymous_key", "tenant").annotate(
            n=models.Count("pk")
        )
        for user_id, visitor, tenant, count in owners.order_by():
            key = tally_key(kind, user_id, visitor, tenant)
            if key is not None:
                counts[key] += count
    tallies = apps.get_model("warlock_sessions", "OwnerTally")._base_manager.using(using)
    tallies.bulk_create(
        [tallies.model(key=key, count=count) for key, count in counts.items()], batch_size=1000
    )


def _bucket_field() -> models.Field[Any, Any]:
    return models.PositiveSmallIntegerField(default=0, editable=False, verbose_name="bucket")


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("warlock_sessions", "0023_frameworks")]

    operations = [
        migrations.CreateModel(
            name="OwnerTally",
            fields=[
                (
                    "key",
                    models.CharField(
                        max_length=96, primary_key=True, serialize=False, verbose_name="key"
                    ),
                ),
                ("count", models.PositiveIntegerField(default=0, verbose_name="count")),
            ],
            options={
                "verbose_name": "owner tally",
                "verbose_name_plural": "owner tallies",
                "db_table": "warlock_owner_tallies",
            },
        ),
        migrations.RunPython(count_owned_rows, migrations.RunPython.noop, elidable=False),
        migrations.AddField("wake", "bucket", _bucket_field(), preserve_default=False),
        migrations.AddField("outboundmessage", "bucket", _bucket_field(), preserve_default=False),
        migrations.RunPython(fill_buckets, migrations.RunPython.noop, elidable=False),
        migrations.RemoveConstraint("wake", "warlock_wake_key_unique"),
        migrations.AddConstraint(
            "wake",
            models.UniqueConstraint(
                fields=["session_id", "key", "bucket"], name="warlock_wake_key_unique"
            ),
        ),
        migrations.RemoveConstraint("outboundmessage", "warlock_outbox_key_unique"),
        migrations.AddConstraint(
            "outboundmessage",
            models.UniqueConstraint(
                fields=["session_id", "key", "bucket"], name="warlock_outbox_key_unique"
            ),
        ),
        migrations.RunPython(with_distribution_columns, as_before, elidable=False),
    ]
