"""What a conversation session asks of its agent (docs/conversations.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class AgentResult:
    """One run of an agent: ``messages`` is the whole conversation after it (the history
    given, the user turn, tool calls and results, the reply), never the system prompt;
    ``error`` is set when the run failed (then ``messages`` are not stored)."""

    messages: list[dict[str, Any]]
    text: str = ""
    error: BaseException | None = None
    run_id: str = ""
    usage: dict[str, Any] = field(default_factory=dict)


class AgentStream(Protocol):
    """The events of a run as they happen (text deltas, tool activity); ``result`` once the
    run ended."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    @property
    def result(self) -> AgentResult: ...


class ConversationAgent(Protocol):
    """``execute``, ``stream`` and (for a durable agent) ``resume`` a run."""

    name: str

    def execute(
        self, input: Any, *, history: list[dict[str, Any]], run_id: str, **options: Any
    ) -> AgentResult: ...

    def stream(
        self, input: Any, *, history: list[dict[str, Any]], run_id: str, **options: Any
    ) -> AgentStream: ...

    def resume(self, run_id: str, **options: Any) -> AgentResult: ...
