"""Firing due wakes and delivering the outbox: ``run_due_wakes``, ``deliver_due_messages`` and
the ``Worker`` loop behind ``manage.py warlock_worker``.

Several workers may run at once. A due row is claimed with ``SELECT … FOR UPDATE SKIP LOCKED``
where the database has it (PostgreSQL), else by compare-and-set on its lease (``UPDATE … WHERE
lease_until < now``, as django-q2 does on SQLite); the lease keeps others off it while it is
worked on. A wake is fired through ``Host.handle``, so a second fire of the same wake can only
meet ``stale-wake`` or a version conflict: each wake takes effect exactly once.
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
from .turns import Host

logger = logging.getLogger("warlock_sessions.worker")

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
    """Fire up to ``limit`` due wakes; returns how many were taken. For cron, Celery or tasks."""
    now = timezone.now()
    wakes = claim(Wake, Q(status=Wake.Status.PENDING, due_at__lte=now), limit, using=using, now=now)
    hosts: dict[str, Host] = {}
    for index, wake in enumerate(wakes):
        if should_stop():
            # Hand the rest back at once rather than when their lease runs out.
            Wake.objects.using(wake._state.db).filter(pk__in=[w.pk for w in wakes[index:]]).update(
                lease_until=None
            )
            return index
        fire_wake(wake, hosts)
    return len(wakes)


def fire_wake(wake: Wake, hosts: dict[str, Host] | None = None) -> None:
    hosts = {} if hosts is None else hosts
    started = time.perf_counter()
    try:
        host = hosts.get(wake.agent) or hosts.setdefault(wake.agent, Host(wake.agent))
        result = host.handle(wake.session_id, {"wake": wake.key})
    except Exception as error:  # recorded on the row and retried; the worker keeps going
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
    messages = claim(OutboundMessage, due, limit, using=using, now=now)
    for message in messages:
        deliver_message(message, deliver)
    return len(messages)


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
    in hand first). ``once`` makes one pass; ``until_idle`` stops at the first empty pass."""

    def __init__(
        self, *, batch: int = 100, poll_interval: float | None = None, using: str | None = None
    ) -> None:
        self.batch = batch
        self.poll_interval = (
            warlock_settings.POLL_INTERVAL if poll_interval is None else poll_interval
        )
        self.using = using
        self.stopping = False

    def stop(self, *args: Any) -> None:
        self.stopping = True

    def run(self, *, once: bool = False, until_idle: bool = False) -> int:
        previous = {
            number: signal.signal(number, self.stop) for number in (signal.SIGTERM, signal.SIGINT)
        }
        done = 0
        try:
            while not self.stopping:
                worked = run_due_wakes(
                    self.batch, using=self.using, should_stop=lambda: self.stopping
                )
                worked += deliver_due_messages(self.batch, using=self.using)
                done += worked
                if once or (until_idle and not worked):
                    break
                if not worked:
                    self._sleep()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        return done

    def _sleep(self) -> None:
        deadline = time.monotonic() + self.poll_interval
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.05, self.poll_interval))
