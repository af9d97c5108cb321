"""Conversation agents the API and socket tests configure by import string."""

from __future__ import annotations

from typing import Any

from example_project.demo.assistant import calculate
from warlock_sessions.conversations import ToolAgent
from warlock_sessions.engine import ProviderError
from warlock_sessions.providers import OfflineChatModel
from warlock_sessions.providers.chat import ChatReply


class DownModel(OfflineChatModel):
    """A provider that is down."""

    def chat(self, *args: Any, **kwargs: Any) -> ChatReply:
        raise ProviderError("provider-unavailable", True, detail="HTTP 503")


assistant = ToolAgent(OfflineChatModel(), tools=[calculate])
down = ToolAgent(DownModel(), name="down")
slow = ToolAgent(OfflineChatModel(delay=0.2), name="slow")  # a reply takes seconds
