"""What staff write for staff (a handover's reason, the staff account that acted) never reaches
the customer: every way a customer reads their session is listed here, over HTTP and the
socket, and none carries it; staff still read it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import override_settings
from rest_framework.test import APIClient

from tests.realtime.test_session_socket import cookie_for
from warlock_sessions.host import Host
from warlock_sessions.realtime.routing import websocket_urlpatterns

SETTINGS = {"AGENTS": {"booking": "example_project.demo.agents.booking_agent"}}
#: The interrupt's reason in the demo agent (the inbox shows it), and server code's.
FLOW_REASON = "asked for a person"
SECRET = "SECRET-REASON fraud suspect"
pytestmark = pytest.mark.django_db(transaction=True)


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def staff_only_in(read: Any, staff: User) -> list[str]:
    """What of the staff's own notes ``read`` (any JSON) carries."""
    text = json.dumps(read)
    found = [note for note in (FLOW_REASON, SECRET) if note in text]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "user" in value and str(value["user"]) == str(staff.pk):
                found.append(f"user {value['user']}")
            if "held" in value:
                found.append("held")
            for entry in value.values():
                walk(entry)
        elif isinstance(value, list):
            for entry in value:
                walk(entry)

    walk(read)
    return found


async def socket_frames(cookie: bytes, session_id: str, send: dict[str, Any]) -> list[Any]:
    """A socket's replay of the whole log, then its own turn's frames."""
    communicator = WebsocketCommunicator(
        AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
        f"/ws/sessions/{session_id}/?after_seq=0",
        headers=[(b"cookie", cookie)],
    )
    assert (await communicator.connect())[0]
    await communicator.send_json_to(send)
    frames, echoed = [], False
    while not (echoed and frames[-1]["type"] == "turn"):
        frames.append(await communicator.receive_json_from(timeout=10))
        echoed = echoed or frames[-1].get("id") == send["id"]
    await communicator.disconnect()
    return frames


@override_settings(WARLOCK_SESSIONS=SETTINGS)
def test_a_customer_reads_no_staff_note_however_they_read_their_session() -> None:
    ana = User.objects.create_user("ana")
    rita = User.objects.create_user("rita-admin-7", is_staff=True, first_name="Rita")
    rita.user_permissions.add(  # she reads every chat and answers them, nothing more
        *Permission.objects.filter(codename__in=["view_session", "handle_chats"])
    )
    rita = User.objects.get(pk=rita.pk)
    customer, staff = client_of(ana), client_of(rita)
    turn = "/api/sessions/chat-1/turn/"
    reads: dict[str, Any] = {}

    def say(text: str, key: str) -> Any:
        answer = customer.post(turn, {"message": {"text": text, "id": key}}, format="json")
        assert answer.status_code == 200, answer.content
        return answer.json()

    say("I'd like to book", "m1")
    # The flow's own interrupt hands over with its reason, in the customer's own turn.
    reads["the turn that handed over"] = say("talk to a person", "m2")
    staff_turn = {"handover": {"action": "take", "key": "t1"}}
    assert staff.post(turn, staff_turn, format="json").status_code == 200
    reads["a turn while staff have it"] = say("hello?", "m3")
    staff_reply = {"handover": {"action": "reply", "key": "r1", "text": "Hi, Rita here."}}
    assert staff.post(turn, staff_reply, format="json").status_code == 200
    release = {"handover": {"action": "release", "key": "b1"}}
    assert staff.post(turn, release, format="json").status_code == 200
    # Server code hands it over again, with a note for staff only.
    Host("booking").handle(
        "chat-1", {"handover": {"action": "request", "key": "vip", "reason": SECRET}}
    )
    # A run ends after the hand-back: the turn's answer lists it whole, outcomes and all.
    Host("booking").handle(
        "chat-1", {"handover": {"action": "release", "key": "back-2", "by": "Rita"}}
    )
    reads["the turn that ended a run"] = say("cancel", "m3b")
    assert reads["the turn that ended a run"]["ended"], reads["the turn that ended a run"]
    Host("booking").handle(
        "chat-1", {"handover": {"action": "request", "key": "vip-2", "reason": SECRET}}
    )
    reads["the session"] = customer.get("/api/sessions/chat-1/").json()
    reads["the events"] = customer.get("/api/sessions/chat-1/events/?after_seq=0").json()
    reads["the list"] = customer.get("/api/sessions/").json()
    cookie = cookie_for("ana")
    reads["the socket's replay and its own turn"] = async_to_sync(socket_frames)(
        cookie, "chat-1", {"type": "message", "text": "still there?", "id": "m4"}
    )

    leaks = {where: staff_only_in(read, rita) for where, read in reads.items()}
    assert leaks == {where: [] for where in reads}, leaks
    assert reads["the session"]["session"]["metadata"]["handover"]["status"] == "waiting"

    # Staff read their notes where they did before.
    session = staff.get("/api/sessions/chat-1/").json()["session"]
    assert session["metadata"]["handover"]["reason"] == SECRET
    taken = staff.post(turn, {"handover": {"action": "take", "key": "t2"}}, format="json").json()
    assert any(event["payload"].get("user") == str(rita.pk) for event in taken["events"])
