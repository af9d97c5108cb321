"""What the conversation endpoints (``api/conversations.py``, ``realtime/conversations.py``) talk
to, as the settings name it: the agent (``CONVERSATION_AGENT``), the lock per conversation
(``CONVERSATION_LOCK``), both built once, and the row store that keeps each conversation with
its owner."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..conf import SETTING_NAME, Component, warlock_settings
from ..errors import NoConversationAgentError
from ..locks import InProcessLock, LeasedLock, SessionLock
from .db import DjangoConversationStore
from .session import ConversationSession, session


def _agent_of(found: Any) -> Any:
    if found is None:
        raise NoConversationAgentError(
            f"{SETTING_NAME}['CONVERSATION_AGENT'] is not set: the conversation endpoints need "
            "an agent"
        )
    agent = found if hasattr(found, "execute") else found()
    if not (hasattr(agent, "execute") and hasattr(agent, "stream")):
        raise TypeError(
            f"{SETTING_NAME}['CONVERSATION_AGENT'] returned {type(agent).__name__}, which is not "
            "a conversation agent (execute, stream, resume)"
        )
    return agent


def conversation_agent() -> Any:
    """``WARLOCK_SESSIONS["CONVERSATION_AGENT"]``, built once (a function is called)."""
    return warlock_settings.built("CONVERSATION_AGENT", _agent_of)


def _lock_of(component: Component | None) -> SessionLock | None:
    if component is None:
        return None
    lock: SessionLock = component.build()
    if isinstance(lock, InProcessLock | LeasedLock) and lock.timeout is None:
        lock.timeout = warlock_settings.LOCK_TIMEOUT
    return lock


def conversation_lock() -> SessionLock | None:
    """``WARLOCK_SESSIONS["CONVERSATION_LOCK"]``, built once; ``None``: the default lock. A
    lock built to wait for ever waits ``LOCK_TIMEOUT`` seconds instead: a request queued
    behind a long turn is answered ``conversation-busy`` rather than hold its thread."""
    return warlock_settings.built("CONVERSATION_LOCK", _lock_of)


def conversation_store(owner: Mapping[str, Any] | None = None) -> DjangoConversationStore:
    """The store the endpoints keep conversations in: the row store, whose rows carry the
    owner the policy asks about; a conversation it creates is ``owner``'s."""
    return DjangoConversationStore(owner=owner)


def open_conversation(conversation_id: str, store: DjangoConversationStore) -> ConversationSession:
    """The conversation on ``store``, talking to the configured agent under its lock."""
    return session(conversation_id, store, conversation_agent(), conversation_lock())
