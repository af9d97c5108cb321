"""Per-owner quotas hold under concurrency: the count and the insert are one decision (the
owner's tally row, ``models.quotas``). Counted then inserted, 12 conversations were made under
a quota of 5 by requests at once, and 9 of 30 sessions under a quota of 5."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import override_settings
from rest_framework.test import APIClient

from tests.host.conftest import ALIASES
from tests.test_erasure import Everything
from warlock_sessions.models import Conversation, OwnerTally, SessionOwner

QUOTA = 5
SETTINGS = {
    "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
    "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
    "MAX_SESSIONS_PER_OWNER": QUOTA,
    "MAX_CONVERSATIONS_PER_OWNER": QUOTA,
}


@pytest.fixture(params=ALIASES)
def alias(request: pytest.FixtureRequest) -> Iterator[str]:
    Everything.alias = request.param
    with override_settings(
        DATABASE_ROUTERS=["tests.test_erasure.Everything"],
        WARLOCK_SESSIONS={**SETTINGS, "STORE_OPTIONS": {"using": request.param}},
    ):
        yield request.param
    Everything.alias = "default"
    connections.close_all()


def at_once(count: int, request: Any) -> list[int]:
    """``request(index)`` from ``count`` threads released together: their statuses."""
    start = threading.Barrier(count)
    statuses: list[int] = [0] * count

    def run(index: int) -> None:
        start.wait()
        try:
            statuses[index] = request(index)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return statuses


def client_of(alias: str) -> APIClient:
    user = User.objects.db_manager(alias).create_user("ana")
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_thirty_sessions_at_once_stop_at_the_quota(alias: str) -> None:
    client = client_of(alias)
    statuses = at_once(
        30,
        lambda index: (
            client.post(
                f"/api/sessions/s-{index}/turn/",
                {"message": {"text": "hi", "id": "m1"}},
                format="json",
            ).status_code
        ),
    )
    assert sorted(set(statuses)) == [200, 403], statuses
    assert statuses.count(200) == QUOTA
    assert SessionOwner.objects.using(alias).count() == QUOTA
    assert list(OwnerTally.objects.using(alias).values_list("count", flat=True)) == [QUOTA]


def test_twelve_conversations_at_once_stop_at_the_quota(alias: str) -> None:
    client = client_of(alias)
    statuses = at_once(
        12,
        lambda index: (
            client.post(
                f"/api/conversations/c-{index}/send/", {"input": "hi"}, format="json"
            ).status_code
        ),
    )
    assert statuses.count(200) == QUOTA, statuses
    assert Conversation.objects.using(alias).count() == QUOTA
    assert list(OwnerTally.objects.using(alias).values_list("count", flat=True)) == [QUOTA]
