"""What a conversation session asks of its agent (docs/conversations.md)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import connections


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


class EventStream:
    """The events of a run as it goes, buffered (so the run settles whether or not anyone
    iterates), and its ``result`` once it settled."""

    _END = object()

    def __init__(self) -> None:
        self._events: queue.Queue[Any] = queue.Queue()
        self._done = threading.Event()
        self._result: AgentResult | None = None
        self._error: BaseException | None = None

    @classmethod
    def run(cls, work: Callable[[EventStream], AgentResult]) -> EventStream:
        """A stream settled by ``work(stream)`` on a thread of its own (which closes the
        database connections it opened when it ends)."""
        stream = cls()

        def target() -> None:
            try:
                stream.settle(work(stream))
            except BaseException as error:
                stream.fail(error)
            finally:
                connections.close_all()

        threading.Thread(target=target, daemon=True).start()
        return stream

    def put(self, event: dict[str, Any]) -> None:
        self._events.put(event)

    def settle(self, result: AgentResult) -> None:
        self._result = result
        self._done.set()
        self._events.put(self._END)

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._done.set()
        self._events.put(self._END)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while (event := self._events.get()) is not self._END:
            yield event

    @property
    def result(self) -> AgentResult:
        """The result once the run settled (blocks until then); raises what the run raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
