"""The one protocol for what a workflow step, a supervisor's router or intent (and, later, a
conversation session) can call: a plain callable, or an object with a ``name`` and
``execute(input, history=...)``."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class RunnableAgent(Protocol):
    """An agent a run can call: ``execute`` takes the input (and the conversation so far, when
    there is one) and returns its result; it raises to fail."""

    name: str

    def execute(self, input: Any, *, history: list[Any] | None = None) -> Any: ...
