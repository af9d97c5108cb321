"""What every ``Postgres*`` class shares: one way to be given a database, as ``connection``:

* a ``psycopg_pool.ConnectionPool`` (what a server should pass): each use borrows a connection;
* a ``psycopg.Connection`` the caller owns (not for ``PostgresAdvisoryLock``, whose lock lives
  as long as the connection holding it);
* a conninfo string (``"postgresql://…"`` or ``"dbname=…"``): each use opens a connection of
  its own and closes it, which is simple and costs a connection set-up a call.

The ``Django*`` classes take a Django database alias (``using``) instead."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def is_pool(connection: Any) -> bool:
    return callable(getattr(connection, "getconn", None))


def check_connection(connection: object, who: str, *, own: bool = False) -> Any:
    """``connection`` if it is one of the three shapes (``own``: not a shared connection)."""
    if isinstance(connection, str):
        if not connection.strip():
            raise ValueError(f"{who} needs a conninfo string, a pool or a connection, not ''")
        return connection
    if is_pool(connection):
        return connection
    if own:
        raise ValueError(
            f"{who} needs a psycopg_pool.ConnectionPool or a conninfo string: it holds a "
            f"connection for as long as it holds a lock, so it cannot share one"
        )
    if not callable(getattr(connection, "cursor", None)):
        raise ValueError(
            f"{who} needs a psycopg_pool.ConnectionPool, a psycopg.Connection or a conninfo "
            f"string, not {type(connection).__name__}"
        )
    return connection


@contextmanager
def connection_on(connection: Any) -> Iterator[Any]:
    """A connection to use now, in autocommit unless the caller's own: borrowed from a pool,
    opened from a conninfo string (and closed after), or the caller's connection itself."""
    if isinstance(connection, str):
        import psycopg

        with psycopg.connect(connection, autocommit=True) as opened:
            yield opened
    elif is_pool(connection):
        with connection.connection() as lent:
            yield lent
    else:
        yield connection


@contextmanager
def cursor_on(connection: Any) -> Iterator[Any]:
    """A cursor whose statement commits: a pool lends a connection and commits on return; a
    conninfo string's connection and an autocommit connection commit each statement (or join
    the transaction the caller has open); any other connection gets a transaction of its own
    (a savepoint inside the caller's), which costs two more round trips."""
    with connection_on(connection) as usable:
        if is_pool(connection) or usable.autocommit:
            with usable.cursor() as cursor:
                yield cursor
        else:
            with usable.transaction(), usable.cursor() as cursor:
                yield cursor


def like_prefix(prefix: str) -> str:
    """``prefix`` as a ``LIKE … ESCAPE '\\'`` pattern matching exactly the keys it begins."""
    escaped = prefix.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")
    return escaped + "%"
