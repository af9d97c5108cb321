"""Key rotation: every sealed (or plain) value in the database sealed again with the current
key of ``ENCRYPTION_KEYS``, in batches, while the app runs (``manage.py warlock_rotate_keys``).

A row is rewritten only where it still is as it was read: a session or a conversation at the
version read, a snapshot at its version; log entries, outbox rows, messages and checkpoints
are never changed by the app once written. A row a turn saved meanwhile was sealed by that
turn with the current key, and is left as it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import models, router

from .checkpoints.base import state_place
from .encryption import SEALED, keyring, open_text, resealed_json, resealed_text, sealed_key
from .errors import ConfigurationError
from .models import (
    Checkpoint,
    Conversation,
    ConversationMessage,
    OutboundMessage,
    Session,
    SessionEvent,
    Snapshot,
    event_place,
    message_place,
    outbox_place,
    pending_place,
)
from .snapshots.base import encode_snapshot

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
    blob = resealed_text(row.blob, "session", row.id, str(row.version))
    # A plain database kept its data in the search column: a sealed one keeps none.
    return None if blob is None else {"blob": blob, "search_text": ""}


def _snapshot(row: Snapshot) -> Changes | None:
    stored = row.payload if isinstance(row.payload, dict) else {}
    ring = keyring()
    if ring is None or sealed_key(stored.get(SEALED)) == ring.current:
        return None
    if sealed_key(stored.get(SEALED)) is not None:
        stored = json.loads(open_text(stored[SEALED], "snapshot", row.key))
    return {"payload": json.loads(encode_snapshot(stored)[1])}


TABLES = (
    SealedColumns("sessions", Session, _session, lambda row: {"version": row.version}),
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
        lambda row: {"version": row.version},
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
    SealedColumns("snapshots", Snapshot, _snapshot, lambda row: {"version": row.version}),
    SealedColumns(
        "checkpoints",
        Checkpoint,
        lambda row: _only({"state": resealed_json(row.state, *state_place(vars(row)))}),
    ),
)


@dataclass
class Progress:
    """What one table's rotation did so far."""

    table: str
    total: int
    read: int = 0
    resealed: int = 0
    moved: int = 0


def rotate(using: str | None = None, batch: int = BATCH) -> Iterator[Progress]:
    """Seal every stored value again with the current key, table by table; yields each
    table's progress after every batch (``Progress.moved``: rows a writer changed meanwhile,
    already sealed by it). ``ConfigurationError`` without ``ENCRYPTION_KEYS``."""
    if keyring() is None:
        raise ConfigurationError(
            "ENCRYPTION_KEYS is not set: there is no key to seal with (docs/privacy.md)"
        )
    for table in TABLES:
        alias = using or router.db_for_write(table.model) or "default"
        rows = table.model._default_manager.using(alias).order_by("pk")
        progress = Progress(table.name, rows.count())
        yield progress
        last: Any = None
        while True:
            page = list((rows if last is None else rows.filter(pk__gt=last))[:batch])
            if not page:
                break
            for row in page:
                _rotate_row(table, alias, row, progress)
            last = page[-1].pk
            progress.read += len(page)
            yield progress


def _rotate_row(table: SealedColumns, alias: str, row: Any, progress: Progress) -> None:
    changes = table.resealed(row)
    if changes is None:
        return
    current = table.model._default_manager.using(alias).filter(pk=row.pk, **table.unchanged(row))
    if current.update(**changes):
        progress.resealed += 1
    else:
        progress.moved += 1
