"""PgVectorCacheStore: ``DjangoCacheStore``'s rows, ranked inside PostgreSQL by a pgvector HNSW
index, for scopes too large to rank in every process (a cache shared by all of a site's
visitors: one scope of 100,000 answers).

The column and the index are not a migration: the extension is not on every PostgreSQL, and
an HNSW index wants the vectors' length fixed. ``manage.py warlock_cache_index --dimensions N``
makes both (and fills the column from the rows already stored); check W011 says when they are
missing or of another length.

A lookup is one statement: the scope's live entries nearest the question, by the index, with
pgvector's iterative scan (0.8 and later) going on past entries of other scopes until it has
the ``top_k`` asked for. Where it stops short of that (its scan limit: the scope is small
among many), the scope is ranked exactly instead, so a filter never costs a scope its hits,
which is how an index with a filter on top fails (pgvector's README, "Filtering").
"""

from __future__ import annotations

from typing import Any

from django.db import connections, transaction

from ..models import CacheEntry
from .base import Entry
from .db import (
    ENTRY_COLUMNS,
    DjangoCacheStore,
    _entry,
    _moment,
    entries_table,
    entry_values,
    stored_vector,
)

#: The oldest pgvector with iterative index scans.
MIN_PGVECTOR = (0, 8, 0)
#: The longest vector an HNSW index of pgvector's ``vector`` type takes.
MAX_INDEXED_DIMENSIONS = 2000
COLUMN = "embedding"
INDEX = "warlock_cache_hnsw"
#: Rows the column is filled from per statement when the index is made.
FILL_BATCH = 1000
#: What a lookup's search settings are put back to inside a caller's transaction (a
#: ``SET LOCAL`` outlives the savepoint the lookup ran in).
RESET_SETTINGS = (
    "SET LOCAL hnsw.iterative_scan TO DEFAULT; SET LOCAL hnsw.ef_search TO DEFAULT; "
    "SET LOCAL plan_cache_mode TO DEFAULT"
)


class PgVectorCacheStore(DjangoCacheStore):
    """``PgVectorCacheStore(using=None, dimensions=384, ef_search=100)``: answers in the
    ``CacheEntry`` table, as ``DjangoCacheStore`` keeps them, with their vectors also in a
    pgvector column of ``dimensions`` that an HNSW index ranks (``warlock_cache_index``).
    ``ef_search`` is how many candidates the index keeps while it searches (pgvector's
    ``hnsw.ef_search``): more finds the true nearest more often and costs more. A question
    of another length (an embedder that changed) is ranked as ``DjangoCacheStore`` ranks it,
    in the process, until the index is made again for the new length."""

    def __init__(
        self, using: str | None = None, dimensions: int = 384, ef_search: int = 100
    ) -> None:
        super().__init__(using)
        if type(dimensions) is not int or not 1 <= dimensions <= MAX_INDEXED_DIMENSIONS:
            raise ValueError(
                f"dimensions is the embedder's vector length, 1 to {MAX_INDEXED_DIMENSIONS} "
                f"(what an HNSW index takes), not {dimensions!r}"
            )
        if type(ef_search) is not int or not 1 <= ef_search <= 1000:
            raise ValueError(f"ef_search is a whole number from 1 to 1000, not {ef_search!r}")
        self.dimensions = dimensions
        self.ef_search = ef_search

    def _stored(self, row: CacheEntry, vector: list[float] | None) -> None:
        if vector is None or len(vector) != self.dimensions:
            return
        with connections[self.using].cursor() as cursor:
            cursor.execute(_set_vector(self.using), [vector_literal(vector), row.scope, row.pk])

    def _similar(
        self, namespace: str, scope: str, vector: list[float], top_k: int, at: float
    ) -> list[tuple[float, Entry]]:
        if len(vector) != self.dimensions:  # an embedder changed: the rows, ranked here
            return super()._similar(namespace, scope, vector, top_k, at)
        if top_k < 1:
            return []
        query = vector_literal(vector)
        connection = connections[self.using]
        nested = connection.in_atomic_block
        with transaction.atomic(using=self.using), connection.cursor() as cursor:
            self._search_settings(cursor)
            found = self._nearest(cursor, namespace, scope, query, top_k, at, indexed=True)
            if len(found) < top_k:  # the scan's limit, or fewer live entries: rank them all
                found = self._nearest(cursor, namespace, scope, query, top_k, at, indexed=False)
            if nested:  # a SET LOCAL outlives a savepoint: the caller's transaction goes on
                cursor.execute(RESET_SETTINGS)
        return found

    def _search_settings(self, cursor: Any) -> None:
        """The index's search settings, for the transaction ``cursor`` is in (no parameters:
        one round trip for all three). A plan made for the scope asked: a prepared statement's
        generic plan (``prepare_threshold``) knows no scope, and may rank the largest one
        exactly, row by row, rather than by the index."""
        cursor.execute(
            "SET LOCAL hnsw.iterative_scan = strict_order; "
            f"SET LOCAL hnsw.ef_search = {int(self.ef_search)}; "
            "SET LOCAL plan_cache_mode = force_custom_plan"
        )

    def _nearest(
        self,
        cursor: Any,
        namespace: str,
        scope: str,
        query: str,
        top_k: int,
        at: float,
        *,
        indexed: bool,
    ) -> list[tuple[float, Entry]]:
        """The scope's live entries nearest ``query``: by the index, or (not ``indexed``: the
        distance as an expression the index does not serve) every one of them, exactly."""
        distance = f"({COLUMN} <#> %s::vector)"
        order = distance if indexed else f"{distance} + 0"
        cursor.execute(
            f"SELECT {', '.join(ENTRY_COLUMNS)}, -{distance} FROM {entries_table(self.using)} "
            f"WHERE scope = %s AND namespace = %s AND {COLUMN} IS NOT NULL "
            f"AND (expires_at IS NULL OR expires_at > %s) ORDER BY {order} LIMIT %s",
            [query, scope, namespace, _moment(at), query, top_k],
        )
        return [(float(row[-1]), _entry(entry_values(row))) for row in cursor.fetchall()]


def _set_vector(using: str) -> str:
    """The statement that puts an answer's vector (its text form, a scope, an id) in the
    indexed column."""
    return f"UPDATE {entries_table(using)} SET {COLUMN} = %s::vector WHERE scope = %s AND id = %s"


def vector_literal(vector: list[float]) -> str:
    """``vector`` as pgvector's text form, cast with ``::vector`` (no adapter to register)."""
    return "[" + ",".join(format(float(value), ".8g") for value in vector) + "]"


def pgvector_version(using: str) -> tuple[int, ...] | None:
    """The pgvector installed in ``using``'s database (``None``: not installed)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return None if row is None else tuple(int(part) for part in row[0].split(".")[:3])


def column_dimensions(using: str) -> int | None:
    """The vector length of the cache's pgvector column (``None``: there is none)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) "
            "AND attname = %s AND NOT attisdropped",
            [entries_table(using), COLUMN],
        )
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def indexed_dimensions(using: str) -> int | None:
    """The vector length of the cache's pgvector column when its HNSW index is there too
    (``None``: either is missing)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = %s AND indexname = %s",
            [CacheEntry._meta.db_table, INDEX],
        )
        indexed = cursor.fetchone() is not None
    return column_dimensions(using) if indexed else None


def make_index(using: str, dimensions: int) -> int:
    """The pgvector extension, the column of ``dimensions`` and its HNSW index on ``using``,
    each made if missing, and the column filled from the vectors already stored (those of
    that length): how many rows were filled. ``ValueError`` for a pgvector older than 0.8
    or a column of another length (the message says what to do)."""
    PgVectorCacheStore(using, dimensions)  # the same checks of the length
    table = entries_table(using)
    with connections[using].cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
    version = pgvector_version(using) or (0,)
    if version < MIN_PGVECTOR:
        raise ValueError(
            f"pgvector {'.'.join(map(str, version))} has no iterative index scans: "
            "ALTER EXTENSION vector UPDATE to 0.8 or later"
        )
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {COLUMN} vector({dimensions})"
        )
    found = column_dimensions(using)
    if found != dimensions:
        raise ValueError(
            f"the cache's {COLUMN} column holds vectors of {found}: for {dimensions}, drop it "
            f"first (ALTER TABLE {table} DROP COLUMN {COLUMN}) and make the index again"
        )
    filled = _fill(using, dimensions)
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON {table} USING hnsw ({COLUMN} vector_ip_ops)"
        )
    return filled


def _fill(using: str, dimensions: int) -> int:
    """Copy the stored vectors of ``dimensions`` not in the column yet into it, a batch at a
    time: how many."""
    table = entries_table(using)
    filled, last = 0, 0
    while True:
        with connections[using].cursor() as cursor:
            cursor.execute(
                f"SELECT id, scope, vector FROM {table} WHERE id > %s AND vector IS NOT NULL "
                f"AND {COLUMN} IS NULL AND octet_length(vector) = %s ORDER BY id LIMIT %s",
                [last, 4 * dimensions, FILL_BATCH],
            )
            batch = cursor.fetchall()
            if not batch:
                return filled
            last = batch[-1][0]
            cursor.executemany(
                _set_vector(using),
                [(vector_literal(stored_vector(vector)), scope, pk) for pk, scope, vector in batch],
            )
        filled += len(batch)
