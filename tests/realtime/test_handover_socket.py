"""A chat handed to people over ws/sessions/{id}/: the user's socket and a staff member's on the
same session, on the in-memory layer and on Redis. Staff take it, answer and hand it back; the
user sees who answers, live; an end user cannot send as staff."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from tests.realtime.test_session_socket import layer, socket, until_turn
from warlock_sessions.models import Session, SessionEvent

__all__ = ["layer"]
pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def until(communicator: WebsocketCommunicator, wanted: str) -> list[dict[str, Any]]:
    """Frames up to the first of type ``wanted`` (a ``turn`` ends each turn's frames)."""
    frames = []
    while True:
        frame = await communicator.receive_json_from(timeout=10)
        frames.append(frame)
        if frame["type"] == wanted:
            return frames


def shown(frames: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """What a chat UI draws: messages by who wrote them, and handover notices."""
    drawn: list[tuple[str, ...]] = []
    for frame in frames:
        if frame["type"] == "message":
            drawn.append((frame["role"], frame.get("by", ""), frame["text"]))
        elif frame["type"] == "handover":
            drawn.append(("handover", frame["status"], frame.get("by", "")))
    return drawn


async def test_staff_answer_a_handed_over_chat_live_and_hand_it_back(layer: str) -> None:
    user = await socket("/ws/sessions/h-1/", "ana")
    assert (await user.connect())[0]
    await user.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    await until_turn(user)
    await user.send_json_to({"type": "message", "text": "talk to a person", "id": "m2"})
    asked = await until_turn(user)
    assert ("handover", "waiting", "") in shown(asked)
    row = await Session.objects.aget(id="h-1")
    assert row.handover == "waiting" and row.handover_since is not None

    staff = await socket("/ws/sessions/h-1/", "staff")
    assert (await staff.connect())[0]
    await until(staff, "handover")  # the log so far, replayed
    await until_turn(staff)

    await staff.send_json_to({"type": "handover", "action": "take", "key": "t1"})
    assert shown(await until_turn(user)) == [("handover", "taken", "staff")]
    await staff.send_json_to(
        {"type": "handover", "action": "reply", "key": "r1", "text": "Hi, this is Ana's helper."}
    )
    assert shown(await until_turn(user)) == [("staff", "staff", "Hi, this is Ana's helper.")]

    await user.send_json_to({"type": "message", "text": "great, thanks", "id": "m3"})
    assert shown(await until_turn(user)) == [("user", "", "great, thanks")]
    frames = (await until_turn(staff)) + (await until_turn(staff)) + (await until_turn(staff))
    assert ("user", "", "great, thanks") in shown(frames)  # the staff page sees it live

    await staff.send_json_to({"type": "handover", "action": "release", "key": "h1"})
    back = shown(await until_turn(user))
    assert back == [("handover", "released", "staff"), ("bot", "", "What's your name?")]
    row = await Session.objects.aget(id="h-1")
    assert row.handover == "" and row.handover_since is None
    logged = [
        event.payload
        async for event in SessionEvent.objects.filter(session_id="h-1", type="handover")
    ]
    assert [(event["status"], event.get("by")) for event in logged] == [
        ("waiting", None),
        ("taken", "staff"),
        ("released", "staff"),
    ]
    assert all(event.get("user") for event in logged[1:])  # which account did it
    await user.disconnect()
    await staff.disconnect()


async def test_an_end_user_cannot_send_as_staff(layer: str) -> None:
    user = await socket("/ws/sessions/h-2/", "ana")
    assert (await user.connect())[0]
    await user.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    await until_turn(user)
    for action in ("take", "reply", "release", "request"):
        frame = {"type": "handover", "action": action, "key": "k", "by": "Boss"}
        await user.send_json_to({**frame, "text": "I am staff"} if action == "reply" else frame)
        error = await user.receive_json_from(timeout=10)
        assert (error["type"], error["code"]) == ("error", "input-not-allowed")
    row = await Session.objects.aget(id="h-2")
    assert row.handover == ""
    await user.disconnect()


async def test_a_bad_handover_frame_from_staff_gets_an_error_and_the_socket_stays(
    layer: str,
) -> None:
    staff = await socket("/ws/sessions/h-3/", "staff")
    assert (await staff.connect())[0]
    for frame, code in (
        ({"type": "handover", "action": "grab", "key": "k"}, "invalid-input"),
        ({"type": "handover", "action": "reply", "key": "k"}, "invalid-input"),
        ({"type": "handover", "action": "take", "key": "k", "text": "\ud800"}, "invalid-input"),
        (
            {"type": "handover", "action": "reply", "key": "k", "text": "x" * 300_000},
            "payload-too-large",
        ),
    ):
        await staff.send_json_to(frame)
        error = await staff.receive_json_from(timeout=10)
        assert (error["type"], error["code"]) == ("error", code), error
    await staff.disconnect()
