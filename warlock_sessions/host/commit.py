"""How a store commits a turn: the session's save together with the turn's records (outbox,
wakes, event log, applied input), so a save never commits without its records or they
without it. ``committer_for(store)`` gives the plan for a store; the host runs every turn,
sync, async or on an event loop, through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

from django.db import connections, router, transaction

from ..encryption import sealing
from ..engine.session import Session
from ..models import OutboundMessage
from ..stores.base import Store
from ..stores.db import DjangoStore, SaveCondition
from .records import FIRST_SEQ, TurnRecords, statement_parts, write_records


class Committer(Protocol):
    #: The database alias the records are written to.
    using: str

    def load(self, session_id: str) -> tuple[Session | None, int | None]:
        """The stored session, and the last ``seq`` of its log when the commit needs it
        (``TurnRecords.last_seq``: a sealed log written in one statement)."""
        ...

    def commit(
        self, session: Session, expected: int, records: TurnRecords, *, agent: str
    ) -> tuple[Session, int]:
        """Save ``session`` if the stored version is ``expected`` and write ``records``, both or
        neither; returns the saved session and the ``seq`` of its first logged event. A lost
        race raises ``SessionConflictError``; an input applied before, ``IntegrityError``."""
        ...

    def on_event_loop(self) -> LoopCommitter | None:
        """This committer awaited on an event loop's own connection, if it can be."""
        ...

    def exclusive(self, session_id: str) -> AbstractContextManager[None]:
        """While open, no other save of the stored session lands: a load, turn and commit made
        inside it cannot lose the version race (one creating the session still can). A store
        that cannot hold a session opens nothing."""
        ...


class LoopCommitter(Committer, Protocol):
    """A committer the host can await on an event loop's connection (``loop_connections``)."""

    async def aload(
        self, connection: Any, session_id: str
    ) -> tuple[Session | None, int | None]: ...

    async def acommit(
        self, connection: Any, session: Session, expected: int, records: TurnRecords, *, agent: str
    ) -> tuple[Session, int]: ...

    async def acommit_first(
        self,
        connection: Any,
        session: Session,
        records: TurnRecords,
        condition: SaveCondition,
        *,
        agent: str,
    ) -> tuple[tuple[Session, int] | None, tuple[Any, ...]]: ...


class DatabaseCommitter:
    """A ``DjangoStore``: the save and the records in the database's own transaction; on
    PostgreSQL in one statement (two round trips a turn), which can also be awaited on an
    event loop's connection."""

    def __init__(self, store: DjangoStore) -> None:
        self.store = store
        self.using = store.using

    def on_event_loop(self) -> DatabaseCommitter | None:
        return self if self.store.combines_writes else None

    def _numbers(self) -> bool:
        """Whether loads say the log's last ``seq``: a sealed entry (``ENCRYPTION_KEYS``)
        is bound to its ``seq``, which one statement then writes it under."""
        return self.store.combines_writes and sealing()

    def load(self, session_id: str) -> tuple[Session | None, int | None]:
        if self._numbers():
            return self.store.load_numbered(session_id)
        return self.store.load(session_id), None

    def _combined(self, records: TurnRecords) -> bool:
        """Whether the save and its records go as one statement: on PostgreSQL, when the
        log is not sealed or its load said its last ``seq``."""
        return self.store.combines_writes and (records.last_seq is not None or not sealing())

    @contextmanager
    def exclusive(self, session_id: str) -> Iterator[None]:
        """A transaction holding the session's row (``SELECT … FOR UPDATE``): another turn's
        save waits on it, then is refused as a conflict. Every save takes the session's row
        before its records' rows, so holding it first cannot deadlock with them."""
        if not connections[self.using].features.has_select_for_update:
            yield  # SQLite: one writer at a time already
            return
        with transaction.atomic(using=self.using):
            self.store.hold(session_id)
            yield

    def commit(
        self, session: Session, expected: int, records: TurnRecords, *, agent: str
    ) -> tuple[Session, int]:
        if not self._combined(records):
            with transaction.atomic(using=self.using):
                saved = self.store.save(session, expected, agent=agent)
                return saved, write_records(records, self.using, exclusive=True)
        parts, params = statement_parts(records, self.using)
        # Inside the caller's transaction the statement runs under a savepoint, so an input
        # applied before (a unique violation) does not abort that transaction.
        nested = connections[self.using].in_atomic_block
        with transaction.atomic(using=self.using) if nested else nullcontext():
            saved, (first_seq,) = self.store.run_combined(
                self.store.combined_save(session, expected, parts, params, FIRST_SEQ, agent=agent)
            )
        return saved, first_seq

    async def aload(self, connection: Any, session_id: str) -> tuple[Session | None, int | None]:
        if self._numbers():
            return await self.store.aload_numbered(connection, session_id)
        return await self.store.aload(connection, session_id), None

    async def acommit(
        self, connection: Any, session: Session, expected: int, records: TurnRecords, *, agent: str
    ) -> tuple[Session, int]:
        """``commit`` awaited on ``connection`` (``backends.loop_connections``)."""
        parts, params = statement_parts(records, self.using)
        combined = self.store.combined_save(
            session, expected, parts, params, FIRST_SEQ, agent=agent
        )
        saved, (first_seq,) = await self.store.arun_combined(connection, combined)
        return saved, first_seq

    async def acommit_first(
        self,
        connection: Any,
        session: Session,
        records: TurnRecords,
        condition: SaveCondition,
        *,
        agent: str,
    ) -> tuple[tuple[Session, int] | None, tuple[Any, ...]]:
        """A session's first save and its records, made only with ``condition``'s writes, in
        one statement on ``connection``: the saved session and its first ``seq`` (``None``:
        nothing was written), and the values of the condition's ``select``."""
        parts, params = statement_parts(records, self.using)
        combined = self.store.combined_save(
            session, 0, parts, params, FIRST_SEQ, agent=agent, condition=condition
        )
        saved, (first_seq, *outcome) = await self.store.arun_first(connection, combined)
        return (None if saved is None else (saved, first_seq)), tuple(outcome)


class RecordsBesideCommitter:
    """A store outside the database (memory, files, SQLite file, Redis): the records are
    written first in a database transaction that commits only once the save took effect, so a
    save that failed leaves no records. A crash between the save and that commit would leave
    a saved turn without its records: a window the database stores do not have."""

    def __init__(self, store: Store, using: str | None = None) -> None:
        self.store = store
        self.using = using or router.db_for_write(OutboundMessage)

    def commit(
        self, session: Session, expected: int, records: TurnRecords, *, agent: str
    ) -> tuple[Session, int]:
        with transaction.atomic(using=self.using):
            first_seq = write_records(records, self.using, exclusive=False)
            saved = self.store.save(session, expected)
        return saved, first_seq

    def load(self, session_id: str) -> tuple[Session | None, None]:
        return self.store.load(session_id), None

    def on_event_loop(self) -> None:
        return None  # the store's save is not awaitable

    def exclusive(self, session_id: str) -> AbstractContextManager[None]:
        return nullcontext()  # a store outside the database has no row to hold


def committer_for(store: Store) -> Committer:
    """How the host commits a turn on ``store``: a ``DjangoStore`` writes the save and the
    records in the database's one transaction; any other store gets the generic plan (records
    in a database transaction around the save)."""
    if isinstance(store, DjangoStore):
        return DatabaseCommitter(store)
    return RecordsBesideCommitter(store)
