"""The OpenAI Agents SDK's own session tests, case by case, on ``WarlockSession``.

Each test ports one case of openai-agents-python's
``tests/extensions/memory/test_sqlalchemy_session.py`` (the SDK's database-backed session)
and names it. Cases about SQLAlchemy itself (its engines, dialect DDL, MySQL collations,
SQLite locks and PRAGMAs, table creation locks, rows corrupted behind the session's back,
which a JSON column here cannot hold) have no counterpart and are not ported.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from django.db import connections

pytest.importorskip("agents")
from agents import Agent, RunConfig, set_tracing_disabled
from agents.memory import SessionSettings
from agents.testing.model import ScriptedModel, assistant_message

from tests.frameworks.conftest import ON_POSTGRES, run
from warlock_sessions.frameworks.openai_agents import WarlockSession
from warlock_sessions.models import ConversationMessage

set_tracing_disabled(True)


def message(item_id: str, text: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def reasoning(item_id: str, text: str) -> dict[str, Any]:
    return {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}


def scripted() -> Agent:
    return Agent(name="test", model=ScriptedModel())


def said(agent: Agent, text: str) -> None:
    model = agent.model
    assert isinstance(model, ScriptedModel)
    model.enqueue([assistant_message(text)])


def test_sqlalchemy_session_direct_ops(alias: str, privacy: str) -> None:
    session = WarlockSession("direct_ops_test", using=alias)
    run(
        session.add_items(
            [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
        )
    )
    assert [item["content"] for item in run(session.get_items())] == ["Hello", "Hi there!"]
    assert run(session.pop_item())["content"] == "Hi there!"
    assert [item["content"] for item in run(session.get_items())] == ["Hello"]
    run(session.clear_session())
    assert run(session.get_items()) == []


def test_sqlalchemy_session_can_store_non_ascii_without_escaping(alias: str) -> None:
    session = WarlockSession("non_ascii_storage", using=alias)
    item = {"role": "user", "content": "café"}
    run(session.add_items([item]))
    stored = ConversationMessage.objects.using(alias).get(conversation_id="non_ascii_storage")
    kept = ConversationMessage._meta.get_field("message").get_prep_value(stored.message)
    assert "café" in kept and "\\u00e9" not in kept
    assert run(session.get_items()) == [item]


def test_runner_integration(alias: str, privacy: str) -> None:
    agent = scripted()
    session = WarlockSession("runner_integration_test", using=alias)
    said(agent, "San Francisco")
    assert (
        run(session.run(agent, "What city is the Golden Gate Bridge in?")).final_output
        == "San Francisco"
    )
    said(agent, "California")
    assert run(session.run(agent, "What state is it in?")).final_output == "California"
    model = agent.model
    assert isinstance(model, ScriptedModel)
    last_input = model.calls[-1].input
    assert isinstance(last_input, list) and len(last_input) > 1
    assert any("Golden Gate Bridge" in str(item.get("content", "")) for item in last_input)


def test_session_isolation(alias: str) -> None:
    agent = scripted()
    first, second = (
        WarlockSession("session_1", using=alias),
        WarlockSession("session_2", using=alias),
    )
    said(agent, "I like cats.")
    run(first.run(agent, "I like cats."))
    said(agent, "I like dogs.")
    run(second.run(agent, "I like dogs."))
    said(agent, "You said you like cats.")
    run(first.run(agent, "What animal did I say I like?"))
    model = agent.model
    assert isinstance(model, ScriptedModel)
    seen = str(model.calls[-1].input)
    assert "cats" in seen and "dogs" not in seen


def test_session_ids_are_case_sensitive(alias: str) -> None:
    upper, lower = WarlockSession("Foo", using=alias), WarlockSession("foo", using=alias)
    run(upper.add_items([{"role": "user", "content": "upper"}]))
    run(lower.add_items([{"role": "user", "content": "lower"}]))
    assert run(upper.get_items()) == [{"role": "user", "content": "upper"}]
    assert run(lower.get_items()) == [{"role": "user", "content": "lower"}]


def test_session_ids_keep_trailing_spaces(alias: str) -> None:
    bare, padded = WarlockSession("tenant", using=alias), WarlockSession("tenant ", using=alias)
    run(bare.add_items([{"role": "user", "content": "bare"}]))
    run(padded.add_items([{"role": "user", "content": "padded"}]))
    assert run(bare.get_items()) == [{"role": "user", "content": "bare"}]
    assert run(padded.get_items()) == [{"role": "user", "content": "padded"}]


def test_get_items_with_limit(alias: str) -> None:
    session = WarlockSession("limit_test", using=alias)
    run(session.add_items([{"role": "user", "content": str(n)} for n in range(1, 5)]))
    assert [item["content"] for item in run(session.get_items(limit=2))] == ["3", "4"]
    assert len(run(session.get_items())) == 4
    assert len(run(session.get_items(limit=10))) == 4


def test_pop_from_empty_session(alias: str) -> None:
    assert run(WarlockSession("empty_session", using=alias).pop_item()) is None


@ON_POSTGRES  # two threads writing at once: SQLite refuses one as locked
def test_concurrent_pop_item_returns_each_row_once(alias: str) -> None:
    writer, other = (
        WarlockSession("concurrent_pop", using=alias),
        WarlockSession("concurrent_pop", using=alias),
    )
    run(
        writer.add_items(
            [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}]
        )
    )
    popped: list[Any] = []
    start = threading.Barrier(2)

    def pop(session: WarlockSession) -> None:
        start.wait()
        try:
            popped.append(run(session.pop_item()))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=pop, args=(session,)) for session in (writer, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(item["content"] for item in popped if item is not None) == ["first", "second"]


def test_add_empty_items_list(alias: str) -> None:
    session = WarlockSession("add_empty_test", using=alias)
    run(session.add_items([]))
    assert run(session.get_items()) == []


def test_add_items_concurrent_first_access(alias: str) -> None:
    session = WarlockSession("concurrent_first_access", using=alias)
    submitted = [f"msg-{n}" for n in range(25)]

    async def together() -> list[Any]:
        return await asyncio.gather(
            *(session.add_items([{"role": "user", "content": text}]) for text in submitted),
            return_exceptions=True,
        )

    assert [result for result in run(together()) if isinstance(result, BaseException)] == []
    assert sorted(item["content"] for item in run(session.get_items())) == sorted(submitted)


@ON_POSTGRES  # two threads writing at once: SQLite refuses one as locked
def test_add_items_concurrent_first_access_with_shared_session_cross_loop(alias: str) -> None:
    session = WarlockSession("shared_session_cross_loop", using=alias)
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def worker(text: str) -> None:
        async def add() -> None:
            start.wait()
            await session.add_items([{"role": "user", "content": text}])

        try:
            asyncio.run(add())
        except BaseException as error:
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(text,)) for text in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == []
    assert sorted(item["content"] for item in run(session.get_items())) == ["one", "two"]


def test_get_items_same_timestamp_consistent_order(alias: str) -> None:
    """Ours orders by position, never by time: items added in one call keep their order."""
    session = WarlockSession("same_timestamp_test", using=alias)
    run(session.add_items([message("older_same_ts", "old")]))
    run(session.add_items([reasoning("rs_same_ts", "..."), message("msg_same_ts", "...")]))
    ids = [item["id"] for item in run(session.get_items())]
    assert ids == ["older_same_ts", "rs_same_ts", "msg_same_ts"]
    assert [item["id"] for item in run(session.get_items(limit=2))] == ["rs_same_ts", "msg_same_ts"]


def test_pop_item_same_timestamp_returns_latest(alias: str) -> None:
    session = WarlockSession("same_timestamp_pop_test", using=alias)
    run(session.add_items([reasoning("rs_pop_same_ts", "..."), message("msg_pop_same_ts", "...")]))
    assert run(session.pop_item())["id"] == "msg_pop_same_ts"
    assert [item["id"] for item in run(session.get_items())] == ["rs_pop_same_ts"]


@pytest.mark.parametrize("use_dictionary", [False, True], ids=["class", "dictionary"])
def test_session_settings_from_url(alias: str, use_dictionary: bool) -> None:
    settings: Any = {"limit": 5} if use_dictionary else SessionSettings(limit=5)
    session = WarlockSession("from_url_settings_test", using=alias, session_settings=settings)
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 5
    default = WarlockSession("default_settings_test", using=alias)
    assert isinstance(default.session_settings, SessionSettings)
    assert default.session_settings.limit is None


def test_get_items_uses_session_settings_limit(alias: str) -> None:
    session = WarlockSession(
        "uses_settings_limit_test", using=alias, session_settings=SessionSettings(limit=3)
    )
    run(session.add_items([{"role": "user", "content": f"Message {n}"} for n in range(5)]))
    assert [item["content"] for item in run(session.get_items())] == [
        "Message 2", "Message 3", "Message 4",
    ]  # fmt: skip


def test_get_items_explicit_limit_overrides_session_settings(alias: str) -> None:
    session = WarlockSession(
        "explicit_override_test", using=alias, session_settings=SessionSettings(limit=5)
    )
    run(session.add_items([{"role": "user", "content": f"Message {n}"} for n in range(10)]))
    assert [item["content"] for item in run(session.get_items(limit=2))] == [
        "Message 8", "Message 9",
    ]  # fmt: skip


def test_runner_with_session_settings_override(alias: str) -> None:
    agent = scripted()
    session = WarlockSession(
        "runner_override_test", using=alias, session_settings=SessionSettings(limit=100)
    )
    run(session.add_items([{"role": "user", "content": f"Turn {n}"} for n in range(10)]))
    said(agent, "Got it")
    run(
        session.run(
            agent, "New question", run_config=RunConfig(session_settings=SessionSettings(limit=2))
        )
    )
    model = agent.model
    assert isinstance(model, ScriptedModel)
    last_input = model.calls[-1].input
    assert isinstance(last_input, list)
    history = [item for item in last_input if item.get("content") != "New question"]
    assert [item["content"] for item in history] == ["Turn 8", "Turn 9"]


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
def test_mutation_cancellation_waits_for_transaction_exit(alias: str, operation: str) -> None:
    """A mutation whose caller is cancelled lands whole or not at all, never in part."""
    session = WarlockSession(f"transaction_cancellation_{operation}", using=alias)
    run(session.add_items([{"role": "user", "content": "before"}]))
    added = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]

    async def cancelled() -> None:
        call: Any = {
            "add": lambda: session.add_items(added),
            "pop": session.pop_item,
            "clear": session.clear_session,
        }[operation]
        task = asyncio.ensure_future(call())
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0.3)  # the worker thread finishes what it began

    run(cancelled())
    said_now = [
        item["content"] for item in run(WarlockSession(session.session_id, using=alias).get_items())
    ]
    assert (
        said_now
        in {
            "add": (["before"], ["before", "one", "two"]),
            "pop": (["before"], []),
            "clear": (["before"], []),
        }[operation]
    )


def test_an_append_after_the_session_was_cleared_and_begun_again_is_kept(alias: str) -> None:
    """Not one of the SDK's cases: a runner's append that lost the session to a clear and a
    new start (whose version starts over) is appended after what the new one holds."""
    first, other = WarlockSession("aba", using=alias), WarlockSession("aba", using=alias)
    run(first.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]))
    run(first.get_items())
    run(other.clear_session())
    run(other.add_items([{"role": "user", "content": c} for c in "xyz"]))
    run(first.add_items([{"role": "user", "content": "w"}]))
    said_now = run(WarlockSession("aba", using=alias).get_items())
    assert [item["content"] for item in said_now] == ["x", "y", "z", "w"]


def test_a_session_id_another_tenant_keeps_is_refused_at_once(alias: str) -> None:
    from django.test import override_settings

    from warlock_sessions.errors import OfAnotherTenantError
    from warlock_sessions.tenancy import tenant_scope

    with override_settings(WARLOCK_SESSIONS={"TENANT_RESOLVER": "tests.test_tenants.tenant_of"}):
        with tenant_scope("acme"):
            run(WarlockSession("taken", using=alias).add_items([{"role": "user", "content": "a"}]))
        with tenant_scope("globex"), pytest.raises(OfAnotherTenantError):
            run(WarlockSession("taken", using=alias).add_items([{"role": "user", "content": "b"}]))
