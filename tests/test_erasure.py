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
    for key in (conversation, fork, chat):
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
            key=f"rows:{alias}:{key}", token="t", expires_at=now + timedelta(minutes=1)
        )
    for key in (conversation, fork):
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
    counts["SessionLockRow"] = sum(
        SessionLockRow.objects.using(alias).filter(key__endswith=f":{key}").count() for key in ids
    )
    return counts


def test_a_user_is_erased_everywhere_and_nobody_else(alias: str) -> None:
    ana = User.objects.using(alias).create(username="ana")
    carla = User.objects.using(alias).create(username="carla")
    anas = seed(alias, {"user": ana}, "ana")
    carlas = seed(alias, {"user": carla}, "carla")
    visitors = seed(alias, {"anonymous_key": "v-bob"}, "bob")
    before = traces(alias, anas)
    assert all(before.values()), before  # the seed reaches every table
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
def test_the_command_prints_what_it_deleted_per_kind_of_row() -> None:
    seed("default", {"anonymous_key": "v-eve"}, "eve")
    out = StringIO()
    call_command("warlock_erase", "--visitor", "v-eve", "--dry-run", stdout=out)
    assert "sessions: would delete 1\n" in out.getvalue()
    assert "conversations: would delete 2\n" in out.getvalue()
    assert Session.objects.filter(id="chat-eve").exists()
    out = StringIO()
    call_command("warlock_erase", "--visitor", "v-eve", stdout=out)
    assert "sessions: deleted 1\n" in out.getvalue()
    assert not Session.objects.filter(id="chat-eve").exists()


@pytest.mark.django_db
def test_the_command_refuses_an_unknown_user_and_nobody() -> None:
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("warlock_erase", "--owner", "nobody")
    with pytest.raises(CommandError, match="exactly one"):
        call_command("warlock_erase", "--visitor", "")
    with pytest.raises(CommandError):
        call_command("warlock_erase")  # whom to erase is required


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
    confirm = client.post("/admin/warlock_sessions/session/", asked)
    assert confirm.status_code == 200 and b"visitor v-bob" in confirm.content
    assert b"Yes, erase them" in confirm.content
    assert Session.objects.filter(id="chat-bob").exists()  # nothing before the confirmation
    done = client.post(
        "/admin/warlock_sessions/session/", {**asked, "confirmed": "yes"}, follow=True
    )
    said = [str(message) for message in done.context["messages"]]
    assert said[0].startswith("visitor v-bob: erased ("), said
    assert not any(traces("default", bobs).values())
    assert traces("default", ["chat-dan", "conv-dan", "fork-dan"]) == kept
