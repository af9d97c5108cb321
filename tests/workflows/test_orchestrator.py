"""Orchestrators: a checkpoint row per successful turn, drift, pruning, and a turn cut short
by a crash (a real child process) finished by the boot drain of warlock_worker."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

from warlock_sessions.checkpoints import MemoryCheckpointStore
from warlock_sessions.errors import OrchestratorDriftError
from warlock_sessions.snapshots import FileSnapshotStore, MemorySnapshotStore
from warlock_sessions.workflows import SUPERVISOR_END, SupervisorContext
from warlock_sessions.workflows.orchestrator import Orchestrator


class PruneSpy(MemoryCheckpointStore):
    def __init__(self) -> None:
        super().__init__()
        self.pruned: list[int] = []

    def prune(self, name: str, session_id: str, keep_before: int) -> None:
        self.pruned.append(keep_before)
        super().prune(name, session_id, keep_before)


def count(ctx: SupervisorContext) -> int:
    return int(ctx.state.get("count", 0)) + 1


def test_a_row_per_successful_turn_carrying_the_state() -> None:
    checkpoints = PruneSpy()
    orchestrator = Orchestrator(
        "counter",
        {"count": count, "fail": lambda ctx: 1 / 0},
        route=lambda ctx: "fail" if ctx.input == "boom" else "count",
        checkpoint_store=checkpoints,
        keep_snapshots=2,
    )
    for expected in (1, 2, 3):
        done = orchestrator.turn("user-1", "hi")
        assert (done.status, done.state, done.route) == ("completed", {"count": expected}, "count")
    failed = orchestrator.turn("user-1", "boom")
    assert failed.status == "failed" and isinstance(failed.error, ZeroDivisionError)
    latest = checkpoints.load("counter", "user-1")
    assert latest is not None and (latest["turn_index"], latest["state"]) == (2, {"count": 3})
    assert latest["last_route"] == "count" and latest["signature"] == orchestrator.signature
    assert checkpoints.pruned == [1]  # turn 2 with keep 2: turns before 1 go
    assert checkpoints.list("counter") == ["user-1"]


def test_a_changed_orchestrator_is_refused_unless_forced() -> None:
    checkpoints = MemoryCheckpointStore()
    Orchestrator(
        "o", {"count": count}, route=lambda ctx: "count", checkpoint_store=checkpoints
    ).turn("s", None)
    changed = Orchestrator(
        "o",
        {"count": count, "more": count},
        route=lambda ctx: "count",
        checkpoint_store=checkpoints,
    )
    with pytest.raises(OrchestratorDriftError) as drift:
        changed.turn("s", None)
    assert (drift.value.code, drift.value.session_id) == ("ORCHESTRATOR_DRIFT", "s")
    assert changed.turn("s", None, force=True).state == {"count": 2}


def iterating(checkpoints: Any, snapshots: Any, crash_marker: str | None) -> Orchestrator:
    def step(ctx: SupervisorContext) -> int:
        if crash_marker and ctx.iteration == 1 and not os.path.exists(crash_marker):
            open(crash_marker, "w").close()
            os._exit(9)  # killed mid-turn, after the first iteration's snapshot
        return count(ctx)

    return Orchestrator(
        "booking",
        {"count": step},
        route=lambda ctx: "count" if ctx.iteration < 3 else SUPERVISOR_END,
        iterate=True,
        checkpoint_store=checkpoints,
        snapshot_store=snapshots,
    )


def test_a_turn_cut_short_is_finished_by_the_drain(tmp_path: Any) -> None:
    checkpoints = MemoryCheckpointStore()
    snapshots = FileSnapshotStore(tmp_path / "snapshots")
    first = iterating(checkpoints, snapshots, None).turn("guest", "first")
    assert first.route == ["count", "count", "count"] and first.state == {"count": 3}

    marker = str(tmp_path / "crashed")
    child = multiprocessing.get_context("fork").Process(
        target=lambda: iterating(checkpoints, snapshots, marker).turn("guest", "second")
    )
    child.start()
    child.join(30)
    assert child.exitcode == 9
    # The child's memory checkpoint store died with it; the file snapshot did not.
    saved = snapshots.load("guest.unversioned.1")
    assert saved is not None and saved["status"] == "running" and saved["iteration"] == 0

    survivor = iterating(checkpoints, snapshots, marker)
    assert survivor.resume("someone-else") is None
    [finished] = survivor.drain()
    assert (finished.turn_index, finished.status, finished.state) == (1, "completed", {"count": 6})
    assert survivor.drain() == []


def test_a_session_whose_first_turn_was_cut_short_is_found_by_the_drain(tmp_path: Any) -> None:
    """The drain listed only sessions with checkpoints: a first turn killed mid-way waited
    for the session's next turn."""
    checkpoints = MemoryCheckpointStore()
    snapshots = FileSnapshotStore(tmp_path / "snapshots")
    marker = str(tmp_path / "crashed")
    iterating(checkpoints, snapshots, None).turn("regular", "first")  # recorded: not reloaded
    child = multiprocessing.get_context("fork").Process(
        target=lambda: iterating(checkpoints, snapshots, marker).turn("newcomer", "hello")
    )
    child.start()
    child.join(30)
    assert child.exitcode == 9 and checkpoints.list("booking") == ["regular"]
    other = Orchestrator(
        "other",
        {"count": count},
        route=lambda ctx: "count",
        iterate=True,
        checkpoint_store=checkpoints,
        snapshot_store=snapshots,
    )
    other.supervisor.execute(
        None,
        run_id="elsewhere.unversioned.0",
        tags={"orchestratorName": "other", "sessionId": "elsewhere"},
    )

    survivor = iterating(checkpoints, snapshots, marker)
    [finished] = survivor.drain()
    assert (finished.session_id, finished.turn_index, finished.state) == (
        "newcomer",
        0,
        {"count": 3},
    )
    assert checkpoints.list("booking") == ["newcomer", "regular"]
    assert survivor.drain() == []


BOOT_CHECKPOINTS = MemoryCheckpointStore()
BOOT_SNAPSHOTS = MemorySnapshotStore()
BOOT = Orchestrator(
    "boot",
    {"count": count},
    route=lambda ctx: "count" if ctx.iteration < 2 else SUPERVISOR_END,
    iterate=True,
    checkpoint_store=BOOT_CHECKPOINTS,
    snapshot_store=BOOT_SNAPSHOTS,
)


@pytest.mark.django_db
def test_warlock_worker_drains_the_configured_orchestrators_at_start() -> None:
    BOOT.turn("s", None)
    # A crashed turn 1, as a process killed after its first iteration leaves it.
    BOOT_SNAPSHOTS.save(
        {
            "runId": "s.unversioned.1",
            "supervisorName": "boot",
            "signature": BOOT.supervisor.signature,
            "input": None,
            "initialState": {"count": 2},
            "iteration": 0,
            "snapshots": [{"iteration": 0, "intent": "count", "state": {"count": 3}}],
            "status": "running",
            "startedAt": "2026-12-01T00:00:00.000Z",
        }
    )
    with override_settings(
        WARLOCK_SESSIONS={"ORCHESTRATORS": ["tests.workflows.test_orchestrator.BOOT"]}
    ):
        call_command("warlock_worker", "--once")
    latest = BOOT_CHECKPOINTS.load("boot", "s")
    assert latest is not None and (latest["turn_index"], latest["state"]) == (1, {"count": 4})


def test_an_orchestrator_without_a_store_uses_the_configured_one_as_the_settings_change() -> None:
    """The default was cached on the orchestrator, so a settings change never reached it."""
    orchestrator = Orchestrator("configured", {"count": count}, route=lambda ctx: "count")
    memory = "warlock_sessions.checkpoints.MemoryCheckpointStore"
    with override_settings(WARLOCK_SESSIONS={"CHECKPOINT_STORE": memory}):
        first = orchestrator.checkpoints()
        assert orchestrator.turn("s", None).state == {"count": 1}
        assert first.load("configured", "s") is not None
    with override_settings(WARLOCK_SESSIONS={"CHECKPOINT_STORE": {"CLASS": memory}}):
        assert orchestrator.checkpoints() is not first
        assert orchestrator.turn("s", None).state == {"count": 1}  # a new, empty store


def test_a_cancelled_turn_is_never_recorded_and_the_next_turn_starts_clean() -> None:
    from warlock_sessions.locks import AbortSignal

    signal = AbortSignal()

    def count_then_cancel(ctx: SupervisorContext) -> int:
        signal.abort()  # the user left while the turn ran
        return count(ctx)

    checkpoints = MemoryCheckpointStore()
    snapshots = MemorySnapshotStore()

    def counter(intent: Any) -> Orchestrator:
        return Orchestrator(
            "cancel-turn",
            {"count": intent},
            route=lambda ctx: "count" if ctx.state.get("count", 0) < 3 else SUPERVISOR_END,
            iterate=True,
            checkpoint_store=checkpoints,
            snapshot_store=snapshots,
        )

    cancelled = counter(count_then_cancel).turn("u1", "hi", signal=signal)
    assert (cancelled.status, cancelled.turn_index) == ("cancelled", 0)
    assert checkpoints.load("cancel-turn", "u1") is None  # never recorded
    plain = counter(count)
    run_id = plain.run_id("u1", 0)
    assert snapshots.load(run_id) is not None
    assert plain.resume("u1") is None  # discarded, not resumed (nor refused for ever)
    assert snapshots.load(run_id) is None
    again = plain.turn("u1", "hi")
    assert (again.status, again.turn_index, again.state) == ("completed", 0, {"count": 3})
