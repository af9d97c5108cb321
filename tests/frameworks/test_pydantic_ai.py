"""``WarlockHistory``: a pydantic-ai agent's message history on warlock's conversation tables,
on SQLite and PostgreSQL with the privacy settings off and on: an exact round trip of every
kind of part, runs that keep their history, runs of one conversation serialised, a writer
around the lock refused, and the admin's transcript and the API's history."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
from django.contrib.auth.models import User
from django.test import Client, override_settings
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.frameworks.conftest import PRIVACY, run
from warlock_sessions.errors import SessionConflictError
from warlock_sessions.frameworks.pydantic_ai import WarlockHistory
from warlock_sessions.models import ConversationMessage

AT = datetime(2026, 12, 6, 9, 30, tzinfo=UTC)

#: A history with every kind of part an agent's run writes.
HISTORY: list[ModelMessage] = [
    ModelRequest(
        parts=[
            SystemPromptPart("You take pizza orders.", timestamp=AT),
            UserPromptPart(
                ["A pizza like this one", ImageUrl("https://example.com/pizza.png")],
                timestamp=AT,
            ),
        ]
    ),
    ModelResponse(
        parts=[
            ThinkingPart("They want a margherita.", signature="sig-1"),
            ToolCallPart("menu", {"kind": "pizza", "size": 1e100}, tool_call_id="call-1"),
        ],
        model_name="scripted",
        timestamp=AT,
    ),
    ModelRequest(
        parts=[ToolReturnPart("menu", {"margherita": 9.5}, tool_call_id="call-1", timestamp=AT)]
    ),
    ModelRequest(
        parts=[
            ToolReturnPart(
                "menu",
                "size is small or large",
                tool_call_id="call-2",
                outcome="retried",
                timestamp=AT,
            )
        ]
    ),
    ModelResponse(parts=[TextPart("A margherita is 9.50 €.")], model_name="scripted", timestamp=AT),
    ModelRequest(
        parts=[UserPromptPart([BinaryContent(b"\x89PNG", media_type="image/png")], timestamp=AT)]
    ),
]


def dumped(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


def test_every_part_round_trips_exactly(alias: str, privacy: str) -> None:
    history = WarlockHistory("pa-1", using=alias)
    history.save(HISTORY[:2])
    history.save(HISTORY[2:])
    assert dumped(WarlockHistory("pa-1", using=alias).load()) == dumped(HISTORY)
    assert run(history.aload()) == history.load()
    assert ConversationMessage.objects.using(alias).filter(conversation_id="pa-1").count() == 6
    history.clear()
    assert history.load() == []


def replying(*replies: str) -> tuple[Agent[None, str], list[list[ModelMessage]]]:
    """An agent whose model answers ``replies`` in turn, and what the model was sent."""
    sent: list[list[ModelMessage]] = []
    answers = iter(replies)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(list(messages))
        return ModelResponse(parts=[TextPart(next(answers))])

    return Agent(FunctionModel(model)), sent


def test_runs_keep_their_history_here(alias: str, privacy: str) -> None:
    agent, sent = replying("Hi Ana.", "Your name is Ana.")
    history = WarlockHistory("pa-2", using=alias)
    assert history.run_sync(agent, "My name is Ana.").output == "Hi Ana."
    assert run(history.run(agent, "What is my name?")).output == "Your name is Ana."
    said = json.loads(ModelMessagesTypeAdapter.dump_json(sent[1]))
    assert "My name is Ana." in json.dumps(said) and "Hi Ana." in json.dumps(said)
    assert [message.kind for message in history.load()] == ["request", "response"] * 2


def test_two_runs_of_one_conversation_at_once_do_not_interleave(alias: str) -> None:
    order: list[str] = []

    async def slowly(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        order.append("slow started")
        await asyncio.sleep(0.3)
        order.append("slow answered")
        return ModelResponse(parts=[TextPart("slow")])

    async def quickly(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        order.append(f"quick saw {len(messages)} messages")
        return ModelResponse(parts=[TextPart("quick")])

    history = WarlockHistory("pa-3", using=alias)

    async def both() -> None:
        first = asyncio.ensure_future(history.run(Agent(FunctionModel(slowly)), "first"))
        await asyncio.sleep(0.05)
        await history.run(Agent(FunctionModel(quickly)), "second")
        await first

    run(both())
    # The second run waited, and was given the first run's two messages with its own.
    assert order == ["slow started", "slow answered", "quick saw 3 messages"]


def test_a_writer_that_went_round_the_lock_is_reported_not_overwritten(alias: str) -> None:
    history = WarlockHistory("pa-4", using=alias)
    history.save(HISTORY[:1])

    def meanwhile(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        WarlockHistory("pa-4", using=alias).save(HISTORY[4:5])  # not under the lock
        return ModelResponse(parts=[TextPart("too late")])

    with pytest.raises(SessionConflictError):
        history.run_sync(Agent(FunctionModel(meanwhile)), "hello")
    assert dumped(history.load()) == dumped([HISTORY[0], HISTORY[4]])


def test_it_is_sealed_redacted_and_shown_by_the_admin_and_the_api(alias: str) -> None:
    ana = User.objects.db_manager(alias).create_user("ana")
    settings = {
        **{key: PRIVACY["private"][key] for key in ("ENCRYPTION_KEYS", "REDACT")},
        "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
    }
    with override_settings(WARLOCK_SESSIONS=settings):
        agent, _ = replying("Noted, card ending 6467.")
        history = WarlockHistory("pa-5", owner=ana, using=alias)
        history.run_sync(agent, "Pay with 4539 1488 0343 6467, ann@example.com")
        stored = json.dumps(
            list(ConversationMessage.objects.using(alias).values_list("message", flat=True))
        )
        assert "4539" not in stored and "Noted" not in stored  # sealed
        said = history.load()[0].parts[0]
        assert isinstance(said, UserPromptPart) and said.content == "Pay with [card], [email]"
        browser = Client()
        browser.force_login(User.objects.db_manager(alias).create_superuser("root", "r@x.io", "pw"))
        page = browser.get("/admin/warlock_sessions/conversation/pa-5/change/")
        assert page.status_code == 200
        assert b"Pay with [card], [email]" in page.content
        assert b"Noted, card ending 6467." in page.content
        owner = Client()
        owner.force_login(ana)
        answer = owner.get("/api/conversations/pa-5/history/")
        assert answer.status_code == 200, answer.content
        assert answer.json()["messages"][1]["parts"][0]["content"] == "Noted, card ending 6467."


def test_the_admin_draws_tool_calls_and_returns(alias: str) -> None:
    WarlockHistory("pa-6", using=alias).save(HISTORY)
    browser = Client()
    browser.force_login(User.objects.db_manager(alias).create_superuser("root", "r@x.io", "pw"))
    page = browser.get("/admin/warlock_sessions/conversation/pa-6/change/").content.decode()
    for shown in (
        "You take pizza orders.",
        "tool call menu (call-1)",
        "result of call-1",
        "A margherita is 9.50",
        "https://example.com/pizza.png",
    ):
        assert shown in page, shown
    _ = Any
