"""With the distributed tables hash-partitioned by their distribution column
(``WARLOCK_TEST_PARTITIONED=1``, run by ``make test``), every hot statement reads and locks
rows of one partition: what Citus routes to one shard. The guard ``EXPLAIN``s each statement a
workload ran on a distributed table: a turn through the API (the first one's claim and quota
included), on the event loop, a wake's fire, a delivery (claimed a bucket at a time), a log
read, a conversation's sends, a checkpoint, a prune, a cached answer's lookup. Statements that
read every shard by design (the admin's lists, search, what a prune selects by age) are named
in :data:`BY_DESIGN`, each as docs/scaling.md names it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from tests.cache.test_stores import entry
from tests.conversations.fakes import FakeAgent
from tests.host.conftest import needs_postgres, timer_agent
from tests.partitioned import HOT_TABLES, partitioned, partitions_scanned
from tests.snapshots.test_checkpoints import row
from tests.test_erasure import Everything
from warlock_sessions.cache import DjangoCacheStore
from warlock_sessions.checkpoints import DjangoCheckpointStore
from warlock_sessions.claims import CLAIM_OUTCOME, _statements, first_claim
from warlock_sessions.conversations import DjangoConversationStore, session
from warlock_sessions.host import Host, deliver_due_messages, run_due_wakes
from warlock_sessions.host.records import FIRST_SEQ, statement_parts
from warlock_sessions.host.retention import Retention, prune
from warlock_sessions.models import Session, SessionEvent, Wake
from warlock_sessions.models.quotas import tally_key
from warlock_sessions.stores import DjangoStore

pytestmark = [
    needs_postgres,
    pytest.mark.skipif(not partitioned(), reason="runs with WARLOCK_TEST_PARTITIONED=1"),
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]
ALIAS = "postgres"
HOT = re.compile("|".join(re.escape(table) for table in HOT_TABLES))
#: The statements that read every shard by design, as docs/scaling.md's "Multi-shard by
#: design" table names them, and what each is known by.
BY_DESIGN = {
    # warlock_prune: the rows the retention policy no longer keeps, found by their age (each
    # then deleted on its own shard: a session at a time, with its records).
    "what warlock_prune selects by age": re.compile(
        r'"(?:updated_at|created_at|saved_at|expires_at)" <'
    ),
    # GET /api/sessions/ and the admin's lists: newest first, by owner, agent, flow, text.
    "the admin's lists, search, GET /api/sessions/": re.compile(
        r'ORDER BY "warlock_sessions_session"\."updated_at" DESC'
    ),
}
DOCS = Path(__file__).resolve().parent.parent / "docs" / "scaling.md"
#: The settings of every workload: the worker claims a bucket at a time, as on Citus.
SETTINGS = {
    "AGENTS": {"timer": "tests.host.conftest.timer_agent"},
    "STORE_OPTIONS": {"using": ALIAS},
    "DELIVER": "tests.test_partitioned_plans.deliver",
    "CLAIM_BY_BUCKET": True,
    "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
    "MAX_SESSIONS_PER_OWNER": 5,
    "MAX_CONVERSATIONS_PER_OWNER": 5,
}


def deliver(message: Any) -> None:
    """Messages go nowhere: what is measured is the outbox's own statements."""


@contextmanager
def statements() -> Iterator[list[tuple[str, Any]]]:
    """Every statement run on the PostgreSQL alias meanwhile, with its parameters."""
    seen: list[tuple[str, Any]] = []

    def note(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connections[ALIAS].execute_wrapper(note):
        yield seen


def wide_reads(seen: list[tuple[str, Any]]) -> list[str]:
    """The statements on a distributed table whose plan reads (and so may lock or change)
    rows of more than one of its partitions, but those :data:`BY_DESIGN`. (An insert's rows
    go where their own values say: each workload's name one session, bucket or scope.)"""
    wide = []
    for sql, params in seen:
        verb = sql.lstrip().split(None, 1)[0].upper()
        if not HOT.search(sql) or verb not in ("SELECT", "UPDATE", "DELETE", "WITH"):
            continue
        exempt = "FOR UPDATE" not in sql and any(known.search(sql) for known in BY_DESIGN.values())
        if not exempt and reads_several(sql, params):
            wide.append(sql)
    return wide


def reads_several(sql: str, params: Any) -> bool:
    """Whether ``sql``'s plan reads more than one partition of a distributed table."""
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return any(len(parts) > 1 for parts in partitions_scanned(plan).values())


def test_the_tables_are_partitioned_by_their_distribution_column() -> None:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_partkeydef(c.oid) FROM pg_partitioned_table p "
            "JOIN pg_class c ON c.oid = p.partrelid"
        )
        keys = dict(cursor.fetchall())
    assert keys == {table: f"HASH ({column})" for table, column in HOT_TABLES.items()}


def test_a_turn_a_wake_a_delivery_and_a_log_read_each_read_one_partition() -> None:
    host = Host(timer_agent(), DjangoStore(using=ALIAS))
    with override_settings(WARLOCK_SESSIONS=SETTINGS):
        with statements() as turns:
            host.handle("plans-1", {"start": {"flow": "lembrete", "key": "k1"}})
            host.handle("plans-1", {"message": {"text": "hi", "id": "m1"}})
        Wake.objects.using(ALIAS).update(due_at=timezone.now())  # due now, not in 2 s
        with statements() as work:
            assert run_due_wakes(10, using=ALIAS) == 1
            assert deliver_due_messages(10, using=ALIAS) >= 1
            assert list(
                SessionEvent.objects.using(ALIAS).filter(session_id="plans-1", seq__gt=0)[:50]
            )
    assert turns and work
    assert wide_reads(turns) == []
    assert wide_reads(work) == [], "\n".join(wide_reads(work))


def test_a_conversation_and_a_checkpoint_each_read_one_partition() -> None:
    with statements() as seen:
        chat = session("plans-c", DjangoConversationStore(using=ALIAS), FakeAgent())
        chat.send("hello")
        chat.send("again")
        assert len(chat.history()) >= 2
        checkpoints = DjangoCheckpointStore(using=ALIAS)
        checkpoints.save(row("o", "plans-k", 0))
        checkpoints.save(row("o", "plans-k", 1))
        assert checkpoints.load("o", "plans-k")
    assert seen and wide_reads(seen) == []


@pytest.fixture
def on_postgres() -> Iterator[None]:
    """Every model on the PostgreSQL alias (the API's too), with the workloads' settings."""
    Everything.alias = ALIAS
    with override_settings(
        DATABASE_ROUTERS=["tests.test_erasure.Everything"], WARLOCK_SESSIONS=SETTINGS
    ):
        yield
    Everything.alias = "default"
    connections.close_all()


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_a_quota_and_a_prune_each_read_one_partition(on_postgres: None) -> None:
    ana = client_of(User.objects.db_manager(ALIAS).create_user("ana"))
    staff = client_of(User.objects.db_manager(ALIAS).create_superuser("boss"))
    message = {"message": {"text": "hi", "id": "m1"}}
    with statements() as seen:
        # A new session's first turn (its claim, counted on the owner's tally), the next one,
        # its log; a new conversation's first send (the same), its history; deletes.
        assert ana.post("/api/sessions/plans-a/turn/", message, format="json").status_code == 200
        message["message"]["id"] = "m2"
        assert ana.post("/api/sessions/plans-a/turn/", message, format="json").status_code == 200
        assert ana.get("/api/sessions/plans-a/events/").status_code == 200
        sent = ana.post("/api/conversations/plans-c/send/", {"input": "hi"}, format="json")
        assert sent.status_code == 200
        assert ana.get("/api/conversations/plans-c/history/").status_code == 200
        assert staff.delete("/api/conversations/plans-c/").status_code == 204
        assert ana.get("/api/sessions/").status_code == 200
        assert staff.get("/api/sessions/", {"search": "hi"}).status_code == 200
        assert staff.delete("/api/sessions/plans-a/").status_code == 204
    assert seen and wide_reads(seen) == [], "\n".join(wide_reads(seen))

    Host(timer_agent(), DjangoStore(using=ALIAS)).handle(
        "plans-ended", {"message": {"text": "hi", "id": "m1"}}
    )
    Session.objects.using(ALIAS).filter(id="plans-ended").update(
        run_statuses="", updated_at=timezone.now() - timedelta(days=400)
    )
    with statements() as pruned:
        assert prune(Retention(), pause=-1)["sessions"] == 1
    assert pruned and wide_reads(pruned) == [], "\n".join(wide_reads(pruned))


def test_the_event_loops_claim_and_usage_each_read_one_partition() -> None:
    """The loop's statements (``claims``), which no Django cursor runs: ``EXPLAIN``ed as sent."""
    sql = _statements(ALIAS, False)
    now = timezone.now()
    tally = tally_key("sessions", None, "visitor", "")
    claim = ["plans-l"] * 3 + [tally, 5, 5, "plans-l", None, "visitor", now]
    assert not reads_several(f"WITH {sql['claim']} SELECT {CLAIM_OUTCOME}", claim)
    assert not reads_several(sql["usage"], ["plans-l"] * 2)


def test_a_first_turn_with_its_claim_reads_one_partition() -> None:
    """The claim, the quota's count, the new session and its records in one statement
    (``Host.ahandle_first``), ``EXPLAIN``ed as the event loop sends it."""
    host = Host(timer_agent(), DjangoStore(using=ALIAS))
    said = {"message": {"text": "I'd like to book", "id": "m1"}}
    hosted = host._compute("plans-f", None, said, None, {})
    changes = host._records("plans-f", hosted, 0, said)
    parts, params = statement_parts(changes, ALIAS)
    owner = {"user_id": None, "anonymous_key": "visitor"}
    combined = host.store.combined_save(
        hosted.session,
        0,
        parts,
        params,
        FIRST_SEQ,
        condition=first_claim("plans-f", owner, ALIAS, 5),
    )
    assert "claimed" in combined.statement and changes.messages
    assert not reads_several(combined.statement, combined.values)


def test_a_cached_answer_is_stored_and_found_on_one_partition() -> None:
    store = DjangoCacheStore(using=ALIAS)
    with statements() as seen:
        store.put(entry("k1", [1, 0, 0], scope="conversation:plans"))
        store.put(entry("k1", [0, 1, 0], scope="conversation:plans"))  # replaced
        assert store.get("ns", "conversation:plans", "k1") is not None
        assert store.similar("ns", "conversation:plans", [0, 1, 0])
        assert store.forget_scope("conversation:plans") == 1
    assert seen and wide_reads(seen) == [], "\n".join(wide_reads(seen))


def test_the_worker_claims_every_bucket_at_once_only_on_one_database() -> None:
    """Without ``CLAIM_BY_BUCKET`` a claim reads every partition: what one PostgreSQL does
    best, and what the page says not to run on Citus."""
    configured = {**SETTINGS, "CLAIM_BY_BUCKET": False}
    with override_settings(WARLOCK_SESSIONS=configured), statements() as seen:
        assert run_due_wakes(10, using=ALIAS) == 0
    claims = [(sql, params) for sql, params in seen if "SKIP LOCKED" in sql]
    assert claims and all(reads_several(sql, params) for sql, params in claims)


def test_what_reads_every_shard_by_design_is_what_the_page_says() -> None:
    page = DOCS.read_text()
    for name in BY_DESIGN:
        assert f"| {name} |" in page, name
