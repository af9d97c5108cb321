"""The turn cycle: load -> turn -> conditional save with the turn's records -> on conflict
reload and replay -> only after the commit, hand the messages and wakes on: nothing is sent or
scheduled for a turn that did not commit, and a replay mints the same keys (docs/host.md,
"What handle does"). Every path (``handle``, ``ahandle`` in a thread or on the event loop)
commits through the store's one ``Committer``."""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from .. import signals
from ..agents import default_agent_name, get_agent
from ..backends.connections import give_back_connection
from ..backends.loop_connections import loop_connection
from ..conf import warlock_settings
from ..encryption import sealing
from ..engine import Agent, Model, Session, SystemClock, TurnResult, turn
from ..engine.turn import INPUT_KINDS, Clock, duplicate_input
from ..errors import SessionConflictError, UnnamedAgentError
from ..redaction import redact_value
from ..stores import Store, default_store
from ..tracing import Recorder, span
from .commit import committer_for
from .events import turn_events
from .inputs import applied_key, forget_applied, input_identity, was_applied
from .notify import announce, apush, push
from .records import TurnRecords

if TYPE_CHECKING:  # a store's statement part, which the host only hands on
    from ..stores.db import SaveCondition
from .redacted import redacted_for_storage
from .threads import ProcessThreads, in_worker_thread, threads_for_database_pool

#: The first pause before a turn that lost the version race is replayed, in seconds; it doubles
#: with each further loss, and each pause is drawn at random up to that (full jitter), so turns
#: that collided once do not collide again in lockstep.
CONFLICT_BACKOFF = 0.005
#: The longest such pause.
MAX_CONFLICT_PAUSE = 0.25
#: After this many lost races a turn is replayed holding its session (``Committer.exclusive``),
#: so one that keeps losing to a storm of others wins at last instead of running out of retries.
EXCLUSIVE_AFTER = 3


#: Where ``ahandle`` runs the turns whose model may block.
_blocking_turns = ProcessThreads("warlock-turn", threads_for_database_pool)


def conflict_pause(attempt: int) -> float:
    return random.uniform(0, min(MAX_CONFLICT_PAUSE, CONFLICT_BACKOFF * 2**attempt))


#: One lock per event loop and session id: the async turns of a session in this process
#: (sockets, ``ahandle``) queue instead of racing to the save, which the loser would replay.
#: A lock lives only while a turn holds or awaits it.
_session_locks: weakref.WeakValueDictionary[tuple[int, str], asyncio.Lock] = (
    weakref.WeakValueDictionary()
)


def session_lock(session_id: str) -> asyncio.Lock:
    key = (id(asyncio.get_running_loop()), session_id)
    lock = _session_locks.get(key)
    if lock is None:
        lock = _session_locks[key] = asyncio.Lock()
    return lock


def turn_input_of(value: Mapping[str, Any]) -> dict[str, Any]:
    """``{"message": {...}}``, ``{"wake": key}``, ``{"event": {...}}`` or ``{"start": {...}}``."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"an input is an object like {{'message': {{'text': ...}}}}, not {value!r:.60}"
        )
    kinds = [kind for kind in INPUT_KINDS if value.get(kind) is not None]
    extra = set(value) - set(INPUT_KINDS)
    if len(kinds) != 1 or extra:
        raise ValueError(
            "an input has exactly one of message, wake, event, start"
            + (f" (and no {', '.join(sorted(extra))})" if extra else "")
        )
    return {kinds[0]: value[kinds[0]]}


@dataclass
class HostedTurn(TurnResult):
    """A ``TurnResult`` as the host committed it: ``session`` is as stored and ``events`` are
    the entries (``{seq, type, payload}``) the turn added to the session's event log."""

    events: list[dict[str, Any]] = field(default_factory=list)


class Host:
    """Runs turns for one agent against one store, so nothing is lost and nothing sent twice.

    * ``turn()`` runs outside any transaction: no lock is held across a model call.
    * The save is conditional on the version loaded. With a database store, the save, the
      outbox rows, the event log and the wakes commit in one transaction; a turn that lost the
      race writes none of them, reloads and replays the same input, and (the engine being
      deterministic) mints the same keys. After ``MAX_CONFLICT_RETRIES`` replays it raises
      ``SessionConflictError``.
    * With a store outside the database (Redis, files) the records follow the save in a second
      transaction and rely on the unique message and wake keys: at least once, then
      deduplicated.
    * Only after the commit are signals sent and events pushed to the session's channel group.

    ``agent`` is an ``Agent`` or the name of one in ``WARLOCK_SESSIONS["AGENTS"]`` (default: the
    default agent); ``store`` defaults to ``WARLOCK_SESSIONS["STORE"]``.
    """

    def __init__(
        self,
        agent: Agent | str | None = None,
        store: Store | None = None,
        *,
        clock: Clock | None = None,
        model: Model | None = None,
        max_conflict_retries: int | None = None,
    ) -> None:
        if isinstance(agent, Agent):
            if not agent.name:
                raise UnnamedAgentError(
                    "Host needs a named agent (Agent(..., name='support'), configured under that "
                    "name in WARLOCK_SESSIONS['AGENTS']): each wake records the name, and the "
                    "worker fires it with the agent of that name"
                )
            self.agent, self.agent_name = agent, agent.name
        else:
            self.agent_name = default_agent_name() if agent is None else agent
            self.agent = get_agent(self.agent_name)
        self.store = store if store is not None else default_store()
        self.clock = clock or SystemClock()
        self.model = model
        retries = (
            warlock_settings.MAX_CONFLICT_RETRIES
            if max_conflict_retries is None
            else max_conflict_retries
        )
        if type(retries) is not int or retries < 0:
            raise ValueError(f"max_conflict_retries must be a whole number >= 0, not {retries!r}")
        self.max_conflict_retries = retries
        self.committer = committer_for(self.store)
        self.using = self.committer.using
        self.loop_committer = self.committer.on_event_loop()
        self.may_block = self.agent.may_block(self.model)
        self.may_run_on_loop = self.loop_committer is not None and not self.may_block

    def handle(
        self,
        session_id: str,
        input: Mapping[str, Any],
        context: Any = None,
        *,
        last_saved: Session | None = None,
        **turn_options: Any,
    ) -> HostedTurn:
        """Apply one input. Returns the ``HostedTurn``: ``session`` as stored (its new version
        when the turn changed anything) and the events it logged.

        ``last_saved``: the session exactly as a previous ``HostedTurn`` of this session
        returned it. The first attempt starts from it instead of loading: a copy that is no
        longer current is refused by the conditional save, and the turn reloads and replays
        (an attempt that does not count against ``max_conflict_retries``). A turn that changes
        nothing is not checked by any save, so it is computed again from the stored session."""
        with self._span(session_id, input) as traced:
            hosted = self._handle(session_id, input, context, turn_options, last_saved, push)
            _traced_turn(traced, hosted)
            return hosted

    async def ahandle(
        self,
        session_id: str,
        input: Mapping[str, Any],
        context: Any = None,
        *,
        last_saved: Session | None = None,
        push: bool = True,
        **turn_options: Any,
    ) -> HostedTurn:
        """``handle`` for async code (Channels consumers): the turn runs in a worker thread with
        its own database connection, so concurrent conversations do not queue behind each other;
        the events go to the channel layer from the event loop once it has committed (unless
        ``push`` is false: the caller delivers them, as a socket alone on its session does).

        A turn that cannot block runs on the event loop instead, with no thread hop, when all of
        these hold: the store saves together (``DjangoStore`` on PostgreSQL), the agent cannot
        block (``Agent.may_block``), no receiver listens to the host's signals (receivers may do
        I/O) and ``LOOP_CONNECTIONS`` is not 0. Should that turn lose the version race, or have
        started from a ``last_saved`` and changed nothing, it is redone in a thread."""
        with self._span(session_id, input) as traced:
            hosted = await self._ahandle(session_id, input, context, last_saved, push, turn_options)
            _traced_turn(traced, hosted)
            return hosted

    async def _ahandle(
        self,
        session_id: str,
        input: Mapping[str, Any],
        context: Any,
        last_saved: Session | None,
        push: bool,
        turn_options: Mapping[str, Any],
    ) -> HostedTurn:
        async with session_lock(session_id):
            if self.runs_on_loop():
                async with loop_connection(self.using) as connection:
                    if connection is not None:
                        on_loop = await self._on_loop(
                            connection, session_id, input, context, turn_options, last_saved
                        )
                        if on_loop is not None:
                            if push:
                                await apush(session_id, on_loop.events)
                            return on_loop
                        last_saved = None
            # A turn that may wait on a model runs on threads of its own: it must not hold the
            # ones every socket's short database calls run on.
            threads = _blocking_turns.get() if self.may_block else None
            hosted: HostedTurn = await in_worker_thread(self._handle, threads)(
                session_id, input, context, turn_options, last_saved, None
            )
        if push:
            await apush(session_id, hosted.events)
        return hosted

    async def ahandle_first(
        self,
        session_id: str,
        input: Mapping[str, Any],
        context: Any = None,
        *,
        condition: SaveCondition,
        **turn_options: Any,
    ) -> tuple[HostedTurn | None, tuple[Any, ...]]:
        """The first turn of a session not stored yet, saved with ``condition``'s writes (the
        claim of its id: ``claims.first_claim``) in one statement on the event loop, and only
        if they are made: no load, no thread hop. Returns the turn, or ``None`` when nothing
        was written (the condition did not hold, a session was stored meanwhile, the turn
        changed nothing, or it cannot run on the loop: the caller then takes ``ahandle``'s way,
        which decides alike), and the values of the condition's ``select`` (empty when no
        statement ran). The events are not pushed: nobody else follows a session just made.
        The turn is computed before the condition is known to hold: where it does not, the
        caller's way computes it again."""
        committer = self.loop_committer
        turn_input = turn_input_of(input)
        with self._span(session_id, input) as traced:
            async with session_lock(session_id):
                if committer is None or not self.runs_on_loop():
                    return None, ()
                async with loop_connection(self.using) as connection:
                    if connection is None:
                        return None, ()
                    hosted = self._compute(session_id, None, turn_input, context, turn_options)
                    if not hosted.changed:
                        return None, ()
                    # The condition's claim finds no log under the id, or writes nothing.
                    changes = self._records(
                        session_id, hosted, 0, turn_input, 0 if sealing() else None
                    )
                    try:
                        with _save_span(changes):
                            made, outcome = await committer.acommit_first(
                                connection,
                                hosted.session,
                                changes,
                                condition,
                                agent=self.agent_name,
                            )
                    except IntegrityError:  # the id claimed or its session stored meanwhile
                        return None, ()
                    except (OperationalError, InterfaceError):  # as _on_loop: the thread's way
                        return None, ()
            if made is None:
                return None, outcome
            saved, first_seq = made
            _saved(hosted, saved, changes, first_seq)
            announce(session_id=session_id, result=hosted, version=saved["version"])
            _traced_turn(traced, hosted)
            return hosted, outcome

    @contextmanager
    def _span(self, session_id: str, input: Mapping[str, Any]) -> Iterator[Recorder]:
        """The turn's span (``tracing``), the parent of its load, model calls, save and push."""
        kind = next(iter(input), None) if isinstance(input, Mapping) else None
        with span(
            "warlock turn",
            {
                "warlock.session.id": session_id,
                "warlock.agent": self.agent_name,
                "warlock.input.kind": kind,
            },
        ) as traced:
            said = input.get("message") if kind == "message" else None
            traced.text(
                "warlock.input.text", said.get("text") if isinstance(said, Mapping) else None
            )
            yield traced

    def runs_on_loop(self) -> bool:
        """Whether ``ahandle`` may run a turn on the event loop now (see its docstring)."""
        return self.may_run_on_loop and not any(
            signal.receivers and signal.has_listeners(sender)  # the first test is the cheap one
            for signal, sender in self._signals_sent()
        )

    def _signals_sent(self) -> list[tuple[Any, Any]]:
        """The signals a turn sends, with their sender."""
        return [
            (signals.turn_computed, type(self)),
            (signals.session_conflict, type(self)),
            (signals.session_saved, None),
            (signals.run_started, None),
            (signals.run_ended, None),
            (signals.message_out, None),
        ]

    async def _on_loop(
        self,
        connection: Any,
        session_id: str,
        input: Mapping[str, Any],
        context: Any,
        turn_options: Mapping[str, Any],
        last_saved: Session | None,
    ) -> HostedTurn | None:
        """``ahandle``'s first attempt on the event loop, loading (unless given ``last_saved``)
        and saving on ``connection``; ``None`` when it is to be redone in a thread: it lost the
        version race, it changed nothing on a remembered copy (no save checked that copy), or
        its load found the connection broken (the thread's pool checks the one it hands out)."""
        turn_input = turn_input_of(input)
        # A sealed log is numbered from a load: a remembered copy does not say its last seq.
        remembered = last_saved is not None and not sealing()
        committer = self.loop_committer
        assert committer is not None  # runs_on_loop checked it
        last_seq = None
        try:
            if remembered:
                loaded = last_saved
            else:
                with span("warlock load", {"warlock.session.id": session_id}):
                    loaded, last_seq = await committer.aload(connection, session_id)
        except (OperationalError, InterfaceError):
            return None  # a connection lost before anything was written: the thread retries

        hosted = self._compute(session_id, loaded, turn_input, context, turn_options)
        if not hosted.changed:
            return None if remembered else hosted
        expected = loaded["version"] if loaded is not None else 0
        changes = self._records(session_id, hosted, expected, turn_input, last_seq)
        try:
            with _save_span(changes):
                saved, first_seq = await committer.acommit(
                    connection, hosted.session, expected, changes, agent=self.agent_name
                )
        except SessionConflictError as error:
            self._conflicted(session_id, error, attempt=1)
            return None
        except IntegrityError:
            return None  # applied before: the thread path tells the duplicate apart
        _saved(hosted, saved, changes, first_seq)
        announce(session_id=session_id, result=hosted, version=saved["version"])
        return hosted

    def _handle(
        self,
        session_id: str,
        input: Mapping[str, Any],
        context: Any,
        turn_options: Mapping[str, Any],
        last_saved: Session | None,
        push_events: Callable[[str, list[dict[str, Any]]], None] | None,
    ) -> HostedTurn:
        turn_input = turn_input_of(input)
        conflict: SessionConflictError | None = None
        attempts = self.max_conflict_retries + 1 + (last_saved is not None)
        for attempt in range(attempts):
            remembered = last_saved is not None
            held = self._holds_session(attempt, remembered)
            with self.committer.exclusive(session_id) if held else nullcontext():
                loaded, last_seq = (last_saved, None) if remembered else self._load(session_id)
                last_saved = None
                if self.may_block:
                    give_back_connection(self.using)  # the model may take seconds
                hosted = self._compute(session_id, loaded, turn_input, context, turn_options)
                if not hosted.changed and remembered:
                    continue  # no conditional save checks a turn that changed nothing: reload
                if not hosted.changed:
                    return hosted
                expected = loaded["version"] if loaded is not None else 0
                try:
                    self._commit(session_id, hosted, expected, turn_input, push_events, last_seq)
                except SessionConflictError as error:
                    conflict = error
                    self._conflicted(session_id, error, attempt=attempt + 1)
                    if attempt + 1 < attempts and not held:
                        time.sleep(conflict_pause(attempt))
                    continue
                except IntegrityError as error:
                    duplicate = self._applied_before(session_id, turn_input, loaded, error)
                    if duplicate is None:
                        continue
                    return duplicate
                return hosted
        assert conflict is not None
        raise conflict

    def _load(self, session_id: str) -> tuple[Session | None, int | None]:
        """The stored session, and its log's last seq when the commit needs it."""
        with span("warlock load", {"warlock.session.id": session_id}):
            return self.committer.load(session_id)

    def _holds_session(self, attempt: int, remembered: bool) -> bool:
        """Whether this attempt holds its session (``Committer.exclusive``): only once it has
        lost ``EXCLUSIVE_AFTER`` races, and never while the model may take seconds, as the
        held row would stall every other save of the session meanwhile."""
        return not remembered and attempt >= EXCLUSIVE_AFTER and not self.may_block

    def _applied_before(
        self,
        session_id: str,
        turn_input: Mapping[str, Any],
        loaded: Session | None,
        error: IntegrityError,
    ) -> HostedTurn | None:
        """After a unique violation: the answer to an input applied before, or ``None`` when
        the turn is to be replayed; ``error`` again when it was something else."""
        if not was_applied(session_id, turn_input, self.using):
            raise error
        if loaded is None:
            # The session is gone (a store's expiry, a deletion that bypassed forget_session):
            # what was applied to it does not bind a new one.
            forget_applied(session_id, self.using)
            return None
        input_id = input_identity(turn_input)[-1]  # type: ignore[index]
        return HostedTurn(**vars(duplicate_input(loaded, input_id, self.clock)))

    def _compute(
        self,
        session_id: str,
        loaded: Session | None,
        turn_input: Mapping[str, Any],
        context: Any,
        turn_options: Mapping[str, Any],
    ) -> HostedTurn:
        """The turn, announced to ``turn_computed``, as a ``HostedTurn`` yet to be committed."""
        result = turn(
            agent=self.agent,
            session_id=session_id,
            session=loaded,
            context=context,
            clock=self.clock,
            model=self.model,
            **turn_input,
            **turn_options,
        )
        signals.turn_computed.send(
            sender=type(self), session_id=session_id, input=turn_input, result=result
        )
        return redacted_for_storage(HostedTurn(**vars(result)), self.agent, loaded)

    def _conflicted(self, session_id: str, error: SessionConflictError, attempt: int) -> None:
        signals.session_conflict.send(
            sender=type(self),
            session_id=session_id,
            expected_version=error.expected_version,
            actual_version=error.actual_version,
            attempt=attempt,
        )

    def _records(
        self,
        session_id: str,
        hosted: HostedTurn,
        expected: int,
        turn_input: Mapping[str, Any],
        last_seq: int | None = None,
    ) -> TurnRecords:
        """What the turn writes besides the session, as its committed version will have it."""
        return turn_records(
            session_id=session_id,
            agent_name=self.agent_name,
            result=hosted,
            version=expected + 1,
            turn_input=turn_input,
            now=timezone.now(),
            last_seq=last_seq,
        )

    def _commit(
        self,
        session_id: str,
        hosted: HostedTurn,
        expected: int,
        turn_input: Mapping[str, Any],
        push_events: Callable[[str, list[dict[str, Any]]], None] | None,
        last_seq: int | None,
    ) -> None:
        changes = self._records(session_id, hosted, expected, turn_input, last_seq)
        with _save_span(changes):
            saved, first_seq = self.committer.commit(
                hosted.session, expected, changes, agent=self.agent_name
            )
        events = _saved(hosted, saved, changes, first_seq)

        def after_commit() -> None:
            announce(session_id=session_id, result=hosted, version=saved["version"])
            if push_events is not None:
                push_events(session_id, events)

        transaction.on_commit(after_commit, using=self.using)


def _saved(
    hosted: HostedTurn, saved: Session, changes: TurnRecords, first_seq: int
) -> list[dict[str, Any]]:
    """The turn as it was saved: its session and its events, numbered from ``first_seq``."""
    hosted.session = saved
    hosted.events = changes.numbered(first_seq)
    return hosted.events


def _traced_turn(traced: Recorder, hosted: HostedTurn) -> None:
    traced.set(
        {
            "warlock.turn.changed": hosted.changed,
            "warlock.turn.version": hosted.session["version"],
            "warlock.turn.code": hosted.code,
            "warlock.turn.llm_calls": hosted.llm_calls,
            "warlock.turn.messages": len(hosted.messages),
        }
    )
    traced.text("warlock.output.text", "\n".join(m["text"] for m in hosted.messages) or None)


def _save_span(changes: TurnRecords) -> AbstractContextManager[Recorder]:
    """The span of a turn's commit: its save with the outbox, wakes and event log."""
    return span(
        "warlock save",
        {
            "warlock.session.id": changes.session_id,
            "warlock.outbox.messages": len(changes.messages),
            "warlock.wakes.scheduled": len(changes.schedule),
            "warlock.events": len(changes.events),
        },
    )


def turn_records(
    *,
    session_id: str,
    agent_name: str,
    result: TurnResult,
    version: int,
    turn_input: Mapping[str, Any],
    now: datetime,
    last_seq: int | None = None,
) -> TurnRecords:
    """What the committed turn writes besides the session (``stores.records.TurnRecords``)."""
    scheduled = {entry["key"] for entry in result.schedule}
    # One statement may not touch a row twice: a fired silence wake is often the very key the
    # new silence wake replaces, and a rescheduled key is upserted rather than retired.
    fired = turn_input.get("wake") if turn_input.get("wake") not in scheduled else None
    replaced = sorted(
        {entry["replaces"] for entry in result.schedule if entry.get("replaces")}.union(
            result.retired
        ).difference(scheduled, {fired})
    )
    said = turn_events(result, version, turn_input)
    delivered = warlock_settings.DELIVER is None
    return TurnRecords(
        session_id=session_id,
        agent=agent_name,
        now=now,
        fired=fired,
        replaced=replaced,
        applied=applied_key(turn_input),
        # A message DELIVER is yet to send is queued as said (a WhatsApp customer gets their
        # own e-mail back, not "[email]"), and redacted once it is sent.
        messages=redact_value(result.messages) if delivered else result.messages,
        schedule=result.schedule,
        events=redact_value(said),
        shown=said,
        delivered=delivered,
        last_seq=last_seq,
    )
