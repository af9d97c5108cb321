"""Deleting, copying and pruning a saver's threads: their checkpoints, the pending writes of
each, and the channel values no checkpoint left reads (a value is kept once per version, so
it goes only when nothing reads it)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Q, QuerySet

from ...encryption import SEALED_KIND, open_typed, seal_typed
from ...errors import InvalidInputError
from ...models import GraphBlob, GraphCheckpoint, GraphThread, GraphWrite
from ...tenancy import tenant_scope
from ..names import checked_name as _name


class ThreadUpkeep:
    """What ``WarlockSaver`` does to whole threads and old checkpoints (LangGraph's
    ``delete_thread``, ``delete_for_runs``, ``copy_thread`` and ``prune``)."""

    using: str
    serde: Any
    owner: dict[str, Any]

    if TYPE_CHECKING:

        def __init__(
            self, *, owner: Any = None, using: str | None = None, serde: Any = None
        ) -> None: ...

        def _touch(self, thread_id: str, *, moved: bool = True) -> str: ...

    def delete_thread(self, thread_id: str) -> None:
        thread_id = _name(thread_id, "thread_id")
        with transaction.atomic(using=self.using):
            for model in (GraphWrite, GraphBlob, GraphCheckpoint):
                self._rows(model).filter(thread_id=thread_id).delete()
            self._rows(GraphThread).filter(pk=thread_id).delete()

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        runs = [str(run) for run in run_ids if run]
        if not runs:
            return
        with transaction.atomic(using=self.using):
            doomed = self._rows(GraphCheckpoint).filter(run_id__in=runs)
            self._delete(doomed)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source = _name(source_thread_id, "source_thread_id")
        target = _name(target_thread_id, "target_thread_id")
        header = self._rows(GraphThread).filter(pk=source).first()
        if header is None:
            return
        # The copy is the source's tenant's, whoever's scope copies it (the operator's).
        in_its_tenant = tenant_scope(header.tenant) if header.tenant else nullcontext()
        with in_its_tenant, transaction.atomic(using=self.using):
            copier = type(self)(using=self.using, serde=self.serde)
            copier.owner = {"user": header.user, "anonymous_key": header.anonymous_key}
            tenant = copier._touch(target)
            for model in (GraphBlob, GraphCheckpoint, GraphWrite):
                copies = [
                    self._copied(row, target, tenant)
                    for row in self._rows(model).filter(thread_id=source)
                ]
                model._base_manager.using(self.using).bulk_create(copies, ignore_conflicts=True)

    def _copied(self, row: Any, target: str, tenant: str) -> Any:
        """``row`` as the target thread's: its value sealed anew for its new place."""
        field = "checkpoint" if isinstance(row, GraphCheckpoint) else "value"
        if row.kind.endswith(SEALED_KIND):  # bound to its place: sealed again for the new one
            kind, plain = open_typed(row.kind, getattr(row, field), *row.value_place)
            row.thread_id = target
            row.kind, sealed = seal_typed(kind, plain, *row.value_place)
            setattr(row, field, sealed)
        row.thread_id, row.tenant = target, tenant
        row._state.adding = True
        return row

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError("strategy", "is 'keep_latest' or 'delete'")
        threads = [_name(thread, "thread_id") for thread in thread_ids]
        if strategy == "delete":
            for thread in threads:
                self.delete_thread(thread)
            return
        for thread in threads:
            with transaction.atomic(using=self.using):
                self._hold([thread])
                rows = self._rows(GraphCheckpoint).filter(thread_id=thread)
                latest: dict[str, str] = {}
                for namespace, checkpoint_id in rows.values_list("namespace", "checkpoint_id"):
                    latest[namespace] = max(latest.get(namespace, ""), checkpoint_id)
                kept = Q()
                for namespace, checkpoint_id in latest.items():
                    kept |= Q(namespace=namespace, checkpoint_id=checkpoint_id)
                self._delete(rows.exclude(kept) if latest else rows)

    def _delete(self, doomed: QuerySet[GraphCheckpoint]) -> None:
        """Delete the checkpoints ``doomed`` finds, their pending writes, and the channel
        values no checkpoint left in their namespaces reads."""
        self._hold(set(doomed.values_list("thread_id", flat=True)))
        places = set(doomed.values_list("thread_id", "namespace", "checkpoint_id"))
        if not places:
            return
        writes = Q()
        for thread_id, namespace, checkpoint_id in places:
            writes |= Q(thread_id=thread_id, namespace=namespace, checkpoint_id=checkpoint_id)
        self._rows(GraphWrite).filter(writes).delete()
        doomed.delete()
        for thread_id, namespace in {place[:2] for place in places}:
            self._forget_unread_values(thread_id, namespace)

    def _hold(self, threads: Iterable[str]) -> None:
        """Lock the threads' headers to the end of the transaction: a ``put`` (which moves
        its thread's header on) waits, so no channel value it writes meanwhile is taken for
        one no checkpoint reads, nor a checkpoint it adds for one a prune found older."""
        ids = sorted(threads)
        if ids:
            list(
                self._rows(GraphThread)
                .select_for_update()
                .filter(pk__in=ids)
                .order_by("pk")
                .values_list("pk")
            )

    def _forget_unread_values(self, thread_id: str, namespace: str) -> None:
        left = self._rows(GraphCheckpoint).filter(thread_id=thread_id, namespace=namespace)
        read = {
            (channel, str(version))
            for versions in left.values_list("channel_versions", flat=True)
            for channel, version in versions.items()
        }
        blobs = self._rows(GraphBlob).filter(thread_id=thread_id, namespace=namespace)
        unread = [
            Q(channel=channel, version=version)
            for channel, version in blobs.values_list("channel", "version")
            if (channel, version) not in read
        ]
        for start in range(0, len(unread), 500):
            batch = unread[start : start + 500]
            blobs.filter(functools.reduce(operator.or_, batch)).delete()

    def _rows(self, model: type[Any]) -> QuerySet[Any]:
        rows: QuerySet[Any] = model.objects.using(self.using).all()
        return rows
