"""Workflows: a snapshot after every settled step, failure and resume, drift (scenarios 30-32),
parallel groups, retries, failure routes, and two resumers of one run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from warlock_sessions.errors import SnapshotConflictError, WorkflowDriftError, WorkflowError
from warlock_sessions.snapshots import MemorySnapshotStore, SnapshotStore
from warlock_sessions.workflows import Retry, Step, StepContext, Workflow


class SpyStore(MemorySnapshotStore):
    """Keeps every snapshot saved, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[dict[str, Any]] = []

    def save(self, snapshot: dict[str, Any], *, expected_version: int | None = None) -> None:
        super().save(snapshot, expected_version=expected_version)
        self.saved.append(snapshot.copy())


class BrokenStore(MemorySnapshotStore):
    def save(self, snapshot: dict[str, Any], *, expected_version: int | None = None) -> None:
        raise OSError("the disk is gone")


def set_value(name: str, value: Any) -> Any:
    def run(ctx: StepContext) -> Any:
        return value

    return run


def test_a_snapshot_after_every_step_and_a_final_one() -> None:
    store = SpyStore()
    workflow = Workflow(
        "wf", [Step("a", run=set_value("a", 1)), Step("b", run=set_value("b", 2))], store=store
    )
    result = workflow.execute({"order": 7}, run_id="run-1")

    assert result.status == "completed" and result.state == {"a": 1, "b": 2}
    assert [(s["status"], s["next"]) for s in store.saved] == [
        ("running", "a"),  # before anything runs: a crash in "a" resumes
        ("running", "b"),
        ("running", None),
        ("completed", None),
    ]
    final = store.load("run-1")
    assert final is not None
    assert (final["workflowName"], final["signature"], final["input"]) == (
        "wf",
        workflow.signature,
        {"order": 7},
    )


def test_a_failed_step_halts_and_resume_runs_only_what_is_left() -> None:
    store = SpyStore()
    calls: list[str] = []
    broken = {"b": True}

    def step(name: str) -> Any:
        def run(ctx: StepContext) -> Any:
            calls.append(name)
            if broken.get(name):
                raise RuntimeError(f"{name} is broken")
            return name.upper()

        return run

    workflow = Workflow("wf", [Step("a", run=step("a")), Step("b", run=step("b"))], store=store)
    failed = workflow.execute(run_id="r")
    assert failed.status == "failed" and isinstance(failed.error, RuntimeError)
    saved = store.load("r")
    assert saved is not None and (saved["status"], saved["next"]) == ("failed", "b")
    assert saved["steps"]["b"]["error"] == "RuntimeError: b is broken"

    broken["b"] = False
    resumed = workflow.resume("r")
    assert resumed.status == "completed"
    assert resumed.state == {"a": "A", "b": "B"}
    assert calls == ["a", "b", "b"]  # a did not run again

    again = workflow.resume("r")  # a settled run: nothing runs again
    assert again.status == "completed" and calls == ["a", "b", "b"]


def test_a_store_that_cannot_save_does_not_fail_the_run() -> None:
    events: list[tuple[str, Any]] = []
    workflow = Workflow(
        "wf",
        [Step("a", run=set_value("a", 1))],
        store=BrokenStore(),
        on_event=lambda name, payload: events.append((name, payload)),
    )
    result = workflow.execute(run_id="r")
    assert result.status == "completed" and result.state == {"a": 1}
    errors = [name for name, _ in events if name == "workflow.error"]
    assert errors == ["workflow.error"] * 3  # start, "a", the end
    assert [name for name, _ in events if name.startswith("workflow.step.")] == [
        "workflow.step.started",
        "workflow.step.completed",
    ]
    assert result.lost_snapshots == 3
    assert isinstance(events[0][1]["error"], OSError) and events[0][0] == "workflow.error"


def test_a_changed_definition_is_refused_before_anything_runs() -> None:
    store = SpyStore()
    calls: list[str] = []

    def record(name: str) -> Any:
        def run(ctx: StepContext) -> Any:
            calls.append(name)
            if name == "a" and ctx.run_id == "crashed":
                return None
            return name

        return run

    first = Workflow(
        "wf", [Step("a", run=record("a")), Step("c", run=lambda ctx: 1 / 0)], store=store
    )
    first.execute(run_id="crashed")
    before = store.load("crashed")

    changed = Workflow(
        "wf",
        [Step("a", run=record("a")), Step("b", run=record("b")), Step("c", run=record("c"))],
        store=store,
    )
    with pytest.raises(WorkflowDriftError) as drift:
        changed.resume("crashed")
    error = drift.value
    assert (error.code, error.category, error.run_id) == ("WORKFLOW_DRIFT", "drift", "crashed")
    assert (error.saved_signature, error.current_signature) == (
        first.signature,
        changed.signature,
    )
    assert (error.completed_steps, error.pending_step) == (["a"], "c")
    assert store.load("crashed") == before and calls == ["a"]

    forced = changed.resume("crashed", force=True)
    assert forced.status == "completed" and calls == ["a", "c"]
    saved = store.load("crashed")
    assert saved is not None and saved["signature"] == changed.signature


def test_a_run_migrated_by_hand_resumes_under_the_new_definition() -> None:
    store = SpyStore()
    old = Workflow(
        "wf", [Step("a", run=set_value("a", 1)), Step("c", run=lambda ctx: 1 / 0)], store=store
    )
    old.execute(run_id="r")
    new = Workflow(
        "wf",
        [
            Step("a", run=set_value("a", 1)),
            Step("b", run=set_value("b", 2)),
            Step("c", run=set_value("c", 3)),
        ],
        store=store,
    )

    snapshot = store.load("r")
    assert snapshot is not None
    snapshot.update(signature=new.signature, next="b")
    store.save(snapshot)

    assert new.resume("r").state == {"a": 1, "b": 2, "c": 3}


def test_resume_without_a_store_or_a_snapshot_says_so() -> None:
    workflow = Workflow("wf", [Step("a", run=set_value("a", 1))])
    assert workflow.execute().status == "completed"  # no store: nothing saved, still runs
    with pytest.raises(WorkflowError, match="no snapshot store"):
        workflow.resume("r")
    with pytest.raises(WorkflowError, match='no snapshot of run "r"'):
        Workflow("wf", [], store=MemorySnapshotStore()).resume("r")


def test_a_parallel_group_is_one_checkpoint_and_merges_in_declaration_order() -> None:
    store = SpyStore()

    def writes(**values: Any) -> Any:
        def run(ctx: StepContext) -> None:
            ctx.state.update(values)

        return run

    workflow = Workflow(
        "wf",
        [
            Step("seed", run=writes(shared="seed", kept=1)),
            Step(
                "fan",
                parallel=[
                    Step("x", run=writes(x=1, shared="x")),
                    Step("y", run=writes(y=2)),
                    Step("z", run=writes(shared="z")),
                ],
            ),
            Step("after", run=lambda ctx: sorted(ctx.state)),
        ],
        store=store,
    )
    result = workflow.execute(run_id="r")
    assert result.state["shared"] == "z" and (result.state["x"], result.state["y"]) == (1, 2)
    assert result.state["kept"] == 1  # y and z left it alone: x's copy did not undo it
    assert [s["next"] for s in store.saved] == ["seed", "fan", "after", None, None]
    assert set(result.steps) == {"seed", "fan", "x", "y", "z", "after"}


def test_a_failed_child_fails_the_group_and_resume_reruns_the_whole_group() -> None:
    store = SpyStore()
    calls: list[str] = []
    broken = {"y": True}

    def child(name: str) -> Any:
        def run(ctx: StepContext) -> Any:
            calls.append(name)
            if broken.get(name):
                raise ValueError(name)
            return name

        return run

    workflow = Workflow(
        "wf",
        [Step("fan", parallel=[Step("x", run=child("x")), Step("y", run=child("y"))])],
        store=store,
    )
    failed = workflow.execute(run_id="r")
    assert failed.status == "failed"
    # The group's own record says it failed (only its children's were kept), in the result
    # and in the snapshot.
    assert failed.steps["fan"]["status"] == "failed" and "error" in failed.steps["fan"]
    saved = store.load("r")
    assert saved is not None and saved["steps"]["fan"]["status"] == "failed"
    broken.clear()
    resumed = workflow.resume("r")
    assert resumed.state == {"x": "x", "y": "y"} and resumed.steps["fan"]["status"] == "completed"
    assert sorted(calls) == ["x", "x", "y", "y"]


def test_retries_and_failure_routes() -> None:
    attempts: list[int] = []

    def flaky(ctx: StepContext) -> str:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            ctx.state["partial"] = ctx.attempt  # dropped: each attempt starts from a clean copy
            raise ConnectionError("try again")
        return "done"

    workflow = Workflow(
        "wf",
        [
            Step("flaky", run=flaky, retry=Retry(attempts=3, backoff="none")),
            Step("fails", run=lambda ctx: 1 / 0, on_failure=lambda error, ctx: "cleanup"),
            Step("skipped", run=set_value("skipped", "never")),
            Step("cleanup", run=set_value("cleanup", "ok"), next=lambda ctx: "end"),
            Step("unreached", run=set_value("unreached", 1)),
        ],
        store=MemorySnapshotStore(),
    )
    result = workflow.execute(run_id="r")
    assert attempts == [1, 2, 3]
    assert result.status == "completed"
    assert result.state == {"flaky": "done", "cleanup": "ok"}
    assert result.steps["fails"]["status"] == "failed" and result.steps["flaky"]["attempts"] == 3

    refused = Workflow(
        "wf2",
        [Step("s", run=flaky, retry=Retry(attempts=5, retry_on=lambda e, n: False))],
    )
    attempts.clear()
    assert refused.execute().status == "failed" and attempts == [1]


def test_a_run_whose_snapshots_cannot_be_saved_says_so_in_its_result() -> None:
    """It finished "completed" while every save failed, reported only in a log line."""

    class Failing(MemorySnapshotStore):
        def _write(self, key: str, text: str, expected: int | None) -> None:
            raise OSError("disk full")

    events: list[str] = []
    workflow = Workflow(
        "lossy",
        [Step("a", run=set_value("a", 1)), Step("b", run=set_value("b", 2))],
        store=Failing(),
        on_event=lambda name, payload: events.append(name),
    )
    result = workflow.execute()
    assert result.status == "completed" and result.lost_snapshots == 4  # start, a, b, end
    assert events.count("workflow.error") == 4
    assert Workflow("kept", [Step("a", run=set_value("a", 1))]).execute().lost_snapshots == 0


def test_every_retry_wait_is_bounded_and_the_default_backoff_is_upstream_s() -> None:
    """``Retry(attempts=20, backoff=1)`` waited 2**18 s before its last try: three days."""
    from warlock_sessions.workflows.workflow import MAX_RETRY_WAIT

    assert [Retry(attempts=5).wait(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert Retry(attempts=20, backoff=1).wait(19) == MAX_RETRY_WAIT == 30.0
    assert [Retry(backoff="linear").wait(n) for n in (1, 2)] == [0.5, 1.0]
    assert Retry(backoff="none").wait(7) == 0.0
    assert Retry(backoff=lambda n: 10.0 * n).wait(4) == 30.0
    for wrong in ("fast", -1, True):
        with pytest.raises(ValueError, match="backoff"):
            Retry(backoff=wrong)  # type: ignore[arg-type]


def test_a_workflow_wide_retry_applies_to_every_step_that_sets_none() -> None:
    tries: dict[str, int] = {}

    def failing(name: str) -> Callable[[StepContext], None]:
        def run(ctx: StepContext) -> None:
            tries[name] = ctx.attempt
            raise ConnectionError(name)

        return run

    workflow = Workflow(
        "wide",
        [
            Step("a", run=failing("a"), on_failure=lambda error, ctx: "b"),
            Step("b", run=failing("b"), retry=False, on_failure=lambda error, ctx: "c"),
            Step("c", run=failing("c"), retry=Retry(attempts=2, backoff="none")),
        ],
        retry=Retry(attempts=3, backoff="none"),
    )
    assert workflow.execute().status == "failed"
    assert tries == {"a": 3, "b": 1, "c": 2}
    with pytest.raises(ValueError, match="retry is a Retry, False or None"):
        Step("x", run=failing("x"), retry=True)


def test_routing_to_an_unknown_step_fails_the_run_clearly() -> None:
    workflow = Workflow("wf", [Step("a", run=set_value("a", 1), next=lambda ctx: "nowhere")])
    result = workflow.execute()
    assert result.status == "failed"
    assert 'step "a" goes to unknown step "nowhere"' in str(result.error)


def test_a_routing_loop_ends() -> None:
    workflow = Workflow(
        "wf", [Step("a", run=set_value("a", 1), next=lambda ctx: "a")], max_steps=10
    )
    result = workflow.execute()
    assert result.status == "failed" and "more than 10 steps" in str(result.error)


def test_two_resumers_of_one_run_cannot_both_write() -> None:
    store = MemorySnapshotStore()
    crashy = Workflow(
        "wf", [Step("a", run=set_value("a", 1)), Step("b", run=lambda ctx: 1 / 0)], store=store
    )
    crashy.execute(run_id="r")

    gate: list[Any] = []

    def b_step(ctx: StepContext) -> str:
        if not gate:  # the first resumer: another one resumes and saves meanwhile
            gate.append(True)
            second.resume("r")
        return "b"

    first = Workflow("wf", [Step("a", run=set_value("a", 1)), Step("b", run=b_step)], store=store)
    second = Workflow(
        "wf", [Step("a", run=set_value("a", 1)), Step("b", run=set_value("b", 2))], store=store
    )
    with pytest.raises(SnapshotConflictError):
        first.resume("r")
    saved = store.load("r")
    assert saved is not None and saved["state"] == {"a": 1, "b": 2}  # the second resumer's


def test_bad_definitions_are_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        Workflow("wf", [Step("a"), Step("a")])
    with pytest.raises(ValueError, match="more than one of"):
        Step("a", run=lambda ctx: None, parallel=[])
    with pytest.raises(ValueError, match="other than 'end'"):
        Step("end")


@pytest.mark.asyncio
async def test_the_async_twins() -> None:
    async def fetch(ctx: StepContext) -> str:
        return "fetched"

    store: SnapshotStore = MemorySnapshotStore()
    workflow = Workflow("wf", [Step("a", run=fetch)], store=store)
    result = await workflow.aexecute(run_id="r")
    assert result.state == {"a": "fetched"}
    assert (await workflow.aresume("r")).status == "completed"


def test_a_cancelled_run_stops_before_its_next_step_and_resumes_only_when_forced() -> None:
    """An aborted run was recorded as failed, and nothing could cancel one."""
    from warlock_sessions.errors import RunCancelledError
    from warlock_sessions.locks import AbortSignal

    signal = AbortSignal()
    ran: list[str] = []

    def step(name: str, cancel: bool = False) -> Callable[[StepContext], str]:
        def run(ctx: StepContext) -> str:
            ran.append(name)
            if cancel:
                assert ctx.signal is signal
                signal.abort()  # e.g. the user closed the page while it ran
            return name

        return run

    store = MemorySnapshotStore()
    workflow = Workflow(
        "cancel", [Step("a", run=step("a", cancel=True)), Step("b", run=step("b"))], store=store
    )
    result = workflow.execute(run_id="c1", signal=signal)
    assert (result.status, ran) == ("cancelled", ["a"])
    assert isinstance(result.error, RunCancelledError) and result.state == {"a": "a"}
    saved = store.load("c1")
    assert saved is not None and (saved["status"], saved["next"]) == ("cancelled", "b")
    with pytest.raises(RunCancelledError, match="force=True"):
        workflow.resume("c1")
    assert workflow.resume("c1", force=True).status == "completed" and ran == ["a", "b"]


def test_cancelling_stops_a_retry_s_wait_and_a_parallel_group_s_children() -> None:
    import threading
    import time

    from warlock_sessions.locks import AbortSignal

    signal = AbortSignal()
    failing = Workflow(
        "waits",
        [Step("s", run=lambda ctx: 1 / 0, retry=Retry(attempts=5, backoff=20))],
    )
    threading.Timer(0.2, signal.abort, [ConnectionAbortedError("page closed")]).start()
    started = time.monotonic()
    result = failing.execute(signal=signal)
    assert time.monotonic() - started < 5  # not the 20 s wait
    assert result.status == "cancelled" and isinstance(result.error, ConnectionAbortedError)

    group_signal = AbortSignal()

    def child(ctx: StepContext) -> None:
        assert ctx.signal is group_signal
        group_signal.abort()
        raise RuntimeError("stopped for the signal")

    group = Workflow(
        "fan-cancel",
        [Step("fan", parallel=[Step("x", run=child), Step("y", run=lambda ctx: "y")])],
    )
    assert group.execute(signal=group_signal).status == "cancelled"
