"""A custom ``PERMISSION`` rules the HTTP API and the websockets alike: one policy, asked the
same questions by both."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.test import override_settings
from rest_framework.test import APIClient

from warlock_sessions.models import SessionQuerySet
from warlock_sessions.permissions import OwnerOrStaff, SessionAccess

from .test_session_socket import SETTINGS, socket, until_turn

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


class AuditorsSeeAll(OwnerOrStaff):
    """Users named ``auditor*`` see every session and may take part in it, but never write
    a raw blob or delete one."""

    @staticmethod
    def auditor(requester: Any) -> bool:
        user = requester.user
        return bool(user and user.is_authenticated and user.username.startswith("auditor"))

    def can_see(self, requester: Any, access: SessionAccess) -> bool:
        return self.auditor(requester) or super().can_see(requester, access)

    def can_act(self, requester: Any, action: str, access: SessionAccess) -> bool:
        if self.auditor(requester):
            return action in ("list", "retrieve", "events", "turn")
        return super().can_act(requester, action, access)

    def visible(self, requester: Any, sessions: SessionQuerySet) -> SessionQuerySet:
        return sessions if self.auditor(requester) else super().visible(requester, sessions)


POLICY = {**SETTINGS, "PERMISSION": "tests.realtime.test_custom_policy.AuditorsSeeAll"}


def api_client(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.get_or_create(username=username)[0])
    return client


@override_settings(WARLOCK_SESSIONS=POLICY)
async def test_the_custom_policy_decides_for_the_api_and_for_the_socket() -> None:
    chat = await socket("/ws/sessions/p1/", "ana")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    assert (await until_turn(chat))[-1]["type"] == "turn"
    await chat.disconnect()

    def over_http(username: str) -> dict[str, Any]:
        client = api_client(username)
        return {
            "list": [row["id"] for row in client.get("/api/sessions/").json()["results"]],
            "retrieve": client.get("/api/sessions/p1/").status_code,
            "turn": client.post(
                "/api/sessions/p1/turn/", {"message": {"text": "hi"}}, format="json"
            ).status_code,
        }

    assert await database_sync_to_async(over_http)("auditor-bea") == {
        "list": ["p1"],
        "retrieve": 200,
        "turn": 200,
    }
    assert await database_sync_to_async(over_http)("carl") == {
        "list": [],
        "retrieve": 404,
        "turn": 404,
    }

    # The socket asks the same policy: the auditor's socket follows the session (the log is
    # replayed to it); a stranger's learns nothing and is shut out when it writes.
    auditor = await socket("/ws/sessions/p1/", "auditor-bea")
    assert (await auditor.connect())[0]
    replayed = await auditor.receive_json_from(timeout=5)
    assert replayed["seq"] == 1, replayed
    await auditor.disconnect()
    stranger = await socket("/ws/sessions/p1/", "carl")
    assert (await stranger.connect())[0]
    assert await stranger.receive_nothing(timeout=0.3)
    await stranger.send_json_to({"type": "message", "text": "hi", "id": "x1"})
    assert await stranger.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
