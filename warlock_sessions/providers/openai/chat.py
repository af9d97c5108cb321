"""The chat port in OpenAI's wire format: a conversation's messages as ``messages`` (tool
calls, tool results, attachments as content parts) and a streamed reply back as a
``ChatReply``. Pure: no HTTP."""

from __future__ import annotations

import base64
import json
from typing import Any

from ..chat import ChatReply, Message, ToolSchema


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    return [_wire(message) for message in messages]


def _wire(message: Message) -> dict[str, Any]:
    role = message["role"]
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.get("toolCallId"),
            "content": _text(message.get("content")),
        }
    wired: dict[str, Any] = {"role": role, "content": _content(message.get("content"))}
    if message.get("toolCalls"):
        wired["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": json.dumps(call.get("input"), ensure_ascii=False),
                },
            }
            for call in message["toolCalls"]
        ]
        wired["content"] = wired["content"] or ""  # text, never null (llama.cpp refuses null)
    return wired


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _content(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    return [_part(part) for part in content]


def _part(part: dict[str, Any]) -> dict[str, Any]:
    """A resolved attachment as the content part OpenAI reads: images by data URL, text
    files as text, other files as ``file`` parts."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    media = part.get("mediaType") or "application/octet-stream"
    url = f"data:{media};base64,{part.get('data', '')}"
    if media.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    if media.startswith("text/") or media == "application/json":
        decoded = base64.b64decode(part.get("data", "")).decode("utf-8", "replace")
        return {"type": "text", "text": f"[{part.get('name', 'file')}]\n{decoded}"}
    return {"type": "file", "file": {"filename": part.get("name", "file"), "file_data": url}}


def wire_tools(tools: list[ToolSchema]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


def chat_reply(
    text: str, calls: list[dict[str, Any]], usage: dict[str, Any], finish_reason: str | None = None
) -> ChatReply:
    """The reply of a stream: tool calls with their arguments parsed (left as text when they
    are not JSON, for the agent to refuse)."""
    requested = []
    for call in calls:
        arguments = call["function"]["arguments"] or "{}"
        try:
            parsed: Any = json.loads(arguments)
        except ValueError:
            parsed = arguments
        requested.append({"id": call["id"], "name": call["function"]["name"], "input": parsed})
    # Only what the server told: a stream without usage (a server that ignores
    # stream_options) leaves it unknown rather than 0.
    counted = {
        ours: int(usage[theirs])
        for ours, theirs in (
            ("input_tokens", "prompt_tokens"),
            ("output_tokens", "completion_tokens"),
        )
        if isinstance(usage.get(theirs), int)
    }
    finished = finish_reason or ("tool_calls" if requested else "stop")
    return ChatReply(text=text, tool_calls=requested, usage=counted, finish_reason=finished)
