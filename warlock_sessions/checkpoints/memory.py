"""MemoryCheckpointStore: checkpoint rows in this process, copied on save and load."""

from __future__ import annotations

import builtins
import copy
import threading
from typing import Any

from .base import CheckpointStore, DuplicateCheckpointError


class MemoryCheckpointStore(CheckpointStore):
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def _load(self, name: str, session_id: str) -> dict[str, Any] | None:
        with self._lock:
            turns = self._rows.get((name, session_id))
            return copy.deepcopy(turns[max(turns)]) if turns else None

    def _save(self, row: dict[str, Any]) -> None:
        checked = copy.deepcopy(row)
        name, session_id, turn = (
            checked["orchestrator_name"],
            checked["session_id"],
            checked["turn_index"],
        )
        with self._lock:
            turns = self._rows.setdefault((name, session_id), {})
            if turn in turns:
                raise DuplicateCheckpointError(name, session_id, turn)
            turns[turn] = checked

    def _delete(self, name: str, session_id: str) -> bool:
        with self._lock:
            return bool(self._rows.pop((name, session_id), None))

    def _list(self, name: str, prefix: str | None) -> builtins.list[str]:
        with self._lock:
            return sorted(
                sid for (owner, sid) in self._rows if owner == name and sid.startswith(prefix or "")
            )

    def _prune(self, name: str, session_id: str, keep_before: int) -> None:
        with self._lock:
            turns = self._rows.get((name, session_id))
            if turns is None:
                return
            for turn in [turn for turn in turns if turn < keep_before]:
                del turns[turn]
            if not turns:
                del self._rows[(name, session_id)]
