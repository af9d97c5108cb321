"""With the hot tables hash-partitioned by session (``WARLOCK_TEST_PARTITIONED=1``, run by
``make test``), each hot statement of a turn, a wake's fire, a delivery, a log read, a
conversation's send and a checkpoint reads one partition: what Citus would route to one
shard. The claims of due work are the one kind that reads them all (docs/scaling.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from tests.conversations.fakes import FakeAgent
from tests.host.conftest import needs_postgres, timer_agent
from tests.partitioned import HOT_TABLES, partitioned, partitions_scanned
from tests.snapshots.test_checkpoints import row
from warlock_sessions.checkpoints import DjangoCheckpointStore
from warlock_sessions.conversations import DjangoConversationStore, session
from warlock_sessions.host import Host, deliver_due_messages, run_due_wakes
from warlock_sessions.models import SessionEvent, Wake
from warlock_sessions.stores import DjangoStore

pytestmark = [
    needs_postgres,
    pytest.mark.skipif(not partitioned(), reason="runs with WARLOCK_TEST_PARTITIONED=1"),
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]
ALIAS = "postgres"
HOT = re.compile("|".join(re.escape(table) for table in HOT_TABLES))
#: The claims of due work: by status and time, across every session (docs/scaling.md).
CLAIM = re.compile(r'"(?:due_at|deliver_after)" <=|"lease_until" <')


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
    """The statements on a hot table (other than a claim or an insert, which write rows of
    one session) whose plan reads more than one of its partitions."""
    wide = []
    with connections[ALIAS].cursor() as cursor:
        for sql, params in seen:
            verb = sql.lstrip().split(None, 1)[0].upper()
            if not HOT.search(sql) or verb not in ("SELECT", "UPDATE", "DELETE"):
                continue
            if CLAIM.search(sql):
                continue
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            if any(len(parts) > 1 for parts in partitions_scanned(plan).values()):
                wide.append(sql)
    return wide


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
    configured = {
        "AGENTS": {"timer": "tests.host.conftest.timer_agent"},
        "STORE_OPTIONS": {"using": ALIAS},
        "DELIVER": "tests.test_partitioned_plans.deliver",
    }
    with override_settings(WARLOCK_SESSIONS=configured):
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
