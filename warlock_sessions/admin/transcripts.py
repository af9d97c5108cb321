"""What the admin draws from what it reads: a session's transcript from its log, its agent as a
Mermaid flowchart, and a conversation's messages as transcript lines."""

from __future__ import annotations

import json
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


def session_transcript(session_id: str) -> list[dict[str, Any]]:
    """Both sides of a session's conversation from its log, oldest first (the latest
    ``TIMELINE_LENGTH`` messages)."""
    said = SessionEvent.objects.filter(session_id=session_id, type="message").order_by("-seq")
    lines = []
    for event in reversed(said[:TIMELINE_LENGTH]):
        try:
            payload = event.opened_payload
        except EncryptionError as error:  # shown as what it is, the rest still readable
            payload = {"text": str(error)}
        lines.append(
            {
                "who": _speaker(payload),
                "by": payload.get("by") or "",
                "text": payload.get("text", ""),
                "at": event.created_at,
            }
        )
    return lines


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


def transcript_line(position: int, message: dict[str, Any]) -> dict[str, Any]:
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
