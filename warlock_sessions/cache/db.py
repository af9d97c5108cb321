"""DjangoCacheStore: cached answers as ``CacheEntry`` rows, on any Django database.

A similarity lookup ranks every live entry of its scope exactly, with no database extension:
each process keeps the vectors of the scopes it looked up as one matrix (``ScopeVectors``),
and a lookup asks the database only for the scope's newest row id and how often rows were
removed from it (``CacheScope``, bumped by every removal): both index reads. Rows added
since are read and appended; a scope rows were removed from is read again. So a lookup
costs its scope's size in a matrix product, never the other scopes' rows.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.db import connections, router, transaction
from django.db.models import F, Subquery
from django.db.models.functions import Substr

from ..models import MAX_CACHE_NAMESPACE_LENGTH, MAX_CACHE_SCOPE_LENGTH, CacheEntry, CacheScope
from .base import CacheStore, Entry

#: Vectors all processes' scope matrices hold at most, in all (least recently used first out).
MAX_CACHED_VECTORS = 200_000


def connection_ops(using: str) -> Any:
    return connections[using].ops


def _aware(moment: Any) -> datetime | None:
    """A moment as the driver gives it (SQLite: text), in UTC."""
    if moment is None:
        return None
    found: datetime = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def _seconds(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


@dataclass
class ScopeMatrix:
    removals: int
    newest: int
    ids: np.ndarray  # int64
    expires: np.ndarray  # float64 seconds, inf: never
    vectors: np.ndarray  # float32, one row per id


class ScopeVectors:
    """The vector matrices of the scopes this process looked up (see the module doc)."""

    def __init__(self) -> None:
        self._scopes: OrderedDict[tuple[str, str, str], ScopeMatrix] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> ScopeMatrix | None:
        with self._lock:
            found = self._scopes.get(key)
            if found is not None:
                self._scopes.move_to_end(key)
            return found

    def put(self, key: tuple[str, str, str], matrix: ScopeMatrix) -> None:
        with self._lock:
            old = self._scopes.pop(key, None)
            self._held -= 0 if old is None else len(old.ids)
            self._scopes[key] = matrix
            self._held += len(matrix.ids)
            while self._held > MAX_CACHED_VECTORS and len(self._scopes) > 1:
                _, dropped = self._scopes.popitem(last=False)
                self._held -= len(dropped.ids)

    def clear(self) -> None:
        with self._lock:
            self._scopes.clear()
            self._held = 0


scope_vectors = ScopeVectors()


class DjangoCacheStore(CacheStore):
    """``DjangoCacheStore(using=None)``: the ``CacheEntry`` model (``migrate``). A put
    replaces the entry of its key with a new row (a new id), so a process's matrix of that
    scope sees the change."""

    def __init__(self, using: str | None = None) -> None:
        self.using: str = using or router.db_for_write(CacheEntry) or "default"

    def _rows(self, namespace: str, scope: str) -> Any:
        return CacheEntry.objects.using(self.using).filter(namespace=namespace, scope=scope)

    def _get(self, namespace: str, scope: str, key: str) -> Entry | None:
        row = self._rows(namespace, scope).filter(key=key).first()
        return None if row is None else _entry(row)

    def _put(self, entry: Entry) -> None:
        if len(entry["scope"]) > MAX_CACHE_SCOPE_LENGTH:
            raise ValueError(f"a cache scope is at most {MAX_CACHE_SCOPE_LENGTH} characters")
        if len(entry["namespace"]) > MAX_CACHE_NAMESPACE_LENGTH:
            raise ValueError(
                f"a cache namespace is at most {MAX_CACHE_NAMESPACE_LENGTH} characters"
            )
        vector = entry["vector"]
        with transaction.atomic(using=self.using):
            replaced = self._rows(entry["namespace"], entry["scope"]).filter(key=entry["key"])
            self._removing(replaced)
            row = CacheEntry.objects.using(self.using).create(
                namespace=entry["namespace"],
                scope=entry["scope"],
                key=entry["key"],
                question=entry["question"],
                reply=entry["reply"],
                vector=None if vector is None else np.asarray(vector, np.float32).tobytes(),
                stored_at=datetime.fromtimestamp(entry["storedAt"], UTC),
                expires_at=_moment(entry["expiresAt"]),
            )
            self._stored(row, vector)

    def _stored(self, row: CacheEntry, vector: list[float] | None) -> None:
        """What a subclass keeps of a new row besides it, in the same transaction."""

    def _similar(
        self, namespace: str, scope: str, vector: list[float], top_k: int, at: float
    ) -> list[tuple[float, Entry]]:
        matrix = self._matrix(namespace, scope)
        if not len(matrix.ids) or matrix.vectors.shape[1] != len(vector):
            return []  # nothing stored, or only vectors of another length
        scores = matrix.vectors @ np.asarray(vector, dtype=np.float32)
        scores[matrix.expires <= at] = -np.inf
        top = min(top_k, len(scores))
        nearest = np.argpartition(-scores, top - 1)[:top]
        nearest = nearest[np.argsort(-scores[nearest])]
        best = [int(index) for index in nearest if scores[index] > -np.inf]
        rows = self._by_id(namespace, scope, [int(matrix.ids[index]) for index in best])
        return [
            (float(scores[index]), _entry(rows[int(matrix.ids[index])]))
            for index in best
            if int(matrix.ids[index]) in rows
        ]

    def _matrix(self, namespace: str, scope: str) -> ScopeMatrix:
        """The scope's vectors as they are now in the database (see the module doc)."""
        key = (self.using, namespace, scope)
        rows = self._rows(namespace, scope)
        newest, removals = self._stamp(namespace, scope)
        seen = scope_vectors.get(key)
        if seen is not None and seen.removals == removals:
            if seen.newest == newest:
                return seen
            if newest > seen.newest:
                added = _matrix_of(rows.filter(id__gt=seen.newest), removals)
                joined = _joined(seen, added) if len(added.ids) else seen
                joined.newest = newest
                scope_vectors.put(key, joined)
                return joined
        whole = _matrix_of(rows, removals)
        whole.newest = newest
        scope_vectors.put(key, whole)
        return whole

    def _by_id(self, namespace: str, scope: str, ids: list[int]) -> dict[int, dict[str, Any]]:
        """The rows of ``ids`` in the scope (one statement: a lookup's few nearest answers).
        Named by their scope too: a distributed database reads the scope's shard alone, and
        a row of another scope is never served, whatever ids a process kept."""
        if not ids:
            return {}
        with connections[self.using].cursor() as cursor:
            cursor.execute(
                f"SELECT {', '.join(ENTRY_COLUMNS)}, id FROM {entries_table(self.using)}"
                f" WHERE scope = %s AND namespace = %s AND id IN ({', '.join(['%s'] * len(ids))})",
                [scope, namespace, *ids],
            )
            return {int(row[-1]): entry_values(row) for row in cursor.fetchall()}

    def _stamp(self, namespace: str, scope: str) -> tuple[int, int]:
        """The scope's newest row id and its removals, in one round trip (two index reads)."""
        entries = entries_table(self.using)
        scopes = connection_ops(self.using).quote_name(CacheScope._meta.db_table)
        with connections[self.using].cursor() as cursor:
            cursor.execute(
                f"SELECT (SELECT max(id) FROM {entries} WHERE scope = %s AND namespace = %s),"
                f" (SELECT removals FROM {scopes} WHERE namespace = %s AND scope = %s)",
                [scope, namespace, namespace, scope],
            )
            newest, removals = cursor.fetchone()
        return int(newest or 0), int(removals or 0)

    def _removing(self, rows: Any) -> int:
        """Delete ``rows``, first counting a removal in each scope they are in (in the same
        transaction), so every process reads those scopes again."""
        with transaction.atomic(using=self.using):
            scopes = set(rows.values_list("namespace", "scope").distinct())
            counters = CacheScope.objects.using(self.using)
            for namespace, scope in sorted(scopes):
                counters.get_or_create(namespace=namespace, scope=scope)
                counters.filter(namespace=namespace, scope=scope).update(removals=F("removals") + 1)
            deleted, _ = rows.delete()
            return int(deleted)

    def _remove_scope(self, scope: str) -> int:
        """Every entry of ``scope``, and its removal counters with them: no row is left that
        names the scope (an erased conversation's id). A process that kept the scope's
        vectors reads it again all the same: its newest row id is gone. (Should the id come
        back, such a process may keep vectors of rows that no longer exist until its next
        full read: lookups fetch rows by id, so they are skipped, never served.)"""
        with transaction.atomic(using=self.using):
            entries = CacheEntry.objects.using(self.using).filter(scope=scope)
            deleted, _ = entries.delete()
            CacheScope.objects.using(self.using).filter(scope=scope).delete()
            return int(deleted)

    def forget_gone_conversations(self) -> int:
        """Remove the entries of conversations that no longer exist (``warlock_prune``): a
        conversation deleted in bulk, as retention deletes them, leaves them behind."""
        from ..models import Conversation

        live = Conversation.objects.using(self.using).values("id")
        scoped = CacheEntry.objects.using(self.using).filter(scope__startswith="conversation:")
        gone = scoped.annotate(conversation=Substr("scope", len("conversation:") + 1)).exclude(
            conversation__in=Subquery(live)
        )
        ids = list(gone.values_list("id", flat=True))
        return self._removing(CacheEntry.objects.using(self.using).filter(id__in=ids))

    def _remove_namespace(self, namespace: str) -> int:
        return self._removing(CacheEntry.objects.using(self.using).filter(namespace=namespace))

    def _remove_expired(self, at: float) -> int:
        entries = CacheEntry.objects.using(self.using)
        return self._removing(entries.filter(expires_at__lte=_moment(at)))


def _matrix_of(rows: Any, removals: int) -> ScopeMatrix:
    found = list(rows.exclude(vector=None).order_by("id").values_list("id", "expires_at", "vector"))
    if not found:
        empty = np.zeros((0, 0), np.float32)
        return ScopeMatrix(removals, 0, np.zeros(0, np.int64), np.zeros(0), empty)
    ids = np.asarray([row[0] for row in found], dtype=np.int64)
    expires = np.asarray(
        [np.inf if row[1] is None else row[1].timestamp() for row in found], dtype=np.float64
    )
    rows = [np.frombuffer(bytes(row[2]), dtype=np.float32) for row in found]
    # One length: the most recent row's (an embedder that changed leaves older rows behind).
    width = len(rows[-1])
    keep = np.asarray([len(row) == width for row in rows])
    vectors = np.vstack([row for row in rows if len(row) == width])
    return ScopeMatrix(removals, int(ids[-1]), ids[keep], expires[keep], vectors)


def _joined(seen: ScopeMatrix, added: ScopeMatrix) -> ScopeMatrix:
    if not len(seen.ids):
        return added
    return ScopeMatrix(
        seen.removals,
        added.newest,
        np.concatenate([seen.ids, added.ids]),
        np.concatenate([seen.expires, added.expires]),
        np.vstack([seen.vectors, added.vectors]),
    )


def entries_table(using: str) -> str:
    """The answers' table, quoted for raw SQL on ``using``."""
    return str(connection_ops(using).quote_name(CacheEntry._meta.db_table))


#: The columns a raw read of an answer selects first, in this order (:func:`entry_values`).
ENTRY_COLUMNS = (
    "namespace",
    "scope",
    "key",
    "question",
    "reply",
    "vector",
    "stored_at",
    "expires_at",
)


def entry_values(row: Any) -> dict[str, Any]:
    """A raw row whose first columns are :data:`ENTRY_COLUMNS`, as :func:`_entry` reads it."""
    values = dict(zip(ENTRY_COLUMNS, row, strict=False))
    values["stored_at"], values["expires_at"] = (
        _aware(values["stored_at"]),
        _aware(values["expires_at"]),
    )
    return values


def stored_vector(stored: Any) -> list[float]:
    """A vector as the ``vector`` column keeps it (little-endian float32), as numbers."""
    values: list[float] = np.frombuffer(bytes(stored), np.float32).tolist()
    return values


def _entry(row: Any) -> Entry:
    """An entry from a row, a model instance or its ``values()``."""
    values = row if isinstance(row, dict) else row.__dict__
    vector = values["vector"]
    reply = values["reply"]
    return {
        "namespace": values["namespace"],
        "scope": values["scope"],
        "key": values["key"],
        "question": values["question"],
        "reply": json.loads(reply) if isinstance(reply, str) else reply,
        "vector": None if vector is None else stored_vector(vector),
        "storedAt": _seconds(values["stored_at"]),
        "expiresAt": _seconds(values["expires_at"]),
    }
