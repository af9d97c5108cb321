"""Google ADK's sessions on this app's tables (extra ``[adk]``).

``WarlockSessionService`` is an ADK ``BaseSessionService``: a session is a warlock
conversation (``Conversation``, the session's id, owned, versioned, kept by tenant) whose
messages are its events, each as ADK dumps it to JSON; its state, and the ``app:`` and
``user:`` state it shares, are ``AgentState`` rows; ``temp:`` state lives only in the
invocation, as ADK says. ``append_event`` writes the event and its state delta in one
transaction, conditional on the version the caller's session was read at: a session written
meanwhile by another process is refused with ADK's ``StaleSessionError`` (ADK #1733, #3717),
never overwritten. Reads take only the events a session needs (``GetSessionConfig``) from a
history this process has read once (the conversation store's cache): a long session stays
cheap (ADK #3039, #4827).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from ... import tenancy
from ...conversations.db import DjangoConversationStore
from ...conversations.stores import new_record
from ...encryption import agent_state_place, message_place, open_json, seal_json, sealing
from ...errors import SessionConflictError, SessionExistsError
from ...host.wire import session_id_input
from ...models import AgentState, Conversation, ConversationMessage
from ...redaction import redact_value
from ..langgraph.postgres import on_postgresql
from ..names import checked_name
from ..owners import owner_of
from . import postgres

try:
    from google.adk.errors import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events import Event
    from google.adk.platform import uuid as platform_uuid
    from google.adk.sessions import BaseSessionService, Session, State
    from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "warlock_sessions.frameworks.adk needs Google's ADK: pip install 'warlock-sessions[adk]'"
    ) from error

#: A session as kept: its version, merged state, last update and latest events.
Kept = tuple[int, dict[str, Any], datetime, list[dict[str, Any]]]
#: How a message column keeps an event: the text the raw statement writes must be its.
MESSAGE = ConversationMessage._meta.get_field("message")
STALE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)
Scope = AgentState.Scope


def _kept_event(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude_none=True, by_alias=True)


def _split(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``state`` by where it is kept: ``app:`` and ``user:`` keys without their prefix, the
    session's own keys; ``temp:`` keys are kept nowhere."""
    parts: dict[str, dict[str, Any]] = {Scope.APP: {}, Scope.USER: {}, Scope.SESSION: {}}
    for key, value in state.items():
        if key.startswith(State.APP_PREFIX):
            parts[Scope.APP][key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            parts[Scope.USER][key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            parts[Scope.SESSION][key] = value
    return parts


class WarlockSessionService(BaseSessionService):
    """ADK's session service on this app's tables (see the module doc).

    ``owner``: whose sessions it creates, for the API's policy, quotas and erasure (a
    Django user, a request, or ``None``); ``using``: the database alias.
    """

    def __init__(self, *, owner: Any = None, using: str | None = None) -> None:
        self.owner = owner_of(owner)
        self.using: str = using or router.db_for_write(Conversation) or "default"
        self._store = DjangoConversationStore(using=self.using, owner=self.owner)

    # -- ADK's interface (async); the work is done in a worker thread ---------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        app_name, user_id = _checked(app_name, user_id)
        return await sync_to_async(self._create)(app_name, user_id, state, session_id)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        app_name, user_id = _checked(app_name, user_id)
        session_id = session_id_input((session_id or "").strip())
        return await sync_to_async(self._session)(app_name, user_id, session_id, config)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await sync_to_async(self._list)(app_name, user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        app_name, user_id = _checked(app_name, user_id)
        session_id = session_id_input((session_id or "").strip())
        await sync_to_async(self._delete)(app_name, user_id, session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        app_name, user_id = _checked(app_name, user_id)
        tenant = tenancy.current() or ""
        return await sync_to_async(self._state)(Scope.USER, app_name, user_id, tenant)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        await sync_to_async(self._append)(session, event)
        return self._commit_event_to_session(session, event)

    # -- in a worker thread --------------------------------------------------------------

    def _create(
        self, app_name: str, user_id: str, state: dict[str, Any] | None, session_id: str | None
    ) -> Session:
        session_id = session_id_input((session_id or "").strip() or platform_uuid.new_uuid())
        parts = _split(state or {})
        now = timezone.now()
        try:
            with transaction.atomic(using=self.using):
                # The state a session left when its conversation went (deleted in the admin,
                # pruned) does not keep its id taken.
                self._rows().filter(scope=Scope.SESSION, session_id=session_id).exclude(
                    session_id__in=self._conversation_ids()
                ).delete()
                self._store.create(new_record(session_id))
                own = self._rows().create(
                    scope=Scope.SESSION,
                    app_name=app_name,
                    user_id=user_id,
                    session_id=session_id,
                    state=self._sealed(
                        Scope.SESSION, app_name, user_id, session_id, parts[Scope.SESSION]
                    ),
                    updated_at=now,
                )
                self._merge(Scope.APP, app_name, "", own.tenant, parts[Scope.APP])
                self._merge(Scope.USER, app_name, user_id, own.tenant, parts[Scope.USER])
        except (SessionExistsError, IntegrityError):
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        return self._session(app_name, user_id, session_id, None)  # type: ignore[return-value]

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        rows = self._rows().filter(scope=Scope.SESSION, app_name=app_name)
        rows = rows.filter(session_id__in=self._conversation_ids())  # not one whose chat went
        if user_id is not None:
            rows = rows.filter(user_id=user_id)
        shared: dict[tuple[str, str], dict[str, Any]] = {}
        sessions = []
        for row in rows:
            for key in ((row.tenant, ""), (row.tenant, row.user_id)):
                if key not in shared:
                    scope = Scope.USER if key[1] else Scope.APP
                    shared[key] = self._state(scope, app_name, key[1], row.tenant)
            state = self._merged(
                self._opened(row), shared[(row.tenant, "")], shared[(row.tenant, row.user_id)]
            )
            sessions.append(
                Session(
                    id=row.session_id,
                    app_name=app_name,
                    user_id=row.user_id,
                    state=state,
                    last_update_time=row.updated_at.timestamp(),
                )
            )
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    def _conversation_ids(self) -> QuerySet[Conversation, Any]:
        return Conversation.objects.using(self.using).values("id")

    def _delete(self, app_name: str, user_id: str, session_id: str) -> None:
        with transaction.atomic(using=self.using):
            kept = self._session_row(app_name, user_id, session_id)
            if kept is None:
                return
            kept.delete()
            self._store.delete(session_id)

    def _append(self, session: Session, event: Event) -> None:
        # One statement needs the version the session was read at (without it, two appends
        # at once would race for a position) and a state it can merge (not a sealed one).
        marked = session._storage_update_marker is not None
        if marked and on_postgresql(self.using) and not sealing():
            version = self._append_in_one(session, event)
            if version is not None:
                session._storage_update_marker = str(version)
                session.last_update_time = event.timestamp
                return
            # Nothing written: stale, gone, or the event again; the rows say which.
        self._append_rows(session, event)

    def _append_in_one(self, session: Session, event: Event) -> int | None:
        parts = _split(event.actions.state_delta if event.actions else {})
        marker = session._storage_update_marker
        return postgres.append(
            self.using,
            {
                "session": session.id,
                "app": session.app_name,
                "user": session.user_id,
                "version": None if marker is None else int(marker),
                "scope": tenancy.current(),
                "event": MESSAGE.get_prep_value(redact_value(_kept_event(event))),
                "own": json.dumps(redact_value(parts[Scope.SESSION])),
                "app_delta": json.dumps(redact_value(parts[Scope.APP])),
                "user_delta": json.dumps(redact_value(parts[Scope.USER])),
                "at": datetime.fromtimestamp(event.timestamp, UTC),
            },
        )

    def _append_rows(self, session: Session, event: Event) -> None:
        with transaction.atomic(using=self.using):
            row = self._session_row(session.app_name, session.user_id, session.id, lock=True)
            record = self._store.load(session.id) if row is not None else None
            if row is None or record is None:
                raise SessionNotFoundError(f"Session {session.id} not found.")
            marker = session._storage_update_marker
            if marker is not None and marker != str(record["version"]):
                raise StaleSessionError(STALE)
            kept = _kept_event(event)
            if any(
                stored.get("id") == event.id and stored == redact_value(kept)
                for stored in record["messages"][-50:]
            ):
                return  # the same event delivered again: applied once
            parts = _split(event.actions.state_delta if event.actions else {})
            self._merge(Scope.APP, session.app_name, "", row.tenant, parts[Scope.APP])
            self._merge(
                Scope.USER, session.app_name, session.user_id, row.tenant, parts[Scope.USER]
            )
            state = {**self._opened(row), **parts[Scope.SESSION]}
            row.state = self._sealed(
                Scope.SESSION, row.app_name, row.user_id, row.session_id, state
            )
            row.updated_at = datetime.fromtimestamp(event.timestamp, UTC)
            row.save(update_fields=["state", "updated_at"])
            try:
                self._store.append_turn(record, [*record["messages"], kept], [kept])
            except SessionConflictError:
                raise StaleSessionError(STALE) from None
        session._storage_update_marker = str(record["version"])
        session.last_update_time = event.timestamp

    # -- reading -------------------------------------------------------------------------

    def _session(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> Session | None:
        recent = None if config is None else config.num_recent_events
        kept = (
            self._kept_in_one(app_name, user_id, session_id, recent)
            if on_postgresql(self.using)
            else self._kept_rows(app_name, user_id, session_id, recent)
        )
        if kept is None:
            return None
        version, state, updated_at, events = kept
        if config is not None and config.after_timestamp is not None:
            events = [e for e in events if e.get("timestamp", 0) >= config.after_timestamp]
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=state,
            events=[Event.model_validate(event) for event in events],
            last_update_time=updated_at.timestamp(),
        )
        session._storage_update_marker = str(version)
        return session

    def _kept_rows(
        self, app_name: str, user_id: str, session_id: str, recent: int | None
    ) -> Kept | None:
        """What a session is kept as: its version, merged state, last update and latest
        events (``recent`` of them; all when ``None``)."""
        row = self._session_row(app_name, user_id, session_id)
        window = recent if recent and recent > 0 else None
        record = self._store.load(session_id, window=window) if row is not None else None
        if row is None or record is None:
            return None
        events = record["messages"]
        if recent is not None:
            events = events[-recent:] if recent else []
        state = self._merged(
            self._opened(row),
            self._state(Scope.APP, app_name, "", row.tenant),
            self._state(Scope.USER, app_name, user_id, row.tenant),
        )
        return record["version"], state, row.updated_at, events

    def _kept_in_one(
        self, app_name: str, user_id: str, session_id: str, recent: int | None
    ) -> Kept | None:
        found = postgres.session(
            self.using,
            {
                "session": session_id,
                "app": app_name,
                "user": user_id,
                "recent": recent,
                "scope": tenancy.current(),
            },
        )
        if found is None:
            return None
        version, own, updated_at, shared, user, positions, messages = found
        places = (
            (Scope.SESSION, app_name, user_id, session_id),
            (Scope.APP, app_name, "", ""),
            (Scope.USER, app_name, user_id, ""),
        )
        own, shared, user = (
            _opened_state(state, place)
            for state, place in zip((own, shared, user), places, strict=True)
        )
        events = [
            open_json(json.loads(message), *message_place(session_id, position))
            for position, message in zip(positions or [], messages or [], strict=True)
        ]
        return version, self._merged(own, shared, user), updated_at, events

    @staticmethod
    def _merged(
        own: dict[str, Any], shared: dict[str, Any], user: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            **own,
            **{State.APP_PREFIX + key: value for key, value in shared.items()},
            **{State.USER_PREFIX + key: value for key, value in user.items()},
        }

    def _rows(self) -> QuerySet[AgentState]:
        return AgentState.objects.using(self.using).all()

    def _session_row(
        self, app_name: str, user_id: str, session_id: str, *, lock: bool = False
    ) -> AgentState | None:
        rows = self._rows().filter(
            scope=Scope.SESSION, app_name=app_name, user_id=user_id, session_id=session_id
        )
        return (rows.select_for_update() if lock else rows).first()

    def _state(self, scope: str, app_name: str, user_id: str, tenant: str) -> dict[str, Any]:
        """The app's or a user's shared state, of the tenant the session asking is."""
        rows = self._rows().filter(scope=scope, app_name=app_name, user_id=user_id, tenant=tenant)
        row = rows.first()
        return {} if row is None else self._opened(row)

    def _opened(self, row: AgentState) -> dict[str, Any]:
        return _opened_state(row.state, (row.scope, row.app_name, row.user_id, row.session_id))

    def _sealed(
        self, scope: str, app_name: str, user_id: str, session_id: str, state: dict[str, Any]
    ) -> Any:
        return seal_json(
            redact_value(state), *agent_state_place(scope, app_name, user_id, session_id)
        )

    def _merge(
        self, scope: str, app_name: str, user_id: str, tenant: str, delta: dict[str, Any]
    ) -> None:
        """Merge ``delta`` into the app's or user's shared state of ``tenant`` (the session's),
        its row locked."""
        if not delta:
            return
        rows = self._rows().filter(scope=scope, app_name=app_name, user_id=user_id, tenant=tenant)
        row = rows.select_for_update().first()
        now = timezone.now()
        if row is None:
            try:
                with transaction.atomic(using=self.using):
                    self._rows().create(
                        tenant=tenant,
                        scope=scope,
                        app_name=app_name,
                        user_id=user_id,
                        state=self._sealed(scope, app_name, user_id, "", delta),
                        updated_at=now,
                    )
                return
            except IntegrityError:  # made meanwhile by another: merged into it
                row = rows.select_for_update().get()
        row.state = self._sealed(scope, app_name, user_id, "", {**self._opened(row), **delta})
        row.updated_at = now
        row.save(update_fields=["state", "updated_at"])


def _checked(app_name: str, user_id: str) -> tuple[str, str]:
    return checked_name(app_name, "app_name"), checked_name(user_id, "user_id", empty=True)


def _opened_state(stored: Any, place: tuple[str, str, str, str]) -> dict[str, Any]:
    """A state column as kept (JSON text from a raw statement, or its value), opened; ``{}``
    when there is none."""
    if stored is None:
        return {}
    value = open_json(
        json.loads(stored) if isinstance(stored, str) else stored, *agent_state_place(*place)
    )
    return value if isinstance(value, dict) else {}
