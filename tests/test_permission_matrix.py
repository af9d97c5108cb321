"""Staff are held to Django's model permissions on every transport: each role below against
every session and conversation endpoint, the socket and the admin's actions. Being staff
grants nothing by itself; a superuser has every permission; the owner reads and talks.

A role without ``view_*`` cannot see another person's session (404, or 4403 on a socket, as
for any id); one that may see it but not do the action gets 403.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings
from rest_framework.test import APIClient

from tests.api.conftest import SETTINGS
from warlock_sessions.models import Session, SessionEvent, SessionOwner, Snapshot
from warlock_sessions.realtime.routing import websocket_urlpatterns
from warlock_sessions.snapshots import DjangoSnapshotStore
from warlock_sessions.stores import DjangoStore

pytestmark = pytest.mark.django_db(transaction=True)
SNAPSHOTS = {**SETTINGS, "SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore"}

#: The roles: their permissions (staff all but the owner and the stranger).
ROLES: dict[str, tuple[str, ...]] = {
    "owner": (),
    "stranger": (),
    "bare_staff": (),
    "viewer": ("view_session", "view_conversation", "view_snapshot"),
    "handler": ("view_session", "handle_chats"),
    "changer": (
        *("view_session", "change_session", "view_conversation", "change_conversation"),
        *("view_snapshot", "change_snapshot"),
    ),
    "deleter": (
        *("view_session", "delete_session", "view_conversation", "delete_conversation"),
        *("view_snapshot", "delete_snapshot"),
    ),
    "superuser": (),
}

#: action -> the status each role gets (the rest of the roles: the default, last).
MATRIX: dict[str, dict[str, int]] = {
    "session.retrieve": {"owner": 200, "viewer": 200, "handler": 200, "changer": 200}
    | {"deleter": 200, "superuser": 200, "*": 404},
    "session.events": {"owner": 200, "viewer": 200, "handler": 200, "changer": 200}
    | {"deleter": 200, "superuser": 200, "*": 404},
    "session.update": {"changer": 200, "superuser": 200, "owner": 403, "viewer": 403}
    | {"handler": 403, "deleter": 403, "*": 404},
    "session.destroy": {"deleter": 204, "superuser": 204, "owner": 403, "viewer": 403}
    | {"handler": 403, "changer": 403, "*": 404},
    "session.turn": {"owner": 200, "changer": 200, "superuser": 200, "viewer": 403}
    | {"handler": 403, "deleter": 403, "*": 404},
    # Refused before the session is looked up (the same for any id): 403 input-not-allowed.
    "session.turn:handover": {"handler": 200, "superuser": 200, "*": 403},
    "session.turn:context": {"changer": 200, "superuser": 200, "*": 403},
    "conversation.retrieve": {"owner": 200, "viewer": 200, "changer": 200, "deleter": 200}
    | {"superuser": 200, "*": 404},
    "conversation.history": {"owner": 200, "viewer": 200, "changer": 200, "deleter": 200}
    | {"superuser": 200, "*": 404},
    "conversation.fork": {"owner": 201, "changer": 201, "superuser": 201, "viewer": 403}
    | {"deleter": 403, "*": 404},
    "conversation.resume": {"owner": 200, "changer": 200, "superuser": 200, "viewer": 403}
    | {"deleter": 403, "*": 404},
    "conversation.send": {"owner": 200, "changer": 200, "superuser": 200, "viewer": 403}
    | {"deleter": 403, "*": 404},
    "conversation.truncate": {"owner": 200, "changer": 200, "superuser": 200, "viewer": 403}
    | {"deleter": 403, "*": 404},
    "conversation.destroy": {"deleter": 204, "superuser": 204, "owner": 403, "viewer": 403}
    | {"changer": 403, "*": 404},
    "snapshot.list": {"viewer": 200, "changer": 200, "deleter": 200, "superuser": 200} | {"*": 403},
    "snapshot.retrieve": {"viewer": 200, "changer": 200, "deleter": 200, "superuser": 200}
    | {"*": 403},
    "snapshot.partial_update": {"changer": 200, "superuser": 200, "*": 403},
    "snapshot.destroy": {"deleter": 204, "superuser": 204, "*": 403},
}


def account(role: str) -> User:
    if role == "superuser":
        return User.objects.create_superuser(role)
    user = User.objects.create_user(role, is_staff=role not in ("owner", "stranger"))
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="warlock_sessions", codename__in=ROLES[role]
        )
    )
    return User.objects.get(pk=user.pk)  # no permission cache


def seeded(role: str) -> tuple[User, APIClient]:
    """The owner's booking chat ``s1`` and conversation ``c1``, a snapshot, and ``role``'s
    client."""
    owner = User.objects.get_or_create(username="owner")[0]
    answer = APIClient()
    answer.force_authenticate(owner)
    said = answer.post(
        "/api/sessions/s1/turn/", {"message": {"text": "book", "id": "m1"}}, format="json"
    )
    assert said.status_code == 200, said.content
    sent = answer.post("/api/conversations/c1/send/", {"input": "hi"}, format="json")
    assert sent.status_code == 200, sent.content
    DjangoSnapshotStore().save({"runId": "run-1", "status": "running", "workflowName": "w"})
    user = owner if role == "owner" else account(role)
    client = APIClient()
    client.force_authenticate(user)
    return user, client


def act(client: APIClient, action: str) -> int:
    turn = "/api/sessions/s1/turn/"
    requests: dict[str, Any] = {
        "session.retrieve": lambda: client.get("/api/sessions/s1/"),
        "session.events": lambda: client.get("/api/sessions/s1/events/"),
        "session.update": lambda: client.put(
            "/api/sessions/s1/",
            DjangoStore().load("s1"),
            format="json",
            HTTP_IF_MATCH=f'"{Session.objects.get(id="s1").version}"',
        ),
        "session.destroy": lambda: client.delete("/api/sessions/s1/"),
        "session.turn": lambda: client.post(
            turn, {"message": {"text": "hi", "id": "x1"}}, format="json"
        ),
        "session.turn:handover": lambda: client.post(
            turn, {"handover": {"action": "reply", "key": "r1", "text": "Hi"}}, format="json"
        ),
        "session.turn:context": lambda: client.post(
            turn, {"message": {"text": "hi", "id": "x2"}, "context": {"vip": True}}, format="json"
        ),
        "conversation.retrieve": lambda: client.get("/api/conversations/c1/"),
        "conversation.history": lambda: client.get("/api/conversations/c1/history/"),
        "conversation.fork": lambda: client.post(
            "/api/conversations/c1/fork/", {"target": "c2"}, format="json"
        ),
        "conversation.resume": lambda: client.post("/api/conversations/c1/resume/", format="json"),
        "conversation.send": lambda: client.post(
            "/api/conversations/c1/send/", {"input": "more"}, format="json"
        ),
        "conversation.truncate": lambda: client.post(
            "/api/conversations/c1/truncate/", {"message_count": 0}, format="json"
        ),
        "conversation.destroy": lambda: client.delete("/api/conversations/c1/"),
        "snapshot.list": lambda: client.get("/api/snapshots/"),
        "snapshot.retrieve": lambda: client.get("/api/snapshots/run-1/"),
        "snapshot.partial_update": lambda: client.patch(
            "/api/snapshots/run-1/", {"status": "cancelled"}, format="json"
        ),
        "snapshot.destroy": lambda: client.delete("/api/snapshots/run-1/"),
    }
    return int(requests[action]().status_code)


@override_settings(WARLOCK_SESSIONS=SNAPSHOTS)
@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize("action", list(MATRIX))
def test_every_endpoint_holds_each_role_to_its_permissions(role: str, action: str) -> None:
    _user, client = seeded(role)
    expected = MATRIX[action].get(role, MATRIX[action]["*"])
    assert act(client, action) == expected


@override_settings(WARLOCK_SESSIONS=SNAPSHOTS)
@pytest.mark.parametrize("role", list(ROLES))
def test_the_list_shows_a_role_what_it_may_read(role: str) -> None:
    _user, client = seeded(role)
    listed = [row["id"] for row in client.get("/api/sessions/").json()["results"]]
    reads = role in ("owner", "viewer", "handler", "changer", "deleter", "superuser")
    assert listed == (["s1"] if reads else [])


#: A socket's answer: whether it follows the chat, then what each frame gets.
SOCKET = {
    "owner": ("follows", "turn", "input-not-allowed"),
    "viewer": ("4403", None, None),  # reads it over HTTP; a socket is for those who talk
    "handler": ("follows", "input-not-allowed", "turn"),
    "changer": ("follows", "turn", "input-not-allowed"),
    "superuser": ("follows", "turn", "turn"),
    "bare_staff": ("4403", None, None),
    "stranger": ("4403", None, None),
}


async def socket_answers(cookie: bytes, after: int) -> tuple[str, str | None, str | None]:
    """Whether a socket opened after the log's last event follows the chat, and what its
    message and its handover get."""
    chat = WebsocketCommunicator(
        AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
        f"/ws/sessions/s1/?after_seq={after}",
        headers=[(b"cookie", cookie)],
    )
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "hello", "id": "w1"})
    first = await chat.receive_output(timeout=5)
    if first["type"] == "websocket.close":
        return str(first["code"]), None, None
    answers: list[str] = []
    frame = first
    for sent in ({"type": "handover", "action": "reply", "key": "w2", "text": "Hi"}, None):
        while True:
            event = json.loads(frame["text"])
            if event["type"] in ("turn", "error"):
                answers.append(event["type"] if event["type"] == "turn" else event["code"])
                break
            frame = await chat.receive_output(timeout=5)
        if sent is None:
            break
        await chat.send_json_to(sent)
        frame = await chat.receive_output(timeout=5)
    await chat.disconnect()
    return "follows", answers[0], answers[1]


@override_settings(WARLOCK_SESSIONS=SETTINGS)
@pytest.mark.parametrize("role", list(SOCKET))
def test_a_socket_holds_each_role_to_its_permissions(role: str) -> None:
    user, _client = seeded(role)
    browser = Client()
    browser.force_login(user)
    cookie = f"sessionid={browser.cookies['sessionid'].value}".encode()
    after = SessionEvent.objects.filter(session_id="s1").order_by("-seq")[0].seq
    assert async_to_sync(socket_answers)(cookie, after) == SOCKET[role]
    assert SessionOwner.objects.get(session_id="s1").user.username == "owner"


@override_settings(WARLOCK_SESSIONS=SETTINGS)
@pytest.mark.parametrize(
    ("role", "answers", "fires"),
    [
        ("viewer", 403, False),
        ("handler", 200, False),
        ("changer", 403, True),
        ("superuser", 200, True),
    ],
)
def test_the_admin_holds_staff_to_their_permissions(role: str, answers: int, fires: bool) -> None:
    user, _client = seeded(role)
    browser = Client()
    browser.force_login(user)
    page = "/admin/warlock_sessions/session/s1/change/"
    assert browser.get(page).status_code == 200
    take = browser.post(
        "/admin/warlock_sessions/session/s1/handover/",
        {"action": "take", "key": "t1"},
        HTTP_ACCEPT="application/json",
    )
    assert take.status_code == answers
    assert (b"Take this chat" in browser.get(page).content) is (answers == 200)
    listed = browser.get("/admin/warlock_sessions/session/")
    assert (b"fire_due_wakes" in listed.content) is fires
    assert Snapshot.objects.count() == 1


def test_every_endpoint_of_the_api_is_in_the_matrix() -> None:
    """An endpoint added later joins the matrix, or this fails."""
    from warlock_sessions.api.urls import router

    standard = ("list", "retrieve", "update", "partial_update", "destroy")
    served = set()
    for _prefix, viewset, basename in router.registry:
        actions = [name for name in standard if hasattr(viewset, name)]
        actions += [extra.__name__ for extra in viewset.get_extra_actions()]
        served |= {f"{basename.removeprefix('warlock-')}.{name}" for name in actions}
    # The session list is test_the_list_shows_a_role_what_it_may_read's; a session's
    # partial_update is its update's (DRF routes PATCH to it).
    covered = {key.split(":")[0] for key in MATRIX} | {"session.list", "session.partial_update"}
    assert served - covered == set()
