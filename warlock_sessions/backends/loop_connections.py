"""PostgreSQL connections awaited on the event loop, for turns the host runs there.

Django's connections are synchronous, so async code reaches them through a worker thread. For a
turn that itself cannot block, that hop (waking a thread, handing the result back to the loop,
and the GIL passed between them) cost more CPU than the turn (docs/benchmarks.md).
psycopg's ``AsyncConnection`` needs no thread.

The connections use the parameters of Django's connection for the same alias (database, user,
options, Django's type adapters; ``assume_role`` too), at most ``LOOP_CONNECTIONS`` per alias
and event loop. A loop's connections are closed when the loop shuts down its async generators,
as ``asyncio.run``, asgiref, pytest-asyncio and servers that stop their loop do; otherwise they
close with the process.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from django.core.signals import setting_changed
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.dispatch import receiver

from ..conf import warlock_settings
from .connections import closed_by_server

try:
    from psycopg import AsyncConnection, pq, sql
except ImportError:  # no psycopg 3: every turn goes through a worker thread
    AsyncConnection = None  # type: ignore[assignment,misc]


class _LoopConnections:
    """The connections of one event loop: by alias, the idle ones and a semaphore counting
    those that may still be taken."""

    def __init__(self) -> None:
        self.idle: dict[str, list[Any]] = {}
        self.free: dict[str, asyncio.Semaphore] = {}
        self.closed = False
        self.closer = self._close_at_shutdown()

    async def _close_at_shutdown(self) -> AsyncIterator[None]:
        # The loop's shutdown_asyncgens() closes this generator, which runs the finally.
        try:
            yield
        finally:
            self.closed = True
            for idle in self.idle.values():
                while idle:
                    await idle.pop().close()

    @asynccontextmanager
    async def borrowed(self, using: str, limit: int) -> AsyncIterator[Any]:
        free = self.free.setdefault(using, asyncio.Semaphore(limit))
        idle = self.idle.setdefault(using, [])
        async with free:
            connection = None
            while idle and connection is None:
                connection = idle.pop()
                if closed_by_server(connection):  # a restart, a terminated backend
                    await connection.close()
                    connection = None
            if connection is None:
                connection = await _connect(using)
            try:
                yield connection
            finally:
                if self._usable(connection):
                    idle.append(connection)
                else:
                    await connection.close()

    def _usable(self, connection: Any) -> bool:
        return (
            not self.closed
            and not connection.closed
            and connection.info.transaction_status == pq.TransactionStatus.IDLE
        )


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopConnections] = (
    weakref.WeakKeyDictionary()
)


@functools.cache
def database(using: str) -> BaseDatabaseWrapper:
    """Django's wrapper of database ``using``, never connected: its vendor, features, operations
    and error mapping, from any thread or task. (``connections[using]`` builds a wrapper for
    each asyncio task that asks, which every socket's task would then keep.) Ask it only what
    needs no server: a feature that reads the server's version would connect it."""
    return connections.create_connection(using)


@receiver(setting_changed)
def _databases_changed(setting: str, **kwargs: Any) -> None:
    if setting in ("DATABASES", "TIME_ZONE", "USE_TZ"):
        database.cache_clear()


def loop_connections_available(using: str) -> bool:
    """Whether event loops get connections to database ``using``: PostgreSQL with psycopg 3,
    and ``LOOP_CONNECTIONS`` not 0."""
    return (
        warlock_settings.LOOP_CONNECTIONS != 0
        and AsyncConnection is not None
        and database(using).vendor == "postgresql"
    )


async def _connect(using: str) -> Any:
    wrapper = connections[using]  # its parameters as they are now (a test database's name)
    params = wrapper.get_connection_params()
    params.pop("cursor_factory", None)  # Django's cursors are synchronous
    role = wrapper.settings_dict["OPTIONS"].get("assume_role")
    with wrapper.wrap_database_errors:
        connection = await AsyncConnection.connect(**params, autocommit=True)
        if role:
            try:
                await connection.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            except BaseException:
                await connection.close()
                raise
    return connection


@asynccontextmanager
async def loop_connection(using: str) -> AsyncIterator[Any | None]:
    """An autocommit ``psycopg.AsyncConnection`` to database ``using`` for this event loop,
    waiting while this loop's ``LOOP_CONNECTIONS`` are all in use; ``None`` when there can be
    none (not PostgreSQL with psycopg 3, or ``LOOP_CONNECTIONS`` is 0)."""
    if not loop_connections_available(using):
        yield None
        return
    loop = asyncio.get_running_loop()
    pool = _by_loop.get(loop)
    if pool is None:
        pool = _by_loop[loop] = _LoopConnections()
        await pool.closer.__anext__()  # registers the generator with the loop
    async with pool.borrowed(using, warlock_settings.LOOP_CONNECTIONS) as connection:
        yield connection
