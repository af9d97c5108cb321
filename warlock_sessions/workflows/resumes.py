"""Resumes handed to the worker: the admin asks for one (``ask_resume``) and a worker's pass
does it (``run_asked_resumes``), so a long run never holds a web request. Where each ask
stands is the snapshot row's ``resume`` column: ``queued``, ``resuming`` (claimed by one
worker) or ``failed`` (with the error); a done ask is cleared, and the run's own snapshot
says how it ended.

A worker that dies mid-resume leaves its ask ``resuming``; once the run has saved nothing for
``LEASE_SECONDS``, another worker takes it over. A run whose step outlasts that is resumed
twice, and the later resumer wins at the earlier one's next save (the store's version check),
as after any crash: a step runs at least once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeGuard

from django.db import router
from django.db.models import Q, QuerySet
from django.utils import timezone

from ..backends.outages import unavailable
from ..conf import warlock_settings
from ..engine.isotime import datetime_from_iso
from ..errors import EncryptionError
from ..models import Snapshot
from ..redaction import redact
from ..snapshots import DjangoSnapshotStore, default_snapshot_store
from ..snapshots.base import opened_snapshot
from ..tenancy import EVERY_TENANT, for_every_tenant, tenant_scope
from .registry import definition_of
from .runs import now_iso

logger = logging.getLogger("warlock_sessions.workflows")

QUEUED, RESUMING, FAILED = "queued", "resuming", "failed"
#: The longest account name kept with an ask.
MAX_BY = 150


def ask_resume(key: str, *, by: str, force: bool = False, using: str | None = None) -> str | None:
    """Queue the saved run ``key`` for a worker to resume (past a changed definition or a
    cancel with ``force``): ``"queued"``; ``"resuming"`` when a worker is resuming it now
    (the ask is left to it: a second ask would start a second resume beside the first);
    ``None`` when nothing is saved under ``key``. Asking again replaces an earlier queued or
    failed ask, and one a dead worker left (the run saved nothing for a lease)."""
    ask = {"status": QUEUED, "by": by[:MAX_BY], "force": force, "askedAt": now_iso()}
    rows = _rows(using).filter(key=key)
    stale = timezone.now() - timedelta(seconds=warlock_settings.LEASE_SECONDS)
    replaceable = (
        Q(resume__isnull=True)
        | Q(resume__status__in=[QUEUED, FAILED])
        | Q(resume__status=RESUMING, saved_at__lt=stale)
    )
    if rows.filter(replaceable).update(resume=ask):
        return QUEUED
    return RESUMING if rows.exists() else None


@for_every_tenant
def run_asked_resumes(
    limit: int = 10, *, using: str | None = None, should_stop: Callable[[], bool] = lambda: False
) -> int:
    """Resume up to ``limit`` asked runs, oldest snapshot first, each claimed first (a
    compare-and-set on its ask) so that two workers never both start one. How many were
    taken."""
    rows = _rows(using)
    stale = timezone.now() - timedelta(seconds=warlock_settings.LEASE_SECONDS)
    # Only asks a worker may take are read: failed ones, however many, never crowd them out.
    takeable = Q(resume__status=QUEUED) | Q(resume__status=RESUMING, saved_at__lt=stale)
    asked = rows.filter(takeable).order_by("saved_at")
    taken = 0
    for key, ask, saved_at, tenant in asked.values_list("key", "resume", "saved_at", "tenant")[
        : limit * 2
    ]:
        if taken >= limit or should_stop():
            break
        if not _takeable(ask, saved_at, stale):
            continue
        claimed = {**ask, "status": RESUMING, "startedAt": now_iso()}
        same_ask = rows.filter(
            key=key, resume__status=ask["status"], resume__askedAt=ask.get("askedAt")
        )
        if ask["status"] == RESUMING:
            same_ask = same_ask.filter(resume__startedAt=ask.get("startedAt"))
        if not same_ask.update(resume=claimed):
            continue  # another worker took it, or it was asked again meanwhile
        taken += 1
        with tenant_scope(tenant or EVERY_TENANT):  # the run goes on in its tenant, as it was made
            _resume(rows, key, claimed)
    return taken


def _takeable(ask: Any, saved_at: datetime, stale: datetime) -> TypeGuard[dict[str, Any]]:
    """Queued, or resuming by a worker that has saved nothing of the run for a lease."""
    if not isinstance(ask, dict):
        return False
    if ask.get("status") == QUEUED:
        return True
    if ask.get("status") != RESUMING or saved_at >= stale:
        return False
    started = _parsed(ask.get("startedAt"))
    return started is not None and started < stale


def _resume(rows: QuerySet[Snapshot], key: str, claimed: dict[str, Any]) -> None:
    stored = rows.filter(key=key).values_list("payload", flat=True).first()
    try:
        payload = opened_snapshot(stored, key) if isinstance(stored, dict) else None
    except EncryptionError as error:
        _failed(rows, key, claimed, str(error))
        return
    definition = definition_of(payload) if isinstance(payload, dict) else None
    if isinstance(payload, dict) and _cancelled_since(payload, claimed):
        _failed(
            rows,
            key,
            claimed,
            "the run was cancelled after this resume was asked for: ask again to resume it "
            "past the cancel",
        )
        return
    if definition is None:
        _failed(
            rows,
            key,
            claimed,
            "no workflow or supervisor of that name is loaded in the worker: import its "
            "module where your app starts (its AppConfig.ready), as the admin's process does",
        )
        return
    try:
        status = definition.resume_saved(key, payload, force=bool(claimed.get("force")))
    except Exception as error:
        if unavailable(error):
            raise  # the ask stays resuming; another pass takes it over after the lease
        logger.warning("could not resume run %s", key, exc_info=True)
        _failed(rows, key, claimed, f"{type(error).__name__}: {error}")
        return
    logger.info("resumed run %s: %s", key, status, extra={"event": "run_resumed"})
    rows.filter(key=key, resume__startedAt=claimed["startedAt"]).update(resume=None)


def _failed(rows: QuerySet[Snapshot], key: str, claimed: dict[str, Any], error: str) -> None:
    failed = {**claimed, "status": FAILED, "error": redact(error)[:1000], "endedAt": now_iso()}
    rows.filter(key=key, resume__startedAt=claimed["startedAt"]).update(resume=failed)


def _cancelled_since(payload: dict[str, Any], ask: dict[str, Any]) -> bool:
    """Whether the run was cancelled after ``ask`` was made: a force asked before a cancel
    is not a decision to run past that cancel."""
    if payload.get("status") != "cancelled":
        return False
    cancelled, asked = _parsed(payload.get("savedAt")), _parsed(ask.get("askedAt"))
    return cancelled is None or asked is None or cancelled >= asked


def _parsed(text: Any) -> datetime | None:
    try:
        return datetime_from_iso(str(text))
    except ValueError:
        return None


def _rows(using: str | None) -> QuerySet[Snapshot]:
    """The snapshot rows on ``using``, else where the configured snapshot store keeps them."""
    if using is None:
        store = default_snapshot_store()
        using = store.using if isinstance(store, DjangoSnapshotStore) else None
    return Snapshot.objects.using(using or router.db_for_write(Snapshot) or "default")
