"""Chats with people in the admin: the inbox (oldest first, what the customer said last), and
the session page where staff take a chat, answer it and hand it back, each recorded in the
log with who did it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from warlock_sessions.host import Host
from warlock_sessions.models import OutboundMessage, Session, SessionEvent

pytestmark = pytest.mark.django_db

SETTINGS = {"AGENTS": {"booking": "example_project.demo.agents.booking_agent"}}
INBOX = "/admin/warlock_sessions/waitingsession/"


@pytest.fixture(autouse=True)
def booking() -> Iterator[None]:
    with override_settings(WARLOCK_SESSIONS=SETTINGS):
        yield


@pytest.fixture
def staff_client(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("rita", "rita@example.com", "pw"))
    return client


def asks_for_a_person(session_id: str, *said: str) -> None:
    host = Host("booking")
    for index, text in enumerate(["I'd like to book", "talk to a person", *said]):
        host.handle(session_id, {"message": {"text": text, "id": f"{session_id}-{index}"}})


def test_the_inbox_lists_chats_with_people_oldest_first(staff_client: Client) -> None:
    asks_for_a_person("first", "hello? anyone?")
    asks_for_a_person("second")
    Host("booking").handle("bot-only", {"message": {"text": "hi", "id": "b1"}})
    page = staff_client.get(INBOX).content.decode()
    assert page.index(">first<") < page.index(">second<")
    assert "bot-only" not in page
    assert "hello? anyone?" in page and "waiting for a person" in page
    redirect = staff_client.get(f"{INBOX}first/change/")
    assert redirect["Location"].endswith("/admin/warlock_sessions/session/first/change/")


def test_staff_take_answer_and_hand_back_from_the_session_page(staff_client: Client) -> None:
    asks_for_a_person("chat")
    page = staff_client.get("/admin/warlock_sessions/session/chat/change/").content.decode()
    assert "Waiting for a person since" in page and "Hand back to the bot" in page
    url = "/admin/warlock_sessions/session/chat/handover/"
    json = {"HTTP_ACCEPT": "application/json"}
    assert staff_client.post(url, {"action": "take", "key": "t1"}, **json).status_code == 200
    reply = {"action": "reply", "key": "r1", "text": "Hi, Rita here."}
    assert staff_client.post(url, reply, **json).json() == {"code": "ok", "detail": ""}
    assert staff_client.post(url, reply, **json).status_code == 200  # sent twice, answered once
    assert OutboundMessage.objects.filter(session_id="chat", text="Hi, Rita here.").count() == 1
    page = staff_client.get("/admin/warlock_sessions/session/chat/change/").content.decode()
    assert "rita answers this chat" in page and "Hi, Rita here." in page
    assert staff_client.get(INBOX).content.decode().count("taken by rita") == 1
    back = staff_client.post(url, {"action": "release", "key": "h1"})  # a plain form
    assert back.status_code == 302
    assert Session.objects.get(id="chat").handover == ""
    log = SessionEvent.objects.filter(session_id="chat", type="handover").order_by("seq")
    assert [(event.payload["status"], event.payload.get("by")) for event in log] == [
        ("waiting", None),
        ("taken", "rita"),
        ("released", "rita"),
    ]
    said = SessionEvent.objects.filter(session_id="chat", type="message").order_by("-seq")
    assert said.first().payload["text"] == "What's your name?"  # the bot asks again


@pytest.mark.parametrize(
    ("posted", "code"),
    [
        ({"action": "grab"}, "invalid-input"),
        ({"action": "reply", "text": "   "}, "invalid-input"),
        ({"action": "reply", "text": "\x00"}, "invalid-input"),
        ({"action": "take", "key": "k" * 300}, "invalid-input"),
    ],
)
def test_a_bad_post_is_refused_with_its_reason(
    staff_client: Client, posted: dict[str, str], code: str
) -> None:
    asks_for_a_person("chat")
    response = staff_client.post(
        "/admin/warlock_sessions/session/chat/handover/", posted, HTTP_ACCEPT="application/json"
    )
    assert (response.status_code, response.json()["code"]) == (400, code)


def test_only_staff_reach_it(client: Client) -> None:
    asks_for_a_person("chat")
    client.force_login(User.objects.create_user("ana"))
    response = client.post("/admin/warlock_sessions/session/chat/handover/", {"action": "take"})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert Session.objects.get(id="chat").handover == "waiting"
    assert client.get(INBOX).status_code == 302


def test_an_id_the_admin_quotes_in_urls_is_answered_and_a_nul_is_404(staff_client: Client) -> None:
    asks_for_a_person("chat_1/x")  # "_" and "/" are quoted in the admin's URLs
    page = staff_client.get(INBOX).content.decode()
    assert "/admin/warlock_sessions/session/chat_5F1_2Fx/change/" in page
    url = "/admin/warlock_sessions/session/chat_5F1_2Fx/handover/"
    response = staff_client.post(url, {"action": "take", "key": "t1"})
    assert response["Location"] == "/admin/warlock_sessions/session/chat_5F1_2Fx/change/"
    assert Session.objects.get(id="chat_1/x").handover == "taken"
    nul = staff_client.post("/admin/warlock_sessions/session/a%00b/handover/", {"action": "take"})
    assert nul.status_code == 404


def test_the_inbox_links_each_chat_once(staff_client: Client) -> None:
    """One link to the session's page, not a link inside the list's own."""
    asks_for_a_person("chat-once")
    page = staff_client.get(INBOX).content.decode()
    body = page[page.index("<tbody>", page.index('id="result_list"')) :]
    row = body[: body.index("</tr>")]
    assert row.count("<a ") == 1
    assert 'href="/admin/warlock_sessions/session/chat-once/change/"' in row
