"""Orchestrators: per-session turns over a set of intents, each turn's state appended to a
checkpoint store; with ``iterate=True`` a turn is a supervisor run whose snapshots let a turn
cut short by a crash finish in another process (docs/workflows.md#orchestrators)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..checkpoints import CheckpointStore, default_checkpoint_store
from ..conf import Expected, expect
from ..errors import OrchestratorDriftError, SupervisorFailedError
from ..locks import AbortSignal
from ..models import Checkpoint, Snapshot
from ..snapshots import SnapshotStore
from ..tenancy import EVERY_TENANT, tenant_scope
from ..tenancy import enabled as tenants_enabled
from .registry import register
from .runs import logger, now_iso, resolve_store
from .signature import orchestrator_signature
from .supervisor import (
    DEFAULT_MAX_ITERATIONS,
    Handler,
    Intent,
    Supervisor,
    SupervisorContext,
    SupervisorResult,
    earlier_intents,
)

DEFAULT_KEEP_SNAPSHOTS = 100  # turns kept per session; "all" keeps every one


@dataclass
class OrchestratorTurn:
    session_id: str
    turn_index: int
    status: str  # "completed", "failed", "max-iterations" or "cancelled"
    state: dict[str, Any]
    route: str | list[str] | None
    error: BaseException | None = None


class Orchestrator:
    """``Orchestrator(name, intents, route=...)``. ``turn(session_id, input)`` loads the
    session's latest checkpoint, refuses a changed definition (``OrchestratorDriftError``),
    routes (once, or with ``iterate=True`` until END as a supervisor run whose snapshots sit in
    ``snapshot_store``) and appends the new turn, only when it succeeded. ``resume`` finishes a
    turn a crash cut short; ``drain`` resumes every session's (``warlock_worker`` does it at
    start-up for the orchestrators in ``WARLOCK_SESSIONS["ORCHESTRATORS"]``)."""

    def __init__(
        self,
        name: str,
        intents: Mapping[str, Intent | Handler],
        *,
        route: Callable[[SupervisorContext], str | None],
        iterate: bool = False,
        max_iterations: int | None = None,
        version: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        snapshot_store: SnapshotStore | None = None,
        keep_snapshots: int | str = DEFAULT_KEEP_SNAPSHOTS,
    ) -> None:
        if ":" in name:
            raise ValueError(f"an orchestrator's name may not hold ':', got {name!r}")
        if keep_snapshots != "all" and (type(keep_snapshots) is not int or keep_snapshots < 1):
            raise ValueError(
                f"keep_snapshots is a whole number >= 1 or 'all', not {keep_snapshots!r}"
            )
        self.name = name
        self.iterate = iterate
        self.version = version
        self.checkpoint_store = checkpoint_store
        self.snapshot_store = snapshot_store
        self.keep_snapshots = keep_snapshots
        self.supervisor = Supervisor(
            name,
            route,
            intents,
            max_iterations=max_iterations if iterate else 1,
            store=snapshot_store,
            registered=False,
        )
        sign = functools.partial(
            orchestrator_signature,
            name,
            router=None,
            route_callback=True,
            evaluate=False,
            initial=None,
            iterate=iterate,
        )
        fingerprints = {key: i.fingerprint() for key, i in self.supervisor.intents.items()}
        self.signature = sign(fingerprints, max_iterations=max_iterations)
        #: Today's signature, and what 0.2 computed for this definition (an omitted limit
        #: hashed as 10, no description as "", a history window it does not have as a
        #: callback): sessions saved then go on as current.
        self.accepted_signatures = frozenset(
            {
                self.signature,
                sign(
                    earlier_intents(self.supervisor.intents),
                    max_iterations=max_iterations or DEFAULT_MAX_ITERATIONS,
                    history_window={"router": "callback", "agents": None},
                ),
            }
        )
        register("orchestrator", self)

    def checkpoints(self) -> CheckpointStore:
        """Its own store, else the configured default (read anew: the settings may change)."""
        store = self.checkpoint_store
        if store is None:
            store = default_checkpoint_store()
        if store is None:
            raise SupervisorFailedError(
                f'orchestrator "{self.name}" has no checkpoint store: pass checkpoint_store= '
                'or set WARLOCK_SESSIONS["CHECKPOINT_STORE"]'
            )
        return store

    def run_id(self, session_id: str, turn: int) -> str:
        return f"{session_id}.{self.version or 'unversioned'}.{turn}"

    def turn(
        self,
        session_id: str,
        input: Any,
        *,
        context: Any = None,
        force: bool = False,
        signal: AbortSignal | None = None,
    ) -> OrchestratorTurn:
        """Run the session's next turn. A turn a crash left behind is settled first: finished
        if it was cut short, recorded if it ended but was not recorded, discarded if it
        failed or was cancelled (such a turn is never recorded; its input is the caller's to
        send again). Aborting ``signal`` cancels this turn between its iterations."""
        self.resume(session_id, force=force)
        latest = self._latest(session_id, force)
        turn = latest["turn_index"] + 1 if latest else 0
        state = copy.deepcopy(latest["state"]) if latest else {}
        result = self.supervisor.execute(
            input,
            run_id=self.run_id(session_id, turn),
            context=context,
            state=state,
            persist=self.iterate,  # one routing needs no snapshot to resume from
            tags={"orchestratorName": self.name, "sessionId": session_id, "turnIndex": turn},
            signal=signal,
        )
        return self._settle(session_id, turn, result)

    def resume(self, session_id: str, *, force: bool = False) -> OrchestratorTurn | None:
        """Settle the turn a crash left behind (iterate mode): finish it if its supervisor run
        was cut short, record it if it ended unrecorded; ``None`` when there is none."""
        store = resolve_store(self.snapshot_store)
        if not self.iterate or store is None:
            return None
        latest = self._latest(session_id, force)
        turn = latest["turn_index"] + 1 if latest else 0
        run_id = self.run_id(session_id, turn)
        snapshot = store.load(run_id)
        if snapshot is None:
            return None
        if snapshot.get("status") in ("failed", "cancelled"):
            store.delete(run_id)  # discarded: the next turn starts from the last recorded one
            return None
        result = self.supervisor.resume(run_id, force=force)  # a settled run re-runs nothing
        return self._settle(session_id, turn, result)

    def resume_saved(self, key: str, snapshot: Mapping[str, Any], *, force: bool) -> str:
        """What the admin's resume action does with one of this orchestrator's turns."""
        done = self.resume(str(snapshot.get("sessionId")), force=force)
        return done.status if done is not None else "nothing to resume"

    def drain(self) -> list[OrchestratorTurn]:
        """Settle every session's turn left behind (at boot: a crashed process's turns finish
        here): the sessions with checkpoints, and those whose first turn was cut short before
        any was recorded (found by its snapshot, saved when the turn started). A session that
        cannot be settled (drift, a failing intent) is logged and skipped; the others go on."""
        with tenant_scope(EVERY_TENANT):
            recorded = self.checkpoints().list(self.name)
            left = self._first_turns_left(set(recorded))
        finished = []
        for session_id in [*recorded, *left]:
            try:
                with tenant_scope(self._tenant_of(session_id) or EVERY_TENANT):
                    done = self.resume(session_id)
            except Exception:
                logger.exception("could not settle session %r of %r", session_id, self.name)
                continue
            if done is not None:
                finished.append(done)
        return finished

    def _tenant_of(self, session_id: str) -> str | None:
        """The tenant a session's turns are settled in (``tenancy``): its checkpoints', else
        its first turn's snapshot's; ``None`` (every tenant) for one of no tenant, or while
        tenants are off."""
        if not tenants_enabled():
            return None
        using = getattr(self.checkpoints(), "using", None)
        turns = Checkpoint._base_manager.db_manager(using).filter(
            orchestrator_name=self.name, session_id=session_id
        )
        found = turns.values_list("tenant", flat=True).first()
        if found is None:
            store = resolve_store(self.snapshot_store)
            first = Snapshot._base_manager.db_manager(getattr(store, "using", None)).filter(
                key=self.run_id(session_id, 0)
            )
            found = first.values_list("tenant", flat=True).first()
        return found or None

    def _first_turns_left(self, recorded: set[str]) -> list[str]:
        """The sessions of this orchestrator with a first turn's snapshot and no checkpoint:
        their first turn was cut short (or failed, which settling discards)."""
        store = resolve_store(self.snapshot_store)
        if not self.iterate or store is None:
            return []
        suffix = self.run_id("", 0)  # ".<version>.0"
        sessions = []
        for key in store.list():
            session_id = key.removesuffix(suffix)
            if session_id == key or session_id in recorded:
                continue
            snapshot = store.load(key)
            tags = (snapshot or {}).get("orchestratorName"), (snapshot or {}).get("sessionId")
            if tags == (self.name, session_id):
                sessions.append(session_id)
        return sessions

    def _latest(self, session_id: str, force: bool) -> dict[str, Any] | None:
        latest = self.checkpoints().load(self.name, session_id)
        if latest is not None and latest["signature"] not in self.accepted_signatures and not force:
            raise OrchestratorDriftError(session_id, latest["signature"], self.signature)
        return latest

    def _settle(self, session_id: str, turn: int, result: SupervisorResult) -> OrchestratorTurn:
        routes = [entry["intent"] for entry in result.iterations]
        route: str | list[str] | None = routes if self.iterate else (routes[0] if routes else None)
        status = result.status
        if not self.iterate and status == "max-iterations":
            status = "completed"  # routed once, as it should
        outcome = OrchestratorTurn(session_id, turn, status, result.state, route, result.error)
        if status in ("failed", "cancelled"):
            return outcome  # a turn is persisted only when it succeeded
        self.checkpoints().save(
            {
                "orchestrator_name": self.name,
                "session_id": session_id,
                "turn_index": turn,
                "state": result.state,
                "last_route": route,
                "signature": self.signature,
                "version": self.version,
                "saved_at": now_iso(),
            }
        )
        if self.keep_snapshots != "all":
            keep_before = turn - int(self.keep_snapshots) + 1
            if keep_before > 0:
                self.checkpoints().prune(self.name, session_id, keep_before)
        return outcome


def drain_configured() -> list[OrchestratorTurn]:
    """Drain every orchestrator of ``WARLOCK_SESSIONS["ORCHESTRATORS"]``."""
    from ..conf import warlock_settings

    finished: list[OrchestratorTurn] = []
    for orchestrator in warlock_settings.ORCHESTRATORS:
        finished += orchestrator.drain()
    return finished


expect(
    "ORCHESTRATORS",
    Expected(Orchestrator, "an Orchestrator", "warlock_sessions.E022", instance=True),
)
