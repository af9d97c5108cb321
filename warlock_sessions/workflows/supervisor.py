"""Supervisors: a router picks the next intent (an agent, a workflow or a callback) until it
says END or ``max_iterations`` is reached; a snapshot after every iteration lets a crashed run
resume at the next one (docs/workflows.md)."""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RunCancelledError, SupervisorDriftError, SupervisorFailedError
from ..locks import AbortSignal
from ..snapshots import SnapshotStore
from .protocol import RunnableAgent
from .registry import register
from .runs import (
    EventHandler,
    RunInProgress,
    SnapshotWriter,
    load_run,
    new_run_id,
    new_run_store,
    now_iso,
    refuse_cancelled,
    resolve_store,
)
from .signature import supervisor_signature
from .workflow import Workflow

SUPERVISOR_END = "END"
#: Iterations a supervisor runs at most when given no ``max_iterations``.
DEFAULT_MAX_ITERATIONS = 10
#: Snapshot keys naming what a run belongs to, kept on resume.
TAGS = ("orchestratorName", "sessionId", "turnIndex")


def _check_options(name: Any, version: Any, max_iterations: Any) -> None:
    """A supervisor's name and version are non-empty text, its limit a whole number >= 1."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a supervisor's name is non-empty text, not {name!r}")
    if version is not None and (not isinstance(version, str) or not version):
        raise ValueError(f"a supervisor's version is non-empty text, not {version!r}")
    if max_iterations is not None and (type(max_iterations) is not int or max_iterations < 1):
        raise ValueError(f"max_iterations is a whole number >= 1, not {max_iterations!r}")


@dataclass
class SupervisorContext:
    """What the router and each intent see; ``state`` is the run's, the intent's own copy."""

    input: Any
    context: Any
    state: dict[str, Any]
    iteration: int
    run_id: str
    history: list[dict[str, Any]] = field(default_factory=list)


Handler = Callable[[SupervisorContext], Any] | RunnableAgent | Workflow


@dataclass(frozen=True)
class Intent:
    """What the supervisor can do: ``handler`` is a callback ``(ctx) -> result``, an agent
    (``execute(input, history=...)``) or a workflow. A non-``None`` result is stored as
    ``state[key]`` (a workflow's: its final state). An agent or workflow given no
    ``description`` is described by its own ``description``, if it has one."""

    handler: Handler
    description: str | None = None

    def fingerprint(self) -> dict[str, Any]:
        """``{"d"?, "u"}`` as upstream resolves it: a callback's description as given (left
        out when none is), an agent's or workflow's the first non-blank of its own and the
        unit's, else ``""``."""
        unit = unit_fingerprint(self.handler)
        if unit["t"] == "callback":
            return {"u": unit} if self.description is None else {"d": self.description, "u": unit}
        described = [self.description, getattr(self.handler, "description", None)]
        chosen = next((d for d in described if isinstance(d, str) and d.strip()), "")
        return {"d": chosen, "u": unit}

    def described(self) -> str:
        """What a router agent is told the intent does."""
        return str(self.fingerprint().get("d") or "")


def unit_fingerprint(handler: Handler) -> dict[str, Any]:
    if isinstance(handler, Workflow):
        return {"t": "workflow", "n": handler.name, "s": handler.signature}
    if isinstance(handler, RunnableAgent):
        return {"t": "agent", "n": handler.name}
    return {"t": "callback"}


def earlier_intents(intents: Mapping[str, Intent]) -> dict[str, dict[str, Any]]:
    """The intents as signatures before 0.3.0 hashed them (every description as given, ``""``
    when none was): runs saved then resume as current."""
    return {
        key: {"d": intent.description or "", "u": unit_fingerprint(intent.handler)}
        for key, intent in intents.items()
    }


@dataclass
class SupervisorResult:
    run_id: str
    status: str  # "completed", "failed", "max-iterations" or "cancelled"
    state: dict[str, Any]
    iterations: list[dict[str, Any]]
    error: BaseException | None = None
    #: Snapshot saves that failed (see ``WorkflowResult.lost_snapshots``).
    lost_snapshots: int = 0


class Supervisor:
    """``Supervisor(name, router, intents, max_iterations=10)``. ``router`` is a callback
    ``(ctx) -> intent key or "END"`` or an agent whose ``execute`` returns one. ``version``,
    when given, is written on every snapshot (as the design's ``version?: string``), for
    whoever reads the runs; drift is decided by the signature alone, as upstream does."""

    def __init__(
        self,
        name: str,
        router: Callable[[SupervisorContext], str | None] | RunnableAgent,
        intents: Mapping[str, Intent | Handler],
        *,
        max_iterations: int | None = None,
        initial: str | None = None,
        store: SnapshotStore | None = None,
        on_event: EventHandler | None = None,
        registered: bool = True,
        version: str | None = None,
    ) -> None:
        _check_options(name, version, max_iterations)
        self.version = version
        self.intents = {
            key: intent if isinstance(intent, Intent) else Intent(intent)
            for key, intent in intents.items()
        }
        if initial is not None and initial not in self.intents:
            raise ValueError(f"the initial intent {initial!r} is not one of the intents")
        self.name = name
        self.router = router
        self.max_iterations = max_iterations or DEFAULT_MAX_ITERATIONS
        self.initial = initial
        self.store = store
        self.on_event = on_event
        routed_by_agent = isinstance(router, RunnableAgent)
        sign = functools.partial(
            supervisor_signature,
            name,
            router=router.name if routed_by_agent else None,  # type: ignore[union-attr]
            route_callback=not routed_by_agent,
            evaluate=False,
            initial=initial,
        )
        fingerprints = {key: intent.fingerprint() for key, intent in self.intents.items()}
        self.signature = sign(fingerprints, max_iterations=max_iterations)
        #: The signatures a saved run may carry and still be this definition's: today's, and
        #: what 0.2 computed for it (an omitted limit hashed as 10, no description as "").
        self.accepted_signatures = frozenset(
            {
                self.signature,
                sign(earlier_intents(self.intents), max_iterations=self.max_iterations),
            }
        )
        if registered:  # an orchestrator's turns resume through the orchestrator
            register("supervisor", self)

    def execute(
        self,
        input: Any = None,
        *,
        run_id: str | None = None,
        context: Any = None,
        state: dict[str, Any] | None = None,
        persist: bool = True,
        tags: dict[str, Any] | None = None,
        signal: AbortSignal | None = None,
    ) -> SupervisorResult:
        """Run from ``state`` (default empty) until END or ``max_iterations``; with
        ``persist=False`` no snapshot is saved (a run that cannot resume). Aborting ``signal``
        cancels the run before its next iteration, with a ``cancelled`` snapshot."""
        run_id = run_id or new_run_id(self.name)
        store = None
        if persist:
            who = f'supervisor "{self.name}"'
            store = new_run_store(resolve_store(self.store), run_id, who, SupervisorFailedError)
        run = _SupervisorRun(self, run_id, input, context, now_iso())
        run.signal = signal
        run.state = run.initial = dict(state or {})
        run.tags = dict(tags or {})
        writer = SnapshotWriter(store, "supervisor", self.on_event)
        # Saved before the first iteration, so a run killed there resumes with its input.
        writer.save(run.snapshot(-1, "running"))
        return run.go(0, writer)

    def resume(
        self,
        run_id: str,
        *,
        force: bool = False,
        context: Any = None,
        signal: AbortSignal | None = None,
    ) -> SupervisorResult:
        """Go on with the run saved as ``run_id`` at the iteration after its last one (with
        that iteration's state; nothing done before runs again). A cancelled run raises
        ``RunCancelledError`` unless ``force``."""
        store, snapshot, version = load_run(
            resolve_store(self.store), run_id, f'supervisor "{self.name}"', SupervisorFailedError
        )
        cancelled = refuse_cancelled(snapshot, run_id, force)
        if snapshot.get("signature") not in self.accepted_signatures and not force:
            raise SupervisorDriftError(run_id, str(snapshot.get("signature")), self.signature)
        run = _SupervisorRun(
            self, run_id, snapshot.get("input"), context, snapshot.get("startedAt")
        )
        run.tags = {key: snapshot[key] for key in TAGS if key in snapshot}
        run.iterations = read_iterations(snapshot, run_id)
        run.initial = dict(snapshot.get("initialState") or {})
        run.state = dict(run.iterations[-1]["state"]) if run.iterations else dict(run.initial)
        run.signal = signal
        if snapshot.get("status") != "running" and not cancelled:
            return run.result(str(snapshot.get("status")), None)
        writer = SnapshotWriter(store, "supervisor", self.on_event, version)
        return run.go(int(snapshot.get("iteration", -1)) + 1, writer, claim=True)

    def resume_saved(self, key: str, snapshot: Mapping[str, Any], *, force: bool) -> str:
        """What the admin's resume action does with one of this supervisor's runs."""
        return self.resume(key, force=force).status

    async def aexecute(
        self, input: Any = None, *, run_id: str | None = None, context: Any = None
    ) -> SupervisorResult:
        return await asyncio.to_thread(self.execute, input, run_id=run_id, context=context)

    async def aresume(
        self, run_id: str, *, force: bool = False, context: Any = None
    ) -> SupervisorResult:
        return await asyncio.to_thread(self.resume, run_id, force=force, context=context)


def read_iterations(snapshot: Mapping[str, Any], run_id: str) -> list[dict[str, Any]]:
    """The saved iterations, ours or upstream's (whose entries name their intents in
    ``result`` and ``decision`` rather than ``intent``), each given its ``intent``. A snapshot
    that is neither is refused before anything runs, so it is never overwritten as failed."""
    entries: Any = snapshot.get("snapshots") or []
    read: list[dict[str, Any]] = []
    for entry in entries if isinstance(entries, list) else [None]:
        readable = isinstance(entry, Mapping) and isinstance(entry.get("state"), Mapping)
        intent = _intent_of(entry) if readable else None
        if intent is None:
            raise SupervisorFailedError(
                f'the snapshot of run "{run_id}" cannot be read: an iteration is not one this '
                "supervisor or upstream's writes (it is left as it was)"
            )
        read.append({**dict(entry or {}), "intent": intent})
    return read


def _intent_of(entry: Any) -> str | None:
    if isinstance(entry.get("intent"), str):
        return str(entry["intent"])
    result = entry.get("result")
    if isinstance(result, Mapping) and result:
        return ",".join(str(key) for key in result)  # upstream may fan out to several
    decision = entry.get("decision")
    chosen = decision.get("next") if isinstance(decision, Mapping) else None
    return chosen if isinstance(chosen, str) else None


class _SupervisorRun(RunInProgress[int, SupervisorResult]):
    def __init__(
        self, supervisor: Supervisor, run_id: str, input: Any, context: Any, started_at: Any
    ) -> None:
        self.supervisor = supervisor
        self.run_id = run_id
        self.input = input
        self.context = context
        self.started_at = started_at or now_iso()
        self.state: dict[str, Any] = {}
        self.initial: dict[str, Any] = {}  # the state before the first iteration
        self.tags: dict[str, Any] = {}  # who the run belongs to (an orchestrator's turn)
        self.iterations: list[dict[str, Any]] = []
        self.signal: AbortSignal | None = None

    def claimed_at(self, start: int) -> int:
        return start - 1  # the last iteration done

    def run_from(self, iteration: int, writer: SnapshotWriter) -> SupervisorResult:
        supervisor = self.supervisor
        while iteration < supervisor.max_iterations:
            if self.signal is not None and self.signal.aborted:
                reason = self.signal.reason or RunCancelledError(self.run_id)
                return self.finish(writer, "cancelled", iteration - 1, reason)
            try:
                key = self.route(iteration)
                if key == SUPERVISOR_END:
                    return self.finish(writer, "completed", iteration - 1, None)
                self.state = self.dispatch(key, iteration)
            except Exception as error:  # the run's failure, recorded in its snapshot
                return self.finish(writer, "failed", iteration - 1, error)
            self.iterations.append(
                {"iteration": iteration, "intent": key, "state": copy.deepcopy(self.state)}
            )
            writer.save(self.snapshot(iteration, "running"))
            iteration += 1
        return self.finish(writer, "max-iterations", iteration - 1, None)

    def route(self, iteration: int) -> str:
        supervisor = self.supervisor
        if iteration == 0 and supervisor.initial is not None and not self.iterations:
            return supervisor.initial
        router = supervisor.router
        ctx = self.ctx(iteration)
        if isinstance(router, RunnableAgent):
            chosen = router.execute(
                {"input": self.input, "state": ctx.state, "intents": self.described()},
                history=ctx.history,
            )
        else:
            chosen = router(ctx)
        key = SUPERVISOR_END if chosen is None else str(chosen)
        if key != SUPERVISOR_END and key not in supervisor.intents:
            raise SupervisorFailedError(
                f'supervisor "{supervisor.name}" was routed to unknown intent "{key}"'
            )
        return key

    def dispatch(self, key: str, iteration: int) -> dict[str, Any]:
        ctx = self.ctx(iteration)
        handler = self.supervisor.intents[key].handler
        if isinstance(handler, Workflow):
            result = handler.execute(self.input, context=self.context)
            if result.error is not None:
                raise result.error
            output: Any = result.state
        elif isinstance(handler, RunnableAgent):
            output = handler.execute(self.input, history=ctx.history)
        else:
            output = handler(ctx)
        if output is not None:
            ctx.state[key] = output
        return ctx.state

    def described(self) -> dict[str, str]:
        return {key: intent.described() for key, intent in self.supervisor.intents.items()}

    def ctx(self, iteration: int) -> SupervisorContext:
        return SupervisorContext(
            input=self.input,
            context=self.context,
            state=copy.deepcopy(self.state),
            iteration=iteration,
            run_id=self.run_id,
            history=[{"iteration": i["iteration"], "intent": i["intent"]} for i in self.iterations],
        )

    def snapshot(self, iteration: int, status: str) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "supervisorName": self.supervisor.name,
            "signature": self.supervisor.signature,
            **({"version": self.supervisor.version} if self.supervisor.version else {}),
            "input": self.input,
            "initialState": self.initial,
            "iteration": iteration,
            "snapshots": self.iterations,
            "status": status,
            "startedAt": self.started_at,
            **self.tags,
        }

    def result(self, status: str, error: BaseException | None) -> SupervisorResult:
        return SupervisorResult(self.run_id, status, self.state, self.iterations, error)
