"""Erasing a person: every row this app keeps about them, in every table and configured
store, and their open sockets told (``manage.py warlock_erase``, the admin's erase actions,
or ``erase()`` from your code; docs/privacy.md).

A person is a user (every session and conversation they own), an anonymous visitor (by the
key their Django session keeps), one session or one conversation. What goes: the sessions and
their event logs, outbox rows, wakes, applied inputs and owner rows; the conversations, their
messages and the conversations forked from them; the run snapshots and orchestrator
checkpoints of those sessions and conversations; their semantic cache's answers; their locks.
What stays: the user's account and Django session (the project's own tables), and whatever
your code copied elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import router, transaction
from django.db.models import Model, Q, QuerySet

from .cache import default_cache_store
from .checkpoints import DjangoCheckpointStore, default_checkpoint_store
from .conf import warlock_settings
from .conversations.stores import RECORD_PREFIX
from .host.notify import conversation_changed, tell_followers
from .models import (
    AppliedInput,
    CacheEntry,
    Checkpoint,
    Conversation,
    ConversationMessage,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionLockRow,
    SessionOwner,
    Snapshot,
    Wake,
)
from .snapshots import DjangoSnapshotStore, default_snapshot_store
from .stores import DjangoStore, default_store

#: Forks of forks are followed this deep at most.
MAX_FORK_DEPTH = 50


@dataclass(frozen=True)
class Person:
    """Whom to erase: exactly one of a user (their primary key), an anonymous visitor's key,
    a session id or a conversation id."""

    user: Any = None
    visitor: str | None = None
    session: str | None = None
    conversation: str | None = None

    def __post_init__(self) -> None:
        given = [v for v in (self.user, self.visitor, self.session, self.conversation) if v]
        if len(given) != 1:
            raise ValueError("a person is exactly one of a user, a visitor, a session or a chat")


@dataclass(frozen=True)
class Traces:
    """The ids a person's rows hang off."""

    sessions: frozenset[str]
    conversations: frozenset[str]

    @property
    def ids(self) -> frozenset[str]:
        return self.sessions | self.conversations


def erase(person: Person, *, dry_run: bool = False) -> dict[str, int]:
    """Delete every row about ``person`` (with ``dry_run``, only count them): how many rows
    of each kind went (or would go). The database rows go in one transaction per database;
    then the configured stores outside it, and the open sockets are told."""
    traces = traces_of(person)
    tables = _tables(traces)
    counts = {label: rows.count() for label, rows in tables}
    counts["cached answers"] = _cached_answers(traces).count()
    if dry_run:
        return counts
    for using in sorted({rows.db for _, rows in tables}):
        with transaction.atomic(using=using):
            for _, rows in tables:
                if rows.db == using:
                    rows.delete()
    _outside_the_database(traces, counts)
    tell_followers(sorted(traces.sessions))
    for conversation in sorted(traces.conversations):
        conversation_changed(conversation)
    return counts


def traces_of(person: Person) -> Traces:
    """The sessions and conversations of ``person`` (with every fork of those)."""
    owners = _rows(SessionOwner)
    chats = _rows(Conversation)
    if person.user is not None:
        sessions = set(owners.filter(user=person.user).values_list("session_id", flat=True))
        conversations = set(chats.filter(user=person.user).values_list("id", flat=True))
    elif person.visitor:
        mine = {"user": None, "anonymous_key": person.visitor}
        sessions = set(owners.filter(**mine).values_list("session_id", flat=True))
        conversations = set(chats.filter(**mine).values_list("id", flat=True))
    else:
        sessions = {person.session} if person.session else set()
        conversations = {person.conversation} if person.conversation else set()
    return Traces(frozenset(sessions), frozenset(_with_forks(conversations)))


def _with_forks(conversations: set[str]) -> set[str]:
    """``conversations`` and those forked from them, and from those, and so on."""
    found, frontier = set(conversations), set(conversations)
    for _ in range(MAX_FORK_DEPTH):
        if not frontier:
            break
        forks = set(
            _rows(Conversation)
            .filter(forked_from__id__in=sorted(frontier))
            .values_list("id", flat=True)
        )
        frontier = forks - found
        found |= frontier
    return found


def _tables(traces: Traces) -> list[tuple[str, QuerySet[Any]]]:
    """Each kind of row about the traces, in the order they are deleted (children first)."""
    sessions, conversations, ids = (
        sorted(traces.sessions),
        sorted(traces.conversations),
        sorted(traces.ids),
    )
    records = [f"{RECORD_PREFIX}{conversation}" for conversation in conversations]
    return [
        ("session events", _rows(SessionEvent).filter(session_id__in=sessions)),
        ("outbound messages", _rows(OutboundMessage).filter(session_id__in=sessions)),
        ("wakes", _rows(Wake).filter(session_id__in=sessions)),
        ("applied inputs", _rows(AppliedInput).filter(session_id__in=sessions)),
        ("session owners", _rows(SessionOwner).filter(session_id__in=sessions)),
        ("sessions", _rows(Session).filter(id__in=sessions)),
        (
            "conversation messages",
            _rows(ConversationMessage).filter(conversation_id__in=conversations),
        ),
        ("conversations", _rows(Conversation).filter(id__in=conversations)),
        (
            "snapshots",
            _rows(Snapshot, _snapshot_alias()).filter(
                Q(key__in=records) | Q(payload__sessionId__in=ids)
            ),
        ),
        ("checkpoints", _rows(Checkpoint).filter(session_id__in=ids)),
        ("locks", _rows(SessionLockRow).filter(_locks_of(ids))),
    ]


def _locks_of(ids: Iterable[str]) -> Q:
    """A lock's key is the id it guards, or that id after a scope ("rows:default:<id>")."""
    condition = Q(pk__in=[])
    for key in ids:
        condition |= Q(key=key) | Q(key__endswith=f":{key}")
    return condition


def _cached_answers(traces: Traces) -> QuerySet[Any]:
    """The semantic cache's answers kept for the conversations (their ``conversation`` scope)."""
    scopes = [f"conversation:{conversation}" for conversation in sorted(traces.conversations)]
    return _rows(CacheEntry).filter(scope__in=scopes)


def _outside_the_database(traces: Traces, counts: dict[str, int]) -> None:
    """The configured stores that keep rows elsewhere than this app's tables: the session
    store (Redis, files), the snapshot and checkpoint stores, and the semantic cache (through
    its own store, which tells every process's copy of the scope's vectors)."""
    store = default_store()
    if not isinstance(store, DjangoStore):
        counts["sessions"] += _count(store.delete, traces.sessions)
    snapshots = default_snapshot_store()
    if snapshots is not None and not isinstance(snapshots, DjangoSnapshotStore):
        keys = [f"{RECORD_PREFIX}{conversation}" for conversation in traces.conversations]
        counts["snapshots"] += _count(snapshots.delete, keys)
    checkpoints = default_checkpoint_store()
    if checkpoints is not None and not isinstance(checkpoints, DjangoCheckpointStore):
        # A store keeps no list of orchestrators: those configured are the ones it holds.
        for orchestrator in warlock_settings.ORCHESTRATORS:
            for session in sorted(traces.ids):
                counts["checkpoints"] += bool(checkpoints.delete(orchestrator.name, session))
    cache = default_cache_store()
    scopes = [f"conversation:{conversation}" for conversation in sorted(traces.conversations)]
    in_table = cache is not None and _is_django_cache(cache)
    if not in_table:
        _cached_answers(traces).delete()  # rows a store configured before, or elsewhere, left
    if cache is not None:
        # Through the store: the Django one also tells every process's copy of the scope.
        forgotten = sum(cache.forget_scope(scope) for scope in scopes)
        if not in_table:
            counts["cached answers"] += forgotten


def _is_django_cache(cache: Any) -> bool:
    # Imported only with a cache configured: its module needs the [cache] extra's numpy.
    from .cache.db import DjangoCacheStore

    return isinstance(cache, DjangoCacheStore)


def _count(delete: Callable[[str], Any], keys: Iterable[str]) -> int:
    return sum(bool(delete(key)) for key in sorted(keys))


def _rows(model: type[Model], using: str | None = None) -> QuerySet[Any]:
    return model._default_manager.using(using or router.db_for_write(model) or "default")


def _snapshot_alias() -> str | None:
    store = default_snapshot_store()
    return store.using if isinstance(store, DjangoSnapshotStore) else None
