"""``READ_REPLICA``: the API's session list and the admin's lists and search read from the
replica's connections; a session's own reads (its page, a turn, its events) and every write,
an admin action's included, stay on the primary. The replica here mirrors the PostgreSQL test
database through connections of its own, so which connection asked is what is checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from tests.snapshots.conftest import needs_postgres
from warlock_sessions.conf import SettingError, warlock_settings
from warlock_sessions.models import Session

pytestmark = [
    needs_postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres", "replica"]),
]
SETTINGS = {
    "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
    "DEFAULT_AGENT": "booking",
    "STORE_OPTIONS": {"using": "postgres"},
    "READ_REPLICA": "replica",
}
ROUTER = f"{__name__}.AllOnPostgres"


class AllOnPostgres:
    """Every app on the ``postgres`` alias (the owners' users beside the sessions)."""

    def db_for_read(self, model: type, **hints: object) -> str:
        return "postgres"

    db_for_write = db_for_read


@pytest.fixture
def staff() -> Iterator[Client]:
    with override_settings(WARLOCK_SESSIONS=SETTINGS, DATABASE_ROUTERS=[ROUTER]):
        client = Client()
        client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
        yield client


def sessions_read(queries: CaptureQueriesContext) -> list[str]:
    return [
        query["sql"] for query in queries.captured_queries if "warlock_sessions_" in query["sql"]
    ]


def turn(client: Client, session_id: str, text: str, message_id: str) -> Any:
    return client.post(
        f"/api/sessions/{session_id}/turn/",
        {"message": {"text": text, "id": message_id}},
        content_type="application/json",
    )


def test_lists_read_the_replica_and_a_sessions_own_reads_the_primary(staff: Client) -> None:
    with CaptureQueriesContext(connections["replica"]) as replica:
        assert turn(staff, "rep-1", "I'd like to book", "m1").status_code == 200
        assert staff.get("/api/sessions/rep-1/").status_code == 200
        assert staff.get("/api/sessions/rep-1/events/").status_code == 200
        assert staff.get("/admin/warlock_sessions/session/rep-1/change/").status_code == 200
    assert sessions_read(replica) == []  # a session's own reads never go to the replica

    with CaptureQueriesContext(connections["replica"]) as replica:
        listed = staff.get("/api/sessions/")
        assert [row["id"] for row in listed.json()["results"]] == ["rep-1"]
        page = staff.get("/admin/warlock_sessions/session/", {"q": "book"})
        assert b"rep-1" in page.content
    assert sessions_read(replica), "the lists read the primary"


def test_an_admin_action_acts_on_the_primary(staff: Client) -> None:
    turn(staff, "rep-2", "I'd like to book", "m1")
    with CaptureQueriesContext(connections["replica"]) as replica:
        staff.post(
            "/admin/warlock_sessions/wake/",
            {"action": "delete_selected", "_selected_action": ["1"]},
        )
        staff.post(
            "/admin/warlock_sessions/session/",
            {"action": "delete_selected", "_selected_action": ["rep-2"], "post": "yes"},
        )
    assert sessions_read(replica) == []
    assert not Session.objects.using("postgres").filter(id="rep-2").exists()  # it acted


def test_a_replica_that_is_not_a_database_alias_is_refused() -> None:
    with (
        override_settings(WARLOCK_SESSIONS={"READ_REPLICA": "nowhere"}),
        pytest.raises(SettingError, match="is not a database alias") as refused,
    ):
        _ = warlock_settings.READ_REPLICA
    assert refused.value.check_id == "warlock_sessions.E028"
