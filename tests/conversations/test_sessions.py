"""Conversation sessions (scenarios 14-27) on every snapshot store: turns, failures, a real
crash mid-send and resume, concurrency, aborting, streaming, fork, truncate and clear."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from tests.services import REDIS_URL
from tests.snapshots.conftest import (
    SNAPSHOT_BACKENDS,
    SnapshotFactory,
    needs_redis,
    snapshot_factory,
)
from warlock_sessions.conversations import session
from warlock_sessions.conversations.stores import new_record
from warlock_sessions.errors import (
    AgentDriftError,
    ResumeInProgressError,
    SessionExistsError,
    SessionNotFoundError,
    ToolPairError,
)
from warlock_sessions.locks import AbortSignal, InProcessLock
from warlock_sessions.snapshots import MemorySnapshotStore

from .conftest import CONVERSATION_ROWS, conversation_rows
from .fakes import FakeAgent, NoDurableStoreError


def test_two_turns_and_what_is_stored(make_store: SnapshotFactory) -> None:
    agent = FakeAgent()
    chat = session("user-42", make_store(), agent)
    chat.send("My name is Sara.")
    result = chat.send("What is my name?")
    assert result.text == "Hello there"
    assert [m["role"] for m in agent.calls[1]["history"]] == ["user", "assistant"]
    record = chat.load()
    assert record is not None
    assert (record["runId"], record["type"], record["turns"]) == (
        "session:user-42",
        "conversation-session",
        2,
    )
    assert len(record["messages"]) == 4 and "pending" not in record
    assert all(m["role"] != "system" for m in record["messages"])
    assert record["messages"][1]["blocks"] == [{"type": "thinking", "signature": "sig=="}]
    assert agent.calls[0]["session_id"] == "user-42"


def test_tool_turns_are_stored_as_returned(make_store: SnapshotFactory) -> None:
    chat = session("t", make_store(), FakeAgent(use_tool=True))
    chat.send("look it up")
    assert [m["role"] for m in chat.history()] == ["user", "assistant", "tool", "assistant"]


#: Numbers jsonb would change: 1e100 and 1e16 come back as integers, -0.0 as 0.0.
AWKWARD_NUMBERS = [1e100, 1e16, -0.0, 0.1, 1e-7, 2**63 - 1, -(2**63)]
#: The snapshot stores that keep a conversation's record in PostgreSQL's jsonb.
JSONB_RECORDS = {"postgres", "django-postgres"}


def test_turns_read_back_exactly_as_the_agent_returned_them(
    make_store: SnapshotFactory, request: pytest.FixtureRequest
) -> None:
    """The row store on PostgreSQL kept messages in jsonb, which changes numbers."""
    import json

    chat = session("numbers", make_store(), FakeAgent())
    chat.send(AWKWARD_NUMBERS)
    stored = session("numbers", make_store(), FakeAgent()).history()[0]["content"]
    backend = request.node.callspec.params["make_store"]
    if backend in JSONB_RECORDS:  # documented: jsonb normalises them
        assert stored == [10**100, 10**16, 0.0, 0.1, 1e-7, 2**63 - 1, -(2**63)]
    else:
        assert json.dumps(stored) == json.dumps(AWKWARD_NUMBERS), backend


@pytest.mark.parametrize("how", ["error", "raise"])
def test_a_failed_run_changes_nothing(make_store: SnapshotFactory, how: str) -> None:
    store = make_store()
    session("s", store, FakeAgent()).send("first")
    before = session("s", store, FakeAgent()).history()
    problem = RuntimeError("model down")
    agent = FakeAgent(fail=problem) if how == "error" else FakeAgent(raises=problem)
    chat = session("s", store, agent)
    if how == "error":
        assert chat.send("second").error is problem
    else:
        with pytest.raises(RuntimeError, match="model down"):
            chat.send("second")
    record = chat.load()
    assert record is not None and record["messages"] == before and record["turns"] == 1
    assert "pending" not in record


CRASH_BACKENDS = [p for p in SNAPSHOT_BACKENDS if p.id in ("file", "sqlite", "django-postgres")]


def crash_mid_send(make_store: SnapshotFactory, durable: bool) -> None:
    agent = FakeAgent(
        use_tool=True, crash_after_tool=True, durable=make_store() if durable else None
    )
    session("crashy", make_store(), agent).send("q1")


@pytest.mark.parametrize("durable", [False, True])
@pytest.mark.parametrize("backend", CRASH_BACKENDS)
def test_a_crash_mid_send_leaves_a_pending_mark_and_resume_finishes_or_refuses(
    backend: str, durable: bool, tmp_path: Path
) -> None:
    factory = next(snapshot_factory(backend, tmp_path))
    connections.close_all()
    child = multiprocessing.get_context("fork").Process(
        target=crash_mid_send, args=(factory, durable)
    )
    child.start()
    child.join(30)
    assert child.exitcode == 9
    store = factory()
    record = store.load("session:crashy")
    assert record is not None and record["messages"] == [] and record["pending"]["input"] == "q1"

    agent = FakeAgent(use_tool=True, durable=factory() if durable else None)
    chat = session("crashy", store, agent)
    if not durable:
        with pytest.raises(NoDurableStoreError):
            chat.resume()
        assert chat.load()["pending"]["input"] == "q1"  # type: ignore[index]
        chat.send("q2")
        record = chat.load()
        assert record is not None and "pending" not in record and record["turns"] == 1
        assert record["messages"][0]["content"] == "q2"
        return
    resumed = chat.resume()
    assert resumed is not None and agent.tools_ran == []  # the tool of trip 1 did not run again
    record = chat.load()
    assert record is not None and record["turns"] == 1 and "pending" not in record
    assert [m["role"] for m in record["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert chat.resume() is None


def test_resume_without_a_pending_turn_and_with_a_changed_agent() -> None:
    store, durable = MemorySnapshotStore(), MemorySnapshotStore()
    chat = session("d", store, FakeAgent(durable=durable))
    assert chat.resume() is None
    record = new_record("d")
    record["pending"] = {"runId": "agent_x", "input": "q", "startedAt": "2026-12-01T00:00:00.000Z"}
    store.save(record)
    durable.save(
        {
            "runId": "agent_x",
            "agentName": "assistant",
            "signature": "old",
            "messages": [{"role": "user", "content": "q"}],
            "status": "running",
        }
    )
    with pytest.raises(AgentDriftError):
        chat.resume()
    assert chat.load()["pending"]["runId"] == "agent_x"  # type: ignore[index]
    assert chat.resume(force=True) is not None and chat.load()["turns"] == 1  # type: ignore[index]


@pytest.mark.parametrize("two_objects", [False, True])
def test_concurrent_sends_run_one_after_the_other(two_objects: bool) -> None:
    store = MemorySnapshotStore()
    agent = FakeAgent()
    chats = [session("c", store, agent), session("c", store, agent) if two_objects else None]
    first, second = chats[0], chats[1] or chats[0]
    start = threading.Barrier(2)

    def send(chat: Any, text: str) -> None:
        start.wait(5)
        chat.send(text)

    threads = [
        threading.Thread(target=send, args=(first, "one")),
        threading.Thread(target=send, args=(second, "two")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    record = first.load()
    assert record is not None and record["turns"] == 2 and len(record["messages"]) == 4
    assert len(agent.calls[1]["history"]) == 2  # the second turn saw the first


def test_an_aborted_wait_calls_no_agent_and_touches_nothing() -> None:
    store = MemorySnapshotStore()
    lock = InProcessLock()
    release = threading.Event()
    holder = threading.Thread(target=lambda: lock.with_lock("session:a", lambda: release.wait(5)))
    holder.start()
    time.sleep(0.05)
    agent = FakeAgent()
    signal = AbortSignal()
    threading.Timer(0.1, signal.abort, args=(TimeoutError("the user left"),)).start()
    with pytest.raises(TimeoutError, match="the user left"):
        session("a", store, agent, lock=lock).send("hi", signal=signal)
    release.set()
    holder.join()
    assert agent.calls == [] and store.load("session:a") is None


def test_history_is_the_session_s_own() -> None:
    agent = FakeAgent()
    chat = session("h", MemorySnapshotStore(), agent, lock=False)
    with pytest.raises(TypeError, match="history"):
        chat.send("x", history=[])
    chat.send("x", session_id="override")
    assert agent.calls[0]["session_id"] == "override"
    copy_of = chat.history()
    copy_of.clear()
    assert len(chat.history()) == 2


def test_a_stream_forwards_the_events_and_settles_after_the_save() -> None:
    store = MemorySnapshotStore()
    chat = session("st", store, FakeAgent(reply="one two three"))
    stream = chat.stream("go")
    assert [event["text"] for event in stream] == ["one ", "two ", "three "]
    assert stream.result.text == "one two three" and chat.load()["turns"] == 1  # type: ignore[index]

    unread = chat.stream("again")  # never iterated: it settles all the same
    assert unread.result.text == "one two three" and chat.load()["turns"] == 2  # type: ignore[index]

    failing = session("st", store, FakeAgent(raises=RuntimeError("down"))).stream("x")
    with pytest.raises(RuntimeError):
        failing.result  # noqa: B018
    assert chat.load()["turns"] == 2  # type: ignore[index]


def test_fork_copies_a_prefix_unchanged(make_store: SnapshotFactory) -> None:
    store = make_store()
    source = session("user-42", store, FakeAgent())
    for text in ("a", "b", "c"):
        source.send(text)
    alt = source.fork("alt", 4)
    record = alt.load()
    assert record is not None
    assert record["messages"] == source.history()[:4] and record["turns"] == 0
    assert record["forkedFrom"] == {"id": "user-42", "messageCount": 4}
    alt.send("d")
    assert len(source.history()) == 6 and len(alt.history()) == 6
    with pytest.raises(SessionExistsError):
        source.fork("alt")
    with pytest.raises(SessionNotFoundError):
        session("nobody", store, FakeAgent()).fork("x")
    with pytest.raises(ValueError):
        source.fork("beyond", 7)


def test_truncate_and_clear(make_store: SnapshotFactory) -> None:
    store = make_store()
    plain = session("p", store, FakeAgent())
    plain.send("a")
    plain.send("b")
    plain.truncate(2)
    record = plain.load()
    assert record is not None and len(record["messages"]) == 2 and record["turns"] == 2
    plain.truncate(2)  # no-op
    plain.truncate(0)
    assert plain.history() == [] and plain.load() is not None

    tools = session("t", store, FakeAgent(use_tool=True))
    tools.send("x")
    with pytest.raises(ToolPairError):
        tools.truncate(2)  # [user, assistant(c0)] would keep the call without its result
    assert len(tools.history()) == 4
    with pytest.raises(ValueError):
        tools.truncate(-1)

    assert tools.clear() is True
    assert tools.clear() is False  # twice is fine, and said
    assert tools.load() is None and tools.history() == []


@pytest.mark.parametrize("backend", CONVERSATION_ROWS)
def test_a_crash_mid_send_on_the_row_store(backend: str) -> None:
    connections.close_all()
    child = multiprocessing.get_context("fork").Process(
        target=lambda: session(
            "crashy", conversation_rows(backend), FakeAgent(use_tool=True, crash_after_tool=True)
        ).send("q1")
    )
    child.start()
    child.join(30)
    assert child.exitcode == 9
    chat = session("crashy", conversation_rows(backend), FakeAgent())
    record = chat.load()
    assert record is not None and record["messages"] == [] and record["pending"]["input"] == "q1"
    chat.send("q2")
    record = chat.load()
    assert record is not None and "pending" not in record and record["turns"] == 1


@pytest.mark.parametrize("backend", CONVERSATION_ROWS)
def test_a_turn_writes_only_its_new_rows(backend: str) -> None:
    from django.test.utils import CaptureQueriesContext

    from warlock_sessions.models import ConversationMessage

    store = conversation_rows(backend)
    chat = session("rows", store, FakeAgent())
    for text in ("a", "b", "c"):
        chat.send(text)
    rows = ConversationMessage.objects.using(store.using).order_by("position")
    before = list(rows.values_list("id", "position"))
    with CaptureQueriesContext(connections[store.using]) as queries:
        chat.send("d")
    writes = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith("SELECT")]
    inserts = [sql for sql in writes if sql.startswith("INSERT")]
    assert len(inserts) == 1 and "warlock_conversation_messages" in inserts[0]
    assert not any(sql.startswith("DELETE") for sql in writes)
    assert list(rows.values_list("id", "position"))[:6] == before and rows.count() == 8


def send_in_child(backend: str, lock: str, conversation_id: str, name: str, log: str) -> None:
    """Three sends from this process; each outcome logged (``ok`` or ``conflict``)."""
    from warlock_sessions.errors import SessionConflictError
    from warlock_sessions.locks import DatabaseLock, RedisLock

    using = "postgres" if backend == "rows-postgres" else "default"
    chosen: Any = {
        "database": lambda: DatabaseLock(using, ttl=5),
        "redis": lambda: RedisLock(url=REDIS_URL, prefix=f"warlock-test:{conversation_id}:"),
        "none": lambda: False,
    }[lock]()
    chat = session(conversation_id, conversation_rows(backend), FakeAgent(), lock=chosen)
    for turn in range(3):
        try:
            chat.send(f"{name}{turn}")
            outcome = "ok"
        except SessionConflictError:
            outcome = "conflict"
        with open(log, "a") as handle:
            handle.write(f"{name}{turn}:{outcome}\n")
    connections.close_all()


@pytest.mark.parametrize("backend", CONVERSATION_ROWS)
@pytest.mark.parametrize("lock", ["database", pytest.param("redis", marks=needs_redis), "none"])
def test_two_processes_on_one_conversation_lose_no_turn(
    backend: str, lock: str, tmp_path: Path
) -> None:
    """Scenario 21 across processes: with a distributed lock the sends take turns; with none,
    the row store's version check makes a racing send fail, and nothing is lost either way."""
    import uuid

    conversation_id = f"race-{uuid.uuid4().hex[:8]}"
    log = str(tmp_path / "log")
    connections.close_all()
    context = multiprocessing.get_context("fork")
    children = [
        context.Process(target=send_in_child, args=(backend, lock, conversation_id, name, log))
        for name in ("p", "q")
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    outcomes = dict(line.split(":") for line in Path(log).read_text().split())
    sent = [text for text, outcome in outcomes.items() if outcome == "ok"]
    record = conversation_rows(backend).load(conversation_id)
    assert record is not None and "pending" not in record
    stored = [m["content"] for m in record["messages"] if m["role"] == "user"]
    assert sorted(stored) == sorted(sent) and record["turns"] == len(sent)
    assert len(record["messages"]) == 2 * len(sent)
    if lock != "none":
        assert len(sent) == 6  # the lock made them wait, not fail


def test_a_fork_onto_itself_or_two_forks_each_way_never_hang() -> None:
    store = MemorySnapshotStore()
    a, b = session("a", store, FakeAgent()), session("b", store, FakeAgent())
    a.send("x")
    b.send("y")
    with pytest.raises(SessionExistsError):
        a.fork("a")
    outcomes: list[str] = []

    def fork(source: Any, target: str) -> None:
        try:
            source.fork(target)
        except SessionExistsError:
            outcomes.append(target)

    threads = [threading.Thread(target=fork, args=pair) for pair in ((a, "b"), (b, "a"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert sorted(outcomes) == ["a", "b"]  # both refused, neither stuck


@pytest.mark.parametrize(
    "backend", [*CONVERSATION_ROWS, pytest.param("memory-records", id="memory-records")]
)
def test_a_second_resume_elsewhere_is_refused_before_the_agent_runs(backend: str) -> None:
    """Two processes resuming one crashed turn (each with its own in-process lock): the one
    that reads the pending mark after the other claimed it is refused, before any model or
    tool of the agent runs again."""
    store = MemorySnapshotStore() if backend == "memory-records" else conversation_rows(backend)
    durable = MemorySnapshotStore()
    started, go_on = threading.Event(), threading.Event()
    resumes: list[str] = []

    class Held(FakeAgent):
        def resume(self, run_id: str, **options: Any) -> Any:
            resumes.append(run_id)
            started.set()
            go_on.wait(10)
            return super().resume(run_id, **options)

    crashed = session("twice", store, FakeAgent(durable=durable), lock=False)
    record = new_record("twice")
    crashed.records.set_pending(record, {"runId": "agent-1", "input": "q1", "startedAt": "x"})
    FakeAgent(durable=durable)._checkpoint(
        "agent-1", [{"role": "user", "content": "q1"}], "running"
    )

    first = session("twice", store, Held(durable=durable), lock=False)
    second = session("twice", store, Held(durable=durable), lock=False)
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("first", first.resume()))
    thread.start()
    assert started.wait(10)
    with pytest.raises(ResumeInProgressError):
        second.resume()
    go_on.set()
    thread.join(10)
    assert resumes == ["agent-1"]
    assert outcome["first"] is not None and outcome["first"].error is None
    stored = first.load()
    assert stored is not None and stored["turns"] == 1 and "pending" not in stored


# -- a history window --------------------------------------------------------------------------


def _said(messages: list[dict[str, Any]]) -> list[Any]:
    return [message.get("content") for message in messages]


def test_a_windowed_agent_is_given_the_newest_turns_and_every_message_stays(
    make_store: SnapshotFactory,
) -> None:
    """On every conversation store: the window starts at a user message (a tool result is
    never given without its call), and a turn is stored after every earlier message."""
    agent = FakeAgent(use_tool=True, history_window=5)
    chat = session("windowed", make_store(), agent)
    for text in ("q1", "q2", "q3"):
        chat.send(text)
    # Each turn is four messages (user, tool call, tool result, reply): the last five of
    # eight start at a tool call, so the agent is given the newest whole turn.
    assert _said(agent.calls[-1]["history"]) == ["q2", "", "42", "Hello there"]
    assert _said(chat.history()) == [
        said for turn in ("q1", "q2", "q3") for said in (turn, "", "42", "Hello there")
    ]
    chat.send("q4")
    assert _said(agent.calls[-1]["history"]) == ["q3", "", "42", "Hello there"]
    assert [m["content"] for m in chat.history() if m["role"] == "user"] == ["q1", "q2", "q3", "q4"]
    narrow = FakeAgent(history_window=2)
    session("windowed", chat.store, narrow).send("q5")
    assert narrow.calls[-1]["history"] == []  # no user message among the newest two
    assert len(chat.history()) == 18


def test_a_windowed_agent_that_rewrites_its_history_replaces_only_what_it_was_given(
    make_store: SnapshotFactory,
) -> None:
    class Summarising(FakeAgent):
        def execute(self, input: Any, *, history: list[dict[str, Any]], **options: Any) -> Any:
            summary = [{"role": "user", "content": f"summary of {len(history)}"}] if history else []
            return super().execute(input, history=summary, **options)

    chat = session("rewritten-window", make_store(), FakeAgent())
    for text in ("q1", "q2", "q3"):
        chat.send(text)
    session("rewritten-window", chat.store, Summarising(history_window=4)).send("q4")
    assert _said(chat.history()) == ["q1", "Hello there", "summary of 4", "q4", "Hello there"]


@pytest.mark.parametrize(("crashed", "resuming"), [(None, 2), (2, None), (2, 4), (4, 2), (2, 2)])
def test_a_crashed_windowed_turn_resumes_after_every_earlier_message(
    make_store: SnapshotFactory, crashed: int | None, resuming: int | None
) -> None:
    """The resumed run goes on from the history its send gave it, whatever window the
    resuming agent has: nothing stored before it is lost or stored twice."""
    durable = MemorySnapshotStore()
    chat = session("resumed-window", make_store(), FakeAgent())
    for text in ("q1", "q2", "q3"):
        chat.send(text)
    # What a process that died mid-run leaves: its pending mark and the run's snapshot.
    sender = session("resumed-window", chat.store, FakeAgent(history_window=crashed))
    record, run_id, start = sender._begin("q4")
    history = record["messages"][start:]
    FakeAgent(durable=durable)._checkpoint(
        run_id, [*history, {"role": "user", "content": "q4"}], "running"
    )
    agent = FakeAgent(durable=durable, history_window=resuming)
    result = session("resumed-window", chat.store, agent).resume()
    assert result is not None and result.error is None
    assert _said(chat.history()) == [
        said for turn in ("q1", "q2", "q3", "q4") for said in (turn, "Hello there")
    ]


@pytest.mark.parametrize("window", [0, -1, 2.5, "3"])
def test_a_history_window_that_is_not_a_number_of_messages_is_refused(
    make_store: SnapshotFactory, window: Any
) -> None:
    chat = session("odd-window", make_store(), FakeAgent())
    chat.send("q1")
    with pytest.raises(ValueError, match="history_window of agent 'assistant'"):
        session("odd-window", chat.store, FakeAgent(history_window=window)).send("q2")
    assert _said(chat.history()) == ["q1", "Hello there"] and "pending" not in chat.load()  # type: ignore[operator]


def test_a_store_of_the_first_protocol_still_serves_an_agent_without_a_window() -> None:
    """``load(id)`` without ``window``: a store written before windows keeps working."""
    from warlock_sessions.conversations.stores import RecordConversationStore

    class FirstProtocol(RecordConversationStore):
        def load(self, id: str) -> dict[str, Any] | None:  # type: ignore[override]
            return super().load(id)

    chat = session("first", FirstProtocol(MemorySnapshotStore()), FakeAgent())
    chat.send("q1")
    chat.send("q2")
    assert _said(chat.history()) == ["q1", "Hello there", "q2", "Hello there"]
