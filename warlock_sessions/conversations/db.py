"""DjangoConversationStore: a ``Conversation`` header and a row per message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connections, router, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..backends.connections import give_back_connection
from ..conf import warlock_settings
from ..encryption import message_place, open_json, pending_place, seal_json, sealing
from ..errors import ConversationConflictError, SessionExistsError
from ..models import Conversation, ConversationMessage, tenant_of_parent
from ..models.quotas import check_quota, create_counted
from ..redaction import redact_value
from .seen import seen_histories
from .stores import RECORD_PREFIX, RECORD_TYPE, is_window, kept_text


def as_stored(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """New objects equal to what reading ``messages`` back gives (tuples as lists, keys as
    text): a JSON round trip, as the message column makes."""
    field = ConversationMessage._meta.get_field("message")
    return [json.loads(field.get_prep_value(message)) for message in messages]


def _opened(id: str, position: int, stored: Any) -> Any:
    return open_json(stored, *message_place(id, position))


def _sealed_pending(id: str, pending: Any) -> Any:
    return None if pending is None else seal_json(pending, *pending_place(id))


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DjangoConversationStore:
    """A turn inserts only its new messages and updates the header under the version it read
    (``ConversationConflictError`` if another writer moved it), in one transaction: its cost does
    not grow with the history. ``truncate`` deletes the tail; a history the agent rewrote
    (compaction) is stored anew. ``load`` reads the header, and only the message rows this
    process has not seen (``seen.py``); the messages it returns are shared with that cache:
    read them, copy one to change it. With a ``window`` (an agent's ``history_window``) a
    load reads the newest rows only, and a turn adds after the rows it did not read."""

    def __init__(self, using: str | None = None, owner: Mapping[str, Any] | None = None) -> None:
        """``owner``: the ``user`` or ``anonymous_key`` the conversations this store creates
        belong to (the API makes one store per request)."""
        self.using: str = using or router.db_for_write(Conversation) or "default"
        self.owner = dict(owner or {})

    @property
    def lock_scope(self) -> tuple[str, str]:
        """Every store on one database shares the in-process lock of its conversations (the
        API makes a store per request)."""
        return ("conversations", self.using)

    def idle(self) -> None:
        give_back_connection(self.using)

    def header(self, id: str) -> Conversation | None:
        return Conversation.objects.using(self.using).filter(id=id).first()

    def claim(self, id: str) -> Conversation | None:
        """The conversation ``id``: created empty for this store's owner unless it exists
        (the row and its owner's count in one transaction, ``QuotaExceededError`` past
        ``MAX_CONVERSATIONS_PER_OWNER``; one made meanwhile is left as it is), then its
        header (``None`` if it was deleted in between)."""
        now = timezone.now()
        limit = warlock_settings.MAX_CONVERSATIONS_PER_OWNER
        fields = {"id": id, "created_at": now, "updated_at": now, **self.owner}
        create_counted(Conversation, self.using, limit, **fields)
        return self.header(id)  # the policy decides on one made meanwhile

    def load(self, id: str, window: int | None = None) -> dict[str, Any] | None:
        if window is not None and not is_window(window):
            raise ValueError(f"a window is a whole number of messages above 0, not {window!r}")
        header = self.header(id)
        if header is None:
            seen_histories.forget((self.using, id))
            return None
        created = _iso(header.created_at)
        stamp = (header.version, created)
        offset, messages = (
            (0, self._history(id, stamp)) if window is None else self._tail(id, stamp, window)
        )
        record: dict[str, Any] = {
            "runId": f"{RECORD_PREFIX}{id}",
            "type": RECORD_TYPE,
            "id": id,
            "messages": messages,
            "turns": header.turns,
            "createdAt": created,
            "updatedAt": _iso(header.updated_at),
            "version": header.version,
        }
        if header.forked_from is not None:
            record["forkedFrom"] = header.forked_from
        if header.pending is not None:
            record["pending"] = header.opened_pending
        if offset:
            record["offset"] = offset
        return record

    def _tail(
        self, id: str, stamp: tuple[int, str], window: int
    ) -> tuple[int, list[dict[str, Any]]]:
        """The newest ``window`` messages at ``stamp`` and how many come before them: from
        what this process saw if nothing moved since, else one read of the newest rows,
        whatever the length of the history. Only a whole history is kept as seen."""
        key = (self.using, id)
        seen = seen_histories.get(key)
        if seen is not None and seen.stamp == stamp:
            offset = max(0, len(seen.messages) - window)
            return offset, list(seen.messages[offset:])
        rows = list(
            self._messages(id)
            .order_by("-position")
            .values_list("id", "position", "message")[:window]
        )
        rows.reverse()
        messages = [_opened(id, position, message) for _, position, message in rows]
        offset = rows[0][1] if rows else 0
        if offset == 0:
            self._remember(key, stamp, messages, rows[-1][0] if rows else None)
        return offset, messages

    def _history(self, id: str, stamp: tuple[int, str]) -> list[dict[str, Any]]:
        """The messages at ``stamp``: as this process last saw them if nothing moved since,
        else those plus the rows added since, else every row."""
        key = (self.using, id)
        seen = seen_histories.get(key)
        if seen is not None and seen.stamp == stamp:
            return list(seen.messages)
        if seen is not None and seen.stamp[1] == stamp[1] and seen.last_row is not None:
            start = len(seen.messages) - 1  # the last row seen: still there, unchanged?
            rows = list(
                self._messages(id)
                .filter(position__gte=start)
                .order_by("position")
                .values_list("id", "position", "message")
            )
            if rows and rows[0][:2] == (seen.last_row, start):
                added = [_opened(id, position, message) for _, position, message in rows[1:]]
                messages = [*seen.messages, *added]
                self._remember(key, stamp, messages, rows[-1][0])
                return messages
        rows = list(
            self._messages(id).order_by("position").values_list("id", "position", "message")
        )
        messages = [_opened(id, position, message) for _, position, message in rows]
        self._remember(key, stamp, messages, rows[-1][0] if rows else None)
        return messages

    def _remember(
        self,
        key: tuple[str, str],
        stamp: tuple[int, str],
        messages: list[dict[str, Any]],
        last_row: int | None,
    ) -> None:
        """Cache what was read or written once it is committed: inside a transaction it may
        be this transaction's own rows, which a rollback would unmake (and SQLite would then
        give their ids to other rows)."""
        kept = list(messages)
        transaction.on_commit(
            lambda: seen_histories.put(key, stamp, kept, last_row), using=self.using
        )

    def _saw(self, record: dict[str, Any], last_row: int | None) -> None:
        """What this process wrote is what it saw (``record["messages"]`` must be the
        store's own objects, as stored), when it holds the whole history."""
        key = (self.using, record["id"])
        if record.get("offset"):
            seen_histories.forget(key)
            return
        stamp = (record["version"], record["createdAt"])
        self._remember(key, stamp, record["messages"], last_row)

    def _last_row_kept(self, record: dict[str, Any]) -> int | None:
        """The last row id seen for the record before its header moved (its rows did not)."""
        seen = seen_histories.get((self.using, record["id"]))
        before = (record["version"] - 1, record["createdAt"])
        return seen.last_row if seen is not None and seen.stamp == before else None

    def create(self, record: dict[str, Any]) -> None:
        kept_text(record)
        try:
            with transaction.atomic(using=self.using):
                self._insert(record)
                last_row = self._add(record["id"], record["messages"], 0)
        except IntegrityError:
            raise SessionExistsError(record["id"]) from None
        self._saw({**record, "messages": as_stored(record["messages"])}, last_row)

    def _insert(self, record: dict[str, Any]) -> Conversation:
        now = timezone.now()
        row = Conversation.objects.using(self.using).create(
            id=record["id"],
            turns=record["turns"],
            pending=_sealed_pending(record["id"], record.get("pending")),
            forked_from=record.get("forkedFrom"),
            created_at=parse_datetime(record["createdAt"]) or now,
            updated_at=now,
            **self.owner,
        )
        record["version"] = 1
        return row

    def _add(self, id: str, messages: list[dict[str, Any]], start: int) -> int | None:
        """Insert the rows: the id of the last one, where the database says (``None`` if it
        does not, or there are none)."""
        tenant = tenant_of_parent(Conversation, self.using, pk=id)
        rows = ConversationMessage._base_manager.using(self.using).bulk_create(
            ConversationMessage(
                conversation_id=id,
                tenant=tenant,
                position=start + index,
                message=seal_json(message, *message_place(id, start + index)),
            )
            for index, message in enumerate(messages)
        )
        return rows[-1].pk if rows else None

    def _update(self, record: dict[str, Any], **fields: Any) -> None:
        """The header's new ``fields``, if it is still at the version the record read."""
        rows = Conversation.objects.using(self.using).filter(
            id=record["id"], version=record["version"]
        )
        if not rows.update(version=F("version") + 1, updated_at=timezone.now(), **fields):
            raise ConversationConflictError(
                record["id"], record["version"], self._version(record["id"])
            )
        record["version"] += 1

    def set_pending(self, record: dict[str, Any], pending: dict[str, Any] | None) -> None:
        pending = redact_value(pending)
        if "version" not in record:  # the first turn of a new conversation
            record["pending"] = pending
            try:
                with transaction.atomic(using=self.using):
                    self._insert(record)
            except IntegrityError:  # another writer made it first, since it was read
                raise ConversationConflictError(
                    record["id"], 0, self._version(record["id"])
                ) from None
            self._saw(record, None)
            return
        self._update(record, pending=_sealed_pending(record["id"], pending))
        self._saw(record, self._last_row_kept(record))
        if pending is None:
            record.pop("pending", None)
        else:
            record["pending"] = pending

    def append_turn(
        self,
        record: dict[str, Any],
        messages: list[dict[str, Any]],
        added: list[dict[str, Any]] | None,
    ) -> None:
        messages, added = redact_value(messages), redact_value(added)
        offset = record.get("offset", 0)  # rows a windowed load left out: kept as they are
        with transaction.atomic(using=self.using):
            self._update(record, pending=None, turns=F("turns") + 1)
            if added is None:  # the agent rewrote the history it read (compaction)
                self._messages(record["id"]).filter(position__gte=offset).delete()
                last_row = self._add(record["id"], messages, offset)
            else:
                last_row = self._add(record["id"], added, offset + len(record["messages"]))
                if not added:
                    last_row = self._last_row_kept(record)
        # The store's own copies, as they read back, never the agent's objects: what it
        # caches must not change when a caller changes a result.
        kept = as_stored(messages) if added is None else [*record["messages"], *as_stored(added)]
        record.update(messages=kept, turns=record["turns"] + 1)
        record.pop("pending", None)
        self._saw(record, last_row)

    def truncate(self, record: dict[str, Any], n: int) -> None:
        with transaction.atomic(using=self.using):
            self._update(record)
            self._messages(record["id"]).filter(position__gte=n).delete()
        record["messages"] = record["messages"][:n]
        self._saw(record, None)  # the next change reads the rows again

    def fork(self, record: dict[str, Any], target: dict[str, Any], n: int) -> None:
        """The prefix is copied by the database (``INSERT … SELECT``), never through Python,
        so the stored JSON stays byte for byte what the provider signed. Sealed messages
        (``ENCRYPTION_KEYS``) are bound to their conversation: they are opened and sealed
        again for the fork (their JSON text unchanged)."""
        try:
            with transaction.atomic(using=self.using):
                limit = warlock_settings.MAX_CONVERSATIONS_PER_OWNER
                check_quota(self._insert(target), limit, self.using)
                copied = self._copy(record["id"], target["id"], n)
                if copied != n or self._version(record["id"]) != record["version"]:
                    # the source moved (a truncate, a turn elsewhere) since it was read
                    raise ConversationConflictError(
                        record["id"], record["version"], self._version(record["id"])
                    )
        except IntegrityError:
            raise SessionExistsError(target["id"]) from None
        target["messages"] = record["messages"][:n]

    def _copy(self, source: str, target: str, n: int) -> int:
        """Copy the first ``n`` messages of ``source`` to ``target``: how many were."""
        if sealing():
            rows = (
                self._messages(source)
                .filter(position__lt=n)
                .order_by("position")
                .values_list("position", "message")
            )
            self._add(target, [_opened(source, position, stored) for position, stored in rows], 0)
            return len(rows)
        connection = connections[self.using]
        table = connection.ops.quote_name(ConversationMessage._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (conversation_id, position, message, tenant)"
                f" SELECT %s, position, message, %s FROM {table}"
                " WHERE conversation_id = %s AND position < %s",
                [target, tenant_of_parent(Conversation, self.using, pk=target), source, n],
            )
            return int(cursor.rowcount)

    def _version(self, id: str) -> int | None:
        header = self.header(id)
        return header.version if header else None

    def _messages(self, id: str) -> Any:
        return ConversationMessage.objects.using(self.using).filter(conversation_id=id)

    def delete(self, id: str) -> bool:
        deleted, _ = Conversation.objects.using(self.using).filter(id=id).delete()
        seen_histories.forget((self.using, id))
        return deleted > 0
