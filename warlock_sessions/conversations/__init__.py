"""Conversation sessions: multi-turn chats with an agent whose history never rewrites itself
(docs/conversations.md)."""

from typing import TYPE_CHECKING

from ..stores.lazy import lazy_backends
from .agent import AgentResult, AgentStream, ConversationAgent
from .session import ConversationSession, ConversationStream, session, split_tool_pair
from .stores import ConversationStore, RecordConversationStore

if TYPE_CHECKING:
    from .db import DjangoConversationStore

__all__ = [
    "AgentResult",
    "AgentStream",
    "ConversationAgent",
    "ConversationSession",
    "ConversationStore",
    "ConversationStream",
    "DjangoConversationStore",
    "RecordConversationStore",
    "session",
    "split_tool_pair",
]

__getattr__ = lazy_backends(__name__, {"DjangoConversationStore": ".db"})
