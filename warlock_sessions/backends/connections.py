"""PostgreSQL connections closed by their server, found without a round trip.

A restart of PostgreSQL (or ``pg_terminate_backend``) ends every connection of every pool at
once. Django's ``CONN_HEALTH_CHECKS`` with a pool asks psycopg_pool to run a query on each
connection it hands out, and psycopg_pool backs off (1 s, 2 s, 4 s…) after each dead one it
meets, so a pool full of dead connections times out its callers long after the database is
back: the 500s "after PostgreSQL was back" of issue 23.

An idle autocommit connection is sent nothing by its server, so anything waiting to be read
on its socket (the server's termination notice, end of file) means it is gone: one ``select``
of the socket tells, with no round trip. ``check_pooled`` is that test as psycopg_pool's
``check`` callback: the first dead connection it finds has the pool test every idle one, so a
restart costs the request that noticed it about a second, and nobody else anything.
"""

from __future__ import annotations

import select
from typing import Any

from django.db import connections


def closed_by_server(connection: Any) -> bool:
    """Whether the idle psycopg ``connection`` was closed by its server (or locally)."""
    if connection.closed:
        return True
    try:
        readable, _, _ = select.select([connection.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def check_pooled(connection: Any) -> None:
    """psycopg_pool's ``check`` callback (the ``warlock_sessions.backends.postgresql`` engine
    installs it). Raises for a dead connection, which the pool then replaces, after having
    every idle connection of the pool tested."""
    if not closed_by_server(connection):
        return
    # libpq has not read the notice yet, so the pool would take the connection for a good one
    # and hand it out again: closed, it is discarded and replaced.
    connection.close()
    pool = getattr(connection, "_pool", None)
    if pool is not None:  # its siblings died with it: test them all now, not one per request
        pool.check()
    import psycopg

    raise psycopg.OperationalError("the server closed this connection while it was idle")


def give_back_connection(using: str) -> None:
    """Return this thread's connection to database ``using`` to its pool before a wait that
    needs no database (a model call, a lock held by another turn): a turn waiting on a slow
    model must not hold one of the few pooled connections every request needs. Does nothing
    without a pool (a persistent connection is kept on purpose) or inside a transaction."""
    connection = connections[using]
    if (
        getattr(connection, "pool", None) is not None
        and connection.connection is not None
        and not connection.in_atomic_block
    ):
        connection.close()
