"""Retention: what ``manage.py warlock_prune`` deletes, in bounded batches that never hold a
lock for long, so the tables stay the size the hot paths were measured at.

* ended sessions: no live run, not updated for ``sessions`` (their log, outbox, wakes,
  applied inputs and owner go with them);
* log entries older than ``events``, keeping the last ``keep_events`` of every session;
* outbox rows delivered (or given up) longer ago than ``outbox``;
* wakes fired, cancelled or given up longer ago than ``wakes``;
* conversations with no pending turn, not written for ``conversations`` (their messages go
  with them), in the row store and as records in the Django snapshot store;
* snapshots of finished runs (completed, failed, out of iterations) saved longer ago than
  ``snapshots``.

Each batch is one short transaction of at most ``batch`` rows, found by walking the primary
key from where the last batch ended: the whole prune reads each table once, no batch holds a
lock for long, and no index is needed beyond the primary key.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Max, Model, QuerySet
from django.utils import timezone

from ..engine.durations import parse_duration
from ..models import (
    AgentState,
    Conversation,
    GraphThread,
    MemoryItem,
    OutboundMessage,
    Session,
    SessionEvent,
    Snapshot,
    Wake,
    forget_records_of,
)

DEFAULT_BATCH = 1000
DEFAULT_PAUSE = 0.05
#: Sessions whose last log ``seq`` the log's prune remembers at most.
LAST_SEQS_REMEMBERED = 100_000


@dataclass(frozen=True)
class AgentRetention:
    """How long one agent's ended sessions and their log are kept, where it differs."""

    sessions: timedelta | None
    events: timedelta | None
    keep_events: int


@dataclass(frozen=True)
class Retention:
    """How long each kind of row is kept (``None``: kept for ever); ``agents``: what differs
    for an agent's sessions and log (``WARLOCK_SESSIONS["RETENTION"]``)."""

    sessions: timedelta | None = timedelta(days=90)
    events: timedelta | None = timedelta(days=30)
    keep_events: int = 100
    outbox: timedelta | None = timedelta(days=7)
    wakes: timedelta | None = timedelta(days=7)
    conversations: timedelta | None = timedelta(days=90)
    snapshots: timedelta | None = timedelta(days=30)
    agents: Mapping[str, AgentRetention] = field(default_factory=dict)

    def for_agent(self, entry: Mapping[str, Any]) -> AgentRetention:
        """An agent's RETENTION entry, what it does not say taken from this retention."""
        return AgentRetention(
            sessions=_age_of(entry, "sessions", self.sessions),
            events=_age_of(entry, "events", self.events),
            keep_events=int(entry.get("keep_events", self.keep_events)),
        )


def _age_of(entry: Mapping[str, Any], key: str, otherwise: timedelta | None) -> timedelta | None:
    if key not in entry:
        return otherwise
    if entry[key] == "never":
        return None
    return timedelta(milliseconds=parse_duration(entry[key]))


#: The statuses a run's snapshot ends with.
FINISHED_RUNS = ["completed", "failed", "max-iterations", "cancelled"]
#: The type of a conversation kept as a record in a snapshot store.
CONVERSATION_RECORD = "conversation-session"


#: Called after each batch with (what, rows deleted so far, rows to delete in all).
Progress = Callable[[str, int, int], None]
#: Called with the ids of each batch of sessions deleted, once it has committed.
Forgotten = Callable[[list[str]], None]


def prune(
    retention: Retention,
    *,
    batch: int = DEFAULT_BATCH,
    dry_run: bool = False,
    progress: Progress | None = None,
    now: datetime | None = None,
    pause: float = DEFAULT_PAUSE,
    forgotten: Forgotten | None = None,
) -> dict[str, int]:
    """Delete what ``retention`` no longer keeps; the count of each kind deleted (or, with
    ``dry_run``, that would be). After each batch it rests as long as the batch took, plus
    ``pause`` seconds, leaving the database to the turns meanwhile: at full speed, on a
    two-core machine, a prune took a third of them. A negative ``pause`` never rests.
    ``forgotten`` hears of every session deleted (the command closes the sockets still
    following one: an ended session may still have its owner's tab open)."""
    now = now or timezone.now()
    counts: dict[str, int] = {}
    for what, rows, pages in _kinds(retention, now, batch):
        if dry_run:
            counts[what] = sum(len(keys) for keys in pages())
            continue
        using = router.db_for_write(rows.model)
        expected = rows.count()
        deleted = 0
        started = time.perf_counter()
        for keys in pages():
            # Deleted only if still so: a session may have come back to life, a wake been
            # set again, since its key was read.
            still = rows.filter(pk__in=keys)
            if rows.model is Session:
                gone = _delete_still_ended(still, using)
                deleted += len(gone)
                if gone and forgotten is not None:
                    forgotten(gone)
            else:
                # Counted by kind: a conversation's messages go with it, uncounted.
                deleted += still.using(using).delete()[1].get(rows.model._meta.label, 0)
            if progress is not None:
                progress(what, deleted, max(expected, deleted))
            if pause >= 0:
                time.sleep(time.perf_counter() - started + pause)
            started = time.perf_counter()
        counts[what] = deleted
    return counts


Pages = Callable[[], Iterator[list[Any]]]


def _kinds(retention: Retention, now: datetime, batch: int) -> list[tuple[str, Any, Pages]]:
    """Each kind: what it is, the rows it deletes (for the count and the check made again at
    deletion), and the pages of their keys. The log goes first, so an ended session's batch
    deletes at most its last ``keep_events`` entries."""
    kinds: list[tuple[str, Any, Pages]] = []
    agents = retention.agents
    default = AgentRetention(retention.sessions, retention.events, retention.keep_events)
    # Each agent of its own, then every other one by the retention given for all.
    for agent, kept in [*sorted(agents.items()), (None, default)]:
        label = f" of {agent}" if agent is not None else ""
        of_agent = (
            Session.objects.filter(agent=agent)
            if agent
            else Session.objects.exclude(agent__in=list(agents))
        )
        if kept.events is not None:
            cutoff = now - kept.events
            old_log = SessionEvent.objects.filter(created_at__lt=cutoff)
            if agent is not None:
                old_log = old_log.filter(session_id__in=of_agent.values("id"))
            elif agents:  # (not "in the others' sessions": a log left by a session gone goes)
                mine = Session.objects.filter(agent__in=list(agents)).values("id")
                old_log = old_log.exclude(session_id__in=mine)
            pages = functools.partial(_old_log_pages, old_log, kept.keep_events, batch)
            kinds.append((f"events{label}", old_log, pages))
        if kept.sessions is not None:
            ended = of_agent.filter(
                run_statuses="", handover="", updated_at__lt=now - kept.sessions
            )
            kinds.append((f"sessions{label}", ended, _pages_of(ended, batch)))
    if retention.outbox is not None:
        finished = [OutboundMessage.Status.DELIVERED, OutboundMessage.Status.FAILED]
        old_outbox = OutboundMessage.objects.filter(
            created_at__lt=now - retention.outbox, status__in=finished
        )
        kinds.append(("outbox", old_outbox, _pages_of(old_outbox, batch)))
    if retention.wakes is not None:
        old_wakes = Wake.objects.filter(created_at__lt=now - retention.wakes).exclude(
            status=Wake.Status.PENDING
        )
        kinds.append(("wakes", old_wakes, _pages_of(old_wakes, batch)))
    if retention.conversations is not None:
        cutoff = now - retention.conversations
        idle = Conversation.objects.filter(updated_at__lt=cutoff, pending__isnull=True)
        kinds.append(("conversations", idle, _pages_of(idle, batch)))
        records = Snapshot.objects.filter(
            saved_at__lt=cutoff, payload__type=CONVERSATION_RECORD
        ).exclude(payload__has_key="pending")
        kinds.append(("conversation records", records, _pages_of(records, batch)))
        # ADK sessions' own state, beside their conversations.
        states = AgentState.objects.filter(scope=AgentState.Scope.SESSION, updated_at__lt=cutoff)
        kinds.append(("agent session states", states, _pages_of(states, batch)))
        # LangGraph threads idle as long: their checkpoints, values and writes go with them.
        threads = GraphThread.objects.filter(updated_at__lt=cutoff)
        kinds.append(("graph threads", threads, _pages_of(threads, batch)))
    if retention.snapshots is not None:
        done = Snapshot.objects.filter(
            saved_at__lt=now - retention.snapshots, payload__status__in=FINISHED_RUNS
        )
        kinds.append(("snapshots", done, _pages_of(done, batch)))
    # LangGraph's long-term memory items whose time to live ran out (TTLConfig).
    expired = MemoryItem.objects.filter(expires_at__lt=now)
    kinds.append(("expired memory items", expired, _pages_of(expired, batch)))
    return kinds


def _delete_still_ended(sessions: QuerySet[Any], using: str) -> list[str]:
    """Delete ``sessions`` with what is kept about them, a session at a time, each in a short
    transaction that locks its row alone (a lock over rows of several sessions is a
    multi-shard lock, which a distributed database refuses); their ids."""
    gone = []
    for key in sessions.using(using).values_list("pk", flat=True):
        with transaction.atomic(using=using):
            if sessions.using(using).filter(pk=key).select_for_update().exists():
                forget_records_of([key], using)
                _raw_delete(Session, [key], using)
                gone.append(str(key))
    return gone


def pages_by_pk(rows: QuerySet[Any], batch: int) -> Iterator[list[Any]]:
    """What ``rows`` holds (model rows, or their keys: ``values_list("pk", flat=True)``), at
    most ``batch`` at a time, walking the primary key upwards."""
    after: Any = None
    while True:
        page = list((rows if after is None else rows.filter(pk__gt=after)).order_by("pk")[:batch])
        if not page:
            return
        after = getattr(page[-1], "pk", page[-1])
        yield page


def _pages_of(rows: QuerySet[Any], batch: int) -> Pages:
    """The keys of ``rows``, at most ``batch`` at a time, walking the primary key upwards."""
    return lambda: pages_by_pk(rows.values_list("pk", flat=True), batch)


def _old_log_pages(old_log: QuerySet[Any], keep: int, batch: int) -> Iterator[list[Any]]:
    """The log entries of ``old_log`` that are not among their session's last ``keep``,
    ``batch`` at a time: old entries are read ``batch`` at a time along the primary
    key, each session's last ``seq`` looked up once (a session that logs meanwhile only keeps
    a few more), until a page is full (a read may find few to delete: each deletion, and the
    rest after it, is then worth a full page)."""
    last_seq: dict[str, int] = {}
    after = 0
    page: list[Any] = []
    while True:
        rows = list(
            old_log.filter(pk__gt=after)
            .order_by("pk")
            .values_list("pk", "session_id", "seq")[:batch]
        )
        if not rows:
            if page:
                yield page
            return
        after = rows[-1][0]
        if len(last_seq) > LAST_SEQS_REMEMBERED:
            last_seq.clear()  # memory stays bounded; a session seen again is looked up again
        # (Not `set - last_seq.keys()`: that walks every key remembered, for every batch.)
        unseen = {session_id for _, session_id, _ in rows if session_id not in last_seq}
        if unseen:
            last_seq.update(
                SessionEvent.objects.filter(session_id__in=unseen)
                .values("session_id")
                .annotate(last=Max("seq"))
                .values_list("session_id", "last")
            )
        page += [
            key
            for key, session_id, seq in rows
            if seq <= last_seq.get(session_id, seq + keep) - keep  # a session gone meanwhile
        ]
        while len(page) >= batch:
            yield page[:batch]
            page = page[batch:]


def _raw_delete(model: type[Model], keys: list[Any], using: str) -> int:
    """One ``DELETE … WHERE pk IN (…)``: no rows fetched, no signals (the session receivers'
    work is done in bulk above)."""
    table = connections[using].ops.quote_name(model._meta.db_table)
    column = connections[using].ops.quote_name(model._meta.pk.column or "id")
    marks = ", ".join(["%s"] * len(keys))
    with connections[using].cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", keys)
        return int(cursor.rowcount)
