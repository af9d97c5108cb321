"""Running the host's synchronous database code from async code (consumers, ``ahandle``)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

from django.db import close_old_connections


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
        return await asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(run, *args, **kwargs)
        )

    return in_thread
