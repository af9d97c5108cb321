"""DjangoStore beyond the shared contract: derived columns, agents, outer transactions."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from warlock_sessions.errors import InvalidSessionError, SessionConflictError
from warlock_sessions.models import Session
from warlock_sessions.stores import DjangoStore
from warlock_sessions.testing import run_blob, session_blob
from warlock_sessions.testing.factories import SessionFactory

from .conftest import needs_postgres

pytestmark = pytest.mark.django_db(
    databases=["default", "postgres"] if "postgres" in connections else ["default"]
)


def test_filter_columns_follow_the_runs_on_every_save() -> None:
    store = DjangoStore(agent="support")
    session = store.save(
        session_blob(
            "s1",
            runs=[
                run_blob("triagem", status="asking"),
                run_blob("retomar", status="waiting", step_id="w1"),
            ],
        ),
        0,
    )

    assert list(Session.objects.with_flow("triagem").values_list("id", flat=True)) == ["s1"]
    assert list(Session.objects.with_run_status("waiting").values_list("id", flat=True)) == ["s1"]
    assert not Session.objects.with_flow("triage").exists()  # whole tokens only, no prefixes

    store.save({**session, "runs": [run_blob("funil", status="suspended")]}, 1)

    row = Session.objects.get(id="s1")
    assert (row.run_flows, row.run_statuses, row.agent) == (" funil ", " suspended ", "support")
    assert not Session.objects.with_flow("triagem").exists()


def test_a_session_created_without_an_agent_takes_the_first_one_a_save_names() -> None:
    """A PUT or a direct save creates the row with no agent; the first turn names it, and a
    later save naming another agent does not rename it."""
    session = DjangoStore().save(session_blob("s1"), 0)
    assert Session.objects.get(id="s1").agent == ""
    session = DjangoStore().save(session, 1, agent="booking")
    assert Session.objects.get(id="s1").agent == "booking"
    DjangoStore(agent="other").save(session, 2)
    assert Session.objects.get(id="s1").agent == "booking"


def test_the_model_reads_its_blob_back() -> None:
    row = SessionFactory(runs=[run_blob("bv")])
    assert row.session["runs"][0]["flowId"] == "bv"
    assert DjangoStore().load(row.id) == row.session


def test_an_unreadable_row_raises_instead_of_starting_over() -> None:
    SessionFactory(id="broken", blob='{"v": 3}')
    with pytest.raises(InvalidSessionError, match='"broken" is unreadable: v is 3, expected 4'):
        DjangoStore().load("broken")
    Session.objects.filter(id="broken").update(blob="{not json")
    with pytest.raises(InvalidSessionError, match="not JSON"):
        DjangoStore().load("broken")


@pytest.mark.parametrize("alias", ["default", pytest.param("postgres", marks=needs_postgres)])
def test_a_conflict_inside_an_outer_transaction_leaves_it_usable(alias: str) -> None:
    store = DjangoStore(using=alias)
    store.save(session_blob("s1"), 0)
    with transaction.atomic(using=alias):
        with pytest.raises(SessionConflictError):
            store.save(session_blob("s1"), 0)
        with pytest.raises(SessionConflictError):
            store.save(session_blob("s1"), 5)
        store.save(session_blob("s1", data={"after": "conflicts"}), 1)
    loaded = store.load("s1")
    assert loaded is not None and loaded["data"] == {"after": "conflicts"}


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_a_concurrent_save_waits_for_the_outer_transaction_then_conflicts() -> None:
    store = DjangoStore(using="postgres")
    store.save(session_blob("s1"), 0)
    outcome: list[object] = []
    saved_in_transaction = threading.Event()

    def rival() -> None:
        saved_in_transaction.wait(10)
        try:
            DjangoStore(using="postgres").save(session_blob("s1", data={"rival": True}), 1)
        except SessionConflictError as error:
            outcome.append(error.actual_version)
        finally:
            connections.close_all()

    thread = threading.Thread(target=rival)
    thread.start()
    with transaction.atomic(using="postgres"):
        store.save(session_blob("s1", data={"holder": True}), 1)
        saved_in_transaction.set()
        thread.join(0.5)
        assert thread.is_alive(), "the rival must wait on the row lock until the commit"
    thread.join(10)

    assert outcome == [2]
    loaded = store.load("s1")
    assert loaded is not None and loaded["data"] == {"holder": True}


@pytest.mark.parametrize("alias", ["default", pytest.param("postgres", marks=needs_postgres)])
def test_each_operation_is_one_statement_seen_by_django_instrumentation(alias: str) -> None:
    from django.test.utils import CaptureQueriesContext

    store = DjangoStore(using=alias)
    connection = connections[alias]
    with CaptureQueriesContext(connection) as insert:
        store.save(session_blob("s1"), 0)
    with CaptureQueriesContext(connection) as load:
        store.load("s1")
    with CaptureQueriesContext(connection) as update:
        store.save(session_blob("s1"), 1)
    with CaptureQueriesContext(connection) as conflict, pytest.raises(SessionConflictError):
        store.save(session_blob("s1"), 1)

    assert [len(insert), len(load), len(update), len(conflict)] == [1, 1, 1, 2]
    assert "INSERT" in insert[0]["sql"] and "UPDATE" in update[0]["sql"]


@pytest.mark.parametrize("alias", ["default", pytest.param("postgres", marks=needs_postgres)])
def test_an_execute_wrapper_sees_every_statement(alias: str) -> None:
    """The store's hand-written statements go through Django's cursors: an APM's or a test's
    wrapper sees them."""
    seen: list[str] = []

    def watching(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        seen.append(sql.split()[0])
        return execute(sql, params, many, context)

    store = DjangoStore(using=alias)
    store.save(session_blob("s1"), 0)
    with connections[alias].execute_wrapper(watching):
        store.save(session_blob("s1"), store.load("s1")["version"])  # type: ignore[index]
    assert seen == ["SELECT", "UPDATE"]


@pytest.mark.parametrize("alias", ["default", pytest.param("postgres", marks=needs_postgres)])
def test_a_broken_transaction_is_refused_as_django_refuses_it(alias: str) -> None:
    from django.db import DatabaseError
    from django.db.transaction import TransactionManagementError

    store = DjangoStore(using=alias)
    store.save(session_blob("s1"), 0)
    with transaction.atomic(using=alias):
        with (
            pytest.raises(DatabaseError),
            transaction.atomic(using=alias, savepoint=False),
            connections[alias].cursor() as cursor,
        ):
            cursor.execute("SELECT * FROM no_such_table")  # marks the transaction for rollback
        with pytest.raises(TransactionManagementError):
            store.load("s1")
        with pytest.raises(TransactionManagementError):
            store.save(session_blob("s1"), 1)
