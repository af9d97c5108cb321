"""Erasing a person: every row this app keeps about them, in every table and configured
store, and their open sockets told (``manage.py warlock_erase``, the admin's erase action,
or ``erase()`` from your code; docs/privacy.md).

A person is a user (every session and conversation they own), an anonymous visitor (by the
key their Django session keeps), one session or one conversation. What goes: the sessions with
their event logs, outbox rows, wakes, applied inputs and owner rows; the conversations with
their messages and the forks of them the same person owns; the run snapshots, orchestrator
checkpoints, cached answers and locks of those conversations; their LangGraph threads (every
checkpoint, channel value and pending write) and long-term memory items. Session ids and
conversation ids are apart (a client names both): each row is matched against the kind of id
it belongs to. What stays: the user's account and Django session (the project's own tables), and
whatever your code copied elsewhere.

Stores outside the database (Redis, files) are emptied first and the database's rows after,
in one transaction per database: if a store fails, the rows that find the person are still
there, and erasing again finishes the job.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import router, transaction
from django.db.models import Model, QuerySet

from .cache import default_cache_store, kept_in_database
from .checkpoints import DjangoCheckpointStore, default_checkpoint_store
from .conf import warlock_settings
from .conversations.seen import seen_histories
from .conversations.stores import RECORD_PREFIX
from .host.notify import conversation_changed, tell_followers
from .models import (
    AgentState,
    AppliedInput,
    CacheEntry,
    Checkpoint,
    Conversation,
    ConversationMessage,
    GraphBlob,
    GraphCheckpoint,
    GraphThread,
    GraphWrite,
    LeasedWork,
    MemoryItem,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionLockRow,
    SessionOwner,
    Snapshot,
    Wake,
    work_of_sessions,
)
from .snapshots import DjangoSnapshotStore, default_snapshot_store
from .stores import DjangoStore, default_store
from .tenancy import current as current_tenant
from .tenancy import current_scope

#: Ids per statement: well within SQLite's and PostgreSQL's limits on parameters.
BATCH = 500

logger = logging.getLogger("warlock_sessions.erasure")


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

    def __str__(self) -> str:
        """How logs and the admin name the person: a visitor by a digest of their key (it is
        their session cookie), never the key."""
        if self.user is not None:
            return f"user {self.user}"
        if self.visitor:
            return f"visitor #{hashlib.sha256(self.visitor.encode()).hexdigest()[:12]}"
        return f"session {self.session}" if self.session else f"conversation {self.conversation}"


@dataclass(frozen=True)
class Traces:
    """The ids a person's rows hang off, each kind apart; ``others_forks``: forks someone
    else made of the person's conversations (staff trying another answer), whose history
    begins with the person's messages; ``threads``: their LangGraph threads, ``memories``:
    their LangGraph long-term memory items (``frameworks.langgraph``)."""

    sessions: list[str]
    conversations: list[str]
    others_forks: list[str]
    threads: list[str] = field(default_factory=list)
    memories: list[int] = field(default_factory=list)


#: What an erase does with ``Traces.others_forks``: ``"erase"`` them whole (the default: they
#: hold the person's messages), or ``"keep"`` them as they are (an operator's explicit choice).
OTHERS_FORKS = ("erase", "keep")


def _delete(tables: list[tuple[str, list[QuerySet[Any]]]]) -> None:
    """Delete the person's rows, in one transaction per database they are in."""
    for using in sorted({rows.db for _, batches in tables for rows in batches}):
        with transaction.atomic(using=using):
            for _, batches in tables:
                for rows in batches:
                    if rows.db == using:
                        rows.delete()


def _tell(traces: Traces) -> None:
    """What this process and the open sockets hold of what was deleted is forgotten."""
    chats = _rows(Conversation).db
    for conversation in traces.conversations:
        seen_histories.forget((chats, conversation))  # this process's copy of the messages
    tell_followers(traces.sessions)
    for conversation in traces.conversations:
        conversation_changed(conversation)


@dataclass(frozen=True)
class Outside:
    """What a store outside the database holds of the person, and how to delete each."""

    label: str
    found: list[Any]
    delete: Callable[[Any], Any]


def erase(
    person: Person, *, dry_run: bool = False, by: str = "", others_forks: str = "erase"
) -> dict[str, int]:
    """Delete every row about ``person`` (with ``dry_run``, only count them): how many rows
    of each kind went (or would go). Forks others made of the person's conversations
    (``traces_of(person).others_forks``) go with the rest, unless ``others_forks="keep"``
    (:data:`OTHERS_FORKS`). Each erase is logged (``warlock_sessions.erasure``, an
    ``erased`` event naming the person as ``str(person)`` does, ``by`` whom, and the counts)
    for an audit trail."""
    if others_forks not in OTHERS_FORKS:
        raise ValueError(f"others_forks is one of {', '.join(OTHERS_FORKS)}, not {others_forks!r}")
    current_tenant()  # with no tenant it would find nothing and say it erased nothing
    found = traces_of(person)
    traces = found
    if others_forks == "erase":
        everyone = sorted({*found.conversations, *found.others_forks})
        traces = replace(found, conversations=everyone, others_forks=[])
    tables = _tables(traces)
    counts = {label: sum(rows.count() for rows in batches) for label, batches in tables}
    outside = _outside(traces)
    for store in outside:
        counts[store.label] = counts.get(store.label, 0) + len(store.found)
    if dry_run:
        return counts
    for store in outside:  # first: should one fail, the rows that find the person remain
        for key in store.found:
            store.delete(key)
    counts["cached answers"] += _forget_cached(traces)
    _delete(tables)
    _tell(traces)
    logger.info(
        "erased %s by %s: %s",
        person,
        by or "code",
        ", ".join(f"{what} {count}" for what, count in counts.items() if count) or "nothing",
        extra={
            "event": "erased",
            "person": str(person),
            "by": by,
            "counts": counts,
            "others_forks": others_forks if found.others_forks else None,
            "tenant": _scope_named(),
        },
    )
    return counts


def _scope_named() -> str:
    """The scope an erase ran in, for its audit line: a tenant, or every tenant's."""
    scope = current_scope()
    return scope if isinstance(scope, str) else "every tenant" if scope is None else "none"


def traces_of(person: Person) -> Traces:
    """The sessions and conversations of ``person``, with every fork of those conversations
    they own too (another's fork of their conversation is that other person's)."""
    owners = _rows(SessionOwner)
    chats = _rows(Conversation)
    if person.user is not None or person.visitor:
        owner: dict[str, Any] = (
            {"user": person.user}
            if person.user is not None
            else {"user": None, "anonymous_key": person.visitor}
        )
        sessions = set(owners.filter(**owner).values_list("session_id", flat=True))
        conversations = set(chats.filter(**owner).values_list("id", flat=True))
        threads = set(_rows(GraphThread).filter(**owner).values_list("id", flat=True))
        memories = set(_rows(MemoryItem).filter(**owner).values_list("pk", flat=True))
    else:
        sessions = {person.session} if person.session else set()
        conversations = {person.conversation} if person.conversation else set()
        root = chats.filter(id=person.conversation).values("user", "anonymous_key").first()
        owner = root or {}
        # A client names a chat by one id, whichever framework keeps it.
        threads = set(
            _rows(GraphThread).filter(id=person.conversation).values_list("id", flat=True)
        )
        memories = set()
    own = _with_forks(conversations, owner)
    return Traces(
        sorted(sessions),
        sorted(own),
        sorted(_with_forks(own, None) - own),
        sorted(threads),
        sorted(memories),
    )


def _with_forks(conversations: set[str], owner: dict[str, Any] | None) -> set[str]:
    """``conversations`` and the forks of them ``owner`` owns (``None``: anyone), and of
    those, to the end."""
    found, frontier = set(conversations), set(conversations)
    while frontier:
        forks: set[str] = set()
        for ids in _batches(frontier):
            rows = _rows(Conversation).filter(forked_from__id__in=ids)
            forks |= set(
                (rows if owner is None else rows.filter(**owner)).values_list("id", flat=True)
            )
        frontier = forks - found
        found |= frontier
    return found


def _tables(traces: Traces) -> list[tuple[str, list[QuerySet[Any]]]]:
    """Each kind of row about the traces, in batches, children before their parents. A
    session's rows are where its store keeps them (the host writes its records with it)."""
    sessions, conversations = traces.sessions, traces.conversations
    store = default_store()
    where = store.using if isinstance(store, DjangoStore) else None
    by_session: list[tuple[str, type[Model]]] = [
        ("session events", SessionEvent),
        ("outbound messages", OutboundMessage),
        ("wakes", Wake),
        ("applied inputs", AppliedInput),
    ]
    tables = [(label, _each(sessions, _of_sessions(model, where))) for label, model in by_session]
    tables += [
        (
            "session owners",
            _each(sessions, lambda ids: _rows(SessionOwner).filter(session_id__in=ids)),
        ),
        ("sessions", _each(sessions, lambda ids: _rows(Session, where).filter(id__in=ids))),
        (
            "conversation messages",
            _each(
                conversations,
                lambda ids: _rows(ConversationMessage).filter(conversation_id__in=ids),
            ),
        ),
        ("conversations", _each(conversations, lambda ids: _rows(Conversation).filter(id__in=ids))),
        ("snapshots", _each(conversations, _snapshots)),
        ("checkpoints", _each(conversations, _checkpoints)),
        (
            "locks",
            _each(
                conversations,
                lambda ids: _rows(SessionLockRow, _lock_alias()).filter(
                    key__in=[f"{RECORD_PREFIX}{key}" for key in ids]
                ),
            ),
        ),
        ("cached answers", _each(conversations, _cached_answers)),
        ("agent states", _each(conversations, _session_states)),
    ]
    tables += [
        (label, _each(traces.threads, _of_threads(model)))
        for label, model in (
            ("graph pending writes", GraphWrite),
            ("graph channel values", GraphBlob),
            ("graph checkpoints", GraphCheckpoint),
        )
    ]
    tables += [
        ("graph threads", _each(traces.threads, lambda ids: _rows(GraphThread).filter(id__in=ids))),
        ("memory items", _each(traces.memories, lambda ids: _rows(MemoryItem).filter(pk__in=ids))),
    ]
    return tables


def _of_sessions(model: type[Model], using: str | None) -> Callable[[list[str]], QuerySet[Any]]:
    if issubclass(model, LeasedWork):  # named by bucket too: read on their shards alone
        return lambda ids: _rows(model, using).filter(**work_of_sessions(ids))
    return lambda ids: _rows(model, using).filter(session_id__in=ids)


def _session_states(conversations: list[str]) -> QuerySet[Any]:
    """The ADK session state kept beside each conversation (``frameworks.adk``)."""
    return _rows(AgentState).filter(scope=AgentState.Scope.SESSION, session_id__in=conversations)


def _of_threads(model: type[Model]) -> Callable[[list[str]], QuerySet[Any]]:
    return lambda ids: _rows(model).filter(thread_id__in=ids)


def _snapshots(conversations: list[str]) -> QuerySet[Any]:
    """A conversation's record (``session:<id>``) and its runs (a tool agent's, an
    orchestrator's), which name it as their ``sessionId``."""
    store = default_snapshot_store()
    using = store.using if isinstance(store, DjangoSnapshotStore) else None
    records = [f"{RECORD_PREFIX}{key}" for key in conversations]
    rows = _rows(Snapshot, using)
    return rows.filter(key__in=records) | rows.filter(payload__sessionId__in=conversations)


def _checkpoints(conversations: list[str]) -> QuerySet[Any]:
    store = default_checkpoint_store()
    using = store.using if isinstance(store, DjangoCheckpointStore) else None
    return _rows(Checkpoint, using).filter(session_id__in=conversations)


def _cached_answers(conversations: list[str]) -> QuerySet[Any]:
    """The semantic cache's answers kept for the conversations (their ``conversation``
    scope). A cache store in the database is emptied through the store (``_forget_cached``)
    as well, so that every process's copy of the scope is read again."""
    return _rows(CacheEntry).filter(scope__in=[f"conversation:{key}" for key in conversations])


def _forget_cached(traces: Traces) -> int:
    """The cache store's own forgetting of the conversations' scopes: what it removed that
    the rows above do not count (a cache outside the database)."""
    cache = default_cache_store()
    if cache is None:
        return 0
    forgotten = sum(cache.forget_scope(f"conversation:{key}") for key in traces.conversations)
    return 0 if kept_in_database(cache) else forgotten


def _outside(traces: Traces) -> list[Outside]:
    """What the stores outside this app's tables hold of the person: a session store in
    Redis or files, a snapshot store there (records and runs), a checkpoint store there (for
    the configured orchestrators: it keeps no list of names)."""
    found: list[Outside] = []
    store = default_store()
    if not isinstance(store, DjangoStore):
        kept = [key for key in traces.sessions if store.load(key) is not None]
        found.append(Outside("sessions", kept, store.delete))
    snapshots = default_snapshot_store()
    if snapshots is not None and not isinstance(snapshots, DjangoSnapshotStore):
        wanted = set(traces.conversations)
        keys = [
            key
            for key in snapshots.list()
            if key.removeprefix(RECORD_PREFIX) in wanted
            or (snapshots.load(key) or {}).get("sessionId") in wanted
        ]
        found.append(Outside("snapshots", keys, snapshots.delete))
    checkpoints = default_checkpoint_store()
    if checkpoints is not None and not isinstance(checkpoints, DjangoCheckpointStore):
        pairs = [
            (orchestrator.name, key)
            for orchestrator in warlock_settings.ORCHESTRATORS
            for key in traces.conversations
            if checkpoints.load(orchestrator.name, key) is not None
        ]
        found.append(Outside("checkpoints", pairs, lambda pair: checkpoints.delete(*pair)))
    return found


def _each(ids: list[Any], rows_of: Callable[[list[Any]], QuerySet[Any]]) -> list[QuerySet[Any]]:
    return [rows_of(batch) for batch in _batches(ids)]


def _batches(ids: Iterable[Any]) -> Iterator[list[Any]]:
    ordered = sorted(ids)
    for start in range(0, len(ordered), BATCH):
        yield ordered[start : start + BATCH]


def _rows(model: type[Model], using: str | None = None) -> QuerySet[Any]:
    return model._default_manager.using(using or router.db_for_write(model) or "default")


def _lock_alias() -> str | None:
    lock: Any = warlock_settings.built("CONVERSATION_LOCK")
    using = getattr(lock, "using", None)
    return using if isinstance(using, str) else None
