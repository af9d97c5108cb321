"""What the admin draws from what it reads: a session's transcript from its log, its agent as a
Mermaid flowchart, and a conversation's messages as transcript lines."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from django.utils.translation import gettext_lazy as _

from ..agents import get_agent
from ..engine.graph import mermaid
from ..errors import EncryptionError
from ..models import SessionEvent
from ..providers.chat import attachments_of, content_text

TIMELINE_LENGTH = 100


def agent_graph(agent_name: str, blob: Any) -> tuple[str, str]:
    """The session's agent as a Mermaid flowchart with its runs' current steps highlighted,
    or why it cannot be drawn."""
    if not agent_name:
        return "", str(_("The session does not say which agent it belongs to."))
    try:
        agent = get_agent(agent_name)
    except Exception as error:
        return "", f"The agent {agent_name!r} cannot be built: {error}"
    current = [(run["flowId"], run["stepId"]) for run in (blob or {}).get("runs", [])]
    return mermaid(agent, current), ""


def session_transcript(session_id: str, language: str | None = None) -> list[dict[str, Any]]:
    """Both sides of a session's conversation from its log, oldest first (the latest
    ``TIMELINE_LENGTH`` messages); the dates the bot and staff wrote as the customer read
    them, in the conversation's ``language``."""
    said = SessionEvent.objects.filter(session_id=session_id, type="message").order_by("-seq")
    lines = []
    for event in reversed(said[:TIMELINE_LENGTH]):
        try:
            payload = event.opened_payload
        except EncryptionError as error:  # shown as what it is, the rest still readable
            payload = {"text": str(error)}
        who = _speaker(payload)
        text = str(payload.get("text", ""))
        lines.append(
            {
                "who": who,
                "by": payload.get("by") or "",
                "text": text if who == "user" else dates_as_read(text, language),
                "at": event.created_at,
            }
        )
    return lines


_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
#: Day and month names as the chat page's browser writes them (``Intl.DateTimeFormat``).
_DAY_NAMES = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "pt": (
        "segunda-feira", "terça-feira", "quarta-feira", "quinta-feira", "sexta-feira",
        "sábado", "domingo",
    ),
}  # fmt: skip
_MONTH_NAMES = {
    "en": (
        "January", "February", "March", "April", "May", "June", "July", "August",
        "September", "October", "November", "December",
    ),
    "pt": (
        "janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto",
        "setembro", "outubro", "novembro", "dezembro",
    ),
}  # fmt: skip


def dates_as_read(text: str, language: str | None) -> str:
    """``text`` with each ISO date (``2026-12-08``) as the customer's chat showed it, in the
    conversation's language: "Tuesday, December 8, 2026", "terça-feira, 8 de dezembro de
    2026" (English for a language the page does not speak)."""
    words = "pt" if language == "pt" else "en"

    def readable(match: re.Match[str]) -> str:
        try:
            day = date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            return match[0]
        weekday, month = _DAY_NAMES[words][day.weekday()], _MONTH_NAMES[words][day.month - 1]
        if words == "pt":
            return f"{weekday}, {day.day} de {month} de {day.year}"
        return f"{weekday}, {month} {day.day}, {day.year}"

    return _ISO_DATE.sub(readable, text)


def last_user_text(session_id: str) -> str:
    """What the customer said last, among the session's latest ``TIMELINE_LENGTH`` messages."""
    said = SessionEvent.objects.filter(session_id=session_id, type="message").order_by("-seq")
    for event in said[:TIMELINE_LENGTH]:
        payload = event.opened_payload
        if payload.get("role") == "user":
            return str(payload.get("text", ""))
    return ""


def _speaker(message: dict[str, Any]) -> str:
    """``user``, ``staff`` (a person answering for the bot) or ``bot``."""
    if message.get("role") == "user":
        return "user"
    return "staff" if message.get("by") else "bot"


#: The Responses API's parts (the OpenAI Agents SDK's items) that hold text.
TEXT_PARTS = frozenset({"input_text", "output_text"})


def as_message(item: dict[str, Any]) -> dict[str, Any]:
    """An item of another framework's history (the Responses API's, which the OpenAI Agents
    SDK keeps; pydantic-ai's messages; ADK's events) in the shape of this app's messages, for
    the transcript; this app's messages as they are."""
    if item.get("kind") in ("request", "response") and isinstance(item.get("parts"), list):
        return _pydantic_ai_message(item)
    if "invocationId" in item and "author" in item:
        return _adk_event(item)
    kind = item.get("type")
    if kind in RESPONSES_ITEMS:
        return RESPONSES_ITEMS[kind](item)
    content = item.get("content")
    if not isinstance(content, list):
        return item
    return {**item, "content": [_responses_part(part) for part in content]}


def _function_call(item: dict[str, Any]) -> dict[str, Any]:
    arguments = item.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = arguments
    call = {"id": item.get("call_id"), "name": item.get("name"), "input": parsed}
    return {"role": "assistant", "toolCalls": [call]}


def _reasoning(item: dict[str, Any]) -> dict[str, Any]:
    summary = item.get("summary") or []
    said = [part.get("text", "") for part in summary if isinstance(part, dict)]
    return {"role": "reasoning", "content": " ".join(said)}


#: The Responses API's items that are not a message, each as this app's message.
RESPONSES_ITEMS = {
    "function_call": _function_call,
    "function_call_output": lambda item: {
        "role": "tool",
        "toolCallId": item.get("call_id"),
        "content": item.get("output"),
    },
    "reasoning": _reasoning,
}


def _responses_part(part: Any) -> Any:
    """A part of a Responses API message as a part of this app's: text, or a file named."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in TEXT_PARTS:
        return {"type": "text", "text": part.get("text", "")}
    if kind in ("input_image", "input_file"):
        name = part.get("image_url") or part.get("file_url") or part.get("file_id") or ""
        return {"type": "image" if kind == "input_image" else "file", "name": name}
    return part


def _pydantic_ai_message(message: dict[str, Any]) -> dict[str, Any]:
    """A pydantic-ai ``ModelRequest`` or ``ModelResponse`` (as ``ModelMessagesTypeAdapter``
    dumps it) in the shape of this app's messages: its parts' text, tool calls and returns."""
    parts = [part for part in message["parts"] if isinstance(part, dict)]
    said = [_part_text(part) for part in parts if part.get("part_kind") in PYDANTIC_AI_TEXT]
    if message["kind"] == "response":
        calls = [
            {
                "id": part.get("tool_call_id"),
                "name": part.get("tool_name"),
                "input": part.get("args"),
            }
            for part in parts
            if part.get("part_kind") == "tool-call"
        ]
        return {"role": "assistant", "content": "\n".join(said), "toolCalls": calls}
    returns = [part for part in parts if part.get("part_kind") in ("tool-return", "retry-prompt")]
    if returns and not said:
        return {
            "role": "tool",
            "toolCallId": returns[0].get("tool_call_id"),
            "content": returns[0].get("content"),
        }
    system = all(part.get("part_kind") == "system-prompt" for part in parts)
    return {"role": "system" if system else "user", "content": "\n".join(said)}


def _adk_event(event: dict[str, Any]) -> dict[str, Any]:
    """A Google ADK event (as it dumps to JSON) in the shape of this app's messages: its
    text, function calls and responses; the user's events are the user's."""
    content = event.get("content")
    kept = content.get("parts") if isinstance(content, dict) else None
    parts = [part for part in kept or [] if isinstance(part, dict)]
    text = "\n".join(str(part["text"]) for part in parts if part.get("text"))
    calls = [part["functionCall"] for part in parts if isinstance(part.get("functionCall"), dict)]
    answers = [
        part["functionResponse"] for part in parts if isinstance(part.get("functionResponse"), dict)
    ]
    if answers and not text:
        return {
            "role": "tool",
            "toolCallId": answers[0].get("id"),
            "content": answers[0].get("response"),
        }
    role = "user" if event.get("author") == "user" else "assistant"
    return {
        "role": role,
        "content": text,
        "toolCalls": [
            {"id": call.get("id"), "name": call.get("name"), "input": call.get("args")}
            for call in calls
        ],
    }


#: pydantic-ai's parts that hold text someone said or read.
PYDANTIC_AI_TEXT = frozenset({"user-prompt", "system-prompt", "text", "thinking"})


def _part_text(part: dict[str, Any]) -> str:
    content = part.get("content")
    if isinstance(content, list):  # a prompt with files: their text, and the files by name
        return " ".join(
            item if isinstance(item, str) else str(item.get("url") or item.get("kind", ""))
            for item in content
        )
    return str(content or "")


def transcript_line(position: int, message: dict[str, Any]) -> dict[str, Any]:
    message = as_message(message)
    content = message.get("content")
    return {
        "position": position,
        "role": message.get("role", "?"),
        "text": content_text(content),
        "attachments": attachments_of(content),
        "summary": (message.get("metadata") or {}).get("compaction"),
        "tool_calls": [
            {**call, "input": json.dumps(call.get("input"), ensure_ascii=False, indent=2)}
            for call in message.get("toolCalls") or []
        ],
        "tool_call_id": message.get("toolCallId"),
        "result": content if isinstance(content, str) else json.dumps(content),
        "blocks": json.dumps(message["blocks"], indent=2) if message.get("blocks") else "",
    }
