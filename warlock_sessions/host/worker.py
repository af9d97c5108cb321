"""Firing due wakes and delivering the outbox: ``run_due_wakes``, ``deliver_due_messages`` and
the ``Worker`` loop behind ``manage.py warlock_worker``.

Several workers may run at once. A due row is claimed with ``SELECT … FOR UPDATE SKIP LOCKED``
where the database has it (PostgreSQL), else by compare-and-set on its lease (``UPDATE … WHERE
lease_until < now``, as django-q2 does on SQLite); the lease keeps others off it while it is
worked on. Rows are claimed one at a time, just before they are worked on: a worker killed
mid-batch strands one row for ``LEASE_SECONDS``, not the batch. A wake is fired through
``Host.handle``, so a second fire of the same wake can only meet ``stale-wake`` or a version
conflict: each wake takes effect exactly once.

The ``Worker`` loop rides through database outages: a pass that fails (a restart, a lost
connection, a full pool) is logged once per outage, its connections are dropped, and the next
pass comes after a back-off (1 s, doubling to 30 s) with fresh connections. A wake or message
whose work failed only because a service was unavailable does not count an attempt.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import connections, models, router, transaction
from django.db.models import Q
from django.utils import timezone

from .. import signals
from ..conf import warlock_settings
from ..models import OutboundMessage, Wake
from ..stores.outages import OutageLog, unavailable
from .turns import Host

logger = logging.getLogger("warlock_sessions.worker")

#: The first pause after a failed pass, in seconds; it doubles with each further failure.
OUTAGE_BACKOFF = 1.0
#: The longest such pause.
MAX_OUTAGE_PAUSE = 30.0

RowT = TypeVar("RowT", bound=models.Model)


def _backoff(attempts: int) -> timedelta:
    """2 s, 4 s, 8 s… capped at 10 minutes."""
    return timedelta(seconds=min(600, 2**attempts))


def claim(
    model: type[RowT], due: Q, limit: int, *, using: str | None = None, now: datetime | None = None
) -> list[RowT]:
    """Lease up to ``limit`` rows of ``model`` matching ``due`` whose lease has run out."""
    now = now or timezone.now()
    using = using or router.db_for_write(model)
    lease_until = now + timedelta(seconds=warlock_settings.LEASE_SECONDS)
    free = due & (Q(lease_until__isnull=True) | Q(lease_until__lt=now))
    rows = model._default_manager.using(using).filter(free).order_by("pk")
    if connections[using].features.has_select_for_update_skip_locked:
        with transaction.atomic(using=using):
            claimed = list(rows.select_for_update(skip_locked=True)[:limit])
            model._default_manager.using(using).filter(pk__in=[row.pk for row in claimed]).update(
                lease_until=lease_until
            )
        for row in claimed:  # the lease as stored: a hand-back compares it
            row.lease_until = lease_until  # type: ignore[attr-defined]
        return claimed
    won = [
        pk
        for pk in rows.values_list("pk", flat=True)[:limit]
        if model._default_manager.using(using).filter(free, pk=pk).update(lease_until=lease_until)
        == 1
    ]
    return list(model._default_manager.using(using).filter(pk__in=won).order_by("pk"))


def _give_up_or_retry(
    row: Wake | OutboundMessage,
    error: Exception,
    limit: int,
    now: datetime,
    failed: str,
    pending: str,
) -> None:
    row.attempts += 1
    row.last_error = f"{type(error).__name__}: {error}"[:2000]
    row.status = failed if row.attempts >= limit else pending
    row.lease_until = now + _backoff(row.attempts)
    row.save(update_fields=["attempts", "last_error", "status", "lease_until"])


def run_due_wakes(
    limit: int = 100, *, using: str | None = None, should_stop: Callable[[], bool] = lambda: False
) -> int:
    """Fire up to ``limit`` due wakes, each claimed just before it is fired; returns how many
    were fired. For cron, Celery or tasks."""
    hosts: dict[str, Host] = {}
    fired = 0
    while fired < limit and not should_stop():
        now = timezone.now()
        due = Q(status=Wake.Status.PENDING, due_at__lte=now)
        wakes = claim(Wake, due, 1, using=using, now=now)
        if not wakes:
            break
        fire_wake(wakes[0], hosts)
        fired += 1
    return fired


def _hand_back(row: Wake | OutboundMessage) -> None:
    """A row whose work met an outage: its lease ends now (not one lease later) if the
    database still answers; the attempt does not count, as the fault was not the row's."""
    try:
        type(row)._default_manager.using(row._state.db).filter(
            pk=row.pk, lease_until=row.lease_until
        ).update(lease_until=None)
    except Exception:  # the database is the service that is down: the lease runs out
        logger.debug("could not hand back %s %s", type(row).__name__, row.pk, exc_info=True)


def fire_wake(wake: Wake, hosts: dict[str, Host] | None = None) -> None:
    hosts = {} if hosts is None else hosts
    started = time.perf_counter()
    try:
        host = hosts.get(wake.agent) or hosts.setdefault(wake.agent, Host(wake.agent))
        result = host.handle(wake.session_id, {"wake": wake.key})
    except Exception as error:  # recorded on the row and retried; the worker keeps going
        if unavailable(error):
            _hand_back(wake)
            raise
        _give_up_or_retry(
            wake,
            error,
            warlock_settings.MAX_WAKE_ATTEMPTS,
            timezone.now(),
            Wake.Status.FAILED,
            Wake.Status.PENDING,
        )
        logger.exception(
            "wake failed",
            extra={
                "event": "wake_failed",
                "key": wake.key,
                "session_id": wake.session_id,
                "attempts": wake.attempts,
            },
        )
        return
    Wake.objects.using(wake._state.db).filter(pk=wake.pk).update(
        status=Wake.Status.FIRED, fired_at=timezone.now(), lease_until=None
    )
    signals.wake_fired.send(sender=None, session_id=wake.session_id, key=wake.key, result=result)
    logger.info(
        "wake fired key=%s session=%s code=%s changed=%s messages=%d ms=%.1f",
        wake.key,
        wake.session_id,
        result.code,
        result.changed,
        len(result.messages),
        (time.perf_counter() - started) * 1000,
        extra={
            "event": "wake_fired",
            "key": wake.key,
            "session_id": wake.session_id,
            "code": result.code,
            "changed": result.changed,
            "messages": len(result.messages),
        },
    )


def deliver_due_messages(limit: int = 100, *, using: str | None = None) -> int:
    """Send up to ``limit`` due outbox messages through ``WARLOCK_SESSIONS["DELIVER"]``."""
    deliver = warlock_settings.DELIVER
    if deliver is None:
        return 0
    now = timezone.now()
    due = Q(status=OutboundMessage.Status.PENDING, deliver_after__lte=now)
    delivered = 0
    while delivered < limit:
        messages = claim(OutboundMessage, due, 1, using=using, now=now)
        if not messages:
            break
        deliver_message(messages[0], deliver)
        delivered += 1
    return delivered


def deliver_message(message: OutboundMessage, deliver: Callable[[OutboundMessage], Any]) -> None:
    try:
        deliver(message)
    except Exception as error:  # the row keeps the error; the next pass tries again
        _give_up_or_retry(
            message,
            error,
            warlock_settings.MAX_DELIVERY_ATTEMPTS,
            timezone.now(),
            OutboundMessage.Status.FAILED,
            OutboundMessage.Status.PENDING,
        )
        logger.warning(
            "delivery failed key=%s attempts=%d",
            message.key,
            message.attempts,
            extra={"event": "delivery_failed", "key": message.key},
        )
        return
    OutboundMessage.objects.using(message._state.db).filter(pk=message.pk).update(
        status=OutboundMessage.Status.DELIVERED, delivered_at=timezone.now(), lease_until=None
    )


class Worker:
    """Fires due wakes and delivers due messages until stopped (SIGTERM/SIGINT finish the wake
    in hand first). ``once`` makes one pass; ``until_idle`` stops at the first empty pass.

    ``before_work`` runs before the first pass and again before each pass until it has once
    succeeded (the command drains the orchestrators' unfinished turns with it). A pass that
    fails, whatever the error, is logged and tried again after a back-off: the worker never
    exits on a database outage."""

    def __init__(
        self,
        *,
        batch: int = 100,
        poll_interval: float | None = None,
        using: str | None = None,
        before_work: Callable[[], Any] | None = None,
    ) -> None:
        self.batch = batch
        self.poll_interval = (
            warlock_settings.POLL_INTERVAL if poll_interval is None else poll_interval
        )
        self.using = using
        self.before_work = before_work
        self.stopping = False
        self.outage = OutageLog(logger, "the worker's pass (database unavailable)")

    def stop(self, *args: Any) -> None:
        self.stopping = True

    def run(self, *, once: bool = False, until_idle: bool = False) -> int:
        previous = {
            number: signal.signal(number, self.stop) for number in (signal.SIGTERM, signal.SIGINT)
        }
        done = 0
        failures = 0
        try:
            while not self.stopping:
                try:
                    worked = self.run_pass()
                except Exception as error:
                    failures += 1
                    self._failed(error)
                    if once:
                        raise
                    self._sleep(min(MAX_OUTAGE_PAUSE, OUTAGE_BACKOFF * 2 ** (failures - 1)))
                    continue
                failures = 0
                self.outage.succeeded()
                done += worked
                if once or (until_idle and not worked):
                    break
                if not worked:
                    self._sleep(self.poll_interval)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        return done

    def run_pass(self) -> int:
        # Connections broken by an outage (or past CONN_MAX_AGE) are dropped here, so this
        # pass makes new ones; as Django does around each request, outside any transaction.
        for connection in connections.all(initialized_only=True):
            if not connection.in_atomic_block:
                connection.close_if_unusable_or_obsolete()
        if self.before_work is not None:
            self.before_work()
            self.before_work = None
        worked = run_due_wakes(self.batch, using=self.using, should_stop=lambda: self.stopping)
        return worked + deliver_due_messages(self.batch, using=self.using)

    def _failed(self, error: Exception) -> None:
        if unavailable(error):
            self.outage.failed(error)
        else:  # a bug, or bad data: every time, with its traceback
            logger.exception("a worker pass failed; trying again", extra={"event": "pass_failed"})

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.05, seconds))
