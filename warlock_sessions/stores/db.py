"""DjangoStore: sessions in the ``warlock_sessions.Session`` model, on any Django database."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar, cast

from django.db import IntegrityError, connections, router, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models.constants import OnConflict
from django.utils import timezone

from ..backends.loop_connections import database
from ..engine.session import Session
from ..errors import SessionConflictError, SessionOfAnotherTenantError
from ..models import Session as SessionRow
from ..models import SessionEvent, forget_records, run_summary
from ..tenancy import current as current_tenant
from .base import Store, check_session_id, saved_copy

T = TypeVar("T")
#: The statements of one operation: each ``(sql, params)`` is sent the row it read back
#: (``None``: none), and the plan's return value is the operation's.
Plan = Generator[tuple[str, Sequence[Any]], Any, T]


@dataclass(frozen=True)
class SaveCondition:
    """Writes a session's first save is made together with, and only if they are made (the
    claim of its id: ``claims.first_claim``). ``ctes`` are common table expressions (taking
    ``params``) that run before the save; the one named ``gate`` returns a row when they wrote,
    and the save inserts the session only then. ``select`` is SQL whose values the statement
    returns after the save's own."""

    ctes: str
    params: list[Any]
    gate: str
    select: str


@dataclass(frozen=True)
class CombinedSave:
    """A save and further writes as one statement, built by ``DjangoStore.combined_save``."""

    session: Session
    expected: int
    statement: str
    values: list[Any]

    def saved(self) -> Session:
        return saved_copy(self.session, self.expected + 1)


class DjangoStore(Store):
    """The default store: one ``Session`` row per conversation, saved by a conditional write.

    * ``save(s, 0)`` is one ``INSERT … ON CONFLICT DO NOTHING`` (an existing row is a conflict);
      any other version is one ``UPDATE … WHERE id = %s AND version = %s``. Zero rows written is
      a :class:`SessionConflictError` whose ``actual_version`` is read back (``None`` when the
      row is gone). No exception is raised inside the database, so a conflict never breaks an
      enclosing transaction.
    * Each operation is a single statement, so the store needs no transaction of its own and
      works with ``ATOMIC_REQUESTS`` on: inside an outer transaction the write becomes visible
      when that transaction commits, and a concurrent save of the same session waits on the row
      lock until then and is refused as a conflict if the version moved.
    * The statements are written once, by hand, against the model's own table and columns: the
      ORM's query compilation cost more than the database round trip (``bench/store.py``).

    ``using`` picks the database alias (default: the router's choice for writes). ``agent`` is
    the name written on rows this store creates, so the admin and API can filter by agent; a
    ``Host`` passes its own agent's name to the saves it makes.
    """

    def __init__(self, using: str | None = None, agent: str = "") -> None:
        self.using: str = using or router.db_for_write(SessionRow) or "default"
        self.agent = agent

    @cached_property
    def _sql(self) -> dict[str, str]:
        """The statements outside every tenant's scope (and whenever tenants are off)."""
        return self._statements(tenant=False)

    @cached_property
    def _tenant_sql(self) -> dict[str, str]:
        """The statements inside a tenant's scope: each reads and writes only that tenant's
        row, and takes the tenant as its last parameter (the claim: after its row's values)."""
        return self._statements(tenant=True)

    def _scoped(self) -> tuple[dict[str, str], list[Any]]:
        """The statements for the current scope and the parameters they end with."""
        tenant = current_tenant()
        return (self._sql, []) if tenant is None else (self._tenant_sql, [tenant])

    def _statements(self, *, tenant: bool) -> dict[str, str]:
        connection = connections[self.using]
        quote = connection.ops.quote_name
        meta = SessionRow._meta
        table = quote(meta.db_table)
        column = {field.name: quote(field.column or "") for field in meta.concrete_fields}
        written = [
            "blob",
            "version",
            "run_flows",
            "run_statuses",
            "search_text",
            "handover",
            "handover_since",
            "updated_at",
        ]
        created = ["id", "agent", "created_at", *written, *(["tenant"] if tenant else [])]
        insert_columns = ", ".join(column[name] for name in created)
        ignore = connection.features.supports_ignore_conflicts
        insert = connection.ops.insert_statement(on_conflict=OnConflict.IGNORE if ignore else None)
        suffix = (
            connection.ops.on_conflict_suffix_sql([], OnConflict.IGNORE, [], []) if ignore else ""
        )
        # A row created without an agent (a PUT, a direct save) takes the first one a save
        # names; an agent already there is kept (and, unchanged, keeps the update HOT).
        agent = column["agent"]
        assignments = ", ".join(f"{column[name]} = %s" for name in written) + (
            f", {agent} = CASE WHEN {agent} = '' THEN %s ELSE {agent} END"
        )
        placeholders = ", ".join(["%s"] * len(created))
        # Typed, as VALUES would take them from the columns: a SELECT list reads text.
        # The text columns cast without their length, so a value too long fails the insert
        # as VALUES would make it fail, rather than being cut to fit.
        field_of = {field.name: field for field in meta.concrete_fields}
        selected = ", ".join(
            "CAST(%s AS "
            + (
                connection.ops.cast_char_field_without_max_length
                if field_of[name].get_internal_type() == "CharField"
                else str(field_of[name].cast_db_type(connection))
            )
            + ")"
            for name in created
        )
        of_tenant = f" AND {column['tenant']} = %s" if tenant else ""
        by_id = f"WHERE {column['id']} = %s"
        event = SessionEvent._meta
        event_seq = quote(event.get_field("seq").column or "")
        last_seq = (
            f"SELECT {event_seq} FROM {quote(event.db_table)} WHERE "
            f"{quote(event.get_field('session_id').column or '')} = %s "
            f"ORDER BY {event_seq} DESC LIMIT 1"
        )
        return {
            "load": f"SELECT {column['blob']}, {column['version']} FROM {table} {by_id}{of_tenant}",
            # The session and the last seq of its log, in one round trip (a session not
            # stored yet reads its log's last seq alone).
            "load_numbered": (
                f"SELECT {column['blob']}, {column['version']}, ({last_seq}) FROM {table} "
                f"{by_id}{of_tenant}"
            ),
            "last_seq": last_seq,
            "version": f"SELECT {column['version']} FROM {table} {by_id}{of_tenant}",
            "hold": f"SELECT 1 FROM {table} {by_id}{of_tenant} {connection.ops.for_update_sql()}",
            "insert": f"{insert} {table} ({insert_columns}) VALUES ({placeholders}) {suffix}",
            # An insert made only if the condition's gate returned a row (its name follows);
            # no ON CONFLICT: a session stored meanwhile fails the statement, condition and
            # all, rather than leaving the condition's writes without the session.
            "insert_gated": f"INSERT INTO {table} ({insert_columns}) SELECT {selected} FROM ",
            "update": (
                f"UPDATE {table} SET {assignments} {by_id} AND {column['version']} = %s{of_tenant}"
            ),
            "delete": f"DELETE FROM {table} {by_id}{of_tenant}",
            "version_column": column["version"],
            "tenant_column": column["tenant"],
        }

    def _cursor(self) -> CursorWrapper:
        return connections[self.using].cursor()

    def _read(self, session_id: str) -> tuple[str, int] | None:
        return self._run(self._stored(session_id))

    def _stored(self, session_id: str) -> Plan[tuple[str, int] | None]:
        sql, tenant = self._scoped()
        row = yield sql["load"], [session_id, *tenant]
        return None if row is None else (row[0], row[1])

    def load_numbered(self, session_id: str) -> tuple[Session | None, int]:
        """The session (``None`` if there is none) and the last ``seq`` of its log."""
        return self._run(self._load_numbered(check_session_id(session_id)))

    async def aload_numbered(self, connection: Any, session_id: str) -> tuple[Session | None, int]:
        """``load_numbered`` awaited on ``connection`` (see ``arun_combined``)."""
        return await self._arun(connection, self._load_numbered(check_session_id(session_id)))

    def _load_numbered(self, session_id: str) -> Plan[tuple[Session | None, int]]:
        sql, tenant = self._scoped()
        row = yield sql["load_numbered"], [session_id, session_id, *tenant]
        if row is None:  # a session not stored yet: its log's last seq alone
            found = yield sql["last_seq"], [session_id]
            return None, found[0] if found else 0
        text, version, last_seq = row
        return self.decoded(text, session_id, version), last_seq or 0

    def hold(self, session_id: str) -> None:
        """Lock the session's row until the enclosing transaction ends (nothing if none)."""
        sql, tenant = self._scoped()
        with self._cursor() as cursor:
            cursor.execute(sql["hold"], [session_id, *tenant])

    async def aload(self, connection: Any, session_id: str) -> Session | None:
        """``load`` awaited on ``connection`` (see ``arun_combined``)."""
        stored = await self._arun(connection, self._stored(check_session_id(session_id)))
        return None if stored is None else self.decoded(stored[0], session_id, stored[1])

    def _prepare(
        self, session: Session, expected_version: int, agent: str | None = None
    ) -> tuple[int, list[Any]]:
        """The checked expected version and the parameters of the insert or update (``agent``,
        else the store's, is named on a session it creates)."""
        expected, text = self.checked(session, expected_version)
        return expected, self._row_params(session, expected, text, agent)

    def _row_params(
        self, session: Session, expected: int, text: str, agent: str | None
    ) -> list[Any]:
        summary = run_summary(session)
        moment = database(self.using).ops.adapt_datetimefield_value
        now = moment(timezone.now())
        written = [
            text,
            expected + 1,
            summary["run_flows"],
            summary["run_statuses"],
            summary["search_text"],
            summary["handover"],
            moment(summary["handover_since"]),
            now,
        ]
        tenant = self._scoped()[1]
        if expected == 0:
            return [session["id"], agent or self.agent, now, *written, *tenant]
        return [*written, agent or self.agent, session["id"], expected, *tenant]

    def _conflict(
        self, cursor: CursorWrapper, session_id: str, expected: int
    ) -> SessionConflictError:
        return self._run(self._conflicted(session_id, expected), cursor)

    def _conflicted(self, session_id: str, expected: int) -> Plan[SessionConflictError]:
        """The conflict of a save that wrote nothing, with the stored version read back."""
        sql, tenant = self._scoped()
        row = yield sql["version"], [session_id, *tenant]
        # Not this tenant's, but another's: that row would make a replay fail for ever.
        if row is None and tenant and (yield self._sql["version"], [session_id]) is not None:
            raise SessionOfAnotherTenantError(session_id)
        return SessionConflictError(session_id, expected, None if row is None else row[0])

    def save(self, session: Session, expected_version: int, *, agent: str | None = None) -> Session:
        """``Store.save``; ``agent`` (else the store's) is named on a session it creates."""
        expected, text = self.checked(session, expected_version)
        self._write(session, expected, text, agent)
        return saved_copy(session, expected + 1)

    def _write(self, session: Session, expected: int, text: str, agent: str | None = None) -> None:
        params = self._row_params(session, expected, text, agent)
        with self._cursor() as cursor:
            if expected == 0:
                rowcount = self._insert(cursor, params)
            else:
                cursor.execute(self._scoped()[0]["update"], params)
                rowcount = cursor.rowcount
            if rowcount != 1:
                raise self._conflict(cursor, session["id"], expected)

    @property
    def combines_writes(self) -> bool:
        """Whether :meth:`run_combined` can join other writes to the save (PostgreSQL)."""
        return database(self.using).vendor == "postgresql"

    def combined_save(
        self,
        session: Session,
        expected_version: int,
        parts: Sequence[str],
        params: Sequence[Any],
        select: str,
        *,
        agent: str | None = None,
        condition: SaveCondition | None = None,
    ) -> CombinedSave:
        """``save`` and further writes as one PostgreSQL statement, for :meth:`run_combined`
        (or :meth:`arun_combined`) to run, so they commit together with no transaction round
        trips.

        ``parts`` are common table expressions (``name AS (...)``) that may read ``saved`` (the
        saved row's ``version`` and ``tenant``) and must write only
        ``WHERE EXISTS (SELECT 1 FROM saved)``:
        on a conflict ``saved`` is empty and nothing is written. ``select`` is SQL evaluated
        after the saved version in the final ``SELECT``. A session's first save may be made
        on a ``condition`` (run it with :meth:`arun_first`).
        """
        expected, save_params = self._prepare(session, expected_version, agent)
        sql = self._scoped()[0]
        if condition is None:
            ctes, condition_params = [], []
            saved = sql["insert" if expected == 0 else "update"]
        elif expected == 0:
            ctes, condition_params = [condition.ctes], list(condition.params)
            saved = f"{sql['insert_gated']}{condition.gate}"
            select = f"{select}, {condition.select}"
        else:
            raise ValueError("only a session's first save is made on a condition")
        version = self._sql["version_column"]
        tenant = self._sql["tenant_column"]
        ctes += [f"saved AS ({saved} RETURNING {version}, {tenant})", *parts]
        return CombinedSave(
            session=session,
            expected=expected,
            statement=f"WITH {', '.join(ctes)} SELECT (SELECT {version} FROM saved), {select}",
            values=[*condition_params, *save_params, *params],
        )

    def run_combined(self, combined: CombinedSave) -> tuple[Session, tuple[Any, ...]]:
        """Run the statement; returns the saved session and what its ``select`` evaluated to,
        or raises ``SessionConflictError`` (nothing written)."""
        return self._run(self._combined(combined))

    async def arun_combined(
        self, connection: Any, combined: CombinedSave
    ) -> tuple[Session, tuple[Any, ...]]:
        """``run_combined`` awaited on ``connection``, a ``psycopg.AsyncConnection`` to this
        store's database in autocommit mode (``backends.loop_connections``). Database errors are
        Django's, as from ``run_combined``."""
        return await self._arun(connection, self._combined(combined))

    def _combined(self, combined: CombinedSave) -> Plan[tuple[Session, tuple[Any, ...]]]:
        row = yield combined.statement, combined.values
        if row[0] is None:
            raise (yield from self._conflicted(combined.session["id"], combined.expected))
        return combined.saved(), tuple(row[1:])

    async def arun_first(
        self, connection: Any, combined: CombinedSave
    ) -> tuple[Session | None, tuple[Any, ...]]:
        """:meth:`arun_combined` for a first save made on a condition: the saved session, or
        ``None`` when nothing was written (the condition's writes were not made), and the
        values of the ``select`` and the condition's. A session stored under the id meanwhile
        fails the statement with ``IntegrityError``: nothing is written then either."""
        return await self._arun(connection, self._first(combined))

    def _first(self, combined: CombinedSave) -> Plan[tuple[Session | None, tuple[Any, ...]]]:
        row = yield combined.statement, combined.values
        return (None if row[0] is None else combined.saved()), tuple(row[1:])

    # A plan is the statements of one operation, each sent the row its predecessor read: run
    # by a Django cursor in a thread, or awaited on an event loop's connection, the same plan.

    def _run(self, plan: Plan[T], cursor: CursorWrapper | None = None) -> T:
        with nullcontext(cursor) if cursor is not None else self._cursor() as running:
            statement = next(plan)
            while True:
                running.execute(*statement)
                try:
                    statement = plan.send(running.fetchone())
                except StopIteration as done:
                    return cast(T, done.value)

    async def _arun(self, connection: Any, plan: Plan[T]) -> T:
        with database(self.using).wrap_database_errors:
            statement = next(plan)
            while True:
                row = await (await connection.execute(*statement)).fetchone()
                try:
                    statement = plan.send(row)
                except StopIteration as done:
                    return cast(T, done.value)

    def _insert(self, cursor: CursorWrapper, params: list[Any]) -> int:
        insert = self._scoped()[0]["insert"]
        if database(self.using).features.supports_ignore_conflicts:
            cursor.execute(insert, params)
            return int(cursor.rowcount)
        # Backends without ON CONFLICT: a savepoint keeps the duplicate from breaking an
        # enclosing transaction.
        try:
            with transaction.atomic(using=self.using):
                cursor.execute(insert, params)
        except IntegrityError:
            return 0
        return 1

    def _remove(self, session_id: str) -> bool:
        """Remove the session and what the host kept of it (log, outbox, wakes, applied inputs,
        owner), together: an id used again starts clean."""
        sql, tenant = self._scoped()
        with transaction.atomic(using=self.using), self._cursor() as cursor:
            cursor.execute(sql["delete"], [session_id, *tenant])
            forget_records(session_id, self.using)
            return bool(cursor.rowcount == 1)
