"""Firing due wakes and delivering the outbox: ``run_due_wakes``, ``deliver_due_messages`` and
the ``Worker`` loop behind ``manage.py warlock_worker``.

Several workers may run at once. A due row is claimed with ``SELECT … FOR UPDATE SKIP LOCKED``
where the database has it (PostgreSQL), else by compare-and-set on its lease (``UPDATE … WHERE
lease_until < now``, as django-q2 does on SQLite); the lease keeps others off it while it is
worked on. Wakes are claimed a session at a time (one statement on PostgreSQL), outbox rows
one at a time, just before they are worked on: a worker killed mid-batch strands the wakes of
the session in hand for ``LEASE_SECONDS``, not its batch, and two workers seldom fire wakes of
one session at once. A wake is fired through
``Host.handle``, so a second fire of the same wake can only meet ``stale-wake`` or a version
conflict: each wake takes effect exactly once.

The ``Worker`` loop rides through database outages: a pass that fails (a restart, a lost
connection, a full pool) is logged once per outage, its connections are dropped, and the next
pass comes after a back-off (1 s, doubling to 30 s) with fresh connections. A wake or message
whose work failed only because a service was unavailable does not count an attempt.
"""

from __future__ import annotations

import logging
import random
import signal
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import connections, models, router, transaction
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from .. import signals
from ..backends.outages import OutageLog, unavailable
from ..conf import warlock_settings
from ..encryption import outbox_place, seal_json, seal_text
from ..models import WORK_BUCKETS, OutboundMessage, Wake, bucket_of, work_of
from ..redaction import redact, redact_value, redactor
from ..tenancy import EVERY_TENANT, for_every_tenant, tenant_scope
from ..tracing import span
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
    model: type[RowT],
    due: Q,
    limit: int,
    *,
    using: str | None = None,
    now: datetime | None = None,
    order: str = "pk",
    one_session: bool = False,
    buckets: Collection[int] | None = None,
) -> list[RowT]:
    """Lease up to ``limit`` rows of ``model`` matching ``due`` whose lease has run out, the
    first by ``order`` (a column the due index leads with: the search then starts at the due
    rows instead of walking past every row fired before). With ``one_session``, only rows of
    the first one's session (on PostgreSQL, in the same statement); with ``buckets``, only
    rows of those buckets (``models.bucket_of``): one bucket's claim reads one shard of a
    distributed database."""
    now = now or timezone.now()
    using = using or router.db_for_write(model)
    lease_until = now + timedelta(seconds=warlock_settings.LEASE_SECONDS)
    free = due & (Q(lease_until__isnull=True) | Q(lease_until__lt=now))
    rows = model._default_manager.using(using).filter(free).order_by(order, "pk")
    rows = rows.filter(**_of_buckets(buckets)[0])
    if connections[using].vendor == "postgresql":
        if one_session:  # the session of the first free row, picked as the rows are locked
            first, params = rows.values("session_id")[:1].query.get_compiler(using).as_sql()
            rows = rows.filter(session_id=RawSQL(f"{first} FOR UPDATE SKIP LOCKED", params))
        leased = _lease_in_one_statement(rows, limit, lease_until, using, buckets)
        # Named by bucket and session too, so that a table spread by either reads only theirs.
        mine = model._default_manager.using(using).filter(
            bucket__in={bucket for bucket, _, _ in leased},
            session_id__in={session for _, session, _ in leased},
            pk__in=[pk for _, _, pk in leased],
        )
        return list(mine.order_by(order, "pk"))
    if one_session:
        first_session = rows.values_list("session_id", flat=True).first()
        rows = rows.filter(session_id=first_session)
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
    return list(model._default_manager.using(using).filter(pk__in=won).order_by(order, "pk"))


class Shard:
    """One of ``count`` parts of the sessions (``warlock_worker --shard index/count``), so that
    workers of different shards never claim from the same rows: a session's part is its
    bucket (``models.bucket_of``) modulo ``count``."""

    MAX_COUNT = WORK_BUCKETS

    def __init__(self, index: int, count: int) -> None:
        if not 0 <= index < count <= self.MAX_COUNT:
            raise ValueError(
                f"a shard is index/count with 0 <= index < count <= {self.MAX_COUNT}, "
                f"not {index}/{count}"
            )
        self.index, self.count = index, count
        self.buckets = [bucket for bucket in range(WORK_BUCKETS) if bucket % count == index]

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"1/4"``: the second of four shards; ``ValueError`` saying what is wrong."""
        index, slash, count = text.partition("/")
        if not (slash and index.strip().isdigit() and count.strip().isdigit()):
            raise ValueError(f"a shard is written index/count, like 0/2, not {text!r}")
        return cls(int(index), int(count))

    def holds(self, session_id: str) -> bool:
        return bucket_of(session_id) in self.buckets

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def claim_passes(shard: Shard | None) -> list[list[int] | None]:
    """The buckets each claim of a pass covers: all of the worker's together, or with
    ``CLAIM_BY_BUCKET`` one at a time, starting at a bucket picked at random so that workers
    spread over them (each still covers every bucket of its shard, so none is stranded)."""
    mine = list(range(WORK_BUCKETS)) if shard is None else shard.buckets
    if not warlock_settings.CLAIM_BY_BUCKET:
        return [None if shard is None else mine]
    start = random.randrange(len(mine))
    return [[bucket] for bucket in mine[start:] + mine[:start]]


def _lease_in_one_statement(
    rows: models.QuerySet[Any],
    limit: int,
    lease_until: datetime,
    using: str,
    buckets: Collection[int] | None,
) -> list[tuple[int, str, Any]]:
    """PostgreSQL: ``UPDATE … SET lease_until WHERE (bucket, pk) IN (SELECT … LIMIT n FOR
    UPDATE SKIP LOCKED) RETURNING bucket, session_id, pk``; one round trip, no transaction of
    its own (a worker claims one row before each it fires). The rows leased. The outer
    ``WHERE`` names the bucket too: one bucket's claim then updates rows of one shard."""
    connection = connections[using]
    inner, params = rows.values("bucket", "pk")[:limit].query.get_compiler(using).as_sql()
    meta = rows.model._meta
    quote = connection.ops.quote_name
    pk, bucket = quote(meta.pk.column), quote("bucket")
    _, operator, chosen = _of_buckets(buckets)
    mine = f"{bucket} {operator} AND " if operator else ""
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {quote('lease_until')} = %s "
        f"WHERE {mine}({bucket}, {pk}) IN ({inner} FOR UPDATE SKIP LOCKED) "
        f"RETURNING {bucket}, {quote('session_id')}, {pk}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [lease_until, *chosen, *params])
        return [(row[0], row[1], row[2]) for row in cursor.fetchall()]


def _of_buckets(buckets: Collection[int] | None) -> tuple[dict[str, Any], str, list[Any]]:
    """How a claim names ``buckets`` (all without): one bucket by equality, what a
    distributed database routes to one shard. As an ORM filter, and as the SQL operator on
    the bucket column with its parameters."""
    if buckets is None:
        return {}, "", []
    if len(buckets) == 1:
        (only,) = buckets
        return {"bucket": only}, "= %s", [only]
    chosen = sorted(buckets)
    return {"bucket__in": chosen}, "= ANY(%s)", [chosen]


def _give_up_or_retry(
    row: Wake | OutboundMessage,
    error: Exception,
    limit: int,
    now: datetime,
    failed: str,
    pending: str,
) -> None:
    row.attempts += 1
    row.last_error = redact(f"{type(error).__name__}: {error}")[:2000]
    row.status = failed if row.attempts >= limit else pending
    row.lease_until = now + _backoff(row.attempts)
    type(row)._default_manager.using(row._state.db).filter(
        **work_of(row.session_id), pk=row.pk
    ).update(
        attempts=row.attempts,
        last_error=row.last_error,
        status=row.status,
        lease_until=row.lease_until,
    )


@for_every_tenant
def run_due_wakes(
    limit: int = 100,
    *,
    using: str | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    shard: Shard | None = None,
) -> int:
    """Fire up to ``limit`` due wakes, claimed a session at a time just before they are fired
    (the first due wake, then the other due wakes of its session): a worker killed meanwhile
    strands only that session's wakes, and two workers seldom fire wakes of one session at
    once (they would race to its save). Returns how many were fired. For cron, Celery or
    tasks."""
    hosts: dict[str, Host] = {}
    fired = 0
    passes = claim_passes(shard)
    while fired < limit and passes and not should_stop():
        now = timezone.now()
        due = Q(status=Wake.Status.PENDING, due_at__lte=now)
        wakes = claim(
            Wake,
            due,
            limit - fired,
            using=using,
            now=now,
            order="due_at",
            one_session=True,
            buckets=passes[0],
        )
        if not _next_pass(passes, wakes):
            continue
        for index, wake in enumerate(wakes):
            if should_stop():
                _hand_back_all(wakes[index:])
                return fired
            fire_wake(wake, hosts)
            fired += 1
    return fired


def _next_pass(passes: list[list[int] | None], claimed: list[Any]) -> bool:
    """After a claim of ``passes[0]``: its buckets are done for this pass if it found
    nothing, else they go last (each bucket in turn, however busy one is). Whether it did."""
    done = passes.pop(0)
    if claimed:
        passes.append(done)
    return bool(claimed)


def _hand_back_all(rows: list[Wake]) -> None:
    for row in rows:
        _hand_back(row)


def _hand_back(row: Wake | OutboundMessage) -> None:
    """A row whose work met an outage: its lease ends now (not one lease later) if the
    database still answers; the attempt does not count, as the fault was not the row's."""
    try:
        type(row)._default_manager.using(row._state.db).filter(
            **work_of(row.session_id), pk=row.pk, lease_until=row.lease_until
        ).update(lease_until=None)
    except Exception:  # the database is the service that is down: the lease runs out
        logger.debug("could not hand back %s %s", type(row).__name__, row.pk, exc_info=True)


def fire_wake(wake: Wake, hosts: dict[str, Host] | None = None) -> None:
    """Fire ``wake`` (its turn, in a span that is its parent), then mark it fired; a failure
    is recorded on the row and retried, and an outage hands the wake back. The turn runs in
    the wake's tenant (``tenancy``), as its session's own requests do."""
    with (
        tenant_scope(wake.tenant or EVERY_TENANT),
        span(
            "warlock wake",
            {
                "warlock.session.id": wake.session_id,
                "warlock.wake.key": wake.key,
                "warlock.agent": wake.agent,
                "warlock.wake.attempts": wake.attempts,
            },
        ),
    ):
        _fire(wake, {} if hosts is None else hosts)


def _fire(wake: Wake, hosts: dict[str, Host]) -> None:
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
    Wake.objects.using(wake._state.db).filter(**work_of(wake.session_id), pk=wake.pk).update(
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


@for_every_tenant
def deliver_due_messages(
    limit: int = 100, *, using: str | None = None, shard: Shard | None = None
) -> int:
    """Send up to ``limit`` due outbox messages through ``WARLOCK_SESSIONS["DELIVER"]``."""
    deliver = warlock_settings.DELIVER
    if deliver is None:
        return 0
    now = timezone.now()
    due = Q(status=OutboundMessage.Status.PENDING, deliver_after__lte=now)
    delivered = 0
    passes = claim_passes(shard)
    while delivered < limit and passes:
        messages = claim(
            OutboundMessage,
            due,
            1,
            using=using,
            now=now,
            order="deliver_after",
            buckets=passes[0],
        )
        if not _next_pass(passes, messages):
            continue
        deliver_message(messages[0], deliver)
        delivered += 1
    return delivered


def deliver_message(message: OutboundMessage, deliver: Callable[[OutboundMessage], Any]) -> None:
    """Send ``message`` through ``deliver`` in its tenant (``tenancy``), then mark it sent;
    a failure is recorded on the row and retried."""
    with tenant_scope(message.tenant or EVERY_TENANT):
        _deliver(message, deliver)


def _deliver(message: OutboundMessage, deliver: Callable[[OutboundMessage], Any]) -> None:
    try:
        # DELIVER gets the message as queued, opened if it was sealed. What is kept of it
        # once sent is made first: a failure there must come before the send, never between
        # the send and its mark (the message would go again).
        message.text, message.payload = message.opened_text, message.opened_payload
        kept = _kept_once_sent(message)
        with span(
            "warlock deliver",
            {
                "warlock.session.id": message.session_id,
                "warlock.message.key": message.key,
                "warlock.delivery.attempts": message.attempts,
            },
        ):
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
    OutboundMessage.objects.using(message._state.db).filter(
        **work_of(message.session_id), pk=message.pk
    ).update(
        status=OutboundMessage.Status.DELIVERED,
        delivered_at=timezone.now(),
        lease_until=None,
        **kept,
    )


def _kept_once_sent(message: OutboundMessage) -> dict[str, Any]:
    """A sent message's text and payload as they are kept from now on: redacted (and sealed
    again) when ``REDACT`` is set; it was queued as said, to be sent as said."""
    if redactor() is None:
        return {}
    place = (message.session_id, message.key)
    return {
        "text": seal_text(redact(message.text), *outbox_place(*place)),
        "payload": seal_json(redact_value(message.payload), *outbox_place(*place, "payload")),
    }


class Worker:
    """Fires due wakes and delivers due messages until stopped (SIGTERM/SIGINT finish the wake
    in hand first). ``once`` makes one pass; ``until_idle`` stops at the first empty pass.

    ``before_work`` runs before the first pass and again before each pass until it has once
    succeeded (the command drains the orchestrators' unfinished turns with it). Each of
    ``more_work`` is called as ``run_due_wakes`` is (``limit``, ``using=``, ``should_stop=``)
    and answers how much it did (the command resumes the runs asked for in the admin with
    ``workflows.resumes.run_asked_resumes``). It may take long (a workflow's steps), so the
    running loop does it on a thread of its own, one call at a time, and wakes keep firing
    meanwhile; ``once`` and ``until_idle`` do it within the pass. With ``shard``, it claims only
    the wakes and messages of that shard's sessions. A pass that
    fails, whatever the error, is logged and tried again after a back-off: the worker never
    exits on a database outage."""

    def __init__(
        self,
        *,
        batch: int = 100,
        poll_interval: float | None = None,
        using: str | None = None,
        before_work: Callable[[], Any] | None = None,
        more_work: Sequence[Callable[..., int]] = (),
        shard: Shard | None = None,
    ) -> None:
        self.batch = batch
        self.poll_interval = (
            warlock_settings.POLL_INTERVAL if poll_interval is None else poll_interval
        )
        self.using = using
        self.before_work = before_work
        self.more_work = tuple(more_work)
        self.shard = shard
        self.stopping = False
        self.outage = OutageLog(logger, "the worker's pass (database unavailable)")
        #: The thread more_work runs on while the loop runs; without it, within the pass.
        self.aside: ThreadPoolExecutor | None = None
        self.aside_work: Future[int] | None = None

    def stop(self, *args: Any) -> None:
        self.stopping = True

    def run(self, *, once: bool = False, until_idle: bool = False) -> int:
        previous = {
            number: signal.signal(number, self.stop) for number in (signal.SIGTERM, signal.SIGINT)
        }
        done = 0
        failures = 0
        if not (once or until_idle):
            self.aside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warlock-worker")
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
            if self.aside is not None:
                self.aside.shutdown(wait=True)  # what it has in hand stops at its next check
            self.aside, self.aside_work = None, None
        return done

    @for_every_tenant
    def run_pass(self) -> int:
        # Connections broken by an outage (or past CONN_MAX_AGE) are dropped here, so this
        # pass makes new ones; as Django does around each request, outside any transaction.
        for connection in connections.all(initialized_only=True):
            if not connection.in_atomic_block:
                connection.close_if_unusable_or_obsolete()
        if self.before_work is not None:
            self.before_work()
            self.before_work = None
        worked = run_due_wakes(
            self.batch, using=self.using, should_stop=lambda: self.stopping, shard=self.shard
        )
        worked += deliver_due_messages(self.batch, using=self.using, shard=self.shard)
        if self.aside is None:
            return worked + self._do_more_work()
        return worked + self._more_work_aside()

    def _more_work_aside(self) -> int:
        """What the thread did since the last pass (its failure fails this pass, and so is
        logged and backed off as any); started again once it is done."""
        done = 0
        if self.aside_work is not None and self.aside_work.done():
            finished, self.aside_work = self.aside_work, None
            done = finished.result()
        if self.aside_work is None and self.more_work:
            assert self.aside is not None
            self.aside_work = self.aside.submit(self._more_work_on_thread)
        return done

    @for_every_tenant  # a thread of its own: no scope is copied to it
    def _more_work_on_thread(self) -> int:
        try:
            return self._do_more_work()
        finally:
            connections.close_all()  # this thread's own: the next call opens fresh ones

    def _do_more_work(self) -> int:
        return sum(
            work(self.batch, using=self.using, should_stop=lambda: self.stopping)
            for work in self.more_work
        )

    def _failed(self, error: Exception) -> None:
        if unavailable(error):
            self.outage.failed(error)
        else:  # a bug, or bad data: every time, with its traceback
            logger.exception("a worker pass failed; trying again", extra={"event": "pass_failed"})

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.05, seconds))
