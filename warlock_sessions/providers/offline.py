"""OfflineChatModel: a deterministic chat model for demos and tests, with no network.

It calls a tool when the user's message names it, says what the tool answered, remembers a
name it was told, and otherwise answers from the message itself; every reply streams word by
word. Same messages in, same reply out."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from .chat import ChatReply, Message, OnDelta, ToolSchema, attachments_of, content_text

_NAME_GIVEN = re.compile(r"\bmy name is ([^\W\d_][\w'-]*)", re.IGNORECASE)
_NAME_ASKED = re.compile(r"\bwhat(?:'s| is) my name\b", re.IGNORECASE)
_WORDS = re.compile(r"\S+\s*|\s+")
#: How much of a message the offline model quotes back, in characters.
ECHOED = 120


class OfflineChatModel:
    """``delay`` seconds pass between streamed pieces (0 in tests; a little in the demo, so
    the reply is seen arriving)."""

    provider = "offline"
    model = "offline"

    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay = delay

    def chat(
        self, messages: list[Message], tools: list[ToolSchema], on_delta: OnDelta | None
    ) -> ChatReply:
        last = messages[-1]
        usage = {"input_tokens": sum(len(content_text(m.get("content"))) for m in messages) // 4}
        if last.get("role") == "user":
            calls = self._tool_calls(messages, content_text(last.get("content")), tools)
            if calls:
                return ChatReply(
                    tool_calls=calls,
                    usage={**usage, "output_tokens": 1},
                    finish_reason="tool_calls",
                )
        text = self._answer(messages)
        for piece in _WORDS.findall(text):
            if self.delay:
                time.sleep(self.delay)
            if on_delta is not None:
                on_delta(piece)
        return ChatReply(text=text, usage={**usage, "output_tokens": len(text.split())})

    def summarize(self, messages: list[Message]) -> str:
        said = [
            " ".join(content_text(m.get("content")).split()[:8])
            for m in messages
            if m.get("role") == "user"
        ]
        return f"{len(messages)} earlier messages; the user said: " + " / ".join(said)

    def _tool_calls(
        self, messages: list[Message], text: str, tools: list[ToolSchema]
    ) -> list[dict[str, Any]]:
        """A call of each tool the message names, its first string argument the text after
        the name."""
        made = sum(len(m.get("toolCalls") or []) for m in messages)
        calls: list[dict[str, Any]] = []
        lowered = text.lower()
        for tool in tools:
            spoken = tool.name.replace("_", " ").lower()
            at = lowered.find(spoken)
            if at < 0:
                continue
            rest = text[at + len(spoken) :].strip(" :?!.")
            calls.append(
                {
                    "id": f"call_{made + len(calls) + 1}",
                    "name": tool.name,
                    "input": _arguments(tool, rest or text),
                }
            )
        return calls

    def _answer(self, messages: list[Message]) -> str:
        last = messages[-1]
        if last.get("role") == "tool":
            name = _called_name(messages, last.get("toolCallId"))
            return f"The {name} tool {_outcome(content_text(last.get('content')))}"
        text = content_text(last.get("content")).strip()
        if len(text) > ECHOED:  # the echo stays short, whatever was sent
            text = text[:ECHOED].rsplit(" ", 1)[0] + "…"
        if given := _NAME_GIVEN.search(text):
            return f"Nice to meet you, {given.group(1)}. I will remember your name."
        if _NAME_ASKED.search(text):
            for message in reversed(messages[:-1]):
                if message.get("role") == "user" and (
                    found := _NAME_GIVEN.search(content_text(message.get("content")))
                ):
                    return f"Your name is {found.group(1)}."
            return "You have not told me your name yet."
        earlier = sum(1 for m in messages[:-1] if m.get("role") in ("user", "assistant"))
        seen = [
            str(part.get("name", part.get("type"))) for part in attachments_of(last.get("content"))
        ]
        attached = f" I see {len(seen)} attachment(s): {', '.join(seen)}." if seen else ""
        return (
            f"You said: “{text}”.{attached} I am the offline assistant, and I remember "
            f"{earlier} earlier messages of this conversation."
        )


def _arguments(tool: ToolSchema, text: str) -> dict[str, Any]:
    properties = tool.parameters.get("properties") or {}
    for name, schema in properties.items():
        if schema.get("type") == "string":
            return {name: text}
    return {}


def _called_name(messages: list[Message], call_id: Any) -> str:
    for message in reversed(messages):
        for call in message.get("toolCalls") or []:
            if call.get("id") == call_id:
                return str(call.get("name"))
    return "unknown"


def _outcome(content: str) -> str:
    """A tool result (``{"output"}`` or ``{"error"}`` as JSON) in words."""
    try:
        result = json.loads(content)
    except ValueError:
        return f"says: {content}"
    if isinstance(result, dict) and "error" in result:
        return f"failed: {result['error']}"
    output = result.get("output") if isinstance(result, dict) else result
    return f"says: {output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)}"
