"""The CheckpointStore contract (docs/snapshots.md#checkpoints): an orchestrator's per-session
state, one appended row per turn, keyed by orchestrator name, session id and turn index.

Rows are append-only on every backend: saving a turn that is already stored raises
``DuplicateCheckpointError`` (upstream's memory and Redis stores silently pushed a second
row). ``prune(name, session_id, keep_before)`` deletes the turns before ``keep_before`` on
every backend alike (upstream's PostgreSQL and Redis stores read it as a count to keep).
"""

from __future__ import annotations

import builtins
import json
from abc import abstractmethod
from datetime import UTC, datetime
from typing import Any

from ..backends.keyed import KeyedStore, check_key
from ..conf import Expected, expect
from ..encryption import open_json, seal_json, state_place
from ..engine.isotime import iso_from_datetime, to_iso
from ..engine.session import json_problem

# The checkpoint stores' errors live in errors.py; importable from here as before.
from ..errors import DuplicateCheckpointError as DuplicateCheckpointError
from ..errors import InvalidSnapshotError
from ..errors import SnapshotError as SnapshotError
from ..redaction import redact_value

#: The columns of a checkpoint row, in the order the PostgreSQL table has them.
COLUMNS = (
    "orchestrator_name",
    "session_id",
    "turn_index",
    "state",
    "last_route",
    "signature",
    "version",
    "summarized_through",
    "lock_acquired_at",
    "lock_expires_at",
    "saved_at",
)
#: The columns that hold a moment: kept and given back as JavaScript's ``toISOString`` writes
#: it (milliseconds, ``Z``) on every backend, as the design's rows are.
MOMENTS = ("lock_acquired_at", "lock_expires_at", "saved_at")


def check_row(row: object) -> dict[str, Any]:
    """The row with every column (missing optional ones ``None``, ``saved_at`` now), or
    ``InvalidSnapshotError`` naming what is off."""
    if not isinstance(row, dict):
        raise InvalidSnapshotError(f"a checkpoint row is a dict, not {type(row).__name__}")
    unknown = sorted(set(row) - set(COLUMNS))
    if unknown:
        raise InvalidSnapshotError(f"a checkpoint row has no column {unknown[0]!r}")
    checked = {column: row.get(column) for column in COLUMNS}
    check_key(checked["orchestrator_name"], "orchestrator_name", "checkpoint")
    check_key(checked["session_id"], "session_id", "checkpoint")
    turn = checked["turn_index"]
    if type(turn) is not int or turn < 0:
        raise InvalidSnapshotError(f"turn_index is a whole number >= 0, not {turn!r}")
    if not isinstance(checked["signature"], str):
        raise InvalidSnapshotError("a checkpoint row needs its signature (text)")
    route = checked["last_route"]
    if not (route is None or isinstance(route, str) or _texts(route)):
        raise InvalidSnapshotError("last_route is text, a list of text, or None")
    problem = json_problem(checked["state"])
    if problem is not None:
        raise InvalidSnapshotError(f"state{problem[0]} {problem[1]}")
    for column in MOMENTS:
        if checked[column] is not None:
            moment = to_iso(checked[column])
            if moment is None:
                raise InvalidSnapshotError(f"{column} is a moment, not {checked[column]!r:.60}")
            checked[column] = moment
    checked["saved_at"] = checked["saved_at"] or iso_from_datetime(datetime.now(UTC))
    return checked


def with_moments(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its moments as ``toISOString`` text, however its backend read them (a
    database gives datetimes, or text with microseconds and ``+00:00``)."""
    return {**row, **{column: to_iso(row[column]) for column in MOMENTS if row.get(column)}}


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def encode_route(route: str | list[str] | None) -> str | None:
    """A list route as JSON text (it starts with ``[``), text as itself."""
    return json.dumps(route) if isinstance(route, list) else route


def decode_route(stored: str | None) -> str | list[str] | None:
    if stored is not None and stored.startswith("["):
        decoded: list[str] = json.loads(stored)
        return decoded
    return stored


def opened_state(row: Any) -> Any:
    """A ``Checkpoint`` row's state as saved, opened if it was sealed."""
    return open_json(row.state, *state_place(vars(row)))


class CheckpointStore(KeyedStore):
    """An orchestrator's per-session turns, appended. The checks are made once, here, as the
    snapshot stores' are: a backend implements ``_load``, ``_save`` (a checked row),
    ``_delete``, ``_list`` and ``_prune``."""

    kind = "checkpoint"

    def load(self, name: str, session_id: str) -> dict[str, Any] | None:
        """The row with the highest ``turn_index``, or ``None``."""
        row = self._load(*_keys(name, session_id))
        if row is None:
            return None
        place = state_place(row)
        return with_moments({**row, "state": open_json(row["state"], *place)})

    def save(self, row: dict[str, Any]) -> None:
        """Append a row (its state redacted when ``REDACT`` is set); a stored turn raises
        ``DuplicateCheckpointError``."""
        checked = check_row(row)
        state = seal_json(redact_value(checked["state"]), *state_place(checked))
        self._save({**checked, "state": state})

    def delete(self, name: str, session_id: str) -> bool:
        """Delete every row of the session: whether there was one (none is fine)."""
        return self._delete(*_keys(name, session_id))

    def list(self, name: str, prefix: str | None = None) -> builtins.list[str]:
        """The sessions with rows, sorted; only those starting with ``prefix`` (exactly)."""
        self.check_key(name, "orchestrator_name")
        return self._list(name, self.check_prefix(prefix) or None)

    def prune(self, name: str, session_id: str, keep_before: int) -> None:
        """Delete the session's turns before ``keep_before``."""
        if type(keep_before) is not int or keep_before < 0:
            raise InvalidSnapshotError(f"keep_before is a whole number >= 0, not {keep_before!r}")
        self._prune(*_keys(name, session_id), keep_before)

    @abstractmethod
    def _load(self, name: str, session_id: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def _save(self, row: dict[str, Any]) -> None:
        """Append ``row``, checked (every column present)."""

    @abstractmethod
    def _delete(self, name: str, session_id: str) -> bool:
        """Delete the session's rows: whether there was one."""

    @abstractmethod
    def _list(self, name: str, prefix: str | None) -> builtins.list[str]: ...

    @abstractmethod
    def _prune(self, name: str, session_id: str, keep_before: int) -> None: ...


def _keys(name: object, session_id: object) -> tuple[str, str]:
    return (
        check_key(name, "orchestrator_name", "checkpoint"),
        check_key(session_id, "session_id", "checkpoint"),
    )


expect(
    "CHECKPOINT_STORE",
    Expected(CheckpointStore, "a CheckpointStore class", "warlock_sessions.E021"),
)
