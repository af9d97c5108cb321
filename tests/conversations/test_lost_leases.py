"""A holder that lost its lease while its agent ran must not overwrite the turn of the one
that took over: the lease tells it, and the version every conditional store checks refuses
its write even when the loss went unnoticed (issue 23, §3)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from warlock_sessions.conversations import ToolAgent, session
from warlock_sessions.errors import LeaseLostError, SessionConflictError
from warlock_sessions.locks import DatabaseLock
from warlock_sessions.models import SessionLockRow
from warlock_sessions.providers import OfflineChatModel
from warlock_sessions.snapshots import MemorySnapshotStore

pytestmark = pytest.mark.django_db(transaction=True)


class Paused(OfflineChatModel):
    """A model that waits, the first time, until the test lets it go on."""

    def __init__(self, started: threading.Event, go_on: threading.Event) -> None:
        super().__init__()
        self.started, self.go_on = started, go_on

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        if not self.started.is_set():
            self.started.set()
            self.go_on.wait(10)
        return super().chat(*args, **kwargs)


def test_a_late_write_after_a_lost_lease_leaves_the_next_holders_turn() -> None:
    store = MemorySnapshotStore()
    started, go_on = threading.Event(), threading.Event()
    slow = ToolAgent(Paused(started, go_on))
    lock = DatabaseLock(ttl=0.3)
    outcome: dict[str, Any] = {}

    def first() -> None:
        try:
            session("c1", store, slow, lock).send("first")
        except Exception as error:
            outcome["first"] = error

    holder = threading.Thread(target=first)
    holder.start()
    assert started.wait(10)
    # The lease ran out unnoticed (a stalled process) and another server took the lock.
    SessionLockRow.objects.filter(key="session:c1").update(token="somebody-else")
    time.sleep(0.3)
    SessionLockRow.objects.filter(key="session:c1").delete()
    second = session("c1", store, ToolAgent(OfflineChatModel()), DatabaseLock(ttl=0.3))
    second.send("second")
    go_on.set()
    holder.join(10)

    assert isinstance(outcome["first"], LeaseLostError)
    said = [m["content"] for m in second.history() if m["role"] == "user"]
    assert said == ["second"]


def test_a_versioned_record_store_refuses_a_write_on_a_stale_record() -> None:
    store = MemorySnapshotStore()
    chat = session("c2", store, ToolAgent(OfflineChatModel()), lock=False)
    chat.send("hello")
    stale = chat.records.load("c2")
    assert stale is not None
    chat.send("moved on")  # another writer, meanwhile
    with pytest.raises(SessionConflictError):
        chat.records.append_turn(
            stale, [*stale["messages"], {"role": "user", "content": "x"}], None
        )
    assert [m["content"] for m in chat.history() if m["role"] == "user"] == ["hello", "moved on"]
