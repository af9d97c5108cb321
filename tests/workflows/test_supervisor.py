"""Supervisors (scenario 33): a snapshot per iteration, resume at the next iteration with the
last state, drift, and no store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from warlock_sessions.errors import SupervisorDriftError, SupervisorFailedError
from warlock_sessions.snapshots import MemorySnapshotStore
from warlock_sessions.workflows import (
    SUPERVISOR_END,
    Intent,
    Step,
    Supervisor,
    SupervisorContext,
    Workflow,
)


@dataclass
class ScriptedAgent:
    name: str
    replies: list[Any]
    calls: list[Any] = field(default_factory=list)

    def execute(self, input: Any, *, history: list[Any] | None = None) -> Any:
        self.calls.append((input, history))
        return self.replies.pop(0)


def counting_router(limit: int) -> Any:
    def route(ctx: SupervisorContext) -> str:
        return "count" if ctx.state.get("count", 0) < limit else SUPERVISOR_END

    return route


def count(ctx: SupervisorContext) -> int:
    return int(ctx.state.get("count", 0)) + 1


def test_three_iterations_then_end() -> None:
    store = MemorySnapshotStore()
    supervisor = Supervisor("counter", counting_router(3), {"count": count}, store=store)
    result = supervisor.execute(run_id="s1")
    assert (result.status, result.state) == ("completed", {"count": 3})
    saved = store.load("s1")
    assert saved is not None
    assert (saved["status"], saved["iteration"], len(saved["snapshots"])) == ("completed", 2, 3)
    assert [entry["state"] for entry in saved["snapshots"]] == [
        {"count": 1},
        {"count": 2},
        {"count": 3},
    ]


def test_a_supervisor_s_version_is_written_on_its_snapshots_and_not_hashed() -> None:
    store = MemorySnapshotStore()
    versioned = Supervisor(
        "counter-v", counting_router(1), {"count": count}, store=store, version="2026.09"
    )
    versioned.execute(run_id="v1")
    saved = store.load("v1")
    assert saved is not None and saved["version"] == "2026.09"
    plain = Supervisor("counter-v", counting_router(1), {"count": count}, registered=False)
    assert plain.signature == versioned.signature  # drift is the signature's, as upstream
    with pytest.raises(ValueError, match="version"):
        Supervisor("x", counting_router(1), {"count": count}, version="")


def test_a_seeded_snapshot_resumes_at_the_next_iteration_with_its_state() -> None:
    store = MemorySnapshotStore()
    supervisor = Supervisor("counter", counting_router(3), {"count": count}, store=store)
    store.save(
        {
            "runId": "s2",
            "supervisorName": "counter",
            "signature": supervisor.signature,
            "input": "hello",
            "iteration": 0,
            "snapshots": [{"iteration": 0, "intent": "count", "state": {"count": 1}}],
            "status": "running",
            "startedAt": "2026-12-01T00:00:00.000Z",
        }
    )
    seen: list[int] = []

    def watched(ctx: SupervisorContext) -> int:
        seen.append(ctx.iteration)
        return count(ctx)

    resumed = Supervisor("counter", counting_router(3), {"count": watched}, store=store)
    assert resumed.signature == supervisor.signature  # a callback's body is not hashed
    result = resumed.resume("s2")
    assert (result.status, result.state, seen) == ("completed", {"count": 3}, [1, 2])


def test_a_changed_supervisor_is_refused_and_force_goes_on() -> None:
    store = MemorySnapshotStore()
    Supervisor(
        "counter", counting_router(1), {"count": count}, store=store, max_iterations=1
    ).execute(run_id="s3")
    saved = store.load("s3")
    assert saved is not None and saved["status"] == "max-iterations"
    saved["status"] = "running"
    store.save(saved)
    changed = Supervisor(
        "counter", counting_router(2), {"count": count, "extra": count}, store=store
    )
    with pytest.raises(SupervisorDriftError) as drift:
        changed.resume("s3")
    assert (drift.value.code, drift.value.run_id) == ("SUPERVISOR_DRIFT", "s3")
    assert changed.resume("s3", force=True).state == {"count": 2}


def test_without_a_store_a_run_cannot_resume() -> None:
    supervisor = Supervisor("counter", counting_router(1), {"count": count})
    assert supervisor.execute().status == "completed"
    with pytest.raises(SupervisorFailedError, match="no snapshot store"):
        supervisor.resume("s4")


def test_agents_and_workflows_as_intents_and_an_agent_router() -> None:
    router = ScriptedAgent("router", ["billing", "report", SUPERVISOR_END])
    billing = ScriptedAgent("billing", [{"refund": 12}])
    report = Workflow("report", [Step("write", run=lambda ctx: f"report for {ctx.input}")])
    supervisor = Supervisor(
        "support",
        router,
        {
            "billing": Intent(billing, "Billing questions"),
            "report": Intent(report, "Write a report"),
        },
        store=MemorySnapshotStore(),
    )
    result = supervisor.execute("order 7")
    assert result.status == "completed"
    assert result.state == {"billing": {"refund": 12}, "report": {"write": "report for order 7"}}
    assert router.calls[0][0]["intents"] == {
        "billing": "Billing questions",
        "report": "Write a report",
    }
    assert router.calls[2][1] == [
        {"iteration": 0, "intent": "billing"},
        {"iteration": 1, "intent": "report"},
    ]


def test_an_unknown_intent_fails_the_run_with_a_clear_error() -> None:
    supervisor = Supervisor("s", lambda ctx: "nowhere", {"count": count})
    result = supervisor.execute()
    assert result.status == "failed"
    assert isinstance(result.error, SupervisorFailedError)
    assert 'unknown intent "nowhere"' in str(result.error)


def test_a_cancelled_supervisor_stops_before_its_next_iteration() -> None:
    from warlock_sessions.errors import RunCancelledError
    from warlock_sessions.locks import AbortSignal

    signal = AbortSignal()

    def count_then_cancel(ctx: SupervisorContext) -> int:
        if ctx.state.get("count", 0) == 1:
            signal.abort()
        return count(ctx)

    store = MemorySnapshotStore()
    supervisor = Supervisor(
        "cancelling", counting_router(5), {"count": count_then_cancel}, store=store
    )
    result = supervisor.execute(run_id="sc", signal=signal)
    assert (result.status, result.state) == ("cancelled", {"count": 2})
    assert isinstance(result.error, RunCancelledError)
    saved = store.load("sc")
    assert saved is not None and saved["status"] == "cancelled"
    with pytest.raises(RunCancelledError):
        supervisor.resume("sc")
    assert supervisor.resume("sc", force=True).state == {"count": 5}


def test_a_snapshot_upstream_wrote_resumes_and_one_nobody_wrote_is_left_alone() -> None:
    """Upstream's iterations name their intent in ``result``/``decision``, not ``intent``:
    resume failed with KeyError and overwrote the snapshot as failed."""
    store = MemorySnapshotStore()
    supervisor = Supervisor("upstream", counting_router(3), {"count": count}, store=store)
    upstream_iteration = {
        "iteration": 0,
        "result": {"count": {"intent": "count", "input": "", "output": 1, "usage": {}}},
        "decision": {"source": "route", "next": "count", "durationMs": 1},
        "state": {"count": 1},
        "artifacts": {},
        "startedAt": "2026-09-20T10:00:00.000Z",
        "endedAt": "2026-09-20T10:00:00.010Z",
        "duration": 10,
        "usage": {},
    }
    store.save(
        {
            "runId": "up-1",
            "supervisorName": "upstream",
            "signature": supervisor.signature,
            "input": "go",
            "iteration": 0,
            "snapshots": [upstream_iteration],
            "status": "running",
            "startedAt": "2026-09-20T10:00:00.000Z",
            "savedAt": "2026-09-20T10:00:00.010Z",
        }
    )
    resumed = supervisor.resume("up-1")
    assert (resumed.status, resumed.state) == ("completed", {"count": 3})
    assert [entry["intent"] for entry in resumed.iterations] == ["count", "count", "count"]

    unreadable = {
        "runId": "bad-1",
        "supervisorName": "upstream",
        "signature": supervisor.signature,
        "snapshots": [{"iteration": 0, "whatever": True}],
        "status": "running",
    }
    store.save(unreadable)
    with pytest.raises(SupervisorFailedError, match="cannot be read"):
        supervisor.resume("bad-1")
    assert store.load("bad-1") == unreadable  # not overwritten as failed
