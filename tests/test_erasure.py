"""Erasing a person: every trace of them, in every table, on SQLite and on PostgreSQL, goes;
another person's rows stay exactly as they were; a dry run deletes nothing; the command says
what it did per kind of row."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from tests.conversations.fakes import FakeAgent
from tests.host.conftest import ALIASES, timer_agent
from warlock_sessions.conversations import DjangoConversationStore, session
from warlock_sessions.erasure import Person, erase
from warlock_sessions.host import Host
from warlock_sessions.models import (
    AppliedInput,
    CacheEntry,
    CacheScope,
    Checkpoint,
    Conversation,
    ConversationMessage,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionLockRow,
    SessionOwner,
    Snapshot,
    Wake,
)
from warlock_sessions.stores import DjangoStore


class Everything:
    """Every app's rows to one alias, so a person's rows and their account live together."""

    alias = "default"

    def db_for_read(self, model: type, **hints: object) -> str:
        return self.alias

    db_for_write = db_for_read

    def allow_relation(self, *args: object, **hints: object) -> bool:
        return True


@pytest.fixture(params=ALIASES)
def alias(request: pytest.FixtureRequest) -> Iterator[str]:
    Everything.alias = request.param
    with override_settings(
        DATABASE_ROUTERS=[f"{__name__}.Everything"],
        WARLOCK_SESSIONS={
            "AGENTS": {"timer": "tests.host.conftest.timer_agent"},
            "SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore",
            "CACHE_STORE": "warlock_sessions.cache.DjangoCacheStore",
        },
    ):
        yield request.param
    connections.close_all()


def seed(alias: str, owner: dict[str, Any], name: str) -> list[str]:
    """A person's chat session (log, outbox, a wake, applied inputs, owner row), their
    conversation with a fork, and a snapshot, checkpoint, cached answer and lock of each:
    the ids their rows hang off."""
    chat, conversation, fork = f"chat-{name}", f"conv-{name}", f"fork-{name}"
    host = Host(timer_agent(), DjangoStore(using=alias))
    host.handle(chat, {"start": {"flow": "lembrete", "key": "k1"}})
    host.handle(chat, {"message": {"text": "hi", "id": "m1"}})
    SessionOwner.objects.using(alias).create(session_id=chat, **owner)
    talk = session(conversation, DjangoConversationStore(using=alias), FakeAgent())
    talk.send("hello")
    talk.fork(fork)
    Conversation.objects.using(alias).filter(id__in=[conversation, fork]).update(**owner)
    now = timezone.now()
    for key in (conversation, fork):  # runs, checkpoints and locks are a conversation's
        Snapshot.objects.using(alias).create(
            key=f"run-{key}", payload={"sessionId": key, "status": "running"}, saved_at=now
        )
        Checkpoint.objects.using(alias).create(
            orchestrator_name="o",
            session_id=key,
            turn_index=0,
            state={},
            signature="s",
            saved_at=now,
        )
        SessionLockRow.objects.using(alias).create(
            key=f"session:{key}", token="t", expires_at=now + timedelta(minutes=1)
        )
        CacheEntry.objects.using(alias).create(
            namespace="n",
            scope=f"conversation:{key}",
            key=key[:64],
            question="what's the price?",
            reply="{}",
            stored_at=now,
        )
    return [chat, conversation, fork]


def traces(alias: str, ids: list[str]) -> dict[str, int]:
    """Every row that names one of ``ids``, by table."""
    by_session = (SessionEvent, OutboundMessage, Wake, AppliedInput, SessionOwner, Checkpoint)
    counts = {
        model.__name__: model.objects.using(alias).filter(session_id__in=ids).count()
        for model in by_session
    }
    counts["Session"] = Session.objects.using(alias).filter(id__in=ids).count()
    counts["Conversation"] = Conversation.objects.using(alias).filter(id__in=ids).count()
    counts["ConversationMessage"] = (
        ConversationMessage.objects.using(alias).filter(conversation_id__in=ids).count()
    )
    counts["Snapshot"] = (
        Snapshot.objects.using(alias)
        .filter(key__in=[f"run-{key}" for key in ids] + [f"session:{key}" for key in ids])
        .count()
    )
    counts["CacheEntry"] = (
        CacheEntry.objects.using(alias).filter(scope__in=[f"conversation:{k}" for k in ids]).count()
    )
    counts["CacheScope"] = (
        CacheScope.objects.using(alias).filter(scope__in=[f"conversation:{k}" for k in ids]).count()
    )
    counts["SessionLockRow"] = (
        SessionLockRow.objects.using(alias).filter(key__in=[f"session:{k}" for k in ids]).count()
    )
    return counts


def test_a_user_is_erased_everywhere_and_nobody_else(alias: str) -> None:
    ana = User.objects.using(alias).create(username="ana")
    carla = User.objects.using(alias).create(username="carla")
    anas = seed(alias, {"user": ana}, "ana")
    carlas = seed(alias, {"user": carla}, "carla")
    visitors = seed(alias, {"anonymous_key": "v-bob"}, "bob")
    before = traces(alias, anas)
    assert all(value for name, value in before.items() if name != "CacheScope"), before
    others = (("carla", carlas), ("bob", visitors))
    kept = {name: traces(alias, ids) for name, ids in others}

    assert erase(Person(user=ana.pk), dry_run=True)["sessions"] == 1
    assert traces(alias, anas) == before  # a dry run deletes nothing

    erased = erase(Person(user=ana.pk))
    assert not any(traces(alias, anas).values()), traces(alias, anas)
    assert {name: traces(alias, ids) for name, ids in others} == kept
    assert erased["sessions"] == 1 and erased["conversations"] == 2  # the fork too
    assert erased["session events"] == before["SessionEvent"]
    assert User.objects.using(alias).filter(pk=ana.pk).exists()  # the account is the project's
    from warlock_sessions.conversations.seen import seen_histories

    # Nor does this process keep a copy of what Ana's conversations said.
    assert seen_histories.get((alias, "conv-ana")) is None


def rows_naming(alias: str, ids: list[str]) -> list[str]:
    """Every row of every table of the app, as its serialized text, that names one of ``ids``
    (sealed and JSON columns included, as stored)."""
    from django.apps import apps
    from django.core import serializers

    found = []
    for model in apps.get_app_config("warlock_sessions").get_models():
        rows = model._base_manager.using(alias).all()
        text = serializers.serialize("json", rows)
        found += [f"{model.__name__}: {key}" for key in ids if key in text]
    return found


def test_an_erase_leaves_no_row_naming_the_erased_ids(alias: str) -> None:
    """The cache's removal counters named the erased conversations' scopes
    (``conversation:<id>``) after the erase deleted their answers."""
    ana = User.objects.using(alias).create(username="ana")
    anas = seed(alias, {"user": ana}, "ana")
    assert rows_naming(alias, anas)
    erase(Person(user=ana.pk))
    assert rows_naming(alias, anas) == []
    assert CacheScope.objects.using(alias).count() == 0


def test_a_visitor_a_session_and_a_conversation_are_erased_alone(alias: str) -> None:
    visitors = seed(alias, {"anonymous_key": "v-bob"}, "bob")
    others = seed(alias, {"anonymous_key": "v-dan"}, "dan")
    kept = traces(alias, others)
    erase(Person(visitor="v-bob"))
    assert not any(traces(alias, visitors).values())
    assert traces(alias, others) == kept

    chat, conversation, fork = others
    erase(Person(session=chat))
    assert not any(traces(alias, [chat]).values())
    erase(Person(conversation=conversation))  # and its fork
    assert not any(traces(alias, [conversation, fork]).values())


@pytest.mark.django_db
def test_the_command_prints_what_it_deleted_per_kind_of_row(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seed("default", {"anonymous_key": "v-eve"}, "eve")
    out = StringIO()
    call_command("warlock_erase", "--visitor", "v-eve", "--dry-run", stdout=out)
    assert "sessions: would delete 1\n" in out.getvalue()
    assert "conversations: would delete 2\n" in out.getvalue()
    assert Session.objects.filter(id="chat-eve").exists()
    out = StringIO()
    with caplog.at_level("INFO", logger="warlock_sessions.erasure"):
        call_command("warlock_erase", "--visitor", "v-eve", stdout=out)
    assert "sessions: deleted 1\n" in out.getvalue()
    assert not Session.objects.filter(id="chat-eve").exists()
    # The audit trail: who erased whom and how much, never the visitor's key (a cookie).
    [record] = [r for r in caplog.records if getattr(r, "event", None) == "erased"]
    assert record.getMessage().startswith("erased visitor #")
    assert "by manage.py warlock_erase: session events " in record.getMessage()
    assert "v-eve" not in record.getMessage() and record.counts["sessions"] == 1


@pytest.mark.django_db
def test_the_command_refuses_an_unknown_user_and_nobody() -> None:
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("warlock_erase", "--owner", "nobody")
    with pytest.raises(CommandError, match="exactly one"):
        call_command("warlock_erase", "--visitor", "")
    # A key that owns nothing is refused like an unknown user, dry run or not.
    for dry in ((), ("--dry-run",)):
        with pytest.raises(CommandError, match="no visitor has the key 'unknown'"):
            call_command("warlock_erase", "--visitor", "unknown", *dry)
    with pytest.raises(CommandError):
        call_command("warlock_erase")  # whom to erase is required
    # As code may pass them (a shell cannot): refused in a sentence, never a database error.
    for option, hostile in (("--session", "a\x00b"), ("--visitor", "\ud800"), ("--owner", "a\x00")):
        with pytest.raises(CommandError):
            call_command("warlock_erase", option, hostile)


@pytest.mark.django_db
def test_the_admin_erases_the_people_of_the_selected_sessions_after_a_confirmation(
    client: Any,
) -> None:
    from django.contrib.auth.models import Permission

    bobs = seed("default", {"anonymous_key": "v-bob"}, "bob")
    kept = traces("default", seed("default", {"anonymous_key": "v-dan"}, "dan"))
    clerk = User.objects.create_user("clerk", password="pw", is_staff=True)
    clerk.user_permissions.add(
        Permission.objects.get(codename="view_session", content_type__app_label="warlock_sessions")
    )
    client.force_login(clerk)
    asked = {"action": "erase_people", "_selected_action": ["chat-bob"]}
    client.post("/admin/warlock_sessions/session/", {**asked, "confirmed": "yes"})
    assert Session.objects.filter(id="chat-bob").exists()  # only those who may delete

    clerk.user_permissions.add(
        Permission.objects.get(
            codename="delete_session", content_type__app_label="warlock_sessions"
        )
    )
    clerk = User.objects.get(pk=clerk.pk)
    client.post("/admin/warlock_sessions/session/", {**asked, "confirmed": "yes"})
    # An erase deletes conversations too: delete_session alone erased them (an attack).
    assert Session.objects.filter(id="chat-bob").exists()
    clerk.user_permissions.add(
        Permission.objects.get(
            codename="delete_conversation", content_type__app_label="warlock_sessions"
        )
    )
    confirm = client.post("/admin/warlock_sessions/session/", asked)
    assert confirm.status_code == 200 and b"v-bob" not in confirm.content  # the key is a cookie
    assert b"visitor #" in confirm.content
    assert b"Yes, erase them" in confirm.content
    assert Session.objects.filter(id="chat-bob").exists()  # nothing before the confirmation
    done = client.post(
        "/admin/warlock_sessions/session/", {**asked, "confirmed": "yes"}, follow=True
    )
    said = [str(message) for message in done.context["messages"]]
    assert said[0].startswith("visitor #") and "v-bob" not in said[0], said
    assert not any(traces("default", bobs).values())
    assert traces("default", ["chat-dan", "conv-dan", "fork-dan"]) == kept


def test_nobody_else_is_touched_by_a_shared_id_a_fork_or_a_lock_key(alias: str) -> None:
    """An attack found: a session and a conversation of two people with one id, another's fork
    of the erased conversation, and a lock whose key ends with the erased id, all deleted."""
    ana = User.objects.using(alias).create(username="ana")
    carla = User.objects.using(alias).create(username="carla")
    seed(alias, {"user": ana}, "ana")
    # Carla's conversation has the id of Ana's session, and she forked Ana's conversation.
    shared = session("chat-ana", DjangoConversationStore(using=alias), FakeAgent())
    shared.send("mine")
    session("conv-ana", DjangoConversationStore(using=alias), FakeAgent()).fork("carlas-fork")
    Conversation.objects.using(alias).filter(id__in=["chat-ana", "carlas-fork"]).update(user=carla)
    Snapshot.objects.using(alias).create(
        key="run-carla", payload={"sessionId": "chat-ana"}, saved_at=timezone.now()
    )
    SessionLockRow.objects.using(alias).create(
        key="session:x:conv-ana", token="t", expires_at=timezone.now() + timedelta(minutes=1)
    )
    carlas = traces(alias, ["chat-ana", "carlas-fork"]) | {
        "locks": SessionLockRow.objects.using(alias).filter(key="session:x:conv-ana").count(),
        "run": Snapshot.objects.using(alias).filter(key="run-carla").count(),
    }
    erase(Person(user=ana.pk), others_forks="keep")  # test_a_fork_staff_made_... for the default
    after = traces(alias, ["chat-ana", "carlas-fork"]) | {
        "locks": SessionLockRow.objects.using(alias).filter(key="session:x:conv-ana").count(),
        "run": Snapshot.objects.using(alias).filter(key="run-carla").count(),
    }
    # Ana's session rows under "chat-ana" go; Carla's conversation under that id stays.
    carlas.update({name: 0 for name in ("SessionEvent", "OutboundMessage", "Wake", "AppliedInput")})
    carlas.update(SessionOwner=0, Session=0)
    assert after == carlas
    assert Conversation.objects.using(alias).filter(id__in=["chat-ana", "carlas-fork"]).count() == 2


def test_a_fork_staff_made_of_the_persons_conversation_is_named_and_erased_by_default(
    alias: str,
) -> None:
    """Staff tried another answer in a fork of Ana's conversation: it kept her messages
    after her erase. The dry run names it, the erase takes it unless told to keep it."""
    from io import StringIO

    from django.core.management import call_command

    ana = User.objects.using(alias).create(username="ana")
    rita = User.objects.using(alias).create(username="rita", is_staff=True)
    seed(alias, {"user": ana}, "ana")
    session("conv-ana", DjangoConversationStore(using=alias), FakeAgent()).fork("ritas-try")
    session("ritas-try", DjangoConversationStore(using=alias), FakeAgent()).fork("ritas-2nd")
    Conversation.objects.using(alias).filter(id__in=["ritas-try", "ritas-2nd"]).update(user=rita)
    said = ConversationMessage.objects.using(alias).filter(conversation_id="ritas-try").count()
    assert said > 0  # Ana's words, copied

    printed = StringIO()
    call_command("warlock_erase", "--owner", "ana", "--dry-run", stdout=printed)
    assert (
        "forks others made of the person's conversations (would erase): ritas-2nd, ritas-try"
        in printed.getvalue()
    )
    kept = StringIO()
    call_command(
        "warlock_erase", "--owner", "ana", "--dry-run", "--others-forks", "keep", stdout=kept
    )
    assert "(would keep): ritas-2nd, ritas-try" in kept.getvalue()
    assert Conversation.objects.using(alias).filter(user=rita).count() == 2  # a dry run

    erased = erase(Person(user=ana.pk))
    assert erased["conversations"] == 4  # hers, her own fork, and Rita's two
    assert rows_naming(alias, ["ritas-try", "ritas-2nd"]) == []
    with pytest.raises(ValueError, match="others_forks is one of erase, keep"):
        erase(Person(user=ana.pk), others_forks="maybe")


@pytest.mark.django_db
def test_a_deep_chain_of_forks_and_many_sessions_go_in_batches() -> None:
    """Forks were followed 50 deep; 600 sessions made one statement SQLite refused."""
    talk = session("c0", DjangoConversationStore(), FakeAgent())
    talk.send("hello")
    Conversation.objects.filter(id="c0").update(anonymous_key="v-deep")
    for depth in range(1, 61):
        session(f"c{depth - 1}", DjangoConversationStore(), FakeAgent()).fork(f"c{depth}")
        Conversation.objects.filter(id=f"c{depth}").update(anonymous_key="v-deep")
    SessionOwner.objects.bulk_create(
        SessionOwner(session_id=f"s{number}", anonymous_key="v-deep") for number in range(600)
    )
    counts = erase(Person(visitor="v-deep"), dry_run=True)
    assert counts["conversations"] == 61 and counts["session owners"] == 600
    erase(Person(visitor="v-deep"))
    assert not Conversation.objects.exists() and not SessionOwner.objects.exists()


@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_a_store_on_another_database_is_erased_where_it_keeps_the_sessions() -> None:
    """With STORE_OPTIONS naming another database, the erase looked on the router's."""
    if "postgres" not in connections.databases:
        pytest.skip("needs PostgreSQL")
    configured = {
        "AGENTS": {"timer": "tests.host.conftest.timer_agent"},
        "STORE_OPTIONS": {"using": "postgres"},
    }
    with override_settings(WARLOCK_SESSIONS=configured):
        Host(timer_agent(), DjangoStore(using="postgres")).handle(
            "elsewhere", {"message": {"text": "hi", "id": "m1"}}
        )
        SessionOwner.objects.create(session_id="elsewhere", anonymous_key="v-far")
        assert erase(Person(visitor="v-far"))["sessions"] == 1
    assert not Session.objects.using("postgres").filter(id="elsewhere").exists()
    assert not SessionEvent.objects.using("postgres").filter(session_id="elsewhere").exists()


@pytest.mark.django_db
def test_stores_outside_the_database_are_emptied_and_counted() -> None:
    """A session store and a snapshot store kept elsewhere (here in memory, as Redis or files
    would be): the person's sessions, conversation records and runs go from them too, and a
    dry run counts them."""
    from warlock_sessions.engine import new_session
    from warlock_sessions.snapshots import default_snapshot_store
    from warlock_sessions.stores import default_store

    configured = {
        "STORE": "warlock_sessions.stores.MemoryStore",
        "SNAPSHOT_STORE": "warlock_sessions.snapshots.MemorySnapshotStore",
    }
    with override_settings(WARLOCK_SESSIONS=configured):
        store, snapshots = default_store(), default_snapshot_store()
        assert snapshots is not None
        for owner, name in (("v-gus", "gus"), ("v-hal", "hal")):
            store.save(new_session(f"chat-{name}"), 0)
            SessionOwner.objects.create(session_id=f"chat-{name}", anonymous_key=owner)
            Conversation.objects.create(
                id=f"conv-{name}",
                anonymous_key=owner,
                created_at=timezone.now(),
                updated_at=timezone.now(),
            )
            snapshots.save({"runId": f"session:conv-{name}", "type": "conversation-session"})
            snapshots.save({"runId": f"agent-{name}", "sessionId": f"conv-{name}"})
        counts = erase(Person(visitor="v-gus"), dry_run=True)
        assert counts["sessions"] == 1 and counts["snapshots"] == 2
        assert store.load("chat-gus") is not None
        erase(Person(visitor="v-gus"))
        assert store.load("chat-gus") is None and store.load("chat-hal") is not None
        assert sorted(snapshots.list()) == ["agent-hal", "session:conv-hal"]


@pytest.mark.django_db
def test_the_admin_names_others_forks_and_keeps_them_when_asked(client: Any) -> None:
    ana = User.objects.create(username="ana")
    rita = User.objects.create(username="rita", is_staff=True)
    seed("default", {"user": ana}, "ana")
    session("conv-ana", DjangoConversationStore(), FakeAgent()).fork("ritas-try")
    Conversation.objects.filter(id="ritas-try").update(user=rita)
    client.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))
    asked = {"action": "erase_people", "_selected_action": ["chat-ana"]}
    confirm = client.post("/admin/warlock_sessions/session/", asked)
    assert b"ritas-try" in confirm.content and b"keep_others_forks" in confirm.content
    client.post(
        "/admin/warlock_sessions/session/",
        {**asked, "confirmed": "yes", "keep_others_forks": "yes"},
    )
    assert not Conversation.objects.filter(id="conv-ana").exists()
    assert Conversation.objects.filter(id="ritas-try").exists()  # kept, as asked
