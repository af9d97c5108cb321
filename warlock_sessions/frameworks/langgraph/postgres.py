"""``WarlockSaver``'s three hot calls on PostgreSQL, each one statement (one round trip):
``put`` (the thread's header, the new channel values and the checkpoint, in data-modifying
CTEs), ``put_writes`` (every write, the special ones replacing), and ``get_tuple`` (the
checkpoint with its channel values and pending writes, aggregated in subqueries). Elsewhere,
and for everything else, the saver uses the ORM; one conformance suite runs both.

A tenant's scope is in each statement: a thread another tenant keeps is neither read nor
written (``put`` answers no row, which the saver reports as ``OfAnotherTenantError``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections

#: The thread's header (made, or moved on a version), the checkpoint's new channel values,
#: and the checkpoint; the header's tenant when it is this scope's to write.
PUT = """
WITH header AS (
    INSERT INTO warlock_graph_threads
        (id, tenant, user_id, anonymous_key, version, created_at, updated_at)
    VALUES (%(thread)s, %(new_tenant)s, %(user)s, %(visitor)s, 1, now(), now())
    ON CONFLICT (id) DO UPDATE
        SET version = warlock_graph_threads.version + 1, updated_at = now()
        WHERE %(scope)s::text IS NULL OR warlock_graph_threads.tenant = %(scope)s::text
    RETURNING tenant
), blobs AS (
    INSERT INTO warlock_graph_blobs (tenant, thread_id, namespace, channel, version, kind, value)
    SELECT header.tenant, %(thread)s, %(namespace)s, new.channel, new.version, new.kind, new.value
    FROM header, (VALUES {rows}) AS new (channel, version, kind, value)
    WHERE new.channel IS NOT NULL
    ON CONFLICT (thread_id, namespace, channel, version) DO NOTHING
)
INSERT INTO warlock_graph_checkpoints
    (tenant, thread_id, namespace, checkpoint_id, parent_id, run_id, kind, checkpoint,
     channel_versions, metadata)
SELECT header.tenant, %(thread)s, %(namespace)s, %(checkpoint_id)s, %(parent_id)s,
       %(run_id)s, %(kind)s, %(checkpoint)s, %(channel_versions)s::jsonb, %(metadata)s::jsonb
FROM header
ON CONFLICT (thread_id, namespace, checkpoint_id) DO UPDATE
    SET parent_id = EXCLUDED.parent_id, run_id = EXCLUDED.run_id, kind = EXCLUDED.kind,
        checkpoint = EXCLUDED.checkpoint, channel_versions = EXCLUDED.channel_versions,
        metadata = EXCLUDED.metadata
RETURNING tenant
"""

#: A task's writes, under the thread's header (made if LangGraph's background ``put`` has not
#: yet) when this scope may write it: the header's tenant, else no row (another tenant's
#: thread, or one another writer made at the same moment). The special writes (negative
#: index) replace what a retry wrote.
PUT_WRITES = """
WITH found AS (
    SELECT tenant FROM warlock_graph_threads WHERE id = %(thread)s
), made AS (
    INSERT INTO warlock_graph_threads
        (id, tenant, user_id, anonymous_key, version, created_at, updated_at)
    SELECT %(thread)s, %(new_tenant)s, %(user)s, %(visitor)s, 1, now(), now()
    WHERE NOT EXISTS (SELECT 1 FROM found)
    ON CONFLICT (id) DO NOTHING
    RETURNING tenant
), header AS (
    SELECT tenant FROM (SELECT tenant FROM found UNION ALL SELECT tenant FROM made) AS kept
    WHERE %(scope)s::text IS NULL OR tenant = %(scope)s::text
), written AS (
    INSERT INTO warlock_graph_writes
        (tenant, thread_id, namespace, checkpoint_id, task_id, task_path, idx, channel, kind,
         value)
    SELECT header.tenant, %(thread)s, %(namespace)s, %(checkpoint_id)s, %(task_id)s,
           %(task_path)s, new.idx, new.channel, new.kind, new.value
    FROM header, (VALUES {rows}) AS new (idx, channel, kind, value)
    ON CONFLICT (thread_id, namespace, checkpoint_id, task_id, idx) DO UPDATE
        SET channel = EXCLUDED.channel, kind = EXCLUDED.kind, value = EXCLUDED.value,
            task_path = EXCLUDED.task_path
        WHERE EXCLUDED.idx < 0 AND warlock_graph_writes.tenant = EXCLUDED.tenant
)
SELECT tenant FROM header
"""

#: Checkpoints of a thread's namespace with their channel values and pending writes;
#: ``checkpoints_statement`` says which.
CHECKPOINTS = """
SELECT c.checkpoint_id, c.parent_id, c.kind, c.checkpoint, c.metadata,
    (SELECT array_agg(ARRAY[convert_to(b.channel, 'UTF8'), convert_to(b.version, 'UTF8'),
                            convert_to(b.kind, 'UTF8'), b.value])
     FROM jsonb_each_text(c.channel_versions) AS cv (channel, version)
     JOIN warlock_graph_blobs b
       ON b.thread_id = c.thread_id AND b.namespace = c.namespace
      AND b.channel = cv.channel AND b.version = cv.version AND b.kind <> 'empty'
      AND b.tenant = c.tenant),
    (SELECT array_agg(ARRAY[convert_to(w.task_id, 'UTF8'), convert_to(w.channel, 'UTF8'),
                            convert_to(w.kind, 'UTF8'), w.value, convert_to(w.task_path, 'UTF8'),
                            convert_to(w.idx::text, 'UTF8')])
     FROM warlock_graph_writes w
     WHERE w.thread_id = c.thread_id AND w.namespace = c.namespace
       AND w.checkpoint_id = c.checkpoint_id AND w.tenant = c.tenant)
FROM warlock_graph_checkpoints c
WHERE c.thread_id = %(thread)s AND c.namespace = %(namespace)s
"""


@functools.lru_cache(maxsize=256)
def put_statement(blobs: int) -> str:
    """:data:`PUT` for ``blobs`` new channel values, each its own parameters: rows of an
    ``unnest`` of arrays cost a big value a third more."""
    rows = ", ".join(
        f"(%(channel_{n})s::text, %(version_{n})s::text, %(kind_{n})s::text, %(value_{n})s::bytea)"
        for n in range(blobs)
    )
    return PUT.format(rows=rows or "(NULL::text, NULL::text, NULL::text, NULL::bytea)")


@functools.lru_cache(maxsize=256)
def put_writes_statement(writes: int) -> str:
    """:data:`PUT_WRITES` for ``writes`` writes, each its own parameters."""
    return PUT_WRITES.format(
        rows=", ".join(
            f"(%(idx_{n})s::int, %(channel_{n})s::text, %(kind_{n})s::text, %(value_{n})s::bytea)"
            for n in range(writes)
        )
    )


def numbered(rows: list[tuple[Any, ...]], *names: str) -> dict[str, Any]:
    """``rows`` as the numbered parameters of the ``VALUES`` the statements above make."""
    return {
        f"{name}_{n}": value
        for n, row in enumerate(rows)
        for name, value in zip(names, row, strict=True)
    }


@functools.lru_cache(maxsize=256)
def checkpoints_statement(named: bool, scoped: bool, before: bool, filters: int) -> str:
    """:data:`CHECKPOINTS`, newest first, up to ``%(limit)s``: the one ``named`` by its id or
    any, a tenant's (``scoped``) or any, those ``before`` an id or all, with ``filters``
    metadata keys equal to their values. Each combination its own statement, planned for what
    it asks (one ``OR`` of the cases cost a third of the statement's time)."""
    conditions = [
        "  AND c.checkpoint_id = %(checkpoint_id)s\n" if named else "",
        "  AND c.tenant = %(scope)s\n" if scoped else "",
        "  AND c.checkpoint_id < %(before)s\n" if before else "",
        *(f"  AND c.metadata -> %(key_{n})s = %(value_{n})s::jsonb\n" for n in range(filters)),
    ]
    return CHECKPOINTS + "".join(conditions) + "ORDER BY c.checkpoint_id DESC\nLIMIT %(limit)s\n"


def on_postgresql(using: str) -> bool:
    """Whether ``using`` is PostgreSQL through psycopg 3 (these statements use its cursor;
    Django's psycopg2 backend takes the ORM's path)."""
    connection = connections[using]
    driver = getattr(connection, "Database", None)
    return connection.vendor == "postgresql" and getattr(driver, "__name__", "") == "psycopg"


@contextmanager
def _cursor(using: str) -> Iterator[Any]:
    """A psycopg cursor of its own on ``using``'s connection (in its transaction, if one is
    open), prepared statements and parameters bound on the server: Django's default cursor
    binds them into the statement's text (a channel value as hex twice its size) and
    prepares none."""
    import psycopg  # only where on_postgresql says the connection is psycopg's

    connection = connections[using]
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


def run_all(using: str, statement: str, parameters: dict[str, Any]) -> list[Any]:
    """``statement``'s rows."""
    with _cursor(using) as cursor:
        cursor.execute(statement, parameters, prepare=True)
        rows: list[Any] = cursor.fetchall()
        return rows


def run(using: str, statement: str, parameters: dict[str, Any]) -> Any:
    """``statement``'s one row (``None`` when none)."""
    with _cursor(using) as cursor:
        cursor.execute(statement, parameters, prepare=True)
        return cursor.fetchone() if cursor.description else None
