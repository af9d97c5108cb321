"""DjangoSnapshotStore: snapshots in the ``warlock_sessions.Snapshot`` model, on any database."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connections, router, transaction
from django.db.models import F
from django.utils import timezone

from ..backends.connections import give_back_connection
from ..errors import ConfigurationError, OfAnotherTenantError, SnapshotError
from ..models import Snapshot, in_the_tenant_of
from ..tenancy import current as current_tenant
from .base import SnapshotStore


class SnapshotInTransactionError(SnapshotError, ConfigurationError, ImproperlyConfigured):
    """A snapshot saved inside a transaction (``ATOMIC_REQUESTS``, ``transaction.atomic()``):
    it would stay invisible until the transaction commits and vanish with it on a crash,
    which is when a run needs it."""


#: Backends where a save is one hand-written statement (``INSERT … ON CONFLICT``).
ONE_STATEMENT_VENDORS = {"postgresql", "sqlite"}


class DjangoSnapshotStore(SnapshotStore):
    """The default snapshot store: one ``Snapshot`` row per key, with a version.

    * On PostgreSQL and SQLite each save is **one statement**: a plain save an upsert that
      increments the version, a conditional one an ``UPDATE … WHERE version = expected`` (an
      ``INSERT … ON CONFLICT DO NOTHING`` for 0). The payload travels as the JSON text the
      store already encoded, so it is neither parsed nor encoded again. Other databases go
      through the ORM, inside a savepoint, as does every save in a tenant's scope
      (``TENANT_RESOLVER``: the ORM's manager keeps to the tenant's rows). Either way a lost
      race never breaks the caller's transaction.
    * ``list`` filters with ``key__startswith`` and again in Python: SQLite's ``LIKE`` and
      MySQL's default collations ignore case.
    * ``schema()`` is the migration's SQL; run ``manage.py migrate``.
    """

    versioned = True

    def __init__(self, using: str | None = None) -> None:
        self.using: str = using or router.db_for_write(Snapshot) or "default"

    def idle(self) -> None:
        give_back_connection(self.using)  # its pooled connection, while nobody needs it

    @cached_property
    def _sql(self) -> dict[str, str] | None:
        connection = connections[self.using]
        if connection.vendor not in ONE_STATEMENT_VENDORS:
            return None
        table = connection.ops.quote_name(Snapshot._meta.db_table)
        payload = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
        return {
            "load": f"SELECT payload, version FROM {table} WHERE key = %s",
            "upsert": (
                f"INSERT INTO {table} (key, payload, version, saved_at) VALUES (%s, {payload}, "
                "1, %s) ON CONFLICT (key) DO UPDATE SET payload = excluded.payload, "
                f"version = {table}.version + 1, saved_at = excluded.saved_at"
            ),
            "insert": (
                f"INSERT INTO {table} (key, payload, version, saved_at) VALUES (%s, {payload}, "
                "1, %s) ON CONFLICT (key) DO NOTHING"
            ),
            "update": (
                f"UPDATE {table} SET payload = {payload}, version = version + 1, saved_at = %s "
                "WHERE key = %s AND version = %s"
            ),
        }

    def _rows(self) -> Any:
        return Snapshot.objects.using(self.using)

    def save(self, snapshot: dict[str, Any], *, expected_version: int | None = None) -> None:
        """``SnapshotStore.save``; outside every tenant's scope (the operator), the snapshot
        of a run about a tenant's conversation or session is that tenant's."""
        session_id = snapshot.get("sessionId") if isinstance(snapshot, dict) else None
        with in_the_tenant_of(session_id, self.using):
            super().save(snapshot, expected_version=expected_version)

    def _statements(self) -> dict[str, str] | None:
        """The hand-written statements (``ONE_STATEMENT_VENDORS``), outside every tenant's
        scope; inside one the ORM's, whose manager keeps to the tenant's rows."""
        return self._sql if current_tenant() is None else None

    def _read(self, key: str) -> tuple[object, int] | None:
        sql = self._statements()
        if sql is None:
            row = self._rows().filter(key=key).values_list("payload", "version").first()
            return None if row is None else (row[0], row[1])
        with connections[self.using].cursor() as cursor:
            cursor.execute(sql["load"], [key])
            found = cursor.fetchone()
        return None if found is None else (found[0], found[1])

    def _write(self, key: str, text: str, expected: int | None) -> None:
        if connections[self.using].in_atomic_block:
            raise SnapshotInTransactionError(
                f"snapshot {key!r} would be saved inside a transaction on database "
                f"{self.using!r}, and lost with it on a crash: run workflows outside "
                "transaction.atomic() (@transaction.non_atomic_requests in a view under "
                "ATOMIC_REQUESTS), or give the store a database alias of its own (using=)"
            )
        sql = self._statements()
        if sql is None:
            self._write_with_the_orm(key, text, expected)
            return
        now = connections[self.using].ops.adapt_datetimefield_value(timezone.now())
        with connections[self.using].cursor() as cursor:
            if expected is None:
                cursor.execute(sql["upsert"], [key, text, now])
                return
            if expected == 0:
                cursor.execute(sql["insert"], [key, text, now])
            else:
                cursor.execute(sql["update"], [text, now, key, expected])
            if cursor.rowcount != 1:
                raise self.conflict(key, expected, self._version(key))

    def _write_with_the_orm(self, key: str, text: str, expected: int | None) -> None:
        payload = json.loads(text)
        now = timezone.now()
        rows = self._rows().filter(key=key)
        if expected is not None and expected > 0:
            updated = rows.filter(version=expected).update(
                payload=payload, saved_at=now, version=F("version") + 1
            )
            if not updated:
                raise self.conflict(key, expected, self._version(key))
            return
        if expected is None and rows.update(
            payload=payload, saved_at=now, version=F("version") + 1
        ):
            return
        try:
            with transaction.atomic(using=self.using):
                self._rows().create(key=key, payload=payload, saved_at=now, version=1)
        except IntegrityError:
            if expected == 0:
                raise self.conflict(key, 0, self._version(key)) from None
            if not rows.update(payload=payload, saved_at=now, version=F("version") + 1):
                # The key is another tenant's: nothing of it is read or overwritten.
                raise OfAnotherTenantError("snapshot", key) from None

    def _version(self, key: str) -> int | None:
        row = self._rows().filter(key=key).values_list("version", flat=True).first()
        return None if row is None else int(row)

    def _remove(self, key: str) -> bool:
        deleted: int = self._rows().filter(key=key).delete()[0]
        return deleted > 0

    def _keys(self, prefix: str) -> list[str]:
        return list(self._rows().filter(key__startswith=prefix).values_list("key", flat=True))

    def schema(self) -> str:
        from io import StringIO

        from django.core.management import call_command

        out = StringIO()
        call_command("sqlmigrate", "warlock_sessions", "0005", database=self.using, stdout=out)
        return out.getvalue()
