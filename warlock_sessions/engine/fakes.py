"""Scripted test doubles shipped for users' tests: FakeModel, FakeClock, MemoryScheduler."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from .durations import parse_duration
from .isotime import iso_from_ms, ms_from_iso
from .ports import Deferral, SpeakRequest, Spoken, Understanding, UnderstandRequest


class FakeModelExhausted(AssertionError):
    """The turn called a port with no scripted reply left: the test's script is short."""


def _understanding(reply: Understanding | Mapping[str, Any]) -> Understanding:
    return reply if isinstance(reply, Understanding) else Understanding(**reply)


def _speak_outcome(reply: Spoken | Deferral | Mapping[str, Any]) -> Spoken | Deferral:
    if isinstance(reply, Spoken | Deferral):
        return reply
    if "deferred" in reply:
        return Deferral(**reply["deferred"])
    return Spoken(**reply)


class FakeModel:
    """A model whose replies are scripted: one queue per port, consumed in order.

    ``FakeModel(understand=[{"flows": {"triagem": 90}}], speak=[{"message": "Oi!"}])``. Replies
    may be dataclasses or dicts of their fields (``{"deferred": {...}}`` for a failure). A call
    with an empty queue raises :class:`FakeModelExhausted`. ``requests`` keeps what each port
    was asked, for assertions.
    """

    #: Scripted replies, no I/O: an async host may run its turns on the event loop.
    blocking = False

    def __init__(
        self,
        understand: Iterable[Understanding | Mapping[str, Any]] = (),
        speak: Iterable[Spoken | Deferral | Mapping[str, Any]] = (),
    ) -> None:
        self._understand = deque(_understanding(reply) for reply in understand)
        self._speak = deque(_speak_outcome(reply) for reply in speak)
        self.requests: dict[str, list[Any]] = {"understand": [], "speak": []}

    @property
    def remaining(self) -> dict[str, int]:
        return {"understand": len(self._understand), "speak": len(self._speak)}

    def understand(self, request: UnderstandRequest) -> Understanding:
        self.requests["understand"].append(request)
        if not self._understand:
            raise FakeModelExhausted("FakeModel.understand was called with no scripted reply left")
        return self._understand.popleft()

    def speak(self, request: SpeakRequest) -> Spoken | Deferral:
        self.requests["speak"].append(request)
        if not self._speak:
            raise FakeModelExhausted("FakeModel.speak was called with no scripted reply left")
        return self._speak.popleft()


class FakeClock:
    """A clock that moves only when told: ``now``, ``advance`` and ``set``."""

    def __init__(self, start: str | int | datetime = "2026-09-20T10:00:00.000Z") -> None:
        self._ms = self._to_ms(start)

    @staticmethod
    def _to_ms(value: str | int | datetime) -> int:
        if isinstance(value, datetime):
            return round(value.timestamp() * 1000)
        if isinstance(value, int):
            return value
        return ms_from_iso(value)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._ms / 1000, tz=UTC)

    @property
    def now_ms(self) -> int:
        return self._ms

    @property
    def iso(self) -> str:
        return iso_from_ms(self._ms)

    def advance(self, by: str | int) -> FakeClock:
        """Move forward by a duration (``"10m"``) or milliseconds."""
        self._ms += parse_duration(by) if isinstance(by, str) else by
        return self

    def set(self, to: str | int | datetime) -> FakeClock:
        self._ms = self._to_ms(to)
        return self


class MemoryScheduler:
    """Wakes in memory, as a host keeps them: ``add`` a TurnResult's schedule, then ``due``.

    Adding a key again replaces it; an entry with ``replaces`` removes that older key.
    """

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Any]] = {}

    def add(self, entries: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> None:
        """Add one entry, or many (a TurnResult's ``schedule``)."""
        for entry in [entries] if isinstance(entries, Mapping) else entries:
            if entry.get("replaces"):
                self._entries.pop(entry["replaces"], None)
            self._entries[entry["key"]] = dict(entry)

    def drop(self, keys: Iterable[str]) -> None:
        """Forget the wakes a turn retired (a TurnResult's ``retired``)."""
        for key in keys:
            self._entries.pop(key, None)

    def due(self, now: str | datetime, *, pop: bool = True) -> list[dict[str, Any]]:
        """Entries due at ``now``, earliest first (removed unless ``pop=False``)."""
        limit = ms_from_iso(now) if isinstance(now, str) else round(now.timestamp() * 1000)
        ready = sorted(
            (e for e in self._entries.values() if ms_from_iso(e["at"]) <= limit),
            key=lambda e: (ms_from_iso(e["at"]), e["key"]),
        )
        if pop:
            for entry in ready:
                del self._entries[entry["key"]]
        return ready

    @property
    def size(self) -> int:
        return len(self._entries)
