"""The hot statements' plans on seeded PostgreSQL tables: none reads a large table whole.

The tables are small enough for CI (20,000 sessions, 100,000 log entries, 20,000 wakes, 40,000
outbox rows) and large enough that the planner prefers an index wherever one serves; the
full-size run is bench/scale.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections
from django.db.models import Q, QuerySet
from django.utils import timezone

from warlock_sessions.models import OutboundMessage, Session, SessionEvent, Wake, bucket_sql

from .conftest import needs_postgres

pytestmark = [needs_postgres, pytest.mark.django_db(databases=["postgres"])]

SESSIONS, EVENTS, WAKES, OUTBOX = 20_000, 100_000, 20_000, 40_000


#: A row's bucket in SQL, for session ``'s' || g``.
BUCKET = bucket_sql("'s' || g")


@pytest.fixture
def seeded() -> None:
    with connections["postgres"].cursor() as cursor:
        cursor.execute(
            "INSERT INTO warlock_sessions_session (id, version, agent, blob, run_flows, "
            "run_statuses, search_text, created_at, updated_at) SELECT 's' || g, 1, "
            "(ARRAY['booking', 'support', 'sales'])[g %% 3 + 1], '{}', "
            "(ARRAY[' booking ', ' reminder ', '', ' support ', ''])[g %% 5 + 1], "
            "(ARRAY[' asking ', ' waiting ', '', ' running ', ''])[g %% 5 + 1], "
            "'user ' || g || '@example.com', now() - g * interval '1 second', "
            "now() - g * interval '1 second' FROM generate_series(1, %s) AS g",
            [SESSIONS],
        )
        cursor.execute(
            "INSERT INTO warlock_sessions_sessionevent (session_id, seq, type, payload, "
            "created_at) SELECT 's' || (g %% %s + 1), g / %s + 1, 'message', '{}', now() "
            "FROM generate_series(1, %s) AS g",
            [SESSIONS, SESSIONS, EVENTS],
        )
        cursor.execute(
            "INSERT INTO warlock_sessions_wake (key, session_id, bucket, attempts, last_error, "
            f"created_at, agent, due_at, status) SELECT 'w' || g, 's' || g, {BUCKET}, 0, '', "
            "now(), '', "
            "CASE WHEN g %% 100 = 0 THEN now() - interval '1 minute' "
            "ELSE now() + interval '1 day' END, 'pending' FROM generate_series(1, %s) AS g",
            [WAKES],
        )
        cursor.execute(
            "INSERT INTO warlock_sessions_outboundmessage (key, session_id, bucket, attempts, "
            "last_error, created_at, kind, text, after_ms, payload, status, deliver_after) "
            f"SELECT 'o' || g, 's' || g, {BUCKET}, 0, '', now(), 'ai', 'hi', 0, '{{}}', "
            "CASE WHEN g %% 20 = 0 THEN 'pending' ELSE 'delivered' END, now() "
            "FROM generate_series(1, %s) AS g",
            [OUTBOX],
        )
        for model in (Session, SessionEvent, Wake, OutboundMessage):
            cursor.execute(f"ANALYZE {model._meta.db_table}")


def due(model: type[Any], field: str, bucket: int | None = None) -> QuerySet[Any]:
    """The rows a worker claims (``host.worker.claim``), as it asks for them (of one bucket,
    with ``CLAIM_BY_BUCKET``)."""
    now = timezone.now()
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    pending = Q(status="pending", **{f"{field}__lte": now}) & free
    if bucket is not None:
        pending &= Q(bucket__in=[bucket])
    return model.objects.using("postgres").filter(pending).order_by(field, "pk")[:100]


def sessions() -> Any:
    return Session.objects.using("postgres")


HOT: dict[str, Callable[[], QuerySet[Any]]] = {
    "load": lambda: sessions().filter(id="s42"),
    "log after a seq": lambda: (
        SessionEvent.objects.using("postgres")
        .filter(session_id="s42", seq__gt=2)
        .order_by("seq")[:500]
    ),
    "due wakes": lambda: due(Wake, "due_at"),
    "due outbox": lambda: due(OutboundMessage, "deliver_after"),
    "due wakes of a bucket": lambda: due(Wake, "due_at", bucket=7),
    "due outbox of a bucket": lambda: due(OutboundMessage, "deliver_after", bucket=7),
    "list by agent": lambda: sessions().filter(agent="sales").order_by("-updated_at", "id")[:51],
    "list by flow": lambda: sessions().with_flow("reminder").order_by("-updated_at", "id")[:51],
    "list by run status": lambda: (
        sessions().with_run_status("waiting").order_by("-updated_at", "id")[:51]
    ),
    "list updated after": lambda: (
        sessions()
        .filter(updated_at__gte=timezone.now() - timezone.timedelta(minutes=5))
        .order_by("-updated_at", "id")[:51]
    ),
    "search by data": lambda: sessions().saying("user 4242@example"),
}
LARGE = [model._meta.db_table for model in (Session, SessionEvent, Wake, OutboundMessage)]


@pytest.mark.parametrize("name", HOT)
def test_no_hot_statement_reads_a_large_table_whole(seeded: None, name: str) -> None:
    plan = HOT[name]().explain(analyze=True, buffers=True)
    scans = [table for table in LARGE if f"Seq Scan on {table}" in plan]
    assert not scans, plan
