"""A run killed mid-step in a real child process resumes in another process from its last
snapshot: the steps before are not run again."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from tests.snapshots.conftest import needs_postgres
from warlock_sessions.snapshots import FileSnapshotStore, SnapshotStore
from warlock_sessions.workflows import Step, StepContext, Workflow


def workflow(store: SnapshotStore, marks: Path, crash: bool | str) -> Workflow:
    """``crash``: the step killed mid-way (``True``: "charge")."""
    crashing = "charge" if crash is True else crash

    def step(name: str) -> Any:
        def run(ctx: StepContext) -> str:
            with open(marks, "a") as handle:
                handle.write(name + "\n")
            if name == crashing:
                os._exit(9)  # killed mid-step: nothing after this line runs
            return name

        return run

    return Workflow(
        "order",
        [Step("reserve", run=step("reserve")), Step("charge", run=step("charge"))],
        store=store,
    )


def crash_in_a_child(make_store: Any, marks: Path, crash: bool | str = True) -> None:
    connections.close_all()  # the child must not share the parent's database connections
    child = multiprocessing.get_context("fork").Process(
        target=lambda: workflow(make_store(), marks, crash=crash).execute(
            run_id="order-1", input={"order": 7}
        )
    )
    child.start()
    child.join(30)
    assert child.exitcode == 9


def test_a_run_killed_mid_step_resumes_from_its_last_snapshot(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    crash_in_a_child(lambda: FileSnapshotStore(tmp_path / "snapshots"), marks)
    resumed = workflow(FileSnapshotStore(tmp_path / "snapshots"), marks, crash=False).resume(
        "order-1"
    )
    assert resumed.status == "completed"
    assert marks.read_text().split() == ["reserve", "charge", "charge"]


def test_a_run_killed_in_its_first_step_resumes_with_its_input(tmp_path: Path) -> None:
    """Nothing was saved before the first step settled: "has no snapshot of run"."""
    marks = tmp_path / "marks"
    crash_in_a_child(lambda: FileSnapshotStore(tmp_path / "snapshots"), marks, crash="reserve")
    store = FileSnapshotStore(tmp_path / "snapshots")
    saved = store.load("order-1")
    assert saved is not None and (saved["status"], saved["next"]) == ("running", "reserve")
    assert saved["input"] == {"order": 7}
    resumed = workflow(store, marks, crash=False).resume("order-1")
    assert resumed.status == "completed"
    assert marks.read_text().split() == ["reserve", "reserve", "charge"]


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_the_same_on_the_django_store_on_postgres(tmp_path: Path) -> None:
    from warlock_sessions.snapshots import DjangoSnapshotStore

    marks = tmp_path / "marks"
    crash_in_a_child(lambda: DjangoSnapshotStore(using="postgres"), marks)
    store = DjangoSnapshotStore(using="postgres")
    saved = store.load_versioned("order-1")
    # Saved when it started, and after its first step.
    assert saved is not None and saved[0]["next"] == "charge" and saved[1] == 2
    resumed = workflow(store, marks, crash=False).resume("order-1")
    assert resumed.status == "completed" and resumed.state == {
        "reserve": "reserve",
        "charge": "charge",
    }
    assert marks.read_text().split() == ["reserve", "charge", "charge"]


def resume_in_child(barrier: Any, results: Any, name: str) -> None:
    from warlock_sessions.errors import SnapshotConflictError
    from warlock_sessions.snapshots import DjangoSnapshotStore

    class Loaded(DjangoSnapshotStore):
        waited = False

        def load_versioned(self, run_id: str) -> Any:
            loaded = super().load_versioned(run_id)
            if not self.waited:  # both processes have loaded the run before either saves
                self.waited = True
                barrier.wait(30)
            return loaded

    flow = Workflow(
        "race",
        [Step("pack", run=lambda ctx: "packed"), Step("ship", run=lambda ctx: name)],
        store=Loaded(using="postgres"),
    )
    try:
        results.put((name, flow.resume("race-1").status))
    except SnapshotConflictError as error:
        results.put((name, f"conflict at version {error.expected_version}"))
    finally:
        connections.close_all()


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_two_processes_resuming_one_run_cannot_both_write() -> None:
    from warlock_sessions.snapshots import DjangoSnapshotStore

    store = DjangoSnapshotStore(using="postgres")
    Workflow(
        "race",
        [Step("pack", run=lambda ctx: "packed"), Step("ship", run=lambda ctx: 1 / 0)],
        store=store,
    ).execute(run_id="race-1")
    connections.close_all()
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    children = [
        context.Process(target=resume_in_child, args=(barrier, results, name))
        for name in ("first", "second")
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    outcomes = sorted(results.get(timeout=5)[1] for _ in children)
    # The failed run was saved four times (at its start, after pack, at the failure, its
    # end): both resumers loaded version 4, and a resume claims the run (saves it under the
    # version it loaded) before it runs anything, so the second to claim runs nothing.
    assert outcomes == ["completed", "conflict at version 4"]
    saved = store.load("race-1")
    assert saved is not None and saved["status"] == "completed"
    assert saved["state"]["ship"] in ("first", "second")


def test_a_supervisor_killed_in_its_first_iteration_resumes_with_its_input(
    tmp_path: Path,
) -> None:
    """Nothing was saved before the first iteration ended: the run could not be resumed."""
    from warlock_sessions.workflows import SUPERVISOR_END, Supervisor, SupervisorContext

    marks = tmp_path / "marks"

    def supervisor(crash: bool) -> Supervisor:
        def work(ctx: SupervisorContext) -> str:
            with open(marks, "a") as handle:
                handle.write(f"work:{ctx.input}\n")
            if crash:
                os._exit(9)
            return "done"

        def route(ctx: SupervisorContext) -> str:
            return SUPERVISOR_END if ctx.state.get("work") else "work"

        return Supervisor(
            "first-iteration",
            route,
            {"work": work},
            store=FileSnapshotStore(tmp_path / "snapshots"),
            registered=False,
        )

    connections.close_all()
    child = multiprocessing.get_context("fork").Process(
        target=lambda: supervisor(crash=True).execute("ticket-9", run_id="sup-1")
    )
    child.start()
    child.join(30)
    assert child.exitcode == 9
    resumed = supervisor(crash=False).resume("sup-1")
    assert resumed.status == "completed" and resumed.state == {"work": "done"}
    assert marks.read_text().split() == ["work:ticket-9", "work:ticket-9"]
