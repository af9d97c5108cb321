"""New anonymous identities are bounded per client address (``MAX_NEW_VISITORS_PER_ADDRESS``):
a client that drops its cookie before every request got a new identity each time (100 in
7 s), so the per-owner quotas bounded nothing for strangers."""

from __future__ import annotations

from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import override_settings
from rest_framework.test import APIClient

from warlock_sessions.models import Conversation, SessionOwner
from warlock_sessions.realtime.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)
SETTINGS = {
    "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
    "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
    "MAX_NEW_VISITORS_PER_ADDRESS": 3,
}


def stranger_says(session_id: str, **meta: str) -> Any:
    """A client with no cookie (a new one each time) sends a first message."""
    return APIClient().post(
        f"/api/sessions/{session_id}/turn/",
        {"message": {"text": "hi", "id": "m1"}},
        format="json",
        **meta,
    )


@override_settings(WARLOCK_SESSIONS=SETTINGS)
def test_an_address_gets_so_many_new_visitors_an_hour_and_a_kept_cookie_goes_on() -> None:
    kept = APIClient()
    said = kept.post(
        "/api/sessions/k-0/turn/", {"message": {"text": "hi", "id": "m1"}}, format="json"
    )
    assert said.status_code == 200
    assert [stranger_says(f"s-{n}").status_code for n in range(2)] == [200, 200]
    refused = stranger_says("s-2")
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled" and refused.json()["retry_after"] > 0
    assert int(refused["Retry-After"]) > 0
    assert SessionOwner.objects.count() == 3  # nothing was made for the fourth
    # The visitor who kept their cookie is no new visitor: they go on.
    again = kept.post(
        "/api/sessions/k-1/turn/", {"message": {"text": "hi", "id": "m1"}}, format="json"
    )
    assert again.status_code == 200
    # Another address is counted apart.
    assert stranger_says("s-3", REMOTE_ADDR="10.0.0.9").status_code == 200


@override_settings(
    WARLOCK_SESSIONS=SETTINGS, REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
)
def test_behind_a_proxy_the_address_it_saw_is_counted() -> None:
    statuses = [
        stranger_says(f"p-{n}", HTTP_X_FORWARDED_FOR=f"spoofed-{n}, 203.0.113.7").status_code
        for n in range(4)
    ]
    assert statuses == [200, 200, 200, 429]  # what the client wrote first is ignored
    assert stranger_says("p-9", HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 200


@override_settings(WARLOCK_SESSIONS=SETTINGS)
def test_new_visitors_of_conversations_count_too() -> None:
    statuses = [
        APIClient()
        .post(f"/api/conversations/c-{n}/send/", {"input": "hi"}, format="json")
        .status_code
        for n in range(4)
    ]
    assert statuses == [200, 200, 200, 429]
    assert Conversation.objects.count() == 3


async def socket_first_frame(session_id: str) -> dict[str, Any]:
    """A socket of a client with no cookie: what its first message gets last."""
    from django.contrib.sessions.backends.db import SessionStore

    store = SessionStore()
    await store.acreate()
    chat = WebsocketCommunicator(
        AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
        f"/ws/sessions/{session_id}/",
        headers=[(b"cookie", f"sessionid={store.session_key}".encode())],
    )
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "hi", "id": "m1"})
    while (frame := await chat.receive_json_from(timeout=10))["type"] not in ("turn", "error"):
        pass
    await chat.disconnect()
    return frame


@pytest.mark.asyncio
@override_settings(WARLOCK_SESSIONS=SETTINGS)
async def test_new_visitors_over_sockets_count_as_over_http() -> None:
    frames = [await socket_first_frame(f"w-{n}") for n in range(4)]
    assert [frame["type"] for frame in frames] == ["turn", "turn", "turn", "error"]
    assert frames[-1]["code"] == "throttled" and frames[-1]["retry_after"] > 0
    assert "new visitors" in frames[-1]["detail"]


@override_settings(WARLOCK_SESSIONS=SETTINGS)
def test_a_page_that_mints_the_visitor_answers_429_not_500() -> None:
    """The chat page's pattern (the demo's and the tutorial's) raised in a plain view."""
    from django.test import Client

    answers = [Client().get("/") for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert int(answers[-1]["Retry-After"]) > 0
    assert b"Too many new visitors" in answers[-1].content


def test_an_ipv6_address_is_counted_as_its_64() -> None:
    from warlock_sessions.permissions import SocketRequest
    from warlock_sessions.throttling import NewVisitorThrottle

    def ident(address: str) -> str:
        request = SocketRequest({"client": (address, 1234), "headers": []})
        return NewVisitorThrottle().get_ident(request)

    assert ident("2001:db8:1:2:aaaa::1") == ident("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert ident("2001:db8:1:3::1") != ident("2001:db8:1:2::1")
    assert ident("203.0.113.7") == "203.0.113.7"


def test_the_deploy_check_asks_for_num_proxies() -> None:
    from tests.checks import warlock_check_ids

    with override_settings(REST_FRAMEWORK={"NUM_PROXIES": None}):
        assert "warlock_sessions.W009" in warlock_check_ids()
    assert "warlock_sessions.W009" not in warlock_check_ids()  # the tests' NUM_PROXIES = 0
    unlimited = {"MAX_NEW_VISITORS_PER_ADDRESS": None}
    with override_settings(REST_FRAMEWORK={"NUM_PROXIES": None}, WARLOCK_SESSIONS=unlimited):
        assert "warlock_sessions.W009" not in warlock_check_ids()
