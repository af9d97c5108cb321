"""ws/sessions/{id}/ through channels' WebsocketCommunicator, on the in-memory layer and on
channels-redis against the real Redis."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client, override_settings

from tests.services import REDIS_URL, redis_unreachable
from warlock_sessions import signals
from warlock_sessions.host import Host, run_due_wakes
from warlock_sessions.models import Wake
from warlock_sessions.realtime.routing import websocket_urlpatterns

APPLICATION = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
SETTINGS = {
    "AGENTS": {
        "booking": "example_project.demo.agents.booking_agent",
        "timer": "tests.host.conftest.timer_agent",
    },
    "DEFAULT_AGENT": "booking",
}
LAYERS = {
    "memory": {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}},
    "redis": {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    },
}
pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(
    params=[
        "memory",
        pytest.param(
            "redis",
            marks=pytest.mark.skipif(
                redis_unreachable() is not None, reason=redis_unreachable() or ""
            ),
        ),
    ]
)
def layer(request: pytest.FixtureRequest) -> Iterator[str]:
    with override_settings(CHANNEL_LAYERS=LAYERS[request.param], WARLOCK_SESSIONS=SETTINGS):
        yield request.param


def cookie_for(username: str | None) -> bytes:
    """A real Django session cookie: logged in as ``username``, or an anonymous visitor's."""
    client = Client()
    if username:
        client.force_login(User.objects.get_or_create(username=username)[0])
    else:
        session = client.session
        session["visited"] = True
        session.save()
        client.cookies["sessionid"] = session.session_key
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def socket(
    path: str, username: str | None = "ana", cookie: bytes | None = None
) -> WebsocketCommunicator:
    """A socket of ``username`` (``None``: a new anonymous visitor), or of the visitor whose
    ``cookie`` is given."""
    cookie = cookie or await database_sync_to_async(cookie_for)(username)
    return WebsocketCommunicator(APPLICATION, path, headers=[(b"cookie", cookie)])


async def until_turn(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=10)
        events.append(event)
        if event["type"] in ("turn", "error"):
            return events


async def booking_begun(chat: WebsocketCommunicator) -> tuple[list[Any], list[Any]]:
    """Over a connected ``chat``: ask to book, give the name; both replies arrive, and every
    event in ``seq`` order from 1. Returns each turn's events."""
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    first = await until_turn(chat)
    await chat.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    second = await until_turn(chat)

    events = first + second
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert [event["text"] for event in events if event["type"] == "message"] == [
        "Great, let's get you booked. What's your name?",
        "Thanks, Ana Souza! What's your e-mail address?",
    ]
    return first, second


async def test_a_chat_over_the_socket_in_seq_order(layer: str) -> None:
    chat = await socket("/ws/sessions/c1/")
    assert (await chat.connect())[0]
    first, second = await booking_begun(chat)

    replies = [event for event in first + second if event["type"] == "message"]
    assert set(replies[0]) == {"type", "seq", "key", "text", "kind", "after_ms"}
    assert first[-1]["version"] == 1 and second[-1]["version"] == 2
    assert await chat.receive_nothing(timeout=0.3)
    await chat.disconnect()


async def test_bad_frames_get_an_error_and_the_socket_stays_open(layer: str) -> None:
    chat = await socket("/ws/sessions/c2/")
    assert (await chat.connect())[0]
    await chat.send_to(text_data="not json")
    assert (await chat.receive_json_from(timeout=5))["code"] == "invalid-json"
    await chat.send_json_to({"type": "dance"})
    assert (await chat.receive_json_from(timeout=5))["code"] == "invalid-input"
    await chat.send_json_to({"type": "message", "id": "m1"})
    error = await chat.receive_json_from(timeout=5)
    assert error == {
        "type": "error",
        "code": "invalid-input",
        "detail": "message.text: expected text",
    }
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    assert (await until_turn(chat))[-1]["type"] == "turn"
    await chat.disconnect()


async def test_a_reconnect_with_after_seq_replays_what_was_missed_once(layer: str) -> None:
    chat = await socket("/ws/sessions/c3/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    seen = await until_turn(chat)
    await chat.disconnect()

    later = await socket(f"/ws/sessions/c3/?after_seq={seen[1]['seq']}")
    assert (await later.connect())[0]
    replayed = [await later.receive_json_from(timeout=5) for _ in seen[2:]]
    assert replayed == seen[2:]
    await later.send_json_to({"type": "message", "text": "Ana", "id": "m2"})
    more = await until_turn(later)
    assert [e["seq"] for e in replayed + more] == list(range(seen[2]["seq"], more[-1]["seq"] + 1))
    await later.disconnect()


async def test_messages_from_a_wake_arrive_live(layer: str) -> None:
    chat = await socket("/ws/sessions/t1/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "start", "flow": "lembrete", "key": "k", "agent": "timer"})
    await until_turn(chat)

    def fire() -> int:
        Wake.objects.update(due_at="2000-01-01T00:00:00Z")
        return run_due_wakes(10)

    assert await database_sync_to_async(fire)() == 1
    live = await until_turn(chat)
    assert [e["text"] for e in live if e["type"] == "message"] == ["Hora do lembrete!"]
    await chat.disconnect()


async def test_others_are_refused_with_4403(layer: str) -> None:
    owner = await socket("/ws/sessions/c4/")
    assert (await owner.connect())[0]
    await owner.send_json_to({"type": "message", "text": "book", "id": "m1"})
    await until_turn(owner)
    await owner.disconnect()

    for intruder in (
        await socket("/ws/sessions/c4/", "bob"),
        await socket("/ws/sessions/c4/", None),
    ):
        connected, code = await intruder.connect()
        assert (connected, code) == (False, 4403)


async def test_a_visitor_without_a_django_session_cannot_start_one(layer: str) -> None:
    bare = WebsocketCommunicator(APPLICATION, "/ws/sessions/new-1/")
    connected, code = await bare.connect()
    assert (connected, code) == (False, 4403)


async def test_two_tabs_and_a_turn_from_elsewhere_see_every_event_once_in_order(
    layer: str,
) -> None:
    """Each socket starts its next turn from the session it last saved; a turn made elsewhere
    (another tab, the HTTP API) moves the session on, and the next turn must still land once."""
    first_tab = await socket("/ws/sessions/c6/")
    assert (await first_tab.connect())[0]
    await first_tab.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    seen_first = await until_turn(first_tab)
    second_tab = await socket(f"/ws/sessions/c6/?after_seq={seen_first[-1]['seq']}")
    assert (await second_tab.connect())[0]

    await database_sync_to_async(Host().handle)("c6", {"message": {"text": "Ana", "id": "m2"}})
    seen_first += await until_turn(first_tab)
    seen_second = await until_turn(second_tab)
    conflicts: list[int] = []

    def count(sender: Any, attempt: int, **kwargs: Any) -> None:
        conflicts.append(attempt)

    signals.session_conflict.connect(count)
    try:
        await first_tab.send_json_to({"type": "message", "text": "ana@example.com", "id": "m3"})
        seen_first += await until_turn(first_tab)
        seen_second += await until_turn(second_tab)
    finally:
        signals.session_conflict.disconnect(count)

    assert conflicts == []  # the pushed turn told the tab its copy was stale: it loaded

    assert [event["seq"] for event in seen_first] == list(range(1, len(seen_first) + 1))
    assert seen_second == seen_first[len(seen_first) - len(seen_second) :]
    turns = [event for event in seen_first if event["type"] == "turn"]
    assert [turn["version"] for turn in turns] == [1, 2, 3]
    replies = [event["text"] for event in seen_first if event["type"] == "message"]
    assert replies[1:] == [
        "Thanks, Ana! What's your e-mail address?",
        "Which day would suit you?",
    ]
    for tab in (first_tab, second_tab):
        assert await tab.receive_nothing(timeout=0.3)
        await tab.disconnect()
