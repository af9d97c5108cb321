"""The semantic cache's answers in the admin (``DjangoCacheStore``): by scope and namespace,
read, and deleted one by one or a whole scope at a time."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from ..encryption import open_json, open_text
from ..models import CacheEntry
from .base import ReadOnlyAdmin, opened_or_why, pretty_json


@admin.register(CacheEntry)
class CacheEntryAdmin(ReadOnlyAdmin):
    list_display = ["scope", "shown_question", "stored_at", "expires_at"]  # namespace: a filter
    list_filter = ("namespace", "stored_at")
    search_fields = ["^scope"]  # by prefix: "conversation:", "shared", "scope:<tenant>"
    fields = (
        "scope",
        "namespace",
        "key",
        "shown_question",
        "pretty_reply",
        "stored_at",
        "expires_at",
    )
    readonly_fields = fields
    actions = ["forget_scopes"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    @admin.display(description=_("question"))
    def shown_question(self, obj: CacheEntry) -> str:
        return opened_or_why(lambda: open_text(obj.question, *obj.value_place))

    @admin.display(description=_("answer"))
    def pretty_reply(self, obj: CacheEntry) -> str:
        return opened_or_why(lambda: pretty_json(open_json(obj.reply, *obj.value_place)))

    @admin.action(
        description=_("Delete every answer of the selected entries' scopes"),
        permissions=["delete"],
    )
    def forget_scopes(self, request: HttpRequest, queryset: Any) -> None:
        scopes = sorted(set(queryset.values_list("scope", flat=True)))
        deleted, _ = CacheEntry.objects.using(queryset.db).filter(scope__in=scopes).delete()
        self.message_user(request, f"{deleted} answers of {len(scopes)} scopes deleted")
