"""``WarlockSession``: the OpenAI Agents SDK's ``Session`` on warlock's conversation tables, on
SQLite and PostgreSQL.

The behaviour the SDK's own session tests state (openai-agents-python
``tests/test_session.py``: items round-trip in order, ``get_items(limit)`` returns the latest
N oldest first and ``session_settings.limit`` is its default, ``pop_item`` removes the latest,
``clear_session`` empties, sessions are isolated by id, text that looks like SQL is kept as
text), then what the app adds: the runs of one session serialised by its lock (the SDK's race,
openai-agents #3820), no item lost to a concurrent writer, sealing and redaction at rest, and
the conversation shown by the admin and the API.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client, override_settings

from tests.frameworks.conftest import run
from warlock_sessions.errors import SessionLockTimeout
from warlock_sessions.models import Conversation, ConversationMessage

agents = pytest.importorskip("agents")
from agents import Agent, set_tracing_disabled  # noqa: E402
from agents.testing.model import ScriptedModel, assistant_message  # noqa: E402

from warlock_sessions.frameworks.openai_agents import WarlockSession  # noqa: E402

set_tracing_disabled(True)  # the SDK's traces go to OpenAI's servers: none here

#: One of each kind of item the SDK's runner writes to a session.
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What's the weather in Lisbon?"},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "and this picture?"},
            {"type": "input_image", "image_url": "https://example.com/sky.png", "detail": "auto"},
            {"type": "input_image", "file_id": "file-abc123", "detail": "low"},
        ],
    },
    {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Look the weather up."}],
    },
    {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Lisbon"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "21°C, sunny"},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Sunny, 21°C.", "annotations": []}],
    },
]


def test_items_round_trip_exactly_in_order(alias: str) -> None:
    session = WarlockSession("sdk-1", using=alias)
    run(session.add_items(ITEMS[:3]))
    run(session.add_items(ITEMS[3:]))
    assert run(session.get_items()) == ITEMS
    assert run(WarlockSession("sdk-1", using=alias).get_items()) == ITEMS  # read again
    assert run(session.add_items([])) is None
    # One conversation, one row per item.
    assert Conversation.objects.using(alias).filter(id="sdk-1").count() == 1
    assert ConversationMessage.objects.using(alias).filter(conversation_id="sdk-1").count() == 6


def test_a_limited_read_reads_only_its_rows_and_the_runner_appends_after_every_item(
    alias: str,
) -> None:
    """The runner reads ``get_items(limit)`` and appends its turn: on a long session the read
    is the newest rows alone, and the append goes after every stored item."""
    from django.test.utils import CaptureQueriesContext

    from warlock_sessions.conversations.seen import seen_histories

    session = WarlockSession("sdk-long", using=alias, session_settings={"limit": 2})
    for index in range(20):
        run(session.add_items([{"role": "user", "content": f"q{index}"}]))
    seen_histories.clear()  # another process, or this one restarted
    with CaptureQueriesContext(connections[alias]) as queries:
        assert run(session.get_items()) == [
            {"role": "user", "content": "q18"},
            {"role": "user", "content": "q19"},
        ]
    reads = [q["sql"] for q in queries.captured_queries if "conversation_messages" in q["sql"]]
    assert len(reads) == 1 and "LIMIT 2" in reads[0]
    run(session.add_items([{"role": "user", "content": "q20"}]))
    said = [item["content"] for item in run(session.get_items(limit=-1))]
    assert said == [f"q{index}" for index in range(21)]


def test_limits_pop_clear_and_isolation(alias: str) -> None:
    session = WarlockSession("sdk-2", using=alias, session_settings={"limit": 2})
    other = WarlockSession("sdk-3", using=alias)
    run(session.add_items(ITEMS))
    run(other.add_items([{"role": "user", "content": "'); DROP TABLE x; --"}]))
    assert run(session.get_items()) == ITEMS[-2:]  # the settings' limit
    assert run(session.get_items(limit=3)) == ITEMS[-3:]  # an explicit one wins
    assert run(session.get_items(limit=0)) == []
    assert run(session.get_items(limit=-1)) == ITEMS  # none, as the SDK's SQLite session
    assert run(session.get_items(limit=100)) == ITEMS
    assert run(session.pop_item()) == ITEMS[-1]
    assert run(session.get_items(limit=10)) == ITEMS[:-1]
    run(session.clear_session())
    assert run(session.get_items()) == [] and run(session.pop_item()) is None
    assert run(other.get_items()) == [{"role": "user", "content": "'); DROP TABLE x; --"}]
    run(session.add_items(ITEMS[:1]))  # a cleared session starts again
    assert run(session.get_items()) == ITEMS[:1]


def test_what_a_caller_changes_is_not_what_is_stored(alias: str) -> None:
    session = WarlockSession("sdk-4", using=alias)
    run(session.add_items([{"role": "user", "content": "hi"}]))
    run(session.get_items())[0]["content"] = "changed"
    assert run(session.get_items()) == [{"role": "user", "content": "hi"}]


def test_concurrent_writers_lose_no_item(alias: str) -> None:
    """Two writers in two threads append at once (no lock): each conditional write that
    loses a race reads again and appends after the winner; every item is kept."""
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def write(name: str) -> None:
        session = WarlockSession("sdk-5", using=alias)
        start.wait()
        try:
            for n in range(10):
                run(session.add_items([{"role": "user", "content": f"{name}{n}"}]))
        except BaseException as error:  # a thread's error would pass unseen
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(name,)) for name in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    said = [item["content"] for item in run(WarlockSession("sdk-5", using=alias).get_items())]
    assert sorted(said) == sorted(f"{name}{n}" for name in "ab" for n in range(10))
    assert [word for word in said if word.startswith("a")] == [f"a{n}" for n in range(10)]


def answering(*replies: str) -> Agent:
    return Agent(
        name="helper",
        model=ScriptedModel([[assistant_message(reply)] for reply in replies]),
    )


@pytest.mark.django_db(transaction=True)
def test_a_runner_keeps_its_history_here_across_runs() -> None:
    agent = answering("Hi Ana.", "Your name is Ana.")
    session = WarlockSession("sdk-run")
    first = run(session.run(agent, "My name is Ana."))
    second = run(session.run(agent, "What is my name?"))
    assert (first.final_output, second.final_output) == ("Hi Ana.", "Your name is Ana.")
    model = agent.model
    assert isinstance(model, ScriptedModel)
    seen = json.dumps(model.last_call.input if model.last_call else None)
    assert "My name is Ana." in seen and "Hi Ana." in seen  # the first run, read back
    roles = [item.get("role") for item in run(session.get_items())]
    assert roles == ["user", "assistant", "user", "assistant"]


@pytest.mark.django_db(transaction=True)
def test_two_runs_of_one_session_at_once_do_not_interleave() -> None:
    """The SDK's runner reads the history, then writes each run's items in calls of their
    own: two runs at once interleaved them (openai-agents #3820). Under the conversation's
    lock the second waits for the first."""

    async def slow(call: Any) -> Any:
        await asyncio.sleep(0.3)
        return [assistant_message("slow answer")]

    slow_agent = Agent(name="slow", model=ScriptedModel([{"responder": slow}]))
    quick_agent = answering("quick answer")
    session = WarlockSession("sdk-race")

    async def both() -> None:
        first = asyncio.ensure_future(session.run(slow_agent, "first question"))
        await asyncio.sleep(0.05)
        await session.run(quick_agent, "second question")
        await first

    run(both())
    said = [json.dumps(item) for item in run(session.get_items())]
    order = ["first question", "slow answer", "second question", "quick answer"]
    assert [next(i for i, text in enumerate(said) if word in text) for word in order] == [
        0,
        1,
        2,
        3,
    ]


@pytest.mark.django_db(transaction=True)
def test_a_run_that_waits_too_long_is_refused_with_a_clear_error() -> None:
    async def held(call: Any) -> Any:
        await asyncio.sleep(1.0)
        return [assistant_message("done")]

    session = WarlockSession("sdk-busy")

    async def both() -> None:
        first = asyncio.ensure_future(
            session.run(Agent(name="slow", model=ScriptedModel([{"responder": held}])), "a")
        )
        await asyncio.sleep(0.1)
        with pytest.raises(SessionLockTimeout):
            await session.run(answering("b"), "b")
        await first

    with override_settings(WARLOCK_SESSIONS={"LOCK_TIMEOUT": 0.2}):
        run(both())


@pytest.mark.django_db(transaction=True)
def test_items_are_sealed_and_redacted_at_rest_and_shown_by_the_admin_and_the_api() -> None:
    import base64

    key = base64.b64encode(b"k" * 32).decode()
    ana = User.objects.create_user("ana")
    settings = {
        "ENCRYPTION_KEYS": {"k1": key},
        "REDACT": ["card", "email"],
        # The conversation endpoints answer only with an agent configured.
        "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
    }
    with override_settings(WARLOCK_SESSIONS=settings):
        session = WarlockSession("sdk-private", owner=ana)
        said = {"role": "user", "content": "card 4539 1488 0343 6467, ann@example.com"}
        run(session.add_items([said, ITEMS[5]]))
        stored = json.dumps(
            list(ConversationMessage.objects.filter(conversation_id="sdk-private").values())
        )
        assert "4539" not in stored and "ann@" not in stored and "Sunny" not in stored
        assert run(session.get_items())[0]["content"] == "card [card], [email]"
        browser = Client()
        browser.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))
        page = browser.get("/admin/warlock_sessions/conversation/sdk-private/change/")
        assert page.status_code == 200 and "Sunny, 21°C.".encode() in page.content
        assert b"card [card], [email]" in page.content
        owner = Client()
        owner.force_login(ana)
        history = owner.get("/api/conversations/sdk-private/history/")
        assert history.status_code == 200, history.content
        assert history.json()["messages"][1] == ITEMS[5]
