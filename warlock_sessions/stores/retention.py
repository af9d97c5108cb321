"""Retention: what ``manage.py warlock_prune`` deletes, in bounded batches that never hold a
lock for long, so the tables stay the size the hot paths were measured at.

* ended sessions: no live run, not updated for ``sessions`` (their log, outbox, wakes,
  applied inputs and owner go with them);
* log entries older than ``events``, keeping the last ``keep_events`` of every session;
* outbox rows delivered (or given up) longer ago than ``outbox``;
* wakes fired, cancelled or given up longer ago than ``wakes``.

Each batch is one short transaction of at most ``batch`` rows, found by walking the primary
key from where the last batch ended: the whole prune reads each table once, no batch holds a
lock for long, and no index is needed beyond the primary key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Max, Model, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from ..models import (
    AppliedInput,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionOwner,
    Wake,
)

DEFAULT_BATCH = 1000
DEFAULT_PAUSE = 0.05


@dataclass(frozen=True)
class Retention:
    """How long each kind of row is kept (``None``: kept for ever)."""

    sessions: timedelta | None = timedelta(days=90)
    events: timedelta | None = timedelta(days=30)
    keep_events: int = 100
    outbox: timedelta | None = timedelta(days=7)
    wakes: timedelta | None = timedelta(days=7)


#: Called after each batch with (what, rows deleted so far, rows to delete in all).
Progress = Callable[[str, int, int], None]


def prune(
    retention: Retention,
    *,
    batch: int = DEFAULT_BATCH,
    dry_run: bool = False,
    progress: Progress | None = None,
    now: datetime | None = None,
    pause: float = DEFAULT_PAUSE,
) -> dict[str, int]:
    """Delete what ``retention`` no longer keeps; the count of each kind deleted (or, with
    ``dry_run``, that would be). After each batch it rests as long as the batch took, plus
    ``pause`` seconds, leaving the database to the turns meanwhile: at full speed, on a
    two-core machine, a prune took a third of them. A negative ``pause`` never rests."""
    now = now or timezone.now()
    counts: dict[str, int] = {}
    for what, rows in _kinds(retention, now):
        total = rows.count()
        counts[what] = total
        if dry_run or not total:
            continue
        deleted = 0
        started = time.perf_counter()
        for done in _delete_in_batches(what, rows, batch):
            deleted += done
            if progress is not None:
                progress(what, deleted, total)
            if pause >= 0:
                time.sleep(time.perf_counter() - started + pause)
            started = time.perf_counter()
    return counts


def _kinds(retention: Retention, now: datetime) -> Iterator[tuple[str, Any]]:
    if retention.sessions is not None:
        ended = Q(run_statuses="", updated_at__lt=now - retention.sessions)
        yield "sessions", Session.objects.filter(ended)
    if retention.events is not None:
        last_seq = (
            SessionEvent.objects.filter(session_id=OuterRef("session_id"))
            .values("session_id")
            .annotate(last=Max("seq"))
            .values("last")
        )
        old = _older(SessionEvent.objects.all(), now - retention.events)
        yield "events", old.filter(seq__lte=Subquery(last_seq) - retention.keep_events)
    if retention.outbox is not None:
        finished = [OutboundMessage.Status.DELIVERED, OutboundMessage.Status.FAILED]
        old = _older(OutboundMessage.objects.all(), now - retention.outbox)
        yield "outbox", old.filter(status__in=finished)
    if retention.wakes is not None:
        old = _older(Wake.objects.all(), now - retention.wakes)
        yield "wakes", old.exclude(status=Wake.Status.PENDING)


def _older(rows: QuerySet[Any], cutoff: datetime) -> QuerySet[Any]:
    return rows.filter(created_at__lt=cutoff)


def _delete_in_batches(what: str, rows: Any, batch: int) -> Iterator[int]:
    """Delete ``rows`` at most ``batch`` at a time, walking the primary key upwards."""
    model = rows.model
    using = router.db_for_write(model)
    after: Any = None
    while True:
        page = rows.order_by("pk")
        if after is not None:
            page = page.filter(pk__gt=after)
        keys = list(page.values_list("pk", flat=True)[:batch])
        if not keys:
            return
        after = keys[-1]
        with transaction.atomic(using=using):
            if model is Session:
                _forget_sessions(keys, using)
            deleted = _raw_delete(model, keys, using)
        yield deleted


def _forget_sessions(session_ids: list[str], using: str) -> None:
    """What is kept about these sessions besides their rows (``forget_records``, in bulk;
    no socket follows a conversation that ended months ago)."""
    for model in (SessionEvent, OutboundMessage, Wake, AppliedInput, SessionOwner):
        model._default_manager.using(using).filter(session_id__in=session_ids).delete()


def _raw_delete(model: type[Model], keys: list[Any], using: str) -> int:
    """One ``DELETE … WHERE pk IN (…)``: no rows fetched, no signals (the session receivers'
    work is done in bulk above)."""
    table = connections[using].ops.quote_name(model._meta.db_table)
    column = connections[using].ops.quote_name(model._meta.pk.column or "id")
    marks = ", ".join(["%s"] * len(keys))
    with connections[using].cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", keys)
        return int(cursor.rowcount)
