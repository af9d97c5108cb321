"""Sockets under pressure and at their end: an idle stranger costs what an idle owner does,
and however a consumer ends, its client's socket slot is freed."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from django.core.cache import cache
from django.test import override_settings

from warlock_sessions.realtime import base
from warlock_sessions.realtime.admission import SocketAccess

from .test_session_socket import SETTINGS, cookie_for, layer, refused, socket, until_turn

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]
__all__ = ["layer"]


async def test_an_idle_stranger_asks_whether_it_may_see_only_when_the_log_moves(
    layer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    may_see_now = SocketAccess.may_see_now

    def counted(self: SocketAccess) -> bool:
        asked.append(self.session_id)
        return may_see_now(self)

    monkeypatch.setattr(SocketAccess, "may_see_now", counted)
    owner = await socket("/ws/sessions/idle-1/")
    assert (await owner.connect())[0]
    await owner.send_json_to({"type": "message", "text": "book", "id": "m1"})
    await until_turn(owner)
    stranger = await socket("/ws/sessions/idle-1/", "bob")
    assert (await stranger.connect())[0]

    await asyncio.sleep(2.5)  # five reads of the log: it moved once before the stranger came
    assert len(asked) == 1, asked
    await owner.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    await until_turn(owner)
    await asyncio.sleep(1.5)
    assert len(asked) == 2, asked  # once more for the one move, not once a read
    assert await stranger.receive_nothing(timeout=0.1)
    for open_socket in (owner, stranger):
        await open_socket.disconnect()


async def test_a_consumer_ended_without_a_disconnect_frees_its_slot(layer: str) -> None:
    cookie = await database_sync_to_async(cookie_for)("slots")
    with override_settings(WARLOCK_SESSIONS={**SETTINGS, "MAX_SOCKETS_PER_CLIENT": 1}):
        first = await socket("/ws/sessions/slot-1/", cookie=cookie)
        assert (await first.connect())[0]
        # A server stopping, or a failure nobody handled: the task ends, no disconnect comes.
        first.future.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first.future
        assert not base._open_sockets
        second = await socket("/ws/sessions/slot-2/", cookie=cookie)
        assert (await second.connect())[0]
        third = await socket("/ws/sessions/slot-3/", cookie=cookie)
        assert await refused(third) == 4429  # the limit itself still holds
        await second.disconnect()


THROTTLED = {
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {"anon": "3/min", "user": "3/min"},
}


@pytest.mark.parametrize("username", ["ana", None])
async def test_socket_frames_obey_the_http_throttles(
    layer: str, username: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rest_framework.throttling import SimpleRateThrottle

    # DRF's throttles read their rates once, when rest_framework.throttling is first imported
    # (by whichever test got there first): the override alone would not reach them.
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", THROTTLED["DEFAULT_THROTTLE_RATES"])
    await database_sync_to_async(cache.clear)()
    cookie = await database_sync_to_async(cookie_for)(username)
    with override_settings(REST_FRAMEWORK=THROTTLED):
        chat = await socket("/ws/sessions/throttled-1/", cookie=cookie)
        assert (await chat.connect())[0]
        answers = []
        for index in range(4):
            await chat.send_json_to({"type": "message", "text": f"hi {index}", "id": f"m{index}"})
            answers.append((await until_turn(chat))[-1])
        assert [answer["type"] for answer in answers] == ["turn"] * 3 + ["error"]
        assert answers[-1]["code"] == "throttled" and 0 < answers[-1]["retry_after"] <= 60
        # The same client's conversation socket draws on the same bucket.
        talk = await socket("/ws/conversations/throttled-talk/", cookie=cookie)
        assert (await talk.connect())[0]
        await talk.send_json_to({"type": "send", "input": "hello"})
        refused = await talk.receive_json_from(timeout=5)
        assert refused["type"] == "error" and refused["code"] == "throttled"
        for open_socket in (chat, talk):
            await open_socket.disconnect()


async def test_a_socket_past_its_owners_quota_is_told_and_stays(layer: str) -> None:
    cookie = await database_sync_to_async(cookie_for)("quota")
    with override_settings(WARLOCK_SESSIONS={**SETTINGS, "MAX_SESSIONS_PER_OWNER": 1}):
        first = await socket("/ws/sessions/quota-1/", cookie=cookie)
        assert (await first.connect())[0]
        await first.send_json_to({"type": "message", "text": "book", "id": "m1"})
        assert (await until_turn(first))[-1]["type"] == "turn"
        second = await socket("/ws/sessions/quota-2/", cookie=cookie)
        assert (await second.connect())[0]
        await second.send_json_to({"type": "message", "text": "book", "id": "m1"})
        refused = await second.receive_json_from(timeout=5)
        assert refused["type"] == "error" and refused["code"] == "quota-exceeded", refused
        await second.send_json_to({"type": "message", "text": "book", "id": "m2"})
        assert (await second.receive_json_from(timeout=5))["code"] == "quota-exceeded"
        for open_socket in (first, second):
            await open_socket.disconnect()


async def test_a_layer_message_the_socket_cannot_handle_leaves_it_open(layer: str) -> None:
    """A group message that fails (here a malformed one; in production a database outage
    while it is delivered) once ended the consumer: a 1011 for the client."""
    from channels.layers import get_channel_layer

    from warlock_sessions.host import group_name

    chat = await socket("/ws/sessions/bad-push/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    await until_turn(chat)
    await get_channel_layer().group_send(
        group_name("bad-push"), {"type": "warlock.events", "events": ["not an event"]}
    )
    await chat.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    assert (await until_turn(chat))[-1]["type"] == "turn"
    await chat.disconnect()
