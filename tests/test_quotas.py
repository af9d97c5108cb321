"""Each owner's tally (``models.quotas``) is the count of their rows, whatever makes or removes
them: the API's claims, server code, the admin, a fork, an erase, a prune, a login adopting a
visitor's chats. Quotas are decided on it alone, so it must never drift."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections
from django.db.models import Count
from django.test import RequestFactory, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from tests.snapshots.conftest import needs_postgres
from warlock_sessions.erasure import Person, erase
from warlock_sessions.host.retention import Retention, prune
from warlock_sessions.models import (
    Conversation,
    OutboundMessage,
    OwnerTally,
    Session,
    SessionOwner,
    Wake,
    bucket_of,
)
from warlock_sessions.models.quotas import tally_key
from warlock_sessions.permissions import VISITOR_KEY, adopt_visitor_sessions

pytestmark = pytest.mark.django_db
SETTINGS = {
    "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
    "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
    "MAX_SESSIONS_PER_OWNER": 3,
    "MAX_CONVERSATIONS_PER_OWNER": 3,
}


def recounted() -> dict[str, int]:
    """Each owner's rows as counted now (what the tallies must say)."""
    counts: Counter[str] = Counter()
    for model in (SessionOwner, Conversation):
        owners = model._base_manager.values_list("user_id", "anonymous_key", "tenant")
        for user, visitor, tenant, n in owners.annotate(n=Count("pk")).order_by():
            key = tally_key(model.counted_as or "", user, visitor, tenant)
            if key is not None:
                counts[key] += n
    return dict(counts)


def tallies() -> dict[str, int]:
    return {key: n for key, n in OwnerTally.objects.values_list("key", "count") if n}


def turn(client: APIClient, session_id: str) -> int:
    return int(
        client.post(
            f"/api/sessions/{session_id}/turn/",
            {"message": {"text": "hi", "id": "m1"}},
            format="json",
        ).status_code
    )


def send(client: APIClient, conversation_id: str) -> int:
    return int(
        client.post(
            f"/api/conversations/{conversation_id}/send/", {"input": "hi"}, format="json"
        ).status_code
    )


@override_settings(WARLOCK_SESSIONS=SETTINGS)
def test_the_tallies_follow_every_way_rows_come_and_go(admin_user: Any) -> None:
    ana = User.objects.create_user("ana")
    client = APIClient()
    client.force_authenticate(ana)
    assert [turn(client, f"s{n}") for n in range(4)] == [200, 200, 200, 403]
    assert [send(client, f"c{n}") for n in range(4)] == [200, 200, 200, 403]
    assert tallies() == recounted() and sorted(tallies().values()) == [3, 3]

    # A session deleted through the API, a conversation forked then deleted: room again.
    staff = APIClient()
    staff.force_authenticate(admin_user)
    assert staff.delete("/api/sessions/s0/").status_code == 204
    assert staff.delete("/api/conversations/c0/").status_code == 204
    assert turn(client, "s-again") == 200
    fork = {"target": "c1-fork", "message_count": 1}
    forked = client.post("/api/conversations/c1/fork/", fork, format="json")
    assert forked.status_code in (200, 201), forked.content
    fork["target"] = "c1-fork-2"
    assert client.post("/api/conversations/c1/fork/", fork, format="json").status_code == 403
    assert tallies() == recounted()

    # Server code's rows, deleted by a queryset and one by one.
    SessionOwner.objects.create(session_id="by-code", user=ana)
    SessionOwner.objects.filter(session_id__in=["s1", "s2"]).delete()
    SessionOwner.objects.get(session_id="by-code").delete()
    assert tallies() == recounted()

    # A visitor's chats adopted at login count as the account's.
    request = RequestFactory().get("/")
    request.session = {VISITOR_KEY: "visitor-1"}  # type: ignore[attr-defined]
    SessionOwner.objects.create(session_id="as-visitor", anonymous_key="visitor-1")
    assert adopt_visitor_sessions(ana, request) == 1
    assert tallies() == recounted()

    # An erase, and a prune of ended sessions and idle conversations.
    ended = timezone.now() - timedelta(days=100)
    Session.objects.filter(id="s-again").update(updated_at=ended, run_statuses="")
    prune(Retention(), pause=-1)
    assert not SessionOwner.objects.filter(session_id="s-again").exists()
    erase(Person(user=ana.pk))
    assert tallies() == recounted() == {}

    # A user deleted with their rows.
    bea = User.objects.create_user("bea")
    SessionOwner.objects.create(session_id="bea-1", user=bea)
    assert tallies() == recounted() != {}
    bea.delete()
    assert tallies() == recounted() == {}


def test_bulk_made_rows_are_counted_and_conflicts_refused() -> None:
    SessionOwner.objects.bulk_create(
        [SessionOwner(session_id=f"b{n}", anonymous_key="v") for n in range(3)]
    )
    assert tallies() == recounted() == {tally_key("sessions", None, "v", ""): 3}
    with pytest.raises(TypeError, match="quota"):
        SessionOwner.objects.bulk_create(
            [SessionOwner(session_id="b0", anonymous_key="v")], ignore_conflicts=True
        )


def test_rows_given_to_a_tenant_take_their_counts_with_them() -> None:
    now = timezone.now()
    SessionOwner.objects.create(session_id="t1", anonymous_key="v")
    Conversation.objects.create(id="c1", anonymous_key="v", created_at=now, updated_at=now)
    call_command("warlock_assign_tenant", "acme", stdout=StringIO())
    assert (
        tallies()
        == recounted()
        == {
            tally_key("sessions", None, "v", "acme"): 1,
            tally_key("conversations", None, "v", "acme"): 1,
        }
    )


def test_a_row_saved_again_or_given_another_owner_counts_once() -> None:
    now = timezone.now()
    Conversation.objects.create(id="c1", anonymous_key="v", created_at=now, updated_at=now)
    Conversation(id="c1", anonymous_key="v", created_at=now, updated_at=now).save()  # an update
    row = Conversation.objects.get(id="c1")
    row.save(update_fields=["updated_at"])
    assert tallies() == recounted() == {tally_key("conversations", None, "v", ""): 1}
    row.anonymous_key = "w"
    row.save()
    Conversation.objects.filter(id="c1").update(anonymous_key="x")
    assert tallies() == recounted() == {tally_key("conversations", None, "x", ""): 1}


class ReadsOnReplica:
    """Reads from the replica, writes to the primary, as a replica router does."""

    def db_for_read(self, model: type, **hints: object) -> str:
        return "replica"

    def db_for_write(self, model: type, **hints: object) -> str:
        return "postgres"


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres", "replica"])
def test_counts_are_written_on_the_primary_however_reads_are_routed() -> None:
    routed = override_settings(DATABASE_ROUTERS=[f"{__name__}.ReadsOnReplica"])
    with routed, CaptureQueriesContext(connections["replica"]) as replica:
        SessionOwner.objects.bulk_create([SessionOwner(session_id="r1", anonymous_key="v")])
        SessionOwner.objects.filter(session_id="r1").update(anonymous_key="w")
        SessionOwner.objects.filter(session_id="r1").delete()
    tallies = OwnerTally.objects.using("postgres")
    assert not tallies.exists()
    assert not [query for query in replica.captured_queries if "tallies" in query["sql"]]


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_deletes_of_one_row_at_once_give_back_one() -> None:
    rows = SessionOwner.objects.using("postgres")
    for n in range(3):
        rows.create(session_id=f"d{n}", anonymous_key="v")
    start = threading.Barrier(8)

    def delete() -> None:
        start.wait()
        try:
            SessionOwner.objects.using("postgres").filter(session_id="d0").delete()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=delete) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    counts = OwnerTally.objects.using("postgres").values_list("count", flat=True)
    assert list(counts) == [rows.count()] == [2]


def test_counters_wrong_after_raw_sql_are_recounted() -> None:
    for n in range(3):
        SessionOwner.objects.create(session_id=f"x{n}", anonymous_key="v")
    SessionOwner.objects.create(session_id="y", anonymous_key="w")
    with connections["default"].cursor() as cursor:  # behind Django's back
        cursor.execute("DELETE FROM warlock_sessions_sessionowner WHERE session_id = 'x0'")
        cursor.execute("DELETE FROM warlock_sessions_sessionowner WHERE session_id = 'y'")
        cursor.execute("DELETE FROM warlock_owner_tallies")
        cursor.execute("INSERT INTO warlock_owner_tallies (key, count) VALUES ('stray', 4)")
    out = StringIO()
    call_command("warlock_recount_quotas", stdout=out)
    assert out.getvalue().strip() == "corrected 2 quota counter(s)"
    assert tallies() == recounted() == {tally_key("sessions", None, "v", ""): 2}
    call_command("warlock_recount_quotas", stdout=out)
    assert out.getvalue().splitlines()[-1] == "corrected 0 quota counter(s)"


@pytest.mark.django_db(transaction=True)
def test_migration_0024_fills_the_buckets_and_counts_the_owners_on_sqlite() -> None:
    from tests.test_distribution_keys import rows_of_the_code_before

    try:
        call_command("migrate", "warlock_sessions", "0019", verbosity=0)
        rows_of_the_code_before("default")
    finally:
        call_command("migrate", "warlock_sessions", verbosity=0)
    for model in (Wake, OutboundMessage):
        rows = model.objects.values_list("session_id", "bucket")
        assert sorted(rows) == [(id, bucket_of(id)) for id in ("old-a", "old-b")]
    assert tallies() == recounted() == {tally_key("sessions", None, "v1", ""): 2}
