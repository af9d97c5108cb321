"""Running the host's synchronous database code from async code (consumers, ``ahandle``)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections, connections


def in_worker_thread(
    function: Callable[..., Any], pool: Executor | None = None
) -> Callable[..., Awaitable[Any]]:
    """``function`` for async code, run in a worker thread of the event loop's executor (or of
    ``pool``) rather than the one thread Channels keeps for database calls, tidying that
    thread's connection before and after. (Rather than asgiref's ``sync_to_async``, which
    cost more per call: docs/benchmarks.md.)"""

    def run(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()

    async def in_thread(*args: Any, **kwargs: Any) -> Any:
        if pool is None:
            return await asyncio.to_thread(run, *args, **kwargs)
        # As asyncio.to_thread does: the caller's context (its span, its locale) goes along.
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(context.run, run, *args, **kwargs)
        )

    return in_thread


class ProcessThreads:
    """A pool of threads of this process, made on first use, with as many threads as
    ``size()`` says then; made anew in a forked child (a server that forks its workers, a
    test's live server), where the parent's threads do not exist and work handed to them
    would wait for ever."""

    def __init__(self, name: str, size: Callable[[], int]) -> None:
        self.name = name
        self.size = size
        self._executor: ThreadPoolExecutor | None = None
        self._guard = threading.Lock()
        _every_pool.add(self)

    def get(self) -> ThreadPoolExecutor:
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.size(), thread_name_prefix=self.name)
            return self._executor

    def _forget(self) -> None:
        self._executor, self._guard = None, threading.Lock()


_every_pool: weakref.WeakSet[ProcessThreads] = weakref.WeakSet()


def _forget_every_pool() -> None:
    for pool in list(_every_pool):
        pool._forget()


os.register_at_fork(after_in_child=_forget_every_pool)


#: The most threads a pool sized from the database pool has.
MAX_THREADS = 32


def threads_for_database_pool() -> int:
    """As many threads as the default database's pool has connections (PostgreSQL's, once
    built), at most ``MAX_THREADS``: threads that wait on a model give their connection back,
    so the pool, not the threads, is what runs out."""
    pool = getattr(connections["default"], "pool", None)
    size = getattr(pool, "max_size", None)
    return min(MAX_THREADS, size) if isinstance(size, int) else MAX_THREADS
