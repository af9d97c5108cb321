"""ws/sessions/{id}/ with the app on PostgreSQL: the booking agent cannot block, so its turns
run on the socket's event loop (Host.ahandle over a loop connection), end to end."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async
from django.db import connections
from django.test import override_settings

from example_project.demo.agents import booking_agent
from tests.host.conftest import ThreadNotingModel, needs_postgres
from warlock_sessions.engine import Agent

from .test_session_socket import LAYERS, booking_begun, cookie_for, socket, until_turn

pytestmark = [
    pytest.mark.asyncio,
    needs_postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]


MODEL = ThreadNotingModel()


def noting_booking_agent() -> Agent:
    """The demo's booking agent, its RuleModel noting the threads it spoke on."""
    agent = booking_agent()
    agent.model = MODEL
    return agent


class AppOnPostgres:
    """Sends the warlock_sessions app to the ``postgres`` alias (the visitors' Django sessions
    stay on ``default``)."""

    def db_for_read(self, model: type, **hints: object) -> str | None:
        return "postgres" if model._meta.app_label == "warlock_sessions" else None

    db_for_write = db_for_read


@pytest.fixture(autouse=True)
def app_on_postgres() -> Iterator[None]:
    MODEL.threads.clear()
    with override_settings(
        CHANNEL_LAYERS=LAYERS["memory"],
        DATABASE_ROUTERS=[f"{__name__}.AppOnPostgres"],
        WARLOCK_SESSIONS={
            "AGENTS": {"booking": f"{__name__}.noting_booking_agent"},
            "STORE_OPTIONS": {"using": "postgres"},
        },
    ):
        yield
    connections.close_all()


async def test_a_chat_runs_its_turns_on_the_event_loop() -> None:
    chat = await socket("/ws/sessions/pg1/", username=None)
    assert (await chat.connect())[0]
    await booking_begun(chat)

    assert MODEL.threads == [threading.get_ident()] * 2
    assert await chat.receive_nothing(timeout=0.3)
    await chat.disconnect()

    stranger = await socket("/ws/sessions/pg1/", username=None)
    assert (await stranger.connect())[0]  # as for any id: the handshake tells nothing
    await stranger.send_json_to({"type": "message", "text": "hi", "id": "x"})
    assert await stranger.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


async def test_two_tabs_see_each_others_turns_once_in_order() -> None:
    cookie = await database_sync_to_async(cookie_for)(None)
    tabs = [await socket("/ws/sessions/pg2/", cookie=cookie) for _ in range(2)]
    for tab in tabs:
        assert (await tab.connect())[0]

    await tabs[0].send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    sent = await until_turn(tabs[0])
    seen_by_second = await until_turn(tabs[1])  # pushed to the other tab
    await tabs[1].send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    replied = await until_turn(tabs[1])
    seen_by_first = sent + await until_turn(tabs[0])

    seen_by_second += replied
    assert seen_by_first == seen_by_second
    assert [event["seq"] for event in seen_by_first] == list(range(1, len(seen_by_first) + 1))
    assert MODEL.threads == [threading.get_ident()] * 2
    for tab in tabs:
        assert await tab.receive_nothing(timeout=0.3)
        await tab.disconnect()
