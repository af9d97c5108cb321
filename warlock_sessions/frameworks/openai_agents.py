"""An OpenAI Agents SDK ``Session`` kept as a warlock conversation (extra ``[openai-agents]``).

``WarlockSession(session_id)`` keeps the items the SDK's ``Runner`` reads and writes as the
messages of the row store's conversation ``session_id`` (``DjangoConversationStore``): one
header row with a version and one row per item, so what the app gives its own conversations
applies: the admin's transcript, the conversations API, quotas, tenants, ``REDACT``,
``ENCRYPTION_KEYS``, ``warlock_erase`` and retention. Every write is conditional on the
version it read and is tried again on a lost race: items are appended, never lost.

The SDK's ``Runner.run`` reads the history, then writes each turn's items in calls of their
own, so two runs on one session at once interleave their items (the SDK's own race).
``await session.run(agent, input)`` runs under the conversation's lock
(``CONVERSATION_LOCK``, ``LOCK_TIMEOUT``): the second run waits for the first, or is refused
with ``SessionLockTimeout``.

``AgentModel(sdk_agent)`` is the other way in: an SDK agent writing the replies of one of
this app's agents, whose chats then take the session socket and can be handed to a person.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.db import IntegrityError

from .. import tenancy
from ..conf import warlock_settings
from ..conversations.db import DjangoConversationStore
from ..conversations.stores import new_record
from ..engine.ports import (
    Deferral,
    Model,
    ProviderError,
    SpeakRequest,
    Spoken,
    Understanding,
    UnderstandRequest,
)
from ..errors import OfAnotherTenantError, SessionConflictError, SessionExistsError
from ..host.wire import session_id_input
from ..providers import RuleModel
from .owners import owner_of
from .turns import holding

try:
    from agents import Runner
    from agents.exceptions import AgentsException
    from agents.memory import SessionABC, SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
    from openai import APIConnectionError, InternalServerError, RateLimitError
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "warlock_sessions.frameworks.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'warlock-sessions[openai-agents]'"
    ) from error


class WarlockSession(SessionABC):
    """The SDK's ``Session`` on warlock's conversation tables (see the module doc).

    ``owner``: whose conversation it is, for the API's policy, quotas and erasure: a Django
    user, a request (its user, or its anonymous visitor), or ``None`` (server code's: nobody
    owns it). ``session_settings``: the SDK's, ``limit`` being the default of ``get_items``.
    """

    def __init__(
        self,
        session_id: str,
        *,
        owner: Any = None,
        using: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id_input(session_id, "session_id")
        self.session_settings = (
            coerce_session_settings(dict(session_settings))
            if isinstance(session_settings, Mapping)
            else session_settings or SessionSettings()
        )
        self._store = DjangoConversationStore(using=using, owner=owner_of(owner))
        #: The conversation as this session last read or wrote it (``None``: read it again).
        self._read: dict[str, Any] | None = None

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items, oldest first; with a ``limit`` (or the settings'), the latest ones."""
        return await sync_to_async(self._items)(limit)

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` (the conversation is made by the first)."""
        if items:
            await sync_to_async(self._append)(list(items))

    async def pop_item(self) -> Any | None:
        """Remove and return the latest item (``None`` when there is none)."""
        return await sync_to_async(self._pop)()

    async def clear_session(self) -> None:
        """Forget the conversation and every item."""
        self._read = None
        await sync_to_async(self._store.delete)(self.session_id)

    async def run(self, agent: Any, input: Any, **options: Any) -> Any:
        """``Runner.run(agent, input, session=self, **options)`` under the conversation's
        lock: another run of this session waits, or is refused (``SessionLockTimeout``)."""
        async with self.turn():
            return await Runner.run(agent, input, session=self, **options)

    def turn(self) -> AbstractAsyncContextManager[None]:
        """Hold the conversation's lock while the block runs (an ``async with`` around a
        ``Runner.run`` of your own, a streamed one included)."""
        return holding(self._store, self.session_id)

    # -- in a worker thread -------------------------------------------------------------------

    def _items(self, limit: int | None) -> list[Any]:
        count = resolve_session_limit(limit, self.session_settings)
        if count is not None and count < 0:  # a negative limit is none, as the SDK's own
            count = None
        # With a limit the row store reads only the newest rows; an append after them
        # writes at their place all the same (the record's ``offset``).
        record = self._read = self._store.load(self.session_id, window=count or None)
        items = record["messages"] if record else []
        if count is not None:
            items = items[-count:] if count else []
        # The store keeps its copy for its next read: the caller gets its own, made the way
        # JSON is (as stored; deepcopy took five times as long).
        return orjson.loads(orjson.dumps(items))  # type: ignore[no-any-return]

    def _append(self, items: list[Any]) -> None:
        for attempt in self._attempts():
            # The runner reads the history, then appends to it: the first try is
            # conditional on the version that read found, not on a read of its own.
            record = (
                self._read
                if attempt.count == 0 and self._read
                else self._store.load(self.session_id)
            )
            self._read = None
            try:
                if record is None:
                    self._store.create({**new_record(self.session_id), "messages": items})
                else:
                    self._store.append_turn(record, [*record["messages"], *items], items)
                    self._read = record  # at its new version
                return
            except (SessionConflictError, SessionExistsError, IntegrityError) as error:
                # Another writer was first (or cleared and began the session again, which
                # starts its version over): append after what it wrote.
                if isinstance(error, SessionExistsError) and self._hidden():
                    raise OfAnotherTenantError("conversation", self.session_id) from None
                attempt.lost(error)

    def _hidden(self) -> bool:
        """Whether the session's id is kept but not this scope's to read (another tenant's)."""
        return tenancy.enabled() and self._store.load(self.session_id) is None

    def _pop(self) -> Any | None:
        self._read = None
        for attempt in self._attempts():
            record = self._store.load(self.session_id)
            if record is None or not record["messages"]:
                return None
            latest = orjson.loads(orjson.dumps(record["messages"][-1]))
            try:
                self._store.truncate(record, len(record["messages"]) - 1)
            except SessionConflictError as error:
                attempt.lost(error)
                continue
            return latest
        return None  # unreachable: the attempts end by raising

    def _attempts(self) -> Iterator[_Attempt]:
        """Tries of a conditional write, for as long as ``LOCK_TIMEOUT`` (another writer
        wins each lost race, so each writer's turn comes), a little apart and at random, so
        two writers in step fall out of it; then the last lost race's error."""
        deadline = time.monotonic() + max(1.0, warlock_settings.LOCK_TIMEOUT)
        attempt = _Attempt()
        while True:
            yield attempt
            if attempt.error is None:
                return
            if time.monotonic() > deadline:
                raise attempt.error
            time.sleep(random.uniform(0, 0.005 * min(attempt.count, 20)))
            attempt.error = None


class _Attempt:
    """One try of a conditional write: the race it lost, if it lost one."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.count = 0

    def lost(self, error: Exception) -> None:
        self.error = error
        self.count += 1


class AgentModel:
    """An OpenAI Agents SDK agent as the model of one of this app's agents: its replies, with
    its instructions, tools and handoffs, written by ``Runner.run`` on the chat's history.
    ``Agent([], idle={"prompt": ""}, model=AgentModel(sdk_agent), name="helper")`` is an agent
    of this app whose chats take the session socket, the admin's inbox and hand-over to a
    person, the event log, wakes and every store. What a message means to the app's agent
    (its interrupts, "talk to a person", and the fields its flows collect) is read by
    ``understanding``, the offline ``RuleModel`` unless another model is given; a run that
    fails is a failed reply, as a provider's is: the SDK's errors are not retried, the OpenAI
    API's unreachable moments are (``provider-unavailable``)."""

    #: A run waits on the SDK agent's model: turns run in a worker thread.
    blocking = True

    def __init__(
        self,
        agent: Any,
        *,
        max_turns: int = 10,
        run_config: Any = None,
        understanding: Model | None = None,
    ) -> None:
        self.agent = agent
        self.understanding = understanding or RuleModel()
        self.max_turns = max_turns
        self.run_config = run_config

    def understand(self, request: UnderstandRequest) -> Understanding:
        return self.understanding.understand(request)

    def speak(self, request: SpeakRequest) -> Spoken | Deferral:
        said: list[Any] = [
            {"role": item["role"], "content": str(item["content"])}
            for item in request.history
            if isinstance(item, Mapping)
            and item.get("role") in ("user", "assistant")
            and item.get("content")
        ]
        if request.input_kind == "message" and request.text:
            said.append({"role": "user", "content": request.text})
        options = {"run_config": self.run_config} if self.run_config is not None else {}
        try:
            result = Runner.run_sync(self.agent, said, max_turns=self.max_turns, **options)
        except (APIConnectionError, RateLimitError, InternalServerError) as error:
            raise ProviderError("provider-unavailable", True, detail=str(error)) from None
        except AgentsException as error:
            raise ProviderError("provider-invalid", False, detail=str(error)) from None
        return Spoken(message=str(result.final_output), llm_calls=len(result.raw_responses))
