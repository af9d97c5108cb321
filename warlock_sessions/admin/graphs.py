"""LangGraph threads (``frameworks.langgraph``) in the admin: a thread's latest messages as a
transcript, and its checkpoints."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from ..encryption import open_typed
from ..errors import EncryptionError
from ..models import GraphBlob, GraphCheckpoint, GraphThread
from .base import OwnedChatAdmin
from .transcripts import transcript_line

#: The channel LangGraph's message graphs (``MessagesState``, ``add_messages``) keep them in.
MESSAGES_CHANNEL = "messages"
#: LangChain's message types as this app's roles.
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


@admin.register(GraphThread)
class GraphThreadAdmin(OwnedChatAdmin):
    """A thread as the transcript of its latest checkpoint's messages (read with LangGraph's
    own serializer), with its checkpoints counted. Deleting removes every checkpoint."""

    list_display = ["id", "version", "owner", "updated_at"]
    list_filter = ("updated_at",)
    search_fields = ["id"]
    date_hierarchy = "updated_at"
    fields = ("id", "version", "owner", "checkpoints", "created_at", "updated_at")
    readonly_fields = fields
    change_form_template = "admin/warlock_sessions/conversation/change_form.html"

    @admin.display(description=_("checkpoints"))
    def checkpoints(self, obj: GraphThread) -> int:
        return GraphCheckpoint.objects.filter(thread=obj).count()

    def page_context(self, row: Any) -> dict[str, Any]:
        latest = (
            GraphCheckpoint.objects.filter(thread=row, namespace="")
            .order_by("-checkpoint_id")
            .first()
        )
        version = (latest.channel_versions if latest else {}).get(MESSAGES_CHANNEL)
        blob = GraphBlob.objects.filter(
            thread=row, namespace="", channel=MESSAGES_CHANNEL, version=version
        ).first()
        messages = _messages(blob) if blob is not None else []
        return {"transcript": [transcript_line(n, m) for n, m in enumerate(messages)]}


def _messages(blob: GraphBlob) -> list[dict[str, Any]]:
    """The messages a channel value holds, as this app's messages; what says why they do not
    open or read."""
    try:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    except ImportError:
        return [{"role": "?", "content": "install warlock-sessions[langgraph] to read it"}]
    try:
        value = JsonPlusSerializer().loads_typed(
            open_typed(blob.kind, blob.value, *blob.value_place)
        )
    except EncryptionError as error:
        return [{"role": "?", "content": str(error)}]
    return [_as_message(item) for item in value] if isinstance(value, list) else []


def _as_message(item: Any) -> dict[str, Any]:
    """A LangChain message (``HumanMessage``, ``AIMessage`` with its tool calls,
    ``ToolMessage``) in the shape of this app's messages."""
    message: dict[str, Any] = {
        "role": ROLES.get(getattr(item, "type", ""), str(getattr(item, "type", "?"))),
        "content": getattr(item, "content", str(item)),
    }
    calls = getattr(item, "tool_calls", None)
    if calls:
        message["toolCalls"] = [
            {"id": call.get("id"), "name": call.get("name"), "input": call.get("args")}
            for call in calls
        ]
    if getattr(item, "tool_call_id", None):
        message["toolCallId"] = item.tool_call_id
    return message
