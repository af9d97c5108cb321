"""The distributed tables' primary keys contain the column a distributed PostgreSQL spreads
their rows by (migrations 0020 and 0024), on a live table and back."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connections

from tests.host.conftest import needs_postgres
from tests.partitioned import HOT_TABLES, PRIMARY_KEYS, partitioned
from warlock_sessions.models import (
    OutboundMessage,
    OwnerTally,
    SessionEvent,
    Wake,
    bucket_of,
    bucket_sql,
)
from warlock_sessions.models.quotas import tally_key

pytestmark = [
    needs_postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]


def primary_keys() -> dict[str, list[str]]:
    with connections["postgres"].cursor() as cursor:
        cursor.execute(
            "SELECT c.conrelid::regclass::text, array_agg(a.attname::text ORDER BY k.n) "
            "FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attnum = k.attnum "
            "WHERE c.contype = 'p' AND a.attrelid = c.conrelid "
            "AND c.conrelid::regclass::text = ANY(%s) GROUP BY 1",
            [list(HOT_TABLES)],
        )
        return {table: list(columns) for table, columns in cursor.fetchall()}


def test_each_distributed_table_is_keyed_with_its_distribution_column() -> None:
    assert primary_keys() == PRIMARY_KEYS


@pytest.mark.skipif(partitioned(), reason="a partitioned table cannot be keyed by id alone")
def test_the_keys_go_back_and_forth_with_the_rows_kept() -> None:
    events = SessionEvent.objects.using("postgres")
    events.create(session_id="s1", seq=1, type="message", payload={"text": "hi"})
    try:
        call_command("migrate", "warlock_sessions", "0019", database="postgres", verbosity=0)
        # Every table as it was keyed then (the tallies were not made yet).
        assert primary_keys() == {
            table: ["key" if columns == ["key"] else "id"]
            for table, columns in PRIMARY_KEYS.items()
            if table != "warlock_owner_tallies"
        }
        rows_of_the_code_before()
    finally:
        call_command("migrate", "warlock_sessions", database="postgres", verbosity=0)
    assert primary_keys() == PRIMARY_KEYS
    assert list(events.values_list("session_id", "seq")) == [("s1", 1)]
    # Migration 0024 gave each wake and outbox row its session's bucket, and counted owners.
    for model in (Wake, OutboundMessage):
        rows = model.objects.using("postgres").values_list("session_id", "bucket")
        assert sorted(rows) == [(id, bucket_of(id)) for id in ("old-a", "old-b")]
    tallies = OwnerTally.objects.using("postgres").values_list("key", "count")
    assert dict(tallies) == {tally_key("sessions", None, "v1", ""): 2}


def rows_of_the_code_before(alias: str = "postgres") -> None:
    """Wakes, outbox rows and owners as the code of migration 0019 wrote them."""
    with connections[alias].cursor() as cursor:
        for session_id in ("old-a", "old-b"):
            cursor.execute(
                "INSERT INTO warlock_sessions_wake (key, session_id, attempts, last_error, "
                "created_at, agent, due_at, status) "
                "VALUES ('w', %s, 0, '', CURRENT_TIMESTAMP, '', CURRENT_TIMESTAMP, 'pending')",
                [session_id],
            )
            cursor.execute(
                "INSERT INTO warlock_sessions_outboundmessage (key, session_id, attempts, "
                "last_error, created_at, kind, text, after_ms, payload, status, deliver_after) "
                "VALUES ('m', %s, 0, '', CURRENT_TIMESTAMP, 'ai', 'hi', 0, '{}', 'pending', "
                "CURRENT_TIMESTAMP)",
                [session_id],
            )
            cursor.execute(
                "INSERT INTO warlock_sessions_sessionowner (session_id, anonymous_key, "
                "created_at) VALUES (%s, 'v1', CURRENT_TIMESTAMP)",
                [session_id],
            )


def test_a_citus_database_without_claims_by_bucket_fails_the_checks() -> None:
    from django.core.checks import run_checks
    from django.test import override_settings

    def ids(claim_by_bucket: bool) -> list[str]:
        with override_settings(WARLOCK_SESSIONS={"CLAIM_BY_BUCKET": claim_by_bucket}):
            return [message.id for message in run_checks(databases=["postgres"])]

    assert "warlock_sessions.E035" not in ids(False)  # plain PostgreSQL
    with connections["postgres"].cursor() as cursor:  # what Citus installs, as it names it
        cursor.execute(
            "CREATE FUNCTION citus_version() RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$"
        )
    try:
        assert "warlock_sessions.E035" in ids(False)
        assert "warlock_sessions.E035" not in ids(True)
        with override_settings(WARLOCK_SESSIONS=["not", "a", "dict"]):  # E005's, not a crash
            assert "warlock_sessions.E035" not in [m.id for m in run_checks(databases=["postgres"])]
    finally:
        with connections["postgres"].cursor() as cursor:
            cursor.execute("DROP FUNCTION citus_version()")


def test_the_bucket_in_sql_is_the_bucket_in_python() -> None:
    ids = [f"s{n}" for n in range(500)] + ["", "ação-✓", "a" * 200, "x y/z"]
    with connections["postgres"].cursor() as cursor:
        cursor.execute(f"SELECT id, {bucket_sql('id')} FROM unnest(%s::text[]) AS id", [ids])
        assert dict(cursor.fetchall()) == {id: bucket_of(id) for id in ids}
