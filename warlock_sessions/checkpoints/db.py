"""DjangoCheckpointStore: checkpoint rows in the ``warlock_sessions.Checkpoint`` model."""

from __future__ import annotations

import builtins
from typing import Any

from django.db import IntegrityError, router, transaction
from django.utils.dateparse import parse_datetime

from ..models import Checkpoint, tenant_kept_for, tenant_of_parent
from .base import (
    COLUMNS,
    MOMENTS,
    CheckpointStore,
    DuplicateCheckpointError,
)


class DjangoCheckpointStore(CheckpointStore):
    """The unique ``(orchestrator_name, session_id, turn_index)`` constraint is the
    append-only guard: a second save of a turn is refused by the database itself."""

    def __init__(self, using: str | None = None) -> None:
        self.using: str = using or router.db_for_write(Checkpoint) or "default"

    def _rows(self, name: str, session_id: str | None = None) -> Any:
        rows = Checkpoint.objects.using(self.using).filter(orchestrator_name=name)
        return rows if session_id is None else rows.filter(session_id=session_id)

    def _load(self, name: str, session_id: str) -> dict[str, Any] | None:
        row = self._rows(name, session_id).order_by("-turn_index").values(*COLUMNS).first()
        if row is None:
            return None
        return dict(row)  # moments as datetimes: the template writes them as text

    def _save(self, row: dict[str, Any]) -> None:
        checked = row
        values = dict(checked)
        for column in MOMENTS:
            if isinstance(values[column], str):
                values[column] = parse_datetime(values[column])
        # A turn is its orchestrator session's tenant's, whoever's scope appends it (the
        # operator's first turn of a tenant's chat: that chat's).
        values["tenant"] = tenant_of_parent(
            Checkpoint,
            self.using,
            orchestrator_name=values["orchestrator_name"],
            session_id=values["session_id"],
        ) or tenant_kept_for(values["session_id"], self.using)
        try:
            with transaction.atomic(using=self.using):
                Checkpoint._base_manager.using(self.using).create(**values)
        except IntegrityError:
            raise DuplicateCheckpointError(
                checked["orchestrator_name"], checked["session_id"], checked["turn_index"]
            ) from None

    def _delete(self, name: str, session_id: str) -> bool:
        deleted: int = self._rows(name, session_id).delete()[0]
        return deleted > 0

    def _list(self, name: str, prefix: str | None) -> builtins.list[str]:
        rows = self._rows(name)
        if prefix:
            rows = rows.filter(session_id__startswith=prefix)
        found = rows.values_list("session_id", flat=True).distinct()
        return sorted(sid for sid in found if sid.startswith(prefix or ""))

    def _prune(self, name: str, session_id: str, keep_before: int) -> None:
        self._rows(name, session_id).filter(turn_index__lt=keep_before).delete()
