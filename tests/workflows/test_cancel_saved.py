"""Cancelling a run from another process (``cancel_saved``, behind the admin's action and
``PATCH /api/snapshots/{key}/``): the run finds out at its next save, keeps what it did as
``cancelled``, and resumes only when forced. Here a step cancels its own run, as another
process would while the step runs; tests/snapshots/test_operators.py does it from a thread
over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from warlock_sessions.conversations import ToolAgent
from warlock_sessions.errors import (
    ConditionalSaveUnsupportedError,
    RunCancelledError,
    RunNotRunningError,
)
from warlock_sessions.locks import AbortSignal
from warlock_sessions.providers.chat import ChatReply
from warlock_sessions.snapshots import FileSnapshotStore, MemorySnapshotStore
from warlock_sessions.workflows import Step, StepContext, Supervisor, SupervisorContext, Workflow
from warlock_sessions.workflows.runs import cancel_saved


def test_a_workflow_cancelled_elsewhere_keeps_its_step_and_runs_no_other() -> None:
    store = MemorySnapshotStore()
    ran: list[str] = []

    def pack(ctx: StepContext) -> str:
        ran.append("pack")
        cancel_saved(store, ctx.run_id, "the customer called")  # an operator, meanwhile
        return "packed"

    def ship(ctx: StepContext) -> str:
        ran.append("ship")
        return "shipped"

    workflow = Workflow("order", [Step("pack", run=pack), Step("ship", run=ship)], store=store)
    result = workflow.execute(run_id="o1")
    assert (result.status, ran) == ("cancelled", ["pack"])
    assert isinstance(result.error, RunCancelledError) and "the customer called" in str(
        result.error
    )
    saved = store.load("o1")
    assert saved is not None
    assert (saved["status"], saved["next"], saved["state"]) == (
        "cancelled",
        "ship",
        {"pack": "packed"},
    )
    assert saved["cancelReason"] == "the customer called"
    with pytest.raises(RunCancelledError):
        workflow.resume("o1")
    assert workflow.resume("o1", force=True).status == "completed" and ran[-1] == "ship"


def test_a_supervisor_cancelled_elsewhere_stops_after_the_iteration_it_was_in() -> None:
    store = MemorySnapshotStore()

    def count(ctx: SupervisorContext) -> int:
        if ctx.iteration == 1:
            cancel_saved(store, ctx.run_id)
        return int(ctx.state.get("count", 0)) + 1

    def router(ctx: SupervisorContext) -> str | None:
        return "count" if ctx.iteration < 5 else None

    supervisor = Supervisor("counter", router, {"count": count}, store=store)
    result = supervisor.execute(run_id="s1")
    assert (result.status, result.state) == ("cancelled", {"count": 2})
    saved = store.load("s1")
    assert saved is not None and saved["status"] == "cancelled" and len(saved["snapshots"]) == 2
    with pytest.raises(RunCancelledError):
        supervisor.resume("s1")
    assert supervisor.resume("s1", force=True).state == {"count": 5}


class OneTripModel:
    provider, model = "scripted", "v1"

    def __init__(self, on_chat: Any) -> None:
        self.on_chat = on_chat

    def chat(self, messages: Any, tools: Any, on_delta: Any) -> ChatReply:
        self.on_chat()
        if on_delta is not None:
            on_delta("done")  # where a streamed reply notices its signal
        return ChatReply(text="done")

    def summarize(self, messages: Any) -> str:
        return ""


def test_a_durable_agent_cancelled_elsewhere_or_by_its_signal_is_saved_cancelled() -> None:
    """A signal-cancelled agent run was saved as failed, and resumed without force."""
    store = MemorySnapshotStore()
    agent = ToolAgent(OneTripModel(lambda: cancel_saved(store, "a1")), durable=store)
    result = agent.execute("hi", run_id="a1")
    assert isinstance(result.error, RunCancelledError)
    saved = store.load("a1")
    assert saved is not None and saved["status"] == "cancelled"
    assert saved["messages"][-1] == {"role": "assistant", "content": "done"}  # its trip kept
    with pytest.raises(RunCancelledError):
        agent.resume("a1")

    signal = AbortSignal()
    by_signal = ToolAgent(OneTripModel(signal.abort), durable=store)
    assert by_signal.execute("hi", run_id="a2", signal=signal).error is not None
    assert store.load("a2")["status"] == "cancelled"  # type: ignore[index]
    with pytest.raises(RunCancelledError):
        by_signal.resume("a2")
    again = ToolAgent(OneTripModel(lambda: None), durable=store)
    assert again.resume("a2", force=True).text == "done"


def test_only_a_running_run_on_a_versioned_store_can_be_cancelled(tmp_path: Any) -> None:
    store = MemorySnapshotStore()
    with pytest.raises(RunNotRunningError, match="has no snapshot") as missing:
        cancel_saved(store, "nobody")
    assert missing.value.status is None
    Workflow("done", [Step("a", run=lambda ctx: 1)], store=store).execute(run_id="d1")
    with pytest.raises(RunNotRunningError, match="is completed, not running") as settled:
        cancel_saved(store, "d1")
    assert settled.value.status == "completed"
    assert store.load("d1")["status"] == "completed"  # type: ignore[index]

    files = FileSnapshotStore(tmp_path)
    files.save({"runId": "f1", "status": "running"})
    with pytest.raises(ConditionalSaveUnsupportedError, match="keeps no versions"):
        cancel_saved(files, "f1")
    assert files.load("f1")["status"] == "running"  # type: ignore[index]


def test_a_forced_resume_owns_the_run_its_cancelled_runner_then_stops() -> None:
    """The cancelled runner overwrote the snapshot of the forced resume that took over (as
    cancelled), and the resume then stopped as cancelled too."""
    import threading

    from warlock_sessions.errors import SnapshotConflictError

    store = MemorySnapshotStore()
    resumer_in_step, runner_done = threading.Event(), threading.Event()
    calls: list[str] = []
    outcome: list[Any] = []

    def pack(ctx: StepContext) -> str:
        calls.append("pack")
        if len(calls) == 1:  # the first runner: an operator cancels, then force-resumes
            cancel_saved(store, ctx.run_id, "stuck")
            resumer = threading.Thread(target=lambda: outcome.append(flow.resume("r1", force=True)))
            resumer.start()
            assert resumer_in_step.wait(10)
            ctx_resumer.append(resumer)
        else:  # the forced resume, in its step while the first runner saves
            resumer_in_step.set()
            assert runner_done.wait(10)
        return "packed"

    ctx_resumer: list[threading.Thread] = []
    flow = Workflow("stale", [Step("pack", run=pack), Step("ship", run=lambda c: 1)], store=store)
    with pytest.raises(SnapshotConflictError):
        flow.execute(run_id="r1")  # the stale runner: the resume owns the run now
    runner_done.set()
    ctx_resumer[0].join(10)
    assert outcome[0].status == "completed"
    assert store.load("r1")["status"] == "completed"  # type: ignore[index]


def test_what_the_api_answers_for_a_cancelled_agent_run_and_a_run_without_status() -> None:
    """Resuming a conversation whose agent run an operator cancelled answered a 500."""
    from warlock_sessions.failures import client_failure

    reported = client_failure(RunCancelledError("agent_1", "resume(force=True) runs it on"))
    assert reported is not None and (reported.status, reported.code) == (409, "run-cancelled")
    store = MemorySnapshotStore()
    store.save({"runId": "session:chat", "messages": []})
    with pytest.raises(RunNotRunningError, match="is without a status, not running"):
        cancel_saved(store, "session:chat")
