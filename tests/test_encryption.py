"""Encryption at rest (``ENCRYPTION_KEYS``): what people said is nowhere in plain text in any
table, on SQLite and PostgreSQL; the API, the admin and the stores read it back; a sealed
value copied to another row, changed, or sealed with a key no longer configured does not
open; a plain value is refused (fail closed) unless plaintext is accepted; and
``warlock_rotate_keys`` seals every row again with the current key while turns go on."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from django.test import Client, override_settings

from example_project.demo.agents import booking_agent
from tests.conversations.fakes import FakeAgent
from tests.host.conftest import ALIASES
from warlock_sessions.checkpoints import DjangoCheckpointStore
from warlock_sessions.checks import check_settings
from warlock_sessions.conversations import (
    DjangoConversationStore,
    RecordConversationStore,
    session,
)
from warlock_sessions.encryption import open_json, open_text, seal_json, seal_text
from warlock_sessions.errors import PlaintextRefusedError, SealedValueError
from warlock_sessions.host import Host
from warlock_sessions.models import (
    Conversation,
    ConversationMessage,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionOwner,
    Snapshot,
)
from warlock_sessions.rotation import TABLES, Progress, _rotate_row
from warlock_sessions.snapshots import DjangoSnapshotStore
from warlock_sessions.stores import DjangoStore


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


K1, K2 = new_key(), new_key()
SAID = ["book", "Ann Marlowe", "ann.marlowe@example.com", "tomorrow", "3pm", "yes"]
#: What people said that must be nowhere in plain text.
SECRETS = ["Marlowe", "ann.marlowe@example.com", "zanzibar sunrise"]


def keys(*pairs: tuple[str, str], **more: Any) -> Any:
    return override_settings(
        WARLOCK_SESSIONS={
            "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
            "ENCRYPTION_KEYS": dict(pairs),
            **more,
        }
    )


@pytest.fixture
def sealed() -> Iterator[None]:
    with keys(("k1", K1)):
        yield


def test_a_sealed_value_opens_only_where_it_was_sealed(sealed: None) -> None:
    stored = seal_text("zanzibar sunrise", "event", "s1", "3")
    assert stored.startswith("wse1.k1.") and "zanzibar" not in stored
    assert open_text(stored, "event", "s1", "3") == "zanzibar sunrise"
    for elsewhere in (("event", "s1", "4"), ("event", "s2", "3"), ("event", "s13")):
        with pytest.raises(SealedValueError, match="sealed for another place"):
            open_text(stored, *elsewhere)
    changed = stored[:-2] + ("A" if stored[-2] != "A" else "B") + stored[-1]
    with pytest.raises(SealedValueError):
        open_text(changed, "event", "s1", "3")
    assert open_json(seal_json({"t": [1e16, -0.0]}, "x"), "x") == {"t": [1e16, -0.0]}


def test_a_plain_value_is_refused_unless_plaintext_is_accepted(sealed: None) -> None:
    with pytest.raises(PlaintextRefusedError, match="is not sealed"):
        open_text("hello", "event", "s1", "1")
    with pytest.raises(PlaintextRefusedError):
        open_json({"text": "hello"}, "event", "s1", "1")
    with keys(("k1", K1), ENCRYPTION_ACCEPT_PLAINTEXT=True):
        assert open_text("hello", "event", "s1", "1") == "hello"


def test_a_key_no_longer_configured_and_no_keys_at_all_fail_closed(sealed: None) -> None:
    stored = seal_text("zanzibar sunrise", "x")
    with keys(("k2", K2)), pytest.raises(SealedValueError, match="'k1', which is not configured"):
        open_text(stored, "x")
    with override_settings(WARLOCK_SESSIONS={}), pytest.raises(SealedValueError, match="not set"):
        open_text(stored, "x")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("secret", "must be a dict"),
        ({"k1": "not base64!"}, "is not the base64 text of 16, 24 or 32 bytes"),
        ({"k1": base64.b64encode(b"short").decode()}, "16, 24 or 32 bytes"),
        ({"k.1": K1}, "ids are 1 to 32 letters"),
    ],
)
def test_wrong_keys_are_reported_by_the_checks(value: Any, why: str) -> None:
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": value}):
        found = [m for m in check_settings() if m.id == "warlock_sessions.E030"]
    assert found and why in found[0].msg


def chat_and_keep(alias: str) -> None:
    """A booking, a conversation with a fork, a snapshot and a checkpoint, all saying
    ``SECRETS``."""
    host = Host(booking_agent(), DjangoStore(using=alias))
    for index, text in enumerate(SAID):
        host.handle("chat", {"message": {"id": f"m{index}", "text": text}})
    rows = DjangoConversationStore(using=alias)
    talk = session("conv", rows, FakeAgent(reply="Noted: zanzibar sunrise"))
    talk.send("remember zanzibar sunrise, Marlowe")
    talk.fork("conv-fork")
    record = session(
        "conv-rec", RecordConversationStore(DjangoSnapshotStore(using=alias)), FakeAgent()
    )
    record.send("zanzibar sunrise")
    DjangoSnapshotStore(using=alias).save(
        {"runId": "run-1", "status": "running", "sessionId": "conv", "notes": SECRETS}
    )
    DjangoCheckpointStore(using=alias).save(
        {
            "orchestrator_name": "o",
            "session_id": "conv",
            "turn_index": 0,
            "state": {"said": "zanzibar sunrise"},
            "signature": "s",
        }
    )


def stored_cells(alias: str) -> list[str]:
    found = []
    with connections[alias].cursor() as cursor:
        for model in apps.get_app_config("warlock_sessions").get_models():
            table = connections[alias].ops.quote_name(model._meta.db_table)
            cursor.execute(f"SELECT * FROM {table}")
            found += [str(cell) for row in cursor.fetchall() for cell in row]
    return found


@pytest.mark.parametrize("alias", ALIASES)
def test_what_people_said_is_nowhere_in_plain_text_and_reads_back(alias: str, sealed: None) -> None:
    chat_and_keep(alias)
    cells = stored_cells(alias)
    assert [cell for cell in cells if any(secret in cell for secret in SECRETS)] == []
    assert any(cell.startswith("wse1.k1.") for cell in cells)

    session_blob = DjangoStore(using=alias).load("chat")
    assert session_blob is not None
    assert session_blob["data"]["email"] == "ann.marlowe@example.com"
    said = [
        e.opened_payload.get("text")
        for e in SessionEvent.objects.using(alias).filter(session_id="chat")
    ]
    assert "Ann Marlowe" in said
    outbox = OutboundMessage.objects.using(alias).filter(session_id="chat").last()
    assert outbox is not None and "Ann" in outbox.opened_text
    fork = DjangoConversationStore(using=alias).load("conv-fork")
    assert (
        fork is not None and fork["messages"][0]["content"] == "remember zanzibar sunrise, Marlowe"
    )
    snapshot = DjangoSnapshotStore(using=alias).load("run-1")
    assert snapshot is not None and snapshot["notes"] == SECRETS
    checkpoint = DjangoCheckpointStore(using=alias).load("o", "conv")
    assert checkpoint is not None and checkpoint["state"] == {"said": "zanzibar sunrise"}
    # What retention and erasure select snapshots by stays in the clear.
    assert Snapshot.objects.using(alias).filter(payload__sessionId="conv").count() == 1
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_the_api_and_the_admin_read_sealed_sessions(sealed: None) -> None:
    chat_and_keep("default")
    ana = User.objects.create_user("ana")
    SessionOwner.objects.create(session_id="chat", user=ana)
    client = Client()
    client.force_login(ana)
    events = client.get("/api/sessions/chat/events/").json()
    assert "Ann Marlowe" in [event.get("text") for event in events["events"]]
    assert client.get("/api/sessions/chat/").json()["session"]["data"]["name"] == "Ann Marlowe"
    staff = User.objects.create_superuser("boss", password="x")
    client.force_login(staff)
    page = client.get("/admin/warlock_sessions/session/chat/change/").content.decode()
    assert "Ann Marlowe" in page and "wse1." not in page.split("raw")[0]
    conversation = client.get("/admin/warlock_sessions/conversation/conv/change/").content.decode()
    assert "zanzibar sunrise" in conversation
    # Search finds a sealed session by its id and agent, not by what it holds.
    found = client.get("/admin/warlock_sessions/session/", {"q": "Marlowe"}).content.decode()
    assert "/session/chat/change/" not in found
    assert "not searched by content" in found


@pytest.mark.django_db(transaction=True)
def test_a_sealed_value_copied_to_another_row_does_not_open(sealed: None) -> None:
    host = Host(booking_agent(), DjangoStore())
    host.handle("a", {"message": {"id": "m1", "text": "book"}})
    host.handle("b", {"message": {"id": "m1", "text": "book"}})
    host.handle("b", {"message": {"id": "m2", "text": "Ann Marlowe"}})
    blob_a = Session.objects.get(id="a").blob
    Session.objects.filter(id="b").update(blob=blob_a, version=1)
    with pytest.raises(SealedValueError):
        DjangoStore().load("b")
    first, second = SessionEvent.objects.filter(session_id="b").order_by("seq")[:2]
    SessionEvent.objects.filter(pk=second.pk).update(payload=first.payload)
    with pytest.raises(SealedValueError):
        print(SessionEvent.objects.get(pk=second.pk).opened_payload)
    ana = User.objects.create_user("ana")
    SessionOwner.objects.create(session_id="b", user=ana)
    client = Client()
    client.force_login(ana)
    answer = client.get("/api/sessions/b/events/")
    assert answer.status_code == 409 and answer.json()["code"] == "encryption-error"
    # A plain blob written behind the store's back is refused, not read.
    Session.objects.filter(id="a").update(blob=blob_a.replace("wse1.", "plain."))
    with pytest.raises((SealedValueError, PlaintextRefusedError)):
        DjangoStore().load("a")


@pytest.mark.parametrize("alias", ALIASES)
def test_rotation_seals_everything_again_with_the_new_key(alias: str) -> None:
    with keys(("k1", K1)):
        chat_and_keep(alias)
    out = StringIO()
    with keys(("k2", K2), ("k1", K1)):
        call_command(
            "warlock_rotate_keys", database=alias, batch_size=2, servers_ready=True, stdout=out
        )
    assert "sessions: sealed 1 of 1" in out.getvalue()
    assert "session events: sealed" in out.getvalue()
    cells = stored_cells(alias)
    assert not [cell for cell in cells if "wse1.k1." in cell]
    with keys(("k2", K2)):  # the old key can go: everything opens with the new one
        blob = DjangoStore(using=alias).load("chat")
        assert blob is not None and blob["data"]["name"] == "Ann Marlowe"
        assert DjangoConversationStore(using=alias).load("conv-fork") is not None
        assert DjangoSnapshotStore(using=alias).load("run-1") is not None
        Host(booking_agent(), DjangoStore(using=alias)).handle(
            "chat", {"message": {"id": "m9", "text": "hello again"}}
        )
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_a_plain_database_is_sealed_by_rotation_then_plaintext_is_refused() -> None:
    with override_settings(
        WARLOCK_SESSIONS={"AGENTS": {"booking": "example_project.demo.agents.booking_agent"}}
    ):
        chat_and_keep("default")
    assert any("Marlowe" in cell for cell in stored_cells("default"))
    with keys(("k1", K1)), pytest.raises(PlaintextRefusedError):
        DjangoStore().load("chat")
    with keys(("k1", K1), ENCRYPTION_ACCEPT_PLAINTEXT=True):
        assert DjangoStore().load("chat") is not None  # read while rotation runs
        call_command("warlock_rotate_keys", servers_ready=True, stdout=StringIO())
    assert [cell for cell in stored_cells("default") if any(s in cell for s in SECRETS)] == []
    with keys(("k1", K1)):
        assert DjangoStore().load("chat") is not None
        assert DjangoConversationStore().load("conv") is not None
        assert Session.objects.get(id="chat").search_text == ""


@pytest.mark.django_db(transaction=True)
def test_turning_encryption_on_over_plain_rows_logs_what_to_do(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The client is told 409 and nothing more; the operator's log line names the setting
    and the command that fix it."""
    with override_settings(
        WARLOCK_SESSIONS={"AGENTS": {"booking": "example_project.demo.agents.booking_agent"}}
    ):
        chat_and_keep("default")
    User.objects.create_superuser("ops", "ops@example.com", "pw")
    client = Client()
    client.login(username="ops", password="pw")
    with keys(("k1", K1)):
        answer = client.get("/api/sessions/chat/")
    assert (answer.status_code, answer.json()["code"]) == (409, "encryption-error")
    assert "ENCRYPTION_ACCEPT_PLAINTEXT" not in answer.json()["detail"]
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "ENCRYPTION_ACCEPT_PLAINTEXT" in logged and "warlock_rotate_keys" in logged


@pytest.mark.django_db(transaction=True)
def test_rotation_leaves_a_row_a_turn_saved_meanwhile(sealed: None) -> None:
    host = Host(booking_agent(), DjangoStore())
    host.handle("chat", {"message": {"id": "m1", "text": "book"}})
    read_before_the_turn = Session.objects.get(id="chat")
    with keys(("k2", K2), ("k1", K1)):
        host.handle("chat", {"message": {"id": "m2", "text": "Ann Marlowe"}})
        progress = Progress("sessions", 1)
        _rotate_row(TABLES[0], "default", read_before_the_turn, progress)
        assert (progress.resealed, progress.moved) == (0, 1)
        assert Session.objects.get(id="chat").blob.startswith("wse1.k2.")
        assert DjangoStore().load("chat")["data"]["name"] == "Ann Marlowe"  # type: ignore[index]


@pytest.mark.django_db
def test_rotation_without_keys_says_so() -> None:
    with pytest.raises(CommandError, match="ENCRYPTION_KEYS is not set"):
        call_command("warlock_rotate_keys", stdout=StringIO())
    assert Conversation.objects.count() == ConversationMessage.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_rotation_goes_on_past_a_value_that_does_not_open_and_names_it(sealed: None) -> None:
    host = Host(booking_agent(), DjangoStore())
    for session_id in ("a", "b", "c"):
        host.handle(session_id, {"message": {"id": "m1", "text": "book"}})
    Session.objects.filter(id="b").update(blob=Session.objects.get(id="a").blob)
    out, err = StringIO(), StringIO()
    with keys(("k2", K2), ("k1", K1)), pytest.raises(CommandError, match="1 value"):
        call_command("warlock_rotate_keys", servers_ready=True, stdout=out, stderr=err)
    assert "does not open: session/b/1" in err.getvalue()
    assert Session.objects.get(id="c").blob.startswith("wse1.k2.")
    assert not SessionEvent.objects.filter(payload__sealed__startswith="wse1.k1.").exists()


@pytest.mark.django_db(transaction=True)
def test_rotation_never_writes_an_old_row_over_one_made_again_under_its_id(sealed: None) -> None:
    host = Host(booking_agent(), DjangoStore())
    host.handle("chat", {"message": {"id": "m1", "text": "book"}})
    erased = Session.objects.get(id="chat")
    DjangoStore().delete("chat")
    host.handle("chat", {"message": {"id": "n1", "text": "hello"}})  # someone else, version 1
    with keys(("k2", K2), ("k1", K1)):
        progress = Progress("sessions", 1)
        _rotate_row(TABLES[0], "default", erased, progress)
    assert (progress.resealed, progress.moved) == (0, 1)
    assert DjangoStore().load("chat")["inputs"] == ["n1"]  # type: ignore[index]


@pytest.mark.django_db(transaction=True)
def test_rotation_seals_again_what_stores_outside_the_database_keep(tmp_path: Any) -> None:
    outside = {
        "STORE": {
            "CLASS": "warlock_sessions.stores.FileStore",
            "OPTIONS": {"directory": str(tmp_path / "s")},
        },
        "SNAPSHOT_STORE": {
            "CLASS": "warlock_sessions.snapshots.FileSnapshotStore",
            "OPTIONS": {"directory": str(tmp_path / "r")},
        },
    }
    from warlock_sessions.snapshots import default_snapshot_store
    from warlock_sessions.stores import default_store

    with keys(("k1", K1), **outside):
        Host(booking_agent()).handle("chat", {"message": {"id": "m1", "text": "book"}})
        default_snapshot_store().save({"runId": "run-1", "said": "zanzibar sunrise"})  # type: ignore[union-attr]
    out = StringIO()
    with keys(("k2", K2), ("k1", K1), **outside):
        call_command("warlock_rotate_keys", servers_ready=True, stdout=out, stderr=StringIO())
    assert "sessions (FileStore): sealed 1 of 1" in out.getvalue()
    assert "snapshots (FileSnapshotStore): sealed 1 of 1" in out.getvalue()
    with keys(("k2", K2), **outside):
        assert default_store().load("chat") is not None
        assert default_snapshot_store().load("run-1")["said"] == "zanzibar sunrise"  # type: ignore[union-attr]


@pytest.mark.django_db(transaction=True)
def test_the_admin_shows_sealed_rows_opened_and_survives_one_that_does_not_open(
    sealed: None,
) -> None:
    host = Host(booking_agent(), DjangoStore())
    host.handle("chat", {"message": {"id": "m1", "text": "book"}})
    host.handle("chat", {"message": {"id": "m2", "text": "Ann Marlowe"}})
    client = Client()
    client.force_login(User.objects.create_superuser("boss", password="x"))
    event = SessionEvent.objects.filter(session_id="chat", payload__sealed__isnull=False).last()
    assert event is not None
    page = client.get(f"/admin/warlock_sessions/sessionevent/{event.pk}/change/").content.decode()
    assert "wse1." not in page
    message = OutboundMessage.objects.filter(session_id="chat").last()
    assert message is not None
    page = client.get(f"/admin/warlock_sessions/outboundmessage/{message.pk}/change/")
    assert "wse1." not in page.content.decode() and page.status_code == 200
    with keys(("k2", K2)):  # every row sealed with a key this server does not have
        answer = client.get("/admin/warlock_sessions/session/chat/change/")
        assert answer.status_code == 200 and "not configured" in answer.content.decode()
        assert client.get("/admin/warlock_sessions/session/").status_code == 200


def test_a_key_with_a_line_break_is_read_and_an_empty_dict_is_no_keys() -> None:
    with keys(("k1", K1 + "\n")):
        assert open_text(seal_text("hi", "x"), "x") == "hi"
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": {}}):
        assert seal_text("hi", "x") == "hi"


def test_accepting_plaintext_is_a_deployment_warning() -> None:
    from warlock_sessions.checks import check_plaintext_accepted

    with keys(("k1", K1), ENCRYPTION_ACCEPT_PLAINTEXT=True):
        assert [m.id for m in check_plaintext_accepted()] == ["warlock_sessions.W007"]
    with keys(("k1", K1)):
        assert check_plaintext_accepted() == []


@pytest.mark.django_db(transaction=True)
def test_rotation_with_a_wrong_key_under_the_current_id_fails_naming_what_does_not_open(
    sealed: None,
) -> None:
    """It skipped every value sealed under the current id as done ("had no change to make")
    and exited 0: a key pasted wrong went unnoticed until the servers failed."""
    Host(booking_agent(), DjangoStore()).handle("chat", {"message": {"id": "m1", "text": "book"}})
    out, err = StringIO(), StringIO()
    wrong = base64.b64encode(b"w" * 32).decode()
    with keys(("k1", wrong)), pytest.raises(CommandError, match="did not open"):
        call_command("warlock_rotate_keys", servers_ready=True, stdout=out, stderr=err)
    assert "does not open: session/chat/1" in err.getvalue()
    assert "does not open: event/chat/" in err.getvalue()
    assert Session.objects.get(id="chat").blob.startswith("wse1.k1.")  # left as it was


@pytest.mark.django_db(transaction=True)
def test_rotation_to_a_key_no_server_has_used_yet_needs_the_servers_ready(sealed: None) -> None:
    """Run before the servers had the new key, it sealed every row with it, and every live
    session answered 409 encryption-error."""
    host = Host(booking_agent(), DjangoStore())
    host.handle("chat", {"message": {"id": "m1", "text": "book"}})
    with keys(("k2", K2), ("k1", K1)):
        with pytest.raises(CommandError, match="--servers-ready"):
            call_command("warlock_rotate_keys", stdout=StringIO())
        assert Session.objects.get(id="chat").blob.startswith("wse1.k1.")  # nothing sealed
        # Once a server with the key has sealed something with it, no word is needed.
        host.handle("other", {"message": {"id": "m1", "text": "book"}})
        call_command("warlock_rotate_keys", stdout=StringIO())
        assert Session.objects.get(id="chat").blob.startswith("wse1.k2.")
