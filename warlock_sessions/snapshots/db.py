"""DjangoSnapshotStore: snapshots in the ``warlock_sessions.Snapshot`` model, on any database."""

from __future__ import annotations

import json
from typing import Any

from django.db import IntegrityError, router, transaction
from django.db.models import F
from django.utils import timezone

from ..models import Snapshot
from .base import SnapshotStore


class DjangoSnapshotStore(SnapshotStore):
    """The default snapshot store: one ``Snapshot`` row per key, with a version.

    * ``save`` without ``expected_version`` is an upsert; with it, an ``UPDATE … WHERE
      version = expected`` (an ``INSERT`` for 0). Each is one statement under autocommit, and a
      savepoint inside the caller's transaction, so a lost race never breaks that transaction.
    * ``list`` filters with ``key__startswith`` and again in Python: SQLite's ``LIKE`` and
      MySQL's default collations ignore case.
    * ``schema()`` is the migration's SQL; run ``manage.py migrate``.
    """

    versioned = True

    def __init__(self, using: str | None = None) -> None:
        self.using: str = using or router.db_for_write(Snapshot) or "default"

    def _rows(self) -> Any:
        return Snapshot.objects.using(self.using)

    def _read(self, key: str) -> tuple[object, int] | None:
        row = self._rows().filter(key=key).values_list("payload", "version").first()
        return None if row is None else (row[0], row[1])

    def _write(self, key: str, text: str, expected: int | None) -> None:
        payload = json.loads(text)
        now = timezone.now()
        if expected is not None and expected > 0:
            if not self._update(key, payload, now, expected):
                raise self.conflict(key, expected, self._version(key))
            return
        if expected is None and self._update(key, payload, now, None):
            return
        if self._insert(key, payload, now):
            return
        if expected == 0:
            raise self.conflict(key, 0, self._version(key))
        self._update(key, payload, now, None)  # inserted by someone else meanwhile: overwrite

    def _update(self, key: str, payload: Any, now: Any, expected: int | None) -> bool:
        rows = self._rows().filter(key=key)
        if expected is not None:
            rows = rows.filter(version=expected)
        return bool(rows.update(payload=payload, saved_at=now, version=F("version") + 1))

    def _insert(self, key: str, payload: Any, now: Any) -> bool:
        try:
            with transaction.atomic(using=self.using):
                self._rows().create(key=key, payload=payload, saved_at=now, version=1)
        except IntegrityError:
            return False
        return True

    def _version(self, key: str) -> int | None:
        row = self._rows().filter(key=key).values_list("version", flat=True).first()
        return None if row is None else int(row)

    def _remove(self, key: str) -> None:
        self._rows().filter(key=key).delete()

    def _keys(self, prefix: str) -> list[str]:
        return list(self._rows().filter(key__startswith=prefix).values_list("key", flat=True))

    def schema(self) -> str:
        from io import StringIO

        from django.core.management import call_command

        out = StringIO()
        call_command("sqlmigrate", "warlock_sessions", "0005", database=self.using, stdout=out)
        return out.getvalue()
