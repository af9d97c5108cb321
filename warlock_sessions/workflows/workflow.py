"""Durable workflows: named steps run in order (or in parallel groups), with retries and
failure routes, a snapshot after every settled step, and ``resume`` after a crash that refuses
a changed definition (docs/workflows.md)."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import RunCancelledError, WorkflowDriftError, WorkflowError
from ..locks import AbortSignal
from ..snapshots import SnapshotStore
from .protocol import RunnableAgent
from .registry import register
from .runs import (
    EventHandler,
    RunInProgress,
    SnapshotWriter,
    emit,
    load_run,
    new_run_id,
    new_run_store,
    now_iso,
    refuse_cancelled,
    resolve_store,
)
from .signature import workflow_signature

END = "end"
DEFAULT_MAX_STEPS = 100  # steps entered per run: a routing loop must end


#: The longest wait between two tries of a step, whatever its backoff says (upstream's cap):
#: twenty exponential tries would otherwise hold a thread for days.
MAX_RETRY_WAIT = 30.0
#: The first wait of the named backoffs, in seconds (upstream's 500 ms).
BACKOFF_STEP = 0.5
Backoff = float | str | Callable[[int], float] | None
_NAMED_BACKOFFS: dict[str, Callable[[int], float]] = {
    "exponential": lambda attempt: BACKOFF_STEP * 2 ** (attempt - 1),
    "linear": lambda attempt: BACKOFF_STEP * attempt,
    "none": lambda attempt: 0.0,
}


@dataclass(frozen=True)
class Retry:
    """How often a step is tried (``attempts`` in all) and how long it waits after failed try
    ``n`` (``wait(n)``). ``backoff`` is ``None`` or ``"exponential"`` (0.5 s, doubling: the
    upstream default), ``"linear"`` (0.5 s times ``n``), ``"none"``, a number of seconds
    (doubling from it) or a function of ``n``; no wait is longer than ``MAX_RETRY_WAIT``.
    ``retry_on(error, attempt)`` may refuse a retry."""

    attempts: int = 1
    backoff: Backoff = None
    retry_on: Callable[[BaseException, int], bool] | None = None

    def __post_init__(self) -> None:
        if type(self.attempts) is not int or self.attempts < 1:
            raise ValueError(f"attempts is a whole number >= 1, not {self.attempts!r}")
        backoff = self.backoff
        if isinstance(backoff, str) and backoff not in _NAMED_BACKOFFS:
            raise ValueError(f"backoff is one of {sorted(_NAMED_BACKOFFS)}, not {backoff!r}")
        if isinstance(backoff, bool) or (isinstance(backoff, int | float) and backoff < 0):
            raise ValueError(f"backoff is seconds >= 0, not {backoff!r}")

    def wait(self, attempt: int) -> float:
        """Seconds to wait after failed try ``attempt`` before the next."""
        backoff = self.backoff
        if backoff is None or isinstance(backoff, str):
            seconds = _NAMED_BACKOFFS[backoff or "exponential"](attempt)
        elif callable(backoff):
            seconds = float(backoff(attempt))
        else:
            seconds = backoff * 2 ** (attempt - 1)
        return max(0.0, min(seconds, MAX_RETRY_WAIT))


#: A step's retry: a ``Retry``, ``None`` (the workflow's default) or ``False`` (tried once).
StepRetry = Retry | bool | None
ONCE = Retry()


@dataclass
class StepContext:
    """What a step sees. ``state`` is the run's state, the step's own copy: what the step
    leaves in it is kept when the step succeeds (and dropped when it fails)."""

    input: Any
    context: Any
    state: dict[str, Any]
    steps: Mapping[str, Mapping[str, Any]]
    run_id: str
    attempt: int = 1
    #: The run's cancellation, for a step that can stop part-way (``signal.aborted``).
    signal: AbortSignal | None = None


@dataclass(frozen=True)
class Step:
    """One step: ``run(ctx)`` or an ``agent`` (given ``input(ctx)``, else the workflow's
    input), or a ``parallel`` group of steps. A non-``None`` result is stored as
    ``state[name]``. ``next(ctx)`` picks the following step (a name, ``"end"``, or ``None``
    for the next declared one); ``on_failure(error, ctx)`` may route a failed step instead of
    halting the run. ``skip(ctx)`` true skips it."""

    name: str
    run: Callable[[StepContext], Any] | None = None
    agent: RunnableAgent | None = None
    input: Callable[[StepContext], Any] | None = None
    parallel: Sequence[Step] | None = None
    retry: StepRetry = None
    next: Callable[[StepContext], str | None] | None = None
    on_failure: Callable[[BaseException, StepContext], str | None] | None = None
    skip: Callable[[StepContext], bool] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name == END:
            raise ValueError(f"a step's name is non-empty text other than 'end', not {self.name!r}")
        if sum(part is not None for part in (self.run, self.agent, self.parallel)) > 1:
            raise ValueError(f"step {self.name!r} has more than one of run, agent, parallel")
        if self.parallel is not None:
            if any(child.parallel is not None for child in self.parallel):
                raise ValueError(f"group {self.name!r}: a parallel group cannot hold a group")
            if isinstance(self.retry, Retry) and self.retry.attempts > 1:
                raise ValueError(f"group {self.name!r}: retry its children, not the group")
        if self.retry is True:
            raise ValueError(f"step {self.name!r}: retry is a Retry, False or None, not True")


@dataclass
class WorkflowResult:
    run_id: str
    status: str  # "completed", "failed" or "cancelled"
    state: dict[str, Any]
    steps: dict[str, dict[str, Any]]
    error: BaseException | None = None
    #: Snapshot saves that failed (each logged, with a ``workflow.error`` event): when not 0,
    #: the run was not durable, and a crash would have lost what those saves held.
    lost_snapshots: int = 0


class _Cancelled(Exception):
    """The run's signal was aborted: it stops before the next step (or try)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def cancelled_error(signal: AbortSignal, run_id: str) -> BaseException:
    return signal.reason if signal.reason is not None else RunCancelledError(run_id)


class _StepFailed(Exception):
    def __init__(self, record: dict[str, Any], error: BaseException) -> None:
        self.record = record
        self.error = error


class Workflow:
    """``Workflow(name, steps, version=None)``; ``execute(input)`` runs it, ``resume(run_id)``
    finishes a run after a crash. ``store`` (else ``WARLOCK_SESSIONS["SNAPSHOT_STORE"]``)
    keeps a snapshot after every settled step; without one, nothing is saved and a run cannot
    resume. ``on_event(name, payload)`` hears ``workflow.error`` (a snapshot could not be
    saved; the run goes on) and ``workflow.step.failed``."""

    def __init__(
        self,
        name: str,
        steps: Sequence[Step],
        *,
        version: str | None = None,
        store: SnapshotStore | None = None,
        on_event: EventHandler | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        retry: Retry | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a workflow's name is non-empty text, not {name!r}")
        names = [step.name for step in steps]
        names += [child.name for step in steps for child in step.parallel or ()]
        if len(set(names)) != len(names):
            raise ValueError(f"workflow {name!r} uses a step name twice: {sorted(names)}")
        self.name = name
        self.steps = list(steps)
        self.version = version
        self.store = store
        self.on_event = on_event
        self.max_steps = max_steps
        #: The retry of every step that sets none (``retry=False`` on a step opts out).
        self.retry = retry or ONCE
        self.signature = workflow_signature(name, version, self.steps)
        self.accepted_signatures = frozenset({self.signature})
        self._by_name = {step.name: step for step in self.steps}
        register("workflow", self)

    def retry_of(self, step: Step) -> Retry:
        """How ``step`` is retried: its own ``Retry``, once for ``False``, else the default."""
        if isinstance(step.retry, Retry):
            return step.retry
        return ONCE if step.retry is False else self.retry

    # -- running ------------------------------------------------------------------------------

    def execute(
        self,
        input: Any = None,
        *,
        run_id: str | None = None,
        context: Any = None,
        signal: AbortSignal | None = None,
    ) -> WorkflowResult:
        """Run the workflow. Aborting ``signal`` cancels the run: it stops before its next
        step (or its next try; a step may watch ``ctx.signal`` to stop part-way), saves a
        ``cancelled`` snapshot and returns a ``cancelled`` result."""
        run_id = run_id or new_run_id(self.name)
        store = new_run_store(
            resolve_store(self.store), run_id, f'workflow "{self.name}"', WorkflowError
        )
        run = _Run(self, run_id, input, context, now_iso(), signal)
        first = self.steps[0].name if self.steps else None
        writer = SnapshotWriter(store, "workflow", self.on_event)
        # Saved before anything runs, so a run killed in its first step can be resumed (and
        # listed by a drain) with its input.
        writer.save(run.snapshot(first, "running"))
        return run.go(first, writer)

    def resume(
        self,
        run_id: str,
        *,
        force: bool = False,
        context: Any = None,
        signal: AbortSignal | None = None,
    ) -> WorkflowResult:
        """Finish the run saved as ``run_id`` from its next step. A run saved by another
        definition raises ``WorkflowDriftError``, and a cancelled run ``RunCancelledError``,
        before anything runs, unless ``force``."""
        store, snapshot, version = load_run(
            resolve_store(self.store), run_id, f'workflow "{self.name}"', WorkflowError
        )
        refuse_cancelled(snapshot, run_id, force)
        done = self._settled(snapshot)
        if snapshot.get("signature") not in self.accepted_signatures and not force:
            raise WorkflowDriftError(
                run_id,
                str(snapshot.get("signature")),
                self.signature,
                completed_steps=done,
                pending_step=snapshot.get("next"),
            )
        run = _Run(self, run_id, snapshot.get("input"), context, snapshot.get("startedAt"), signal)
        run.state, run.steps = dict(snapshot.get("state") or {}), dict(snapshot.get("steps") or {})
        if snapshot.get("status") == "completed":
            return run.result("completed", None)  # settled: nothing runs again
        writer = SnapshotWriter(store, "workflow", self.on_event, version)
        return run.go(self._resume_at(snapshot, done), writer, claim=True)

    def resume_saved(self, key: str, snapshot: Mapping[str, Any], *, force: bool) -> str:
        """What the admin's resume action does with one of this workflow's runs."""
        return self.resume(key, force=force).status

    async def aexecute(
        self,
        input: Any = None,
        *,
        run_id: str | None = None,
        context: Any = None,
        signal: AbortSignal | None = None,
    ) -> WorkflowResult:
        return await asyncio.to_thread(
            self.execute, input, run_id=run_id, context=context, signal=signal
        )

    async def aresume(
        self,
        run_id: str,
        *,
        force: bool = False,
        context: Any = None,
        signal: AbortSignal | None = None,
    ) -> WorkflowResult:
        return await asyncio.to_thread(
            self.resume, run_id, force=force, context=context, signal=signal
        )

    def _settled(self, snapshot: Mapping[str, Any]) -> list[str]:
        """The steps the run finished, in declaration order."""
        records = snapshot.get("steps") or {}
        return [
            step.name
            for step in self.steps
            if (records.get(step.name) or {}).get("status") in ("completed", "skipped")
        ]

    def _resume_at(self, snapshot: Mapping[str, Any], done: list[str]) -> str | None:
        following = snapshot.get("next")
        if isinstance(following, str) and following in self._by_name:
            return following
        if snapshot.get("status") == "running" and following is None and done:
            return None  # it reached its end (routing may have skipped steps): finish it
        return next((step.name for step in self.steps if step.name not in done), None)

    def after(self, step: Step) -> str | None:
        """The next declared step, ``None`` after the last."""
        index = self.steps.index(step)
        return self.steps[index + 1].name if index + 1 < len(self.steps) else None

    def target(self, step: Step, target: str | None, how: str) -> str | None:
        """A routed target as a step name (``None``: the run ends)."""
        if target is None or target == END:
            return None
        if target not in self._by_name:
            raise WorkflowError(
                f'workflow "{self.name}": step "{step.name}" {how} unknown step "{target}"'
            )
        return target


class _Run(RunInProgress[str | None, WorkflowResult]):
    """One run of a workflow in progress: its state, its step records, its snapshots."""

    def __init__(
        self,
        workflow: Workflow,
        run_id: str,
        input: Any,
        context: Any,
        started_at: Any,
        signal: AbortSignal | None = None,
    ) -> None:
        self.workflow = workflow
        self.signal = signal
        self.run_id = run_id
        self.input = input
        self.context = context
        self.started_at = started_at or now_iso()
        self.state: dict[str, Any] = {}
        self.steps: dict[str, dict[str, Any]] = {}

    def run_from(self, current: str | None, writer: SnapshotWriter) -> WorkflowResult:
        entered = 0
        while current is not None:
            entered += 1
            step = self.workflow._by_name[current]
            if entered > self.workflow.max_steps:
                error = WorkflowError(
                    f'workflow "{self.workflow.name}" entered more than '
                    f"{self.workflow.max_steps} steps (a routing loop?)"
                )
                return self.finish(writer, "failed", current, error)
            try:
                self.check_cancelled()
                emit(self.workflow.on_event, "workflow.step.started", {"step": step.name})
                self.settle(step)
            except _Cancelled as cancelled:
                return self.finish(writer, "cancelled", current, cancelled.error)
            except _StepFailed as failed:
                emit(self.workflow.on_event, "workflow.step.failed", {"step": step.name})
                try:
                    routed = step.on_failure(failed.error, self.ctx()) if step.on_failure else None
                    following = self.workflow.target(step, routed, "onFailure routed to")
                except Exception as error:  # the failure route itself failed
                    return self.finish(writer, "failed", step.name, error)
                if routed is None:
                    writer.save(self.snapshot(step.name, "running"))
                    return self.finish(writer, "failed", step.name, failed.error)
            else:
                emit(self.workflow.on_event, "workflow.step.completed", {"step": step.name})
                try:
                    following = self.following(step)
                except Exception as error:
                    # The step is done; resume goes on from the first step not done.
                    return self.finish(writer, "failed", None, error)
            writer.save(self.snapshot(following, "running"))
            current = following
        return self.finish(writer, "completed", None, None)

    def settle(self, step: Step) -> None:
        """Run ``step`` and record it; a failure raises ``_StepFailed``."""
        if step.parallel is not None and not (step.skip is not None and step.skip(self.ctx())):
            self.steps[step.name] = self.run_parallel(step)
            return
        record, state = run_step(step, self.ctx(), self.workflow.retry_of(step))
        self.steps[step.name] = record
        if record["status"] == "failed":
            error = record.pop("exception")
            self.check_cancelled()  # a step that stopped for the signal is no failure
            raise _StepFailed(record, error)
        self.state = state

    def check_cancelled(self) -> None:
        if self.signal is not None and self.signal.aborted:
            raise _Cancelled(cancelled_error(self.signal, self.run_id))

    def following(self, step: Step) -> str | None:
        """The step after ``step``: its ``next`` choice, else the next declared one."""
        chosen = step.next(self.ctx()) if step.next else None
        if chosen is None:
            return self.workflow.after(step)
        return self.workflow.target(step, chosen, "goes to")

    def run_parallel(self, step: Step) -> dict[str, Any]:
        """The group's children run at once, each on its own copy of the state; what each
        changed is merged in declaration order. One record for the group; the children's
        records sit beside it. A failed child fails the group (after every child settled)."""
        started = now_iso()
        children = list(step.parallel or ())
        before = copy.deepcopy(self.state)
        contexts = [self.ctx() for _ in children]
        with ThreadPoolExecutor(max_workers=max(1, len(children))) as pool:
            retries = [self.workflow.retry_of(child) for child in children]
            # Each child in a copy of this context: its tenant (``tenancy``), its span.
            runs = [contextvars.copy_context() for _ in children]
            outcomes = list(
                pool.map(
                    lambda run, *args: run.run(run_step, *args), runs, children, contexts, retries
                )
            )
        merged = copy.deepcopy(self.state)
        error: BaseException | None = None
        for child, (record, state) in zip(children, outcomes, strict=True):
            failure = record.pop("exception", None)
            self.steps[child.name] = record
            if failure is not None:
                error = error or failure
            else:
                merge_changes(merged, state, before)
        if error is not None:
            self.check_cancelled()  # the group's children stopped for the signal
            # Nothing of a failed group's state is kept (resume runs the whole group again);
            # its own record says it failed, beside its children's.
            failed = step_record("failed", started, 1, error=describe(error))
            self.steps[step.name] = failed
            raise _StepFailed(failed, error)
        self.state = merged
        return step_record("completed", started, 1)

    def ctx(self) -> StepContext:
        return StepContext(
            input=self.input,
            context=self.context,
            state=copy.deepcopy(self.state),
            steps=self.steps,
            run_id=self.run_id,
            signal=self.signal,
        )

    def snapshot(self, following: str | None, status: str) -> dict[str, Any]:
        workflow = self.workflow
        snapshot: dict[str, Any] = {
            "runId": self.run_id,
            "workflowName": workflow.name,
            "signature": workflow.signature,
        }
        if workflow.version is not None:
            snapshot["version"] = workflow.version
        snapshot.update(
            input=self.input,
            state=self.state,
            steps=self.steps,
            next=following,
            status=status,
            startedAt=self.started_at,
        )
        return snapshot

    def result(self, status: str, error: BaseException | None) -> WorkflowResult:
        return WorkflowResult(self.run_id, status, self.state, self.steps, error)


def run_step(
    step: Step, ctx: StepContext, retry: Retry = ONCE
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run one (not parallel) step with its retries: its record and the state it left. A
    failed record carries the last error under ``"exception"`` for the caller to take."""
    started = now_iso()
    if step.skip is not None and step.skip(ctx):
        return step_record("skipped", started, 0), ctx.state
    original = ctx.state
    for attempt in range(1, retry.attempts + 1):
        ctx.state, ctx.attempt = copy.deepcopy(original), attempt
        try:
            output = _call(step, ctx)
        except Exception as error:
            retry_on = retry.retry_on
            last = attempt == retry.attempts
            if last or (retry_on is not None and not retry_on(error, attempt)):
                failed = step_record("failed", started, attempt, error=describe(error))
                return {**failed, "exception": error}, original
            if ctx.signal is None:
                time.sleep(retry.wait(attempt))
            elif ctx.signal.wait(retry.wait(attempt)):  # cancelled while it waited
                failed = step_record("failed", started, attempt, error=describe(error))
                return {**failed, "exception": error}, original
            continue
        if output is not None:
            ctx.state[step.name] = output
        return step_record("completed", started, attempt), ctx.state
    raise AssertionError("unreachable: attempts >= 1")


def _call(step: Step, ctx: StepContext) -> Any:
    if step.agent is not None:
        given = step.input(ctx) if step.input is not None else ctx.input
        result = step.agent.execute(given)
    elif step.run is not None:
        result = step.run(ctx)
    else:
        return None
    if inspect.isawaitable(result):
        return asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def step_record(status: str, started: str, attempts: int, **more: Any) -> dict[str, Any]:
    """A step's entry in the snapshot's ``steps``."""
    return {
        "status": status,
        "startedAt": started,
        "endedAt": now_iso(),
        "attempts": attempts,
        **more,
    }


def merge_changes(
    state: dict[str, Any], changed: Mapping[str, Any], before: Mapping[str, Any]
) -> None:
    """Apply to ``state`` what ``changed`` altered relative to ``before``: new or changed keys
    set, removed keys removed; keys the step left alone keep what an earlier child wrote."""
    for key, value in changed.items():
        if key not in before or before[key] != value:
            state[key] = value
    for key in before:
        if key not in changed:
            state.pop(key, None)


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
