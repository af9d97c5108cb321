"""Conversation sessions: multi-turn chats with an agent whose history never rewrites itself
(docs/conversations.md)."""

from typing import TYPE_CHECKING

from ..backends.lazy import lazy_backends
from .agent import AgentResult, AgentStream, ConversationAgent, EventStream
from .session import ConversationSession, session, split_tool_pair
from .stores import ConversationStore, RecordConversationStore
from .toolagent import Compaction, ToolAgent
from .tools import Tool, tool

if TYPE_CHECKING:
    from .db import DjangoConversationStore

__all__ = [
    "AgentResult",
    "AgentStream",
    "Compaction",
    "ConversationAgent",
    "ConversationSession",
    "ConversationStore",
    "DjangoConversationStore",
    "EventStream",
    "RecordConversationStore",
    "Tool",
    "ToolAgent",
    "session",
    "split_tool_pair",
    "tool",
]

__getattr__ = lazy_backends(__name__, {"DjangoConversationStore": ".db"})
