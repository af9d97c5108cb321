"""Key rotation: every sealed (or plain) value in the database sealed again with the current
key of ``ENCRYPTION_KEYS``, in batches, while the app runs (``manage.py warlock_rotate_keys``).

A row is rewritten only where it still is as it was read: a session or a conversation at the
version and creation read (not one deleted and made again under its id), a snapshot as last
saved; log entries, outbox rows, messages and checkpoints are never changed by the app once
written. A row a turn saved meanwhile was sealed by that turn with the current key, and is
left as it is. A value that does not open is counted and named, not rewritten, and the
rotation goes on. Sessions and snapshots in configured stores outside the database are
sealed again through the stores themselves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import models, router

from .cache import default_cache_store, kept_in_database
from .checkpoints import DjangoCheckpointStore, default_checkpoint_store
from .encryption import (
    PREFIX,
    SEALED,
    SEALED_KIND,
    agent_state_place,
    event_place,
    keyring,
    memory_place,
    message_place,
    open_text,
    outbox_place,
    pending_place,
    resealed_bytes,
    resealed_json,
    resealed_text,
    sealed_key,
    session_place,
    snapshot_place,
    state_place,
)
from .errors import ConfigurationError, EncryptionError, SessionConflictError, SnapshotConflictError
from .host.retention import pages_by_pk
from .models import (
    AgentState,
    CacheEntry,
    Checkpoint,
    Conversation,
    ConversationMessage,
    GraphBlob,
    GraphCheckpoint,
    GraphWrite,
    MemoryItem,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionOwner,
    Snapshot,
)
from .models.said import said_models, sealed_columns
from .snapshots import DjangoSnapshotStore, SnapshotStore, default_snapshot_store
from .snapshots.base import encode_snapshot
from .stores import DjangoStore, Store, default_store

#: Rows read and rewritten at a time.
BATCH = 500

Changes = dict[str, Any]


@dataclass(frozen=True)
class SealedColumns:
    """A table with sealed values: how a row's values are sealed again (``None``: nothing to
    do) and what must still hold for the rewrite to land."""

    name: str
    model: type[models.Model]
    resealed: Callable[[Any], Changes | None]
    unchanged: Callable[[Any], dict[str, Any]] = lambda row: {}


def _only(changes: Changes) -> Changes | None:
    kept = {column: value for column, value in changes.items() if value is not None}
    return kept or None


def _session(row: Session) -> Changes | None:
    blob = resealed_text(row.blob, *session_place(row.id, row.version))
    # A plain database kept its data in the search column: a sealed one keeps none.
    return None if blob is None else {"blob": blob, "search_text": ""}


def _snapshot(row: Snapshot) -> Changes | None:
    stored = row.payload if isinstance(row.payload, dict) else {}
    ring = keyring()
    if ring is None:
        return None
    if sealed_key(stored.get(SEALED)) is not None:
        opened = open_text(stored[SEALED], *snapshot_place(row.key))  # raises if it does not
        if sealed_key(stored[SEALED]) == ring.current:
            return None
        stored = json.loads(opened)
    return {"payload": json.loads(encode_snapshot(stored)[1])}


def _graph_value(field: str) -> Callable[[Any], Changes | None]:
    """A graph row's value (``GraphCheckpoint``'s checkpoint, the others' value) sealed
    again, its type marked sealed; an absent channel value (``empty``) has none."""

    def resealed(row: Any) -> Changes | None:
        if row.kind == "empty":
            return None
        sealed = row.kind.endswith(SEALED_KIND)
        value = resealed_bytes(bytes(getattr(row, field)), sealed, *row.value_place)
        if value is None:
            return None
        return {field: value, "kind": row.kind.removesuffix(SEALED_KIND) + SEALED_KIND}

    return resealed


def current_key_in_use(using: str | None = None) -> bool:
    """Whether the servers have sealed anything with the current key yet: a session or a log
    entry of the database sealed with it (every turn writes both). None has: the key may be new to
    this command alone, and every row sealed with it would answer ``409 encryption-error``
    on servers that do not have it."""
    ring = keyring()
    if ring is None:
        return False
    prefix = f"{PREFIX}{ring.current}."
    probes = (
        (Session, {"blob__startswith": prefix}),
        (SessionEvent, {"payload__sealed__startswith": prefix}),
    )
    return any(
        model._default_manager.using(using or router.db_for_read(model) or "default")
        .filter(**lookup)
        .exists()
        for model, lookup in probes
    )


#: How each model with sealed columns (``models.said``) has them sealed again.
RESEALED_BY_MODEL = {
    table.model: table
    for table in (
        SealedColumns(
            "sessions",
            Session,
            _session,
            lambda row: {"version": row.version, "created_at": row.created_at},
        ),
        SealedColumns(
            "session events",
            SessionEvent,
            lambda row: _only(
                {"payload": resealed_json(row.payload, *event_place(row.session_id, row.seq))}
            ),
        ),
        SealedColumns(
            "outbound messages",
            OutboundMessage,
            lambda row: _only(
                {
                    "text": resealed_text(row.text, *outbox_place(row.session_id, row.key)),
                    "payload": resealed_json(
                        row.payload, *outbox_place(row.session_id, row.key, "payload")
                    ),
                }
            ),
        ),
        SealedColumns(
            "conversations",
            Conversation,
            lambda row: (
                None
                if row.pending is None
                else _only({"pending": resealed_json(row.pending, *pending_place(row.id))})
            ),
            lambda row: {"version": row.version, "created_at": row.created_at},
        ),
        SealedColumns(
            "conversation messages",
            ConversationMessage,
            lambda row: _only(
                {
                    "message": resealed_json(
                        row.message, *message_place(row.conversation_id, row.position)
                    )
                }
            ),
        ),
        SealedColumns(
            "snapshots",
            Snapshot,
            _snapshot,
            lambda row: {"version": row.version, "saved_at": row.saved_at},
        ),
        SealedColumns(
            "checkpoints",
            Checkpoint,
            lambda row: _only({"state": resealed_json(row.state, *state_place(vars(row)))}),
        ),
        SealedColumns("graph checkpoints", GraphCheckpoint, _graph_value("checkpoint")),
        SealedColumns("graph channel values", GraphBlob, _graph_value("value")),
        SealedColumns("graph pending writes", GraphWrite, _graph_value("value")),
        SealedColumns(
            "memory items",
            MemoryItem,
            lambda row: _only(
                {"value": resealed_json(row.value, *memory_place(row.namespace, row.key))}
            ),
            lambda row: {"updated_at": row.updated_at},
        ),
        SealedColumns(
            "agent states",
            AgentState,
            lambda row: _only(
                {"state": resealed_json(_decoded(row.state), *_agent_state_place(row))}
            ),
            lambda row: {"updated_at": row.updated_at},
        ),
        SealedColumns(
            "cached answers",
            CacheEntry,
            lambda row: _only(
                {
                    "question": resealed_text(row.question, *row.value_place),
                    "reply": resealed_json(row.reply, *row.value_place),
                }
            ),
        ),
    )
}


def _decoded(stored: Any) -> Any:
    """A JSON column's value, decoded once more if a raw statement stored it as JSON text."""
    return json.loads(stored) if isinstance(stored, str) else stored


def _agent_state_place(row: AgentState) -> tuple[str, ...]:
    return agent_state_place(row.scope, row.app_name, row.user_id, row.session_id)


#: The tables rotation seals again: every model with a sealed column, in the registry's order.
TABLES = tuple(RESEALED_BY_MODEL[model] for model in said_models() if sealed_columns(model))


@dataclass
class Progress:
    """What one table's rotation did so far."""

    table: str
    total: int
    read: int = 0
    resealed: int = 0
    moved: int = 0
    #: Where values that do not open are (``EncryptionError``): left as they are.
    unreadable: list[str] = field(default_factory=list)

    def could_not_open(self, error: EncryptionError) -> None:
        self.unreadable.append(f"{'/'.join(error.where)}: {error.why}")


def rotate(using: str | None = None, batch: int = BATCH) -> Iterator[Progress]:
    """Seal every stored value again with the current key, table by table; yields each
    table's progress after every batch (``Progress.moved``: rows a writer changed meanwhile,
    already sealed by it). ``ConfigurationError`` without ``ENCRYPTION_KEYS``."""
    if keyring() is None:
        raise ConfigurationError(
            "ENCRYPTION_KEYS is not set: there is no key to seal with (docs/privacy.md)"
        )
    for table in TABLES:
        if not _kept_by_django(table.model):
            continue
        alias = using or router.db_for_write(table.model) or "default"
        rows = table.model._default_manager.using(alias).order_by("pk")
        progress = Progress(table.name, rows.count())
        yield progress
        for page in pages_by_pk(rows, batch):
            for row in page:
                _rotate_row(table, alias, row, progress)
            progress.read += len(page)
            yield progress
    yield from _outside_stores(using)


def _kept_by_django(model: type[models.Model]) -> bool:
    """Whether the configured store of the model's rows is the database's own (the tables
    of the others are not where their values are)."""
    if model is Snapshot:
        return isinstance(default_snapshot_store(), DjangoSnapshotStore | type(None))
    if model is Checkpoint:
        return isinstance(default_checkpoint_store(), DjangoCheckpointStore | type(None))
    if model is CacheEntry:
        store = default_cache_store()
        return store is None or kept_in_database(store)
    return True


def _outside_stores(using: str | None) -> Iterator[Progress]:
    """The configured session and snapshot stores that keep values outside the database's
    tables, sealed again through their own load and conditional save."""
    store = default_store()
    if not isinstance(store, DjangoStore):
        yield from _stored_sessions(store, using)
    snapshots = default_snapshot_store()
    if snapshots is not None and not isinstance(snapshots, DjangoSnapshotStore):
        yield from _stored_snapshots(snapshots)


def not_rotated() -> list[str]:
    """The configured stores whose values rotation cannot seal again, and why."""
    found = []
    checkpoints = default_checkpoint_store()
    if checkpoints is not None and not isinstance(checkpoints, DjangoCheckpointStore):
        found.append(
            f"CHECKPOINT_STORE {type(checkpoints).__name__} appends rows it never rewrites: its "
            "rows sealed with an older key open only while that key is configured (they go as "
            "warlock_prune and the orchestrators prune them)"
        )
    cache = default_cache_store()
    if cache is not None and not kept_in_database(cache):
        found.append(
            f"CACHE_STORE {type(cache).__name__} keeps its answers outside the database: one "
            "sealed with an older key is a miss once that key is gone (the cache fills again)"
        )
    return found


def _stored_sessions(store: Store, using: str | None) -> Iterator[Progress]:
    """A store outside the database lists no sessions: those the host's records name are
    the ones it keeps (every turn logs; a claimed session has an owner)."""
    alias = using or router.db_for_write(SessionEvent) or "default"
    ids = sorted(
        set(SessionEvent.objects.using(alias).values_list("session_id", flat=True).distinct())
        | set(SessionOwner.objects.using(alias).values_list("session_id", flat=True))
    )

    def reseal(session_id: str) -> bool:
        session = store.load(session_id)
        if session is None or not _sealed_with_old_key(store, session_id):
            return False
        store.save(session, session["version"])
        return True

    progress = Progress(f"sessions ({type(store).__name__})", len(ids))
    yield from _resealing(progress, ids, reseal, SessionConflictError)


def _sealed_with_old_key(store: Store, session_id: str) -> bool:
    stored = store._read(session_id)
    ring = keyring()
    if stored is None or ring is None:
        return False
    text = stored[0].decode() if isinstance(stored[0], bytes) else stored[0]
    return sealed_key(text) != ring.current


def _stored_snapshots(store: SnapshotStore) -> Iterator[Progress]:
    keys = store.list()

    def reseal(key: str) -> bool:
        if store.versioned:
            found = store.load_versioned(key)
            if found is not None:
                store.save(found[0], expected_version=found[1])
        else:
            snapshot = store.load(key)
            if snapshot is not None:
                store.save(snapshot)
        return True

    progress = Progress(f"snapshots ({type(store).__name__})", len(keys))
    yield from _resealing(progress, keys, reseal, SnapshotConflictError)


def _resealing(
    progress: Progress,
    keys: list[str],
    reseal: Callable[[str], bool],
    moved: type[Exception],
) -> Iterator[Progress]:
    """Seal each of ``keys`` again through a store's own load and save (``reseal``: whether
    it did), counting on ``progress`` what would not open and what ``moved`` meanwhile."""
    yield progress
    for key in keys:
        try:
            if reseal(key):
                progress.resealed += 1
        except EncryptionError as error:
            progress.could_not_open(error)
        except moved:
            progress.moved += 1
        progress.read += 1
    yield progress


def _rotate_row(table: SealedColumns, alias: str, row: Any, progress: Progress) -> None:
    try:
        changes = table.resealed(row)
    except EncryptionError as error:
        progress.could_not_open(error)
        return
    if changes is None:
        return
    current = table.model._default_manager.using(alias).filter(pk=row.pk, **table.unchanged(row))
    if current.update(**changes):
        progress.resealed += 1
    else:
        progress.moved += 1
