"""The sessions HTTP API: every endpoint, every error code, ETags, and owner isolation."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import override_settings
from rest_framework.test import APIClient

from warlock_sessions.models import Session, SessionEvent, SessionOwner
from warlock_sessions.stores import DjangoStore
from warlock_sessions.testing import run_blob, session_blob

from .conftest import SETTINGS

pytestmark = pytest.mark.django_db


def user(name: str, *, staff: bool = False, perms: tuple[str, ...] = ()) -> APIClient:
    account = User.objects.create_user(name, password="pw", is_staff=staff, is_superuser=staff)
    for codename in perms:
        account.user_permissions.add(
            Permission.objects.get(codename=codename, content_type__app_label="warlock_sessions")
        )
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=account.pk))
    return client


def say(client: APIClient, session_id: str, text: str, message_id: str) -> Any:
    return client.post(
        f"/api/sessions/{session_id}/turn/",
        {"message": {"text": text, "id": message_id}},
        format="json",
    )


def test_a_turn_creates_the_session_for_its_sender_and_answers() -> None:
    ana = user("ana")
    response = say(ana, "chat-1", "I'd like to book", "m1")
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == 1 and body["changed"] is True
    assert [m["text"] for m in body["messages"]] == [
        "Great, let's get you booked. What's your name?"
    ]
    assert SessionOwner.objects.get(session_id="chat-1").user.username == "ana"

    again = say(ana, "chat-1", "I'd like to book", "m1")
    assert (
        again.status_code == 200
        and again.json()["changed"] is False
        and again.json()["code"] == "duplicate-input"
    )


def test_retrieve_gives_the_blob_and_its_etag() -> None:
    ana = user("ana")
    say(ana, "chat-1", "book", "m1")
    response = ana.get("/api/sessions/chat-1/")
    assert response.status_code == 200 and response["ETag"] == '"1"'
    assert response.json()["session"]["runs"][0]["flowId"] == "booking"

    for current in ('"1"', 'W/"1"', '"0", "1"', "*"):
        unchanged = ana.get("/api/sessions/chat-1/", HTTP_IF_NONE_MATCH=current)
        assert unchanged.status_code == 304 and not unchanged.content, current
        assert unchanged["ETag"] == '"1"'
    say(ana, "chat-1", "Ana", "m2")
    moved = ana.get("/api/sessions/chat-1/", HTTP_IF_NONE_MATCH='"1"')
    assert moved.status_code == 200 and moved["ETag"] == '"2"'
    stranger = user("mallory").get("/api/sessions/chat-1/", HTTP_IF_NONE_MATCH='"2"')
    assert stranger.status_code == 404  # the policy first: a 304 would tell it exists


def test_the_openapi_document_has_a_title_and_version() -> None:
    from warlock_sessions import __version__

    info = user("ana").get("/api/schema/?format=json").json()["info"]
    assert info["title"] == "warlock_sessions API" and info["version"] == __version__
    assert "stable code" in info["description"]


def test_events_replay_after_a_seq() -> None:
    ana = user("ana")
    say(ana, "chat-1", "book", "m1")
    say(ana, "chat-1", "Ana", "m2")
    everything = ana.get("/api/sessions/chat-1/events/").json()
    seqs = [event["seq"] for event in everything["events"]]
    assert seqs == list(range(1, len(seqs) + 1)) and everything["last_seq"] == seqs[-1]
    messages = [e for e in everything["events"] if e["type"] == "message"]
    assert [m["text"] for m in messages][-1] == "Thanks, Ana! What's your e-mail address?"
    later = ana.get(f"/api/sessions/chat-1/events/?after_seq={seqs[-3]}").json()["events"]
    assert [e["seq"] for e in later] == seqs[-2:]
    assert ana.get("/api/sessions/chat-1/events/?after_seq=x").json()["code"] == "invalid-input"


def test_other_users_and_visitors_get_404_and_staff_see_everything() -> None:
    say(user("ana"), "chat-1", "book", "m1")
    bob = user("bob")
    for response in (
        bob.get("/api/sessions/chat-1/"),
        bob.get("/api/sessions/chat-1/events/"),
        say(bob, "chat-1", "hijack", "x1"),
    ):
        assert response.status_code == 404 and response.json()["code"] == "session-not-found"
    assert APIClient().get("/api/sessions/chat-1/").status_code == 404
    assert bob.get("/api/sessions/").json()["results"] == []
    staff = user("root", staff=True)
    assert staff.get("/api/sessions/chat-1/").status_code == 200
    assert [row["id"] for row in staff.get("/api/sessions/").json()["results"]] == ["chat-1"]


def test_an_anonymous_visitor_owns_their_session_through_the_django_session() -> None:
    visitor = APIClient()
    assert say(visitor, "anon-1", "book", "m1").status_code == 200
    assert visitor.get("/api/sessions/anon-1/").status_code == 200
    assert [row["id"] for row in visitor.get("/api/sessions/").json()["results"]] == ["anon-1"]
    assert APIClient().get("/api/sessions/anon-1/").status_code == 404


def test_a_visitor_identity_whose_save_failed_is_saved_by_whoever_asks_next() -> None:
    """The identity is kept in the Django session only once saved: a save that failed (here
    the session's row went away meanwhile) leaves none in memory to be taken as stored."""
    from django.contrib.sessions.backends.base import UpdateError
    from django.contrib.sessions.backends.db import SessionStore

    from warlock_sessions.permissions import VISITOR_KEY, Requester, anonymous_key

    session = SessionStore()
    session["visited"] = True
    session.create()
    key = session.session_key
    session.get("visited")  # loaded, as a socket's copy is
    SessionStore(key).delete()
    with pytest.raises(UpdateError):
        anonymous_key(Requester(user=None, session=session), create=True)
    assert VISITOR_KEY not in session


def test_anonymous_writes_need_csrf() -> None:
    strict = APIClient(enforce_csrf_checks=True)
    response = strict.post("/api/sessions/s/turn/", {"message": {"text": "hi"}}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "permission-denied"
    assert "CSRF" in response.json()["detail"]


def test_owners_cannot_write_raw_blobs_or_delete() -> None:
    ana = user("ana")
    say(ana, "chat-1", "book", "m1")
    blob = ana.get("/api/sessions/chat-1/").json()["session"]
    blob["claims"] = {}
    put = ana.put("/api/sessions/chat-1/", blob, format="json", HTTP_IF_MATCH='"1"')
    assert put.status_code == 403 and put.json()["code"] == "permission-denied"
    assert ana.delete("/api/sessions/chat-1/").status_code == 403


def test_put_is_the_raw_store_with_if_match_and_if_none_match() -> None:
    staff = user("root", staff=True)
    blob = session_blob("raw-1", runs=[run_blob("booking", session_id="raw-1")])
    created = staff.put("/api/sessions/raw-1/", blob, format="json", HTTP_IF_NONE_MATCH="*")
    assert created.status_code == 201 and created["ETag"] == '"1"'
    again = staff.put("/api/sessions/raw-1/", blob, format="json", HTTP_IF_NONE_MATCH="*")
    assert again.status_code == 412
    assert again.json() | {"detail": ""} == {
        "code": "session-conflict",
        "detail": "",
        "expected_version": 0,
        "actual_version": 1,
    }
    updated = staff.put(
        "/api/sessions/raw-1/", {**blob, "data": {"x": 1}}, format="json", HTTP_IF_MATCH='"1"'
    )
    assert updated.status_code == 200 and updated.json()["version"] == 2
    stale = staff.put("/api/sessions/raw-1/", blob, format="json", HTTP_IF_MATCH='"1"')
    assert (stale.status_code, stale.json()["actual_version"]) == (412, 2)
    assert DjangoStore().load("raw-1")["data"] == {"x": 1}


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        ({"v": 3}, {"HTTP_IF_NONE_MATCH": "*"}, "invalid-session"),
        ([1, 2], {"HTTP_IF_NONE_MATCH": "*"}, "invalid-session"),
        (None, {}, "invalid-input"),
        (None, {"HTTP_IF_MATCH": '"1"', "HTTP_IF_NONE_MATCH": "*"}, "invalid-input"),
        (None, {"HTTP_IF_MATCH": "one"}, "invalid-input"),
    ],
)
def test_bad_puts_get_a_400_with_a_code(body: Any, headers: dict[str, str], code: str) -> None:
    staff = user("root", staff=True)
    response = staff.put(
        "/api/sessions/raw-1/",
        session_blob("raw-1") if body is None else body,
        format="json",
        **headers,
    )
    assert response.status_code == 400 and response.json()["code"] == code


def test_model_permissions_allow_writing_and_deleting() -> None:
    editor = user("ed", perms=("change_session", "delete_session", "view_session"))
    assert (
        editor.put(
            "/api/sessions/e1/", session_blob("e1"), format="json", HTTP_IF_NONE_MATCH="*"
        ).status_code
        == 201
    )
    say(editor, "e1", "book", "m1")
    assert SessionEvent.objects.filter(session_id="e1").exists()
    assert editor.delete("/api/sessions/e1/").status_code == 204
    assert (
        DjangoStore().load("e1") is None
        and not SessionEvent.objects.filter(session_id="e1").exists()
    )
    assert editor.delete("/api/sessions/e1/").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "input"),
        ({"message": {"text": "a"}, "wake": "k"}, "input"),
        ({"message": "hi"}, "message"),
        ({"message": {"id": "m1"}}, "message.text"),
        ({"message": {"text": "a", "id": 7}}, "message.id"),
        ({"message": {"text": "a", "hop": 1}}, "message.hop"),
        ({"event": {"name": "paid"}}, "event.key"),
        ({"start": {"flow": "booking", "key": ""}}, "start.key"),
        ({"wake": 5}, "wake"),
        ({"message": {"text": "a"}, "agent": 3}, "agent"),
        ({"message": {"text": "a"}, "extra": 1}, "extra"),
        ({"message": {"text": "a"}, "agent": "nobody"}, "agent"),
    ],
)
def test_bad_turns_get_invalid_input_naming_the_field(body: dict[str, Any], field: str) -> None:
    response = user("root", staff=True).post("/api/sessions/t1/turn/", body, format="json")
    assert response.status_code == 400
    assert (response.json()["code"], response.json()["field"]) == ("invalid-input", field)


def test_malformed_json_and_oversized_bodies() -> None:
    ana = user("ana")
    broken = ana.post("/api/sessions/t1/turn/", "{not json", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["code"] == "invalid-json"
    with override_settings(WARLOCK_SESSIONS={**SETTINGS, "MAX_BODY_BYTES": 100}):
        big = ana.post("/api/sessions/t1/turn/", {"message": {"text": "x" * 200}}, format="json")
    assert big.status_code == 413 and big.json()["code"] == "payload-too-large"


def test_unknown_session_and_filters() -> None:
    staff = user("root", staff=True)
    assert staff.get("/api/sessions/nope/").json()["code"] == "session-not-found"
    say(staff, "f1", "book", "m1")
    say(staff, "f2", "hello", "m1")

    def ids(query: str) -> list[str]:
        return [row["id"] for row in staff.get(f"/api/sessions/?{query}").json()["results"]]

    assert ids("flow=booking") == ["f1"]
    assert ids("run_status=asking") == ["f1"]
    assert ids("flow=booking&run_status=waiting") == []
    assert sorted(ids("updated_after=2000-01-01T00:00:00Z")) == ["f1", "f2"]
    assert staff.get("/api/sessions/?updated_after=yesterday").json()["field"] == "updated_after"


def test_the_list_counts_up_to_a_cap_and_says_when_it_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from warlock_sessions.api import sessions as views
    from warlock_sessions.testing.factories import SessionFactory

    staff = user("root", staff=True)
    SessionFactory.create_batch(5)
    monkeypatch.setattr(views, "COUNT_CAP", 3)
    page = staff.get("/api/sessions/?page_size=2").json()
    assert (page["count"], page["count_capped"], len(page["results"])) == (3, True, 2)
    assert page["next"] is not None
    # Every page is served, past the cap too, and the last says so.
    seen = [row["id"] for row in page["results"]]
    while page["next"]:
        page = staff.get(page["next"]).json()
        seen += [row["id"] for row in page["results"]]
    assert len(seen) == len(set(seen)) == 5
    assert staff.get("/api/sessions/?page_size=2&page=4").status_code == 404
    monkeypatch.setattr(views, "COUNT_CAP", 10)
    page = staff.get("/api/sessions/?page_size=2").json()
    assert (page["count"], page["count_capped"]) == (5, False)


@pytest.mark.parametrize("page", ["99999999999999999999999", "0", "-3", "1e3", "two"])
def test_a_page_that_cannot_be_is_a_404(page: str) -> None:
    response = user("root", staff=True).get("/api/sessions/", {"page": page})
    assert response.status_code == 404


def test_the_openapi_schema_documents_every_endpoint_and_its_errors(tmp_path: Any) -> None:
    import yaml
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--file", str(target))
    paths = yaml.safe_load(target.read_text())["paths"]
    turn = paths["/api/sessions/{session_id}/turn/"]["post"]
    assert {"200", "400", "404", "409", "413", "503"} <= set(turn["responses"])
    put = paths["/api/sessions/{session_id}/"]["put"]
    assert {"200", "201", "412"} <= set(put["responses"])
    assert {p["name"] for p in put["parameters"]} >= {"If-Match", "If-None-Match"}
    assert "after_seq" in {
        p["name"] for p in paths["/api/sessions/{session_id}/events/"]["get"]["parameters"]
    }
    served = user("root", staff=True).get(
        "/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert served.status_code == 200 and set(served.json()["paths"]) == set(paths)


def test_staff_hand_a_chat_over_answer_it_and_hand_it_back_over_http() -> None:
    ana = user("ana")
    say(ana, "chat-1", "I'd like to book", "m1")
    root = User.objects.create_superuser("root", first_name="Rita", last_name="Lima")
    staff = APIClient()
    staff.force_authenticate(root)

    def handover(**value: Any) -> Any:
        body = {"handover": {"key": f"k{value['action']}", **value}}
        return staff.post("/api/sessions/chat-1/turn/", body, format="json")

    reply = handover(action="reply", text="Hi, Rita here.")
    assert reply.status_code == 200, reply.content
    assert reply.json()["messages"][0]["by"] == "Rita Lima"  # named from the account
    row = Session.objects.get(id="chat-1")
    assert (row.handover, row.handover_since is not None) == ("taken", True)
    assert say(ana, "chat-1", "Ana Souza", "m2").json()["messages"] == []
    events = ana.get("/api/sessions/chat-1/events/").json()["events"]
    handovers = [event for event in events if event["type"] == "handover"]
    assert [(event["status"], event.get("by")) for event in handovers] == [
        ("waiting", None),  # her reply handed it over, then took it
        ("taken", "Rita Lima"),
    ]
    assert all("user" not in event and "reason" not in event for event in handovers)  # staff's
    logged = SessionEvent.objects.filter(session_id="chat-1", type="handover").order_by("seq")
    assert [event.payload["user"] for event in logged] == [str(root.pk)] * 2  # who did it
    staff_said = [event for event in events if event.get("role") == "staff"]
    assert [(event["by"], event["text"]) for event in staff_said] == [
        ("Rita Lima", "Hi, Rita here.")
    ]
    back = handover(action="release", by="The team")  # a name the body gives is kept
    assert [m["text"] for m in back.json()["messages"]] == ["What's your name?"]
    assert Session.objects.get(id="chat-1").handover == ""
    assert handover(action="release").json()["code"] == "not-handed-over"
    bob = user("bob")
    for session_id in ("chat-1", "nobody-uses-this"):  # the same answer for any id
        refused = bob.post(
            f"/api/sessions/{session_id}/turn/",
            {"handover": {"action": "release", "key": "x"}},
            format="json",
        )
        assert (refused.status_code, refused.json()["code"]) == (403, "input-not-allowed")


def test_a_turn_answers_in_the_api_s_one_spelling_and_event_shape() -> None:
    ana = user("ana")
    body = say(ana, "chat-1", "I'd like to book", "m1").json()
    [message] = body["messages"]
    assert message["after_ms"] == message["afterMs"] == 0  # afterMs until 0.4
    # What a chat shows, not which run and step of the engine said it.
    assert set(message) == {"text", "kind", "key", "after_ms", "afterMs"}
    [said] = [event for event in body["events"] if event["type"] == "message" and "key" in event]
    assert "runId" not in said["payload"] and "stepId" not in said["payload"]
    logged = ana.get("/api/sessions/chat-1/events/").json()["events"]
    assert [
        {k: v for k, v in event.items() if k != "payload"} for event in body["events"]
    ] == logged
    assert all("payload" in event for event in body["events"])  # until 0.4


def test_a_staff_turn_that_makes_nothing_leaves_the_id_unused() -> None:
    staff = user("root", staff=True)
    for body in ({"handover": {"action": "release", "key": "x"}}, {"wake": "some-timer"}):
        response = staff.post("/api/sessions/fresh/turn/", body, format="json")
        assert (response.status_code, response.json()["code"]) == (200, "no-session")
    assert not SessionOwner.objects.filter(session_id="fresh").exists()
    assert say(user("ana"), "fresh", "I'd like to book", "m1").status_code == 200  # hers to start


@pytest.mark.parametrize(
    "handover",
    [{"action": "take", "key": "k"}, {"action": "grab"}, "release", {"action": "reply", "text": 1}],
)
def test_an_end_user_s_handover_is_not_allowed_however_it_is_written(handover: Any) -> None:
    response = user("ana").post("/api/sessions/chat-1/turn/", {"handover": handover}, format="json")
    assert (response.status_code, response.json()["code"]) == (403, "input-not-allowed")
