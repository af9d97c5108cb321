"""The host loop: load -> turn -> conditional save -> on conflict reload and replay -> only
after the commit, hand the messages and wakes on (engine-spec §3, invariants I1 and I2)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections, router, transaction
from django.utils import timezone

from .. import signals
from ..agents import default_agent_name, get_agent
from ..conf import warlock_settings
from ..engine import Agent, Model, SystemClock, TurnResult, turn
from ..engine.turn import INPUT_KINDS, Clock
from ..errors import SessionConflictError
from ..models import OutboundMessage
from ..stores import Store, default_store
from ..stores.db import DjangoStore
from .records import FIRST_SEQ, publish, statement_parts, turn_records, write_records


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
            self.agent, self.agent_name = agent, agent.name
        else:
            self.agent_name = agent or default_agent_name()
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
        is_db_store = isinstance(self.store, DjangoStore)
        self.using = self.store.using if is_db_store else router.db_for_write(OutboundMessage)
        self.one_transaction = is_db_store
        self.together = is_db_store and self.store.saves_together

    def handle(
        self, session_id: str, input: Mapping[str, Any], context: Any = None, **turn_options: Any
    ) -> TurnResult:
        """Apply one input. Returns the TurnResult with ``session`` as stored (its new version
        when the turn changed anything)."""
        turn_input = turn_input_of(input)
        conflict: SessionConflictError | None = None
        for attempt in range(self.max_conflict_retries + 1):
            loaded = self.store.load(session_id)
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
            if not result.changed:
                return result
            expected = loaded["version"] if loaded is not None else 0
            try:
                result.session = self._commit(session_id, result, expected, turn_input)
            except SessionConflictError as error:
                conflict = error
                signals.session_conflict.send(
                    sender=type(self),
                    session_id=session_id,
                    expected_version=error.expected_version,
                    actual_version=error.actual_version,
                    attempt=attempt + 1,
                )
                continue
            return result
        assert conflict is not None
        raise conflict

    def _commit(
        self, session_id: str, result: TurnResult, expected: int, turn_input: Mapping[str, Any]
    ) -> Any:
        changes = turn_records(
            session_id=session_id,
            agent_name=self.agent_name,
            result=result,
            version=expected + 1,
            turn_input=turn_input,
            now=timezone.now(),
        )
        if self.together:
            # PostgreSQL: the save and every record in one statement (two round trips a turn).
            parts, params = statement_parts(changes, self.using)
            saved, (first_seq,) = self.store.save_together(
                result.session, expected, parts, params, FIRST_SEQ
            )
        elif self.one_transaction:
            with transaction.atomic(using=self.using):
                saved = self.store.save(result.session, expected)
                first_seq = write_records(changes, self.using, exclusive=True)
        else:
            saved = self.store.save(result.session, expected)
            with transaction.atomic(using=self.using):
                first_seq = write_records(changes, self.using, exclusive=False)
        events = changes.numbered(first_seq)
        version = saved["version"]
        transaction.on_commit(
            lambda: publish(session_id=session_id, result=result, version=version, events=events),
            using=self.using,
        )
        return saved

    async def ahandle(
        self, session_id: str, input: Mapping[str, Any], context: Any = None, **turn_options: Any
    ) -> TurnResult:
        """``handle`` for async code (Channels consumers): runs in a worker thread with its own
        database connection, so concurrent conversations do not queue behind each other."""
        return await in_worker_thread(self.handle)(session_id, input, context, **turn_options)


def in_worker_thread(function: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """``function`` for async code, run in a worker thread rather than the one thread Channels
    keeps for database calls, tidying that thread's connection before and after."""

    def run(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()

    return sync_to_async(run, thread_sensitive=False)
