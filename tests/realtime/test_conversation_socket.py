"""ws/conversations/{id}/ through channels' WebsocketCommunicator: replies streamed as deltas
then the stored result, tool activity, owners and strangers (4403), and hostile frames."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from warlock_sessions.models import Conversation, ConversationMessage

from .test_session_socket import APPLICATION, cookie_for, refused, socket

SETTINGS = {"CONVERSATION_AGENT": "tests.conversations.agents.assistant"}
pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def assistant() -> Iterator[None]:
    layers = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with override_settings(WARLOCK_SESSIONS=SETTINGS, CHANNEL_LAYERS=layers):
        yield


async def until_result(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = await communicator.receive_json_from(timeout=10)
        frames.append(frame)
        if frame["type"] in ("result", "error"):
            return frames


async def connected(path: str, username: str | None = "ana", cookie: bytes | None = None) -> Any:
    communicator = await socket(path, username, cookie)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def test_a_reply_streams_word_by_word_then_the_stored_result() -> None:
    ana = await connected("/ws/conversations/c1/")
    await ana.send_json_to({"type": "send", "input": "My name is Sara."})
    frames = await until_result(ana)
    deltas = [frame["text"] for frame in frames if frame["type"] == "delta"]
    result = frames[-1]
    assert result["type"] == "result" and "".join(deltas) == result["text"]
    assert len(deltas) == len(result["text"].split()) > 3
    assert result["conversation"]["turns"] == 1 and result["conversation"]["id"] == "c1"

    await ana.send_json_to({"type": "send", "input": "calculate 2+2"})
    frames = await until_result(ana)
    assert [f["type"] for f in frames[:2]] == ["tool-call", "tool-result"]
    assert frames[1]["output"] == "2+2 = 4"
    assert frames[-1]["text"] == "The calculate tool says: 2+2 = 4"
    assert (
        await database_sync_to_async(
            ConversationMessage.objects.filter(conversation_id="c1").count
        )()
        == 6
    )
    await ana.disconnect()


async def test_a_turn_without_a_channel_layer_ends_in_its_result_alone() -> None:
    """Channels gives a socket no channel without a layer (none configured, or one away at
    the handshake): the turn's notice to other tabs must not fail the frame after its
    result (it did: an "error" frame followed every stored turn)."""
    with override_settings(CHANNEL_LAYERS={}):
        ana = await connected("/ws/conversations/c-alone/")
        await ana.send_json_to({"type": "send", "input": "My name is Sara."})
        frames = await until_result(ana)
        assert frames[-1]["type"] == "result"
        assert await ana.receive_nothing(timeout=0.3)
        await ana.disconnect()


async def test_a_stranger_is_shut_out() -> None:
    ana = await connected("/ws/conversations/mine/")
    await ana.send_json_to({"type": "send", "input": "hello"})
    await until_result(ana)

    for path in ("/ws/conversations/mine/", "/ws/conversations/unused/"):
        mallory = await socket(path, "mallory")
        accepted, _ = await mallory.connect()
        assert accepted  # the handshake is the same for someone else's id and an unused one
        await mallory.disconnect()
    mallory = await connected("/ws/conversations/mine/", "mallory")
    await mallory.send_json_to({"type": "send", "input": "what is my name?"})
    assert (await mallory.receive_output(timeout=5))["code"] == 4403

    # on an id nobody used yet, the first send decides
    visitor = await connected("/ws/conversations/fresh/", None)
    other = await connected("/ws/conversations/fresh/", None)
    await visitor.send_json_to({"type": "send", "input": "hi"})
    assert (await until_result(visitor))[-1]["type"] == "result"
    await other.send_json_to({"type": "send", "input": "let me in"})
    assert (await other.receive_output(timeout=5))["code"] == 4403
    owner = await database_sync_to_async(Conversation.objects.get)(id="fresh")
    assert owner.user_id is None and owner.anonymous_key
    assert owner.turns == 1
    await ana.disconnect()
    await visitor.disconnect()


async def test_no_identity_no_socket() -> None:
    nobody = WebsocketCommunicator(APPLICATION, "/ws/conversations/c/")
    assert await refused(nobody) == 4403


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "invalid-json"),
        ('{"type": "message", "text": "hi"}', "invalid-input"),
        ('{"type": "send"}', "invalid-input"),
        ('{"type": "send", "input": "hi", "history": []}', "invalid-input"),
        ('{"type": "send", "input": "\\u0000"}', "invalid-input"),
        ('{"type": "send", "input": "\\ud800"}', "invalid-input"),
        ("[" * 5000 + "]" * 5000, "invalid-json"),
        ('{"type": "send", "input": "' + "x" * 300_000 + '"}', "payload-too-large"),
    ],
)
async def test_hostile_frames_get_an_error_and_the_socket_stays(frame: str, code: str) -> None:
    cookie = await database_sync_to_async(cookie_for)("ana")
    ana = await connected("/ws/conversations/h/", cookie=cookie)
    await ana.send_to(text_data=frame)
    error = await ana.receive_json_from(timeout=5)
    assert error["type"] == "error" and error["code"] == code, error
    assert not await database_sync_to_async(Conversation.objects.filter(id="h").exists)()
    await ana.send_json_to({"type": "send", "input": "still here?"})
    assert (await until_result(ana))[-1]["type"] == "result"
    await ana.disconnect()


async def test_a_made_up_cookie_is_no_identity() -> None:
    made_up = await socket(
        "/ws/conversations/c/", cookie=b"sessionid=abcdefghijklmnopqrstuvwxyz012345"
    )
    assert await refused(made_up) == 4403


async def test_one_turn_at_a_time_and_a_closed_socket_cancels_its_turn() -> None:
    with override_settings(
        WARLOCK_SESSIONS={"CONVERSATION_AGENT": "tests.conversations.agents.slow"}
    ):
        ana = await connected("/ws/conversations/slow/")
        await ana.send_json_to({"type": "send", "input": "My name is Sara."})
        assert (await ana.receive_json_from(timeout=5))["type"] == "delta"
        await ana.send_json_to({"type": "send", "input": "again"})
        busy = await ana.receive_json_from(timeout=5)
        while busy["type"] == "delta":
            busy = await ana.receive_json_from(timeout=5)
        assert busy["code"] == "conversation-busy"
        await ana.disconnect()  # mid-reply: the turn stops and changes nothing
        for _ in range(50):
            header = await database_sync_to_async(Conversation.objects.get)(id="slow")
            if header.pending is None:
                break
            await asyncio.sleep(0.1)
        assert header.turns == 0 and header.pending is None
        count = ConversationMessage.objects.filter(conversation_id="slow").count
        assert await database_sync_to_async(count)() == 0


async def test_a_tab_is_in_its_conversations_group_once_its_handshake_ends() -> None:
    """Else a turn another tab stores just after the handshake would go unheard."""
    from channels.layers import get_channel_layer

    from warlock_sessions.host.notify import conversation_group

    first = await connected("/ws/conversations/joined/")
    await first.send_json_to({"type": "send", "input": "hello"})
    await until_result(first)
    second = await connected("/ws/conversations/joined/")
    layer = get_channel_layer()
    assert len(layer.groups.get(conversation_group("joined"), {})) == 2  # type: ignore[union-attr]
    for communicator in (first, second):
        await communicator.disconnect()


async def test_another_tab_hears_of_each_stored_turn_and_a_stranger_does_not() -> None:
    first = await connected("/ws/conversations/tabs/")
    await first.send_json_to({"type": "send", "input": "hello"})
    await until_result(first)
    second = await connected("/ws/conversations/tabs/")  # the same user, another tab
    mallory = await connected("/ws/conversations/tabs/", "mallory")
    await first.send_json_to({"type": "send", "input": "My name is Sara."})
    await until_result(first)
    assert await second.receive_json_from(timeout=10) == {"type": "changed"}
    assert await first.receive_nothing(timeout=0.3)  # its own turn: the result says it all
    assert await mallory.receive_nothing(timeout=0.3)  # may not see it: hears nothing

    def send_over_http() -> int:
        from django.contrib.auth.models import User
        from rest_framework.test import APIClient

        client = APIClient()
        client.force_authenticate(User.objects.get(username="ana"))
        response = client.post("/api/conversations/tabs/send/", {"input": "hi"}, format="json")
        return response.status_code

    assert await database_sync_to_async(send_over_http)() == 200
    assert await first.receive_json_from(timeout=10) == {"type": "changed"}
    assert await second.receive_json_from(timeout=10) == {"type": "changed"}
    assert await mallory.receive_nothing(timeout=0.3)
    for communicator in (first, second, mallory):
        await communicator.disconnect()
