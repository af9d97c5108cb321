"""What a review of the durable runs found, each held by a test: reused run ids, stuck
orchestrator sessions, a failed parallel group's leftovers, failing routes, a finished run's
skipped steps, and snapshots inside a transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from warlock_sessions.checkpoints import MemoryCheckpointStore
from warlock_sessions.errors import WorkflowError
from warlock_sessions.snapshots import MemorySnapshotStore
from warlock_sessions.workflows import (
    SUPERVISOR_END,
    Step,
    StepContext,
    Supervisor,
    SupervisorContext,
    Workflow,
)
from warlock_sessions.workflows.orchestrator import Orchestrator


def test_a_run_id_in_use_is_refused_before_anything_runs() -> None:
    store = MemorySnapshotStore()
    calls: list[str] = []
    workflow = Workflow("wf", [Step("a", run=lambda ctx: calls.append("a"))], store=store)
    workflow.execute(run_id="r")
    with pytest.raises(WorkflowError, match='already has a run "r"'):
        workflow.execute(run_id="r")
    assert calls == ["a"]
    supervisor = Supervisor("s", lambda ctx: SUPERVISOR_END, {"x": lambda ctx: 1}, store=store)
    supervisor.execute(run_id="q")
    with pytest.raises(Exception, match='already has a run "q"'):
        supervisor.execute(run_id="q")


def flaky_orchestrator(checkpoints: Any, snapshots: Any, broken: dict[str, bool]) -> Orchestrator:
    def count(ctx: SupervisorContext) -> int:
        if broken["now"]:
            raise ConnectionError("down")
        return int(ctx.state.get("count", 0)) + 1

    return Orchestrator(
        "flaky",
        {"count": count},
        route=lambda ctx: "count" if ctx.iteration == 0 else SUPERVISOR_END,
        iterate=True,
        checkpoint_store=checkpoints,
        snapshot_store=snapshots,
    )


def test_a_failed_iterate_turn_does_not_block_the_session() -> None:
    checkpoints, snapshots, broken = MemoryCheckpointStore(), MemorySnapshotStore(), {"now": True}
    orchestrator = flaky_orchestrator(checkpoints, snapshots, broken)
    assert orchestrator.turn("s", "first").status == "failed"
    broken["now"] = False
    done = orchestrator.turn("s", "again")
    assert (done.status, done.turn_index, done.state) == ("completed", 0, {"count": 1})
    assert orchestrator.turn("s", "third").turn_index == 1


def test_a_turn_that_ended_unrecorded_is_recorded_before_the_next() -> None:
    checkpoints, snapshots = MemoryCheckpointStore(), MemorySnapshotStore()
    orchestrator = flaky_orchestrator(checkpoints, snapshots, {"now": False})
    orchestrator.turn("s", "first")
    # A process that died between its supervisor's last save and the checkpoint:
    orchestrator.supervisor.execute(
        "second", run_id=orchestrator.run_id("s", 1), state={"count": 1}
    )
    next_turn = orchestrator.turn("s", "third")
    assert next_turn.turn_index == 2 and next_turn.state == {"count": 3}
    recorded = checkpoints.load("flaky", "s")
    assert recorded is not None and recorded["turn_index"] == 2


def test_the_drain_goes_on_past_a_session_it_cannot_settle() -> None:
    checkpoints, snapshots = MemoryCheckpointStore(), MemorySnapshotStore()
    orchestrator = flaky_orchestrator(checkpoints, snapshots, {"now": False})
    for session in ("a", "b", "c"):
        orchestrator.turn(session, "x")
    drifted = checkpoints.load("flaky", "b")
    assert drifted is not None
    checkpoints.save({**drifted, "turn_index": 1, "signature": "00000000"})
    snapshots.save(
        {
            "runId": orchestrator.run_id("c", 1),
            "supervisorName": "flaky",
            "orchestratorName": "flaky",
            "sessionId": "c",
            "turnIndex": 1,
            "signature": orchestrator.supervisor.signature,
            "input": "x",
            "initialState": {"count": 1},
            "iteration": -1,
            "snapshots": [],
            "status": "running",
            "startedAt": "2026-12-01T00:00:00.000Z",
        }
    )
    finished = orchestrator.drain()
    assert [(turn.session_id, turn.turn_index) for turn in finished] == [("c", 1)]


def test_a_failed_parallel_group_keeps_nothing_and_resume_runs_it_once_more() -> None:
    store = MemorySnapshotStore()
    failures = {"flaky": 1}

    def inc(ctx: StepContext) -> None:
        ctx.state["count"] = ctx.state.get("count", 0) + 1

    def flaky(ctx: StepContext) -> None:
        if failures["flaky"]:
            failures["flaky"] -= 1
            raise ConnectionError("once")

    workflow = Workflow(
        "wf", [Step("g", parallel=[Step("inc", run=inc), Step("flaky", run=flaky)])], store=store
    )
    assert workflow.execute(run_id="r").state == {}
    assert workflow.resume("r").state == {"count": 1}
    with pytest.raises(ValueError, match="cannot hold a group"):
        Step("outer", parallel=[Step("inner", parallel=[])])


def test_failing_routes_fail_the_run_with_its_snapshot() -> None:
    store = MemorySnapshotStore()
    bad_route = Workflow(
        "wf1", [Step("a", run=lambda ctx: 1 / 0, on_failure=lambda e, ctx: "nowhere")], store=store
    )
    result = bad_route.execute(run_id="r1")
    assert result.status == "failed" and "unknown step" in str(result.error)
    saved = store.load("r1")
    assert saved is not None and (saved["status"], saved["next"]) == ("failed", "a")

    calls: list[str] = []
    raising_next = Workflow(
        "wf2",
        [
            Step("a", run=lambda ctx: calls.append("a"), next=lambda ctx: 1 / 0),
            Step("b", run=lambda ctx: calls.append("b")),
        ],
        store=store,
    )
    assert raising_next.execute(run_id="r2").status == "failed"
    assert raising_next.resume("r2").status == "completed"
    assert calls == ["a", "b"]  # a did not run again


def test_a_run_that_reached_its_end_does_not_run_skipped_steps_on_resume() -> None:
    store = MemorySnapshotStore()
    calls: list[str] = []
    workflow = Workflow(
        "wf",
        [
            Step("a", run=lambda ctx: calls.append("a"), next=lambda ctx: "end"),
            Step("b", run=lambda ctx: calls.append("b")),
        ],
        store=store,
    )
    store.save(
        {
            "runId": "r",
            "workflowName": "wf",
            "signature": workflow.signature,
            "input": None,
            "state": {},
            "next": None,
            "status": "running",
            "steps": {"a": {"status": "completed"}},
            "startedAt": "2026-12-01T00:00:00.000Z",
        }
    )
    assert workflow.resume("r").status == "completed" and calls == []


@pytest.mark.django_db
def test_snapshots_are_never_saved_inside_a_transaction() -> None:
    from warlock_sessions.snapshots import DjangoSnapshotStore

    workflow = Workflow("wf", [Step("a", run=lambda ctx: 1)], store=DjangoSnapshotStore())
    with transaction.atomic(), pytest.raises(ImproperlyConfigured, match="inside a transaction"):
        workflow.execute(run_id="r")
