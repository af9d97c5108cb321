"""The chat port a tool-calling agent runs on: messages in, one reply out (its text streamed
piece by piece, the tool calls it asks for), and a summary of messages for compaction.

Messages are the conversation's own shape (``{role, content, toolCalls?, toolCallId?,
blocks?, metadata?}``, plus one leading ``system`` message); each model turns them into its
wire format. Pure Python: no HTTP here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]
OnDelta = Callable[[str], None]


@dataclass
class ChatReply:
    """One reply: its ``text``, the ``tool_calls`` it asks for (``{id, name, input}``, where
    ``input`` is what the model sent: a dict, or the text it could not parse), provider
    ``blocks`` to keep verbatim, token ``usage``, and how the reply ended (``finish_reason``:
    ``stop`` for a whole answer, ``tool_calls``, or what the provider said). ``cached`` says
    which step of a semantic cache answered (``exact``, ``similar``), ``""`` for the model."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[Any] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str = "stop"
    cached: str = ""


@dataclass(frozen=True)
class ToolSchema:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, Any]


class ChatModel(Protocol):
    """``provider`` and ``model`` name it in an agent's signature."""

    provider: str
    model: str

    def chat(
        self, messages: list[Message], tools: list[ToolSchema], on_delta: OnDelta | None
    ) -> ChatReply: ...

    def summarize(self, messages: list[Message]) -> str: ...


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        )
    return ""


def attachments_of(content: Any) -> list[dict[str, Any]]:
    """The resolved attachments (``image``/``file`` parts) of a message's content."""
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") != "text"]
