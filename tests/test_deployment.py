"""What a deployment relies on, in one process: the health views, the answer to a fault
outside DRF's views, signed-cookie sessions, and the conversation lock's bounded wait."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.db import OperationalError
from django.test import Client, override_settings
from django.urls import path

from tests.api.test_hostile_api import post, visitor
from warlock_sessions.api.health import urlpatterns as health_urls
from warlock_sessions.errors import SessionLockTimeout
from warlock_sessions.locks import InProcessLock
from warlock_sessions.models import Conversation, SessionOwner

pytestmark = pytest.mark.django_db(transaction=True)


def test_healthz_and_readyz_answer_when_all_is_well(client: Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "checks": {"database": "ok", "channel_layer": "ok"}}


@override_settings(CHANNEL_LAYERS={"default": {"BACKEND": "tests.test_deployment.DownLayer"}})
def test_readyz_names_a_channel_layer_that_does_not_answer_and_says_no_more(
    client: Client,
) -> None:
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready["Retry-After"] == "2"
    assert ready.json()["checks"] == {"database": "ok", "channel_layer": "unavailable"}
    assert "refused" not in ready.content.decode()  # the why goes to the log, not the page


class DownLayer:
    """A channel layer whose server is away."""

    def __init__(self, **kwargs: Any) -> None:
        pass

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        raise ConnectionRefusedError("refused")


def database_down(request: Any) -> Any:
    raise OperationalError("the connection is closed")


def broken(request: Any) -> Any:
    raise RuntimeError("a bug")


urlpatterns = [
    *health_urls,
    path("down/", database_down),
    path("broken/", broken),
]


@override_settings(ROOT_URLCONF="tests.test_deployment", DEBUG=True)
def test_an_outage_outside_the_api_is_a_503_never_a_500_page() -> None:
    client = Client(raise_request_exception=False)
    page = client.get("/down/")
    assert page.status_code == 503
    assert page["Retry-After"] == "2"
    assert page["Content-Type"].startswith("text/plain")
    json_client = client.get("/down/", headers={"Accept": "application/json"})
    assert json_client.json()["code"] == "unavailable"
    assert client.get("/broken/").status_code == 500  # a bug stays a bug outside the API


BOOKING = {"AGENTS": {"booking": "example_project.demo.agents.booking_agent"}}


def test_signed_cookie_sessions_own_their_conversations() -> None:
    with override_settings(
        SESSION_ENGINE="django.contrib.sessions.backends.signed_cookies", WARLOCK_SESSIONS=BOOKING
    ):
        ana, eve = Client(), Client()
        for client in (ana, eve):
            client.get("/")  # the chat page gives the visitor an identity
        body = {"message": {"text": "I'd like to book an appointment", "id": "m1"}}
        first = post(ana, "/api/sessions/signed-1/turn/", body)
        assert first.status_code == 200, first.content
        again = {"message": {"text": "My name is Ana Souza", "id": "m2"}}
        assert post(ana, "/api/sessions/signed-1/turn/", again).status_code == 200
        assert eve.get("/api/sessions/signed-1/").status_code == 404
    # The whole signed cookie is the session's key: the owner row holds a digest of it (on
    # PostgreSQL a longer one failed every anonymous first turn with a 500).
    owner = SessionOwner.objects.get(session_id="signed-1")
    assert 0 < len(owner.anonymous_key) <= SessionOwner._meta.get_field("anonymous_key").max_length


def test_a_lock_wait_is_bounded() -> None:
    lock = InProcessLock(timeout=0.2)
    inside = threading.Event()
    leave = threading.Event()
    holder = threading.Thread(
        target=lock.with_lock, args=("k", lambda: (inside.set(), leave.wait(5)))
    )
    holder.start()
    inside.wait(5)
    with pytest.raises(SessionLockTimeout):
        lock.with_lock("k", lambda: None)
    leave.set()
    holder.join()
    assert lock.with_lock("k", lambda: "free again") == "free again"


@override_settings(
    WARLOCK_SESSIONS={
        "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
        "CONVERSATION_AGENT": "tests.test_deployment.slow_assistant",
        "LOCK_TIMEOUT": 0.3,
    }
)
def test_a_send_behind_a_running_turn_is_409_conversation_busy_not_a_queue() -> None:
    ana = visitor()
    started.clear()
    release.clear()
    first: dict[str, Any] = {}

    def send_first() -> None:
        first["response"] = post(ana, "/api/conversations/busy-1/send/", {"input": "first"})

    thread = threading.Thread(target=send_first)
    thread.start()
    assert started.wait(10)
    second = post(ana, "/api/conversations/busy-1/send/", {"input": "second"})
    release.set()
    thread.join(10)
    assert second.status_code == 409, second.content
    assert json.loads(second.content)["code"] == "conversation-busy"
    assert first["response"].status_code == 200


started = threading.Event()
release = threading.Event()


class SlowAssistant:
    """The demo's assistant, whose model takes as long as the test says."""

    def __init__(self) -> None:
        from example_project.demo.assistant import assistant

        self.agent = assistant

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        started.set()
        release.wait(10)
        return self.agent.execute(*args, **kwargs)

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.agent.stream(*args, **kwargs)

    def resume(self, *args: Any, **kwargs: Any) -> Any:
        return self.agent.resume(*args, **kwargs)


slow_assistant = SlowAssistant()


@override_settings(
    WARLOCK_SESSIONS={
        **BOOKING,
        "CONVERSATION_AGENT": "example_project.demo.assistant.assistant",
        "MAX_SESSIONS_PER_OWNER": 2,
        "MAX_CONVERSATIONS_PER_OWNER": 2,
    }
)
def test_an_owner_may_make_only_so_many_sessions_and_conversations() -> None:
    eve, ana = visitor(), visitor()
    hello = {"message": {"text": "hi", "id": "m1"}}
    assert [post(eve, f"/api/sessions/eve-{n}/turn/", hello).status_code for n in range(2)] == [
        200,
        200,
    ]
    refused = post(eve, "/api/sessions/eve-2/turn/", hello)
    assert refused.status_code == 403
    assert json.loads(refused.content)["code"] == "quota-exceeded"
    assert post(eve, "/api/sessions/eve-0/turn/", hello).status_code == 200  # her own, still
    assert post(ana, "/api/sessions/ana-0/turn/", hello).status_code == 200  # others unaffected

    said = {"input": "hello"}
    assert post(eve, "/api/conversations/eve-talk-0/send/", said).status_code == 200
    assert post(eve, "/api/conversations/eve-talk-0/fork/", {}).status_code == 201
    for refused in (
        post(eve, "/api/conversations/eve-talk-1/send/", said),
        post(eve, "/api/conversations/eve-talk-0/fork/", {}),
    ):
        assert refused.status_code == 403
        assert json.loads(refused.content)["code"] == "quota-exceeded"
    assert Conversation.objects.count() == 2  # hers: the first and its fork
