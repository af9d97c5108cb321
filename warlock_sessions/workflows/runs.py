"""What workflows and supervisors share: run ids, the snapshot store a run uses, and saving
its snapshot after each step (conditionally on a versioned store)."""

from __future__ import annotations

import logging
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from django.core.exceptions import ImproperlyConfigured

from ..errors import (
    ConditionalSaveUnsupportedError,
    RunCancelledError,
    RunNotRunningError,
    SnapshotConflictError,
)
from ..snapshots import SnapshotStore, default_snapshot_store

logger = logging.getLogger("warlock_sessions.workflows")

EventHandler = Callable[[str, dict[str, Any]], None]
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _BASE36[digit] + digits
        if not number:
            return digits


def new_run_id(name: str) -> str:
    """``<name>_<time in base 36>_<8 random base-36 digits>``: unique, roughly ordered by start,
    never parsed."""
    token = "".join(secrets.choice(_BASE36) for _ in range(8))
    return f"{name}_{base36(int(time.time() * 1000))}_{token}"


def now_iso() -> str:
    return iso_after(0)


def iso_after(seconds: float) -> str:
    """The moment ``seconds`` from now, as the records write moments (UTC, milliseconds, Z):
    two such texts compare as the moments do."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def resolve_store(store: SnapshotStore | None) -> SnapshotStore | None:
    """The store given, else ``WARLOCK_SESSIONS["SNAPSHOT_STORE"]``, else ``None``."""
    return store if store is not None else default_snapshot_store()


def load_run(
    store: SnapshotStore | None, run_id: str, who: str, error: type[Exception]
) -> tuple[SnapshotStore, dict[str, Any], int | None]:
    """The store, the snapshot of ``run_id`` and its version (on a versioned store), or
    ``error`` saying which is missing. ``who`` names the workflow or supervisor."""
    if store is None:
        raise error(
            f"{who} has no snapshot store: pass store= or set "
            'WARLOCK_SESSIONS["SNAPSHOT_STORE"] to resume a run'
        )
    loaded = store.load_versioned(run_id) if store.versioned else None
    snapshot = loaded[0] if loaded else store.load(run_id)
    if snapshot is None:
        raise error(f'{who} has no snapshot of run "{run_id}"')
    return store, snapshot, loaded[1] if loaded else None


def new_run_store(
    store: SnapshotStore | None, run_id: str, who: str, error: type[Exception]
) -> SnapshotStore | None:
    """The store a new run saves in, after checking nothing is saved under ``run_id`` yet: a
    run id names one run, so starting it again is refused before anything runs (resume it,
    or delete its snapshot to start over)."""
    if store is not None and store.load(run_id) is not None:
        raise error(
            f'{who} already has a run "{run_id}": resume it, or delete its snapshot to start over'
        )
    return store


#: How often ``cancel_saved`` reloads a run that saved between its load and its save.
CANCEL_TRIES = 10


def cancel_saved(store: SnapshotStore, run_id: str, reason: str = "") -> dict[str, Any]:
    """Mark the saved run ``run_id`` cancelled, from any process (the admin, the API): the
    process running it finds out at its next save, which loses the version race, and stops
    there (``CancelledElsewhere``). The cancelled snapshot, or ``RunNotRunningError``.

    Only a store that keeps versions can do this: on another, the running process's next
    save would silently undo the cancel."""
    if not store.versioned:
        raise ConditionalSaveUnsupportedError(
            f"{type(store).__name__} keeps no versions, so a running run cannot be cancelled "
            "from another process (its next save would undo it): use the Django or memory "
            "snapshot store, or cancel through the run's signal"
        )
    for _ in range(CANCEL_TRIES):
        loaded = store.load_versioned(run_id)
        if loaded is None:
            raise RunNotRunningError(run_id, None)
        snapshot, version = loaded
        if snapshot.get("status") != "running":
            raise RunNotRunningError(run_id, str(snapshot.get("status") or "without a status"))
        snapshot.update(status="cancelled", cancelReason=reason, savedAt=now_iso())
        try:
            store.save(snapshot, expected_version=version)
        except SnapshotConflictError:
            continue  # the run saved a step meanwhile: cancel what it is now
        return snapshot
    raise SnapshotConflictError(run_id, version, None)


class CancelledElsewhere(Exception):
    """The run's snapshot was cancelled by another process (``cancel_saved``): the writer has
    saved the run's progress as cancelled; the run returns a ``cancelled`` result with
    ``error``."""

    def __init__(self, error: RunCancelledError) -> None:
        super().__init__(str(error))
        self.error = error


class SnapshotWriter:
    """Saves one run's snapshots. On a versioned store every save is conditional on the
    version this run last saw, so a second process resuming the same run loses with
    ``SnapshotConflictError`` (which stops the run), and a run cancelled meanwhile by
    ``cancel_saved`` saves its progress as cancelled and raises ``CancelledElsewhere``. Any
    other failure to save is not fatal: the run goes on, and a ``<kind>.error`` event and a
    log line say what was lost."""

    def __init__(
        self,
        store: SnapshotStore | None,
        kind: str,
        on_event: EventHandler | None,
        version: int | None = None,
    ) -> None:
        self.store = store
        self.kind = kind
        self.on_event = on_event
        self.version = version if version is not None else 0
        #: Saves that failed: the run reports them (``lost_snapshots``), never durable success.
        self.lost = 0

    def save(self, snapshot: dict[str, Any]) -> None:
        if self.store is None:
            return
        snapshot["savedAt"] = now_iso()
        try:
            if self.store.versioned:
                self._save_versioned(self.store, snapshot)
            else:
                self.store.save(snapshot)
        except (SnapshotConflictError, ImproperlyConfigured, CancelledElsewhere):
            raise  # another writer owns the run, or snapshots cannot be kept at all
        except Exception as error:  # a lost snapshot must not fail the run
            self.lost += 1
            logger.warning("could not save the snapshot of %s", snapshot["runId"], exc_info=True)
            emit(self.on_event, f"{self.kind}.error", {"runId": snapshot["runId"], "error": error})

    def _save_versioned(self, store: SnapshotStore, snapshot: dict[str, Any]) -> None:
        try:
            store.save(snapshot, expected_version=self.version)
        except SnapshotConflictError as conflict:
            try:
                stored = store.load_versioned(snapshot["runId"])
            except Exception:  # not knowing who owns the run now, it is not this one
                raise conflict from None
            # Only a cancel written right over this run's last save stops it here: anything
            # else (a forced resume elsewhere, cancelled or not) owns the run now.
            if stored is None or stored[0].get("status") != "cancelled":
                raise
            if stored[1] != self.version + 1:
                raise
            # Cancelled while this step ran: keep what the run did, as cancelled.
            reason = str(stored[0].get("cancelReason") or "")
            snapshot.update(status="cancelled", cancelReason=reason)
            store.save(snapshot, expected_version=stored[1])
            self.version = stored[1] + 1
            raise CancelledElsewhere(RunCancelledError(snapshot["runId"], reason)) from None
        self.version += 1


Position = TypeVar("Position")
Result = TypeVar("Result", bound="Settled")


class Settled(Protocol):
    lost_snapshots: int


class RunInProgress(ABC, Generic[Position, Result]):
    """What a workflow's and a supervisor's run in progress share: going on from a position
    (a step, an iteration), claiming the run first on a resume (saving it ``running`` under
    the version it loaded, so of two processes resuming it, or a resume racing the process
    it was cancelled in, the loser runs nothing), stopping when it was cancelled elsewhere,
    and finishing with its last snapshot and a result that counts the snapshots it lost."""

    def go(self, start: Position, writer: SnapshotWriter, *, claim: bool = False) -> Result:
        try:
            if claim:
                writer.save(self.snapshot(self.claimed_at(start), "running"))
            return self.run_from(start, writer)
        except CancelledElsewhere as cancelled:  # its progress is saved, as cancelled
            return self.settled(writer, "cancelled", cancelled.error)

    def finish(
        self, writer: SnapshotWriter, status: str, position: Position, error: BaseException | None
    ) -> Result:
        writer.save(self.snapshot(position, status))
        return self.settled(writer, status, error)

    def settled(self, writer: SnapshotWriter, status: str, error: BaseException | None) -> Result:
        result = self.result(status, error)
        result.lost_snapshots = writer.lost
        return result

    def claimed_at(self, start: Position) -> Position:
        """The position the claim's snapshot records for a run going on at ``start``."""
        return start

    @abstractmethod
    def run_from(self, start: Position, writer: SnapshotWriter) -> Result: ...

    @abstractmethod
    def snapshot(self, position: Position, status: str) -> dict[str, Any]: ...

    @abstractmethod
    def result(self, status: str, error: BaseException | None) -> Result: ...


def emit(on_event: EventHandler | None, name: str, payload: dict[str, Any]) -> None:
    if on_event is not None:
        on_event(name, payload)


def refuse_cancelled(snapshot: Mapping[str, Any], run_id: str, force: bool) -> bool:
    """Whether the saved run was cancelled; ``RunCancelledError`` unless ``force``."""
    cancelled = snapshot.get("status") == "cancelled"
    if cancelled and not force:
        raise RunCancelledError(run_id, "resume(force=True) runs it on")
    return cancelled
