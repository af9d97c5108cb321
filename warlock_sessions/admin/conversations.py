"""Conversations in the admin, as transcripts with their forks linked both ways."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from ..errors import EncryptionError
from ..models import Conversation, ConversationMessage
from .base import OwnedChatAdmin
from .transcripts import transcript_line


@admin.register(Conversation)
class ConversationAdmin(OwnedChatAdmin):
    """A conversation as a transcript: tool calls and results folded, provider blocks shown as
    kept, forks linked both ways. Read-only, as sessions are; deleting removes its messages."""

    list_display = ["id", "turns", "version", "pending_turn", "owner", "updated_at"]
    list_filter = ("updated_at",)
    search_fields = ["id"]
    date_hierarchy = "updated_at"
    # Not the anonymous visitor's key: it was their Django session key, a credential.
    fields = ("id", "version", "turns", "owner", "created_at", "updated_at")
    readonly_fields = fields
    change_form_template = "admin/warlock_sessions/conversation/change_form.html"

    @admin.display(description=_("pending turn"), boolean=True)
    def pending_turn(self, obj: Conversation) -> bool:
        return obj.pending is not None

    def page_context(self, row: Any) -> dict[str, Any]:
        context: dict[str, Any] = {}
        rows = ConversationMessage.objects.filter(conversation=row).order_by("position")
        context["transcript"] = [transcript_line(m.position, _opened(m)) for m in rows]
        try:
            context["pending"] = row.opened_pending
        except EncryptionError as error:
            context["pending"] = str(error)
        if row.forked_from:
            source = row.forked_from.get("id", "")
            context["forked_from"] = {
                "id": source,
                "count": row.forked_from.get("messageCount"),
                "url": self._url(source),
            }
        context["forks"] = [
            {"id": fork, "url": self._url(fork)}
            for fork in Conversation.objects.filter(forked_from__id=row.id)
            .order_by("created_at")
            .values_list("id", flat=True)
        ]
        return context

    @staticmethod
    def _url(conversation_id: str) -> str:
        return reverse("admin:warlock_sessions_conversation_change", args=[quote(conversation_id)])


def _opened(row: ConversationMessage) -> Any:
    """A message as kept, or what says why it does not open (the rest still readable)."""
    try:
        return row.opened_message
    except EncryptionError as error:
        return {"role": "?", "content": str(error)}
