"""Long histories on the row store: a send on a conversation this process has seen reads no
message row; one another process moved reads only the rows added since, or every row when
the history was rewritten; and the cache can never hand out a history that is not stored."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connections, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from warlock_sessions.conversations import session
from warlock_sessions.conversations.seen import seen_histories

from .conftest import CONVERSATION_ROWS, conversation_rows
from .fakes import FakeAgent

pytestmark = pytest.mark.parametrize("backend", CONVERSATION_ROWS)


@pytest.fixture(autouse=True)
def nothing_seen() -> Iterator[None]:
    seen_histories.clear()
    yield
    seen_histories.clear()


def message_reads(store: Any, action: Callable[[], Any]) -> list[str]:
    """The SELECTs on the message table ``action`` made."""
    with CaptureQueriesContext(connections[store.using]) as queries:
        action()
    return [
        query["sql"]
        for query in queries.captured_queries
        if query["sql"].startswith("SELECT") and "warlock_conversation_messages" in query["sql"]
    ]


def in_child(backend: str, action: Callable[[Any], Any]) -> None:
    """Run ``action(store)`` in another process, as another server would."""
    connections.close_all()

    def run() -> None:
        seen_histories.clear()  # what the parent saw is not the child's to know
        action(conversation_rows(backend))
        connections.close_all()

    child = multiprocessing.get_context("fork").Process(target=run)
    child.start()
    child.join(30)
    assert child.exitcode == 0


def test_a_seen_conversation_is_sent_without_reading_its_messages(backend: str) -> None:
    """Every send read and copied the whole history (3.5-9x the cost at 5,000 messages)."""
    store = conversation_rows(backend)
    agent = FakeAgent()
    chat = session("seen", store, agent)
    for text in ("a", "b", "c"):
        chat.send(text)
    assert message_reads(store, lambda: chat.send("d")) == []
    assert [m["content"] for m in agent.calls[-1]["history"]] == ["a", "Hello there"] * 1 + [
        "b",
        "Hello there",
        "c",
        "Hello there",
    ]
    seen_histories.clear()  # a process that never saw it reads it once
    assert len(message_reads(store, lambda: chat.send("e"))) == 1
    assert message_reads(store, lambda: chat.send("f")) == []


def test_a_turn_another_process_added_is_read_alone(backend: str) -> None:
    store = conversation_rows(backend)
    agent = FakeAgent()
    chat = session("shared", store, agent)
    chat.send("mine")
    in_child(backend, lambda other: session("shared", other, FakeAgent()).send("theirs"))
    reads = message_reads(store, lambda: chat.send("mine again"))
    assert len(reads) == 1 and "position" in reads[0]
    assert [m["content"] for m in agent.calls[-1]["history"]] == [
        "mine",
        "Hello there",
        "theirs",
        "Hello there",
    ]


def test_a_history_another_process_rewrote_is_read_whole(backend: str) -> None:
    store = conversation_rows(backend)
    agent = FakeAgent()
    chat = session("rewritten", store, agent)
    chat.send("one")
    chat.send("two")

    def truncate_and_send(other: Any) -> None:
        theirs = session("rewritten", other, FakeAgent())
        theirs.truncate(2)
        theirs.send("three")
        theirs.send("four")  # as long as before, with other rows

    in_child(backend, truncate_and_send)
    chat.send("five")
    said = [m["content"] for m in agent.calls[-1]["history"] if m["role"] == "user"]
    assert said == ["one", "three", "four"]

    def delete_and_start_again(other: Any) -> None:
        theirs = session("rewritten", other, FakeAgent())
        theirs.clear()
        for text in ("new", "new", "new"):
            theirs.send(text)  # version 4 again, as before the clear

    in_child(backend, delete_and_start_again)
    chat.send("six")
    said = [m["content"] for m in agent.calls[-1]["history"] if m["role"] == "user"]
    assert said == ["new", "new", "new"]


def test_what_a_caller_changes_or_a_rollback_undoes_never_reaches_the_next_send(
    backend: str,
) -> None:
    store = conversation_rows(backend)
    agent = FakeAgent()
    chat = session("owned", store, agent)
    result = chat.send("a")
    result.messages[-1]["content"] = "changed by the caller"
    record = chat.load()
    assert record is not None
    record["messages"][0]["content"] = "changed too"
    with pytest.raises(RuntimeError), transaction.atomic(using=store.using):
        chat.send("rolled back")
        raise RuntimeError("the caller's transaction fails")
    chat.send("b")
    assert [m["content"] for m in agent.calls[-1]["history"]] == ["a", "Hello there"]


def test_the_cache_holds_at_most_its_setting(backend: str) -> None:
    store = conversation_rows(backend)
    with override_settings(WARLOCK_SESSIONS={"CONVERSATION_CACHE_MESSAGES": 4}):
        first, second = session("first", store, FakeAgent()), session("second", store, FakeAgent())
        first.send("a")
        second.send("a")  # 2 + 2 messages: both kept
        assert message_reads(store, lambda: first.send("b")) == []  # first now holds 4
        assert len(message_reads(store, lambda: second.send("b"))) == 1  # pushed out
        assert message_reads(store, lambda: second.send("c")) == []  # it holds 4: first out
        assert len(message_reads(store, lambda: second.send("d"))) == 1  # 6: never held
    with override_settings(WARLOCK_SESSIONS={"CONVERSATION_CACHE_MESSAGES": 0}):
        assert len(message_reads(store, lambda: first.send("c"))) == 1


def test_rows_read_inside_a_transaction_that_rolls_back_are_never_cached(backend: str) -> None:
    """A load inside an outer transaction cached its own uncommitted rows; after the rollback
    another process reached the same version, and this one sent its agent a history that
    was never stored."""
    store = conversation_rows(backend)
    agent = FakeAgent()
    chat = session("rollback", store, agent)
    chat.send("a")
    with pytest.raises(RuntimeError), transaction.atomic(using=store.using):
        chat.send("x")
        chat.send("y")  # loads inside the transaction: its own rows
        raise RuntimeError("the caller's transaction fails")
    in_child(backend, lambda other: session("rollback", other, FakeAgent()).send("theirs"))
    chat.send("next")
    said = [m["content"] for m in agent.calls[-1]["history"] if m["role"] == "user"]
    assert said == ["a", "theirs"]


def test_the_cache_holds_what_the_database_gives_back(backend: str) -> None:
    from warlock_sessions.conversations.stores import new_record

    store = conversation_rows(backend)
    record = new_record("given")
    record["messages"] = [{"role": "user", "content": "mine", "ids": (1, 2)}]
    store.create(record)
    record["messages"][0]["content"] = "changed by the caller afterwards"
    loaded = store.load("given")
    assert loaded is not None and loaded["messages"] == [
        {"role": "user", "content": "mine", "ids": [1, 2]}
    ]


def test_a_windowed_send_reads_only_its_window_and_never_caches_part_of_a_history(
    backend: str,
) -> None:
    store = conversation_rows(backend)
    chat = session("windowed", store, FakeAgent())
    for index in range(30):
        chat.send(f"q{index}")
    seen_histories.clear()  # another process, or this one restarted
    agent = FakeAgent(history_window=4)
    windowed = session("windowed", store, agent)
    reads = message_reads(store, lambda: windowed.send("q30"))
    assert len(reads) == 1 and "LIMIT 4" in reads[0]
    said = [m["content"] for m in agent.calls[-1]["history"]]
    assert said == ["q28", "Hello there", "q29", "Hello there"]
    assert seen_histories.get((store.using, "windowed")) is None
    history = chat.history()  # a whole load reads every row, not the window it just wrote
    assert len(history) == 62 and history[-2]["content"] == "q30"
    windowed.send("q31")  # seen whole now: the window comes from what this process saw
    said = [m["content"] for m in agent.calls[-1]["history"]]
    assert said == ["q29", "Hello there", "q30", "Hello there"]


@pytest.mark.parametrize("window", [0, -1, True])
def test_a_window_of_no_messages_is_refused_not_read_as_the_whole_history(
    backend: str, window: Any
) -> None:
    store = conversation_rows(backend)
    session("no-window", store, FakeAgent()).send("q1")
    seen_histories.clear()
    with pytest.raises(ValueError, match="a window is a whole number of messages above 0"):
        store.load("no-window", window=window)
    assert seen_histories.get((store.using, "no-window")) is None
