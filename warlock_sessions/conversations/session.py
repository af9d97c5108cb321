"""Conversation sessions (docs/conversations.md): a multi-turn chat with one agent, kept as one
record ``session:<id>`` in any snapshot store. A turn is stored only when the agent's run
succeeded; a pending mark written before the run lets ``resume()`` finish a turn a crash cut
short; ``fork`` copies a prefix unchanged; ``truncate`` never splits a tool call from its
result. Calls on one session run one at a time under its lock."""

from __future__ import annotations

import asyncio
import copy
import threading
import weakref
from typing import Any

from ..conf import warlock_settings
from ..errors import (
    InvalidInputError,
    ResumeInProgressError,
    SessionExistsError,
    SessionNotFoundError,
    ToolPairError,
)
from ..locks import InProcessLock, NoLock, SessionLock, check_lease
from ..snapshots import SnapshotStore
from ..workflows.runs import iso_after, logger, new_run_id, now_iso
from .agent import AgentResult, ConversationAgent, EventStream, stream_threads
from .stores import ConversationStore, RecordConversationStore, appended, is_window, new_record

#: How long a resume's claim on the pending mark keeps other resumes off, in seconds: a
#: resumer that died is taken over after it.
RESUME_CLAIM_SECONDS = 600

#: The default lock: one per store object, shared by every session on it.
_store_locks: weakref.WeakKeyDictionary[Any, InProcessLock] = weakref.WeakKeyDictionary()
#: Stores that name a ``lock_scope`` share the lock of that scope (a few: one per database).
_scope_locks: dict[Any, InProcessLock] = {}
_store_locks_guard = threading.Lock()


def default_lock(store: Any) -> InProcessLock:
    """One per store object, or per what a store names as its ``lock_scope`` (the row store:
    its database), so every session of this process on the same conversations shares it."""
    scope = getattr(store, "lock_scope", None)
    locks: Any = _store_locks if scope is None else _scope_locks
    key = store if scope is None else scope
    with _store_locks_guard:
        lock: InProcessLock | None = locks.get(key)
        if lock is None:
            lock = locks[key] = InProcessLock()
        lock.timeout = warlock_settings.LOCK_TIMEOUT  # as the settings are now
        return lock


def session(
    id: str,
    store: SnapshotStore | ConversationStore,
    agent: ConversationAgent,
    lock: SessionLock | bool | None = None,
) -> ConversationSession:
    """The conversation ``id`` with ``agent``, kept in ``store``: any snapshot store (one
    record per conversation) or a ``DjangoConversationStore`` (a row per message). ``lock``:
    ``None`` for the in-process lock shared by every session on this store object, ``False``
    for none (one writer is guaranteed elsewhere), or a distributed ``SessionLock``."""
    return ConversationSession(id, store, agent, lock)


def window_start(messages: list[dict[str, Any]], window: int | None) -> int:
    """Where the history an agent is given starts: at the first user message among the last
    ``window`` messages (a turn's start, so no tool result comes without its call), or at
    the start with no window. ``len(messages)`` when no user message is among them."""
    if window is None:
        return 0
    start = max(0, len(messages) - window)
    while start < len(messages) and messages[start].get("role") != "user":
        start += 1
    return start


def split_tool_pair(messages: list[dict[str, Any]], n: int) -> bool:
    """Whether keeping ``messages[:n]`` would keep a tool call without its result."""
    kept = messages[:n]
    calls = {call["id"] for message in kept for call in message.get("toolCalls") or []}
    answered = {message.get("toolCallId") for message in kept if message.get("role") == "tool"}
    return bool(calls - answered)


class ConversationSession:
    def __init__(
        self,
        id: str,
        store: SnapshotStore | ConversationStore,
        agent: ConversationAgent,
        lock: SessionLock | bool | None = None,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise ValueError(f"a conversation id is non-empty text, not {id!r}")
        self.id = id
        self.key = f"session:{id}"
        self.store = store
        self.records: ConversationStore = (
            RecordConversationStore(store) if isinstance(store, SnapshotStore) else store
        )
        self.agent = agent
        if lock is None or lock is True:
            self.lock: SessionLock = default_lock(store)
        elif lock is False:
            self.lock = NoLock()
        else:
            self.lock = lock

    # -- reading ------------------------------------------------------------------------------

    def load(self) -> dict[str, Any] | None:
        """A copy of the record, or ``None``. Takes no lock."""
        return copy.deepcopy(self.records.load(self.id))

    def history(self) -> list[dict[str, Any]]:
        """A copy of the conversation's messages (``[]`` before the first); an agent with a
        ``history_window`` is given only the newest of them."""
        record = self.load()
        return list(record["messages"]) if record else []

    # -- turns --------------------------------------------------------------------------------

    def send(self, input: Any, **options: Any) -> AgentResult:
        """Run one turn: the stored history is given to the agent, and its messages are stored
        when (and only when) the run succeeded. Returns the agent's result; a run that raised
        re-raises, with the conversation unchanged."""
        options = self._options(options)
        self.records.idle()  # no connection held while waiting for another turn
        return self.lock.with_lock(
            self.key, lambda: self._send(input, options), signal=options.get("signal")
        )

    def stream(self, input: Any, **options: Any) -> EventStream:
        """``send`` as the agent runs: iterate the returned stream for its events; its
        ``result`` settles once the turn is stored (or failed)."""
        options = self._options(options)
        self.records.idle()
        return EventStream.run(
            lambda stream: self.lock.with_lock(
                self.key, lambda: self._stream(input, options, stream), signal=options.get("signal")
            ),
            stream_threads(),
        )

    def resume(self, **options: Any) -> AgentResult | None:
        """Finish the turn a crash cut short (a durable agent resumes its run), or ``None``
        when no turn is pending. The agent's errors propagate and keep the pending mark."""
        self.records.idle()
        return self.lock.with_lock(
            self.key, lambda: self._resume(options), signal=options.get("signal")
        )

    def _options(self, options: dict[str, Any]) -> dict[str, Any]:
        if "history" in options:
            raise TypeError("a conversation session owns its history: send() takes no history=")
        return {"session_id": self.id, **options}

    def _window(self) -> int | None:
        """The agent's ``history_window``: how many of the newest messages it is given."""
        window = getattr(self.agent, "history_window", None)
        if window is not None and not is_window(window):
            raise ValueError(
                f"the history_window of agent {getattr(self.agent, 'name', '?')!r} is "
                f"{window!r}: a whole number of messages above 0, or None"
            )
        return window

    def _begin(self, input: Any) -> tuple[dict[str, Any], str, int]:
        """The record, under a pending mark for a new run; the run's id; and where in the
        record's messages the history the agent is given starts."""
        window = self._window()
        found = (
            self.records.load(self.id)
            if window is None
            else self.records.load(self.id, window=window)
        )
        record = found or new_record(self.id)
        if not record["messages"] and not record["turns"]:
            # A new conversation, perhaps under the id of one deleted in bulk: nothing a
            # semantic cache kept for that one may answer this one.
            self._forget_cached()
        start = window_start(record["messages"], window)
        run_id = new_run_id("agent")
        pending = {"runId": run_id, "input": input, "startedAt": now_iso()}
        if given_from := record.get("offset", 0) + start:  # what a resume gives back
            pending["historyFrom"] = given_from
        check_lease()
        self.records.set_pending(record, pending)  # if this fails, the agent does not run
        return record, run_id, start

    def _send(self, input: Any, options: dict[str, Any]) -> AgentResult:
        record, run_id, start = self._begin(input)
        history = record["messages"][start:]  # its messages are shared: the agent copies
        self.records.idle()  # the model may take seconds
        try:
            result = self.agent.execute(input, history=history, run_id=run_id, **options)
        except BaseException:
            self._drop_pending(record)
            raise
        return self._settle(record, result, start)

    def _stream(self, input: Any, options: dict[str, Any], out: EventStream) -> AgentResult:
        record, run_id, start = self._begin(input)
        history = record["messages"][start:]  # its messages are shared: the agent copies
        self.records.idle()
        try:
            events = self.agent.stream(input, history=history, run_id=run_id, **options)
            if isinstance(events, EventStream):  # straight from the agent's thread
                events.forward(lambda event: None if event is None else out.put(event))
            else:
                for event in events:
                    out.put(event)
            result = events.result
        except BaseException:
            self._drop_pending(record)
            raise
        return self._settle(record, result, start)

    def _resume(self, options: dict[str, Any]) -> AgentResult | None:
        record = self.records.load(self.id)
        if record is None or "pending" not in record:
            return None
        pending = record["pending"]
        claimed_until = pending.get("resumeClaimedUntil")
        if isinstance(claimed_until, str) and claimed_until > now_iso():
            raise ResumeInProgressError(self.id, claimed_until)  # before the agent runs
        # Claimed before the agent resumes, conditionally on the version read (the row store,
        # a versioned record store): a second resume that read the same record loses the race
        # at this write, and one that reads it later finds the claim, instead of running the
        # agent's model and tools again. A resumer that dies leaves a claim that runs out.
        until = iso_after(RESUME_CLAIM_SECONDS)
        check_lease()
        self.records.set_pending(
            record, {**pending, "resumedAt": now_iso(), "resumeClaimedUntil": until}
        )
        self.records.idle()
        try:
            result = self.agent.resume(record["pending"]["runId"], **options)
        except BaseException:
            self._unclaim(record, pending)
            raise
        # The run continues from the history its send gave it, whatever the window is now.
        given = pending.get("historyFrom", 0)
        start = min(given, len(record["messages"])) if type(given) is int and given > 0 else 0
        return self._settle(record, result, start)

    def _unclaim(self, record: dict[str, Any], pending: dict[str, Any]) -> None:
        """A resume that raised keeps the pending mark, without its claim: a resume may be
        tried again at once (best effort: the agent's error is the one the caller gets)."""
        try:
            self.records.set_pending(record, pending)
        except Exception:
            logger.warning("could not release the resume claim of %s", self.key, exc_info=True)

    def _settle(self, record: dict[str, Any], result: AgentResult, start: int) -> AgentResult:
        """Store the turn: what the agent returned follows the messages before ``start``,
        which it was not given, so a windowed agent's turn (and its compaction) keeps every
        earlier message."""
        if result.error is not None:
            self._drop_pending(record)
            return result
        added = appended(record["messages"][start:], result.messages)
        messages = [*record["messages"][:start], *result.messages]
        check_lease()  # a lock lost while the agent ran: the next holder's turn stands
        self.records.append_turn(record, messages, added)  # a failure keeps the mark
        return result

    def _drop_pending(self, record: dict[str, Any]) -> None:
        """A failed or cancelled run is settled: messages unchanged, no mark (best effort: the
        run's own error is the one the caller gets)."""
        try:
            self.records.set_pending(record, None)
        except Exception:
            logger.warning("could not clear the pending mark of %s", self.key, exc_info=True)

    # -- editing ------------------------------------------------------------------------------

    def fork(self, target: str, message_count: int | None = None) -> ConversationSession:
        """A new conversation ``target`` starting with this one's first ``message_count``
        messages (all by default), copied unchanged so signed provider blocks stay valid."""
        forked = ConversationSession(target, self.store, self.agent, self.lock)
        if forked.key == self.key:
            raise SessionExistsError(target)  # it is this one

        def copy_prefix() -> ConversationSession:
            record = self._existing()
            messages = record["messages"]
            n = self._cut(messages, len(messages) if message_count is None else message_count)
            new = new_record(target)
            new["forkedFrom"] = {"id": self.id, "messageCount": n}
            self.records.fork(record, new, n)
            return forked

        # Both locks, always taken in the same order, so two forks each way cannot deadlock.
        (first, first_lock), (second, second_lock) = sorted(
            [(self.key, self.lock), (forked.key, forked.lock)], key=lambda pair: pair[0]
        )
        return first_lock.with_lock(first, lambda: second_lock.with_lock(second, copy_prefix))

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` messages (``turns`` and any pending mark untouched)."""

        def cut() -> None:
            record = self._existing()
            self.records.truncate(record, self._cut(record["messages"], n))

        self.lock.with_lock(self.key, cut)

    def clear(self) -> bool:
        """Delete the conversation, and what the agent's semantic cache keeps for it:
        whether there was one (none is fine)."""
        deleted = self.lock.with_lock(self.key, lambda: self.records.delete(self.id))
        self._forget_cached()
        return deleted

    def _forget_cached(self) -> None:
        """Remove what the agent's semantic cache keeps for this conversation (best effort:
        a new conversation under the id forgets it again)."""
        cache = getattr(self.agent, "cache", None)
        if cache is None:
            return
        try:
            cache.forget_conversation(self.id)
        except Exception:
            logger.warning("could not forget the cached answers of %s", self.key, exc_info=True)

    def _cut(self, messages: list[dict[str, Any]], n: int) -> int:
        if type(n) is not int or not 0 <= n <= len(messages):
            raise InvalidInputError(
                "message_count", f"must be a whole number from 0 to {len(messages)}"
            )
        if split_tool_pair(messages, n):
            raise ToolPairError(
                f"keeping {n} messages of {self.id!r} would split a tool call from its result"
            )
        return n

    # -- records ------------------------------------------------------------------------------

    def _existing(self) -> dict[str, Any]:
        record = self.records.load(self.id)
        if record is None:
            raise SessionNotFoundError(self.id)
        return record

    # -- async --------------------------------------------------------------------------------

    async def asend(self, input: Any, **options: Any) -> AgentResult:
        return await asyncio.to_thread(self.send, input, **options)

    async def aresume(self, **options: Any) -> AgentResult | None:
        return await asyncio.to_thread(self.resume, **options)

    async def afork(self, target: str, message_count: int | None = None) -> ConversationSession:
        return await asyncio.to_thread(self.fork, target, message_count)

    async def atruncate(self, n: int) -> None:
        await asyncio.to_thread(self.truncate, n)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)
