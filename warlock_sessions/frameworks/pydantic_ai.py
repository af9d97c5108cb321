"""A pydantic-ai agent's ``message_history`` kept as a warlock conversation (extra
``[pydantic-ai]``).

``WarlockHistory(conversation_id)`` keeps the messages pydantic-ai exchanges with its model
(``ModelRequest``/``ModelResponse``, with every part: prompts, text, tool calls and returns,
thinking, files by reference) as the messages of the row store's conversation, each exactly
as ``ModelMessagesTypeAdapter`` dumps it to JSON, so it reads back equal. ``run`` loads the
history, runs the agent on it and saves the run's new messages in one write conditional on
the version it read, all under the conversation's lock: two runs of one conversation never
interleave, and a writer that went round the lock is reported (``ConversationConflictError``),
never overwritten. What the app gives its conversations applies: the admin's transcript,
the conversations API, quotas, tenants, ``REDACT``, ``ENCRYPTION_KEYS``, erasure, retention.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError

from ..conversations.db import DjangoConversationStore
from ..conversations.stores import new_record
from ..errors import ConversationConflictError, SessionExistsError
from ..host.wire import session_id_input
from .owners import owner_of
from .turns import holding, run_holding

try:
    from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "warlock_sessions.frameworks.pydantic_ai needs pydantic-ai: "
        "pip install 'warlock-sessions[pydantic-ai]'"
    ) from error


class WarlockHistory:
    """A pydantic-ai agent's history on warlock's conversation tables (see the module doc).

    ``owner``: whose conversation it is (a user, a request, or ``None``); ``using``: the
    database alias.
    """

    def __init__(self, conversation_id: str, *, owner: Any = None, using: str | None = None):
        self.conversation_id = session_id_input(conversation_id, "conversation_id")
        self._store = DjangoConversationStore(using=using, owner=owner_of(owner))

    def load(self) -> list[ModelMessage]:
        """The history, oldest first (``[]`` for a conversation not begun)."""
        return self._messages(self._store.load(self.conversation_id))

    async def aload(self) -> list[ModelMessage]:
        return await sync_to_async(self.load)()

    def run_sync(self, agent: Any, user_prompt: Any = None, **options: Any) -> Any:
        """``agent.run_sync(user_prompt, message_history=<the history>, **options)``, its new
        messages saved: the run's result."""

        def turn() -> Any:
            record = self._store.load(self.conversation_id)
            history = self._messages(record)
            result = agent.run_sync(user_prompt, message_history=history, **options)
            self._save(record, result.new_messages())
            return result

        return run_holding(self._store, self.conversation_id, turn)

    async def run(self, agent: Any, user_prompt: Any = None, **options: Any) -> Any:
        """``await agent.run(...)`` as :meth:`run_sync` runs it."""
        async with holding(self._store, self.conversation_id):
            record = await sync_to_async(self._store.load)(self.conversation_id)
            history = self._messages(record)
            result = await agent.run(user_prompt, message_history=history, **options)
            await sync_to_async(self._save)(record, result.new_messages())
            return result

    def save(self, messages: list[ModelMessage]) -> None:
        """Append ``messages`` (a run of your own's ``result.new_messages()``) after the
        history as it is now."""
        self._save(self._store.load(self.conversation_id), messages)

    def clear(self) -> None:
        """Forget the conversation and every message."""
        self._store.delete(self.conversation_id)

    def _messages(self, record: dict[str, Any] | None) -> list[ModelMessage]:
        return ModelMessagesTypeAdapter.validate_python(record["messages"] if record else [])

    def _save(self, record: dict[str, Any] | None, messages: list[ModelMessage]) -> None:
        """One write, conditional on the version ``record`` was read at (a conversation made
        meanwhile by another is a conflict too)."""
        added = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
        if record is None:
            try:
                self._store.create({**new_record(self.conversation_id), "messages": added})
            except SessionExistsError:  # made by another writer since it was read as none
                raise ConversationConflictError(self.conversation_id, 0, 1) from None
            return
        try:
            self._store.append_turn(record, [*record["messages"], *added], added)
        except IntegrityError:  # cleared and begun again meanwhile: its version started over
            raise ConversationConflictError(self.conversation_id, record["version"], None) from None
