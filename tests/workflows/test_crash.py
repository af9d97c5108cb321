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


def workflow(store: SnapshotStore, marks: Path, crash: bool) -> Workflow:
    def step(name: str) -> Any:
        def run(ctx: StepContext) -> str:
            with open(marks, "a") as handle:
                handle.write(name + "\n")
            if name == "charge" and crash:
                os._exit(9)  # killed mid-step: nothing after this line runs
            return name

        return run

    return Workflow(
        "order",
        [Step("reserve", run=step("reserve")), Step("charge", run=step("charge"))],
        store=store,
    )


def crash_in_a_child(make_store: Any, marks: Path) -> None:
    connections.close_all()  # the child must not share the parent's database connections
    child = multiprocessing.get_context("fork").Process(
        target=lambda: workflow(make_store(), marks, crash=True).execute(run_id="order-1")
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


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_the_same_on_the_django_store_on_postgres(tmp_path: Path) -> None:
    from warlock_sessions.snapshots import DjangoSnapshotStore

    marks = tmp_path / "marks"
    crash_in_a_child(lambda: DjangoSnapshotStore(using="postgres"), marks)
    store = DjangoSnapshotStore(using="postgres")
    saved = store.load_versioned("order-1")
    assert saved is not None and saved[0]["next"] == "charge" and saved[1] == 1
    resumed = workflow(store, marks, crash=False).resume("order-1")
    assert resumed.status == "completed" and resumed.state == {
        "reserve": "reserve",
        "charge": "charge",
    }
    assert marks.read_text().split() == ["reserve", "charge", "charge"]
