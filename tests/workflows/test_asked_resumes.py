"""Resumes asked for in the admin are done by a worker: each asked run once, whoever many
workers look; an ask the worker cannot do is kept as failed with why; a worker that died
mid-resume is taken over once the run has saved nothing for a lease."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from tests.snapshots.conftest import needs_postgres
from warlock_sessions.models import Snapshot
from warlock_sessions.snapshots import DjangoSnapshotStore
from warlock_sessions.workflows import Step, StepContext, Workflow
from warlock_sessions.workflows.resumes import ask_resume, run_asked_resumes

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "postgres"])


@pytest.fixture(params=["default", pytest.param("postgres", marks=needs_postgres)])
def store(request: pytest.FixtureRequest) -> Iterator[DjangoSnapshotStore]:
    """The snapshot store on SQLite, then on PostgreSQL; ``ask_resume`` and the worker's
    pass use the database it names (``using=``)."""
    with override_settings(
        WARLOCK_SESSIONS={
            "SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore",
            "SNAPSHOT_STORE_OPTIONS": {"using": request.param},
        }
    ):
        yield DjangoSnapshotStore(using=request.param)


def halted_order(name: str, shipped: list[str]) -> tuple[Workflow, dict[str, bool]]:
    """A workflow whose second step fails until told not to: its run halts there."""
    carrier = {"down": True}

    def ship(ctx: StepContext) -> str:
        if carrier["down"]:
            raise ConnectionError("carrier down")
        shipped.append(ctx.run_id)
        return "shipped"

    return Workflow(name, [Step("pack", run=lambda ctx: 1), Step("ship", run=ship)]), carrier


def resuming(
    using: str, key: str, *, by: str = "w", started: str | None = None, saved_at: Any = None
) -> None:
    """``key`` as worker ``by`` left it: resuming since ``started`` (now, by default), the run
    last saved at ``saved_at`` (left as it is, by default)."""
    ask = {"status": "resuming", "by": by, "askedAt": "2020-01-01T00:00:00.000Z"}
    fields: dict[str, Any] = {"resume": {**ask, "startedAt": started or timezone.now().isoformat()}}
    if saved_at is not None:
        fields["saved_at"] = saved_at
    Snapshot.objects.using(using).filter(key=key).update(**fields)


def ask(key: str, using: str) -> dict[str, Any]:
    resume = Snapshot.objects.using(using).get(key=key).resume
    assert resume is None or isinstance(resume, dict)
    return resume or {}


def test_an_asked_run_is_resumed_once_and_its_ask_cleared(store: DjangoSnapshotStore) -> None:
    db = store.using
    shipped: list[str] = []
    workflow, carrier = halted_order("asked-order", shipped)
    workflow.execute(run_id="o-1")
    carrier["down"] = False
    assert ask_resume("o-1", using=db, by="root") == "queued"
    assert ask("o-1", db)["status"] == "queued" and ask("o-1", db)["by"] == "root"
    assert store.load("o-1")["status"] == "failed"  # type: ignore[index] (not in the request)
    assert run_asked_resumes(using=db) == 1
    assert store.load("o-1")["status"] == "completed"  # type: ignore[index]
    assert Snapshot.objects.using(db).get(key="o-1").resume is None
    assert run_asked_resumes(using=db) == 0 and shipped == ["o-1"]
    assert ask_resume("nothing-saved", using=db, by="root") is None


def test_two_workers_never_both_resume_one_run(store: DjangoSnapshotStore) -> None:
    db = store.using
    shipped: list[str] = []
    workflow, carrier = halted_order("raced-order", shipped)
    for key in ("r-1", "r-2", "r-3"):
        workflow.execute(run_id=key)
        ask_resume(key, by="root", using=db)
    carrier["down"] = False
    start = threading.Barrier(2)
    taken: list[int] = []

    def worker() -> None:
        try:
            start.wait(5)
            taken.append(run_asked_resumes(using=db))
        finally:
            connections[db].close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sum(taken) == 3 and sorted(shipped) == ["r-1", "r-2", "r-3"]
    assert not Snapshot.objects.using(db).filter(resume__isnull=False).exists()


def test_an_ask_the_worker_cannot_do_is_kept_as_failed_with_why(
    store: DjangoSnapshotStore,
) -> None:
    db = store.using
    store.save({"runId": "unknown-1", "workflowName": "not-loaded", "status": "running"})
    shipped: list[str] = []
    workflow, _ = halted_order("cancelled-order", shipped)
    workflow.execute(run_id="c-1")
    store.save({**store.load("c-1"), "status": "cancelled"})  # type: ignore[dict-item]
    ask_resume("unknown-1", using=db, by="root")
    ask_resume("c-1", using=db, by="root")  # not forced: a cancelled run stays cancelled
    assert run_asked_resumes(using=db) == 2
    assert ask("unknown-1", db)["status"] == "failed"
    assert (
        "no workflow or supervisor of that name is loaded in the worker"
        in ask("unknown-1", db)["error"]
    )
    assert ask("c-1", db)["status"] == "failed" and "cancelled" in ask("c-1", db)["error"]
    assert store.load("c-1")["status"] == "cancelled"  # type: ignore[index]
    assert run_asked_resumes(using=db) == 0  # a failed ask is not tried again by itself...
    ask_resume("c-1", using=db, by="root", force=True)  # ...but may be asked again
    assert run_asked_resumes(using=db) == 1 and shipped == []  # its ship step fails again
    assert Snapshot.objects.using(db).get(key="c-1").resume is None


def test_a_resume_left_by_a_dead_worker_is_taken_over_after_a_lease(
    store: DjangoSnapshotStore,
) -> None:
    db = store.using
    shipped: list[str] = []
    workflow, carrier = halted_order("abandoned-order", shipped)
    workflow.execute(run_id="a-1")
    workflow.execute(run_id="a-2")
    carrier["down"] = False
    long_ago = timezone.now() - timedelta(minutes=5)  # LEASE_SECONDS is a minute
    for key, started in (("a-1", "2020-01-01T00:00:00.000Z"), ("a-2", None)):
        resuming(db, key, by="root", started=started, saved_at=long_ago)
    assert run_asked_resumes(using=db) == 1  # a-1's worker is gone; a-2's started a moment ago
    assert shipped == ["a-1"] and ask("a-2", db)["status"] == "resuming"


def test_an_ask_while_a_worker_resumes_the_run_is_not_queued_beside_it(
    store: DjangoSnapshotStore,
) -> None:
    """Asking again while a worker resumed the run queued a second ask, which a second
    worker then claimed: two resumes of one run at once."""
    db = store.using
    workflow, _ = halted_order("busy-order", [])
    workflow.execute(run_id="b-1")
    resuming(db, "b-1")
    assert ask_resume("b-1", using=db, by="root") == "resuming"
    assert ask("b-1", db)["status"] == "resuming" and ask("b-1", db)["by"] == "w"
    assert run_asked_resumes(using=db) == 0  # its worker is alive: nobody takes it


def test_a_cancel_after_a_forced_ask_wins(store: DjangoSnapshotStore) -> None:
    """A force-resume queued before a cancel ran the cancelled run on."""
    from warlock_sessions.workflows.runs import cancel_saved

    db = store.using
    shipped: list[str] = []
    workflow, carrier = halted_order("changed-mind-order", shipped)
    workflow.execute(run_id="m-1")
    carrier["down"] = False
    store.save({**store.load("m-1"), "status": "running"})  # type: ignore[dict-item]
    ask_resume("m-1", using=db, by="root", force=True)
    cancel_saved(store, "m-1", "changed my mind")
    assert run_asked_resumes(using=db) == 1
    assert shipped == [] and store.load("m-1")["status"] == "cancelled"  # type: ignore[index]
    assert "cancelled after this resume was asked" in ask("m-1", db)["error"]
    ask_resume("m-1", using=db, by="root", force=True)  # asked after the cancel: it runs on
    assert run_asked_resumes(using=db) == 1 and shipped == ["m-1"]


def test_failed_asks_never_crowd_out_queued_ones(store: DjangoSnapshotStore) -> None:
    """The pass read the oldest asks of any kind, limit * 4 of them: that many failed ones
    starved every queued ask behind them."""
    db = store.using
    shipped: list[str] = []
    workflow, carrier = halted_order("crowded-order", shipped)
    for number in range(9):
        workflow.execute(run_id=f"f-{number}")
    workflow.execute(run_id="q-1")
    carrier["down"] = False
    failed = {"status": "failed", "by": "root", "askedAt": "2020-01-01T00:00:00.000Z"}
    Snapshot.objects.using(db).filter(key__startswith="f-").update(
        resume=failed, saved_at=timezone.now() - timedelta(days=1)
    )
    ask_resume("q-1", using=db, by="root")
    assert run_asked_resumes(limit=2, using=db) == 1 and shipped == ["q-1"]


@needs_postgres
def test_the_worker_finds_the_asks_with_the_snapshots_whatever_its_database() -> None:
    """``warlock_worker --database`` named where the sessions are, and the pass looked for
    the asks there, not with the snapshots."""
    from django.core.management import call_command

    shipped: list[str] = []
    with override_settings(
        WARLOCK_SESSIONS={
            "SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore",
            "SNAPSHOT_STORE_OPTIONS": {"using": "postgres"},
        }
    ):
        workflow, carrier = halted_order("elsewhere-order", shipped)
        workflow.execute(run_id="e-1")
        carrier["down"] = False
        ask_resume("e-1", by="root")  # on the snapshot store's database
        assert ask("e-1", "postgres")["status"] == "queued"
        call_command("warlock_worker", "--once", "--database", "default", verbosity=0)
    assert shipped == ["e-1"]


def test_an_ask_left_by_a_dead_worker_may_be_asked_again(store: DjangoSnapshotStore) -> None:
    db = store.using
    workflow, _ = halted_order("dead-worker-order", [])
    workflow.execute(run_id="d-1")
    resuming(
        db,
        "d-1",
        started="2020-01-01T00:00:00.000Z",
        saved_at=timezone.now() - timedelta(minutes=5),
    )
    assert ask_resume("d-1", using=db, by="root", force=True) == "queued"
    assert ask("d-1", db)["force"] is True
