"""Conversation sessions: multi-turn chats with an agent whose history never rewrites itself
(docs/conversations.md)."""

from .agent import AgentResult, AgentStream, ConversationAgent
from .session import ConversationSession, ConversationStream, session, split_tool_pair

__all__ = [
    "AgentResult",
    "AgentStream",
    "ConversationAgent",
    "ConversationSession",
    "ConversationStream",
    "session",
    "split_tool_pair",
]
