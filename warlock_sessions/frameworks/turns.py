"""A framework's run of a conversation held under the conversation's lock
(``CONVERSATION_LOCK``, ``LOCK_TIMEOUT``): another run of it waits, or is refused with
``SessionLockTimeout``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from asgiref.sync import sync_to_async

from ..conversations.configured import conversation_lock
from ..conversations.db import DjangoConversationStore
from ..conversations.session import default_lock
from ..conversations.stores import RECORD_PREFIX

T = TypeVar("T")


@asynccontextmanager
async def holding(store: DjangoConversationStore, conversation_id: str) -> AsyncIterator[None]:
    """Hold the lock of ``conversation_id`` while the block runs. The app's locks are
    synchronous: one is held in a worker thread until the block ends; a block cancelled
    while waiting lets the lock go as soon as it is had."""
    lock = conversation_lock() or default_lock(store)
    loop = asyncio.get_running_loop()
    held, done = asyncio.Event(), threading.Event()

    def hold() -> None:
        loop.call_soon_threadsafe(held.set)
        done.wait()

    holder = asyncio.ensure_future(
        sync_to_async(lock.with_lock, thread_sensitive=False)(
            f"{RECORD_PREFIX}{conversation_id}", hold
        )
    )
    waiting = asyncio.ensure_future(held.wait())
    try:
        await asyncio.wait({holder, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not held.is_set():
            await holder  # the lock was refused: its error
    except BaseException:
        done.set()
        raise
    finally:
        waiting.cancel()
    try:
        yield
    finally:
        done.set()
        await holder


def run_holding(store: DjangoConversationStore, conversation_id: str, run: Callable[[], T]) -> T:
    """:func:`holding` for synchronous code: ``run()`` under the lock, its result."""
    lock = conversation_lock() or default_lock(store)
    return lock.with_lock(f"{RECORD_PREFIX}{conversation_id}", run)
