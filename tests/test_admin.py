"""The read-only sessions admin renders for staff and is refused to everyone else."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from warlock_sessions.testing import run_blob
from warlock_sessions.testing.factories import SessionFactory, SessionOwnerFactory

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/warlock_sessions/session/"


@pytest.fixture
def staff_client(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


@pytest.mark.parametrize(
    "query", ["", "?run_status=waiting", "?flow=retomar", "?q=busy", "?agent=support"]
)
def test_the_session_list_renders_with_each_filter(staff_client: Client, query: str) -> None:
    SessionFactory(
        id="busy", agent="support", runs=[run_blob("retomar", status="waiting", step_id="w1")]
    )
    SessionFactory(id="idle")

    response = staff_client.get(CHANGELIST + query)

    assert response.status_code == 200
    assert b"busy" in response.content
    if query:
        assert b"idle</a>" not in response.content


def test_the_detail_page_shows_the_blob_read_only(staff_client: Client) -> None:
    SessionFactory(id="s1", runs=[run_blob("triagem")])

    response = staff_client.get(f"{CHANGELIST}s1/change/")

    assert response.status_code == 200
    assert b"&quot;flowId&quot;: &quot;triagem&quot;" in response.content
    assert b'name="_save"' not in response.content
    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403


def test_a_visitor_s_fingerprint_is_shown_on_their_session_and_their_key_finds_them(
    staff_client: Client,
) -> None:
    """What ``warlock_erase --visitor`` takes finds their sessions in the admin."""
    for session_id in ("s1", "s2", "other"):
        SessionFactory(id=session_id)
    for session_id in ("s1", "s2"):
        SessionOwnerFactory(session_id=session_id, user=None, anonymous_key="visitor-key-1")
    SessionOwnerFactory(session_id="other", user=None, anonymous_key="visitor-key-2")
    page = staff_client.get(f"{CHANGELIST}s1/change/").content.decode()
    # A fingerprint, never the key: it is the visitor's Django session key, a credential.
    fingerprint = hashlib.sha256(b"visitor-key-1").hexdigest()[:12]
    assert f"visitor #{fingerprint}" in page and "visitor-key-1" not in page
    found = staff_client.get(f"{CHANGELIST}?q=visitor-key-1").content.decode()
    assert ">s1</a>" in found and ">s2</a>" in found and ">other</a>" not in found


def test_an_unreadable_row_is_shown_with_its_error(staff_client: Client) -> None:
    SessionFactory(id="broken", blob='{"v": 3}')
    response = staff_client.get(f"{CHANGELIST}broken/change/")
    assert response.status_code == 200
    assert b"v is 3, expected 4" in response.content


def test_a_non_staff_user_is_refused(client: Client) -> None:
    client.force_login(User.objects.create_user("ana", password="pw"))
    SessionFactory(id="s1")
    response = client.get(CHANGELIST)
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


@pytest.mark.parametrize(("session_id", "in_url"), [("live", "live"), ("a_b/c", "a_5Fb_2Fc")])
def test_the_detail_page_shows_runs_claims_inputs_and_the_event_timeline(
    staff_client: Client, session_id: str, in_url: str
) -> None:
    from warlock_sessions.host import Host
    from warlock_sessions.stores import DjangoStore

    from .host.conftest import race_agent

    Host(race_agent(), DjangoStore()).handle(session_id, {"message": {"text": "x", "id": "m1"}})
    page = staff_client.get(f"{CHANGELIST}{in_url}/change/").content.decode()
    assert "Live runs" in page and "triagem#m1" in page and "asking" in page
    assert f"triagem:{session_id}:" in page  # the claim
    assert "m1" in page  # the recent input
    assert "Event timeline" in page and "run_started" in page
    assert f"silence:retomar:{session_id}:" in page  # the pending wake


def test_the_session_page_leads_with_the_transcript_and_folds_the_blob(
    staff_client: Client,
) -> None:
    from warlock_sessions.host import Host
    from warlock_sessions.models import OutboundMessage
    from warlock_sessions.stores import DjangoStore

    from .host.conftest import echo_agent

    host = Host(echo_agent(), DjangoStore())
    host.handle("chat", {"message": {"text": "hello <b>there</b>", "id": "m1"}})
    host.handle("chat", {"message": {"text": "and again", "id": "m2"}})
    page = staff_client.get(f"{CHANGELIST}chat/change/").content.decode()

    transcript = page[page.index("Transcript") : page.index("Live runs")]
    bubbles = transcript.split('<li class="')[1:]
    assert [bubble.split('"')[0] for bubble in bubbles] == ["user", "bot", "user", "bot"]
    assert "hello &lt;b&gt;there&lt;/b&gt;" in bubbles[0] and "<time datetime=" in bubbles[0]
    assert "ok" in bubbles[1]
    outbox = page[page.index("Outbox") : page.index("Claims")]
    assert outbox.count("<tr>") == 1 + OutboundMessage.objects.filter(session_id="chat").count()
    # The timeline is JSON, not Python's repr; the blob comes last, folded.
    assert "&quot;role&quot;: &quot;user&quot;" in page and "&#x27;role&#x27;" not in page
    assert page.index('<details id="raw-blob">') > page.index("Event timeline")


def test_sessions_are_found_by_what_their_data_says_and_show_their_agent_and_size(
    staff_client: Client,
) -> None:
    from warlock_sessions.host import Host
    from warlock_sessions.stores import DjangoStore

    from .host.conftest import echo_agent

    Host(echo_agent(), DjangoStore()).handle("found", {"message": {"text": "hi", "id": "m1"}})
    SessionFactory(id="ana", data={"name": "Ana Souza", "contact": {"email": "Ana@Example.com"}})
    SessionFactory(id="other", data={"name": "Bob"})

    assert "found</a>" in staff_client.get(CHANGELIST + "?q=found").content.decode()
    page = staff_client.get(CHANGELIST + "?q=ana@example").content.decode()
    assert "ana</a>" in page and "other</a>" not in page and "found</a>" not in page
    page = staff_client.get(CHANGELIST).content.decode()
    assert '<td class="field-agent">echo</td>' in page
    assert "bytes</td>" in page or "KB</td>" in page


def test_export_json_downloads_the_selected_sessions(staff_client: Client) -> None:
    SessionFactory(id="s1", runs=[run_blob("bv")])
    response = staff_client.post(CHANGELIST, {"action": "export_json", "_selected_action": ["s1"]})
    assert response["Content-Disposition"] == 'attachment; filename="sessions.json"'
    assert [s["id"] for s in json.loads(response.content)] == ["s1"]


def test_fire_due_wakes_now(staff_client: Client) -> None:
    from django.test import override_settings

    from warlock_sessions.host import Host
    from warlock_sessions.models import OutboundMessage, Wake
    from warlock_sessions.stores import DjangoStore

    with override_settings(
        WARLOCK_SESSIONS={"AGENTS": {"timer": "tests.host.conftest.timer_agent"}}
    ):
        Host("timer", DjangoStore()).handle("t1", {"start": {"flow": "lembrete", "key": "k"}})
        Wake.objects.update(due_at="2000-01-01T00:00:00Z")
        response = staff_client.post(
            CHANGELIST, {"action": "fire_due_wakes", "_selected_action": ["t1"]}, follow=True
        )
    assert b"Fired 1 due wake(s)." in response.content
    assert OutboundMessage.objects.filter(session_id="t1", text="Hora do lembrete!").exists()


@pytest.mark.parametrize("model", ["sessionevent", "outboundmessage", "wake"])
def test_the_log_outbox_and_wake_lists_render(staff_client: Client, model: str) -> None:
    assert staff_client.get(f"/admin/warlock_sessions/{model}/").status_code == 200


@pytest.mark.parametrize("bad", ["a\x00b", "\ud800"])
def test_ids_and_searches_no_database_can_look_up_are_not_found_without_asking(
    bad: str, django_assert_num_queries: Any
) -> None:
    """PostgreSQL refuses a NUL in a query (a 500 on the admin's change page or search), so
    such an id is not found without asking any database."""
    from django.contrib import admin as django_admin
    from django.test import RequestFactory

    from warlock_sessions.models import Session

    model_admin = django_admin.site._registry[Session]
    request = RequestFactory().get("/")
    with django_assert_num_queries(0):
        assert model_admin.get_object(request, bad) is None
        rows, _ = model_admin.get_search_results(request, Session.objects.all(), bad)
        assert list(rows) == []


@pytest.mark.parametrize(
    "query", ["?agent__exact=a%00b", "?run_status=%00", "?flow=a%00", "?q=x%00"]
)
def test_list_filters_no_database_can_compare_with_are_a_400(
    staff_client: Client, query: str
) -> None:
    for model in ("session", "sessionevent", "outboundmessage", "wake"):
        response = staff_client.get(f"/admin/warlock_sessions/{model}/{query}")
        assert response.status_code == 400, (model, query)


def test_an_action_on_a_selection_no_database_can_look_up_is_a_400(staff_client: Client) -> None:
    for action in ("export_json", "fire_due_wakes", "delete_selected"):
        response = staff_client.post(
            "/admin/warlock_sessions/session/",
            {"action": action, "_selected_action": ["a\x00b"]},
        )
        assert response.status_code == 400, action


def test_a_conversation_is_a_transcript_with_tool_calls_folded_and_forks_linked(
    staff_client: Client,
) -> None:
    from tests.conversations.agents import assistant
    from warlock_sessions.conversations import DjangoConversationStore, session

    chat = session("talk/1", DjangoConversationStore(), assistant)
    chat.send("calculate 3*3")
    chat.send("<b>bold?</b>")
    chat.fork("talk-alt", 4)
    page = staff_client.get("/admin/warlock_sessions/conversation/talk_2F1/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "Transcript (6 messages)" in html
    assert "<summary>tool call calculate (call_1)</summary>" in html
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html and "<b>bold?</b>" not in html
    assert 'href="/admin/warlock_sessions/conversation/talk-alt/change/"' in html
    fork = staff_client.get("/admin/warlock_sessions/conversation/talk-alt/change/")
    assert "Forked from" in fork.content.decode() and "after 4 messages" in fork.content.decode()
    listing = staff_client.get("/admin/warlock_sessions/conversation/?q=talk")
    assert listing.status_code == 200 and "talk-alt" in listing.content.decode()
    assert staff_client.get("/admin/warlock_sessions/conversation/nul%00/change/").status_code in (
        302,
        404,
    )


def seed_searchable_sessions() -> None:
    """A visitor with an accented name, and one whose data was cleared but who said an order
    number: what staff search for (here and in the browser test)."""
    from warlock_sessions.models import SessionEvent

    SessionFactory(id="chat-7f3a91", data={"name": "João Pereira"})
    SessionFactory(id="chat-cleared", data={})
    SessionEvent.objects.create(
        session_id="chat-cleared",
        seq=1,
        type="message",
        payload={"role": "user", "text": "my order number is XK-2291"},
    )


def test_search_ignores_accents_matches_id_starts_and_finds_what_was_said(
    staff_client: Client,
) -> None:
    """ "Joao" did not find "João", a visitor whose data was cleared could not be found, and
    an id had to be whole."""
    seed_searchable_sessions()
    SessionFactory(id="other", data={"name": "Bob"})
    for query, found in (
        ("Joao", "chat-7f3a91"),
        ("joão pereira", "chat-7f3a91"),
        ("chat-7f3", "chat-7f3a91"),
        ("XK-2291", "chat-cleared"),
    ):
        page = staff_client.get(CHANGELIST, {"q": query}).content.decode()
        assert f"{found}</a>" in page and "other</a>" not in page, query


@pytest.mark.parametrize(
    ("language", "shown"),
    [
        ("en", "See you on Tuesday, December 8, 2026 at 15:00."),
        ("pt", "See you on terça-feira, 8 de dezembro de 2026 at 15:00."),
        (None, "See you on Tuesday, December 8, 2026 at 15:00."),
    ],
)
def test_the_transcript_shows_dates_as_the_customer_read_them(
    staff_client: Client, language: str | None, shown: str
) -> None:
    """The chat page writes 2026-12-08 in the conversation's language; so does the admin."""
    from warlock_sessions.testing import session_blob
    from warlock_sessions.testing.factories import SessionEventFactory

    metadata = {"language": language} if language else {}
    SessionFactory(id="dated", session=session_blob("dated", metadata=metadata))
    said = {"key": "k", "kind": "verbatim", "afterMs": 0}
    SessionEventFactory(
        session_id="dated", seq=1, type="message",
        payload={**said, "text": "See you on 2026-12-08 at 15:00."},
    )  # fmt: skip
    SessionEventFactory(
        session_id="dated", seq=2, type="message",
        payload={"role": "user", "text": "on 2026-12-08?", "id": "m1"},
    )  # fmt: skip
    page = staff_client.get(f"{CHANGELIST}dated/change/").content.decode()
    assert shown in page
    assert "on 2026-12-08?" in page  # what the customer wrote stays as written


def test_fire_due_wakes_now_fires_at_most_its_cap_across_buckets(
    staff_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warlock_sessions.admin import sessions
    from warlock_sessions.models import Wake, bucket_of
    from warlock_sessions.testing.factories import WakeFactory

    monkeypatch.setattr(sessions, "FIRED_AT_ONCE", 3)
    ids = [f"cap-{n}" for n in range(6)]
    assert len({bucket_of(id) for id in ids}) > 1  # in several buckets
    for id in ids:
        SessionFactory(id=id)
        WakeFactory(session_id=id, due_at="2000-01-01T00:00:00Z")
    response = staff_client.post(
        CHANGELIST, {"action": "fire_due_wakes", "_selected_action": ids}, follow=True
    )
    assert b"Fired 3 due wake(s)." in response.content
    untouched = Wake.objects.filter(status="pending", attempts=0, lease_until=None)
    assert untouched.count() == 3  # the other three, left to the worker
