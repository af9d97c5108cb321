"""The API as a stranger and an attacker would use it: the trust model, inputs that used to
answer a 500, PUT's envelope and ids, forgetting, CSRF, anonymous visitors and provider errors.
Every request here goes through Django's real middleware (session, CSRF, auth)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session as DjangoSession
from django.test import Client, override_settings

from warlock_sessions.engine import Agent, ProviderError
from warlock_sessions.host import Host
from warlock_sessions.models import AppliedInput, OutboundMessage, SessionEvent, SessionOwner, Wake
from warlock_sessions.providers import RuleModel
from warlock_sessions.stores import DjangoStore

pytestmark = pytest.mark.django_db


def visitor() -> Client:
    """An anonymous visitor with a session cookie (and, as from the chat page, CSRF checks)."""
    client = Client(enforce_csrf_checks=True)
    client.get("/")  # any page that sets the CSRF cookie
    session = client.session
    session["seen"] = True
    session.save()
    client.cookies["sessionid"] = session.session_key
    return client


def post(client: Client, path: str, body: Any, **headers: str) -> Any:
    token = client.cookies.get("csrftoken")
    if token is not None:
        headers.setdefault("HTTP_X_CSRFTOKEN", token.value)
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(path, raw, content_type="application/json", **headers)


def staff() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root"))
    return client


FORBIDDEN_TO_END_USERS = [
    ({"message": {"text": "hi", "at": "1970-01-01T00:00:00Z"}}, "message.at"),
    ({"message": {"text": "hi"}, "context": {"vip": True}}, "context"),
    ({"message": {"text": "hi"}, "agent": "booking"}, "agent"),
    ({"event": {"name": "discount", "key": "d1"}}, "event.name"),
    ({"start": {"flow": "booking", "key": "k1"}}, "start.flow"),
    ({"wake": "silence:reminder:x:1"}, "wake"),
    ({"handover": {"action": "reply", "key": "r1", "by": "Boss", "text": "hi"}}, "handover"),
    ({"handover": {"action": "release", "key": "h1"}}, "handover"),
]


@pytest.mark.parametrize(("body", "field"), FORBIDDEN_TO_END_USERS)
def test_an_end_user_may_send_only_messages_and_public_inputs(body: Any, field: str) -> None:
    client = visitor()
    response = post(client, "/api/sessions/mine/turn/", body)
    assert response.status_code == 403, response.content
    assert (response.json()["code"], response.json()["field"]) == ("input-not-allowed", field)
    assert not SessionEvent.objects.exists()  # refused before anything ran


@pytest.mark.parametrize(("body", "field"), FORBIDDEN_TO_END_USERS[:4])
def test_staff_send_what_server_code_sends(body: Any, field: str) -> None:
    response = post(staff(), "/api/sessions/theirs/turn/", body)
    assert response.status_code == 200, response.content


def open_agent() -> Agent:
    from example_project.demo.agents import FIELDS, FLOWS

    return Agent(
        FLOWS,
        fields=FIELDS,
        model=RuleModel(),
        name="open",
        public_events=["discount"],
        public_starts=["booking"],
    )


def test_an_agent_may_make_an_event_and_a_start_public() -> None:
    with override_settings(WARLOCK_SESSIONS={"AGENTS": {"open": f"{__name__}.open_agent"}}):
        client = visitor()
        event = post(client, "/api/sessions/pub/turn/", {"event": {"name": "discount", "key": "1"}})
        assert event.status_code == 200, event.content
        start = post(client, "/api/sessions/pub/turn/", {"start": {"flow": "booking", "key": "2"}})
        assert start.status_code == 200, start.content
        with_input = post(
            client,
            "/api/sessions/pub/turn/",
            {"start": {"flow": "booking", "key": "3", "input": {}}},
        )
        assert with_input.json()["code"] == "input-not-allowed"


DEEP = "[" * 5000 + "]" * 5000
HOSTILE_TURNS = [
    '{"start": {"flow": "booking", "key": "k", "input": 1e999}}',
    '{"event": {"name": "discount", "key": "k", "payload": ' + DEEP + "}}",
    '{"message": {"text": "hi", "id": "\\ud800"}}',
    '{"message": {"text": "hi", "id": "a\\u0000b"}}',
    '{"message": {"text": "hi", "at": "junk"}}',
    '{"message": {"text": "hi", "at": "2026-13-01T00:00:00Z"}}',
    '{"message": {"text": "hi", "at": "2026-01-01T00:00:00+99:00"}}',
    '{"event": {"name": "discount", "key": "\\udfff"}}',
    '{"start": {"flow": "\\ud800", "key": "k"}}',
    '{"wake": "\\ud800"}',
    '{"message": {"text": NaN}}',
    '{"event": {"name": "discount", "key": "k", "payload": {"t": "a\\u0000"}}}',
]


@pytest.mark.parametrize("body", HOSTILE_TURNS, ids=range(len(HOSTILE_TURNS)))
def test_hostile_turns_get_a_4xx_with_a_code_and_save_nothing(body: str) -> None:
    response = post(staff(), "/api/sessions/h1/turn/", body)
    assert 400 <= response.status_code < 500, response.content[:300]
    assert response.json()["code"] in ("invalid-input", "invalid-json")
    assert DjangoStore().load("h1") is None


@pytest.mark.parametrize(
    "path",
    [
        "/api/sessions/" + "x" * 300 + "/",
        "/api/sessions/a%00b/",
        "/api/sessions/%ED%A0%80/",
        "/api/sessions/s1/events/?after_seq=%C2%B2",
        "/api/sessions/s1/events/?after_seq=99999999999999999999999",
        "/api/sessions/?updated_after=2026-02-30T00:00:00Z",
        "/api/sessions/?agent=a%00b",
        "/api/sessions/?flow=%00",
    ],
)
def test_hostile_reads_get_a_4xx(path: str) -> None:
    response = staff().get(path)
    assert 400 <= response.status_code < 500, response.content[:300]
    assert "code" in response.json()


def test_a_huge_if_match_is_a_400() -> None:
    response = staff().put(
        "/api/sessions/s1/",
        "{}",
        content_type="application/json",
        HTTP_IF_MATCH='"' + "9" * 5000 + '"',
    )
    assert response.status_code == 400


def test_events_of_an_unknown_session_are_a_404() -> None:
    assert staff().get("/api/sessions/nobody/events/").status_code == 404


def test_put_takes_what_get_returns_and_refuses_another_id() -> None:
    client = staff()
    post(client, "/api/sessions/env-1/turn/", {"message": {"text": "book", "id": "m1"}})
    got = client.get("/api/sessions/env-1/").json()
    got["session"]["data"] = {"note": "edited"}
    put = client.put(
        "/api/sessions/env-1/",
        json.dumps(got),
        content_type="application/json",
        HTTP_IF_MATCH='"1"',
    )
    assert put.status_code == 200 and put.json()["session"]["data"] == {"note": "edited"}
    for body in ({**got, "id": "other"}, {**got["session"], "id": "other"}):
        refused = client.put(
            "/api/sessions/env-1/",
            json.dumps(body),
            content_type="application/json",
            HTTP_IF_MATCH='"2"',
        )
        assert (refused.status_code, refused.json()["code"]) == (400, "id-mismatch")
    assert DjangoStore().load("other") is None


def test_a_deleted_session_is_forgotten_whole_and_its_id_starts_clean() -> None:
    ana = visitor()
    post(ana, "/api/sessions/gone/turn/", {"message": {"text": "book", "id": "m1"}})
    assert staff().delete("/api/sessions/gone/").status_code == 204
    for model in (SessionEvent, OutboundMessage, Wake, AppliedInput, SessionOwner):
        assert not model.objects.filter(session_id="gone").exists(), model
    bob = visitor()
    again = post(bob, "/api/sessions/gone/turn/", {"message": {"text": "book", "id": "m1"}})
    assert again.status_code == 200 and again.json()["version"] == 1
    events = bob.get("/api/sessions/gone/events/").json()["events"]
    assert events[0]["seq"] == 1
    assert post(ana, "/api/sessions/gone/turn/", {"message": {"text": "x"}}).status_code == 404


def test_deleting_the_row_in_the_admin_forgets_the_session_too() -> None:
    Host("booking").handle("adm", {"message": {"text": "book", "id": "m1"}})
    client = Client()
    client.force_login(User.objects.create_superuser("boss"))
    response = client.post(
        "/admin/warlock_sessions/session/adm/delete/", {"post": "yes"}, follow=True
    )
    assert response.status_code == 200
    assert DjangoStore().load("adm") is None
    for model in (SessionEvent, OutboundMessage, Wake, AppliedInput):
        assert not model.objects.filter(session_id="adm").exists(), model
    page = client.get("/admin/warlock_sessions/sessionevent/")
    assert b"delete_selected" not in page.content  # no partial deletes offered


def test_basic_auth_needs_no_csrf_token_and_a_cookie_does() -> None:
    User.objects.create_superuser("admin", password="admin")
    import base64

    basic = "Basic " + base64.b64encode(b"admin:admin").decode()
    client = Client(enforce_csrf_checks=True)
    ok = post(
        client, "/api/sessions/curl-1/turn/", {"message": {"text": "hi"}}, HTTP_AUTHORIZATION=basic
    )
    assert ok.status_code == 200, ok.content
    cookie = visitor()
    cookie.cookies.pop("csrftoken")
    refused = post(cookie, "/api/sessions/curl-2/turn/", {"message": {"text": "hi"}})
    assert refused.status_code == 403


def test_anonymous_reads_create_no_django_session() -> None:
    client = Client()
    for path in ("/api/sessions/", "/api/sessions/x/", "/api/sessions/x/events/"):
        client.get(path)
    assert not DjangoSession.objects.exists()


def test_a_visitor_who_logs_in_mid_chat_keeps_the_conversation() -> None:
    client = visitor()
    post(client, "/api/sessions/mid/turn/", {"message": {"text": "book", "id": "m1"}})
    account = User.objects.create_user("ana", password="pw")
    client.force_login(account)
    assert client.get("/api/sessions/mid/").status_code == 200
    assert SessionOwner.objects.get(session_id="mid").user == account
    assert Client().get("/api/sessions/mid/").status_code == 404


class FailingModel(RuleModel):
    def understand(self, request: Any) -> Any:
        raise ProviderError("auth-failed", False, detail="Incorrect API key provided: sk-secret")


def failing_agent() -> Agent:
    from example_project.demo.agents import FIELDS, FLOWS

    return Agent(FLOWS, fields=FIELDS, model=FailingModel(), name="failing")


def test_provider_errors_reach_clients_as_a_code_and_a_generic_sentence() -> None:
    agents = {"AGENTS": {"failing": f"{__name__}.failing_agent"}}
    with override_settings(WARLOCK_SESSIONS=agents):
        response = post(visitor(), "/api/sessions/p1/turn/", {"message": {"text": "hi"}})
    assert response.status_code == 503 and response.json()["code"] == "auth-failed"
    assert "sk-secret" not in response.content.decode()


@pytest.mark.parametrize(
    "body",
    [
        {"message": {"text": "a\u0000"}},
        {"event": {"name": "discount", "key": "k"}},
        {"message": {"text": "hi"}, "context": {"x": 1}},
    ],
)
def test_a_refused_first_input_claims_nothing(body: Any) -> None:
    mallory = visitor()
    assert 400 <= post(mallory, "/api/sessions/acct-42/turn/", body).status_code < 500
    assert not SessionOwner.objects.filter(session_id="acct-42").exists()
    Host("booking").handle("acct-42", {"message": {"text": "book", "id": "s1"}})
    assert mallory.get("/api/sessions/acct-42/events/").status_code == 404


def test_a_first_turn_that_fails_after_the_claim_releases_it() -> None:
    agents = {"AGENTS": {"failing": f"{__name__}.failing_agent"}}
    with override_settings(WARLOCK_SESSIONS=agents):
        assert (
            post(visitor(), "/api/sessions/p2/turn/", {"message": {"text": "hi"}}).status_code
            == 503
        )
    assert not SessionOwner.objects.filter(session_id="p2").exists()


def test_a_malformed_content_length_is_a_400() -> None:
    response = staff().post(
        "/api/sessions/x/turn/", "{}", content_type="application/json", CONTENT_LENGTH="abc"
    )
    assert response.status_code == 400


def test_a_session_its_store_dropped_leaves_nothing_to_whoever_claims_the_id_next() -> None:
    from django.db import connection

    Host("booking").handle("srv-9", {"message": {"text": "book", "id": "s1"}})
    with connection.cursor() as cursor:  # as a store's expiry: the copy goes, nothing else
        cursor.execute("DELETE FROM warlock_sessions_session WHERE id = %s", ["srv-9"])
    stranger = visitor()
    assert (
        post(stranger, "/api/sessions/srv-9/turn/", {"message": {"text": "hi"}}).status_code == 200
    )
    seqs = [e["seq"] for e in stranger.get("/api/sessions/srv-9/events/").json()["events"]]
    assert seqs[0] == 1 and SessionEvent.objects.filter(session_id="srv-9").count() == len(seqs)


def test_an_unknown_api_path_answers_json_and_a_bad_token_is_401() -> None:
    """An unknown path answered Django's HTML 404, and a bad token 403."""
    client = Client()
    for path in ("/api/nope/", "/api/sessions/x/nope/extra/", "/api/v2"):
        answer = client.get(path)
        assert answer.status_code == 404 and answer["Content-Type"] == "application/json", path
        assert answer.json()["code"] == "not-found"
    import base64

    wrong = base64.b64encode(b"mallory:wrong").decode()
    bad = client.get("/api/snapshots/", HTTP_AUTHORIZATION=f"Basic {wrong}")
    assert bad.status_code == 401 and bad["WWW-Authenticate"].startswith("Basic"), bad.content
    assert bad.json()["code"] == "authentication-failed"
    none = client.get("/api/snapshots/")
    assert (none.status_code, none.json()["code"]) == (401, "not-authenticated")


def test_swagger_ui_and_redoc_are_served_with_their_scripts_from_the_package() -> None:
    client = Client()
    for path, script in (
        ("/api/schema/swagger/", "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"),
        ("/api/schema/redoc/", "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
    ):
        page = client.get(path)
        assert page.status_code == 200, path
        assert script in page.content.decode() and "cdn" not in page.content.decode(), path


def test_the_api_root_lists_every_endpoint() -> None:
    """It listed sessions and snapshots only."""
    listed = Client().get("/api/", HTTP_ACCEPT="application/json").json()
    assert set(listed) == {"sessions", "snapshots", "conversations", "schema", "swagger", "redoc"}
    assert listed["conversations"].endswith("/api/conversations/{id}/")


def test_every_operation_has_a_summary_and_its_own_description() -> None:
    """Their descriptions were the view class's docstring, or missing."""
    document = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    seen: dict[str, str] = {}
    for path, operations in document["paths"].items():
        if path == "/api/schema/":
            continue
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            assert operation.get("summary"), where
            description = operation.get("description", "")
            assert description and "``" not in description, where
            assert description not in seen, (where, seen.get(description))
            seen[description] = where
