"""Where conversations are kept. Two forms of one small contract:

* ``RecordConversationStore`` keeps each conversation as one record ``session:<id>`` in any
  snapshot store (the upstream design): every write rewrites the whole record.
* ``DjangoConversationStore`` keeps a ``Conversation`` row and one ``ConversationMessage``
  row per message: a turn inserts only its new messages and updates the header, so its cost
  does not grow with the history; ``truncate`` deletes the tail and ``fork`` copies the
  prefix inside the database.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from ..errors import (
    ConversationConflictError,
    SessionExistsError,
    SessionTypeError,
    SnapshotConflictError,
)
from ..redaction import redact_value
from ..snapshots import SnapshotStore
from ..workflows.runs import now_iso

RECORD_TYPE = "conversation-session"
#: A conversation's record is kept under this prefix and its id.
RECORD_PREFIX = "session:"


class ConversationStore(Protocol):
    def load(self, id: str, window: int | None = None) -> dict[str, Any] | None:
        """The whole record (header and messages), a copy, or ``None``. With ``window``, a
        store may read only the newest ``window`` messages: ``offset`` is then how many it
        left out (``append_turn`` writes after them, and a rewritten history replaces only
        what was read)."""
        ...

    def create(self, record: dict[str, Any]) -> None:
        """Store a new conversation; an existing one raises ``SessionExistsError``."""
        ...

    def set_pending(self, record: dict[str, Any], pending: dict[str, Any] | None) -> None:
        """Write (or remove, with ``None``) the pending mark, creating the conversation on its
        first turn."""
        ...

    def append_turn(
        self,
        record: dict[str, Any],
        messages: list[dict[str, Any]],
        added: list[dict[str, Any]] | None,
    ) -> None:
        """Store a finished turn: ``messages`` is the conversation after it and ``added`` what
        it adds to the stored history (``None``: the history itself changed, as compaction
        does, and is stored anew)."""
        ...

    def truncate(self, record: dict[str, Any], n: int) -> None: ...

    def fork(self, record: dict[str, Any], target: dict[str, Any], n: int) -> None:
        """Create ``target`` holding the first ``n`` messages of ``record``, unchanged; an
        existing target raises ``SessionExistsError``."""
        ...

    def delete(self, id: str) -> bool:
        """Remove the conversation and its messages: whether there was one."""
        ...

    def idle(self) -> None:
        """The store is not used for a while (a model call, a lock wait): give back what it
        holds of shared resources (a pooled database connection)."""
        ...


def is_window(value: object) -> bool:
    """Whether ``value`` is a history window: a whole number of messages above 0."""
    return type(value) is int and value >= 1


def new_record(id: str) -> dict[str, Any]:
    now = now_iso()
    return {
        "runId": f"{RECORD_PREFIX}{id}",
        "type": RECORD_TYPE,
        "id": id,
        "messages": [],
        "turns": 0,
        "createdAt": now,
        "updatedAt": now,
    }


def kept_text(record: dict[str, Any]) -> None:
    """The record's messages and pending turn as a store keeps them: redacted when
    ``REDACT`` is set (the turn that is running has the original)."""
    record["messages"] = redact_value(record["messages"])
    if record.get("pending") is not None:
        record["pending"] = redact_value(record["pending"])


class RecordConversationStore:
    """Conversations as records ``session:<id>`` in a snapshot store. On a store that keeps
    versions (``versioned``: the Django and memory stores) every write is conditional on the
    version read: a writer that lost its lock (its lease ran out) and writes late gets
    ``ConversationConflictError`` instead of overwriting the turn of the one that took over. The
    other stores overwrite: give them a lock that cannot be lost, or use the row store."""

    def __init__(self, store: SnapshotStore) -> None:
        self.store = store

    def load(self, id: str, window: int | None = None) -> dict[str, Any] | None:
        """The whole record, however small the ``window``: it is one read either way."""
        key = f"{RECORD_PREFIX}{id}"
        record: dict[str, Any] | None
        if self.store.versioned:
            found = self.store.load_versioned(key)
            record = None if found is None else {**found[0], "version": found[1]}
        else:
            record = self.store.load(key)
        if record is not None and record.get("type") != RECORD_TYPE:
            raise SessionTypeError(
                f"'session:{id}' holds a {record.get('type')!r} record, not a conversation"
            )
        return record

    def _save(self, record: dict[str, Any]) -> None:
        record["updatedAt"] = now_iso()
        if not self.store.versioned:
            self.store.save(record)
            return
        expected = record.get("version", 0)
        try:
            self._save_versioned(record, expected)
        except SnapshotConflictError as error:
            raise ConversationConflictError(record["id"], expected, error.actual_version) from None

    def _save_versioned(self, record: dict[str, Any], expected: int) -> None:
        stored = {key: value for key, value in record.items() if key != "version"}
        self.store.save(stored, expected_version=expected)
        record["version"] = expected + 1

    def create(self, record: dict[str, Any]) -> None:
        kept_text(record)
        if self.store.versioned:
            try:
                self._save_versioned(record, 0)
            except SnapshotConflictError:
                raise SessionExistsError(record["id"]) from None
            return
        if self.store.load(record["runId"]) is not None:
            raise SessionExistsError(record["id"])
        self.store.save(record)

    def set_pending(self, record: dict[str, Any], pending: dict[str, Any] | None) -> None:
        if pending is None:
            record.pop("pending", None)
        else:
            record["pending"] = redact_value(pending)
        self._save(record)

    def append_turn(
        self,
        record: dict[str, Any],
        messages: list[dict[str, Any]],
        added: list[dict[str, Any]] | None,
    ) -> None:
        record["messages"] = list(redact_value(messages))
        record["turns"] += 1
        record.pop("pending", None)
        self._save(record)

    def truncate(self, record: dict[str, Any], n: int) -> None:
        record["messages"] = record["messages"][:n]
        self._save(record)

    def fork(self, record: dict[str, Any], target: dict[str, Any], n: int) -> None:
        target["messages"] = record["messages"][:n]
        self.create(target)

    def delete(self, id: str) -> bool:
        return self.store.delete(f"{RECORD_PREFIX}{id}")

    def idle(self) -> None:
        self.store.idle()


def appended(
    before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """The messages ``after`` adds to ``before``, or ``None`` when ``after`` does not start
    with ``before`` (the agent compacted the history, so the whole of it is rewritten)."""
    if len(after) < len(before):
        return None
    if before and after[len(before) - 1] is not before[-1] and after[: len(before)] != before:
        return None
    return copy.deepcopy(after[len(before) :])
