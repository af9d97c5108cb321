"""What a conversation session asks of its agent (docs/conversations.md)."""

from __future__ import annotations

import contextvars
import functools
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import close_old_connections, connections

from ..host.threads import ProcessThreads, threads_for_database_pool

_stream_threads = ProcessThreads("warlock-stream", threads_for_database_pool)


def stream_threads() -> ThreadPoolExecutor:
    """Where conversation sessions run their streamed turns. Bounded, so a flood of streams
    queues instead of opening a connection each; an agent's own stream runs on a thread of
    its own, so a turn here never waits for a thread of this pool."""
    return _stream_threads.get()


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
    #: How a semantic cache answered the final reply (``"exact"``, ``"similar"``); ``""``:
    #: the model did.
    cached: str = ""


class AgentStream(Protocol):
    """The events of a run as they happen (text deltas, tool activity); ``result`` once the
    run ended."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    @property
    def result(self) -> AgentResult: ...


class ConversationAgent(Protocol):
    """``execute``, ``stream`` and (for a durable agent) ``resume`` a run. ``history`` is
    the agent's list, but its messages are shared (the row store keeps them as this process
    last saw the conversation): add messages, and copy one before changing it."""

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
    iterates) or handed on as they come (``forward``), and its ``result`` once it settled."""

    _END = object()

    def __init__(self) -> None:
        self._events: queue.Queue[Any] = queue.Queue()
        self._done = threading.Event()
        self._result: AgentResult | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._target: Callable[[Any], None] | None = None

    @classmethod
    def run(
        cls, work: Callable[[EventStream], AgentResult], pool: Executor | None = None
    ) -> EventStream:
        """A stream settled by ``work(stream)``: in ``pool``, whose threads keep their
        database connections as ``CONN_MAX_AGE`` allows (a turn then opens none), or on a
        thread of its own, which closes the connections it opened when it ends."""
        stream = cls()

        def target() -> None:
            try:
                stream.settle(work(stream))
            except BaseException as error:
                stream.fail(error)
            finally:
                if pool is None:
                    connections.close_all()
                else:
                    close_old_connections()

        # The caller's context goes along (its trace span: the model calls are its children).
        run_in_context = functools.partial(contextvars.copy_context().run, target)
        if pool is None:
            threading.Thread(target=run_in_context, daemon=True).start()
        else:
            pool.submit(run_in_context)
        return stream

    def put(self, event: dict[str, Any]) -> None:
        self._deliver(event)

    def settle(self, result: AgentResult) -> None:
        self._result = result
        self._done.set()
        self._deliver(self._END)

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._done.set()
        self._deliver(self._END)

    def _deliver(self, item: Any) -> None:
        with self._lock:
            target = self._target
            if target is None:
                self._events.put(item)
                return
        target(item)

    def forward(self, target: Callable[[dict[str, Any] | None], object]) -> None:
        """Hand every event to ``target`` from the thread that makes it, the moment it is
        made (no thread in between), then ``None`` once the run settled and its ``result``
        is ready. Events made before are handed on first. ``target`` must not block."""

        def deliver(item: Any) -> None:
            target(None if item is self._END else item)

        with self._lock:
            while not self._events.empty():
                deliver(self._events.get_nowait())
            self._target = deliver

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
